//! The cryptography the security layer needs, as three small traits (PROTOCOL.md §13), and the
//! framing of the security layer's own messages. The production implementation (Noise, on the
//! `snow` crate) lives in braid-runtime; [`super::insecure`] is a deterministic test double.
//!
//! - [`Initiator`]: the client's handshake: its first message, then the server's answer read
//!   into packet keys.
//! - [`Responder`]: the server's credentials: a first message checked and answered, with no
//!   state kept unless it authenticates.
//! - [`Keys`]: one connection's packet keys: seal and open a core packet (its header in clear
//!   and authenticated) and a path announcement.

use crate::wire::{ConnectionId, DatagramType, PacketHeader, Reader, MAX_PATHS, PREFIX_LEN};

use super::Hello;

/// The client's first message is exactly this long, so the server's answer (≈ 60 bytes) never
/// amplifies a spoofed source (PROTOCOL.md §13.2).
pub const INIT_LEN: usize = 1200;
/// Authentication tag appended to a sealed packet or announcement.
pub const TAG_LEN: usize = 16;
/// A sealed path announcement: first byte, connection id, path, counter, tag (PROTOCOL.md §13.6).
pub const HELLO_LEN: usize = HELLO_CLEAR_LEN + TAG_LEN;
/// A path announcement's bytes before its tag: first byte, connection id, path, counter (8).
pub const HELLO_CLEAR_LEN: usize = PREFIX_LEN + 1 + 8;
/// The longest path announcement: its [`HELLO_LEN`] sealed bytes, then padding (PROTOCOL.md
/// §13.6: a client pads an announcement so a server whose new-address budget it opens can send
/// data at once; the padding is not authenticated, and only widens the budget of the address
/// it came from, which its sender paid for).
pub const MAX_HELLO_LEN: usize = 1200;
/// Packet numbers (and announcement counters) at or above this cannot be sealed (§13.4).
pub const MAX_PACKET_NUMBER: u64 = 1 << 56;

/// Why a datagram was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    Malformed,
    Authentication,
}

/// One connection's packet keys, one direction each way.
pub trait Keys {
    /// Seals the core packet in `packet` (header in clear, the rest protected, a tag appended)
    /// into `out`. `None` if its header does not parse or its number is too large.
    fn seal(&self, packet: &[u8], out: &mut Vec<u8>) -> Option<PacketHeader>;
    /// Opens a sealed packet into `out` (the core packet, header included). Any change to any
    /// byte, header included, is refused.
    fn open(&self, datagram: &[u8], out: &mut Vec<u8>) -> Result<PacketHeader, OpenError>;
    /// A sealed path announcement ([`HELLO_LEN`] bytes) naming `path` and `counter`.
    fn seal_hello(&self, path: u8, counter: u64) -> Vec<u8>;
    /// Checks a path announcement; returns (path, counter).
    fn open_hello(&self, datagram: &[u8]) -> Option<(u8, u64)>;
}

/// The client's side of the handshake.
pub trait Initiator {
    type Keys: Keys;
    /// The first message ([`INIT_LEN`] bytes), to send and repeat until answered.
    fn first_message(&self) -> &[u8];
    /// Reads the server's answer; `None` if it is not a valid answer to this handshake.
    fn read_answer(&mut self, datagram: &[u8]) -> Option<Self::Keys>;
    /// Whether an answer was already tried: a forged one spends the handshake (an on-path
    /// forger who knows the connection id can spoil it, never complete it).
    fn is_spent(&self) -> bool;
}

/// A server's decision on a first message that authenticated.
pub struct Accepted<K> {
    pub cid: ConnectionId,
    pub hello: Hello,
    pub keys: K,
    /// The answer to send (and to repeat if the same first message comes again); at most a
    /// third of the first message.
    pub response: Vec<u8>,
    /// With key pairs: the client's static public key (one of the authorized).
    pub client_key: Option<[u8; 32]>,
    /// What makes this first message unique (its ephemeral key), for the server's memory of
    /// first messages (§13.3).
    pub fingerprint: [u8; 32],
}

/// The server's side of the handshake.
pub trait Responder {
    type Keys: Keys;
    /// Reads a client's first message. `None` (and no state kept) unless it authenticates, is
    /// recent, and is well-formed.
    fn accept(&self, first_message: &[u8]) -> Option<Accepted<Self::Keys>>;
}

/// A core packet about to be sealed: its header and the header's length, or `None` if the header
/// does not parse or the packet number is past [`MAX_PACKET_NUMBER`] (both sealers refuse it).
pub fn sealable_header(packet: &[u8]) -> Option<(PacketHeader, usize)> {
    let mut r = Reader::new(packet);
    let header = PacketHeader::parse(&mut r).ok()?;
    (header.number < MAX_PACKET_NUMBER).then(|| (header, packet.len() - r.remaining()))
}

/// Whether a datagram looks like a first message (cheap check before any crypto).
pub fn is_init(datagram: &[u8]) -> bool {
    datagram.len() == INIT_LEN && DatagramType::of(datagram) == Some(DatagramType::NoiseInit)
}

/// The connection id after the first byte (every security-layer message and a client's core
/// packets have it there; a server's Data packets carry none, PROTOCOL.md §7.4).
pub fn init_cid(datagram: &[u8]) -> Option<ConnectionId> {
    ConnectionId::of(datagram)
}

/// The refusal hint for a first message (PROTOCOL.md §13.3): its first byte and connection id,
/// 9 bytes, unauthenticated.
pub fn refusal(init: &[u8]) -> Option<[u8; PREFIX_LEN]> {
    let mut out = [0; PREFIX_LEN];
    DatagramType::Refused.write_prefix(ConnectionId::of(init)?, &mut out);
    Some(out)
}

/// Whether `datagram` is a refusal hint naming `cid`.
pub fn is_refusal_for(datagram: &[u8], cid: ConnectionId) -> bool {
    datagram.len() == PREFIX_LEN
        && DatagramType::of(datagram) == Some(DatagramType::Refused)
        && ConnectionId::of(datagram) == Some(cid)
}

/// The clear part of `cid`'s announcement of `path` with `counter` (PROTOCOL.md §13.6), the
/// bytes a [`Keys::seal_hello`] authenticates and its tag follows.
pub fn hello_clear(cid: ConnectionId, path: u8, counter: u64) -> [u8; HELLO_CLEAR_LEN] {
    let mut out = [0; HELLO_CLEAR_LEN];
    DatagramType::PathHello.write_prefix(cid, &mut out);
    out[PREFIX_LEN] = path;
    out[PREFIX_LEN + 1..].copy_from_slice(&counter.to_be_bytes());
    out
}

/// The path and counter of a sealed announcement for `cid`, its tag (bytes
/// `HELLO_CLEAR_LEN..HELLO_LEN`) not yet checked; `None` unless it is a path announcement of
/// [`HELLO_LEN`] to [`MAX_HELLO_LEN`] bytes naming `cid`, a path below [`MAX_PATHS`] and a
/// counter below [`MAX_PACKET_NUMBER`].
pub fn hello_fields(datagram: &[u8], cid: ConnectionId) -> Option<(u8, u64)> {
    if !(HELLO_LEN..=MAX_HELLO_LEN).contains(&datagram.len()) || hello_cid(datagram) != Some(cid) {
        return None;
    }
    let path = datagram[PREFIX_LEN];
    let counter = u64::from_be_bytes(datagram[PREFIX_LEN + 1..HELLO_CLEAR_LEN].try_into().ok()?);
    (u64::from(path) < MAX_PATHS && counter < MAX_PACKET_NUMBER).then_some((path, counter))
}

/// The connection id a path announcement names.
pub fn hello_cid(datagram: &[u8]) -> Option<ConnectionId> {
    (DatagramType::of(datagram) == Some(DatagramType::PathHello)).then(|| init_cid(datagram)).flatten()
}
