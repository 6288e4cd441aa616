//! New-address validation and anti-amplification (PROTOCOL.md §13.6, §13.8; RFC 9000 §8.1,
//! §8.2 and §9.3), as the server keeps it for each path of a connection.

use std::net::SocketAddr;
use std::time::Duration;

use crate::Instant;

/// Most bytes sent to an unvalidated address per byte received from it (RFC 9000 §8.1).
pub const AMPLIFICATION: u64 = 3;

/// A path announcement whose counter has this bit is the server's challenge to a new address
/// (PROTOCOL.md §13.8); the client's own counters stay below it.
pub const CHALLENGE_BIT: u64 = 1 << 55;

/// A challenge is repeated this often while its address is on probation and the budget allows.
pub const CHALLENGE_INTERVAL: Duration = Duration::from_millis(250);

/// A path's new address before the peer proved it is there (NAT rebinding, or a forger): it is
/// sent at most [`AMPLIFICATION`] × the bytes that came from it and challenged with a fresh
/// random token; the peer's sealed echo of the token, from that address, validates it
/// (RFC 9000 §8.2's PATH_CHALLENGE / PATH_RESPONSE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probation {
    pub addr: SocketAddr,
    /// Bytes received from `addr` since it went on probation.
    pub received: u64,
    /// Bytes sent to `addr` since, challenges included.
    pub sent: u64,
    /// The challenge's counter: [`CHALLENGE_BIT`] set, random bits below it.
    pub token: u64,
    pub next_challenge: Instant,
    /// Whether what was in flight when the path moved went again to `addr` (see
    /// [`PathAddress::resend_due`]).
    pub resent: bool,
}

impl Probation {
    /// `random`: any random number (it makes the token); `received`: the bytes that came.
    fn new(addr: SocketAddr, received: usize, random: u64, now: Instant) -> Probation {
        let token = (random % CHALLENGE_BIT) | CHALLENGE_BIT;
        Probation { addr, received: received as u64, sent: 0, token, next_challenge: now, resent: false }
    }

    /// Whether `len` more bytes fit the budget (nothing is counted).
    pub fn fits(&self, len: usize) -> bool {
        self.sent + len as u64 <= AMPLIFICATION * self.received
    }

    /// Whether `len` more bytes fit the budget; if they do, they are counted as sent.
    pub fn try_send(&mut self, len: usize) -> bool {
        if !self.fits(len) {
            return false;
        }
        self.sent += len as u64;
        true
    }
}

/// The server's knowledge of where one path of a client is: the address it sends to, the
/// last address the peer proved it receives at, and a new address on probation.
#[derive(Debug, Clone, Default)]
pub struct PathAddress {
    /// Where the path's packets go: the source of its newest authenticated packet.
    remote: Option<SocketAddr>,
    /// The address the peer last proved it is at (the handshake's for path 0, the first
    /// announcement's for the others, else an answered challenge).
    validated: Option<SocketAddr>,
    probation: Option<Probation>,
    /// Highest packet number accepted on the path: only a newer packet moves the address, so
    /// a delayed or reordered one from the old address does not move it back.
    top: Option<u64>,
}

impl PathAddress {
    /// A path whose peer proved it is at `addr` (path 0 after the handshake: the client's first
    /// sealed packet needs the answer sent there).
    pub fn validated(addr: SocketAddr) -> PathAddress {
        PathAddress { remote: Some(addr), validated: Some(addr), ..PathAddress::default() }
    }

    /// Where the path's packets go now.
    pub fn remote(&self) -> Option<SocketAddr> {
        self.remote
    }

    pub fn probation(&self) -> Option<&Probation> {
        self.probation.as_ref()
    }

    /// Whether the server's challenge is due.
    pub fn challenge_due(&self, now: Instant) -> bool {
        self.probation.as_ref().is_some_and(|p| now >= p.next_challenge)
    }

    /// When a challenge of `len` bytes is next due: never while the budget has no room for
    /// it (only bytes from the address make room, and they come with a call of their own).
    pub fn challenge_at(&self, len: usize) -> Option<Instant> {
        self.probation.as_ref().filter(|p| p.fits(len)).map(|p| p.next_challenge)
    }

    /// An authenticated, fresh core packet numbered `number` (`len` bytes) came from `from`.
    /// Returns the address the path left, if it moved away from one. `random` is asked for a
    /// challenge's token when a new address goes on probation.
    pub fn on_packet(
        &mut self,
        from: SocketAddr,
        number: u64,
        len: usize,
        random: impl FnOnce() -> u64,
        now: Instant,
    ) -> Option<SocketAddr> {
        if let Some(p) = self.probation.as_mut().filter(|p| p.addr == from) {
            p.received += len as u64;
        }
        let newest = self.top.is_none_or(|t| number > t);
        self.top = Some(self.top.map_or(number, |t| t.max(number)));
        if !newest || self.remote == Some(from) {
            return None;
        }
        let old = self.remote;
        if self.validated.is_none() {
            self.validated = Some(from);
        } else if self.validated != Some(from) {
            self.probation = Some(Probation::new(from, len, random(), now));
        } else {
            self.probation = None;
        }
        self.remote = Some(from);
        old
    }

    /// An authenticated, fresh path announcement (`len` bytes) came from `from`: a path's first
    /// announcement validates its address (sent by the key holder, like the handshake); a later
    /// one from elsewhere puts the new address on probation. Like every byte from the address
    /// on probation, it widens that address's budget (RFC 9000 §8.1): a client that only
    /// announces itself gets challenged again after earlier challenges were lost.
    pub fn on_announcement(
        &mut self,
        from: SocketAddr,
        len: usize,
        random: impl FnOnce() -> u64,
        now: Instant,
    ) {
        if let Some(p) = self.probation.as_mut().filter(|p| p.addr == from) {
            p.received += len as u64;
        }
        if self.validated.is_none() {
            self.validated = Some(from);
        } else if self.remote != Some(from) {
            self.probation = Some(Probation::new(from, len, random(), now));
        }
        self.remote = Some(from);
    }

    /// An authenticated echo of a challenge (`len` bytes, its counter `token`) came from
    /// `from`; returns whether it validated the address on probation.
    pub fn on_challenge_echo(&mut self, from: SocketAddr, token: u64, len: usize) -> bool {
        let Some(p) = &mut self.probation else { return false };
        p.received += len as u64;
        if p.token != token || p.addr != from {
            return false;
        }
        self.validated = Some(from);
        self.probation = None;
        true
    }

    /// Whether `len` bytes may go to `to` now (counted against the budget if it is on
    /// probation).
    pub fn try_send(&mut self, to: SocketAddr, len: usize) -> bool {
        match self.probation.as_mut().filter(|p| p.addr == to) {
            Some(p) => p.try_send(len),
            None => true,
        }
    }

    /// Whether what the core holds in flight on the path should go again now, to the address on
    /// probation: once per probation, at the first moment its budget has room for `len` more
    /// bytes (a packet). Before that, presuming the flight lost would only swap packets sent to
    /// the old address for packets held back by the budget, each counted lost again at the
    /// challenge's answer. With room, the new address gets data a round trip before the answer.
    pub fn resend_due(&mut self, len: usize) -> bool {
        match self.probation.as_mut().filter(|p| !p.resent && p.fits(len)) {
            Some(p) => {
                p.resent = true;
                true
            }
            None => false,
        }
    }

    /// The challenge to send now, if one is due and its `len` bytes fit the budget: the address
    /// and the token to seal. The next one is due [`CHALLENGE_INTERVAL`] later.
    pub fn poll_challenge(&mut self, now: Instant, len: usize) -> Option<(SocketAddr, u64)> {
        let p = self.probation.as_mut().filter(|p| now >= p.next_challenge)?;
        if !p.try_send(len) {
            return None;
        }
        p.next_challenge = now + CHALLENGE_INTERVAL;
        Some((p.addr, p.token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: usize = 34;
    const PACKET: usize = 1200;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    /// A NAT rebinding in the middle of a download: the client's packets start coming from a
    /// new port. The server follows at once, but sends the new port no more than 3× what came
    /// from it until the port answers a challenge; then the download goes on at full rate.
    #[test]
    fn rebinding_mid_transfer_is_followed_within_the_budget_then_validated() {
        let t0 = Instant::from_micros(1_000_000);
        let mut path = PathAddress::validated(addr(1000));
        for n in 0..100 {
            assert_eq!(path.on_packet(addr(1000), n, 60, || 7, t0), None);
            assert!(path.try_send(addr(1000), PACKET), "a validated address has no budget");
        }
        let t1 = t0 + Duration::from_millis(500);
        // The NAT moved the client: an ACK-sized packet from the new port.
        assert_eq!(path.on_packet(addr(2000), 100, 60, || 7, t1), Some(addr(1000)));
        assert_eq!(path.remote(), Some(addr(2000)));
        assert!(path.challenge_due(t1));
        let (to, token) = path.poll_challenge(t1, HELLO).expect("a challenge fits 3 x 60 bytes");
        assert_eq!(to, addr(2000));
        assert_ne!(token & CHALLENGE_BIT, 0);
        assert!(!path.challenge_due(t1), "the next one waits its interval");
        // 180 bytes of budget, 34 spent on the challenge: no full packet fits yet.
        assert!(!path.try_send(addr(2000), PACKET));
        assert!(path.try_send(addr(2000), 100));
        // More ACKs from the new port widen the budget.
        for n in 101..121 {
            path.on_packet(addr(2000), n, 60, || 7, t1);
        }
        let budget = AMPLIFICATION * 21 * 60 - HELLO as u64 - 100;
        assert!(path.try_send(addr(2000), PACKET));
        assert!(!path.try_send(addr(2000), (budget - PACKET as u64 + 1) as usize));
        // A wrong token, or the right one from elsewhere, does not validate.
        assert!(!path.on_challenge_echo(addr(2000), token ^ 1, HELLO));
        assert!(!path.on_challenge_echo(addr(3000), token, HELLO));
        assert!(path.probation().is_some());
        assert!(path.on_challenge_echo(addr(2000), token, HELLO));
        assert!(path.probation().is_none());
        for _ in 0..100 {
            assert!(path.try_send(addr(2000), PACKET), "validated: no budget any more");
        }
    }

    /// A lost challenge is sent again after its interval, as long as the budget allows; a
    /// forger who sent one packet gets a bounded number of bytes, whatever the time.
    #[test]
    fn challenges_repeat_and_stop_at_the_budget() {
        let t0 = Instant::from_micros(0);
        let mut path = PathAddress::validated(addr(1000));
        path.on_packet(addr(1000), 0, 60, || 1, t0);
        path.on_packet(addr(6666), 1, 60, || 2, t0);
        let mut sent = 0;
        let mut t = t0;
        for _ in 0..100 {
            if path.poll_challenge(t, HELLO).is_some() {
                sent += 1;
            }
            t += Duration::from_millis(50);
        }
        assert_eq!(sent, 5, "180 bytes of budget hold five 34-byte challenges");
        let p = path.probation().unwrap();
        assert!(p.sent <= AMPLIFICATION * p.received);
        assert_eq!(path.challenge_at(HELLO), None, "no room: no challenge is due, whatever the time");
    }

    /// The address on probation spent its budget on challenges that were lost; the client's
    /// next announcement from it (it knows nothing of challenges) widens the budget, and the
    /// server challenges again. An announcement from elsewhere widens nothing of it.
    #[test]
    fn an_announcement_from_the_address_on_probation_widens_its_budget() {
        let t0 = Instant::from_micros(0);
        let mut path = PathAddress::validated(addr(1000));
        path.on_announcement(addr(2000), HELLO, || 5, t0);
        let mut t = t0;
        while path.poll_challenge(t, HELLO).is_some() {
            t += CHALLENGE_INTERVAL;
        }
        assert_eq!(path.probation().unwrap().sent, AMPLIFICATION * HELLO as u64, "three challenges");
        assert_eq!(path.challenge_at(HELLO), None);
        path.on_announcement(addr(2000), HELLO, || 5, t);
        assert_eq!(path.probation().unwrap().received, 2 * HELLO as u64);
        assert_eq!(path.challenge_at(HELLO), Some(t), "due again: it was due before the room ran out");
        assert!(path.poll_challenge(t, HELLO).is_some());
        let token = path.probation().unwrap().token;
        assert!(path.on_challenge_echo(addr(2000), token, HELLO));
    }

    /// Only a newer packet moves the address: a reordered one from the old address does not
    /// move it back (nor does it put the old address on probation).
    #[test]
    fn a_late_packet_from_the_old_address_does_not_move_the_path_back() {
        let t0 = Instant::from_micros(0);
        let mut path = PathAddress::validated(addr(1000));
        path.on_packet(addr(1000), 5, 60, || 1, t0);
        assert_eq!(path.on_packet(addr(2000), 7, 60, || 1, t0), Some(addr(1000)));
        assert_eq!(path.on_packet(addr(1000), 6, 60, || 1, t0), None);
        assert_eq!(path.remote(), Some(addr(2000)));
        // Moving back to the validated address ends the probation.
        assert_eq!(path.on_packet(addr(1000), 8, 60, || 1, t0), Some(addr(2000)));
        assert!(path.probation().is_none());
        assert!(path.try_send(addr(1000), PACKET));
    }

    /// What was in flight goes to a new address once per probation, when its budget first has
    /// room for a packet: not on an ACK's 60 bytes (180 of room), but on a padded announcement
    /// from there; and not again for more bytes from the same address.
    #[test]
    fn the_flight_goes_again_once_the_new_address_has_room_for_a_packet() {
        let t0 = Instant::from_micros(0);
        let mut path = PathAddress::validated(addr(1000));
        path.on_packet(addr(1000), 0, 60, || 1, t0);
        assert!(!path.resend_due(PACKET), "no probation: nothing to decide here");
        path.on_packet(addr(2000), 1, 60, || 1, t0);
        assert!(!path.resend_due(PACKET), "180 bytes of room");
        path.on_announcement(addr(2000), 1200, || 1, t0);
        assert_eq!(path.probation().map(|p| p.received), Some(1260));
        assert!(path.resend_due(PACKET), "3,780 bytes of room");
        assert!(!path.resend_due(PACKET), "once");
        path.on_announcement(addr(2000), 1200, || 1, t0);
        assert!(!path.resend_due(PACKET), "once per probation");
        // The NAT moves again: a new probation, decided anew.
        path.on_announcement(addr(3000), 1200, || 1, t0);
        assert!(path.resend_due(PACKET));
    }

    /// A path's first announcement validates its address; a later one from elsewhere puts
    /// the new address on probation.
    #[test]
    fn announcements_validate_first_and_challenge_later() {
        let t0 = Instant::from_micros(0);
        let mut path = PathAddress::default();
        assert_eq!(path.remote(), None);
        path.on_announcement(addr(1000), HELLO, || 9, t0);
        assert_eq!(path.remote(), Some(addr(1000)));
        assert!(path.probation().is_none());
        path.on_announcement(addr(1000), HELLO, || 9, t0);
        assert!(path.probation().is_none());
        path.on_announcement(addr(2000), HELLO, || 9, t0);
        assert_eq!(path.probation().map(|p| p.addr), Some(addr(2000)));
        assert_eq!(path.remote(), Some(addr(2000)));
    }
}
