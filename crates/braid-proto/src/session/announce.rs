//! The client's repeated messages: its first handshake message until the server answers
//! (PROTOCOL.md §13.2), and its path announcements until each is echoed, renewed as a
//! keep-alive (§13.6).

use std::time::Duration;

use crate::Instant;

/// Path announcements are repeated this often until the server echoes them.
pub const HELLO_INTERVAL: Duration = Duration::from_millis(250);

/// A client announces its paths again this often (PROTOCOL.md §13.6): 34 bytes per path.
pub const REANNOUNCE: Duration = Duration::from_secs(2);

/// A path whose core packets stopped this long ago, after coming within [`PAD_WITHIN`], has its
/// announcements padded (§13.6).
pub const PAD_AFTER: Duration = Duration::from_millis(500);

/// How recent the path's last core packet must be for its silence to pad announcements: an
/// idle connection's keep-alives stay 34 bytes.
pub const PAD_WITHIN: Duration = Duration::from_secs(10);

/// The first handshake message's schedule: sent at once, then again after 100 ms, doubling up
/// to one every second, until an answer comes (the caller stops asking then).
#[derive(Debug, Clone)]
pub struct Repeater {
    next: Instant,
    attempts: u32,
}

impl Repeater {
    pub fn new(now: Instant) -> Repeater {
        Repeater { next: now, attempts: 0 }
    }

    /// Whether the message goes out now; if it does, the next repeat is scheduled.
    pub fn poll(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.attempts += 1;
        self.next = now + Duration::from_millis(50 << self.attempts.min(5)).min(Duration::from_secs(1));
        true
    }

    /// When [`Repeater::poll`] next says yes.
    pub fn next(&self) -> Instant {
        self.next
    }

    /// Times the message went out.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// The client's path announcements (PROTOCOL.md §13.6): once the keys exist, every path is
/// announced every [`HELLO_INTERVAL`] until the server echoes it on that path, and every
/// [`REANNOUNCE`] all paths are announced again. The renewal is the keep-alive a client that
/// only receives needs: after a NAT rebinding the server would otherwise never learn its new
/// address. Counters count every announcement sent, so each is fresh to the server's replay
/// window.
///
/// A path whose traffic stopped ([`Announcer::pads`]) has its announcements padded to
/// [`MAX_HELLO_LEN`](super::crypto::MAX_HELLO_LEN) bytes: if the NAT moved, the first datagram
/// the server gets from the new address is such an announcement, and the server may send that
/// address 3× what it received before the address answers a challenge (§13.8). 34 bytes open
/// room for no data packet; 1,200 open room for two or three at once, a round trip before the
/// challenge's answer.
#[derive(Debug, Clone)]
pub struct Announcer {
    acked: Vec<bool>,
    next: Instant,
    reannounce: Instant,
    counter: u64,
    /// Per path, when its last core packet came.
    heard: Vec<Option<Instant>>,
}

impl Announcer {
    pub fn new(paths: usize, now: Instant) -> Announcer {
        Announcer {
            acked: vec![false; paths],
            next: now,
            reannounce: now + REANNOUNCE,
            counter: 0,
            heard: vec![None; paths],
        }
    }

    /// A core packet came on `path`.
    pub fn on_packet(&mut self, path: usize, now: Instant) {
        if let Some(h) = self.heard.get_mut(path) {
            *h = Some(now);
        }
    }

    /// Whether an announcement of `path` sent now is padded: the path's core packets stopped
    /// [`PAD_AFTER`] ago or more, having come within [`PAD_WITHIN`] (traffic that stops at
    /// once is what a NAT that moved looks like to the client).
    pub fn pads(&self, path: usize, now: Instant) -> bool {
        let heard = self.heard.get(path).copied().flatten();
        heard.is_some_and(|h| now >= h + PAD_AFTER && now < h + PAD_WITHIN)
    }

    /// The keys exist: announce at the next poll.
    pub fn start(&mut self, now: Instant) {
        self.next = now;
    }

    fn unacked(&self) -> bool {
        self.acked.iter().any(|a| !a)
    }

    /// Whether [`Announcer::poll`] has something to send at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        (now >= self.next && self.unacked()) || now >= self.reannounce
    }

    /// When the next announcement is due.
    pub fn timeout(&self) -> Instant {
        if self.unacked() {
            self.next.min(self.reannounce)
        } else {
            self.reannounce
        }
    }

    /// The announcements to send now, as (path, counter), into `out`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<(u8, u64)>) {
        if now >= self.reannounce {
            self.acked.fill(false);
            self.next = now;
            self.reannounce = now + REANNOUNCE;
        }
        if now < self.next || !self.unacked() {
            return;
        }
        for (p, acked) in self.acked.iter().enumerate() {
            if !acked {
                out.push((p as u8, self.counter));
                self.counter += 1;
            }
        }
        self.next = now + HELLO_INTERVAL;
    }

    /// The server echoed the announcement of `path` on that path.
    pub fn on_echo(&mut self, path: usize) {
        if let Some(a) = self.acked.get_mut(path) {
            *a = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// The first message's repeats when the first four are lost: at 0, 100, 300, 700 ms; the
    /// fifth (1.5 s) gets through; and the gap never passes a second.
    #[test]
    fn a_lost_first_message_is_repeated_with_backoff() {
        let mut r = Repeater::new(ms(0));
        let mut sent = Vec::new();
        for t in 0..10_000 {
            if r.poll(ms(t)) {
                sent.push(t);
            }
        }
        assert_eq!(&sent[..7], [0, 100, 300, 700, 1500, 2500, 3500]);
        assert!(sent.windows(2).all(|w| w[1] - w[0] <= 1000));
        assert_eq!(r.attempts() as usize, sent.len());
        assert!(r.next() > ms(9_999));
    }

    /// Announcements on a lossy return path: path 1's echo is lost twice, so it is announced
    /// again every 250 ms until one arrives; path 0 is announced once. After 2 s both are
    /// announced again (the keep-alive), with fresh counters.
    #[test]
    fn announcements_repeat_until_echoed_and_renew() {
        let mut a = Announcer::new(2, ms(0));
        assert!(a.is_due(ms(0)));
        let mut log = Vec::new();
        let mut out = Vec::new();
        let mut echoes_lost = 2;
        for t in (0..2_600).step_by(10) {
            let now = ms(t);
            if !a.is_due(now) {
                assert!(a.timeout() > now);
                continue;
            }
            out.clear();
            a.poll(now, &mut out);
            for &(p, counter) in &out {
                log.push((t, p, counter));
                if p == 1 && echoes_lost > 0 {
                    echoes_lost -= 1;
                } else {
                    a.on_echo(p.into());
                }
            }
        }
        assert_eq!(log, [(0, 0, 0), (0, 1, 1), (250, 1, 2), (500, 1, 3), (2000, 0, 4), (2000, 1, 5)]);
        assert!(!a.is_due(ms(2_599)));
        assert_eq!(a.timeout(), ms(4_000));
    }

    /// Announcements are padded only on a path whose core packets stopped: from 500 ms after the
    /// last one until 10 s after it; never on a path never heard on, nor on another path.
    #[test]
    fn announcements_are_padded_while_traffic_has_stopped() {
        let mut a = Announcer::new(2, ms(0));
        assert!(!a.pads(0, ms(0)) && !a.pads(0, ms(60_000)), "never heard on: an idle keep-alive");
        a.on_packet(0, ms(1_000));
        let padded: Vec<u64> = (0..12_000).step_by(100).filter(|&t| a.pads(0, ms(t))).collect();
        assert_eq!((padded[0], *padded.last().unwrap()), (1_500, 10_900));
        assert_eq!(padded.len(), 95, "every 100 ms from 1.5 s to 10.9 s");
        assert!(!a.pads(1, ms(5_000)), "the other path was not heard on");
        a.on_packet(0, ms(5_000));
        assert!(!a.pads(0, ms(5_400)), "traffic again");
        assert!(a.pads(0, ms(5_500)));
        assert!(!a.pads(7, ms(5_500)), "no such path");
    }
}
