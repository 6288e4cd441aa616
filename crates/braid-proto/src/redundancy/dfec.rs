//! TCP-dFEC (Ferlin et al., "MPTCP meets FEC: supporting latency-sensitive applications over
//! heterogeneous networks", §III): XOR FEC inside TCP with a dynamic ratio.
//!
//! - §III-A: one XOR parity after every `ratio` data segments (an FEC block); the DupACK
//!   threshold is the current FEC block size, so fast retransmit does not fire before the
//!   block's parity could arrive ([`super::ParityGroups::packet_threshold`]).
//! - §III-B (i) "Respect CWND": FEC is sent only when cwnd has room (the connection's normal
//!   rule); cwnd is reduced only when FEC fails or is lost — a loss the parity repaired does not
//!   reduce it; an acknowledged parity grows cwnd like data.
//! - §III-B (ii) the ratio adapts on residual loss, Eqs. (1)–(3), see [`Dfec::close_interval`].
//!
//! Eq. (1)'s `Retransmit` counts the subflow's own retransmissions: a source resent on this path
//! while fewer of the path's own sources were lost than resent here is another path's data
//! reinjected after that path's timeout, which is new data to this subflow's TCP as in MPTCP
//! ([`Dfec::resends_owed`]).
//!
//! braid's XOR groups end at their block (the paper's run on across the stream), so a block's
//! tail gets a shorter group of its own. While the path has lost at most one packet in its last
//! 1,000, a tail gets a parity only once `ratio` sources have gone without one, the paper's
//! rate (`Dfec::tail_gets_parity`).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::time::Duration;

use super::{GroupingRule, RedundancyEvent};
use crate::blocks::{OutgoingSymbol, SendBlock, XorCover};
use crate::cc::Congestion;
use crate::view::PathView;
use crate::Instant;

/// dFEC's parameters, defaults from §III-B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DfecConfig {
    /// Starting ratio: 9, one FEC in TCP's initial window.
    pub start_ratio: f64,
    /// Correction rate δ = 0.33.
    pub delta: f64,
    /// Target residual loss ("tolerance") 1 %.
    pub target: f64,
    /// Ratio bounds [4, 256]: at most 20 % overhead; 256 bounds receiver buffering.
    pub min_ratio: f64,
    pub max_ratio: f64,
    /// Measurement period T = 3 RTT.
    pub period_rtts: u32,
    /// Periods averaged, N = 2.
    pub periods: usize,
}

impl Default for DfecConfig {
    fn default() -> Self {
        DfecConfig {
            start_ratio: 9.0,
            delta: 0.33,
            target: 0.01,
            min_ratio: 4.0,
            max_ratio: 256.0,
            period_rtts: 3,
            periods: 2,
        }
    }
}

/// TCP-dFEC's grouping rule and ratio (run by [`super::XorGroups`]).
#[derive(Debug)]
pub struct Dfec {
    config: DfecConfig,
    ratio: f64,
    interval_start: Option<Instant>,
    /// Data segments sent in the current period, and how many of them were retransmissions.
    total: u64,
    retransmitted: u64,
    /// Residual_i of the last N periods.
    history: VecDeque<f64>,
    /// Packets sent since this path's last loss (a source or a parity, repaired or not), and
    /// since the one before it.
    sent_since_loss: u64,
    sent_since_second_loss: u64,
    /// Sources left without a parity since the last one was made.
    bare_run: u64,
    /// This path's sources declared lost and not yet resent here: a retransmission counts in
    /// Eq. (1) only against one. Without it, the sources another path's probe timeout let go
    /// anywhere (MPTCP's reinjection) counted on the path that carried them: on dFEC Table
    /// III's lossless B2 they held the ratio at 4–5 (a parity per 4–5 sources, 10 Mbit/s of
    /// 400 ms path carrying a live video frame's last packets).
    resends_owed: u64,
    /// Each open block's tails left without a parity: a loss there is a plain loss.
    bare: BTreeMap<u64, Vec<Range<usize>>>,
}

impl Default for Dfec {
    fn default() -> Self {
        Dfec::new(DfecConfig::default())
    }
}

impl Dfec {
    pub fn new(config: DfecConfig) -> Dfec {
        Dfec {
            config,
            ratio: config.start_ratio,
            interval_start: None,
            total: 0,
            retransmitted: 0,
            history: VecDeque::new(),
            sent_since_loss: 0,
            sent_since_second_loss: 0,
            bare_run: 0,
            resends_owed: 0,
            bare: BTreeMap::new(),
        }
    }

    /// Data segments per parity now.
    pub fn ratio(&self) -> usize {
        self.ratio.round() as usize
    }

    /// Ends a period T: Eq. (1) Residual_i = Retransmit / (Total − Retransmit); Eq. (2) the mean
    /// of the last N; Eq. (3) ratio ×= (1 − δ) above the target, else ×= (1 + δ), clamped.
    fn close_interval(&mut self) {
        let first_sent = self.total.saturating_sub(self.retransmitted);
        let residual = match (self.retransmitted, first_sent) {
            (0, _) => 0.0,
            (r, 0) => r as f64,
            (r, f) => r as f64 / f as f64,
        };
        self.history.push_back(residual);
        while self.history.len() > self.config.periods.max(1) {
            self.history.pop_front();
        }
        let mean = self.history.iter().sum::<f64>() / self.history.len() as f64;
        let c = &self.config;
        let factor = if mean > c.target { 1.0 - c.delta } else { 1.0 + c.delta };
        self.ratio = (self.ratio * factor).clamp(c.min_ratio, c.max_ratio);
        self.total = 0;
        self.retransmitted = 0;
    }

    /// Whether the path lost at most one packet in the last 10 / target packets sent (1,000 for
    /// 1 %: at the target loss rate that comes once in about 2,000 such runs). A lone loss is
    /// allowed: a lossless path under a loss-based controller still drops a packet at each peak
    /// of its window (CUBIC on a one-BDP queue: one every 1–3 s in dFEC Table III), where the
    /// paper's ratio is near 256 and sends almost no FEC; the tail parities braid would add
    /// there cost 2–3 % of the goodput.
    fn quiet(&self) -> bool {
        self.sent_since_second_loss >= (10.0 / self.config.target.max(1e-6)).ceil() as u64
    }

    /// Whether a block's tail of `len` sources gets a parity of its own, `bare_run` sources
    /// having gone without one before it. On a lossy path always: the tail's parity stands in
    /// for the group that would have run on into the next block (§III-A's groups span the
    /// subflow's stream; braid's end at the block), and with blocks a window long it is what
    /// keeps a loss from costing the window a retransmission. On a quiet path only once
    /// `ratio` sources have gone bare: the paper's one parity per `ratio` segments. With a
    /// parity on every tail, blocks of about a window cost a lossless subflow 3–4 % of its
    /// goodput (dFEC Table III's 0 % column), where the paper reports about 1 % (Fig. 11).
    fn tail_gets_parity(&self, bare_run: u64, len: u64) -> bool {
        !self.quiet() || bare_run + len >= self.ratio().max(1) as u64
    }

    fn is_bare(&self, block: u64, index: usize) -> bool {
        self.bare.get(&block).is_some_and(|tails| tails.iter().any(|t| t.contains(&index)))
    }
}

impl GroupingRule for Dfec {
    fn name(&self) -> &'static str {
        "dfec"
    }

    /// A repaired loss tells the congestion controller nothing (§III-B (i)).
    fn on_repaired(&self) -> Option<Congestion> {
        None
    }

    fn on_event(&mut self, now: Instant, event: RedundancyEvent, path: &PathView) {
        match event {
            RedundancyEvent::Lost { repair } => {
                self.sent_since_second_loss = self.sent_since_loss;
                self.sent_since_loss = 0;
                self.resends_owed += u64::from(!repair);
            }
            RedundancyEvent::Sent { .. } => {
                self.sent_since_loss += 1;
                self.sent_since_second_loss += 1;
            }
            RedundancyEvent::Acked { .. } => {}
        }
        let RedundancyEvent::Sent { repair: false, retransmission } = event else { return };
        let period = path.smoothed_rtt.max(Duration::from_millis(1)) * self.config.period_rtts;
        let start = *self.interval_start.get_or_insert(now);
        if now >= start + period {
            self.close_interval();
            self.interval_start = Some(now);
        }
        let own = retransmission && self.resends_owed > 0;
        self.resends_owed -= u64::from(own);
        self.total += 1;
        self.retransmitted += u64::from(own);
    }

    /// A parity after every `ratio` segments sent; a block's tail gets one when the block is
    /// complete and sent (groups do not span blocks), or when the sender has nothing more to send
    /// for now (so a held loss never waits for data that may not come), unless the path is quiet
    /// and fewer than `ratio` sources have gone bare (`Dfec::tail_gets_parity`) and the block
    /// need not tell the receiver its length (`SendBlock::owes_length`).
    fn covers(
        &mut self,
        _now: Instant,
        blocks: &mut dyn Iterator<Item = &SendBlock>,
        _path: &PathView,
    ) -> Vec<XorCover> {
        let ratio = self.ratio().max(1);
        let blocks: Vec<&SendBlock> = blocks.collect();
        let idle = blocks.iter().all(|b| b.all_sources_sent());
        let mut covers = Vec::new();
        for b in blocks {
            let mut r = b.uncovered_sent();
            // Sources left bare stay bare (a cover may start past them).
            if let Some(end) = self.bare.get(&b.id).and_then(|t| t.iter().map(|t| t.end).max()) {
                r.start = r.start.max(end);
            }
            while r.len() >= ratio {
                covers.push(XorCover { block: b.id, start: r.start, end: r.start + ratio, interleave: 1 });
                r.start += ratio;
                self.bare_run = 0;
            }
            // A growing block (per-segment placement) ends only when it closes.
            if !r.is_empty() && b.all_sources_sent() && (b.closed || (idle && !b.growing)) {
                // A block that owes the receiver its length must send a symbol anyway: the
                // parity, rather than its last source again.
                if self.tail_gets_parity(self.bare_run, r.len() as u64) || b.owes_length() {
                    covers.push(XorCover { block: b.id, start: r.start, end: r.end, interleave: 1 });
                    self.bare_run = 0;
                } else {
                    self.bare_run += r.len() as u64;
                    self.bare.entry(b.id).or_default().push(r);
                }
            }
        }
        covers
    }

    /// One parity per `ratio` sources, and one for a shorter tail if it gets one (§III-A).
    fn parities_for(&self, sources: u64) -> u64 {
        let ratio = self.ratio().max(1) as u64;
        let (full, tail) = (sources / ratio, sources % ratio);
        let bare_run = if full > 0 { 0 } else { self.bare_run };
        full + u64::from(tail > 0 && self.tail_gets_parity(bare_run, tail))
    }

    fn packet_threshold(&self) -> u64 {
        self.ratio() as u64
    }

    /// A lost source is held while its parity can repair it, one in a tail left bare is not;
    /// a lost parity is congestion at once (§III-B (i): cwnd is reduced "only if FEC is lost
    /// or fails").
    fn holds_loss(&self, symbol: &OutgoingSymbol) -> bool {
        symbol.source.is_some_and(|i| !self.is_bare(symbol.block, usize::from(i)))
    }

    fn on_blocks_released(&mut self, below: u64) {
        self.bare = self.bare.split_off(&below);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redundancy::testing::{parity, send, sender, view};
    use crate::redundancy::{FecAction, ParityGroups, RedundancyController, XorGroups};

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// One period T (srtt 10 ms → 30 ms) starting at `start` ms: `retransmitted` of the path's
    /// sources declared lost, then `sent` data segments of which `retransmitted` are their
    /// retransmissions. The period is closed by the next one's first event.
    fn period(d: &mut Dfec, start: u64, sent: u64, retransmitted: u64) {
        for _ in 0..retransmitted {
            d.on_event(ms(start), RedundancyEvent::Lost { repair: false }, &view(10, 10));
        }
        for i in 0..sent {
            let event = RedundancyEvent::Sent { repair: false, retransmission: i < retransmitted };
            d.on_event(ms(start), event, &view(10, 10));
        }
    }

    #[test]
    fn a_block_of_n_sources_gets_a_parity_per_ratio_and_one_for_its_tail() {
        let d = Dfec::default();
        // Ratio 9: nine sources and their parity fill a 10-packet initial window; a tenth
        // source would bring a second parity (its tail's).
        let counts: Vec<u64> = [0, 1, 9, 10, 18, 19].iter().map(|&n| d.parities_for(n)).collect();
        assert_eq!(counts, [0, 1, 1, 2, 2, 3]);
        // Through the adapter, as the connection asks it.
        let x = XorGroups::new(Dfec::default());
        assert_eq!(crate::redundancy::RedundancyController::parities_for(&x, 0, 10), 2);
    }

    #[test]
    fn ratio_adapts_on_residual_loss_and_clamps() {
        let mut d = Dfec::default();
        assert_eq!((d.ratio(), d.packet_threshold()), (9, 9));
        // Residual 10 / 90 = 11 % > 1 %: ratio × 0.67 (more FEC).
        period(&mut d, 0, 100, 10);
        period(&mut d, 30, 100, 0);
        assert_eq!(d.ratio(), 6, "9 × 0.67");
        assert_eq!(d.packet_threshold(), 6, "the dupACK threshold follows the FEC block size");
        // The clean period is averaged with the lossy one (N = 2): mean 5.5 % — still down.
        period(&mut d, 60, 100, 0);
        assert_eq!(d.ratio(), 4, "6.03 × 0.67 = 4.04");
        // Two clean periods: up by 1 + δ.
        period(&mut d, 90, 100, 0);
        assert_eq!(d.ratio(), 5, "4.04 × 1.33 = 5.37");
        // Less than T later: no update.
        period(&mut d, 100, 100, 0);
        assert_eq!(d.ratio(), 5);
        // Clean for long: up to the 256 bound and no further.
        for i in 0..30 {
            period(&mut d, 120 + 30 * i, 100, 0);
        }
        assert_eq!(d.ratio(), 256);
        // Lossy for long: down to the 4 bound (20 % overhead) and no further.
        for i in 0..30 {
            period(&mut d, 2000 + 30 * i, 100, 50);
        }
        assert_eq!(d.ratio(), 4);
        // Residual exactly at the target (1 / 100) is not above it: up.
        let mut d = Dfec::default();
        period(&mut d, 0, 101, 1);
        period(&mut d, 30, 1, 0);
        assert_eq!(d.ratio(), 12, "9 × 1.33 = 11.97");
    }

    #[test]
    fn resends_of_another_paths_losses_are_new_data_to_this_path() {
        let mut d = Dfec::default();
        let resend = RedundancyEvent::Sent { repair: false, retransmission: true };
        let first = RedundancyEvent::Sent { repair: false, retransmission: false };
        // A period of 100 segments, 10 of them resends of sources this path never lost, closed by
        // the next one's first: the ratio goes up as on a clean path (9 × 1.33 = 12), not down
        // (10 / 90 counted: 9 × 0.67 = 6).
        for t in [0, 30] {
            for i in 0..100 {
                d.on_event(ms(t), if i < 10 { resend } else { first }, &view(10, 10));
            }
        }
        assert_eq!(d.ratio(), 12);
        // Two of its own sources lost (and a parity): two of the next period's ten resends count.
        d.on_event(ms(60), RedundancyEvent::Lost { repair: false }, &view(10, 10));
        d.on_event(ms(60), RedundancyEvent::Lost { repair: true }, &view(10, 10));
        d.on_event(ms(60), RedundancyEvent::Lost { repair: false }, &view(10, 10));
        for i in 0..100 {
            d.on_event(ms(60), if i < 10 { resend } else { first }, &view(10, 10));
        }
        d.on_event(ms(90), first, &view(10, 10));
        assert_eq!(
            d.ratio(),
            11,
            "clean again at 60 ms (× 1.33 = 15.9), then the mean of 0 and 2 / 98 is over 1 %: × 0.67 = 10.7"
        );
    }

    #[test]
    fn parity_after_every_ratio_segments_and_the_block_tail() {
        let mut d = XorGroups::new(Dfec::default());
        let mut tx = sender(20);
        let path = view(10, 10);
        send(&mut tx, 8);
        assert!(d.parity_covers(ms(0), &mut tx.blocks(), &path).is_empty());
        send(&mut tx, 1);
        let covers = d.parity_covers(ms(0), &mut tx.blocks(), &path);
        assert_eq!(covers, [XorCover { block: 0, start: 0, end: 9, interleave: 1 }]);
        assert!(tx.cover(covers[0]));
        // A sender with nothing else to send now (all 3 pushed are sent): the open block's tail
        // is covered too.
        let mut idle = sender(3);
        send(&mut idle, 3);
        assert_eq!(
            XorGroups::new(Dfec::default()).parity_covers(ms(0), &mut idle.blocks(), &path),
            [XorCover { block: 0, start: 0, end: 3, interleave: 1 }]
        );
        // The block closes at 20 sources: its tail 18..20 gets a parity once sent.
        tx.close_block();
        send(&mut tx, 11);
        assert_eq!(
            d.parity_covers(ms(0), &mut tx.blocks(), &path),
            [
                XorCover { block: 0, start: 9, end: 18, interleave: 1 },
                XorCover { block: 0, start: 18, end: 20, interleave: 1 },
            ]
        );
    }

    #[test]
    fn a_quiet_path_gives_a_tail_a_parity_once_ratio_sources_went_without() {
        let mut d = XorGroups::new(Dfec::default());
        let path = view(10, 10);
        let sent = RedundancyEvent::Sent { repair: false, retransmission: false };
        // Blocks of 5, 5 and 8 sources, closed as they are (a per-path subflow's blocks).
        let mut tx = sender(0);
        for len in [5u8, 5, 8] {
            for i in 0..len {
                tx.push_source(&[i; 16]).unwrap();
            }
            tx.close_block();
        }
        // Not quiet before N = 2 whole periods without loss: a tail gets its parity.
        assert_eq!(d.rule().parities_for(5), 1);
        // Periods of 30 ms (srtt 10 ms) closed at 30 and 60 ms, no loss in either: the ratio up
        // twice (9 × 1.33² = 16). Quiet once 1,000 packets went with at most one loss.
        for t in [0, 30, 60] {
            RedundancyController::on_event(&mut d, ms(t), sent, &path);
        }
        assert_eq!(d.rule().ratio(), 16);
        assert_eq!(d.rule().parities_for(5), 1, "3 packets are no evidence");
        for _ in 0..997 {
            RedundancyController::on_event(&mut d, ms(60), sent, &path);
        }
        assert_eq!(d.rule().parities_for(5), 0, "a 5-source tail goes bare");
        assert_eq!(d.rule().parities_for(20), 1, "a full group of 16, its 4-source tail bare");
        // Blocks 0 and 1 go bare (5, then 10 sources without a parity); block 2 brings the run
        // to 18 ≥ 16 and gets one.
        let first = send(&mut tx, 5);
        assert!(d.parity_covers(ms(61), &mut tx.blocks(), &path).is_empty());
        send(&mut tx, 5);
        assert!(d.parity_covers(ms(62), &mut tx.blocks(), &path).is_empty());
        let last = send(&mut tx, 8);
        let covers = d.parity_covers(ms(63), &mut tx.blocks(), &path);
        assert_eq!(covers, [XorCover { block: 2, start: 0, end: 8, interleave: 1 }]);
        assert!(tx.cover(covers[0]));
        // A loss in a bare tail is a plain loss (retransmitted, congestion); one its parity may
        // repair is held.
        assert!(!d.take_loss(ms(70), 0, first[2], ms(61)));
        assert!(d.take_loss(ms(70), 0, last[3], ms(63)));
        assert_eq!(d.held(), 1);
        // One loss leaves the path quiet; a second within 1,000 packets ends it: every tail gets
        // its parity again.
        let lost = RedundancyEvent::Lost { repair: false };
        RedundancyController::on_event(&mut d, ms(70), lost, &path);
        assert_eq!(d.rule().parities_for(5), 0);
        RedundancyController::on_event(&mut d, ms(71), sent, &path);
        RedundancyController::on_event(&mut d, ms(72), lost, &path);
        assert_eq!(d.rule().parities_for(5), 1);
        // Released blocks are forgotten.
        d.on_blocks_released(2);
        assert!(d.rule().bare.is_empty());
    }

    #[test]
    fn repaired_loss_is_not_congestion_failed_and_lost_fec_are() {
        let mut d = XorGroups::new(Dfec::default());
        let mut tx = sender(40);
        let path = view(10, 10);
        let sent = send(&mut tx, 9);
        let cover = d.parity_covers(ms(0), &mut tx.blocks(), &path)[0];
        assert!(tx.cover(cover));
        let fec = parity(&mut tx, 0);
        // One loss in the FEC block: held, then repaired — no action at all (no cwnd cut, no
        // retransmission).
        assert!(d.take_loss(ms(1), 0, sent[3], ms(0)));
        for s in sent.iter().filter(|s| s.source != Some(3)).chain([&fec]) {
            d.on_symbol_acked(ms(2), *s);
        }
        assert_eq!(d.poll_action(), None);
        assert_eq!(d.outcomes(), (1, 0));
        // Two losses in the next block: FEC failed — both retransmitted, one congestion signal.
        let sent = send(&mut tx, 9);
        let cover = d.parity_covers(ms(3), &mut tx.blocks(), &path)[0];
        assert!(tx.cover(cover));
        assert!(d.take_loss(ms(4), 0, sent[1], ms(3)));
        assert!(d.take_loss(ms(4), 0, sent[5], ms(3)));
        let actions: Vec<FecAction> = std::iter::from_fn(|| d.poll_action()).collect();
        assert_eq!(
            actions,
            [
                FecAction::Retransmit { block: 0, index: 10 },
                FecAction::Retransmit { block: 0, index: 14 },
                FecAction::Congestion { path: 0, sent: ms(3), signal: crate::cc::Congestion::Loss },
            ]
        );
        // A lost parity is not taken over: the connection counts it as congestion at once.
        let fec = parity(&mut tx, 0);
        assert!(!d.take_loss(ms(5), 0, fec, ms(3)));
    }
}
