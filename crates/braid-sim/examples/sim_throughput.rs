//! How many packets per wall-clock second the simulator moves on one core, for the workload of
//! `tests/throughput.rs` (8 connections × 2 lossy, jittery paths, data and acks):
//! `cargo run --release -p braid-sim --example sim_throughput [simulated seconds]`.

#[path = "../tests/common/blaster.rs"]
mod blaster;

use braid_proto::Instant;

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let stop = Instant::from_micros((seconds * 1e6) as u64);
    let mut best = 0.0f64;
    for round in 0..3 {
        let mut net = blaster::network(2026, 8, stop);
        let started = std::time::Instant::now();
        net.run_until(stop + std::time::Duration::from_millis(100));
        let wall = started.elapsed().as_secs_f64();
        let moved = blaster::packets_moved(&net);
        let rate = moved as f64 / wall;
        best = best.max(rate);
        println!(
            "round {round}: {moved} packets, {} events, in {wall:.3} s: {:.2} M packets/s",
            net.stats().events,
            rate / 1e6
        );
    }
    println!("best: {:.2} M packets/s (target ≥ 1.00)", best / 1e6);
}
