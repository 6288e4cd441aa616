//! RFC 6356 §1's goal 2 for braid's own controller: a two-path connection whose paths cross one
//! bottleneck takes about one flow's share beside a single-path braid connection, not two
//! (`cc/model/coupling.rs`).

use std::time::Duration;

use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, LinkConfig, LossModel, Network};

/// Goodput (Mbit/s, from 5 s to 30 s) of a one-path and a `paths`-path braid connection through
/// one 20 Mbit/s, 50 ms RTT bottleneck with a one-BDP queue and `loss` random loss on the data
/// direction. Every path has its own 1 Gbit/s access link (1, 1 + `step`, 1 + 2 × `step`, ...
/// ms), then the bottleneck: with `step` 0 the paths are alike, as two paths from one address
/// are on the testbed.
fn goodputs(paths: u8, loss: f64, seed: u64, step: u64) -> (f64, f64) {
    let mut net = Network::new(seed);
    let bottleneck = LinkConfig::new(20_000_000, Duration::from_millis(25));
    let model = if loss > 0.0 { LossModel::bernoulli(loss) } else { LossModel::None };
    let fwd = net.add_link("bottleneck.fwd", bottleneck.clone().with_loss(model)).unwrap();
    let rev = net.add_link("bottleneck.rev", bottleneck).unwrap();
    let bytes = 1 << 30;
    let mut flow = |name: &str, paths: u8, seed: u64| {
        let config = ConnectionConfig { paths, ..ConnectionConfig::default() };
        let tx = net.add_endpoint(BulkFlow::sender(config.clone(), seed, bytes, Instant::ZERO));
        let rx = net.add_endpoint(BulkFlow::receiver(config));
        for i in 0..u64::from(paths) {
            let access = LinkConfig::new(1_000_000_000, Duration::from_millis(1 + step * i));
            let up = net.add_link(format!("{name}{i}.fwd"), access.clone()).unwrap();
            let down = net.add_link(format!("{name}{i}.rev"), access).unwrap();
            net.add_path(tx, rx, &[up, fwd], &[rev, down]).unwrap();
        }
        rx
    };
    let single = flow("single", 1, seed);
    let multi = flow("multi", paths, seed + 1);
    net.run_until(Instant::from_micros(5_000_000));
    let (s0, m0) = (net.endpoint(single).received(), net.endpoint(multi).received());
    net.run_until(Instant::from_micros(30_000_000));
    let (s1, m1) = (net.endpoint(single).received(), net.endpoint(multi).received());
    let mbps = |bytes: u64| bytes as f64 * 8.0 / 25e6;
    (mbps(s1 - s0), mbps(m1 - m0))
}

/// Two braid paths through one bottleneck take at most 1.2 × one flow's fair share (the
/// connections' total over two) beside a one-path braid connection, and at least 0.7 ×; the
/// uncoupled controller took 1.34 × at 0 % loss and 1.40 × at 1 %, and with alike paths and
/// each path's own max-filtered estimate, 1.32 × at 1 %.
#[test]
fn two_paths_through_one_bottleneck_take_one_share() {
    for (step, loss) in [(2, 0.0), (2, 0.01), (0, 0.0), (0, 0.01)] {
        let (single, multi) = goodputs(2, loss, 1, step);
        let fair = (single + multi) / 2.0;
        println!(
            "access step {step} ms, loss {loss}: two paths {multi:.2}, one path {single:.2} Mbit/s ({:.2} × fair)",
            multi / fair
        );
        assert!(single + multi > 17.0, "loss {loss}: the link is not used: {single:.2} + {multi:.2}");
        assert!(
            multi <= 1.2 * fair,
            "loss {loss}: two paths took {:.2} × fair ({multi:.2} vs {single:.2})",
            multi / fair
        );
        assert!(multi >= 0.7 * fair, "loss {loss}: two paths starved: {:.2} × fair", multi / fair);
    }
}
