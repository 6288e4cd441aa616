//! The workload the simulator's speed is measured on (target: at least a million packets per
//! wall-clock second on one core, release) keeps its books: every packet sent is received or
//! lost. The measurement itself is a benchmark, not a test:
//! `cargo run --release -p braid-sim --example sim_throughput`.

mod common {
    pub mod blaster;
}

use braid_proto::Instant;
use common::blaster::{network, packets_moved};

const SEED: u64 = 2026;

#[test]
fn blaster_workload_accounts_for_every_packet() {
    let stop = Instant::from_micros(100_000);
    let mut net = network(SEED, 4, stop);
    net.run_until(Instant::from_micros(200_000));
    let (mut sent, mut received, mut acked) = (0, 0, 0);
    for i in 0..net.endpoint_count() {
        let e = net.endpoint(braid_sim::EndpointId(i));
        sent += e.sent;
        received += e.received;
        acked += e.acked;
    }
    // 4 senders × 1000 ticks (0..100 ms every 100 µs) × 5 packets.
    assert_eq!(sent, 4 * 1000 * 5, "seed {SEED}");
    let lost: u64 = net.links().map(|(_, _, l)| l.stats().lost + l.stats().dropped_queue).sum();
    assert_eq!(received + lost, sent, "seed {SEED}");
    assert_eq!(acked, received, "seed {SEED}: reverse links are lossless");
    let loss = lost as f64 / sent as f64;
    assert!((0.005..0.015).contains(&loss), "seed {SEED}: loss {loss}");
    assert_eq!(packets_moved(&net), received + acked);
}
