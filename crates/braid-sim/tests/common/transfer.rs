//! The transfer harness the simulator's tests share: a bulk transfer from a client to a server
//! over given paths, run until the receiver has everything (or a limit), then checked: no byte
//! corrupted and, once complete, every block the sender started delivered once, in order.
//! Every failure message starts with the run's label (which names its seed). Each test file
//! uses a part of it.

#![allow(dead_code)]

use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{BulkFlow, EndpointId, LinkId, Network, PathConfig};

pub struct Transfer {
    pub net: Network<BulkFlow>,
    pub tx: EndpointId,
    pub rx: EndpointId,
    /// (forward, reverse) links of each path.
    pub links: Vec<(LinkId, LinkId)>,
    pub bytes: u64,
    /// The label of every failure message (mode, paths, seed, ...).
    pub what: String,
}

impl Transfer {
    /// A transfer of `bytes` over `paths`, both ends with `config` (its `paths` is what the
    /// client opens), not yet run.
    pub fn new(
        what: String,
        config: ConnectionConfig,
        paths: &[PathConfig],
        seed: u64,
        bytes: u64,
    ) -> Transfer {
        let client = BulkFlow::sender(config.clone(), seed, bytes, Instant::ZERO);
        let server = BulkFlow::receiver(config);
        let mut net = Network::new(seed);
        let tx = net.add_endpoint(client);
        let rx = net.add_endpoint(server);
        let links = net.connect(tx, rx, paths).expect("valid network");
        Transfer { net, tx, rx, links, bytes, what }
    }

    pub fn sender(&self) -> &BulkFlow {
        self.net.endpoint(self.tx)
    }

    pub fn receiver(&self) -> &BulkFlow {
        self.net.endpoint(self.rx)
    }

    /// Runs until `t`, or until the receiver has the whole transfer.
    pub fn run_until(&mut self, t: Instant) {
        let rx = self.rx;
        self.net.run_until_condition(t, |n| n.endpoint(rx).done_at().is_some());
    }

    /// Nothing was corrupted and, if the transfer is complete, every block the sender started
    /// was delivered once, in order (the block log behind FMTCP's block delay metric). Returns
    /// the receiver's completion time and bytes received.
    pub fn check(&self) -> (Option<Instant>, u64) {
        let r = self.receiver();
        assert_eq!(r.corrupt_at(), None, "{}: corrupted byte", self.what);
        if r.done_at().is_some() {
            if let Err(e) = BulkFlow::check_block_order(self.sender(), r) {
                panic!("{}: {e}", self.what);
            }
        }
        (r.done_at(), r.received())
    }

    /// `run_until(limit)`, then `check`.
    pub fn run(&mut self, limit: Instant) -> (Option<Instant>, u64) {
        self.run_until(limit);
        self.check()
    }

    /// `run(limit)`, and the whole transfer arrived by then; returns when it completed.
    pub fn finish(&mut self, limit: Instant) -> Instant {
        let (done, received) = self.run(limit);
        let bytes = self.bytes;
        let done = done.unwrap_or_else(|| panic!("{}: {received} of {bytes} bytes by {limit:?}", self.what));
        assert_eq!(received, bytes, "{}", self.what);
        done
    }
}

/// Two 10 Mbit/s paths of 20 ms RTT: a good one (0.1 % loss both ways) and one that loses 20 %
/// of the data (the head-of-line case of FMTCP §III).
pub fn good_and_lossy_paths() -> [PathConfig; 2] {
    use braid_sim::{LinkConfig, LossModel};
    use std::time::Duration;
    let link = || LinkConfig::new(10_000_000, Duration::from_millis(10));
    let good = PathConfig::symmetric(link().with_loss(LossModel::bernoulli(0.001)));
    let bad = PathConfig { forward: link().with_loss(LossModel::bernoulli(0.2)), reverse: link() };
    [good, bad]
}
