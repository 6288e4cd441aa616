//! The security layer (braid-runtime's `crypto.rs`, PROTOCOL.md §13) as far as it is a function
//! of bytes: the server reading a first message, the client reading an answer, sealed packets
//! and path announcements opened with real keys, the hello inside a first message, and the
//! anti-replay window against a set of the numbers it accepted.
//!
//! The socket loop of `driver.rs` is not reached from here: it needs sockets; what it does with
//! a datagram's bytes is these functions.

use std::collections::HashSet;
use std::sync::OnceLock;

use braid_proto::wire::{ConnectionId, PacketHeader, PacketType, TransportParams, Writer, MAX_PATHS};
use braid_runtime::crypto::{
    hello_cid, init_cid, is_init, refusal, server_accept, ClientHandshake, Hello, PacketKeys, ReplayWindow,
    INIT_LEN, MAX_PACKET_NUMBER,
};
use braid_runtime::Key;

use crate::cursor::Cursor;

const CID: ConnectionId = ConnectionId([1, 2, 3, 4, 5, 6, 7, 8]);

struct Fixture {
    key: Key,
    /// A real first message (its clock is old by the time a long run reads it: the skew check
    /// then refuses it, which is a path worth fuzzing too).
    init: Vec<u8>,
    client: PacketKeys,
    server: PacketKeys,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let key = Key([7; 32]);
        let cid = CID;
        let hello = Hello {
            paths: 2,
            mode: "braid".into(),
            cc: String::new(),
            scheduler: String::new(),
            params: Some(TransportParams::default()),
        };
        let mut client = ClientHandshake::new(&key, cid, &hello);
        let init = client.init_datagram().to_vec();
        let accepted = server_accept(&key, &init).expect("the fixture's own handshake");
        let client_keys = client.on_response(&accepted.response).expect("the server's answer");
        Fixture { key, init, client: client_keys, server: accepted.keys }
    })
}

pub fn handshake(data: &[u8]) {
    let f = fixture();
    let mut c = Cursor::new(data);
    match c.u8() % 6 {
        // The server reads a first message: the fuzzer's bytes, or the real one with bytes
        // changed (so the AEAD, not the length check, refuses it).
        0 => {
            let rest = c.rest();
            let _ = is_init(rest);
            let _ = init_cid(rest);
            let _ = refusal(rest);
            let _ = hello_cid(rest);
            // The hello's parser, which reads a first message's payload once it authenticated.
            let _ = Hello::decode(rest);
            // A real first message (the corpus has one) is accepted while its clock is recent.
            let _ = server_accept(&f.key, rest);
        }
        1 => {
            let mut init = f.init.clone();
            while !c.is_empty() {
                let at = c.below(INIT_LEN);
                init[at] ^= c.u8() | 1;
            }
            // (Two flips of one bit cancel out.)
            assert!(
                init == f.init || server_accept(&f.key, &init).is_none(),
                "a changed first message was accepted"
            );
        }
        // The client reads an answer to a fresh handshake.
        2 => {
            let mut client = ClientHandshake::new(&f.key, CID, &Hello { paths: 1, ..Hello::default() });
            let answer = c.rest();
            assert!(client.on_response(answer).is_none(), "a forged answer completed the handshake");
            assert!(client.on_response(answer).is_none());
        }
        // Sealed packets and path announcements, forged or changed.
        3 => {
            let forged = c.rest();
            let mut out = Vec::new();
            assert!(f.server.open(forged, &mut out).is_err(), "a forged packet opened");
            assert!(f.server.open_hello(forged).is_none(), "a forged path announcement opened");
        }
        4 => {
            let header = PacketHeader {
                ty: [PacketType::Initial, PacketType::Accept, PacketType::Data][c.below(3)],
                dcid: Some(CID),
                path: c.u8() % MAX_PATHS as u8,
                number: c.u64() % MAX_PACKET_NUMBER,
            };
            let mut packet = Vec::new();
            header.write(&mut Writer::new(&mut packet));
            packet.extend_from_slice(c.bytes(1400));
            let mut sealed = Vec::new();
            if f.client.seal(&packet, &mut sealed).is_some() {
                let mut out = Vec::new();
                f.server.open(&sealed, &mut out).expect("a sealed packet opens");
                assert_eq!(out, packet);
                let mut changed = sealed.clone();
                if !c.is_empty() {
                    let at = c.below(changed.len());
                    changed[at] ^= c.u8() | 1;
                    assert!(f.server.open(&changed, &mut out).is_err(), "a changed packet opened");
                }
            }
            let _ = Hello::decode(c.rest());
        }
        // The anti-replay window against the set of numbers it let through.
        _ => {
            let mut window = ReplayWindow::default();
            let mut seen = HashSet::new();
            let mut highest = 0u64;
            while !c.is_empty() {
                let n = match c.u8() % 3 {
                    0 => u64::from(c.u16()),
                    1 => highest.saturating_sub(u64::from(c.u16() % 2048)),
                    _ => highest + u64::from(c.u8()),
                };
                let fresh = window.check(n);
                let inserted = window.insert(n);
                assert_eq!(fresh, inserted);
                if inserted {
                    assert!(seen.insert(n), "packet number {n} accepted twice");
                    highest = highest.max(n);
                }
            }
        }
    }
}
