//! Link emulation in the socket layer (`--emulate "20mbit,50ms,2%"`), so braid can be watched
//! working over lossy, slow paths on one machine without root (no `tc netem` needed).
//!
//! Each direction of a path is a [`braid_netem::Link`] built from the spec (see
//! [`Emulation::link_config`]): a datagram waits behind the ones before it for the link's rate
//! (serialisation), then for the one-way delay, and is lost at random with the loss probability;
//! a queue longer than its buffer drops the newcomer (tail drop), as a router does. Time is
//! passed in, like the core's.

use std::collections::HashMap;
use std::net::SocketAddr;

use braid_netem::{Fate, Link};
use braid_proto::Instant;

pub use braid_netem::{Emulation, ParseEmulationError, DEFAULT_MTU};

/// A one-direction emulated link: datagrams in, released at their arrival time. The model is
/// braid-netem's (the simulator's and the testbed's too), so `--emulate` and the simulator impair
/// alike; this wrapper only carries each datagram's far-end address through it (as the link's
/// tag).
pub struct EmulatedLink {
    link: Link,
    /// Addresses of the datagrams on the link, by tag (removed at delivery: bounded by the queue
    /// and the delay, never by what peers send).
    addrs: HashMap<u64, SocketAddr>,
    next_tag: u64,
    pub dropped_random: u64,
    pub dropped_queue: u64,
    /// Datagrams above the emulated MTU.
    pub dropped_mtu: u64,
}

impl EmulatedLink {
    /// `seed` makes the random losses repeatable.
    pub fn new(config: Emulation, seed: u64) -> EmulatedLink {
        let link = Link::new(config.link_config(), seed).expect("a parsed --emulate is a valid link");
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
            Fate::Queued | Fate::Duplicated => {
                self.addrs.insert(tag, addr);
            }
            Fate::DroppedByQueue => self.dropped_queue += 1,
            Fate::Lost | Fate::LostInOutage => self.dropped_random += 1,
            Fate::TooBig => self.dropped_mtu += 1,
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
    use std::time::Duration;

    use super::*;

    /// Datagrams above the spec's MTU are dropped and counted.
    #[test]
    fn the_mtu_drops_what_does_not_fit() {
        let e: Emulation = "20mbit,mtu1400,10ms".parse().unwrap();
        let mut link = EmulatedLink::new(e, 1);
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        link.push(Instant::ZERO, to, &[0; 1401]);
        link.push(Instant::ZERO, to, &[0; 1400]);
        assert_eq!((link.dropped_mtu, link.in_flight()), (1, 1));
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
}
