//! Transfers that once failed, each with the seed and configuration that showed it.

use std::time::Duration;

use braid_fec::CodeFamily;
use braid_proto::cc::CcAlgorithm;
use braid_proto::conn::Mode;
use braid_proto::redundancy::Redundancy;
use braid_proto::wire::TransportParams;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, LinkConfig, LossModel, PathConfig, QueueLimit};

mod common {
    pub mod transfer;
}
use common::transfer::Transfer;

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
    let mut t = Transfer::new("seed 1".to_string(), config, &[PathConfig { forward, reverse }], 1, bytes);
    t.finish(Instant::ZERO + Duration::from_secs(30));
}

/// Two paths, 100 ms and 300 ms, a 256 KiB receive window (the `fmtcp-receive-buffer` sweep's
/// corner, here at 2 MB and seed 3). The receiver's ACK of symbols that came over the 300 ms
/// path went back over it (150 ms) while its next BLOCK_ACK, naming the block they belong to
/// as its lowest and counting them, went back over the 100 ms path and arrived first; the
/// sender then counted those symbols again on top of the report: 16 for a 13-symbol block of
/// which the receiver held 12. It sent no repair, the receiver (which reports only when a
/// symbol arrives) never reported again, and both ends went idle with the block undelivered.
#[test]
fn a_block_ack_overtaking_an_ack_does_not_stall_the_last_block() {
    let text = r#"
        name = "overtaken-ack"
        mode = "braid"
        seed = 3
        transfer = "2MB"
        duration = "120s"
        receive_window = "256KiB"

        [[path]]
        name = "subflow1"
        rate = "10Mbit/s"
        rtt = "100ms"
        loss = 0.001
        [path.reverse]
        loss = 0

        [[path]]
        name = "subflow2"
        rate = "10Mbit/s"
        rtt = "300ms"
        loss = [0.01, 0.05]
        [path.reverse]
        loss = 0
    "#;
    for scenario in braid_sim::Scenario::parse(text, "overtaken-ack.toml").unwrap() {
        let bytes = scenario.transfer.unwrap();
        let built = scenario
            .build(|cx| {
                let mut config = ConnectionConfig { paths: cx.paths as u8, ..ConnectionConfig::default() };
                let window = scenario.receive_window.unwrap();
                config.params = config.params.with_receive_window(window);
                (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
            })
            .unwrap();
        let (mut net, (_, rx), limit) = (built.network, built.flows[0], built.limit);
        let report = net.run_until_condition(limit, |n| n.endpoint(rx).done_at().is_some());
        let r = net.endpoint(rx);
        let what = format!("seed {}, {}", scenario.seed, scenario.title());
        assert_eq!(r.corrupt_at(), None, "{what}");
        assert!(
            r.done_at().is_some(),
            "{what}: {} of {bytes} bytes, run stopped {:?} at {:?}",
            r.received(),
            report.stop,
            report.now
        );
    }
}
