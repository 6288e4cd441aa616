//! Unreliable application datagrams (PROTOCOL.md §15; RFC 9221's DATAGRAM frame for QUIC,
//! with repair across datagrams).
//!
//! A datagram is sent once, in a DATAGRAM frame, and never retransmitted. Datagrams are grouped
//! in *datagram blocks* of at most [`DatagramConfig::max_block_len`]; as they go out, the
//! sender adds DATAGRAM_REPAIR frames: seeded RLNC combinations (braid-fec's code, the same as
//! the streams') of the block's datagrams so far, so a receiver rebuilds a lost datagram from a
//! later repair without a round trip. How many repairs follows the measured loss
//! ([`repair_ratio`]); a loss the sender learns of from ACKs while the datagram is still
//! before its deadline earns one more repair for its block. Every datagram has a deadline
//! (default 150 ms): it is dropped from the send queue once past it, no repair is sent for a
//! block whose datagrams are all past it, and a datagram rebuilt after it is dropped.
//!
//! [`DatagramSender`] and [`DatagramReceiver`] hold the state; the connection (`conn/datagrams.rs`)
//! picks the path and builds the packets.

pub mod recv;
pub mod send;

use std::time::Duration;

pub use recv::DatagramReceiver;
pub use send::DatagramSender;

/// How a connection sends and receives datagrams.
#[derive(Debug, Clone, PartialEq)]
pub struct DatagramConfig {
    /// How long a datagram is of use after the application hands it over. Default 150 ms
    /// (ITU-T G.114's bound for interactive voice). A receiver judges rebuilt datagrams by the
    /// deadline each one carries.
    pub deadline: Duration,
    /// Datagrams waiting to be sent; beyond this the oldest is dropped. Default 256.
    pub send_queue: usize,
    /// Datagrams received and not yet read; beyond this the oldest is dropped. Default 1024.
    pub recv_queue: usize,
    /// Datagrams per block (1–64). Default 32. A block also closes once its first datagram is a
    /// third of its deadline old, so its repairs still arrive in time.
    pub max_block_len: usize,
    /// Repair per datagram. Default: adaptive ([`repair_ratio`] of the measured loss).
    pub redundancy: DatagramRedundancy,
    /// How long a queued datagram waits for its path's pacer at most; past it, it goes out as
    /// soon as a path's congestion window has room (`None`: datagrams always wait for the
    /// pacer). Default `None`. The pacer runs at the bandwidth estimate, which for a stream that
    /// leaves the path mostly idle is about the stream's own rate, and keeps at most 1 ms of
    /// credit for a late wake-up, while one datagram's gap at that rate is longer (2.4 ms at
    /// 3.4 Mbit/s): a host that wakes late every time (a low-priority process beside busy
    /// ones) would send about one datagram per wake-up, fewer than the stream brings, until
    /// the queue's datagrams miss their deadline; and a backlog (what a host that was not
    /// scheduled for a while hands over at once) would drain only at the pacer's margin over
    /// the stream (docs/TUN.md, "Why the stream collapsed on a busy host"). A bound such as
    /// 5 ms ends both, but at a failover lets the backlog and the dead path's repairs burst
    /// onto the path taking over (braid-sim's `datagrams` failover test: 23 misses around the
    /// death, against at most 12), so it is off and [`Self::late_wake_credit`] does the work.
    pub pacer_wait: Option<Duration>,
    /// The most time the pacer makes up for a host that ran the connection late while
    /// datagrams waited for it: a late wake-up then sends what the pacer would have let out on
    /// time, datagrams and repairs alike. Default 25 ms; zero turns it off. A punctual host
    /// never earns any.
    pub late_wake_credit: Duration,
}

impl Default for DatagramConfig {
    fn default() -> Self {
        DatagramConfig {
            deadline: Duration::from_millis(150),
            send_queue: 256,
            recv_queue: 1024,
            max_block_len: 32,
            redundancy: DatagramRedundancy::Adaptive,
            pacer_wait: None,
            late_wake_credit: Duration::from_millis(25),
        }
    }
}

/// How many repair symbols datagrams get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DatagramRedundancy {
    /// [`repair_ratio`] of the loss measured on the paths the datagrams take, plus a repair
    /// for each loss detected in time.
    Adaptive,
    /// A fixed number of repairs per datagram (0 turns repair off, loss-driven repairs too).
    Fixed(f64),
}

/// Repairs per datagram for a measured loss rate `loss`: 2 × loss plus 1.5 percentage points,
/// half a point inside the overhead budget of 2 × loss + 2 points for the estimate's error.
/// Repairs sent for detected losses spend the same credit, so they do not add to it. At most
/// 0.5.
pub fn repair_ratio(loss: f64) -> f64 {
    (2.0 * loss.clamp(0.0, 1.0) + 0.015).min(0.5)
}

/// Datagram counters of one end (sender and receiver sides together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatagramStats {
    /// Datagrams sent (each once).
    pub sent: u64,
    /// Payload bytes of the datagrams sent.
    pub sent_bytes: u64,
    /// DATAGRAM_REPAIR frames sent, and their payload bytes.
    pub repairs_sent: u64,
    pub repair_bytes: u64,
    /// Of `repairs_sent`, those answering a loss detected from ACKs (or a silent path).
    pub loss_repairs_sent: u64,
    /// Datagrams and repairs given up as lost because their path fell silent, and of them
    /// those whose repairs the takeover allowance paid.
    pub suspected: u64,
    pub suspected_on_allowance: u64,
    /// Of `suspected`, those acknowledged after all (the silence was a slow path or host).
    pub suspected_delivered: u64,
    /// Datagrams handed to the application (received or rebuilt).
    pub delivered: u64,
    /// Of `delivered`, those rebuilt from repair.
    pub recovered: u64,
    /// Datagrams rebuilt after their deadline (dropped, not delivered).
    pub late: u64,
    /// Datagrams dropped: past their deadline before they could be sent, pushed out of a full
    /// send or receive queue.
    pub dropped: u64,
    /// Of `dropped`, at the sender: pushed out of a full send queue, past their deadline in
    /// the queue, and given up as unable to arrive in time over the chosen path.
    pub dropped_full: u64,
    pub dropped_expired: u64,
    pub dropped_hopeless: u64,
    /// Datagrams sent after waiting in the send queue more than 10 ms, and more than 50 ms;
    /// the longest wait, in microseconds.
    pub waited_10ms: u64,
    pub waited_50ms: u64,
    pub wait_max_us: u64,
    /// Time the send queue held datagrams that could not go out, by what held them, in
    /// microseconds: no path had room in its congestion window; the chosen path's pacer; and
    /// past the pacer's release while nothing was sent (the host did not run the connection).
    pub blocked_window_us: u64,
    pub blocked_pacer_us: u64,
    pub blocked_host_us: u64,
    /// Datagrams waiting in the send queue now.
    pub queued: u64,
}

impl DatagramStats {
    /// Repair bytes over datagram bytes sent.
    pub fn overhead(&self) -> f64 {
        self.repair_bytes as f64 / self.sent_bytes.max(1) as f64
    }
}

/// Why a datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendDatagramError {
    #[error("datagram of {size} bytes exceeds the largest the paths carry ({max})")]
    TooLarge { size: usize, max: usize },
    #[error("the connection is closed")]
    Closed,
}

/// What one packet carried of datagrams (for the loss-driven repair): the packets built by
/// the connection hold frames of one datagram block only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentDatagrams {
    pub block: u64,
    /// The highest index of the datagrams in the packet, if it carried any.
    pub newest: Option<u16>,
    pub datagrams: u8,
    pub repairs: u8,
}

/// A datagram's coded form (PROTOCOL.md §15.2): length, send time and deadline in front of
/// the payload, zero-padded to the block's symbol size by the caller.
pub(crate) fn coded_form(out: &mut Vec<u8>, data: &[u8], sent_ms: u32, deadline_ms: u16) {
    out.clear();
    out.extend_from_slice(&(data.len() as u16).to_be_bytes());
    out.extend_from_slice(&sent_ms.to_be_bytes());
    out.extend_from_slice(&deadline_ms.to_be_bytes());
    out.extend_from_slice(data);
}

/// Parses a coded form: payload, send time, deadline; `None` if the length does not fit.
pub(crate) fn parse_coded(symbol: &[u8]) -> Option<(&[u8], u32, u16)> {
    let len = usize::from(u16::from_be_bytes(symbol.get(0..2)?.try_into().ok()?));
    let sent_ms = u32::from_be_bytes(symbol.get(2..6)?.try_into().ok()?);
    let deadline_ms = u16::from_be_bytes(symbol.get(6..8)?.try_into().ok()?);
    Some((symbol.get(8..8 + len)?, sent_ms, deadline_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_stays_within_the_budget() {
        for loss in [0.0, 0.01, 0.02, 0.05, 0.1, 0.2] {
            let r = repair_ratio(loss);
            assert!(r >= loss.min(0.5) && r <= 2.0 * loss + 0.02, "loss {loss}: ratio {r}");
        }
    }

    #[test]
    fn coded_form_round_trips() {
        let mut out = Vec::new();
        coded_form(&mut out, b"hello", 123_456, 150);
        out.resize(64, 0);
        assert_eq!(parse_coded(&out), Some((&b"hello"[..], 123_456, 150)));
        out[1] = 200; // longer than the symbol
        assert_eq!(parse_coded(&out), None);
        assert_eq!(parse_coded(&out[..3]), None);
    }
}
