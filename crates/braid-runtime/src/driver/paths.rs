//! Paths after the handshake (PROTOCOL.md §13.4–§13.8): path announcements and challenges in,
//! sealed core packets in and out, each path's address followed as [`PathAddress`] says (NAT
//! rebinding, a new address's 3x budget until it answers a challenge).

use std::net::SocketAddr;

use braid_proto::session::{PathAddress, CHALLENGE_BIT};
use braid_proto::wire::ConnectionId;
use braid_proto::Instant;

use super::{hex, random_u64, Driver, Role};
use crate::crypto::{self, HELLO_LEN};

/// Says when a path's address went on probation (sent at most 3x what came from it until it
/// answers a challenge).
fn log_probation(address: &PathAddress, p: usize, from: SocketAddr) {
    if address.probation().is_some_and(|pr| pr.addr == from && pr.sent == 0) {
        tracing::debug!(
            "path {p}: challenging {from} before sending it more than {}x what it sent",
            braid_proto::session::AMPLIFICATION
        );
    }
}

impl Driver {
    pub(super) fn on_path_hello(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = crypto::hello_cid(data) else { return };
        let is_server = matches!(self.role, Role::Server { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some((path, counter)) = e.keys.as_ref().and_then(|k| k.open_hello(data)) else { return };
        let p = usize::from(path);
        if p >= e.replay.len() {
            return;
        }
        e.dirty = true;
        if counter & CHALLENGE_BIT != 0 {
            if is_server {
                if e.addresses[p].on_challenge_echo(from, counter, data.len()) {
                    tracing::debug!(cid = %hex(&cid.0), path = p, %from, "new address validated (challenge answered)");
                }
            } else {
                // A challenge from the server: echo it on the path it names (repeats are
                // harmless: the same sealed bytes again, only ever to the server).
                let echo = e.keys.as_ref().expect("checked").seal_hello(path, counter);
                let Some(to) = e.handle.lock().paths[p].remote else { return };
                self.send_raw(p, to, &echo, now);
            }
            return;
        }
        if !e.hello_replay[p].insert(counter) {
            return;
        }
        if is_server {
            e.addresses[p].on_announcement(from, data.len(), random_u64, now);
            log_probation(&e.addresses[p], p, from);
            let mut s = e.handle.lock();
            if let (Some(q), true) = (&mut e.qlog, s.paths[p].remote != Some(from)) {
                q.path(now, path, "active", s.paths[p].local, Some(from));
            }
            s.paths[p].remote = Some(from);
            drop(s);
            let echo = e.keys.as_ref().expect("checked").seal_hello(path, counter);
            tracing::debug!(cid = %hex(&cid.0), path, %from, "path announced");
            self.send_raw(0, from, &echo, now);
        } else if p == i {
            e.announcer.on_echo(p);
        }
    }

    pub(super) fn on_packet(&mut self, i: usize, data: &[u8], from: SocketAddr, now: Instant) {
        let Some(cid) = data.get(1..9).map(|b| ConnectionId(b.try_into().expect("8"))) else { return };
        let is_client = matches!(self.role, Role::Client { .. });
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        let Ok(header) = keys.open(data, &mut self.opened) else {
            tracing::trace!("dropped an unauthenticated packet from {from}");
            return;
        };
        let p = usize::from(header.path);
        if p >= e.replay.len() || (is_client && p != i) || !e.replay[p].insert(header.number) {
            return;
        }
        let mut s = e.handle.lock();
        if !is_client {
            let address = &mut e.addresses[p];
            let before = address.remote();
            if let Some(old) = address.on_packet(from, header.number, data.len(), random_u64, now) {
                tracing::info!(cid = %hex(&cid.0), path = p, %old, new = %from, "peer moved");
                if let Some(q) = &mut e.qlog {
                    // What the core traced before this datagram goes first (times in order).
                    q.drain(&mut s.core);
                    q.path(now, header.path, "moved", s.paths[p].local, Some(from));
                }
            }
            if address.remote() != before {
                log_probation(address, p, from);
                s.paths[p].remote = address.remote();
            }
        }
        s.paths[p].datagrams_received += 1;
        s.paths[p].bytes_received += data.len() as u64;
        s.core.handle_datagram(now, header.path, &self.opened);
        e.dirty = true;
    }

    /// Seals a core packet and sends it on its path.
    pub(super) fn send_packet(&mut self, path: u8, packet: &[u8], now: Instant) {
        let Some(cid) = crypto::init_cid(packet) else { return };
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        if keys.seal(packet, &mut self.sealed).is_none() {
            return;
        }
        let p = usize::from(path);
        let Some(address) = e.addresses.get_mut(p) else { return };
        let Some(to) = address.remote() else { return };
        if !address.try_send(to, self.sealed.len()) {
            tracing::trace!("path {p}: {to} not validated yet; datagram held back (3x limit)");
            return;
        }
        let socket = if matches!(self.role, Role::Client { .. }) { p } else { 0 };
        let sealed = std::mem::take(&mut self.sealed);
        self.send_raw(socket, to, &sealed, now);
        self.sealed = sealed;
    }

    /// Sends the due challenges of a server connection's paths on probation (counted in the limit).
    pub(super) fn send_challenges(&mut self, cid: ConnectionId, now: Instant) {
        let Some(e) = self.conns.get_mut(&cid) else { return };
        let Some(keys) = &e.keys else { return };
        let mut out = Vec::new();
        for (p, address) in e.addresses.iter_mut().enumerate() {
            if let Some((to, token)) = address.poll_challenge(now, HELLO_LEN) {
                out.push((to, keys.seal_hello(p as u8, token)));
            }
        }
        for (to, c) in out {
            self.send_raw(0, to, &c, now);
        }
    }
}
