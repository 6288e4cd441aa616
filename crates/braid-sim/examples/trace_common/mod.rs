//! What the trace examples (`onepath_trace`, `twopath_trace`) share: the command line, times in
//! seconds, and the link's busy time as the bottleneck's own arithmetic gives it.

use braid_proto::Instant;
use braid_sim::Scenario;

/// Runs `run` over the sweep points of the scenario file named by the first argument whose
/// label is the second argument, or, if no label is, whose label contains it (every point
/// without a second argument).
pub fn run_matching(example: &str, run: impl Fn(&Scenario)) {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or_else(|| panic!("usage: {example} SCENARIO.toml [LABEL FILTER]"));
    let filter = args.next().unwrap_or_default();
    let scenarios = Scenario::load(&file).expect("scenario");
    let exact = scenarios.iter().any(|s| s.label == filter);
    for scenario in
        scenarios.iter().filter(|s| if exact { s.label == filter } else { s.label.contains(&filter) })
    {
        run(scenario);
    }
}

/// A simulated instant in seconds.
pub fn secs(at: Instant) -> f64 {
    at.as_micros() as f64 / 1e6
}

/// Link time the packets (send time in seconds, size in bytes) kept busy in `[from, to)`: a
/// FIFO at `rate` bytes/s fed at the send times; drops by the queue are ignored.
pub fn busy_time(sent: impl IntoIterator<Item = (f64, u64)>, rate: f64, from: f64, to: f64) -> f64 {
    let (mut free_at, mut busy) = (0.0f64, 0.0);
    for (at, size) in sent {
        let start = at.max(free_at);
        let end = start + size as f64 / rate;
        free_at = end;
        busy += (end.min(to) - start.max(from)).max(0.0);
    }
    busy
}
