//! A paced multipath sender and an acking receiver: the workload of the throughput test and the
//! `sim_throughput` example. Each sender timer tick emits a burst spread round-robin over its
//! paths; the receiver answers every datagram with a 40-byte ack on the path it came from.

use std::time::Duration;

use braid_proto::Instant;
use braid_sim::{Endpoint, LinkConfig, LossModel, Network, PathConfig};

pub struct Blaster {
    sender: bool,
    paths: usize,
    burst: u32,
    interval: Duration,
    size: usize,
    next: Instant,
    stop_at: Instant,
    to_send: u32,
    next_path: usize,
    seq: u64,
    pending_acks: Vec<u32>,
    pub sent: u64,
    pub received: u64,
    pub acked: u64,
}

impl Blaster {
    pub fn sender(paths: usize, burst: u32, interval: Duration, size: usize, stop_at: Instant) -> Blaster {
        Blaster {
            sender: true,
            paths,
            burst,
            interval,
            size,
            next: Instant::ZERO,
            stop_at,
            to_send: 0,
            next_path: 0,
            seq: 0,
            pending_acks: vec![0; paths],
            sent: 0,
            received: 0,
            acked: 0,
        }
    }

    pub fn receiver(paths: usize) -> Blaster {
        Blaster { sender: false, ..Blaster::sender(paths, 0, Duration::ZERO, 0, Instant::ZERO) }
    }
}

impl Endpoint for Blaster {
    fn handle_datagram(&mut self, _now: Instant, path: usize, datagram: &[u8]) {
        if self.sender {
            self.acked += 1;
        } else {
            self.received += 1;
            debug_assert!(datagram.len() >= 8);
            self.pending_acks[path] += 1;
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.sender && now >= self.next {
            self.to_send += self.burst;
            self.next = now + self.interval;
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<(usize, Vec<u8>)> {
        if self.sender {
            if self.to_send == 0 {
                return None;
            }
            self.to_send -= 1;
            let path = self.next_path;
            self.next_path = (self.next_path + 1) % self.paths;
            let mut datagram = vec![0u8; self.size];
            datagram[..8].copy_from_slice(&self.seq.to_be_bytes());
            self.seq += 1;
            self.sent += 1;
            Some((path, datagram))
        } else {
            let path = self.pending_acks.iter().position(|&n| n > 0)?;
            self.pending_acks[path] -= 1;
            Some((path, vec![0u8; 40]))
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (self.sender && self.next < self.stop_at).then_some(self.next)
    }
}

/// `flows` connections of two disjoint lossy, jittery 500 Mbit/s paths each; every sender offers
/// 5 × 1200 B every 100 µs (480 Mbit/s) until `stop_at`.
pub fn network(seed: u64, flows: usize, stop_at: Instant) -> Network<Blaster> {
    let mut net = Network::new(seed);
    let forward = LinkConfig::new(500_000_000, Duration::from_millis(5))
        .with_loss(LossModel::bernoulli(0.01))
        .with_jitter(Duration::from_millis(1), false);
    let reverse = LinkConfig::new(500_000_000, Duration::from_millis(5));
    let path = PathConfig { forward, reverse };
    for _ in 0..flows {
        let c = net.add_endpoint(Blaster::sender(2, 5, Duration::from_micros(100), 1200, stop_at));
        let s = net.add_endpoint(Blaster::receiver(2));
        net.connect(c, s, &[path.clone(), path.clone()]).expect("valid links");
    }
    net
}

/// Datagrams delivered by all links.
pub fn packets_moved(net: &Network<Blaster>) -> u64 {
    net.links().map(|(_, _, link)| link.stats().delivered).sum()
}
