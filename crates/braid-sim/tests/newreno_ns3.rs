//! The ns-3-style NewReno (`--cc newreno-ns3`, Sato et al.'s baseline) end to end: the `tcp`
//! model and the `sato` mode on it deliver every byte, in order, over a lossy path. The seed is
//! in every failure message.

mod common {
    pub mod transfer;
}

use std::time::Duration;

use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, PathConfig};
use common::transfer::Transfer;

#[test]
fn tcp_and_sato_on_ns3_newreno_deliver_over_a_lossy_path() {
    let bytes = 2_000_000u64;
    for (seed, mode) in [(1, Mode::Tcp), (2, Mode::Sato)] {
        let link = || LinkConfig::new(20_000_000, Duration::from_millis(25));
        let path = PathConfig { forward: link().with_loss(LossModel::bernoulli(0.02)), reverse: link() };
        let config =
            ConnectionConfig { mode, cc: Some(CcAlgorithm::NewRenoNs3), ..ConnectionConfig::default() };
        let what = format!("{mode:?} on newreno-ns3, 2 % loss, seed {seed}");
        let mut t = Transfer::new(what.clone(), config, &[path], seed, bytes);
        t.finish(Instant::ZERO + Duration::from_secs(120));
        let stats = t.sender().connection().path_stats();
        let losses: u64 = stats.iter().map(|s| s.fast_losses).sum();
        assert!(losses > 0, "{what}: no loss detected at 2 %");
    }
}

/// Sato et al. §5.1, Fig. 7(a): the scheme "significantly reduces the number of TCP fast
/// recoveries" — a loss its parity repairs costs cwnd × r and no recovery. Same path, same seed
/// (so the same loss draws for the first packets), both on the ns-3-style NewReno.
#[test]
fn sato_needs_far_fewer_fast_recoveries_than_its_newreno_baseline() {
    let bytes = 2_000_000u64;
    let seed = 3;
    let recoveries = |mode: Mode| {
        let link = || LinkConfig::new(20_000_000, Duration::from_millis(25));
        let path = PathConfig { forward: link().with_loss(LossModel::bernoulli(0.01)), reverse: link() };
        let config =
            ConnectionConfig { mode, cc: Some(CcAlgorithm::NewRenoNs3), ..ConnectionConfig::default() };
        let what = format!("{mode:?} on newreno-ns3, 1 % loss, seed {seed}");
        let mut t = Transfer::new(what.clone(), config, &[path], seed, bytes);
        t.finish(Instant::ZERO + Duration::from_secs(120));
        let n: u64 = t.sender().connection().path_stats().iter().filter_map(|s| s.fast_recoveries).sum();
        (n, what)
    };
    let (tcp, _) = recoveries(Mode::Tcp);
    let (sato, what) = recoveries(Mode::Sato);
    assert!(tcp >= 5, "the baseline recovered only {tcp} times at 1 % loss");
    assert!(2 * sato <= tcp, "{what}: {sato} fast recoveries against the baseline's {tcp}");
}

/// TCP's recovery without SACK (`LossRecovery::Cumulative`) end to end: the `tcp` model and the
/// `sato` mode deliver every byte over a lossy path, every segment the sender gave up is sent
/// again, and sato's parities spare it most fast recoveries (Fig. 7(a)) on this recovery too.
#[test]
fn cumulative_recovery_delivers_and_sato_spares_its_fast_recoveries() {
    use braid_proto::conn::LossRecovery;
    let bytes = 2_000_000u64;
    let run = |mode: Mode, seed: u64| {
        let link = || LinkConfig::new(20_000_000, Duration::from_millis(25));
        let path = PathConfig { forward: link().with_loss(LossModel::bernoulli(0.01)), reverse: link() };
        let config = ConnectionConfig {
            mode,
            cc: Some(CcAlgorithm::NewRenoNs3),
            recovery: LossRecovery::Cumulative,
            ..ConnectionConfig::default()
        };
        let what = format!("{mode:?} on newreno-ns3, cumulative recovery, 1 % loss, seed {seed}");
        let mut t = Transfer::new(what.clone(), config, &[path], seed, bytes);
        t.finish(Instant::ZERO + Duration::from_secs(300));
        (t.sender().connection().path_stats()[0], what)
    };
    let (tcp, what) = run(Mode::Tcp, 3);
    let recoveries = tcp.fast_recoveries.unwrap_or(0);
    assert!(recoveries >= 5, "{what}: only {recoveries} fast recoveries");
    assert!(tcp.retransmissions >= tcp.packets_lost, "{what}: {tcp:?}");
    let (sato, what) = run(Mode::Sato, 3);
    let spared = sato.fast_recoveries.unwrap_or(u64::MAX);
    assert!(2 * spared <= recoveries, "{what}: {spared} fast recoveries against the baseline's {recoveries}");
}
