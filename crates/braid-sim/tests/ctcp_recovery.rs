//! CTCP after a burst of timeouts: a 250 ms ACK outage early in CTCP Table IV's transfer (two
//! probe timeouts in a row) must not cost the rest of the transfer. Before, the second timeout
//! halved the slow-start threshold again from the initial tokens and the 1/tokens growth took
//! 20–40 s back to the path's rate: 0.27–0.31 of the ideal over the transfer, and within 5 s of
//! the outage no 1-s window above 5.1 Mbit/s (seed 1, 2 %; 16.3 without the outage). Now
//! 0.74–0.75 of the ideal (without the outage, 0.81–0.83), back to 0.8 × the rate without the
//! outage 0.3 s after it. The seed is in every failure message.

mod common {
    pub mod transfer;
}

use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, PathConfig};
use common::transfer::Transfer;

const BYTES: u64 = 11_492_499;
const OUTAGE_MS: (u64, u64) = (700, 950);

fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// CTCP Table IV's path (20 Mbit/s, 100 ms RTT, `loss` on the data direction), its ACK
/// direction silent from 0.7 to 0.95 s if `outage`.
fn transfer(seed: u64, loss: f64, outage: bool) -> Transfer {
    let link = || LinkConfig::new(20_000_000, Duration::from_millis(50));
    let reverse = if outage { link().with_outage(at_ms(OUTAGE_MS.0), at_ms(OUTAGE_MS.1)) } else { link() };
    let path = PathConfig { forward: link().with_loss(LossModel::bernoulli(loss)), reverse };
    let config = ConnectionConfig { mode: Mode::Ctcp, ..ConnectionConfig::default() };
    let what = format!("ctcp, loss {loss}, seed {seed}{}", if outage { ", ACK outage" } else { "" });
    Transfer::new(what, config, &[path], seed, BYTES)
}

/// Over the transfer: at least 0.65 × the ideal. And the project's target for CTCP on one path,
/// back to 0.8 × its rate within 5 s of a burst of timeouts: its rate is the same transfer's
/// goodput without the outage, and back means that some 1-s window (on a 100 ms grid) starting
/// within 5 s of the outage's end delivers 0.8 × that.
#[test]
fn ctcp_recovers_from_an_ack_outage() {
    for (seed, loss) in [(1, 0.02), (2, 0.05)] {
        let mut calm = transfer(seed, loss, false);
        let done = calm.finish(Instant::ZERO + Duration::from_secs(120));
        let rate = BYTES as f64 * 8.0 / (done.as_micros() as f64 / 1e6);
        let mut t = transfer(seed, loss, true);
        let what = t.what.clone();
        // Bytes received at each 100 ms from the outage's end to 6 s after it.
        let mut received = Vec::new();
        for step in 0..=60 {
            t.run_until(at_ms(OUTAGE_MS.1 + 100 * step));
            received.push(t.receiver().received());
        }
        let window = |i: usize| (received[i + 10] - received[i]) as f64 * 8.0;
        let back = (0..=50).find(|&i| window(i) >= 0.8 * rate).map(|i| 100 * i);
        let best = (0..=50).map(window).fold(0.0, f64::max) / 1e6;
        let done = t.finish(Instant::ZERO + Duration::from_secs(120));
        let goodput = BYTES as f64 * 8.0 / (done.as_micros() as f64 / 1e6);
        let ideal = 20e6 * (1.0 - loss);
        eprintln!(
            "{what}: {:.2} Mbit/s, {:.3} x ideal; without the outage {:.2}; back to 0.8 x that after {back:?} ms \
             (best 1-s window {best:.2} Mbit/s)",
            goodput / 1e6,
            goodput / ideal,
            rate / 1e6
        );
        assert!(
            goodput >= 0.65 * ideal,
            "{what}: {:.2} Mbit/s, {:.3} of the ideal",
            goodput / 1e6,
            goodput / ideal
        );
        assert!(
            back.is_some(),
            "{what}: no 1-s window within 5 s of the outage reached 0.8 x {:.2} Mbit/s (best {best:.2})",
            rate / 1e6
        );
    }
}
