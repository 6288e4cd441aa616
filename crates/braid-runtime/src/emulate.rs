//! Link emulation in the socket layer (`--emulate "20mbit,50ms,2%"`), so braid can be watched
//! working over lossy, slow paths on one machine without root (no `tc netem` needed).
//!
//! Each direction of a path is a queue: a datagram is dropped at random with the loss
//! probability, else it waits behind the ones before it for the link's rate (serialisation), then
//! for the one-way delay. A queue longer than its buffer drops the newcomer (tail drop), as a
//! router does. Time is passed in, like the core's.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use braid_proto::Instant;

/// One direction's impairment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Emulation {
    /// Bits per second; `None`: unlimited.
    pub rate_bps: Option<u64>,
    /// One-way delay.
    pub delay: Duration,
    /// Random loss probability, 0..1.
    pub loss: f64,
    /// Largest datagram (UDP payload) the link carries; larger ones are dropped, as a path
    /// with a smaller MTU drops them (`mtu1400`). `None`: no limit.
    pub mtu: Option<usize>,
}

/// Why an `--emulate` value was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--emulate {value:?}: {why} (expected e.g. \"20mbit,50ms,2%\" or \"20mbit,50ms,2%,mtu1400\": rate, one-way delay, loss, MTU, any order)"
)]
pub struct ParseEmulationError {
    value: String,
    why: String,
}

impl FromStr for Emulation {
    type Err = ParseEmulationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |why: String| ParseEmulationError { value: s.to_string(), why };
        let mut e = Emulation { rate_bps: None, delay: Duration::ZERO, loss: 0.0, mtu: None };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let lower = part.to_ascii_lowercase();
            let number = |suffix: &str| -> Result<f64, ParseEmulationError> {
                let n: f64 = lower[..lower.len() - suffix.len()]
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("{part:?} is not a number with unit")))?;
                if n.is_finite() && n >= 0.0 {
                    Ok(n)
                } else {
                    Err(err(format!("{part:?} must be a non-negative number")))
                }
            };
            if let Some(n) = lower.strip_prefix("mtu") {
                let mtu: usize =
                    n.trim().parse().map_err(|_| err(format!("{part:?}: expected mtu<bytes>")))?;
                if !(1280..=65_535).contains(&mtu) {
                    return Err(err(format!("{part:?}: the MTU must be 1280 to 65535 bytes")));
                }
                e.mtu = Some(mtu);
                continue;
            }
            if let Some(unit) = ["gbit", "mbit", "kbit", "bit"].into_iter().find(|u| lower.ends_with(u)) {
                let scale = match unit {
                    "gbit" => 1e9,
                    "mbit" => 1e6,
                    "kbit" => 1e3,
                    _ => 1.0,
                };
                let bps = number(unit)? * scale;
                if bps < 8_000.0 {
                    return Err(err(format!("rate {part:?} is below 8kbit")));
                }
                e.rate_bps = Some(bps as u64);
            } else if lower.ends_with("ms") {
                e.delay = Duration::from_secs_f64(number("ms")? / 1e3);
            } else if lower.ends_with("us") {
                e.delay = Duration::from_secs_f64(number("us")? / 1e6);
            } else if lower.ends_with('s') {
                e.delay = Duration::from_secs_f64(number("s")?);
            } else if lower.ends_with('%') {
                let p = number("%")?;
                if p > 100.0 {
                    return Err(err(format!("loss {part:?} is above 100%")));
                }
                e.loss = p / 100.0;
            } else {
                return Err(err(format!("{part:?} has no unit (mbit, ms, %)")));
            }
            if e.delay > Duration::from_secs(10) {
                return Err(err("delay above 10s".into()));
            }
        }
        Ok(e)
    }
}

impl fmt::Display for Emulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rate_bps {
            Some(r) => write!(f, "{}mbit", r as f64 / 1e6)?,
            None => write!(f, "unlimited")?,
        }
        write!(f, ",{}ms,{}%", self.delay.as_secs_f64() * 1e3, self.loss * 100.0)?;
        match self.mtu {
            Some(m) => write!(f, ",mtu{m}"),
            None => Ok(()),
        }
    }
}

/// A one-direction emulated link: datagrams in, released at their arrival time.
pub struct EmulatedLink {
    config: Emulation,
    /// When the link finishes serialising what is queued.
    busy_until: Instant,
    queue: VecDeque<(Instant, Vec<u8>)>,
    queued_bytes: usize,
    buffer_bytes: usize,
    rng: u64,
    pub dropped_random: u64,
    pub dropped_queue: u64,
    /// Datagrams above the emulated MTU.
    pub dropped_mtu: u64,
}

impl EmulatedLink {
    /// `seed` makes the random losses repeatable.
    pub fn new(config: Emulation, seed: u64) -> EmulatedLink {
        // Buffer: one bandwidth-delay product of at least 100 ms, at least 64 KiB (a modest
        // router queue; a deeper one only adds delay).
        let buffer_bytes = config.rate_bps.map_or(usize::MAX, |r| {
            let bdp_time = (config.delay * 2).max(Duration::from_millis(100));
            ((r as f64 / 8.0 * bdp_time.as_secs_f64()) as usize).max(64 << 10)
        });
        EmulatedLink {
            config,
            busy_until: Instant::ZERO,
            queue: VecDeque::new(),
            queued_bytes: 0,
            buffer_bytes,
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            dropped_random: 0,
            dropped_queue: 0,
            dropped_mtu: 0,
        }
    }

    fn random(&mut self) -> f64 {
        // SplitMix64: small, seeded, good enough for loss decisions.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A datagram enters the link at `now`.
    pub fn push(&mut self, now: Instant, datagram: &[u8]) {
        if self.config.mtu.is_some_and(|m| datagram.len() > m) {
            self.dropped_mtu += 1;
            return;
        }
        if self.config.loss > 0.0 && self.random() < self.config.loss {
            self.dropped_random += 1;
            return;
        }
        if self.queued_bytes + datagram.len() > self.buffer_bytes {
            self.dropped_queue += 1;
            return;
        }
        let start = self.busy_until.max(now);
        let serialise = self
            .config
            .rate_bps
            .map_or(Duration::ZERO, |r| Duration::from_secs_f64(datagram.len() as f64 * 8.0 / r as f64));
        self.busy_until = start + serialise;
        self.queued_bytes += datagram.len();
        self.queue.push_back((self.busy_until + self.config.delay, datagram.to_vec()));
    }

    /// When the next datagram arrives at the far end.
    pub fn next_release(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The next datagram that has arrived by `now`.
    pub fn pop(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.queue.front().is_some_and(|(t, _)| *t <= now) {
            let (_, d) = self.queue.pop_front()?;
            self.queued_bytes -= d.len();
            Some(d)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_in_any_order_and_refuses_nonsense() {
        let e: Emulation = "20mbit,50ms,2%".parse().unwrap();
        assert_eq!(e.rate_bps, Some(20_000_000));
        assert_eq!(e.delay, Duration::from_millis(50));
        assert!((e.loss - 0.02).abs() < 1e-12);
        let e: Emulation = "5% , 1.5gbit".parse().unwrap();
        assert_eq!(e.rate_bps, Some(1_500_000_000));
        assert_eq!(e.delay, Duration::ZERO);
        let e: Emulation = "20mbit,mtu1400,10ms".parse().unwrap();
        assert_eq!(e.mtu, Some(1400));
        assert_eq!(e.to_string().parse::<Emulation>().unwrap(), e);
        let mut link = EmulatedLink::new(e, 1);
        link.push(Instant::ZERO, &[0; 1401]);
        link.push(Instant::ZERO, &[0; 1400]);
        assert_eq!((link.dropped_mtu, link.queue.len()), (1, 1));
        for bad in ["20", "20mb", "-1ms", "101%", "abcms", "1bit", "mtu", "mtu500", "mtu70000"] {
            let err = bad.parse::<Emulation>().unwrap_err().to_string();
            assert!(err.contains("--emulate"), "{bad}: {err}");
        }
    }

    #[test]
    fn rate_delay_and_loss() {
        let e: Emulation = "8mbit,10ms,10%".parse().unwrap();
        let mut link = EmulatedLink::new(e, 42);
        let t0 = Instant::from_micros(1_000_000);
        for _ in 0..1000 {
            link.push(t0, &[0u8; 1000]);
        }
        // 1000 bytes at 8 Mbit/s = 1 ms each; the 100 ms buffer holds 100 kB.
        let kept = link.queue.len() as u64;
        assert_eq!(kept + link.dropped_random + link.dropped_queue, 1000);
        assert!(
            (60..=140).contains(&link.dropped_random),
            "seed 42: {} random drops of 1000",
            link.dropped_random
        );
        assert!(link.pop(t0 + Duration::from_micros(10_999)).is_none());
        assert!(link.pop(t0 + Duration::from_millis(11)).is_some());
        let last = link.queue.back().unwrap().0;
        assert_eq!(last, t0 + Duration::from_millis(10 + kept));
    }
}
