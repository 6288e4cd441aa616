//! Scenario parsing, sweeps, round trips, error messages and building.

use std::time::Duration;

use super::*;
use braid_netem::link::{LinkChange, Outage, QueueLimit};
use braid_netem::loss::LossModel;

const EXAMPLE: &str = r#"
name = "example"
description = "two paths, a sweep and a surge"
seed = 42
mode = "braid"
duration = "60s"

[[path]]
name = "wifi"
rate = "20Mbit/s"
rtt = "100ms"
loss = [0, 0.01, 0.05]

[path.reverse]
loss = 0

[[path]]
name = "lte"
rate = "10Mbit/s"
delay = ["50ms", "100ms"]
queue = "300packets"
jitter = "2ms"
reorder = true
duplication = 0.001
outages = [["10s", "12.5s"]]

[[path.change]]
at = "50s"
loss = 0.35

[[path.change]]
at = "200s"
loss = { model = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.3 }
"#;

fn parse(text: &str) -> Result<Vec<Scenario>, ScenarioError> {
    Scenario::parse(text, "scenarios/test.toml")
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn example_parses_and_sweeps_in_file_order() {
    let runs = parse(EXAMPLE).unwrap();
    assert_eq!(runs.len(), 6);
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "path.wifi.loss=0 path.lte.delay=50ms",
            "path.wifi.loss=0 path.lte.delay=100ms",
            "path.wifi.loss=0.01 path.lte.delay=50ms",
            "path.wifi.loss=0.01 path.lte.delay=100ms",
            "path.wifi.loss=0.05 path.lte.delay=50ms",
            "path.wifi.loss=0.05 path.lte.delay=100ms",
        ]
    );
    let r = &runs[3];
    assert_eq!((r.name.as_str(), r.seed, r.mode.as_str(), r.flows), ("example", 42, "braid", 1));
    assert_eq!(r.duration, Some(Duration::from_secs(60)));
    let wifi = &r.paths[0];
    assert_eq!(wifi.forward.rate_bps, 20_000_000);
    assert_eq!(wifi.forward.delay, Duration::from_millis(50));
    assert_eq!(wifi.forward.loss, LossModel::Bernoulli { p: 0.01 });
    assert_eq!(wifi.reverse.loss, LossModel::None, "[path.reverse] overrides the path's loss");
    assert_eq!(wifi.forward.queue, QueueLimit::Bdp(1.0));
    let lte = &r.paths[1];
    assert_eq!(lte.forward.delay, Duration::from_millis(100));
    assert_eq!(lte.reverse.delay, Duration::from_millis(100));
    assert_eq!(lte.forward.queue, QueueLimit::Packets(300));
    assert!(lte.forward.jitter_reorders);
    assert_eq!(lte.forward.jitter, Duration::from_millis(2));
    assert_eq!(
        lte.forward.outages,
        vec![Outage { start: Instant::from_micros(10_000_000), end: Instant::from_micros(12_500_000) }]
    );
    assert_eq!(
        lte.forward.changes,
        vec![
            LinkChange {
                at: Instant::from_micros(50_000_000),
                loss: Some(LossModel::Bernoulli { p: 0.35 }),
                ..Default::default()
            },
            LinkChange {
                at: Instant::from_micros(200_000_000),
                loss: Some(LossModel::GilbertElliott {
                    p_good_to_bad: 0.01,
                    p_bad_to_good: 0.3,
                    loss_good: 0.0,
                    loss_bad: 1.0
                }),
                ..Default::default()
            },
        ]
    );
}

#[test]
fn every_sweep_point_round_trips_through_toml() {
    for run in parse(EXAMPLE).unwrap() {
        let text = run.to_toml();
        let back = Scenario::parse(&text, "roundtrip.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, vec![run.clone()], "{text}");
    }
}

#[test]
fn defaults_and_name_from_file() {
    let runs = parse("transfer = \"11MB\"\n[[path]]\nrate = \"1Gbit/s\"\ndelay = 0\n").unwrap();
    let r = &runs[0];
    assert_eq!(r.name, "test");
    assert_eq!((r.seed, r.mode.as_str(), r.flows), (0, "default", 1));
    assert_eq!(r.transfer, Some(11_000_000));
    assert_eq!(r.duration, None);
    assert_eq!(r.limit(), Instant::ZERO + DEFAULT_LIMIT);
    assert_eq!(r.paths[0].name, "p0");
    assert_eq!(r.paths[0].forward.delay, Duration::ZERO);
}

#[test]
fn errors_point_at_file_line_and_key() {
    // Unknown key, caught by serde with the parser's span.
    let e = error("duration = \"1s\"\n[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\nlsos = 0.1\n");
    assert!(e.starts_with("scenarios/test.toml:5:"), "{e}");
    assert!(e.contains("lsos"), "{e}");

    // A loss that is a percentage, inside a sweep.
    let e = error(
        "duration = \"1s\"\n[[path]]\nname = \"a\"\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\nloss = [0.01, 5]\n",
    );
    assert!(e.starts_with("scenarios/test.toml:6:8: path.a.loss[1]: 5 is not a probability"), "{e}");

    // A unit missing.
    let e = error("duration = \"1s\"\n[[path]]\nrate = \"1Mbit/s\"\ndelay = 50\n");
    assert!(e.contains("test.toml:4:9: path.p0.delay: `50` needs a unit: write \"50ms\" or \"50s\""), "{e}");

    // No rate.
    let e = error("duration = \"1s\"\n[[path]]\nrtt = \"10ms\"\n");
    assert!(e.contains("test.toml:3:7: path.p0.forward: no `rate` given"), "{e}");

    // Both delay and rtt.
    let e = error("duration = \"1s\"\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"5ms\"\nrtt = \"10ms\"\n");
    assert!(e.contains(":5:7: path.p0.rtt: give `delay` (one way) or `rtt`, not both"), "{e}");

    // Neither duration nor transfer.
    let e = error("[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\n");
    assert!(e.contains("set `duration`"), "{e}");

    // No path.
    assert!(error("duration = \"1s\"\n").contains("no [[path]] given"));

    // TOML syntax.
    let e = error("duration = \"1s\n");
    assert!(e.starts_with("scenarios/test.toml:1:"), "{e}");

    // Bad queue, bad loss table, bad outage, empty change, sweep inside a change.
    let base = "duration = \"1s\"\n[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\n";
    assert!(error(&format!("{base}queue = 100\n")).contains("\"300packets\""));
    assert!(error(&format!("{base}loss = {{ model = \"ge\" }}\n"))
        .contains("model = \"bernoulli\" or \"gilbert-elliott\""));
    let e = error(&format!("{base}loss = {{ model = \"gilbert-elliott\", p_good_to_bad = 0.1 }}\n"));
    assert!(e.contains("missing `p_bad_to_good`"), "{e}");
    let e = error(&format!("{base}outages = [[\"5s\", \"1s\"]]\n"));
    assert!(e.contains(":5:11: path.p0.outages: [0] ends before it starts"), "{e}");
    let e = error(&format!("{base}[[path.change]]\nat = \"1s\"\n"));
    assert!(e.contains("path.p0.change[0]: changes nothing"), "{e}");
    let e = error(&format!("{base}[[path.change]]\nat = \"1s\"\nloss = [0.1, 0.2]\n"));
    assert!(e.contains("not allowed here"), "{e}");
    assert!(error(&format!("{base}loss = []\n")).contains("empty array"));
    assert!(error(&format!("flows = 0\n{base}")).contains("flows: there must be at least one flow"));
}

/// Loss takes the unit grammar's percentages too (as `--emulate` does): "2%" is 0.02.
#[test]
fn a_loss_may_be_written_as_a_percentage() {
    let text =
        "duration = \"1s\"\n[[path]]\nname = \"a\"\nrate = \"20mbit\"\nrtt = \"10ms\"\nloss = \"2%\"\n";
    let s = parse(text).unwrap().remove(0);
    assert_eq!(s.paths[0].forward.loss, LossModel::Bernoulli { p: 0.02 });
    assert_eq!(s.paths[0].forward.rate_bps, 20_000_000);
    let e = error(&text.replace("2%", "120%"));
    assert!(e.contains("above 100%"), "{e}");
}

#[test]
fn huge_sweeps_are_refused() {
    let text = format!(
        "duration = \"1s\"\nseed = [{}]\n[[path]]\nrate = \"1Mbit/s\"\nrtt = [{}]\n",
        (0..200).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
        (1..=100).map(|i| format!("\"{i}ms\"")).collect::<Vec<_>>().join(",")
    );
    let e = error(&text);
    assert!(e.contains("seed (200) × path.p0.rtt (100)"), "{e}");
}

#[test]
fn missing_file_names_the_file() {
    let e = Scenario::load("/nonexistent/braid.toml").unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/braid.toml: "), "{e}");
}

/// An endpoint that does nothing, to check topology.
struct Idle;
impl crate::net::Endpoint for Idle {
    fn handle_datagram(&mut self, _: Instant, _: usize, _: &[u8]) {}
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_transmit(&mut self, _: Instant) -> Option<(usize, Vec<u8>)> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[test]
fn build_shares_shared_paths_and_duplicates_the_rest() {
    let text = r#"
duration = "10s"
flows = 3
stagger = "1s"
mode = "tcp"
[[path]]
name = "bottleneck"
shared = true
rate = "50Mbit/s"
delay = "50ms"
[[path]]
name = "side"
rate = "5Mbit/s"
delay = "5ms"
"#;
    let scenario = parse(text).unwrap().remove(0);
    let mut seen = Vec::new();
    let built = scenario
        .build(|cx| {
            seen.push((cx.flow, cx.mode.to_owned(), cx.paths, cx.start, cx.seed));
            (Idle, Idle)
        })
        .unwrap();
    assert_eq!(built.flows.len(), 3);
    assert_eq!(built.limit, Instant::from_micros(10_000_000));
    let names: Vec<&str> = built.network.links().map(|(_, name, _)| name).collect();
    assert_eq!(
        names,
        [
            "bottleneck.fwd",
            "bottleneck.rev",
            "f0.side.fwd",
            "f0.side.rev",
            "f1.side.fwd",
            "f1.side.rev",
            "f2.side.fwd",
            "f2.side.rev"
        ]
    );
    for (i, &(c, s)) in built.flows.iter().enumerate() {
        assert_eq!(built.network.route(c, 0), vec![LinkId(0)]);
        assert_eq!(built.network.route(s, 0), vec![LinkId(1)]);
        assert_eq!(built.network.route(c, 1), vec![LinkId(2 + 2 * i)]);
    }
    assert_eq!(seen[2].0, 2);
    assert_eq!(seen[2].1, "tcp");
    assert_eq!(seen[2].2, 2);
    assert_eq!(seen[2].3, Instant::from_micros(2_000_000));
    assert_ne!(seen[0].4, seen[1].4, "flows get distinct seeds");
}

#[test]
fn bottleneck_is_shared_by_the_paths_that_name_it() {
    let text = r#"
transfer = "1MB"
receive_window = ["32KB", "256KB"]
[[bottleneck]]
name = "core"
rate = "10Mbit/s"
delay = "5ms"
queue = "1bdp"
[[path]]
name = "wifi"
rate = "100Mbit/s"
rtt = "20ms"
via = "core"
[[path]]
name = "lte"
rate = "100Mbit/s"
rtt = "60ms"
via = "core"
[[path]]
name = "own"
rate = "1Mbit/s"
rtt = "10ms"
"#;
    let runs = parse(text).unwrap();
    assert_eq!(runs.iter().map(|r| r.receive_window).collect::<Vec<_>>(), [Some(32_000), Some(256_000)]);
    assert_eq!(runs[0].label, "receive_window=32KB");
    let scenario = &runs[0];
    assert_eq!(scenario.bottlenecks.len(), 1);
    assert_eq!(scenario.bottlenecks[0].forward.rate_bps, 10_000_000);
    assert_eq!(scenario.paths[0].via.as_deref(), Some("core"));
    assert_eq!(scenario.paths[2].via, None);
    assert_eq!(Scenario::parse(&scenario.to_toml(), "x.toml").unwrap(), vec![scenario.clone()]);

    let built = scenario.build(|_| (Idle, Idle)).unwrap();
    let names: Vec<&str> = built.network.links().map(|(_, name, _)| name).collect();
    assert_eq!(
        names,
        ["core.fwd", "core.rev", "wifi.fwd", "wifi.rev", "lte.fwd", "lte.rev", "own.fwd", "own.rev"]
    );
    let (c, s) = built.flows[0];
    // Own link, then the shared one; back the other way round.
    assert_eq!(built.network.route(c, 0), vec![LinkId(2), LinkId(0)]);
    assert_eq!(built.network.route(c, 1), vec![LinkId(4), LinkId(0)]);
    assert_eq!(built.network.route(s, 1), vec![LinkId(1), LinkId(5)]);
    assert_eq!(built.network.route(c, 2), vec![LinkId(6)]);

    let e = error("transfer = 1\n[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\nvia = \"core\"\n");
    assert!(e.contains(":5:7: path.p0.via: no [[bottleneck]] named `core` (defined: none)"), "{e}");
    let e = error("transfer = 1\nreceive_window = 0\n[[path]]\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\n");
    assert!(e.contains("receive_window: the receive window must hold at least one byte"), "{e}");
}

#[test]
fn side_delay_draws_two_access_links_per_flow_and_seed() {
    let text = r#"
transfer = 1
flows = 4
seed = [1, 2]
[[bottleneck]]
name = "router"
rate = "50Mbit/s"
delay = "50ms"
[[path]]
name = "access"
rate = "100Mbit/s"
delay = "0ms"
side_delay = "1ms..5ms"
via = "router"
"#;
    let runs = parse(text).unwrap();
    let path = &runs[0].paths[0];
    assert_eq!(path.side_delay, Some((Duration::from_millis(1), Duration::from_millis(5))));
    assert_eq!(Scenario::parse(&runs[0].to_toml(), "x.toml").unwrap(), vec![runs[0].clone()]);
    // Two sides of 1..5 ms each: 2..10 ms a flow, different flows and seeds draw differently,
    // the same flow and seed always the same.
    let draws: Vec<Duration> = (0..4).map(|f| path.drawn_side_delay(runs[0].seed, f)).collect();
    assert!(
        draws.iter().all(|d| (Duration::from_millis(2)..=Duration::from_millis(10)).contains(d)),
        "{draws:?}"
    );
    assert!(draws.windows(2).any(|w| w[0] != w[1]), "{draws:?}");
    assert_eq!(draws[0], path.drawn_side_delay(runs[0].seed, 0));
    assert_ne!(draws[0], path.drawn_side_delay(runs[1].seed, 0));
    assert_eq!(runs[0].min_forward_delay(), Duration::from_millis(52));
    // No range: nothing added.
    let plain = parse("transfer = 1\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"5ms\"\n").unwrap();
    assert_eq!(plain[0].paths[0].drawn_side_delay(1, 0), Duration::ZERO);

    let e = error("transfer = 1\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"5ms\"\nside_delay = \"5ms..1ms\"\n");
    assert!(e.contains("path.p0.side_delay: the range's low end"), "{e}");
    let e = error("transfer = 1\n[[path]]\nrate = \"1Mbit/s\"\ndelay = \"5ms\"\nside_delay = \"5ms\"\n");
    assert!(e.contains("path.p0.side_delay: expected a delay range"), "{e}");
    let e = error("transfer = 1\n[[path]]\nshared = true\nrate = \"1Mbit/s\"\ndelay = \"5ms\"\nside_delay = \"1ms..5ms\"\n");
    assert!(e.contains("path.p0.side_delay: a shared path has no per-flow link"), "{e}");
}
