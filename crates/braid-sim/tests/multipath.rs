//! Multipath integrity and receiver memory: in the `braid`, `ctcp` and
//! `fmtcp` modes, every byte arrives, in order, intact, over 2, 3 and 4 lossy paths, across
//! paths of very different delay with jitter, through an outage of one path and with every path
//! flapping; and the receiver never holds more undelivered data than it advertised, however the
//! paths reorder (its decoders also keep up to one block of delivered symbols: see the test).
//! Every other mode of [`Mode::ALL`] is checked on two lossy paths. About 10 s of CPU in debug.
//! The seed is in every failure message.

use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, Endpoint, LinkConfig, LossModel, Network, Outage, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

const MODES: [Mode; 3] = [Mode::Braid, Mode::Ctcp, Mode::Fmtcp];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

/// Data direction lossy as given, ACK direction clean (the papers' convention).
fn path(rate_mbps: u64, rtt_ms: u64, loss: f64) -> PathConfig {
    let link = LinkConfig::new(rate_mbps * 1_000_000, ms(rtt_ms / 2));
    PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link }
}

/// What a run left behind.
struct Outcome {
    done: Option<Instant>,
    received: u64,
    /// Packets each path of the sender had acknowledged.
    acked: Vec<u64>,
}

/// Runs a `bytes` transfer over `paths`, checks integrity and order, and returns the outcome.
fn transfer(mode: Mode, paths: &[PathConfig], seed: u64, bytes: u64, limit: Duration) -> Outcome {
    let what = format!("{mode:?}, {} paths, seed {seed}", paths.len());
    let config = ConnectionConfig { mode, paths: paths.len() as u8, ..ConnectionConfig::default() };
    let mut t = Transfer::new(what, config, paths, seed, bytes);
    let (done, received) = t.run(Instant::ZERO + limit);
    let acked = t.sender().connection().path_stats().iter().map(|p| p.packets_acked).collect();
    Outcome { done, received, acked }
}

fn complete(mode: Mode, paths: &[PathConfig], seed: u64, bytes: u64, limit: Duration, name: &str) -> Outcome {
    let out = transfer(mode, paths, seed, bytes, limit);
    assert!(
        out.done.is_some(),
        "{name}: {mode:?}, seed {seed}: {} of {bytes} bytes after {limit:?}",
        out.received
    );
    assert_eq!(out.received, bytes, "{name}: {mode:?}, seed {seed}");
    out
}

#[test]
fn two_three_and_four_lossy_paths() {
    let all = [path(10, 20, 0.01), path(5, 60, 0.05), path(8, 100, 0.02), path(3, 40, 0.10)];
    for n in 2..=4 {
        for mode in MODES {
            let seed = 10 + n as u64;
            let out = complete(mode, &all[..n], seed, 600_000, Duration::from_secs(60), "lossy paths");
            // Every path carried data: the connection really is multipath.
            assert!(
                out.acked.iter().all(|&a| a > 0),
                "{mode:?}, {n} paths, seed {seed}: acked {:?}",
                out.acked
            );
        }
    }
}

/// Every mode the core has (the seed papers' single-path schemes run over the min-RTT choice of
/// path), so a mode added later is checked on multipath too.
#[test]
fn every_mode_on_two_lossy_paths() {
    let paths = [path(10, 20, 0.02), path(5, 80, 0.02)];
    for mode in Mode::ALL {
        complete(mode, &paths, 21, 400_000, Duration::from_secs(60), "every mode");
    }
}

#[test]
fn reordering_across_paths_of_very_different_delay() {
    // 10 ms beside 300 ms, each with 20 ms of reordering jitter, both lossy.
    let mut paths = [path(10, 10, 0.02), path(10, 300, 0.02)];
    for p in &mut paths {
        p.forward = p.forward.clone().with_jitter(ms(20), true);
        p.reverse = p.reverse.clone().with_jitter(ms(20), true);
    }
    for mode in MODES {
        for seed in 1..=2 {
            complete(mode, &paths, seed, 600_000, Duration::from_secs(60), "reordering");
        }
    }
}

#[test]
fn outage_of_one_path() {
    // The fast path is dark (both directions) from 0.3 s to 3.3 s; the slow one carries on.
    let mut paths = [path(10, 20, 0.01), path(5, 80, 0.01)];
    let outage = Outage { start: at(300), end: at(3_300) };
    paths[0].forward.outages.push(outage);
    paths[0].reverse.outages.push(outage);
    for mode in MODES {
        for seed in 1..=2 {
            let out = transfer(mode, &paths, seed, 3_000_000, Duration::from_secs(60));
            let done = out.done.unwrap_or_else(|| {
                panic!("outage: {mode:?}, seed {seed}: {} of 3000000 bytes after 60 s", out.received)
            });
            assert_eq!(out.received, 3_000_000, "outage: {mode:?}, seed {seed}");
            // 3 MB cannot all cross before the outage, and the slow path alone (5 Mbit/s) moves
            // it in under 5 s: the transfer went on during the outage rather than waiting.
            assert!(done > at(3_300) || out.acked[1] > 0, "outage: {mode:?}, seed {seed}");
            assert!(done < at(10_000), "outage: {mode:?}, seed {seed}: done at {done:?}");
        }
    }
}

#[test]
fn every_path_flapping() {
    // Three paths, each dark for 400 ms of every second at its own phase (both directions):
    // at times two are dark together, and every path dies more than once mid-transfer.
    let mut paths = [path(10, 20, 0.01), path(6, 60, 0.01), path(4, 120, 0.01)];
    for (i, p) in paths.iter_mut().enumerate() {
        for k in 0..20u64 {
            let start = 200 + 330 * i as u64 + 1000 * k;
            let outage = Outage { start: at(start), end: at(start + 400) };
            p.forward.outages.push(outage);
            p.reverse.outages.push(outage);
        }
    }
    for mode in MODES {
        complete(mode, &paths, 7, 1_500_000, Duration::from_secs(120), "flapping");
    }
}

/// A receiver that records the most it ever held (decoders + unread stream bytes) after each
/// datagram.
struct Watched {
    flow: BulkFlow,
    max_decoder: u64,
    max_total: u64,
    max_undelivered: u64,
}

impl Endpoint for Watched {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        self.flow.handle_datagram(now, path, datagram);
        let held = self.flow.connection().receive_buffered();
        self.max_decoder = self.max_decoder.max(held.decoder_bytes);
        self.max_total = self.max_total.max(held.decoder_bytes + held.stream_bytes);
        self.max_undelivered =
            self.max_undelivered.max(held.decoder_bytes - held.delivered_bytes + held.stream_bytes);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.flow.handle_timeout(now)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        self.flow.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.flow.poll_timeout()
    }
}

#[test]
fn receiver_memory_stays_within_the_advertised_window() {
    // A fast and a very slow path, jitter reordering both, loss on both: the worst case for a
    // reorder buffer. The window is smaller than what the paths could keep in flight.
    let mut paths = [path(20, 10, 0.02), path(10, 400, 0.05)];
    for p in &mut paths {
        p.forward = p.forward.clone().with_jitter(ms(30), true);
    }
    for window in [64u64 << 10, 256 << 10] {
        for mode in MODES {
            let seed = 3;
            let mut config = ConnectionConfig { mode, paths: 2, ..ConnectionConfig::default() };
            config.params = config.params.with_receive_window(window);
            let bytes = 1_000_000;
            let client = Watched {
                flow: BulkFlow::sender(config.clone(), seed, bytes, Instant::ZERO),
                max_decoder: 0,
                max_total: 0,
                max_undelivered: 0,
            };
            let server = Watched {
                flow: BulkFlow::receiver(config),
                max_decoder: 0,
                max_total: 0,
                max_undelivered: 0,
            };
            let (mut net, _, rx) = Network::pair(seed, client, server, &paths).expect("valid network");
            net.run_until_condition(at(120_000), |n| n.endpoint(rx).flow.done_at().is_some());
            let r = net.endpoint(rx);
            let what = format!("{mode:?}, window {window}, seed {seed}");
            assert_eq!(r.flow.corrupt_at(), None, "{what}");
            assert_eq!(r.flow.received(), bytes, "{what}: incomplete");
            eprintln!(
                "{what}: held at most {} B in decoders, {} B in all, {} B undelivered",
                r.max_decoder, r.max_total, r.max_undelivered
            );
            assert!(r.max_total > 0, "{what}: nothing was ever held");
            // Flow control bounds the stream bytes in flight by the window; as symbols they also
            // carry frame headers, and a symbol cut short by the window is padded: two symbols
            // of slack.
            let symbol = u64::from(config_symbol_size());
            assert!(
                r.max_undelivered <= window + 2 * symbol,
                "{what}: held {} B not yet delivered > window {window} B",
                r.max_undelivered
            );
            // A block's decoder keeps its delivered symbols until the whole block is delivered
            // (they reduce later repair symbols), so the decoders may hold up to one block
            // beyond that: memory is bounded by the window plus one block, not the window alone.
            let block = u64::from(braid_proto::wire::TransportParams::default().max_block_len) * symbol;
            assert!(
                r.max_total <= window + block + 2 * symbol,
                "{what}: held {} B > window {window} B + one block {block} B",
                r.max_total
            );
        }
    }
}

fn config_symbol_size() -> u16 {
    braid_proto::wire::TransportParams::default().symbol_size
}
