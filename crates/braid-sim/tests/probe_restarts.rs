//! Startup again when ProbeBW's probes find no queue (`cc/model/phases.rs`, `watch_probe`), on
//! a path whose buffer is too shallow to queue what UP adds: the buffer drops UP's excess, the
//! packets that survive show no queue, and the rule read that as room. Startup then found
//! nothing more and overshot into the same shallow buffer, about every two ProbeBW cycles. One
//! 20 Mbit/s, 100 ms path with 1 % random loss, its buffer 0.1 BDP (25 kB, 10 ms) or 4 packets
//! (close to a policer, which the simulator does not model).

use std::time::Duration;

use braid_proto::trace::TraceEvent;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, PathConfig, QueueLimit};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

/// Runs a bulk transfer for `secs` on the path with the buffer `queue` and returns the times
/// (in seconds, from 2 s on) the sender's controller went back to Startup, and the bytes the
/// receiver had. Startup is told by the pacer: Startup paces at 2.4 × the bandwidth estimate,
/// ProbeBW at 1.25 × at most.
fn restarts(queue: QueueLimit, secs: u64) -> (Vec<f64>, u64) {
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50)).with_queue(queue);
    let path = PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(0.01)), reverse: link };
    let what = format!("braid, 20 Mbit/s, 100 ms, queue {queue:?}");
    let mut t = Transfer::new(what, ConnectionConfig::default(), &[path], 1, 1 << 40);
    let tx = t.tx;
    t.net.endpoint_mut(tx).connection_mut().enable_trace();
    let (mut pacing, mut startup, mut restarts) = (0u64, false, Vec::new());
    for ms in (10..=secs * 1000).step_by(10) {
        t.run_until(Instant::ZERO + Duration::from_millis(ms));
        let conn = t.net.endpoint_mut(tx).connection_mut();
        while let Some(e) = conn.poll_trace() {
            if let TraceEvent::Metrics { path: 0, metrics, .. } = e {
                pacing = metrics.pacing_rate;
            }
        }
        let bandwidth = conn.path_stats()[0].model_bandwidth;
        let now = bandwidth > 0 && pacing >= 2 * bandwidth;
        if now && !startup && ms >= 2000 {
            restarts.push(ms as f64 / 1000.0);
        }
        startup = now;
    }
    let (_, received) = t.check();
    (restarts, received)
}

/// Over 20 s, 4 packets of buffer sent the controller back to Startup 8 times before the
/// back-off (at 3.0, 5.35, 7.7, 9.85, 12.1, 14.45, 16.6 and 18.85 s), 3 times after (3.0, 8.11,
/// 16.81 s): the first Startup the rule causes is not avoided, and after each that finds nothing
/// more the rule waits twice as many cycles (4, 8, 16, ...). 0.1 BDP (10 ms of queue, deeper
/// than a quarter of the probe's 12.5 ms) went back once, at 11.47 s, before and after.
#[test]
fn a_shallow_buffer_does_not_cycle_startup() {
    for queue in [QueueLimit::Bdp(0.1), QueueLimit::Packets(4)] {
        let (restarts, received) = restarts(queue, 20);
        eprintln!("{queue:?}: Startup again at {restarts:?} s, {received} bytes");
        assert!(restarts.len() <= 3, "{queue:?}: Startup again at {restarts:?} s");
        // Still moving data: at least half the link over the run.
        assert!(received >= 20 * 20_000_000 / 8 / 2, "{queue:?}: {received} bytes in 20 s");
    }
}
