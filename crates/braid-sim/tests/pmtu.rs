//! Path MTU discovery (RFC 8899; PROTOCOL.md §14) over links that drop
//! datagrams larger than their `mtu`: discovery finds 1500, a black hole (the MTU shrinks
//! mid-transfer) is detected and survived, two paths with different MTUs each find theirs, and
//! a link without an MTU is never probed. Every run checks every byte; the seed is in every
//! failure message.

use std::time::Duration;

use braid_proto::conn::{Mode, PmtuPhase};
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::link::LinkChange;
use braid_sim::{LinkConfig, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

fn at(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

fn link(mbit: u64, rtt_ms: u64, mtu: Option<usize>) -> LinkConfig {
    LinkConfig { mtu, ..LinkConfig::new(mbit * 1_000_000, Duration::from_millis(rtt_ms / 2)) }
}

/// A braid transfer of `bytes` over `paths`, both ends allowed to probe up to `max_plpmtu`, run
/// to completion (checked whole and intact).
fn run(what: &str, paths: &[PathConfig], max_plpmtu: usize, seed: u64, bytes: u64) -> Transfer {
    let config = ConnectionConfig {
        mode: Mode::Braid,
        paths: paths.len() as u8,
        max_plpmtu,
        ..ConnectionConfig::default()
    };
    let mut r = Transfer::new(format!("{what} seed {seed}"), config, paths, seed, bytes);
    r.finish(at(60_000));
    r
}

/// What the PMTU tests read off a finished run.
trait PmtuView {
    fn mtus(&self) -> Vec<(PmtuPhase, usize)>;
    fn mean_datagram(&self, path: usize) -> f64;
    fn too_big(&self, path: usize) -> u64;
}

impl PmtuView for Transfer {
    fn mtus(&self) -> Vec<(PmtuPhase, usize)> {
        self.net.endpoint(self.tx).connection().path_mtus()
    }

    /// Mean size of the datagrams the client sent on `path`.
    fn mean_datagram(&self, path: usize) -> f64 {
        let s = self.net.endpoint(self.tx).connection().path_stats()[path];
        s.bytes_sent as f64 / s.packets_sent as f64
    }

    /// Datagrams the forward link of `path` dropped for their size.
    fn too_big(&self, path: usize) -> u64 {
        self.net.link(self.links[path].0).stats().dropped_mtu
    }
}

#[test]
fn discovery_finds_1500_and_data_uses_it() {
    for seed in [1, 2] {
        let path = PathConfig { forward: link(20, 40, Some(1500)), reverse: link(20, 40, Some(1500)) };
        let r = run("1500", &[path], 9000, seed, 4_000_000);
        assert_eq!(r.mtus(), [(PmtuPhase::SearchComplete, 1500)], "{}", r.what);
        // Data packets grew from 1280 to 1500 (the few ACK-only packets pull the mean down).
        assert_eq!(r.net.endpoint(r.tx).connection().stats.symbol_parts_sent, 0, "{}", r.what);
        let mean = r.mean_datagram(0);
        assert!(mean > 1450.0, "{}: mean datagram {mean:.0} bytes", r.what);
        // Only probes were too big: MAX_PROBES of 2048 (a probe forgotten while a suspected
        // black hole is confirmed is tried again), none of the data.
        let dropped = r.too_big(0);
        assert!((3..=6).contains(&dropped), "{}: {dropped} datagrams dropped for size", r.what);
    }
}

#[test]
fn without_an_mtu_nothing_is_probed() {
    let path = PathConfig::symmetric(link(20, 40, None));
    let r = run("no mtu", &[path], 1280, 3, 1_000_000);
    assert_eq!(r.mtus(), [(PmtuPhase::Disabled, 1280)], "{}", r.what);
    assert!(r.mean_datagram(0) <= 1280.0);
}

/// The MTU drops from 1500 to 1280 at 1.5 s in both directions (a route change into a tunnel):
/// the large packets in flight vanish, the sender detects the black hole (RFC 8899 §4.3),
/// falls back to 1280, sends the blocks already cut with 1452-byte symbols in SYMBOL_PART
/// pieces, and the transfer completes intact.
#[test]
fn a_black_hole_is_detected_and_survived() {
    for seed in [4, 5] {
        let shrink = LinkChange { at: at(1500), mtu: Some(1280), ..LinkChange::default() };
        let mut l = link(20, 40, Some(1500));
        l.changes.push(shrink);
        let path = PathConfig { forward: l.clone(), reverse: l };
        let r = run("black hole", &[path], 9000, seed, 8_000_000);
        let conn = r.net.endpoint(r.tx).connection();
        assert!(conn.black_holes()[0] >= 1, "{}: no black hole detected", r.what);
        assert_eq!(r.mtus(), [(PmtuPhase::SearchComplete, 1280)], "{}", r.what);
        assert!(r.too_big(0) > 3, "{}: the shrink dropped nothing?", r.what);
        // Blocks cut at 1452-byte symbols before the shrink went out in pieces.
        assert!(conn.stats.symbol_parts_sent > 0, "{}: no SYMBOL_PART sent", r.what);
    }
}

/// WiFi at 1500 and LTE at 1400: each path finds its own, and blocks use the smaller (a
/// block's symbols may go on either path), so no data packet is dropped for its size.
#[test]
fn two_paths_with_different_mtus() {
    let seed = 6;
    let wifi = PathConfig::symmetric(link(20, 30, Some(1500)));
    let lte = PathConfig::symmetric(link(10, 80, Some(1400)));
    let r = run("two mtus", &[wifi, lte], 9000, seed, 6_000_000);
    assert_eq!(
        r.mtus(),
        [(PmtuPhase::SearchComplete, 1500), (PmtuPhase::SearchComplete, 1400)],
        "{}",
        r.what
    );
    // The mean counts the sender's ACK-only packets too, which go back on the path they
    // acknowledge (PROTOCOL.md §12.4); above 1300 only if data packets outgrew 1280.
    assert!(r.mean_datagram(1) > 1300.0, "{}: LTE mean {:.0}", r.what, r.mean_datagram(1));
    // Probes only: 2048 ×3 on WiFi, 1452 ×3 on LTE.
    assert!(
        r.too_big(0) <= 3 && r.too_big(1) <= 3,
        "{}: {} / {} dropped",
        r.what,
        r.too_big(0),
        r.too_big(1)
    );
}
