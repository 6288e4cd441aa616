//! Path lifecycle: a path that dies mid-transfer, one that comes back,
//! all paths flapping, a path opened and one removed during a transfer, and a server that
//! only sends on paths it has heard on. Every run checks every byte (the receiver compares
//! the stream with the pattern as it reads). The seed is in every failure message.

use std::time::Duration;

use braid_proto::conn::{Mode, PathState};
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

fn at(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

/// WiFi-like: 20 Mbit/s, 30 ms RTT.
fn wifi() -> LinkConfig {
    LinkConfig::new(20_000_000, Duration::from_millis(15))
}

/// LTE-like: 10 Mbit/s, 80 ms RTT.
fn lte() -> LinkConfig {
    LinkConfig::new(10_000_000, Duration::from_millis(40))
}

/// A transfer of `bytes` labelled `what`, the client opening `client_paths` of `paths`.
fn setup(what: &str, mode: Mode, client_paths: u8, paths: &[PathConfig], seed: u64, bytes: u64) -> Transfer {
    let config = ConnectionConfig { mode, paths: client_paths, ..ConnectionConfig::default() };
    Transfer::new(what.to_string(), config, paths, seed, bytes)
}

fn client_path(run: &Transfer, path: usize) -> braid_proto::conn::PathStats {
    run.sender().connection().path_stats()[path]
}

/// WiFi goes dark for good at 1 s; LTE carries on. In every mode the transfer completes
/// intact, WiFi is declared failed, and in the `braid` mode the survivor is back above
/// 0.8 × its capacity within 1 s of the outage (the path-failure target): the bytes delivered in the
/// second after that are at least 0.8 × 10 Mbit/s × 1 s.
#[test]
fn a_path_dies_mid_transfer() {
    const BYTES: u64 = 7_000_000;
    for mode in Mode::ALL {
        let seed = 7;
        let what = format!("{mode:?} seed {seed}");
        let dead = wifi().with_outage(at(1000), at(3_600_000));
        let paths = [PathConfig::symmetric(dead), PathConfig::symmetric(lte())];
        let mut run = setup(&what, mode, 2, &paths, seed, BYTES);
        run.run_until(at(2000));
        let before = run.receiver().received();
        run.run_until(at(3000));
        let second = run.receiver().received() - before;
        let done = run.finish(at(60_000));
        assert!(done > at(3000), "{what}: finished at {done:?}, before the measured second ended");
        let wifi = client_path(&run, 0);
        assert_eq!(wifi.state, PathState::Failed, "{what}");
        assert_eq!(wifi.failures, 1, "{what}");
        if mode == Mode::Braid {
            let bound = 8_000_000 / 8;
            assert!(second >= bound, "{what}: {second} bytes in [2 s, 3 s), want ≥ {bound}");
        }
    }
}

/// WiFi is down from 1 s to 3 s: it is declared failed, answers a probe once it is back, and
/// carries data again (far more than probes) before the transfer ends.
#[test]
fn a_path_that_comes_back_is_used_again() {
    const BYTES: u64 = 14_000_000;
    for mode in [Mode::Braid, Mode::Tcp, Mode::Fmtcp, Mode::Ctcp] {
        let seed = 3;
        let what = format!("{mode:?} seed {seed}");
        let flaky = wifi().with_outage(at(1000), at(3000));
        let paths = [PathConfig::symmetric(flaky), PathConfig::symmetric(lte())];
        let mut run = setup(&what, mode, 2, &paths, seed, BYTES);
        run.run_until(at(3000));
        let down = client_path(&run, 0);
        assert_eq!(down.state, PathState::Failed, "{what}: not failed during the outage");
        let done = run.finish(at(60_000));
        let wifi = client_path(&run, 0);
        assert_eq!((wifi.state, wifi.recoveries), (PathState::Active, 1), "{what}");
        let after = wifi.bytes_sent - down.bytes_sent;
        assert!(after > 1_000_000, "{what}: {after} bytes on WiFi after it returned (done at {done:?})");
    }
}

/// Both paths go down again and again, sometimes together (then nothing gets through at all).
#[test]
fn all_paths_flapping() {
    const BYTES: u64 = 2_000_000;
    for mode in Mode::ALL {
        for seed in 1..3 {
            let what = format!("{mode:?} seed {seed}");
            let mut a = wifi();
            let mut b = lte();
            for k in 0..20u64 {
                // A: down 400 ms of every second; B: down 300 ms of every 700 ms, shifted.
                a = a.with_outage(at(300 + k * 1000), at(700 + k * 1000));
                b = b.with_outage(at(500 + k * 700), at(800 + k * 700));
            }
            let mut run =
                setup(&what, mode, 2, &[PathConfig::symmetric(a), PathConfig::symmetric(b)], seed, BYTES);
            run.finish(at(120_000));
        }
    }
}

/// The client starts on LTE alone and opens WiFi at 1 s: the server accepts the new path id
/// with its first packet, and WiFi carries most of the rest.
#[test]
fn a_path_added_mid_transfer_is_used() {
    const BYTES: u64 = 8_000_000;
    for mode in [Mode::Braid, Mode::Tcp, Mode::Fmtcp] {
        let seed = 5;
        let what = format!("{mode:?} seed {seed}");
        let paths = [PathConfig::symmetric(lte()), PathConfig::symmetric(wifi())];
        let mut run = setup(&what, mode, 1, &paths, seed, BYTES);
        run.run_until(at(1000));
        assert_eq!(run.net.endpoint(run.rx).connection().path_stats().len(), 1, "{what}");
        let now = run.net.now();
        let id = run.net.endpoint_mut(run.tx).connection_mut().add_path(now).expect("room for a path");
        assert_eq!(id, 1, "{what}");
        run.finish(at(60_000));
        let added = client_path(&run, 1);
        assert!(added.bytes_sent > BYTES / 4, "{what}: {} bytes on the new path", added.bytes_sent);
        let server = run.net.endpoint(run.rx).connection().path_stats();
        assert_eq!(server.len(), 2, "{what}");
        assert!(server[1].packets_sent > 0, "{what}: the server never answered on the new path");
    }
}

/// The client removes WiFi at 1 s: from then on the client sends nothing on it, and the server
/// nothing once the PATH_ABANDON has reached it; the transfer completes on LTE.
#[test]
fn a_removed_path_gets_nothing_after_removal() {
    const BYTES: u64 = 6_000_000;
    for mode in [Mode::Braid, Mode::Tcp, Mode::Dfec] {
        let seed = 9;
        let what = format!("{mode:?} seed {seed}");
        let paths = [PathConfig::symmetric(wifi()), PathConfig::symmetric(lte())];
        let mut run = setup(&what, mode, 2, &paths, seed, BYTES);
        run.run_until(at(1000));
        let now = run.net.now();
        let conn = run.net.endpoint_mut(run.tx).connection_mut();
        conn.remove_path(now, 0).expect("LTE remains");
        assert!(conn.remove_path(now, 1).is_err(), "{what}: the last path must not be removable");
        let sent_at_removal = client_path(&run, 0).packets_sent;
        // The PATH_ABANDON travels over LTE (40 ms one way).
        run.run_until(at(1200));
        let server = run.net.endpoint(run.rx).connection().path_stats()[0];
        assert_eq!(server.state, PathState::Removed, "{what}: the server did not learn of the removal");
        let reverse_at = run.net.link(run.links[0].1).stats().sent;
        run.finish(at(60_000));
        assert_eq!(
            client_path(&run, 0).packets_sent,
            sent_at_removal,
            "{what}: client sent on a removed path"
        );
        assert_eq!(client_path(&run, 0).state, PathState::Removed, "{what}");
        assert_eq!(
            run.net.link(run.links[0].1).stats().sent,
            reverse_at,
            "{what}: server sent on a removed path"
        );
        assert_eq!(
            run.net.endpoint(run.rx).connection().path_stats()[0].packets_sent,
            server.packets_sent,
            "{what}"
        );
    }
}

/// The server sends only on paths it has heard on: the client starts with one of three paths
/// (the server never learns of the others), then opens paths 1 and 2 while path 1 is dark, so
/// the server hears path 2 first and must still never send on path 1 until it hears on it.
#[test]
fn the_server_never_sends_on_an_unheard_path() {
    const BYTES: u64 = 3_000_000;
    let seed = 11;
    let dark = lte().with_outage(at(0), at(3_600_000));
    let paths = [PathConfig::symmetric(wifi()), PathConfig::symmetric(dark), PathConfig::symmetric(lte())];
    let mut run = setup(&format!("seed {seed}"), Mode::Braid, 1, &paths, seed, BYTES);
    run.run_until(at(500));
    assert_eq!(run.net.endpoint(run.rx).connection().path_stats().len(), 1);
    for (_, reverse) in &run.links[1..] {
        assert_eq!(run.net.link(*reverse).stats().sent, 0, "seed {seed}: sent on a path never opened");
    }
    let now = run.net.now();
    let conn = run.net.endpoint_mut(run.tx).connection_mut();
    assert_eq!(conn.add_path(now), Ok(1));
    assert_eq!(conn.add_path(now), Ok(2));
    run.finish(at(60_000));
    let server = run.net.endpoint(run.rx).connection().path_stats();
    assert_eq!(server.len(), 3, "seed {seed}: path 2 was heard, path 1 gets a placeholder");
    assert_eq!(server[1].packets_sent, 0, "seed {seed}: the server sent on path 1, never heard on");
    assert_eq!(run.net.link(run.links[1].1).stats().sent, 0, "seed {seed}");
    assert!(server[2].packets_sent > 0, "seed {seed}: path 2 was heard and should carry ACKs");
}
