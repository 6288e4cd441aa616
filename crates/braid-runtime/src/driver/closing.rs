//! Connections this end closed, once their state is freed (RFC 9000 §10.2.1's closing state).
//!
//! A CLOSE goes out once with the connection's last packets; if it is lost, the peer holds the
//! whole connection (buffers, decoders, a slot under its `max_connections`) until its idle
//! timeout. So the driver keeps, for the core's closing period (three probe timeouts), only
//! the sealed CLOSE datagram and where it goes: it sends it again after one and two probe
//! timeouts, and in answer to a datagram that still arrives for the connection (at most one
//! answer per quarter probe timeout, [`MAX_ANSWERS`] in all). The same bytes go each time, as
//! RFC 9000 §10.2.1 allows for the closing packet; the peer drops the copies after the first
//! as replays. The proactive repeats are braid's (QUIC answers only what arrives; docs/DEVIATIONS.md).
//!
//! The end that received a CLOSE keeps nothing (RFC 9000's draining state costs no state
//! here): a later datagram for a connection id the driver does not know is dropped, and only a
//! first message creates a connection.
//!
//! A closing record is some 100 bytes, counted apart from the live connections (it never holds
//! a slot under `max_connections`) and bounded on its own: at most as many as the server's `max_connections` (one for a client);
//! past it the one closest to its end is forgotten (its peer falls back on its idle timeout).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::wire::ConnectionId;
use braid_proto::Instant;

/// Answers to datagrams arriving for one closed connection, at most.
pub(super) const MAX_ANSWERS: u32 = 8;

/// The sealed CLOSE of one connection and when it goes again.
#[derive(Debug, Clone)]
pub(super) struct Record {
    /// The socket it leaves on and its destination.
    pub socket: usize,
    pub to: SocketAddr,
    pub datagram: Vec<u8>,
    /// One probe timeout (a third of the closing period).
    pto: Duration,
    /// The next proactive repeat (`None`: both sent).
    repeat: Option<Instant>,
    repeats: u32,
    /// The latest copy sent, and the answers so far.
    last_sent: Instant,
    answers: u32,
    until: Instant,
}

impl Record {
    /// The CLOSE just sent at `now`; `period` is the core's closing period.
    pub(super) fn new(
        socket: usize,
        to: SocketAddr,
        datagram: Vec<u8>,
        now: Instant,
        period: Duration,
    ) -> Record {
        let pto = period / 3;
        Record {
            socket,
            to,
            datagram,
            pto,
            repeat: Some(now + pto),
            repeats: 0,
            last_sent: now,
            answers: 0,
            until: now + period,
        }
    }
}

/// The closing records of one driver.
#[derive(Debug)]
pub(super) struct Closing {
    records: HashMap<ConnectionId, Record>,
    limit: usize,
}

impl Closing {
    pub(super) fn new(limit: usize) -> Closing {
        Closing { records: HashMap::new(), limit: limit.max(1) }
    }

    pub(super) fn len(&self) -> usize {
        self.records.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    #[cfg(test)]
    fn contains(&self, cid: &ConnectionId) -> bool {
        self.records.contains_key(cid)
    }

    /// Keeps `record` for `cid`; at the bound, the record closest to its end goes first.
    pub(super) fn insert(&mut self, cid: ConnectionId, record: Record) {
        if self.records.len() >= self.limit && !self.records.contains_key(&cid) {
            if let Some(oldest) = self.records.iter().min_by_key(|(_, r)| r.until).map(|(c, _)| *c) {
                self.records.remove(&oldest);
            }
        }
        self.records.insert(cid, record);
    }

    /// A datagram arrived for `cid`, a closed connection: the CLOSE to send in answer, if one
    /// is allowed now.
    pub(super) fn answer(&mut self, cid: &ConnectionId, now: Instant) -> Option<&Record> {
        let r = self.records.get_mut(cid)?;
        if r.answers >= MAX_ANSWERS || now < r.last_sent + r.pto / 4 {
            return None;
        }
        r.answers += 1;
        r.last_sent = now;
        Some(r)
    }

    /// The repeats due at `now` (each record's CLOSE, cloned out to send), and the records
    /// whose closing period is over forgotten.
    pub(super) fn due(&mut self, now: Instant) -> Vec<(usize, SocketAddr, Vec<u8>)> {
        self.records.retain(|_, r| r.until > now);
        let mut out = Vec::new();
        for r in self.records.values_mut() {
            if r.repeat.is_some_and(|t| t <= now) {
                out.push((r.socket, r.to, r.datagram.clone()));
                r.repeats += 1;
                r.last_sent = now;
                r.repeat = (r.repeats < 2).then_some(now + r.pto);
            }
        }
        out
    }

    /// The next repeat or end of a closing period.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.records.values().map(|r| r.repeat.map_or(r.until, |t| t.min(r.until))).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn record(now: Instant) -> Record {
        Record::new(0, "127.0.0.1:9".parse().unwrap(), vec![7; 40], now, Duration::from_millis(300))
    }

    /// The CLOSE goes again after one and two probe timeouts; the record ends after three.
    #[test]
    fn repeats_twice_then_forgets() {
        let mut c = Closing::new(4);
        c.insert(ConnectionId([1; 8]), record(at(0)));
        assert_eq!(c.deadline(), Some(at(100)));
        assert!(c.due(at(99)).is_empty());
        assert_eq!(c.due(at(100)).len(), 1);
        assert_eq!(c.deadline(), Some(at(200)));
        assert_eq!(c.due(at(200)).len(), 1);
        assert_eq!(c.deadline(), Some(at(300)), "no third repeat: only the end");
        assert!(c.due(at(299)).is_empty());
        assert!(c.due(at(300)).is_empty());
        assert!(c.is_empty());
        assert_eq!(c.deadline(), None);
    }

    /// Datagrams still arriving get the CLOSE again, spaced and bounded.
    #[test]
    fn answers_are_spaced_and_bounded() {
        let mut c = Closing::new(4);
        let cid = ConnectionId([1; 8]);
        c.insert(cid, record(at(0)));
        assert!(c.answer(&cid, at(10)).is_none(), "just sent");
        assert!(c.answer(&cid, at(25)).is_some());
        assert!(c.answer(&cid, at(30)).is_none());
        let mut answered = 1;
        for ms in 50..300 {
            if c.answer(&cid, at(ms)).is_some() {
                answered += 1;
            }
        }
        assert_eq!(answered, MAX_ANSWERS);
        assert!(c.answer(&ConnectionId([2; 8]), at(50)).is_none(), "unknown connection");
    }

    /// The bound holds: a new record past it pushes out the one closest to its end.
    #[test]
    fn bounded_apart_from_connections() {
        let mut c = Closing::new(2);
        c.insert(ConnectionId([1; 8]), record(at(0)));
        c.insert(ConnectionId([2; 8]), record(at(10)));
        c.insert(ConnectionId([3; 8]), record(at(20)));
        assert_eq!(c.len(), 2);
        assert!(!c.contains(&ConnectionId([1; 8])));
        assert!(c.contains(&ConnectionId([3; 8])));
    }
}
