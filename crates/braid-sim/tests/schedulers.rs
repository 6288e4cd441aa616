//! Every multipath scheduler delivers every byte, in order, intact, over two and three
//! heterogeneous lossy paths, in the modes that pick blocks differently (braid's adaptive
//! repair, CTCP's, FMTCP's RaptorQ with δ̂-completeness, the retransmitting `tcp` model). The
//! seed is in every failure message.

use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::sched::SchedulerKind;
use braid_proto::{BlockRecord, ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

const BYTES: u64 = 300_000;

/// Fast and clean, slower and lossy, slow and very lossy.
fn paths(n: usize) -> Vec<PathConfig> {
    let spec = [(20_000_000, 10, 0.01), (10_000_000, 40, 0.05), (5_000_000, 100, 0.15)];
    spec[..n]
        .iter()
        .map(|&(rate, one_way_ms, loss)| {
            let link = LinkConfig::new(rate, Duration::from_millis(one_way_ms));
            PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link }
        })
        .collect()
}

struct Outcome {
    done: Option<Instant>,
    packets_per_path: Vec<u64>,
    copies: u64,
}

fn run(mode: Mode, scheduler: SchedulerKind, paths: &[PathConfig], seed: u64) -> Outcome {
    let what = format!("{mode:?}, {scheduler}, {} paths, seed {seed}", paths.len());
    let config = ConnectionConfig {
        mode,
        scheduler: Some(scheduler),
        paths: paths.len() as u8,
        ..ConnectionConfig::default()
    };
    let mut t = Transfer::new(what, config, paths, seed, BYTES);
    // Whole, intact, and every block the sender started delivered once, in order.
    let done = t.finish(Instant::ZERO + Duration::from_secs(120));
    let conn = t.sender().connection();
    Outcome {
        done: Some(done),
        packets_per_path: conn.path_stats().iter().map(|s| s.packets_sent).collect(),
        copies: conn.stats.copies_sent,
    }
}

#[test]
fn every_scheduler_delivers_over_two_and_three_lossy_paths() {
    for n in [2, 3] {
        for scheduler in SchedulerKind::ALL {
            for seed in 1..3 {
                let out = run(Mode::Braid, scheduler, &paths(n), seed);
                // Every path carried something (the handshake alone goes on path 0).
                assert!(
                    out.packets_per_path.iter().all(|&p| p > 0),
                    "{scheduler}, {n} paths, seed {seed}: {:?}",
                    out.packets_per_path
                );
            }
        }
    }
}

#[test]
fn every_scheduler_in_the_modes_that_choose_blocks_differently() {
    for mode in [Mode::Ctcp, Mode::Fmtcp, Mode::Tcp, Mode::Dfec] {
        for scheduler in SchedulerKind::ALL {
            run(mode, scheduler, &paths(2), 7);
        }
    }
}

#[test]
fn the_redundant_scheduler_really_sends_copies() {
    let clean: Vec<PathConfig> = (0..2)
        .map(|_| PathConfig::symmetric(LinkConfig::new(10_000_000, Duration::from_millis(20))))
        .collect();
    let out = run(Mode::Braid, SchedulerKind::Redundant, &clean, 3);
    let sent: u64 = out.packets_per_path.iter().sum();
    // At least one packet in five is a copy (braid's controller paces both paths at their
    // measured rates, so the copies are fewer than under CUBIC's bursts: 82 of 356 packets).
    assert!(out.copies * 5 > sent, "copies {} of {sent} packets", out.copies);
    let minrtt = run(Mode::Braid, SchedulerKind::MinRtt, &clean, 3);
    assert_eq!(minrtt.copies, 0);
}

/// The point of an arrival-time scheduler: a path 20 times slower than the other must not hold
/// the transfer back. Round robin gives it every other symbol, so most blocks wait for it;
/// braid's and FMTCP's allocations give it only what it delivers in time.
#[test]
fn arrival_time_schedulers_keep_a_very_slow_path_from_holding_blocks_back() {
    let fast = LinkConfig::new(20_000_000, Duration::from_millis(10));
    let slow = LinkConfig::new(20_000_000, Duration::from_millis(200));
    let pair = [PathConfig::symmetric(fast), PathConfig::symmetric(slow)];
    for seed in 1..3 {
        let secs = |k| run(Mode::Braid, k, &pair, seed).done.expect("checked").as_micros() as f64 / 1e6;
        let rr = secs(SchedulerKind::RoundRobin);
        for k in [SchedulerKind::Braid, SchedulerKind::Eat] {
            let t = secs(k);
            assert!(t < 0.8 * rr, "seed {seed}: {k} took {t:.3} s, round robin {rr:.3} s");
        }
    }
}

/// The head-of-line case: two 10 Mbit/s 20 ms paths, the second losing 20 % of
/// the data, a 64 KiB receive window. In seeds 1 and 4 braid's scheduler once put its first
/// symbol on the second path before that path had an RTT sample; the symbol was lost, only a
/// probe timeout from the 333 ms initial RTT (≈ 1 s) could declare it, the window filled behind
/// its block, and the path kept its guess and carried nothing more (100/0 %). Now the path is
/// measured by PINGs first and carries its share, and no block waits anywhere near a second.
#[test]
fn braid_scheduler_measures_a_lossy_second_path_before_trusting_it() {
    let [good, bad] = common::transfer::good_and_lossy_paths();
    let window = 64 * 1024;
    for seed in [1, 4] {
        let params = braid_proto::wire::TransportParams::default().with_receive_window(window);
        let config = ConnectionConfig {
            mode: Mode::Braid,
            scheduler: Some(SchedulerKind::Braid),
            params,
            paths: 2,
            ..ConnectionConfig::default()
        };
        let bytes = 3_000_000;
        let mut t = Transfer::new(format!("seed {seed}"), config, &[good.clone(), bad.clone()], seed, bytes);
        t.finish(Instant::ZERO + Duration::from_secs(60));
        let (net, tx, rx) = (&t.net, t.tx, t.rx);
        let r = net.endpoint(rx);
        let sent: Vec<u64> =
            net.endpoint(tx).connection().path_stats().iter().map(|s| s.packets_sent).collect();
        assert!(sent[1] * 5 >= sent[0] + sent[1], "seed {seed}: packets per path {sent:?}");
        let first_sent: std::collections::BTreeMap<u64, Instant> = net
            .endpoint(tx)
            .block_log()
            .iter()
            .filter_map(|b| match *b {
                BlockRecord::FirstSent { block, at } => Some((block, at)),
                _ => None,
            })
            .collect();
        let worst = r
            .block_log()
            .iter()
            .filter_map(|b| match *b {
                BlockRecord::Delivered { block, at } => Some(at - first_sent[&block]),
                _ => None,
            })
            .max()
            .expect("blocks delivered");
        assert!(worst < Duration::from_millis(400), "seed {seed}: a block took {worst:?}");
    }
}
