//! One direction of one emulated path: packets read from a TUN device go through braid-netem's
//! [`Link`] (drop-tail queue → transmitter at `rate` → wire with one-way `delay`, random loss,
//! outages, scheduled changes) driven by the wall clock, and are written to the other TUN device
//! when the model delivers them. The model is the simulator's, bit for bit; only the clock is real.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant as WallInstant};

use braid_netem::{Link, LinkConfig, LinkStats};
use braid_proto::Instant;
use serde::Serialize;

use crate::sys;

/// What a forwarder saw, beyond the link model's own counters.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ForwardStats {
    pub link: LinkStats,
    /// Packets the model delivered but the output TUN refused.
    pub write_errors: u64,
    /// How late packets were written compared with the model's delivery time (timer slop).
    pub late_mean_us: f64,
    pub late_max_us: u64,
}

/// A direction to run: from `input` to `output` through `config`.
pub struct Direction {
    pub name: String,
    pub input: Arc<OwnedFd>,
    pub output: Arc<OwnedFd>,
    pub config: LinkConfig,
    pub seed: u64,
}

fn now_since(epoch: WallInstant) -> Instant {
    Instant::from_micros(epoch.elapsed().as_micros() as u64)
}

/// Start forwarding; the link's time zero is `epoch` (outages and changes are relative to it).
/// Stops when `stop` is set or on Ctrl-C, returning the counters.
pub fn spawn(dir: Direction, epoch: WallInstant, stop: Arc<AtomicBool>) -> JoinHandle<ForwardStats> {
    std::thread::Builder::new()
        .name(format!("fwd-{}", dir.name))
        .spawn(move || run(dir, epoch, &stop))
        .expect("spawn forwarder")
}

fn run(dir: Direction, epoch: WallInstant, stop: &AtomicBool) -> ForwardStats {
    sys::tight_timer_slack();
    let mut link = match Link::new(dir.config, dir.seed) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("forwarder {}: bad link config: {}", dir.name, e.0);
            return ForwardStats::default();
        }
    };
    let (input, output) = (dir.input.as_fd(), dir.output.as_fd());
    let mut buf = vec![0u8; 65536];
    let mut stats = ForwardStats::default();
    let (mut late_sum, mut late_n) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) && !sys::interrupted() {
        // Deliver what is due.
        let now = now_since(epoch);
        while let Some(at) = link.next_delivery() {
            if at > now {
                break;
            }
            if let Some(packet) = link.poll_deliver(now) {
                let late = now.as_micros().saturating_sub(at.as_micros());
                late_sum += late;
                late_n += 1;
                stats.late_max_us = stats.late_max_us.max(late);
                if sys::write_fd(output, &packet).is_err() {
                    stats.write_errors += 1;
                }
            }
        }
        // Sleep until the next delivery or an arriving packet (at most 5 ms, to notice `stop`).
        let timeout = link
            .next_delivery()
            .map(|at| at.saturating_duration_since(now_since(epoch)))
            .unwrap_or(Duration::from_millis(5))
            .min(Duration::from_millis(5));
        if timeout.is_zero() || sys::wait_readable(input, timeout) {
            // Drain the TUN queue: every packet enters the model at its own arrival time.
            while let Ok(n) = sys::read_fd(input, &mut buf) {
                if n == 0 {
                    break;
                }
                link.send(now_since(epoch), buf[..n].to_vec());
            }
        }
    }
    stats.link = *link.stats();
    stats.late_mean_us = if late_n > 0 { late_sum as f64 / late_n as f64 } else { 0.0 };
    stats
}
