//! Transfers through the security layer (PROTOCOL.md §13) in the simulator: the sans-IO
//! `Session` around each end's connection, with braid-proto's insecure crypto double, over
//! lossy links. The handshake (its messages lost like any other), sealing, replay windows and
//! path announcements run on the simulator's clock; every byte must arrive intact.

use std::time::Duration;

use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, LinkConfig, LossModel, Network, PathConfig, SecureFlow};

const BYTES: u64 = 1_000_000;

fn lossy(rate_bps: u64, delay_ms: u64, loss: f64) -> PathConfig {
    PathConfig::symmetric(
        LinkConfig::new(rate_bps, Duration::from_millis(delay_ms)).with_loss(LossModel::bernoulli(loss)),
    )
}

fn paths() -> [PathConfig; 2] {
    [lossy(10_000_000, 20, 0.05), lossy(5_000_000, 40, 0.05)]
}

/// The same transfer without the security layer: when it completes.
fn plain(config: &ConnectionConfig, seed: u64) -> Instant {
    let mut net = Network::new(seed);
    let tx = net.add_endpoint(BulkFlow::sender(config.clone(), seed, BYTES, Instant::ZERO));
    let rx = net.add_endpoint(BulkFlow::receiver(config.clone()));
    net.connect(tx, rx, &paths()).expect("valid network");
    net.run_until_condition(Instant::ZERO + Duration::from_secs(60), |n| n.endpoint(rx).done_at().is_some());
    net.endpoint(rx).done_at().expect("the plain transfer completes")
}

/// A two-path transfer with 5 % loss each way (handshake messages included): it completes,
/// intact, the server's layer knows both paths, and it takes little longer than without the
/// layer (a round trip for the handshake, 16 bytes a packet, the announcements).
#[test]
fn a_transfer_through_the_security_layer_completes_on_lossy_paths() {
    for seed in 1..=4 {
        let config = ConnectionConfig { paths: 2, ..ConnectionConfig::default() };
        let mut net = Network::new(seed);
        let tx = net.add_endpoint(SecureFlow::sender(config.clone(), 42, seed, BYTES, Instant::ZERO));
        let rx = net.add_endpoint(SecureFlow::receiver(config.clone(), 42, seed));
        net.connect(tx, rx, &paths()).expect("valid network");
        let limit = Instant::ZERO + Duration::from_secs(60);
        net.run_until_condition(limit, |n| n.endpoint(rx).flow().done_at().is_some());
        let without = plain(&config, seed);
        let done = net.endpoint(rx).flow().done_at();
        // Seeds 1-4 take 58-84 ms longer: the handshake's round trip on the 40 ms path, and the
        // tags.
        assert!(
            done.is_some_and(|d| d <= without + Duration::from_millis(150)),
            "seed {seed}: {done:?} with the layer, {without:?} without"
        );
        let r = net.endpoint(rx);
        assert_eq!(r.flow().corrupt_at(), None, "seed {seed}: corrupted");
        assert_eq!(r.flow().received(), BYTES, "seed {seed}: incomplete by {limit:?}");
        let s = r.session().expect("the handshake completed");
        assert!(s.remote(0).is_some() && s.remote(1).is_some(), "seed {seed}: both paths announced");
        assert_eq!(s.stats.unauthenticated, 0, "seed {seed}");
    }
}

/// A client with another secret: the server keeps no session and nothing arrives; the
/// client's handshake fails at its deadline.
#[test]
fn a_wrong_secret_moves_nothing() {
    let config = ConnectionConfig::default();
    let mut net = Network::new(1);
    let tx = net.add_endpoint(SecureFlow::sender(config.clone(), 42, 1, BYTES, Instant::ZERO));
    let rx = net.add_endpoint(SecureFlow::receiver(config, 43, 1));
    net.connect(tx, rx, &[lossy(10_000_000, 20, 0.0)]).expect("valid network");
    net.run_until_condition(Instant::ZERO + Duration::from_secs(30), |_| false);
    assert!(net.endpoint(rx).session().is_none());
    assert_eq!(net.endpoint(rx).flow().received(), 0);
    assert!(net.endpoint(tx).session().is_some_and(|s| s.has_failed()));
}
