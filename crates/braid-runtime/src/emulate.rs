//! Link emulation in the socket layer (`--emulate "20mbit,50ms,2%"`), so braid can be watched
//! working over lossy, slow paths on one machine without root (no `tc netem` needed).
//!
//! Each direction of a path is a queue: a datagram is dropped at random with the loss
//! probability, else it waits behind the ones before it for the link's rate (serialisation), then
//! for the one-way delay. A queue longer than its buffer drops the newcomer (tail drop), as a
//! router does. Time is passed in, like the core's.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
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
    /// with a smaller MTU drops them (`mtu1400`). Parsed specs default to
    /// [`DEFAULT_MTU`]; `None` (no limit) only when built by hand.
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

/// The largest datagram an emulated link carries unless the spec names one: what fits a
/// 1500-byte Ethernet MTU, as on any WAN path. Without it, path MTU discovery on loopback grew
/// datagrams to 16 KiB — 6.5 ms each on a 20 Mbit/s link, a whole 16 KiB lost at a time — and
/// measured a path no real network has (a two-path `braid bench` at 0.68 × ideal instead of
/// 0.87, probe round trips ~20 ms longer). `mtu65535` lifts it.
pub const DEFAULT_MTU: usize = 1500;

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
        e.mtu = e.mtu.or(Some(DEFAULT_MTU));
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
            Some(DEFAULT_MTU) => Ok(()),
            Some(m) => write!(f, ",mtu{m}"),
            None => write!(f, ",mtu65535"),
        }
    }
}

/// A one-direction emulated link: datagrams in, released at their arrival time. The model is
/// braid-sim's [`braid_sim::Link`] (drop-tail queue, transmitter of fixed rate, propagation delay,
/// Bernoulli loss of serialized packets), so `--emulate` and the simulator impair alike; this
/// wrapper only carries each datagram's far-end address through it (as the link's tag).
pub struct EmulatedLink {
    link: braid_sim::Link,
    /// Addresses of the datagrams on the link, by tag (removed at delivery: bounded by the queue
    /// and the delay, never by what peers send).
    addrs: HashMap<u64, SocketAddr>,
    next_tag: u64,
    pub dropped_random: u64,
    pub dropped_queue: u64,
    /// Datagrams above the emulated MTU.
    pub dropped_mtu: u64,
}

/// "Unlimited" rate: 1 Tbit/s (the simulator's link needs one).
const UNLIMITED_BPS: u64 = 1_000_000_000_000;

impl EmulatedLink {
    /// `seed` makes the random losses repeatable.
    pub fn new(config: Emulation, seed: u64) -> EmulatedLink {
        // Buffer: one bandwidth-delay product of at least 100 ms, at least 64 KiB (a modest
        // router queue; a deeper one only adds delay).
        let buffer_bytes = config.rate_bps.map_or(u64::MAX, |r| {
            let bdp_time = (config.delay * 2).max(Duration::from_millis(100));
            ((r as f64 / 8.0 * bdp_time.as_secs_f64()) as u64).max(64 << 10)
        });
        let link = braid_sim::LinkConfig::new(config.rate_bps.unwrap_or(UNLIMITED_BPS), config.delay)
            .with_queue(braid_sim::QueueLimit::Bytes(buffer_bytes))
            .with_loss(braid_sim::LossModel::bernoulli(config.loss));
        let link = braid_sim::LinkConfig { mtu: config.mtu, ..link };
        let link = braid_sim::Link::new(link, seed).expect("a parsed --emulate is a valid link");
        EmulatedLink {
            link,
            addrs: HashMap::new(),
            next_tag: 0,
            dropped_random: 0,
            dropped_queue: 0,
            dropped_mtu: 0,
        }
    }

    /// A datagram enters the link at `now`; `addr` travels with it (where it goes, or where it
    /// came from).
    pub fn push(&mut self, now: Instant, addr: SocketAddr, datagram: &[u8]) {
        let tag = self.next_tag;
        self.next_tag += 1;
        match self.link.send_tagged(now, tag, datagram.to_vec()) {
            braid_sim::Fate::Queued | braid_sim::Fate::Duplicated => {
                self.addrs.insert(tag, addr);
            }
            braid_sim::Fate::DroppedByQueue => self.dropped_queue += 1,
            braid_sim::Fate::Lost | braid_sim::Fate::LostInOutage => self.dropped_random += 1,
            braid_sim::Fate::TooBig => self.dropped_mtu += 1,
        }
    }

    /// When the next datagram arrives at the far end.
    pub fn next_release(&self) -> Option<Instant> {
        self.link.next_delivery()
    }

    /// The next datagram that has arrived by `now`.
    pub fn pop(&mut self, now: Instant) -> Option<(SocketAddr, Vec<u8>)> {
        let (tag, d) = self.link.poll_deliver_tagged(now)?;
        let addr = self.addrs.remove(&tag)?;
        Some((addr, d))
    }

    /// Datagrams on the link (queued or on the wire).
    pub fn in_flight(&self) -> usize {
        self.addrs.len()
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
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        link.push(Instant::ZERO, to, &[0; 1401]);
        link.push(Instant::ZERO, to, &[0; 1400]);
        assert_eq!((link.dropped_mtu, link.in_flight()), (1, 1));
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
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        for _ in 0..1000 {
            link.push(t0, to, &[0u8; 1000]);
        }
        // 1000 bytes at 8 Mbit/s = 1 ms each; the 100 ms buffer holds 100 kB (~100 packets),
        // of which about 10% are lost after serialization (the simulator's model).
        let kept = link.in_flight() as u64;
        assert_eq!(kept + link.dropped_random + link.dropped_queue, 1000, "seed 42");
        assert!(
            (95..=105).contains(&(kept + link.dropped_random)),
            "seed 42: {kept} kept, {} lost",
            link.dropped_random
        );
        assert!(
            (3..=25).contains(&link.dropped_random),
            "seed 42: {} random drops of ~100",
            link.dropped_random
        );
        assert!(link.pop(t0 + Duration::from_micros(10_999)).is_none(), "nothing before 1 ms + 10 ms");
        let mut last = None;
        let mut got = 0;
        let mut t = t0;
        while got < kept {
            t += Duration::from_millis(1);
            while let Some((a, _)) = link.pop(t) {
                assert_eq!(a, to);
                got += 1;
                last = Some(t);
            }
            assert!(t < t0 + Duration::from_secs(1), "{got} of {kept} delivered");
        }
        // The last datagram left after every accepted one was serialized (lost ones included).
        let serialized = kept + link.dropped_random;
        assert_eq!(last, Some(t0 + Duration::from_millis(10 + serialized)));
        assert_eq!(link.in_flight(), 0);
    }

    /// A spec without an MTU gets a WAN's 1500 bytes; `mtu65535` lifts it; Display round-trips.
    #[test]
    fn the_mtu_defaults_to_a_wan_path() {
        let e: Emulation = "20mbit,50ms,2%".parse().unwrap();
        assert_eq!(e.mtu, Some(DEFAULT_MTU));
        assert_eq!(e.to_string(), "20mbit,50ms,2%");
        let big: Emulation = "20mbit,50ms,2%,mtu65535".parse().unwrap();
        assert_eq!(big.mtu, Some(65_535));
        assert_eq!(big.to_string().parse::<Emulation>().unwrap(), big);
        assert_eq!(e.to_string().parse::<Emulation>().unwrap(), e);
    }
}
