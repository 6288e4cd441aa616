//! Unreliable datagrams (PROTOCOL.md §15) in the simulator: a fixed-rate stream of stamped
//! datagrams (3.4 Mbit/s of 1,200-byte datagrams, a live call or video's shape) over two lossy
//! paths. Lost datagrams are rebuilt from repair sent across datagrams, never retransmitted;
//! the share delivered within the 150 ms deadline and the repair overhead are measured. The
//! seed is in every failure message.

use std::collections::HashMap;
use std::time::Duration;

mod common {
    pub mod app;
}

use braid_proto::datagram::{DatagramConfig, DatagramRedundancy, DatagramStats};
use braid_proto::{Connection, ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, Network, PathConfig};
use common::app::{App, Driven};

const DEADLINE: Duration = Duration::from_millis(150);
const PAYLOAD: usize = 1200;

/// A connection with a datagram application on top: the client sends `rate` bit/s of stamped
/// datagrams once connected, the server records when each arrives.
struct DatagramApp {
    conn: Connection,
    sender: bool,
    rate: u64,
    next: Option<Instant>,
    stop: Instant,
    seq: u32,
    /// Sequence number → one-way latency (µs) of each datagram received.
    arrivals: HashMap<u32, u64>,
}

impl App for DatagramApp {
    fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    fn conn_ref(&self) -> &Connection {
        &self.conn
    }

    fn drive(&mut self, now: Instant) {
        if self.sender && self.conn.is_established() {
            let gap = Duration::from_micros(PAYLOAD as u64 * 8 * 1_000_000 / self.rate);
            let mut next = self.next.unwrap_or(now);
            while next <= now && next < self.stop {
                let mut d = vec![0u8; PAYLOAD];
                d[..4].copy_from_slice(&self.seq.to_be_bytes());
                d[4..12].copy_from_slice(&next.as_micros().to_be_bytes());
                self.conn.send_datagram(now, &d).expect("datagram fits");
                self.seq += 1;
                next += gap;
            }
            self.next = Some(next);
        }
        while let Some(d) = self.conn.recv_datagram() {
            let seq = u32::from_be_bytes(d[..4].try_into().unwrap());
            let sent = u64::from_be_bytes(d[4..12].try_into().unwrap());
            self.arrivals.entry(seq).or_insert(now.as_micros() - sent);
        }
    }
    fn wake(&self) -> Option<Instant> {
        self.next.filter(|&n| self.sender && n < self.stop)
    }
}

#[derive(Debug)]
struct Outcome {
    sent: u32,
    on_time: f64,
    p50_ms: f64,
    p99_ms: f64,
    overhead: f64,
    /// The links' measured loss on the data direction, weighted by what each carried.
    loss: f64,
    tx: DatagramStats,
    rx: DatagramStats,
    retransmissions: u64,
}

fn run(seed: u64, secs: u64, redundancy: DatagramRedundancy, losses: [f64; 2]) -> Outcome {
    run_on(seed, secs, redundancy, losses, [15, 35])
}

fn run_on(
    seed: u64,
    secs: u64,
    redundancy: DatagramRedundancy,
    losses: [f64; 2],
    one_way_ms: [u64; 2],
) -> Outcome {
    let datagrams = DatagramConfig { redundancy, ..DatagramConfig::default() };
    let config = ConnectionConfig { paths: 2, datagrams, ..ConnectionConfig::default() };
    let stop = Instant::ZERO + Duration::from_secs(secs);
    let app = |conn, sender| {
        Driven(DatagramApp {
            conn,
            sender,
            rate: 3_400_000,
            next: None,
            stop,
            seq: 0,
            arrivals: HashMap::new(),
        })
    };
    let client = app(Connection::client(config.clone(), Instant::ZERO, seed), true);
    let server = app(Connection::server(config, Instant::ZERO), false);
    let path = |rate, ms, loss| {
        let link = LinkConfig::new(rate, Duration::from_millis(ms));
        PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link }
    };
    let paths = [path(15_000_000, one_way_ms[0], losses[0]), path(8_000_000, one_way_ms[1], losses[1])];
    let (mut net, tx, rx) = Network::pair(seed, client, server, &paths).expect("network");
    net.run_until(stop + Duration::from_secs(1));
    let (mut carried, mut dropped) = (0u64, 0u64);
    for path in 0..2 {
        let forward = net.route(tx, path)[0];
        let s = net.link(forward).stats();
        carried += s.sent;
        dropped += s.lost;
    }
    let (tx, rx) = (&net.endpoint(tx).0, &net.endpoint(rx).0);
    let mut latencies: Vec<u64> = rx.arrivals.values().copied().collect();
    latencies.sort_unstable();
    let pct = |q: f64| latencies.get(((latencies.len() as f64 * q) as usize).min(latencies.len().max(1) - 1));
    let on_time = latencies.iter().filter(|&&l| l <= DEADLINE.as_micros() as u64).count();
    let stats = tx.conn.datagram_stats();
    Outcome {
        sent: tx.seq,
        on_time: on_time as f64 / f64::from(tx.seq.max(1)),
        p50_ms: pct(0.5).map_or(f64::NAN, |&l| l as f64 / 1000.0),
        p99_ms: pct(0.99).map_or(f64::NAN, |&l| l as f64 / 1000.0),
        overhead: stats.overhead(),
        loss: dropped as f64 / carried.max(1) as f64,
        tx: stats,
        rx: rx.conn.datagram_stats(),
        retransmissions: tx.conn.stats.retransmissions,
    }
}

#[test]
fn lost_datagrams_are_rebuilt_in_time_without_retransmission() {
    let seed = 11;
    let o = run(seed, 10, DatagramRedundancy::Adaptive, [0.02, 0.01]);
    eprintln!("seed {seed}: {o:?}");
    assert!(o.sent > 3000, "seed {seed}: only {} datagrams sent", o.sent);
    // Each datagram went out once: nothing is retransmitted, losses are rebuilt from repair.
    assert_eq!(u64::from(o.sent), o.tx.sent, "seed {seed}");
    assert_eq!(o.retransmissions, 0, "seed {seed}");
    assert!(o.rx.recovered > 0, "seed {seed}: {o:?}");
    assert!(o.on_time >= 0.995, "seed {seed}: on time {:.4}", o.on_time);
    assert!(
        o.overhead <= 2.0 * o.loss + 0.02,
        "seed {seed}: overhead {:.4} at loss {:.4}",
        o.overhead,
        o.loss
    );
}

#[test]
fn without_repair_the_loss_stays() {
    let seed = 12;
    let o = run(seed, 5, DatagramRedundancy::Fixed(0.0), [0.02, 0.01]);
    eprintln!("seed {seed}: {o:?}");
    assert_eq!((o.tx.repairs_sent, o.rx.recovered), (0, 0), "seed {seed}");
    assert!(o.on_time < 0.995, "seed {seed}: on time {:.4}", o.on_time);
}

#[test]
fn no_loss_costs_little() {
    let seed = 13;
    let o = run(seed, 5, DatagramRedundancy::Adaptive, [0.0, 0.0]);
    eprintln!("seed {seed}: {o:?}");
    assert!(o.on_time >= 0.999, "seed {seed}: on time {:.4}", o.on_time);
    assert!(o.overhead <= 0.02, "seed {seed}: overhead {:.4}", o.overhead);
}

/// The measurement behind docs/BENCHMARKS.md's datagram rows:
/// `cargo test --release -p braid-sim --test datagrams -- --ignored --nocapture`.
#[test]
#[ignore]
fn sweep() {
    println!("one-way ms  loss %    seed  on-time   p50 ms  p99 ms  overhead  link loss  repairs (for loss)  recovered  late  dropped");
    for (delays, losses) in [
        ([15, 35], [0.02, 0.01]),
        ([30, 70], [0.02, 0.01]),
        ([15, 35], [0.05, 0.05]),
        ([50, 100], [0.01, 0.01]),
    ] {
        for seed in 1..=3 {
            let o = run_on(seed, 20, DatagramRedundancy::Adaptive, losses, delays);
            println!(
                "{:>3}/{:<3}    {:>3.0}/{:<3.0}  {seed:>4}  {:.4}  {:>7.1} {:>7.1}  {:>7.2}%  {:>8.2}%  {:>7} ({:>4})  {:>9}  {:>4}  {:>7}",
                delays[0], delays[1], losses[0] * 100.0, losses[1] * 100.0, o.on_time, o.p50_ms, o.p99_ms,
                o.overhead * 100.0, o.loss * 100.0, o.tx.repairs_sent, o.tx.loss_repairs_sent, o.rx.recovered, o.rx.late, o.tx.dropped
            );
        }
    }
}
