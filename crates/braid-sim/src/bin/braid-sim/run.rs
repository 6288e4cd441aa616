//! One run: a scenario point in one mode, bulk or video, measured into a row.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::{LossRecovery, Mode, Redundancy, RepairPlacement};
use braid_proto::sched::SchedulerKind;
use braid_proto::ConnectionConfig;
use braid_proto::{BlockRecord, Instant};
use braid_sim::net::StopReason;
use braid_sim::{BlockStats, BulkFlow, Endpoint, Metrics, Scenario, SecureFlow};

/// Time-series interval (goodput bins and path samples).
pub const INTERVAL: Duration = Duration::from_millis(100);

/// One bulk run's results.
pub struct Row {
    pub label: String,
    /// The scenario's name, sweep point and seed (the parts of `label`).
    pub scenario: String,
    pub point: String,
    pub seed: u64,
    pub mode: Mode,
    pub completion: Option<f64>,
    /// When an unfinished run went idle (nothing scheduled at any endpoint or link: a
    /// deadlock), in seconds.
    pub stalled_at: Option<f64>,
    /// Seconds from the scenario's first outage to the first 1-s window of goodput at 0.8 × the
    /// ideal (see `outage_recovery`); `None` without an outage or without recovery.
    pub recovery: Option<f64>,
    /// The scenario has an outage during the run (so `recovery: None` means "never").
    pub outage: bool,
    pub goodput_mbps: f64,
    /// The physical limit Σ rateᵢ × (1 − pᵢ), averaged over the run (Scenario::ideal_goodput_bps).
    pub ideal_mbps: f64,
    pub ratio: f64,
    pub overhead: f64,
    pub intact: bool,
    pub datagrams: u64,
    /// FMTCP's block delivery delay (first symbol sent → block decoded) and jitter.
    pub blocks: Option<BlockStats>,
    /// Counters summed over the senders (and `recovered` over the receivers).
    pub source_sent: u64,
    pub repair_sent: u64,
    pub recovered: u64,
    pub retransmissions: u64,
    pub losses: u64,
    pub fast_losses: u64,
    pub timeouts: u64,
    /// Fast-recovery episodes, where the controller counts them (`newreno-ns3`).
    pub fast_recoveries: Option<u64>,
    /// Per path index (summed over flows): packets the sender sent and had acknowledged.
    pub path_sent: Vec<u64>,
    pub path_acked: Vec<u64>,
    /// Recorded run: goodput bins, blocks, counters, links.
    pub metrics: Metrics,
    /// Per flow and path: (congestion window bytes, smoothed RTT ms, loss estimate) at the end of
    /// each interval.
    pub paths: Vec<PathSeries>,
    pub intervals: usize,
}

pub struct PathSeries {
    pub flow: usize,
    pub path: usize,
    pub samples: Vec<(u64, f64, f64)>,
}

/// What the command line chose for every run (bulk or video) of one mode.
pub struct RunSetup {
    pub mode: Mode,
    pub cc: Option<CcAlgorithm>,
    pub scheduler: Option<SchedulerKind>,
    pub redundancy: Redundancy,
    pub placement: Option<RepairPlacement>,
    /// How senders learn what to send again (`--recovery`).
    pub recovery: LossRecovery,
    /// Each flow runs through the security layer (its sans-IO session, with the insecure
    /// crypto double): the handshake, sealing, replay windows and path announcements.
    pub secure: bool,
}

/// A bulk flow as the runner reads it: plain, or inside the security layer.
trait AsBulk {
    fn bulk(&self) -> &BulkFlow;
}

impl AsBulk for BulkFlow {
    fn bulk(&self) -> &BulkFlow {
        self
    }
}

impl AsBulk for SecureFlow {
    fn bulk(&self) -> &BulkFlow {
        self.flow()
    }
}

/// The shared secret of `--secure` runs (the insecure double's; any value works).
const SECRET: u64 = 0x0062_7261_6964;

/// Both ends' configuration for one flow of `scenario` over `paths` paths.
fn connection_config(scenario: &Scenario, paths: usize, setup: &RunSetup) -> ConnectionConfig {
    let mut config = ConnectionConfig {
        mode: setup.mode,
        cc: setup.cc,
        redundancy: setup.redundancy,
        scheduler: setup.scheduler,
        paths: paths as u8,
        repair_placement: setup.placement,
        recovery: setup.recovery,
        ..ConnectionConfig::default()
    };
    // The scenario's receive window is both ends' flow-control window (FMTCP §VI-B).
    if let Some(window) = scenario.receive_window {
        config.params = config.params.with_receive_window(window);
    }
    // The scenario's block length (a mode that needs longer blocks raises it, `Mode::min_block_len`).
    if let Some(len) = scenario.block_len {
        config.params.max_block_len = len;
    }
    // Sato et al.'s parameters, where the scenario sweeps them.
    let sato = &mut config.redundancy.sato;
    sato.limit = scenario.sato_limit.unwrap_or(sato.limit);
    sato.reduction = scenario.sato_reduction.unwrap_or(sato.reduction);
    sato.interleave = scenario.sato_interleave.unwrap_or(sato.interleave);
    // Links with an MTU: the endpoints may probe up to the largest (their "interface").
    if let Some(mtu) = scenario.max_mtu() {
        config.max_plpmtu = mtu;
    }
    config
}

pub fn run(scenario: &Scenario, setup: &RunSetup) -> Result<Row, String> {
    let bytes = scenario.transfer.ok_or("the scenario sets no `transfer` size")?;
    if setup.secure {
        return run_flows(scenario, setup, |cx| {
            let config = connection_config(scenario, cx.paths, setup);
            let sender = SecureFlow::sender(config.clone(), SECRET, cx.seed, bytes, cx.start);
            (sender, SecureFlow::receiver(config, SECRET, cx.seed))
        });
    }
    run_flows(scenario, setup, |cx| {
        let config = connection_config(scenario, cx.paths, setup);
        (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
    })
}

fn run_flows<E: Endpoint + AsBulk>(
    scenario: &Scenario,
    setup: &RunSetup,
    flow: impl FnMut(&braid_sim::FlowContext<'_>) -> (E, E),
) -> Result<Row, String> {
    let mode = setup.mode;
    let bytes = scenario.transfer.ok_or("the scenario sets no `transfer` size")?;
    let built = scenario.build(flow).map_err(|e| e.to_string())?;
    let (mut net, flows, limit) = (built.network, built.flows, built.limit);
    let servers: Vec<_> = flows.iter().map(|&(_, s)| s).collect();
    let mut metrics = Metrics::with_bin(INTERVAL);
    metrics.record_start(Instant::ZERO);
    let mut paths: Vec<PathSeries> = Vec::new();
    for (flow, &(client, _)) in flows.iter().enumerate() {
        for path in 0..net.endpoint(client).bulk().connection().path_stats().len() {
            paths.push(PathSeries { flow, path, samples: Vec::new() });
        }
    }
    // Run an interval at a time (up to just before its end, so an interval is [start, end) as
    // Metrics bins it) and sample between intervals. Stopping at a deadline moves no event: the
    // run continues exactly as one call would.
    let mut intervals = 0usize;
    let mut stalled_at = None;
    let mut delivered_before = 0u64;
    loop {
        let end = Instant::ZERO + INTERVAL * (intervals as u32 + 1);
        let deadline = (end - Duration::from_micros(1)).min(limit);
        let report = net.run_until_condition(deadline, |n| {
            servers.iter().all(|&s| n.endpoint(s).bulk().done_at().is_some())
        });
        let delivered: u64 = servers.iter().map(|&s| net.endpoint(s).bulk().received()).sum();
        if delivered > delivered_before {
            metrics.record_delivered(end - INTERVAL, delivered - delivered_before);
            delivered_before = delivered;
        }
        let mut series = paths.iter_mut();
        for &(client, _) in &flows {
            for (srtt, cwnd, loss) in net.endpoint(client).bulk().connection().path_state() {
                let s = series.next().expect("one series per path");
                s.samples.push((cwnd, srtt.as_secs_f64() * 1e3, loss));
            }
        }
        intervals += 1;
        if report.stop == StopReason::Idle {
            stalled_at = Some(net.now().as_micros() as f64 / 1e6);
        }
        if report.stop != StopReason::Deadline || deadline >= limit {
            break;
        }
    }
    let mut completion = Some(0.0f64);
    let (mut source, mut repair) = (0u64, 0u64);
    let (mut recovered, mut retransmissions, mut losses, mut fast_losses, mut timeouts) = (0, 0, 0, 0, 0);
    let mut fast_recoveries: Option<u64> = None;
    let mut intact = true;
    let path_count = flows.iter().map(|&(c, _)| net.endpoint(c).bulk().connection().path_stats().len()).max();
    let mut path_sent = vec![0u64; path_count.unwrap_or(0)];
    let mut path_acked = path_sent.clone();
    for &(client, server) in &flows {
        let rx = net.endpoint(server).bulk();
        intact &= rx.corrupt_at().is_none() && (rx.done_at().is_none() || rx.received() == bytes);
        completion = match (completion, rx.done_at()) {
            (Some(c), Some(t)) => Some(c.max(t.as_micros() as f64 / 1e6)),
            _ => None,
        };
        let stats = net.endpoint(client).bulk().connection().stats;
        source += stats.source_symbols_sent;
        repair += stats.repair_symbols_sent;
        retransmissions += stats.retransmissions;
        recovered += rx.connection().stats.symbols_recovered;
        for (i, p) in net.endpoint(client).bulk().connection().path_stats().into_iter().enumerate() {
            path_sent[i] += p.packets_sent;
            path_acked[i] += p.packets_acked;
            losses += p.packets_lost;
            fast_losses += p.fast_losses;
            timeouts += p.timeouts;
            if let Some(n) = p.fast_recoveries {
                *fast_recoveries.get_or_insert(0) += n;
            }
        }
    }
    if let Some(done) = completion {
        metrics.record_completion(Instant::from_micros((done * 1e6).round() as u64));
    }
    metrics.record_sent(source, repair);
    metrics.record_recovered(recovered);
    metrics.record_retransmitted(retransmissions);
    metrics.count("losses", losses);
    metrics.count("fast_losses", fast_losses);
    metrics.count("timeouts", timeouts);
    if let Some(n) = fast_recoveries {
        metrics.count("fast_recoveries", n);
    }
    record_blocks(&mut metrics, &net, &flows);
    metrics.record_network(&net);
    let delivered: u64 = servers.iter().map(|&s| net.endpoint(s).bulk().received()).sum();
    // An unfinished run is measured over the whole limit, also when it stalled earlier.
    let elapsed = completion.unwrap_or(limit.as_micros() as f64 / 1e6).max(1e-9);
    let stalled_at = stalled_at.filter(|_| completion.is_none());
    let goodput = delivered as f64 * 8.0 / elapsed;
    let ideal = scenario.ideal_goodput_bps(Duration::from_secs_f64(elapsed));
    let outage = scenario.first_outage().filter(|&t| t.as_micros() as f64 / 1e6 < elapsed);
    let recovery = outage.and_then(|t| outage_recovery(scenario, &metrics, t, completion, intervals));
    Ok(Row {
        label: scenario.title(),
        scenario: scenario.name.clone(),
        point: scenario.label.clone(),
        seed: scenario.seed,
        mode,
        completion,
        stalled_at,
        recovery,
        outage: outage.is_some(),
        goodput_mbps: goodput / 1e6,
        ideal_mbps: ideal / 1e6,
        ratio: goodput / ideal,
        overhead: repair as f64 / (source + repair).max(1) as f64,
        intact,
        datagrams: net.stats().datagrams_sent,
        blocks: metrics.block_stats(),
        source_sent: source,
        repair_sent: repair,
        recovered,
        retransmissions,
        losses,
        fast_losses,
        timeouts,
        fast_recoveries,
        path_sent,
        path_acked,
        metrics,
        paths,
        intervals,
    })
}

/// The path-failure target ("goodput back above 0.8 × capacity within 1 s"): the time from
/// `outage` to the first instant `t` (on the 100-ms bins) from which every 1-s window, up to the
/// completion (or the end of the run: `intervals` bins), averages at least 0.8 × the ideal at its start — the
/// recovery must hold, not just touch the line once (the data already on the surviving path can
/// make one window look good before a stall). `None`: never recovered.
fn outage_recovery(
    scenario: &Scenario,
    metrics: &Metrics,
    outage: Instant,
    completion: Option<f64>,
    intervals: usize,
) -> Option<f64> {
    let mut bins: Vec<f64> = metrics.goodput_series().into_iter().map(|(_, bps)| bps).collect();
    // Bins stop at the last delivery; the run went on (without delivering) to `intervals`.
    bins.resize(bins.len().max(intervals), 0.0);
    let per_window = (Duration::from_secs(1).as_micros() / INTERVAL.as_micros()) as usize;
    let first = outage.as_micros().div_ceil(INTERVAL.as_micros() as u64) as usize;
    let end = completion.map_or(bins.len(), |c| ((c / INTERVAL.as_secs_f64()) as usize).min(bins.len()));
    let last = end.checked_sub(per_window)?;
    if first > last {
        return None;
    }
    let good = |i: usize| {
        let start = Instant::ZERO + INTERVAL * i as u32;
        let mean = bins[i..i + per_window].iter().sum::<f64>() / per_window as f64;
        mean >= 0.8 * scenario.ideal_goodput_bps_at(start)
    };
    // The latest window that falls short; recovery starts right after it.
    let recovered_from = match (first..=last).rev().find(|&i| !good(i)) {
        Some(i) if i == last => return None,
        Some(i) => i + 1,
        None => first,
    };
    Some((Instant::ZERO + INTERVAL * recovered_from as u32 - outage).as_secs_f64())
}

/// Joins the sender's first-sent and the receiver's delivered times per block.
fn record_blocks(
    metrics: &mut Metrics,
    net: &braid_sim::Network<impl Endpoint + AsBulk>,
    flows: &[(braid_sim::EndpointId, braid_sim::EndpointId)],
) {
    for &(client, server) in flows {
        let sent: BTreeMap<u64, Instant> = net
            .endpoint(client)
            .bulk()
            .block_log()
            .iter()
            .filter_map(|r| match *r {
                BlockRecord::FirstSent { block, at } => Some((block, at)),
                _ => None,
            })
            .collect();
        for r in net.endpoint(server).bulk().block_log() {
            if let BlockRecord::Delivered { block, at } = *r {
                if let Some(&first) = sent.get(&block) {
                    metrics.record_block(block, first, at);
                }
            }
        }
    }
}

/// The live-video deadline: a frame counts when complete within this time of its capture.
pub const VIDEO_DEADLINE: Duration = Duration::from_millis(200);

/// A scenario's video deadline: [`VIDEO_DEADLINE`] after capture, or, where the scenario sets
/// `video_playout`, the fastest path's one-way delay plus that margin.
pub fn video_deadline(scenario: &Scenario) -> Duration {
    scenario.video_playout.map_or(VIDEO_DEADLINE, |playout| scenario.min_forward_delay() + playout)
}

/// One run of a `video` scenario.
pub struct VideoRow {
    pub label: String,
    pub scenario: String,
    pub point: String,
    pub seed: u64,
    pub mode: Mode,
    pub stats: braid_sim::VideoStats,
    pub overhead: f64,
    pub source_sent: u64,
    pub repair_sent: u64,
    pub retransmissions: u64,
    pub intact: bool,
    pub datagrams: u64,
}

/// A `video` scenario: one live video flow per scenario flow for `duration`, judged by the share
/// of frames complete within [`VIDEO_DEADLINE`] of their capture.
pub fn run_video(scenario: &Scenario, setup: &RunSetup) -> Result<VideoRow, String> {
    use braid_sim::{VideoFlow, VideoSource, VideoStats};
    let mode = setup.mode;
    let bitrate = scenario.video.ok_or("not a video scenario")?;
    if setup.secure {
        return Err(
            "--secure runs bulk transfers only; this is a video scenario (run it without --secure)".into()
        );
    }
    let built = scenario
        .build(|cx| {
            let config = connection_config(scenario, cx.paths, setup);
            let source = VideoSource::new(bitrate, cx.seed);
            (
                VideoFlow::sender(config.clone(), cx.seed, source, cx.start),
                VideoFlow::receiver(config, source),
            )
        })
        .map_err(|e| e.to_string())?;
    let (mut net, flows, limit) = (built.network, built.flows, built.limit);
    net.run_until(limit);
    let deadline = video_deadline(scenario);
    let (mut source, mut repair, mut retransmissions) = (0, 0, 0);
    let mut intact = true;
    // Several flows: the share is over all their frames, the percentiles the worst flow's.
    let mut stats = VideoStats::default();
    for &(client, server) in &flows {
        let (tx, rx) = (net.endpoint(client), net.endpoint(server));
        intact &= rx.corrupt_at().is_none();
        let s = VideoStats::compute(tx.captured(), rx.completed(), deadline, limit);
        stats.frames += s.frames;
        stats.on_time += s.on_time;
        stats.steady_frames += s.steady_frames;
        stats.steady_on_time += s.steady_on_time;
        stats.p50_ms = stats.p50_ms.max(s.p50_ms);
        stats.p99_ms = stats.p99_ms.max(s.p99_ms);
        stats.max_ms = stats.max_ms.max(s.max_ms);
        let c = tx.connection().stats;
        source += c.source_symbols_sent;
        repair += c.repair_symbols_sent;
        retransmissions += c.retransmissions;
    }
    Ok(VideoRow {
        label: scenario.title(),
        scenario: scenario.name.clone(),
        point: scenario.label.clone(),
        seed: scenario.seed,
        mode,
        stats,
        overhead: repair as f64 / (source + repair).max(1) as f64,
        source_sent: source,
        repair_sent: repair,
        retransmissions,
        intact,
        datagrams: net.stats().datagrams_sent,
    })
}
