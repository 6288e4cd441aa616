//! Every mode delivers every byte, in order, intact, through the simulator's impairments: loss
//! from 0 to 30 %, Gilbert–Elliott bursts, reordering, duplication and a 2-second outage. The
//! seed is in every failure message.

use std::time::Duration;

use braid_fec::CodeFamily;
use braid_proto::conn::Mode;
use braid_proto::wire::TransportParams;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, PathConfig};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

const BYTES: u64 = 400_000;

fn run(
    config: ConnectionConfig,
    forward: LinkConfig,
    reverse: LinkConfig,
    seed: u64,
    limit_s: u64,
) -> (Option<Instant>, u64) {
    let what = format!("{:?} seed {seed}", config.mode);
    Transfer::new(what, config, &[PathConfig { forward, reverse }], seed, BYTES)
        .run(Instant::ZERO + Duration::from_secs(limit_s))
}

fn link() -> LinkConfig {
    LinkConfig::new(20_000_000, Duration::from_millis(25))
}

fn check(name: &str, forward: LinkConfig, reverse: LinkConfig, seeds: std::ops::Range<u64>) {
    for mode in Mode::ALL {
        for seed in seeds.clone() {
            let config = ConnectionConfig { mode, ..ConnectionConfig::default() };
            let (done, received) = run(config, forward.clone(), reverse.clone(), seed, 300);
            assert!(done.is_some(), "{name}, {mode:?}, seed {seed}: {received} of {BYTES} bytes after 300 s");
            assert_eq!(received, BYTES, "{name}, {mode:?}, seed {seed}");
        }
    }
}

#[test]
fn random_loss_up_to_30_percent() {
    for p in [0.0, 0.01, 0.05, 0.1, 0.3] {
        let lossy = link().with_loss(LossModel::bernoulli(p));
        check(&format!("loss {p}"), lossy.clone(), lossy, 1..3);
    }
}

#[test]
fn gilbert_elliott_bursts() {
    // Mean loss ≈ 5 %, mean burst 4 packets.
    let bursty = link().with_loss(LossModel::GilbertElliott {
        p_good_to_bad: 0.0132,
        p_bad_to_good: 0.25,
        loss_good: 0.0,
        loss_bad: 1.0,
    });
    check("gilbert-elliott", bursty.clone(), bursty, 1..4);
}

#[test]
fn reordering_and_duplication() {
    let messy = link().with_jitter(Duration::from_millis(10), true).with_duplication(0.05);
    check("reorder+duplicate", messy.clone(), messy, 1..4);
}

#[test]
fn two_second_outage() {
    let down = link().with_outage(Instant::from_micros(200_000), Instant::from_micros(2_200_000));
    check("outage", down.clone(), down, 1..3);
}

/// The code family is the client's choice (PROTOCOL.md §9.2): every family must work in every
/// mode — RaptorQ (a block is sealed by its first repair) and XOR (a loss cannot be answered
/// with a new symbol, so it is retransmitted) included. Modes that imply a family (`tcp-ir`,
/// `dfec`, `sato`: XOR, `Mode::code_family`) use it whatever the configuration says.
#[test]
/// (The XOR papers' modes always run over XOR, whatever the configuration proposes.)
fn every_code_family_in_every_mode() {
    let lossy = link().with_loss(LossModel::bernoulli(0.05));
    for code in CodeFamily::ALL {
        for mode in Mode::ALL {
            let config = ConnectionConfig {
                mode,
                params: TransportParams { code, ..TransportParams::default() },
                ..ConnectionConfig::default()
            };
            let (done, received) = run(config, lossy.clone(), lossy.clone(), 11, 300);
            assert!(done.is_some(), "{code}, {mode:?}: {received} of {BYTES} bytes after 300 s");
        }
    }
}
