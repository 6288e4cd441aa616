//! A link in one line, as `--emulate` takes it: `"20mbit,50ms,2%"` or
//! `"20mbit,50ms,2%,mtu1400"` — a rate, a one-way delay, a Bernoulli loss and an MTU, in any
//! order, each part in the grammar of [`crate::units`]. The runtime impairs a socket's datagrams
//! with it, so braid can be watched over lossy, slow paths on one machine without root.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::link::{LinkConfig, QueueLimit};
use crate::loss::LossModel;
use crate::units::{parse_quantity, Quantity};

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

/// The lowest rate a spec may name: below it one 1500-byte datagram takes over 1.5 s.
const MIN_RATE_BPS: u64 = 8_000;

/// The longest one-way delay a spec may name.
const MAX_DELAY: Duration = Duration::from_secs(10);

/// "Unlimited" rate: 1 Tbit/s (a link needs one).
const UNLIMITED_BPS: u64 = 1_000_000_000_000;

impl FromStr for Emulation {
    type Err = ParseEmulationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |why: String| ParseEmulationError { value: s.to_string(), why };
        let mut e = Emulation { rate_bps: None, delay: Duration::ZERO, loss: 0.0, mtu: None };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(n) = part.to_ascii_lowercase().strip_prefix("mtu") {
                let mtu: usize =
                    n.trim().parse().map_err(|_| err(format!("{part:?}: expected mtu<bytes>")))?;
                if !(1280..=65_535).contains(&mtu) {
                    return Err(err(format!("{part:?}: the MTU must be 1280 to 65535 bytes")));
                }
                e.mtu = Some(mtu);
                continue;
            }
            match parse_quantity(part).map_err(err)? {
                Quantity::Rate(bps) if bps < MIN_RATE_BPS => {
                    return Err(err(format!("rate {part:?} is below 8kbit")));
                }
                Quantity::Rate(bps) => e.rate_bps = Some(bps),
                Quantity::Duration(d) if d > MAX_DELAY => return Err(err("delay above 10s".into())),
                Quantity::Duration(d) => e.delay = d,
                Quantity::Fraction(p) => e.loss = p,
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

impl Emulation {
    /// The link this spec describes: its rate (1 Tbit/s when unlimited), delay, Bernoulli loss
    /// and MTU, behind a drop-tail buffer of one bandwidth-delay product of at least 100 ms and
    /// at least 64 KiB (a modest router queue; a deeper one only adds delay).
    pub fn link_config(&self) -> LinkConfig {
        let buffer_bytes = self.rate_bps.map_or(u64::MAX, |r| {
            let bdp_time = (self.delay * 2).max(Duration::from_millis(100));
            ((r as f64 / 8.0 * bdp_time.as_secs_f64()) as u64).max(64 << 10)
        });
        let link = LinkConfig::new(self.rate_bps.unwrap_or(UNLIMITED_BPS), self.delay)
            .with_queue(QueueLimit::Bytes(buffer_bytes))
            .with_loss(LossModel::bernoulli(self.loss));
        LinkConfig { mtu: self.mtu, ..link }
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
        for bad in ["20", "20mb", "-1ms", "101%", "abcms", "1bit", "mtu", "mtu500", "mtu70000", "11s"] {
            let err = bad.parse::<Emulation>().unwrap_err().to_string();
            assert!(err.contains("--emulate"), "{bad}: {err}");
        }
    }

    /// The spec speaks the scenario files' units too: one grammar for both.
    #[test]
    fn scenario_units_are_understood() {
        let tc: Emulation = "20mbit,50ms,2%".parse().unwrap();
        let scenario: Emulation = "20Mbit/s, 0.05s, 2%".parse().unwrap();
        assert_eq!(tc, scenario);
        let e: Emulation = "250us,1Gbps".parse().unwrap();
        assert_eq!((e.rate_bps, e.delay), (Some(1_000_000_000), Duration::from_micros(250)));
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

    #[test]
    fn the_buffer_is_a_bdp_of_at_least_100ms() {
        let e: Emulation = "8mbit,10ms".parse().unwrap();
        assert_eq!(e.link_config().queue, QueueLimit::Bytes(100_000));
        let e: Emulation = "8mbit,200ms".parse().unwrap();
        assert_eq!(e.link_config().queue, QueueLimit::Bytes(400_000));
        let e: Emulation = "1mbit".parse().unwrap();
        assert_eq!(e.link_config().queue, QueueLimit::Bytes(64 << 10));
        let e: Emulation = "50ms".parse().unwrap();
        assert_eq!(
            (e.link_config().queue, e.link_config().rate_bps),
            (QueueLimit::Bytes(u64::MAX), UNLIMITED_BPS)
        );
    }
}
