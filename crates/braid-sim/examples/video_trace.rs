//! Where live video's repair goes, and why a frame missed its deadline (docs/DEVIATIONS.md,
//! "Live video's wire bytes"): runs the video workload of `tests/video.rs` (25 fps, 3.4 Mbit/s,
//! one 20 Mbit/s path of 100 ms RTT, random loss on the data direction) with both ends' packet
//! traces on, and follows every symbol from the sender to the receiver.
//!
//! Each repair symbol sent is counted as *ahead* (sent before any loss of its block was
//! declared: a margin) or *reactive* (after), and by its fate: lost on the link, *useful*
//! (it arrived while its block still lacked symbols) or *wasted* (it arrived after the block
//! had all it needed). Each late frame is put down to its cause: it waited behind a late
//! frame (same completion instant), its block's sources left late (the window), or its block
//! lost symbols, and then whether its margin ran out, how many reactive rounds it took and
//! whether a replacement was lost too.
//!
//! `cargo run --release -p braid-sim --example video_trace -- LOSS SEEDS SECS [I_RATIO]`, e.g.
//! `-- 0.02 1,2,3 60` (the simulator's reference rows) or `-- 0.02 1,2,3 30 10` (the testbed
//! trace's first I-frame, 141 kB). With the built-in workload, `TAIL_DELTA=D` and
//! `REACTIVE_DELTA=D` in the environment set an app-idle tail's δ̂ and its reactive round's
//! (`Redundancy::idle_tail_target_failure`, `tail_repair_failure`) to try others.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::trace::{TraceEvent, TraceFrame};
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{EndpointId, LinkConfig, LossModel, Network, PathConfig, Scenario, VideoFlow, VideoSource};

const DEADLINE: Duration = Duration::from_millis(200);

fn secs(t: Instant) -> f64 {
    t.as_micros() as f64 / 1e6
}

/// One block, as both ends' traces show it (times in seconds).
#[derive(Default)]
struct Block {
    sources: HashSet<u32>,
    first_sent: f64,
    last_source_sent: f64,
    /// Repairs sent: (at, packet number).
    repairs: Vec<(f64, u64)>,
    /// Source packets: numbers.
    source_packets: Vec<u64>,
    first_loss_declared: Option<f64>,
    /// Symbols received, in order: (at, repair).
    received: Vec<(f64, bool)>,
    /// Each packet of the block's declared lost: (number, sent at, declared at).
    declared: Vec<(u64, f64, f64)>,
}

impl Block {
    /// When the block had as many symbols as sources (RLNC: every symbol innovative until then).
    fn complete_at(&self) -> Option<f64> {
        let n = self.sources.len();
        (self.received.len() >= n && n > 0).then(|| self.received[n - 1].0)
    }
}

#[derive(Default)]
struct Run {
    blocks: BTreeMap<u64, Block>,
    /// Sent packet number → its symbols' blocks, and when it was sent.
    packet_blocks: HashMap<u64, (f64, Vec<u64>)>,
    /// Packet number → when it arrived.
    received_packets: HashMap<u64, f64>,
    /// The sender's pacing rate (Mbit/s) and window (kB) at each change after the first 2 s.
    pacing: Vec<f64>,
    cwnd: Vec<f64>,
}

impl Run {
    fn sent(&mut self, at: f64, number: u64, frames: &[TraceFrame]) {
        for f in frames {
            if let TraceFrame::Symbol { block, index, repair, .. } = *f {
                let b = self.blocks.entry(block).or_default();
                if b.sources.is_empty() && b.repairs.is_empty() {
                    b.first_sent = at;
                }
                if repair {
                    b.repairs.push((at, number));
                } else {
                    b.sources.insert(index);
                    b.source_packets.push(number);
                    b.last_source_sent = at;
                }
                self.packet_blocks.entry(number).or_insert((at, Vec::new())).1.push(block);
            }
        }
    }

    fn lost(&mut self, at: f64, number: u64) {
        let (sent, blocks) = self.packet_blocks.get(&number).cloned().unwrap_or_default();
        for block in blocks {
            let b = self.blocks.entry(block).or_default();
            b.first_loss_declared.get_or_insert(at);
            b.declared.push((number, sent, at));
        }
    }

    fn received(&mut self, at: f64, number: u64, frames: &[TraceFrame]) {
        self.received_packets.insert(number, at);
        for f in frames {
            if let TraceFrame::Symbol { block, repair, .. } = *f {
                self.blocks.entry(block).or_default().received.push((at, repair));
            }
        }
    }
}

/// Repair counts: [ahead, reactive] × [lost, useful, wasted].
#[derive(Default, Clone, Copy)]
struct RepairFate([[u64; 3]; 2]);

fn repair_fates(run: &Run) -> RepairFate {
    let mut fate = RepairFate::default();
    for b in run.blocks.values() {
        let complete = b.complete_at();
        for &(at, number) in &b.repairs {
            let kind = usize::from(b.first_loss_declared.is_some_and(|l| l <= at));
            let Some(&arrived) = run.received_packets.get(&number) else {
                fate.0[kind][0] += 1;
                continue;
            };
            let useful = complete.is_none_or(|c| arrived <= c);
            fate.0[kind][if useful { 1 } else { 2 }] += 1;
        }
    }
    fate
}

/// Why frame `i` was late.
fn cause(run: &Run, i: usize, captured: &[f64], completed: &[f64], late: &[bool]) -> String {
    let done = completed[i];
    if i > 0 && late[i - 1] && (done - completed[i - 1]).abs() < 0.0015 {
        return format!("behind frame {}", i - 1);
    }
    // The block whose completion released the frame: the latest completed at or before it.
    let Some((id, b)) = run
        .blocks
        .iter()
        .filter(|(_, b)| b.complete_at().is_some_and(|c| c <= done + 0.0015))
        .max_by(|x, y| x.1.complete_at().partial_cmp(&y.1.complete_at()).unwrap())
    else {
        return "no block".into();
    };
    let lost_sources = b.source_packets.iter().filter(|n| !run.received_packets.contains_key(n)).count();
    let ahead: Vec<_> = b.repairs.iter().filter(|r| b.first_loss_declared.is_none_or(|l| r.0 < l)).collect();
    let reactive: Vec<_> =
        b.repairs.iter().filter(|r| b.first_loss_declared.is_some_and(|l| r.0 >= l)).collect();
    let lost_reactive = reactive.iter().filter(|r| !run.received_packets.contains_key(&r.1)).count();
    let lost_ahead = ahead.iter().filter(|r| !run.received_packets.contains_key(&r.1)).count();
    let rounds = {
        let mut times: Vec<f64> = reactive.iter().map(|r| r.0).collect();
        times.dedup_by(|a, b| (*a - *b).abs() < 0.02);
        times.len()
    };
    let kind = if lost_sources + lost_ahead == 0 {
        "sent late (no loss in its block)"
    } else if lost_reactive > 0 && rounds > 1 {
        "second reactive round (a replacement lost)"
    } else if !ahead.is_empty() {
        "burst beyond the margin: one reactive round"
    } else {
        "no margin: one reactive round"
    };
    let c = captured[i];
    let around: Vec<String> = run
        .blocks
        .iter()
        .filter(|(_, x)| x.first_sent >= c - 0.05 && x.first_sent <= done)
        .map(|(id, x)| {
            let lost = x.source_packets.iter().filter(|n| !run.received_packets.contains_key(n)).count();
            let ahead = x.repairs.iter().filter(|r| x.first_loss_declared.is_none_or(|l| r.0 < l)).count();
            format!(
                "[{id}: {} src {:.0}-{:.0}, {lost} lost, {ahead} ahead, complete {:.0}]",
                x.sources.len(),
                (x.first_sent - c) * 1e3,
                (x.last_source_sent - c) * 1e3,
                (x.complete_at().unwrap_or(f64::NAN) - c) * 1e3
            )
        })
        .collect();
    format!("blocks {} | ", around.join(" "))
        + &format!(
            "{kind}: block {id} ({} sources, {lost_sources} lost; {} ahead, {lost_ahead} lost; {} reactive \
         in {rounds} rounds, {lost_reactive} lost); from capture, ms: sources {:.0}-{:.0}, loss \
         declared {}, reactive {}, complete {:.0}",
            b.sources.len(),
            ahead.len(),
            reactive.len(),
            (b.first_sent - c) * 1e3,
            (b.last_source_sent - c) * 1e3,
            b.first_loss_declared.map_or("-".into(), |l| format!("{:.0}", (l - c) * 1e3)),
            reactive.iter().map(|r| format!("{:.0}", (r.0 - c) * 1e3)).collect::<Vec<_>>().join(","),
            (b.complete_at().unwrap_or(f64::NAN) - c) * 1e3,
        )
        + &format!(
            "; declared lost (sent → declared, ms): {}",
            b.declared
                .iter()
                .map(|d| format!("#{} {:.0}→{:.0}", d.0, (d.1 - c) * 1e3, (d.2 - c) * 1e3))
                .collect::<Vec<_>>()
                .join(" ")
        )
}

/// The workload of `tests/video.rs`: its network, client and server, and the run's end.
fn built_in(
    loss: f64,
    seed: u64,
    secs_: u64,
    i_ratio: f64,
) -> (Network<VideoFlow>, EndpointId, EndpointId, Instant) {
    let mut config = ConnectionConfig { mode: Mode::Braid, ..ConnectionConfig::default() };
    let env = |k: &str| std::env::var(k).ok().map(|v| v.parse::<f64>().expect(k));
    if let Some(d) = env("TAIL_DELTA") {
        config.redundancy.idle_tail_target_failure = d;
    }
    if let Some(d) = env("REACTIVE_DELTA") {
        config.redundancy.tail_repair_failure = d;
    }
    let source = VideoSource { i_ratio, ..VideoSource::new(3_400_000, seed) };
    let client = VideoFlow::sender(config.clone(), seed, source, Instant::ZERO);
    let server = VideoFlow::receiver(config, source);
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50));
    let path = PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link };
    let (net, tx, rx) = Network::pair(seed, client, server, &[path]).expect("network");
    (net, tx, rx, Instant::ZERO + Duration::from_secs(secs_))
}

/// A video scenario's first flow, as `braid-sim` runs it in braid's mode.
fn from_scenario(scenario: &Scenario) -> (Network<VideoFlow>, EndpointId, EndpointId, Instant) {
    let bitrate = scenario.video.expect("a video scenario");
    let built = scenario
        .build(|cx| {
            let config = ConnectionConfig {
                paths: cx.paths as u8,
                max_plpmtu: cx.scenario.max_mtu().unwrap_or(1280),
                ..ConnectionConfig::default()
            };
            let source = VideoSource::new(bitrate, cx.seed);
            (
                VideoFlow::sender(config.clone(), cx.seed, source, cx.start),
                VideoFlow::receiver(config, source),
            )
        })
        .expect("network");
    let (client, server) = built.flows[0];
    (built.network, client, server, built.limit)
}

fn run(label: &str, (mut net, tx, rx, end): (Network<VideoFlow>, EndpointId, EndpointId, Instant)) {
    net.endpoint_mut(tx).connection_mut().enable_trace();
    net.endpoint_mut(rx).connection_mut().enable_trace();
    let mut now = Instant::ZERO;
    let mut r = Run::default();
    while now < end {
        now += Duration::from_millis(1);
        net.run_until(now);
        while let Some(e) = net.endpoint_mut(tx).connection_mut().poll_trace() {
            match e {
                TraceEvent::PacketSent(p) => r.sent(secs(p.at), p.number, &p.frames),
                TraceEvent::PacketLost { at, number, .. } => r.lost(secs(at), number),
                TraceEvent::Metrics { at, metrics, .. } if secs(at) >= 2.0 => {
                    r.pacing.push(metrics.pacing_rate as f64 * 8e-6);
                    r.cwnd.push(metrics.cwnd as f64 / 1e3);
                }
                _ => {}
            }
        }
        while let Some(e) = net.endpoint_mut(rx).connection_mut().poll_trace() {
            if let TraceEvent::PacketReceived(p) = e {
                r.received(secs(p.at), p.number, &p.frames);
            }
        }
    }
    let (tx, rx) = (net.endpoint(tx), net.endpoint(rx));
    let captured: Vec<f64> = tx.captured().iter().map(|&t| secs(t)).collect();
    let completed: Vec<f64> = rx.completed().iter().map(|&t| secs(t)).collect();
    let judged = captured.iter().filter(|&&c| c + DEADLINE.as_secs_f64() <= secs(end)).count();
    let late: Vec<bool> = (0..judged)
        .map(|i| completed.get(i).is_none_or(|&d| d - captured[i] > DEADLINE.as_secs_f64()))
        .collect();
    let mut lat: Vec<f64> =
        (0..judged).map(|i| completed.get(i).map_or(f64::INFINITY, |d| d - captured[i])).collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p50 = lat.get(judged / 2).map_or(f64::NAN, |l| l * 1e3);
    let c = tx.connection().stats;
    let fate = repair_fates(&r);
    let total = c.source_symbols_sent + c.repair_symbols_sent;
    let pct = |n: u64| 100.0 * n as f64 / c.source_symbols_sent.max(1) as f64;
    println!(
        "{label}: {judged} frames, {} late; symbols sent \
         {total} ({} sources, {} repair = {:.2} % of the sources); p50 {p50:.1} ms",
        late.iter().filter(|&&l| l).count(),
        c.source_symbols_sent,
        c.repair_symbols_sent,
        pct(c.repair_symbols_sent),
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "  after 2 s: pacing rate median {:.1} Mbit/s, window median {:.0} kB",
        median(&mut r.pacing),
        median(&mut r.cwnd)
    );
    for (k, name) in ["ahead", "reactive"].iter().enumerate() {
        let [lost, useful, wasted] = fate.0[k];
        println!(
            "  repair {name:>8}: {} ({:.2} %): lost {lost} ({:.2} %), useful {useful} ({:.2} %), \
             wasted {wasted} ({:.2} %)",
            lost + useful + wasted,
            pct(lost + useful + wasted),
            pct(lost),
            pct(useful),
            pct(wasted),
        );
    }
    let lost_sources: usize = r
        .blocks
        .values()
        .map(|b| b.source_packets.iter().filter(|n| !r.received_packets.contains_key(n)).count())
        .sum();
    println!("  sources lost on the link: {lost_sources} ({:.2} %)", pct(lost_sources as u64));
    // Blocks with a margin ahead, by whether their sources lost anything.
    let (mut with_margin, mut needed, mut blocks_lossy) = (0, 0, 0);
    for b in r.blocks.values() {
        let lost = b.source_packets.iter().filter(|n| !r.received_packets.contains_key(n)).count();
        blocks_lossy += usize::from(lost > 0);
        if b.repairs.iter().any(|x| b.first_loss_declared.is_none_or(|l| x.0 < l)) {
            with_margin += 1;
            needed += usize::from(lost > 0);
        }
    }
    println!(
        "  blocks {}: {blocks_lossy} lost a source; {with_margin} had a margin ahead, {needed} of them lost a source",
        r.blocks.len()
    );
    // Margins by when they left: with the block's sources (within 10 ms of its last) or later,
    // when the loss estimate rose; [with, later] × [lost, useful, wasted].
    let mut when = [[0u64; 3]; 2];
    for b in r.blocks.values() {
        let complete = b.complete_at();
        for &(at, number) in b.repairs.iter().filter(|x| b.first_loss_declared.is_none_or(|l| x.0 < l)) {
            let k = usize::from(at > b.last_source_sent + 0.010);
            let fate = match r.received_packets.get(&number) {
                None => 0,
                Some(&a) if complete.is_none_or(|c| a <= c) => 1,
                Some(_) => 2,
            };
            when[k][fate] += 1;
        }
    }
    println!("  margins with their sources: lost/useful/wasted {:?}; later: {:?}", when[0], when[1]);
    for i in (0..judged).filter(|&i| late[i]) {
        let ms = completed.get(i).map_or(f64::INFINITY, |d| (d - captured[i]) * 1e3);
        println!(
            "  frame {i} at {:.2} s: {ms:.0} ms, {}",
            captured[i],
            cause(&r, i, &captured, &completed, &late)
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: video_trace LOSS SEEDS SECS [I_RATIO] | video_trace SCENARIO.toml [LABEL FILTER]";
    let first = args.next().expect(usage);
    if first.ends_with(".toml") {
        let filter = args.next().unwrap_or_default();
        for scenario in Scenario::load(&first).expect("scenario").iter().filter(|s| s.label.contains(&filter))
        {
            run(&format!("{} (seed {})", scenario.title(), scenario.seed), from_scenario(scenario));
        }
        return;
    }
    let loss: f64 = first.parse().expect(usage);
    let seeds: Vec<u64> = args.next().expect(usage).split(',').map(|s| s.parse().expect(usage)).collect();
    let secs_: u64 = args.next().expect(usage).parse().expect(usage);
    let i_ratio: f64 = args.next().map_or(5.0, |s| s.parse().expect(usage));
    for seed in seeds {
        let label = format!("loss {loss} seed {seed} {secs_} s i_ratio {i_ratio}");
        run(&label, built_in(loss, seed, secs_, i_ratio));
    }
}
