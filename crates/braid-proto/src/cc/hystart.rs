//! HyStart++ (RFC 9406) delay-increase detection: leave slow start when the RTT of a round
//! rises noticeably above the previous round's, before the queue overflows. Slow start that
//! only stops at the first loss overshoots to twice the path's capacity and drops a window's
//! worth of packets — which a coded transport then has to repair.

use std::time::Duration;

use crate::Instant;

/// RFC 9406 §4.2: MIN_RTT_THRESH, MAX_RTT_THRESH, MIN_RTT_DIVISOR, N_RTT_SAMPLE.
const MIN_THRESHOLD: Duration = Duration::from_millis(4);
const MAX_THRESHOLD: Duration = Duration::from_millis(16);
const DIVISOR: u32 = 8;
const SAMPLES: u32 = 8;

#[derive(Debug, Clone, Default)]
pub(crate) struct HyStart {
    /// Packets sent after this instant belong to the next round.
    round_start: Option<Instant>,
    last_round_min: Option<Duration>,
    current_round_min: Option<Duration>,
    samples: u32,
    /// Consecutive samples above the previous round's minimum plus the threshold.
    high_in_a_row: u32,
}

impl HyStart {
    /// Feeds an RTT sample from an ACK of a packet sent at `sent`; returns true when slow start
    /// should end.
    pub(crate) fn on_rtt(&mut self, now: Instant, sent: Instant, rtt: Duration) -> bool {
        if self.round_start.is_none_or(|start| sent > start) {
            // A new round: packets sent from now on are its packets.
            self.last_round_min = self.current_round_min.take().or(self.last_round_min);
            self.round_start = Some(now);
            self.samples = 0;
        }
        self.samples += 1;
        self.current_round_min = Some(self.current_round_min.map_or(rtt, |m| m.min(rtt)));
        if let (Some(last), Some(current)) = (self.last_round_min, self.current_round_min) {
            let threshold = (last / DIVISOR).clamp(MIN_THRESHOLD, MAX_THRESHOLD);
            if self.samples >= SAMPLES && current >= last + threshold {
                return true;
            }
            // braid's addition (DEVIATIONS.md): a paced sender spreads each round evenly, so the
            // queue builds only late in the round that overshoots, after the round's minimum was
            // taken from its early, unqueued packets — the RFC's test then never fires and slow
            // start runs into the queue limit. Also leave when N samples in a row run above
            // the threshold.
            if rtt >= last + threshold {
                self.high_in_a_row += 1;
                if self.high_in_a_row >= SAMPLES {
                    return true;
                }
            } else {
                self.high_in_a_row = 0;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_when_a_round_runs_slower() {
        let mut h = HyStart::default();
        let ms = |v: u64| Duration::from_millis(v);
        let t = |v: u64| Instant::from_micros(v * 1000);
        // Round 1: 100 ms.
        for i in 0..10 {
            assert!(!h.on_rtt(t(100 + i), t(i), ms(100)));
        }
        // Round 2 (packets sent after round 1 started): still 100 ms → stay.
        for i in 0..10 {
            assert!(!h.on_rtt(t(200 + i), t(101 + i), ms(100)));
        }
        // Round 3: 120 ms ≥ 100 + 12.5 → exit after enough samples.
        let exits: Vec<bool> = (0..10).map(|i| h.on_rtt(t(330 + i), t(211 + i), ms(120))).collect();
        assert!(!exits[0] && exits[9]);
    }

    /// A paced round whose early packets saw no queue but whose later ones do: eight samples in
    /// a row above the threshold end slow start although the round's minimum stays low.
    #[test]
    fn exits_when_a_paced_round_runs_into_a_queue() {
        let mut h = HyStart::default();
        let ms = |v: u64| Duration::from_millis(v);
        let t = |v: u64| Instant::from_micros(v * 1000);
        for i in 0..10 {
            assert!(!h.on_rtt(t(100 + i), t(i), ms(100)));
        }
        // Next round: 20 samples at 100 ms, then the queue grows by 1 ms per sample.
        let mut exited_at = None;
        for i in 0..60u64 {
            let rtt = if i < 20 { ms(100) } else { ms(100 + (i - 20)) };
            if h.on_rtt(t(200 + i), t(101 + i / 2), rtt) {
                exited_at = Some(i);
                break;
            }
        }
        // Above 112.5 ms from sample 33 on; the eighth in a row is sample 40.
        assert_eq!(exited_at, Some(40));
    }
}
