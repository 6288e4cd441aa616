//! A new path's loss before its estimates have seen enough: a floor for requests' margins.
//!
//! A path's loss estimates are EWMAs that start at zero (`conn/path`: one over 64 packets, one
//! over 512). Before the path's first loss both read 0, and the long one reads a fifth of the
//! loss after 100 packets, so the first tails (a request beside a bulk stream in Startup) went
//! out with no margin, and a lost symbol cost the request a reactive round: a round trip and
//! the detection delay. FMTCP's Eq. 4 (Cui et al.) assumes a known loss rate. Here, until
//! [`Redundancy::early_symbols`](super::Redundancy::early_symbols) of a path's symbols have
//! settled (acknowledged or declared lost), a request's tail's margin is sized with at least
//! the count's own estimate, (lost + a) / (settled + b): Laplace's rule of succession with a
//! stronger prior, [`PRIOR`] (Beta(1, 49): worth 50 symbols, where Laplace's is worth 2). The
//! counts are per path id and never restart: a path id that fails and returns keeps its count. Not an app-idle tail's (a video frame): its δ̂ 0.35 and tail probe
//! plan on a reactive round, and with the floor there too the simulator's video table moved
//! with no gain (`scenarios/video.toml`, seed 3 at 5 %: on time 99.80 → 99.60 %, the frames
//! late in the first 2 s, where the floor put margin ahead of the first frames' data; seed 2
//! at 2 %: repair 5.4 → 5.3 %; not traced).

/// The prior (a, b): one loss in 50 symbols, 2 %, weighing 50 symbols. On a clean path a
/// one-symbol request stops getting a copy (its δ̂ 0.01 wants one above 1 %) once about 50
/// symbols settled without a loss, two or three round trips into Startup; a longer request
/// tail gets one until the span ends. On a lossy path the count soon reads the path's own loss.
const PRIOR: (f64, f64) = (1.0, 50.0);

/// One path's symbols settled and lost, counted until the span ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct EarlyLoss {
    settled: u32,
    lost: u32,
}

impl EarlyLoss {
    /// A symbol was acknowledged (`lost` false) or declared lost; counted while fewer than
    /// `span` have settled.
    pub fn on_settled(&mut self, lost: bool, span: u32) {
        if self.settled < span {
            self.settled += 1;
            self.lost += u32::from(lost);
        }
    }

    /// The floor on a tail's loss estimate: the count's estimate while fewer than `span`
    /// symbols have settled, 0 from then on.
    pub fn loss(&self, span: u32) -> f64 {
        if self.settled >= span {
            return 0.0;
        }
        (f64::from(self.lost) + PRIOR.0) / (f64::from(self.settled) + PRIOR.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{BlockSender, Tail};
    use crate::redundancy::{Adaptive, Redundancy, RedundancyController};
    use crate::view::{PathView, SymbolEvent};
    use crate::wire::Writer;
    use crate::Instant;
    use braid_fec::{CodeFamily, CodecConfig};

    #[test]
    fn the_count_starts_at_the_prior_and_ends_with_the_span() {
        let mut e = EarlyLoss::default();
        assert_eq!(e.loss(512), 0.02);
        for _ in 0..50 {
            e.on_settled(false, 512);
        }
        assert_eq!(e.loss(512), 0.01);
        for i in 0..150 {
            e.on_settled(i % 25 == 0, 512);
        }
        // 6 lost of 200: (6 + 1) / (200 + 50).
        assert_eq!(e.loss(512), 7.0 / 250.0);
        for _ in 0..400 {
            e.on_settled(false, 512);
        }
        assert_eq!(e.loss(512), 0.0);
        // No span: no floor.
        assert_eq!(EarlyLoss::default().loss(0), 0.0);
    }

    /// A one-symbol request beside bulk data on a path that has shown no loss yet gets a copy
    /// ahead of data (at the prior's 2 %, δ̂ 0.01 wants one); once 60 symbols settled clean
    /// (1 / 110, under 1 %) it gets none, as with `early_symbols` 0 from the start.
    #[test]
    fn a_new_paths_request_gets_a_margin_until_the_path_has_shown_its_loss() {
        let config = CodecConfig { symbol_size: 16, max_block_len: 64, ..CodecConfig::new(CodeFamily::Rlnc) };
        let mut tx = BlockSender::new(config, 4);
        tx.push_source(&[7; 16]).unwrap();
        tx.close_block_as_tail();
        let mut out = Vec::new();
        while tx.write_next_source(&mut Writer::new(&mut out)).is_some() {}
        let b = tx.blocks().next().unwrap();
        assert_eq!(b.tail, Some(Tail::Request));
        let rtt = std::time::Duration::from_millis(100);
        let v = PathView {
            path: 0,
            smoothed_rtt: rtt,
            min_rtt: rtt,
            loss: 0.0,
            loss_long: 0.0,
            window: 100_000,
            in_flight: 0,
            mss: 1280,
        };
        let mut r = Adaptive::new(Redundancy::default());
        assert_eq!(r.repairs_wanted(b, &v), 1);
        let off = Adaptive::new(Redundancy { early_symbols: 0, ..Redundancy::default() });
        assert_eq!(off.repairs_wanted(b, &v), 0);
        for _ in 0..60 {
            r.on_symbol(Instant::ZERO, SymbolEvent::Acked { block: 9, path: 0, sent_at: Instant::ZERO });
        }
        assert_eq!(r.repairs_wanted(b, &v), 0);
        // Another path's count is its own.
        assert_eq!(r.repairs_wanted(b, &PathView { path: 1, ..v }), 1);
    }
}
