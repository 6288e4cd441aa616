//! Connections this end closed, once their state is freed (RFC 9000 §10.2.1's closing state),
//! with no I/O and no clock.
//!
//! A CLOSE goes out once with the connection's last packets; if it is lost, the peer holds the
//! whole connection (buffers, decoders, a slot under its `max_connections`) until its idle
//! timeout. So an endpoint keeps, for the core's closing period (three probe timeouts), only
//! the sealed CLOSE datagram and where it goes ([`SentClose`], which the connection's
//! [`Session`](super::Session) records as it sends it): the CLOSE goes again after one and two
//! probe timeouts, and in answer to a datagram that still arrives for the connection (at most
//! one answer per quarter probe timeout, [`MAX_ANSWERS`] in all). The same bytes go each time,
//! as RFC 9000 §10.2.1 allows for the closing packet; the peer drops the copies after the first
//! as replays. The proactive repeats are braid's (QUIC answers only what arrives;
//! docs/DEVIATIONS.md).
//!
//! The end that received a CLOSE keeps nothing (RFC 9000's draining state costs no state
//! here): a later datagram for a connection id the endpoint does not know is dropped, and only
//! a first message creates a connection.
//!
//! A closing record is some 100 bytes, counted apart from the live connections (it never holds
//! a slot under `max_connections`) and bounded on its own ([`Closing::new`]'s limit: a server's
//! `max_connections`, one for a client); past it the one closest to its end is forgotten (its
//! peer falls back on its idle timeout).
//!
//! Driven like a connection: [`Closing::handle_datagram`] and [`Closing::handle_timeout`] in,
//! [`Closing::poll_transmit`] and [`Closing::poll_timeout`] out. Each call costs what is due,
//! not what is kept: the records' next events (a repeat or the end) are kept in time order,
//! and so are their ends (the bound pushes out the earliest).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use crate::wire::ConnectionId;
use crate::Instant;

use super::SecureTransmit;

/// Answers to datagrams arriving for one closed connection, at most.
pub const MAX_ANSWERS: u32 = 8;

/// The sealed CLOSE a connection's session sent, and what the closing period needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentClose {
    /// The path it left on (the client's socket for that path) and its destination.
    pub path: u8,
    pub to: SocketAddr,
    pub datagram: Vec<u8>,
    /// When it was sent, and the core's closing period from then.
    pub sent: Instant,
    pub period: Duration,
}

/// One closed connection: its CLOSE and when it goes again.
#[derive(Debug, Clone)]
struct Record {
    close: SentClose,
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
    fn new(close: SentClose) -> Record {
        let (now, period) = (close.sent, close.period);
        let pto = period / 3;
        Record {
            close,
            pto,
            repeat: Some(now + pto),
            repeats: 0,
            last_sent: now,
            answers: 0,
            until: now + period,
        }
    }

    /// When [`Closing::handle_timeout`] has something to do for the record: its next repeat
    /// or its end.
    fn next(&self) -> Instant {
        self.repeat.map_or(self.until, |t| t.min(self.until))
    }
}

/// A record's place in a time-ordered set: the time, then the connection id.
type Entry = (Instant, [u8; 8]);

/// The closing records of one endpoint (see the module's documentation).
#[derive(Debug)]
pub struct Closing {
    records: HashMap<ConnectionId, Record>,
    limit: usize,
    /// Connections whose CLOSE is due to go (a repeat or an answer), in order.
    due: VecDeque<ConnectionId>,
    /// Every record's [`Record::next`], earliest first.
    timers: BTreeSet<Entry>,
    /// Every record's end, earliest first (the bound pushes out the first).
    ends: BTreeSet<Entry>,
    /// The entries due in a [`Closing::handle_timeout`] (kept to spare an allocation).
    firing: Vec<Entry>,
}

impl Closing {
    /// At most `limit` records (at least one).
    pub fn new(limit: usize) -> Closing {
        Closing {
            records: HashMap::new(),
            limit: limit.max(1),
            due: VecDeque::new(),
            timers: BTreeSet::new(),
            ends: BTreeSet::new(),
            firing: Vec::new(),
        }
    }

    /// Closed connections in their closing period.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn contains(&self, cid: &ConnectionId) -> bool {
        self.records.contains_key(cid)
    }

    /// Keeps `close`, the CLOSE connection `cid` just sent; at the bound, the record closest to
    /// its end goes first.
    pub fn insert(&mut self, cid: ConnectionId, close: SentClose) {
        self.remove(&cid);
        if self.records.len() >= self.limit {
            if let Some(&(_, oldest)) = self.ends.first() {
                self.remove(&ConnectionId(oldest));
            }
        }
        let record = Record::new(close);
        self.timers.insert((record.next(), cid.0));
        self.ends.insert((record.until, cid.0));
        self.records.insert(cid, record);
    }

    /// Forgets connection `cid`'s record, if there is one.
    fn remove(&mut self, cid: &ConnectionId) {
        if let Some(r) = self.records.remove(cid) {
            self.timers.remove(&(r.next(), cid.0));
            self.ends.remove(&(r.until, cid.0));
        }
    }

    /// A datagram arrived that no live connection took, for connection `cid` (its destination
    /// connection id, or a client's own for a packet without one): if that connection is closed
    /// and its CLOSE may be answered now, the CLOSE is queued (true).
    pub fn handle_datagram(&mut self, now: Instant, cid: Option<ConnectionId>) -> bool {
        let Some(cid) = cid else { return false };
        let Some(r) = self.records.get_mut(&cid) else { return false };
        if r.answers >= MAX_ANSWERS || now < r.last_sent + r.pto / 4 {
            return false;
        }
        r.answers += 1;
        r.last_sent = now;
        self.due.push_back(cid);
        true
    }

    /// Forgets the records whose closing period is over at `now` and queues the repeats due.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Taken out first: a record's next event after a repeat may be `now` again (a zero
        // probe timeout), and is handled at the next call, not in a loop here.
        while let Some(&(t, cid)) = self.timers.first().filter(|(t, _)| *t <= now) {
            self.timers.remove(&(t, cid));
            self.firing.push((t, cid));
        }
        let mut firing = std::mem::take(&mut self.firing);
        for (_, cid) in firing.drain(..) {
            let cid = ConnectionId(cid);
            let Some(r) = self.records.get_mut(&cid) else { continue };
            if r.until <= now {
                self.ends.remove(&(r.until, cid.0));
                self.records.remove(&cid);
                continue;
            }
            // Not over, so the entry was the repeat's.
            self.due.push_back(cid);
            r.repeats += 1;
            r.last_sent = now;
            r.repeat = (r.repeats < 2).then_some(now + r.pto);
            self.timers.insert((r.next(), cid.0));
        }
        self.firing = firing;
    }

    /// The next queued CLOSE, copied into `buf`.
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<SecureTransmit> {
        while let Some(cid) = self.due.pop_front() {
            // Forgotten since it was queued (pushed out by the bound): nothing to send.
            let Some(r) = self.records.get(&cid) else { continue };
            buf.clear();
            buf.extend_from_slice(&r.close.datagram);
            return Some(SecureTransmit { path: r.close.path, to: r.close.to, size: buf.len() });
        }
        None
    }

    /// The next repeat or end of a closing period.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|&(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::crypto::init_cid;
    use crate::wire::{DatagramType, PacketType, PREFIX_LEN};

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn close(now: Instant) -> SentClose {
        SentClose {
            path: 1,
            to: "127.0.0.1:9".parse().unwrap(),
            datagram: vec![7; 40],
            sent: now,
            period: Duration::from_millis(300),
        }
    }

    /// A datagram for connection `c` (its id after the first byte).
    fn for_cid(c: u8) -> Vec<u8> {
        let mut d = vec![0; PREFIX_LEN + 20];
        DatagramType::Packet(PacketType::Initial).write_prefix(ConnectionId([c; 8]), &mut d);
        d
    }

    /// What is queued, drained.
    fn sent(c: &mut Closing) -> Vec<SecureTransmit> {
        let mut buf = Vec::new();
        std::iter::from_fn(|| {
            let t = c.poll_transmit(&mut buf)?;
            assert_eq!(buf, vec![7; 40], "the same sealed bytes each time");
            Some(t)
        })
        .collect()
    }

    /// The CLOSE goes again after one and two probe timeouts; the record ends after three.
    #[test]
    fn repeats_twice_then_forgets() {
        let mut c = Closing::new(4);
        c.insert(ConnectionId([1; 8]), close(at(0)));
        assert_eq!(c.poll_timeout(), Some(at(100)));
        c.handle_timeout(at(99));
        assert!(sent(&mut c).is_empty());
        c.handle_timeout(at(100));
        let repeat = sent(&mut c);
        assert_eq!(repeat.len(), 1);
        assert_eq!((repeat[0].path, repeat[0].to, repeat[0].size), (1, "127.0.0.1:9".parse().unwrap(), 40));
        assert_eq!(c.poll_timeout(), Some(at(200)));
        c.handle_timeout(at(200));
        assert_eq!(sent(&mut c).len(), 1);
        assert_eq!(c.poll_timeout(), Some(at(300)), "no third repeat: only the end");
        c.handle_timeout(at(299));
        assert!(sent(&mut c).is_empty());
        c.handle_timeout(at(300));
        assert!(sent(&mut c).is_empty());
        assert!(c.is_empty());
        assert_eq!(c.poll_timeout(), None);
    }

    /// Datagrams still arriving get the CLOSE again, spaced and bounded.
    #[test]
    fn answers_are_spaced_and_bounded() {
        let mut c = Closing::new(4);
        c.insert(ConnectionId([1; 8]), close(at(0)));
        assert!(!c.handle_datagram(at(10), init_cid(&for_cid(1))), "just sent");
        assert!(c.handle_datagram(at(25), init_cid(&for_cid(1))));
        assert_eq!(sent(&mut c).len(), 1);
        assert!(!c.handle_datagram(at(30), init_cid(&for_cid(1))));
        let mut answered = 1;
        for ms in 50..300 {
            if c.handle_datagram(at(ms), init_cid(&for_cid(1))) {
                answered += 1;
            }
        }
        assert_eq!(answered, MAX_ANSWERS);
        assert_eq!(sent(&mut c).len(), MAX_ANSWERS as usize - 1);
        assert!(!c.handle_datagram(at(50), init_cid(&for_cid(2))), "unknown connection");
        assert!(!c.handle_datagram(at(50), init_cid(&for_cid(1)[..3])), "too short for a connection id");
    }

    /// The bound holds: a new record past it pushes out the one closest to its end, and a CLOSE
    /// queued for a record pushed out is not sent.
    #[test]
    fn bounded_apart_from_connections() {
        let mut c = Closing::new(2);
        c.insert(ConnectionId([1; 8]), close(at(0)));
        c.insert(ConnectionId([2; 8]), close(at(10)));
        assert!(c.handle_datagram(at(30), init_cid(&for_cid(1))));
        c.insert(ConnectionId([3; 8]), close(at(20)));
        assert_eq!(c.len(), 2);
        assert!(!c.contains(&ConnectionId([1; 8])));
        assert!(c.contains(&ConnectionId([3; 8])));
        assert!(sent(&mut c).is_empty(), "the answer's record is gone");
    }

    /// What the records did before they were kept in time order: every call scanned them all.
    /// The reference for [`time_ordered_records_do_what_a_full_scan_would`].
    #[derive(Default)]
    struct Scan {
        records: HashMap<ConnectionId, Record>,
        due: Vec<ConnectionId>,
    }

    impl Scan {
        fn insert(&mut self, cid: ConnectionId, close: SentClose, limit: usize) {
            if self.records.len() >= limit && !self.records.contains_key(&cid) {
                let oldest = self.records.iter().min_by_key(|(c, r)| (r.until, c.0)).map(|(c, _)| *c);
                self.records.remove(&oldest.expect("full"));
            }
            self.records.insert(cid, Record::new(close));
        }

        fn handle_datagram(&mut self, now: Instant, cid: ConnectionId) -> bool {
            let Some(r) = self.records.get_mut(&cid) else { return false };
            if r.answers >= MAX_ANSWERS || now < r.last_sent + r.pto / 4 {
                return false;
            }
            r.answers += 1;
            r.last_sent = now;
            self.due.push(cid);
            true
        }

        fn handle_timeout(&mut self, now: Instant) {
            self.records.retain(|_, r| r.until > now);
            for (cid, r) in &mut self.records {
                if r.repeat.is_some_and(|t| t <= now) {
                    self.due.push(*cid);
                    r.repeats += 1;
                    r.last_sent = now;
                    r.repeat = (r.repeats < 2).then_some(now + r.pto);
                }
            }
        }

        /// The connections whose CLOSE goes now, sorted (a scan's order is the map's).
        fn sent(&mut self) -> Vec<u8> {
            let mut ids: Vec<u8> =
                self.due.drain(..).filter(|c| self.records.contains_key(c)).map(|c| c.0[0]).collect();
            ids.sort_unstable();
            ids
        }

        fn poll_timeout(&self) -> Option<Instant> {
            self.records.values().map(Record::next).min()
        }
    }

    /// Random closes (periods from 0 to 400 ms, some connections closing again), datagrams for
    /// them and rounds at random times, past the bound: after every step the time-ordered
    /// records answer, send, forget and wake up exactly as a scan of all of them would.
    #[test]
    fn time_ordered_records_do_what_a_full_scan_would() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let limit = 24;
        let mut c = Closing::new(limit);
        let mut scan = Scan::default();
        let mut now = at(0);
        let (mut sends, mut forgotten) = (0, 0);
        for step in 0..20_000 {
            now += Duration::from_micros(rand(20_000));
            let cid = ConnectionId([rand(40) as u8; 8]);
            match rand(4) {
                0 => {
                    let mut close = close(now);
                    close.period = Duration::from_millis(rand(401));
                    close.to.set_port(u16::from(cid.0[0]));
                    c.insert(cid, close.clone());
                    scan.insert(cid, close, limit);
                }
                1 => {
                    let d = for_cid(cid.0[0]);
                    assert_eq!(
                        c.handle_datagram(now, init_cid(&d)),
                        scan.handle_datagram(now, cid),
                        "step {step}"
                    );
                }
                _ => {
                    let before = c.len();
                    c.handle_timeout(now);
                    scan.handle_timeout(now);
                    forgotten += before - c.len();
                }
            }
            let mut buf = Vec::new();
            let mut ids: Vec<u8> =
                std::iter::from_fn(|| c.poll_transmit(&mut buf)).map(|t| t.to.port() as u8).collect();
            ids.sort_unstable();
            sends += ids.len();
            assert_eq!(ids, scan.sent(), "step {step}: the CLOSEs sent");
            assert_eq!(c.poll_timeout(), scan.poll_timeout(), "step {step}: the next wake-up");
            assert_eq!(c.len(), scan.records.len(), "step {step}");
            assert!(scan.records.keys().all(|k| c.contains(k)), "step {step}: the same records");
            assert_eq!((c.timers.len(), c.ends.len()), (c.len(), c.len()), "one entry of each per record");
        }
        assert!(
            sends > 1_000 && forgotten > 1_000,
            "the steps exercised it: {sends} sent, {forgotten} ended"
        );
    }
}
