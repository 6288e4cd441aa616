//! How a second path with a long RTT starts (PROTOCOL.md §12.1): braid's scheduler keeps data
//! off a path until it has an RTT sample, and while data waits the path fills its initial
//! window with full-size PINGs, so its first round trip grows its window as a round of data
//! would. FMTCP Table II's setting: 10 Mbit/s paths of 100 ms and 300 ms RTT.

use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

fn paths() -> [PathConfig; 2] {
    let link = |one_way_ms| LinkConfig::new(10_000_000, Duration::from_millis(one_way_ms));
    [PathConfig::symmetric(link(50)), PathConfig::symmetric(link(150))]
}

#[test]
fn a_long_second_path_fills_its_first_window_before_its_rtt_is_known() {
    let config = ConnectionConfig { mode: Mode::Braid, paths: 2, ..ConnectionConfig::default() };
    let mut t = Transfer::new("braid, 100 + 300 ms".into(), config, &paths(), 1, 3_000_000);
    // The handshake's answer comes at 100 ms; the second path's first ACK cannot come before
    // 100 + 300 ms. By 390 ms it has had 290 ms to pace out its initial window.
    t.run_until(Instant::ZERO + Duration::from_millis(390));
    // At least RFC 9002's initial window of 10 datagrams, full size (a PING alone, with its
    // re-sends after the first path's SRTT doubling, would be 3 small packets by then).
    let stats = t.sender().connection().path_stats();
    let mss = ConnectionConfig::default().max_datagram as u64;
    assert!(
        stats[1].packets_sent >= 10 && stats[1].bytes_sent >= 10 * mss,
        "path 2 sent {} packets, {} bytes before its first ACK",
        stats[1].packets_sent,
        stats[1].bytes_sent
    );
    let done = t.finish(Instant::ZERO + Duration::from_secs(20));
    let stats = t.sender().connection().path_stats();
    assert!(stats[1].packets_acked * 4 >= stats[0].packets_acked, "{:?}, done at {done:?}", stats);
}
