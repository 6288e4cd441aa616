//! The example scenarios in `scenarios/` parse, mean what their comments say, round-trip through
//! TOML, and behave as intended when driven through the network.

use std::path::PathBuf;
use std::time::Duration;

use braid_proto::Instant;
use braid_sim::{Endpoint, LinkChange, LossModel, Network, Outage, QueueLimit, Scenario};

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(name: &str) -> Vec<Scenario> {
    let path = scenarios_dir().join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_file_parses_and_round_trips() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in files {
        let runs = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
        for run in runs {
            let back = Scenario::parse(&run.to_toml(), "roundtrip.toml").unwrap();
            assert_eq!(back, vec![run.clone()], "{}: {}", file.display(), run.title());
        }
    }
}

#[test]
fn ctcp_table4() {
    let runs = load("ctcp-table4.toml");
    assert_eq!(runs.len(), 5 * 8, "5 seeds × 8 loss rates");
    let losses: Vec<f64> =
        runs.iter().filter(|r| r.seed == 1).map(|r| r.paths[0].forward.loss.mean_loss()).collect();
    assert_eq!(losses, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.10, 0.20]);
    let r = &runs[9];
    assert_eq!(r.transfer, Some(11_492_499));
    let wifi = &r.paths[0];
    assert_eq!(wifi.forward.rate_bps, 20_000_000);
    assert_eq!(wifi.forward.delay, Duration::from_millis(50));
    assert_eq!(wifi.reverse.delay, Duration::from_millis(50));
    assert_eq!(wifi.forward.queue_limit_bytes(), Some(250_000));
    assert_eq!(wifi.reverse.loss, LossModel::None);
}

#[test]
fn ctcp_table4_mtu1500_sets_the_link_mtu() {
    let runs = load("ctcp-table4-mtu1500.toml");
    let plain = load("ctcp-table4.toml");
    assert_eq!(runs.len(), plain.len());
    for (r, p) in runs.iter().zip(&plain) {
        assert_eq!((r.paths[0].forward.mtu, r.paths[0].reverse.mtu), (Some(1500), Some(1500)));
        assert_eq!(r.max_mtu(), Some(1500));
        assert_eq!(p.max_mtu(), None, "the original has no MTU (its results must not change)");
    }
    let e =
        Scenario::parse("transfer = 1\n[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\nmtu = 576\n", "m.toml")
            .unwrap_err()
            .to_string();
    assert!(e.contains("path.p0.mtu: mtu = 576: must be 1280"), "{e}");
}

#[test]
fn fmtcp_table2_cases() {
    let by_loss = load("fmtcp-table2-loss.toml");
    let by_delay = load("fmtcp-table2-delay.toml");
    let cases: Vec<(u128, f64)> = by_loss
        .iter()
        .chain(&by_delay)
        .map(|r| {
            assert_eq!(r.paths[0].forward.loss, LossModel::Bernoulli { p: 0.001 });
            assert_eq!(r.paths[0].forward.delay, Duration::from_millis(50));
            let s2 = &r.paths[1].forward;
            (s2.delay.as_millis() * 2, s2.loss.mean_loss())
        })
        .collect();
    assert_eq!(
        cases,
        [
            (100, 0.02),
            (100, 0.05),
            (100, 0.20),
            (100, 0.50),
            (100, 0.01),
            (200, 0.01),
            (300, 0.01),
            (500, 0.01)
        ]
    );
}

#[test]
fn dfec_table3() {
    let runs = load("dfec-table3.toml");
    assert_eq!(runs.len(), 15);
    for r in &runs {
        let (b1, b2) = (&r.paths[0], &r.paths[1]);
        assert_eq!((b1.forward.rate_bps, b2.forward.rate_bps), (20_000_000, 10_000_000));
        assert_eq!(b1.forward.delay, Duration::from_micros(12_500));
        assert!([25, 100, 400].contains(&(b2.forward.delay.as_micros() * 2 / 1000)));
        assert_eq!(b2.forward.loss, LossModel::None);
    }
}

#[test]
fn sato_dumbbell_is_shared() {
    let runs = load("sato-dumbbell.toml");
    assert_eq!(runs.len(), 10);
    let r = &runs[0];
    assert_eq!(r.flows, 16);
    // Every flow's own access link, then the one router all share.
    assert!(!r.paths[0].shared);
    assert_eq!(r.paths[0].via.as_deref(), Some("router"));
    assert_eq!(r.paths[0].forward.rate_bps, 100_000_000);
    assert_eq!(r.bottlenecks[0].forward.rate_bps, 50_000_000);
    assert_eq!(r.bottlenecks[0].forward.queue, QueueLimit::Packets(300));
}

/// Sends one datagram on every path every 5 ms stamped with its send time; the receiver counts
/// arrivals per path and per 10 s of send time.
struct Probe {
    sender: bool,
    paths: usize,
    next: Instant,
    outbox: Vec<(usize, Vec<u8>)>,
    received: Vec<Vec<u64>>,
}

impl Probe {
    fn new(sender: bool, paths: usize) -> Probe {
        Probe { sender, paths, next: Instant::ZERO, outbox: Vec::new(), received: vec![Vec::new(); paths] }
    }
}

impl Endpoint for Probe {
    fn handle_datagram(&mut self, _: Instant, path: usize, datagram: &[u8]) {
        if !self.sender {
            let sent = u64::from_be_bytes(datagram[..8].try_into().unwrap());
            let bucket = (sent / 10_000_000) as usize;
            let counts = &mut self.received[path];
            if counts.len() <= bucket {
                counts.resize(bucket + 1, 0);
            }
            counts[bucket] += 1;
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.sender && now >= self.next {
            for path in 0..self.paths {
                let mut d = vec![0u8; 500];
                d[..8].copy_from_slice(&now.as_micros().to_be_bytes());
                self.outbox.push((path, d));
            }
            self.next = now + Duration::from_millis(5);
        }
    }
    fn poll_transmit(&mut self, _: Instant) -> Option<(usize, Vec<u8>)> {
        self.outbox.pop()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.sender.then_some(self.next)
    }
}

fn probe(scenario: &Scenario) -> (Network<Probe>, Vec<Vec<u64>>) {
    let built = scenario.build(|cx| (Probe::new(true, cx.paths), Probe::new(false, cx.paths))).unwrap();
    let mut net = built.network;
    net.run_until(built.limit);
    let received = net.endpoint(built.flows[0].1).received.clone();
    (net, received)
}

#[test]
fn fmtcp_loss_surge_hits_subflow_2_between_50_and_200_s() {
    let scenario = load("fmtcp-loss-surge.toml").remove(0);
    assert_eq!(
        scenario.paths[1].forward.changes,
        vec![
            LinkChange {
                at: Instant::from_micros(50_000_000),
                loss: Some(LossModel::bernoulli(0.35)),
                ..Default::default()
            },
            LinkChange {
                at: Instant::from_micros(200_000_000),
                loss: Some(LossModel::bernoulli(0.01)),
                ..Default::default()
            },
        ]
    );
    let (_, received) = probe(&scenario);
    // 2000 probes per 10 s bucket; the 35 % surge covers buckets 5..20 of subflow 2 only.
    for (path, counts) in received.iter().enumerate() {
        for (bucket, &n) in counts.iter().enumerate().take(24) {
            let loss = 1.0 - n as f64 / 2000.0;
            let expected: f64 = if path == 1 && (5..20).contains(&bucket) { 0.35 } else { 0.01 };
            // 5 σ of a binomial over 2000 probes.
            let sigma = (expected * (1.0 - expected) / 2000.0).sqrt();
            assert!(
                (loss - expected).abs() < 5.0 * sigma + 0.001,
                "seed {}: path {path} bucket {bucket}: loss {loss}",
                scenario.seed
            );
        }
    }
}

#[test]
fn path_dies_for_good_at_5_s() {
    let mut scenario = load("path-dies.toml").remove(0);
    assert_eq!(
        scenario.paths[0].forward.outages,
        vec![Outage { start: Instant::from_micros(5_000_000), end: Instant::from_micros(3_600_000_000) }]
    );
    scenario.duration = Some(Duration::from_millis(20_100));
    let (net, received) = probe(&scenario);
    let wifi_after: u64 = received[0].iter().skip(1).sum();
    let wifi_before = received[0][0];
    // Probes sent in [0, 5 s) arrive unless randomly lost (0.5 %) or on the link at 5 s.
    assert!(wifi_before > 950 && wifi_before <= 1000, "{wifi_before}");
    assert_eq!(wifi_after, 0);
    assert_eq!(received[1].iter().take(2).sum::<u64>(), 4000, "LTE carries every probe of the first 20 s");
    let wifi_fwd = net.links().find(|(_, name, _)| *name == "wifi.fwd").unwrap().2.stats();
    assert_eq!(wifi_fwd.lost_outage + wifi_fwd.lost + wifi_fwd.delivered, wifi_fwd.sent);
    assert!(wifi_fwd.lost_outage >= 3000);
}

#[test]
fn multipath_files_carry_a_transfer_and_a_source() {
    for name in [
        "fmtcp-table2-loss.toml",
        "fmtcp-table2-delay.toml",
        "fmtcp-receive-buffer.toml",
        "fmtcp-loss-surge.toml",
        "dfec-table3.toml",
        "path-dies.toml",
        "shared-bottleneck.toml",
        "satellite-cellular.toml",
    ] {
        for r in load(name) {
            assert!(r.transfer.is_some_and(|t| t >= 10_000_000), "{name}: the runner needs a transfer");
            assert!(!r.source.is_empty(), "{name}: no source");
            assert!(r.paths.len() >= 2, "{name}");
        }
    }
    // FMTCP Table II: both paths 10 Mbit/s.
    for r in load("fmtcp-table2-loss.toml").into_iter().chain(load("fmtcp-table2-delay.toml")) {
        assert!(r.paths.iter().all(|p| p.forward.rate_bps == 10_000_000));
    }
}

#[test]
fn fmtcp_receive_buffer_sweeps_32_to_256_kib() {
    let runs = load("fmtcp-receive-buffer.toml");
    assert_eq!(runs.len(), 4 * 2 * 2);
    let mut windows: Vec<u64> = runs.iter().filter_map(|r| r.receive_window).collect();
    windows.dedup();
    assert_eq!(windows, [32 << 10, 64 << 10, 128 << 10, 256 << 10]);
    for r in &runs {
        assert_eq!(r.paths[0].forward.loss, LossModel::Bernoulli { p: 0.001 });
        assert!([100, 300].contains(&(r.paths[1].forward.delay.as_millis() * 2)));
    }
}

#[test]
fn shared_bottleneck_routes_both_paths_through_one_link() {
    let scenario = load("shared-bottleneck.toml").remove(0);
    assert_eq!(scenario.bottlenecks.len(), 1);
    assert!(scenario.paths.iter().all(|p| p.via.as_deref() == Some("core")));
    assert_eq!(scenario.ideal_goodput_bps(Duration::from_secs(10)), 20e6);
    let built = scenario.build(|cx| (Probe::new(true, cx.paths), Probe::new(false, cx.paths))).unwrap();
    let (client, _) = built.flows[0];
    let core = built.network.links().find(|(_, name, _)| *name == "core.fwd").unwrap().0;
    for path in 0..2 {
        assert_eq!(built.network.route(client, path).last(), Some(&core), "path {path}");
    }
}

#[test]
fn satellite_cellular() {
    let r = load("satellite-cellular.toml").remove(0);
    let (sat, cell) = (&r.paths[0].forward, &r.paths[1].forward);
    assert_eq!(
        (sat.rate_bps, sat.delay, sat.loss.mean_loss()),
        (1_500_000, Duration::from_millis(250), 0.05)
    );
    assert_eq!(
        (cell.rate_bps, cell.delay, cell.loss.mean_loss()),
        (10_000_000, Duration::from_millis(40), 0.0)
    );
}

#[test]
fn video_file_is_issue_6s_live_video_scenario() {
    let runs = load("video.toml");
    assert_eq!(runs.len(), 3 * 4, "3 seeds × 4 loss rates");
    for r in &runs {
        assert_eq!(r.video, Some(3_400_000), "{}", r.title());
        assert!(r.transfer.is_none() && r.duration.is_some_and(|d| d.as_secs() >= 60), "{}", r.title());
        assert_eq!(r.paths.len(), 1);
        assert_eq!(r.paths[0].forward.rate_bps, 20_000_000);
    }
    let losses: Vec<String> = runs.iter().map(|r| r.label.clone()).filter(|l| l.contains("seed=1")).collect();
    assert_eq!(losses.len(), 4, "{losses:?}");
    // A video scenario runs for a duration, and its bitrate must be positive.
    let err = Scenario::parse(
        "video = \"3Mbit/s\"\ntransfer = 1000\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n",
        "v.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("duration"), "{err}");
    let err = Scenario::parse(
        "video = 0\nduration = \"1s\"\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n",
        "v.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("video"), "{err}");
}

#[test]
fn sato_sweeps_set_l_r_g() {
    let all = load("sato-sweep-l.toml");
    assert_eq!(all.len(), 10 * 5 * 3, "10 seeds × 5 limits × 3 interleaves");
    let l: Vec<_> = all.iter().filter(|s| s.seed == 1).collect();
    assert_eq!(l.len(), 5 * 3);
    // Table 1's l = 0: no limit.
    assert_eq!((l[0].sato_limit, l[0].sato_interleave, l[0].sato_reduction), (Some(0), Some(1), Some(0.7)));
    assert!(l[0].label.contains("sato_limit=0"), "{}", l[0].label);
    // The paper's access links: two 1-5 ms draws a flow.
    let side = Some((Duration::from_millis(1), Duration::from_millis(5)));
    assert!(all.iter().all(|s| s.paths[0].side_delay == side));
    let r: Vec<_> =
        load("sato-sweep-r.toml").iter().filter(|s| s.seed == 1).map(|s| s.sato_reduction).collect();
    assert_eq!(r, [Some(0.5), Some(0.7), Some(1.0)]);
    assert_eq!(load("sato-dumbbell.toml")[0].sato_limit, None);
}

#[test]
fn dfec_workload_files_sweep_table_iii_with_pages_and_video() {
    // One path (TCP-dFEC, TCP-IR): 3 RTTs × 5 losses, times 3 pages for the web file.
    let pages: Vec<u64> = vec![1080 << 10, 3204 << 10, 6072 << 10];
    let web = load("dfec-tcp-web.toml");
    assert_eq!(web.len(), 3 * 3 * 5);
    let mut sizes: Vec<u64> = web.iter().filter_map(|r| r.transfer).collect();
    sizes.dedup();
    assert_eq!(sizes, pages);
    assert_eq!(load("dfec-tcp-bulk.toml").len(), 15);
    let mp_web = load("dfec-table3-web.toml");
    assert_eq!(mp_web.len(), 3 * 15);
    for r in mp_web.iter().chain(&load("dfec-table3-video.toml")) {
        assert_eq!(r.paths.len(), 2, "{}", r.title());
        assert_eq!((r.paths[0].forward.rate_bps, r.paths[1].forward.rate_bps), (20_000_000, 10_000_000));
        assert_eq!(r.paths[1].forward.loss.mean_loss(), 0.0);
    }
    // Video: the deadline is the fastest path's one-way delay + 200 ms of playout.
    for (file, n) in [("dfec-tcp-video.toml", 15), ("dfec-table3-video.toml", 15)] {
        let runs = load(file);
        assert_eq!(runs.len(), n, "{file}");
        for r in &runs {
            assert_eq!((r.video, r.video_playout), (Some(3_400_000), Some(Duration::from_millis(200))));
        }
    }
    let mp = load("dfec-table3-video.toml");
    assert!(mp.iter().all(|r| r.min_forward_delay() == Duration::from_micros(12_500)));
    let one: Vec<u128> =
        load("dfec-tcp-video.toml").iter().map(|r| r.min_forward_delay().as_millis()).collect();
    assert_eq!(one.iter().min().zip(one.iter().max()), Some((&12, &200)));
    // Only a video workload has frames to judge.
    let err = Scenario::parse(
        "transfer = 1000\nvideo_playout = \"200ms\"\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n",
        "v.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("video_playout"), "{err}");
}
