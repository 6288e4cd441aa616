//! The slow seeds of a seed scan (docs/DEVIATIONS.md, "Rare slow runs"): braid's default over
//! CTCP Table IV's path with a 1,500-byte MTU (20 Mbit/s, 100 ms, a 1-BDP queue) and an
//! 11,492,499-byte transfer, each at the seed that showed a defect.

use braid_proto::ConnectionConfig;
use braid_sim::{BulkFlow, Scenario};

/// Runs the scenario's first sweep point to its end: the completion time in seconds.
fn completion(text: &str) -> f64 {
    let scenario = Scenario::parse(text, "rare-slow-runs.toml").unwrap().remove(0);
    let bytes = scenario.transfer.unwrap();
    let built = scenario
        .build(|cx| {
            let config = ConnectionConfig {
                paths: cx.paths as u8,
                max_plpmtu: cx.scenario.max_mtu().unwrap_or(1280),
                ..ConnectionConfig::default()
            };
            (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
        })
        .unwrap();
    let (mut net, (_, rx), limit) = (built.network, built.flows[0], built.limit);
    net.run_until_condition(limit, |n| n.endpoint(rx).done_at().is_some());
    let r = net.endpoint(rx);
    assert_eq!(r.corrupt_at(), None);
    let done =
        r.done_at().unwrap_or_else(|| panic!("{}: {} of {bytes} bytes", scenario.title(), r.received()));
    done.as_micros() as f64 / 1e6
}

/// Gilbert–Elliott at 5 % mean (bursts of 4), seed 5. The last block lacked one symbol; its
/// repairs went out on probe timeouts and were lost (the chain steps per packet, so a bad state
/// outlasts a quiet sender) until a PMTU probe got through at 7.45 s. The path kept PMTU probes
/// out of its sent record and dropped their ACK unread, so the repair waited for the next,
/// backed-off probe timeout at 8.82 s: done at 8.87 s, 0.546 × the ideal (the seed scan's median
/// is 0.893). Read as RFC 9002 reads any ACK, the probe's ACK declares the repair lost by the
/// time threshold at 7.50 s and its replacement arrives at 7.55 s: 0.641 × the ideal. The bound
/// is 8.0 s.
#[test]
fn an_acknowledged_pmtu_probe_ends_a_tail_stall() {
    let text = r#"
        name = "gilbert-elliott-5"
        seed = 5
        transfer = 11492499
        duration = "120s"

        [[path]]
        name = "wan"
        rate = "20Mbit/s"
        rtt = "100ms"
        queue = "1bdp"
        mtu = 1500
        loss = { model = "gilbert-elliott", p_good_to_bad = 0.0131579, p_bad_to_good = 0.25 }

        [path.reverse]
        loss = 0
    "#;
    let done = completion(text);
    eprintln!("done at {done:.3} s");
    assert!(done <= 8.0, "the transfer took {done:.3} s (the tail stalled)");
}
