//! Transfers that once failed, each with the seed and configuration that showed it.

use std::time::Duration;

use braid_fec::CodeFamily;
use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::redundancy::Redundancy;
use braid_proto::wire::TransportParams;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, LinkConfig, LossModel, Network, PathConfig, QueueLimit};

/// RaptorQ blocks, FMTCP's δ̂ = 5 % and CUBIC (an earlier FMTCP attempt) over CTCP Table IV's
/// path at 5 % loss. A RaptorQ solve failed with k distinct symbols; the receiver reported k
/// dofs for the block, the sender stopped sending it, and the transfer stalled at block 0 (and
/// the simulator spun in wall time: the full block window left data `poll_transmit` could not
/// send while `poll_timeout` kept asking for it now).
#[test]
fn a_failed_raptorq_solve_does_not_stall_the_block() {
    let config = ConnectionConfig {
        mode: Mode::Braid,
        cc: Some(CcAlgorithm::Cubic),
        redundancy: Redundancy { target_failure: 0.05, ..Redundancy::default() },
        params: TransportParams { code: CodeFamily::RaptorQ, ..TransportParams::default() },
        ..ConnectionConfig::default()
    };
    let forward = LinkConfig::new(20_000_000, Duration::from_millis(50))
        .with_queue(QueueLimit::Bdp(1.0))
        .with_loss(LossModel::bernoulli(0.05));
    let reverse = LinkConfig::new(20_000_000, Duration::from_millis(50)).with_queue(QueueLimit::Bdp(1.0));
    let bytes = 400_000;
    let client = BulkFlow::sender(config.clone(), 1, bytes, Instant::ZERO);
    let server = BulkFlow::receiver(config);
    let (mut net, _, rx) = Network::pair(1, client, server, &[PathConfig { forward, reverse }]).unwrap();
    net.run_until_condition(Instant::ZERO + Duration::from_secs(30), |n| n.endpoint(rx).done_at().is_some());
    let r = net.endpoint(rx);
    assert_eq!(r.corrupt_at(), None);
    assert!(r.done_at().is_some(), "seed 1: {} of {bytes} bytes after 30 s", r.received());
}
