//! Packetization-layer path MTU discovery, one per path (RFC 8899, DPLPMTUD; PROTOCOL.md §14).
//!
//! The state machine of RFC 8899 §5.2: a path starts at BASE_PLPMTU (1280, IPv6's minimum MTU,
//! confirmed by the handshake), SEARCHING sends probes up a fixed ladder of sizes (§5.3.1 allows
//! any search method), SEARCH_COMPLETE keeps the largest size acknowledged and probes again after
//! PMTU_RAISE_TIMER (§5.1.1). A probe is a PING padded to the probe size (§4.1, §6: a probe
//! carries no application data); its loss is not congestion (§3 item 7, §4.4) and never reaches
//! the congestion controller or the loss estimate. Black-hole detection (§4.3, §5.2): when
//! packets larger than BASE_PLPMTU are lost [`MAX_PROBES`] times with none of them acknowledged
//! in between, probes of the current PLPMTU confirm it (§4.3: congestion and random loss lose
//! large packets too); if [`MAX_PROBES`] of them are lost in a row, the path falls back to BASE
//! and searches again.
//!
//! Sizes here are the core's packets (the runtime's AEAD tag and the IP/UDP headers come on top:
//! the caller converts its MTU into `max` and `base`).

use std::time::Duration;

use crate::Instant;

/// RFC 8899 §5.1.2 MAX_PROBES: probes of one size sent before that size is judged too big; also
/// the large-packet losses in a row that signal a black hole.
pub const MAX_PROBES: u32 = 3;
/// RFC 8899 §5.1.1 PMTU_RAISE_TIMER: how long SEARCH_COMPLETE waits before probing again.
pub const RAISE_TIMER: Duration = Duration::from_secs(600);
/// PROBE_TIMER's floor (see [`probe_timer`]).
pub const MIN_PROBE_TIMER: Duration = Duration::from_millis(100);

/// RFC 8899 §5.1.1 PROBE_TIMER for a path whose probe timeout (RFC 9002) is `pto`: twice it, at
/// least [`MIN_PROBE_TIMER`]. RFC 8899 asks for ≥ 1 s where the PL has no RTT estimate; with
/// one, a probe that waits this long behind a window of queued data is judged lost no sooner
/// than the data would be (RFC 9000 §14.4 likewise detects probe loss with its loss recovery).
pub fn probe_timer(pto: Duration) -> Duration {
    (pto * 2).max(MIN_PROBE_TIMER)
}

/// The probe sizes tried in order above the base (RFC 8899 §5.3.1, a fixed ladder): IPv6's
/// minimum plus headroom, the IPv6 (1452) and IPv4 (1472) UDP payloads of a 1500-byte
/// Ethernet MTU, 1500 itself (a tunnel that carries whole frames), then jumbo sizes up to the
/// largest symbol the wire allows. `max` caps it and is itself the last rung.
const LADDER: [usize; 10] = [1400, 1452, 1472, 1500, 2048, 4096, 8192, 9000, 16384, 32768];

/// RFC 8899 §5.2's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmtuPhase {
    /// Discovery is off (`max` ≤ `base`): the path stays at the base size.
    Disabled,
    /// At BASE_PLPMTU, waiting for the path to be confirmed (an RTT sample) before searching.
    Base,
    Searching,
    SearchComplete,
}

/// A probe awaiting its acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Probe {
    number: u64,
    size: usize,
    sent: Instant,
}

/// One path's discovery state.
#[derive(Debug, Clone)]
pub struct Pmtu {
    /// Bytes the layer below adds to each packet (the runtime's AEAD tag): the ladder's rungs
    /// are datagram sizes on the wire, so a rung `r` is a packet of `r − overhead`.
    overhead: usize,
    base: usize,
    max: usize,
    phase: PmtuPhase,
    /// The PLPMTU in force: the largest packet the path is believed to carry.
    plpmtu: usize,
    /// The size being probed (SEARCHING) and how many probes of it were lost.
    probed: usize,
    probe_count: u32,
    /// Smallest size known to fail (the search never probes it or above again until a raise).
    too_big: usize,
    outstanding: Option<Probe>,
    /// When the next probe may go (SEARCH_COMPLETE: the raise timer).
    next_probe: Option<Instant>,
    /// Packets larger than `base` lost in a row with none acknowledged (black-hole detection).
    big_losses: u32,
    /// Times a black hole was detected (statistics, tests).
    pub black_holes: u32,
    /// A black hole is suspected: a probe of the PLPMTU confirms or clears it.
    confirming: bool,
}

impl Pmtu {
    /// `base`: the size every path carries (BASE_PLPMTU); `max`: the largest worth probing for
    /// (MAX_PLPMTU: the interface MTU, or a configured cap).
    pub fn new(base: usize, max: usize) -> Pmtu {
        Pmtu::with_overhead(base, max, 0)
    }

    /// [`Pmtu::new`] for packets that grow by `overhead` bytes below (the ladder's sizes are
    /// then those of the datagrams on the wire).
    pub fn with_overhead(base: usize, max: usize, overhead: usize) -> Pmtu {
        let phase = if max > base { PmtuPhase::Base } else { PmtuPhase::Disabled };
        Pmtu {
            overhead,
            base,
            max: max.max(base),
            phase,
            plpmtu: base,
            probed: base,
            probe_count: 0,
            too_big: usize::MAX,
            outstanding: None,
            next_probe: None,
            big_losses: 0,
            black_holes: 0,
            confirming: false,
        }
    }

    pub fn phase(&self) -> PmtuPhase {
        self.phase
    }

    /// The largest packet to send on the path now.
    pub fn plpmtu(&self) -> usize {
        self.plpmtu
    }

    /// The next rung above `size` that is below `too_big`, capped at `max`.
    fn next_size(&self, size: usize) -> Option<usize> {
        let limit = self.max.min(self.too_big.saturating_sub(1));
        self.rungs().filter(|&s| s > size && s <= limit).min()
    }

    /// The ladder in packet sizes, then `max`.
    fn rungs(&self) -> impl Iterator<Item = usize> + '_ {
        LADDER.iter().map(|r| r.saturating_sub(self.overhead)).chain([self.max])
    }

    /// The path was confirmed at the base size (RFC 8899 §5.2 BASE → SEARCHING: the handshake
    /// or an acknowledged packet proved it): start searching.
    pub fn on_confirmed(&mut self, now: Instant) {
        if self.phase == PmtuPhase::Base {
            self.start_search(now);
        }
    }

    fn start_search(&mut self, now: Instant) {
        match self.next_size(self.plpmtu) {
            Some(size) => {
                self.phase = PmtuPhase::Searching;
                self.probed = size;
                self.probe_count = 0;
                self.next_probe = Some(now);
            }
            None => self.complete(now),
        }
    }

    fn complete(&mut self, now: Instant) {
        self.phase = PmtuPhase::SearchComplete;
        self.outstanding = None;
        self.next_probe = (self.plpmtu < self.max).then(|| now + RAISE_TIMER);
    }

    /// The size of the probe to send now, if one is due.
    pub fn probe_due(&self, now: Instant) -> Option<usize> {
        if self.outstanding.is_some() {
            return None;
        }
        if self.confirming {
            return Some(self.plpmtu);
        }
        match self.phase {
            PmtuPhase::Searching => self.next_probe.filter(|&t| t <= now).map(|_| self.probed),
            PmtuPhase::SearchComplete => {
                // PMTU_RAISE_TIMER expired: search again from the current PLPMTU (§5.2).
                self.next_probe
                    .filter(|&t| t <= now)
                    .and_then(|_| self.rungs().filter(|&s| s > self.plpmtu && s <= self.max).min())
            }
            _ => None,
        }
    }

    /// When something is due: a probe to send, or an outstanding probe's timer (`probe_timer`).
    pub fn timeout(&self, probe_timer: Duration) -> Option<Instant> {
        match self.outstanding {
            Some(p) => Some(p.sent + probe_timer),
            None if self.confirming => Some(Instant::ZERO),
            None if matches!(self.phase, PmtuPhase::Searching | PmtuPhase::SearchComplete) => self.next_probe,
            None => None,
        }
    }

    /// A probe of `size` went out as packet `number`.
    pub fn on_probe_sent(&mut self, now: Instant, number: u64, size: usize) {
        if self.confirming {
            self.outstanding = Some(Probe { number, size, sent: now });
            return;
        }
        if self.phase == PmtuPhase::SearchComplete {
            // The raise timer fired: a new search round from the current size (§5.2).
            self.phase = PmtuPhase::Searching;
            self.too_big = usize::MAX;
            self.probe_count = 0;
        }
        self.probed = size;
        self.outstanding = Some(Probe { number, size, sent: now });
        self.next_probe = None;
    }

    /// The packet number of the probe awaiting an acknowledgement.
    pub fn outstanding(&self) -> Option<u64> {
        self.outstanding.map(|p| p.number)
    }

    /// The outstanding probe was acknowledged: its size becomes the PLPMTU and the search moves
    /// up the ladder (RFC 8899 §5.2, "probe acked").
    pub fn on_probe_acked(&mut self, now: Instant) {
        let Some(probe) = self.outstanding.take() else { return };
        self.plpmtu = self.plpmtu.max(probe.size);
        self.big_losses = 0;
        if std::mem::take(&mut self.confirming) {
            self.probe_count = 0;
            // No black hole after all (the losses were congestion): carry on where it was.
            self.next_probe = match self.phase {
                PmtuPhase::Searching => Some(now),
                _ => (self.plpmtu < self.max).then(|| now + RAISE_TIMER),
            };
            return;
        }
        match self.next_size(self.plpmtu) {
            Some(size) => {
                self.probed = size;
                self.probe_count = 0;
                self.next_probe = Some(now);
            }
            None => self.complete(now),
        }
    }

    /// The probe timer (`probe_timer` after sending) ran out without an acknowledgement: the
    /// probe is lost (§5.1.1 PROBE_TIMER). After [`MAX_PROBES`] losses of one size the search
    /// ends at the current PLPMTU (§5.2, "MAX_PROBES reached").
    pub fn on_timeout(&mut self, now: Instant, probe_timer: Duration) {
        let Some(probe) = self.outstanding.filter(|p| now >= p.sent + probe_timer) else { return };
        self.outstanding = None;
        self.probe_count += 1;
        if self.confirming {
            if self.probe_count >= MAX_PROBES {
                self.black_hole(now);
            }
            return;
        }
        if self.probe_count >= MAX_PROBES {
            self.too_big = self.too_big.min(probe.size);
            self.complete(now);
        } else {
            self.next_probe = Some(now);
        }
    }

    /// Data packets of `size` bytes were acknowledged (`acked`) or declared lost. Losses of
    /// packets above the base size, [`MAX_PROBES`] in a row with no such packet acknowledged,
    /// make a black hole suspected (RFC 8899 §4.3): probes of the PLPMTU go out at once, and
    /// [`MAX_PROBES`] of them lost confirm it (one acknowledged clears it). Returns true when it
    /// starts such a confirmation.
    pub fn on_data(&mut self, acked: impl Iterator<Item = u64>, lost: impl Iterator<Item = u64>) -> bool {
        let base = self.base as u64;
        if acked.into_iter().any(|s| s > base) {
            self.big_losses = 0;
        }
        self.big_losses += lost.filter(|&s| s > base).count() as u32;
        if self.big_losses < MAX_PROBES || self.plpmtu <= self.base || self.confirming {
            return false;
        }
        self.big_losses = 0;
        self.confirming = true;
        self.probe_count = 0;
        // A search probe in flight is forgotten: the confirmation decides first.
        self.outstanding = None;
        true
    }

    #[cfg(test)]
    /// Whether a black hole is suspected and being confirmed.
    pub fn confirming(&self) -> bool {
        self.confirming
    }

    /// RFC 8899 §5.2 "black hole detected": back to BASE_PLPMTU, and search again.
    fn black_hole(&mut self, now: Instant) {
        self.confirming = false;
        self.big_losses = 0;
        self.black_holes += 1;
        self.too_big = self.plpmtu;
        self.plpmtu = self.base;
        self.outstanding = None;
        // BASE is still confirmed (the packets that carry ACKs are smaller): search again at
        // once, below the size that just failed.
        self.phase = PmtuPhase::Base;
        self.start_search(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTO: Duration = Duration::from_millis(100);

    /// Runs a search on a path that carries packets up to `mtu`; returns the PLPMTU found and
    /// the probes sent.
    fn search(p: &mut Pmtu, mtu: usize, mut now: Instant) -> (usize, u32) {
        let mut number = 0;
        let mut probes = 0;
        p.on_confirmed(now);
        while let Some(size) = p.probe_due(now) {
            p.on_probe_sent(now, number, size);
            number += 1;
            probes += 1;
            assert!(probes < 100, "the search does not end");
            if size <= mtu {
                now += PTO / 2;
                p.on_probe_acked(now);
            } else {
                now += PTO;
                p.on_timeout(now, PTO);
            }
        }
        (p.plpmtu(), probes)
    }

    #[test]
    fn finds_the_largest_ladder_size_a_path_carries() {
        let now = Instant::ZERO;
        for (mtu, max, want) in [
            (1500, 9000, 1500),
            (1472, 9000, 1472),
            (1460, 9000, 1452),
            (1280, 9000, 1280),
            (9000, 9000, 9000),
            (65535, 16000, 16000),
            (1500, 1280, 1280),
        ] {
            let mut p = Pmtu::new(1280, max);
            let (found, probes) = search(&mut p, mtu, now);
            assert_eq!(found, want, "mtu {mtu} max {max}");
            assert!(found <= mtu.max(1280), "never above the path's MTU");
            if max > 1280 {
                assert_eq!(p.phase(), PmtuPhase::SearchComplete);
            } else {
                assert_eq!((p.phase(), probes), (PmtuPhase::Disabled, 0));
            }
        }
    }

    #[test]
    fn a_too_big_size_is_tried_max_probes_times_then_raised_after_the_timer() {
        let now = Instant::ZERO;
        let mut p = Pmtu::new(1280, 9000);
        let (_, probes) = search(&mut p, 1500, now);
        // 1400, 1452, 1472, 1500 acknowledged; 2048 lost MAX_PROBES times.
        assert_eq!(probes, 4 + MAX_PROBES);
        let t = p.timeout(PTO).expect("raise timer armed");
        assert!(t >= now + RAISE_TIMER);
        assert_eq!(p.probe_due(t - Duration::from_secs(1)), None);
        // The path grew meanwhile: the raise finds the new size.
        let (found, _) = search(&mut p, 9000, t);
        assert_eq!(found, 9000);
    }

    #[test]
    fn black_hole_falls_back_to_base_and_searches_again() {
        let now = Instant::ZERO;
        let mut p = Pmtu::new(1280, 9000);
        search(&mut p, 1500, now);
        assert_eq!(p.plpmtu(), 1500);
        // Two large losses with an ack in between: not suspected.
        assert!(!p.on_data([].into_iter(), [1500, 1500].into_iter()));
        assert!(!p.on_data([1500].into_iter(), [1500].into_iter()));
        // Small losses never count.
        assert!(!p.on_data([].into_iter(), [1200; 10].into_iter()));
        assert_eq!(p.plpmtu(), 1500);
        // Congestion loses three large packets: suspected, but the confirming probe arrives.
        assert!(p.on_data([].into_iter(), [1500, 1500].into_iter()));
        assert_eq!(p.probe_due(now), Some(1500));
        p.on_probe_sent(now, 50, 1500);
        p.on_probe_acked(now + PTO / 2);
        assert_eq!(
            (p.plpmtu(), p.black_holes, p.phase(), p.probe_due(now)),
            (1500, 0, PmtuPhase::SearchComplete, None)
        );
        // The MTU drops to 1400: every large packet is lost, and so are the confirming probes.
        assert!(p.on_data([].into_iter(), [1500, 1500, 1500].into_iter()));
        assert!(p.confirming());
        for n in 0..MAX_PROBES {
            assert_eq!((p.plpmtu(), p.black_holes), (1500, 0), "after {n} confirming probes lost");
            assert_eq!(p.probe_due(now), Some(1500));
            p.on_probe_sent(now, 51 + u64::from(n), 1500);
            p.on_timeout(now + PTO, PTO);
        }
        assert_eq!((p.plpmtu(), p.black_holes), (1280, 1));
        assert_eq!(p.phase(), PmtuPhase::Searching);
        let (found, _) = search(&mut p, 1400, now + PTO);
        assert_eq!(found, 1400, "the new search stays below the size that failed");
    }

    #[test]
    fn disabled_and_base_states_send_nothing() {
        let now = Instant::ZERO;
        let p = Pmtu::new(1280, 1280);
        assert_eq!((p.phase(), p.probe_due(now), p.timeout(PTO)), (PmtuPhase::Disabled, None, None));
        let mut p = Pmtu::new(1280, 1500);
        assert_eq!((p.phase(), p.probe_due(now)), (PmtuPhase::Base, None));
        p.on_confirmed(now);
        assert_eq!(p.probe_due(now), Some(1400));
        // A late acknowledgement after the probe was declared lost changes nothing.
        p.on_probe_sent(now, 7, 1400);
        p.on_timeout(now + PTO, PTO);
        p.on_probe_acked(now + PTO * 2);
        assert_eq!(p.plpmtu(), 1280);
    }
}
