//! A deterministic stand-in for the Noise layer, for tests and the simulator. It is NOT
//! security: keys are 64-bit numbers derived in the open, nothing is encrypted, and the tag is a
//! keyed checksum (FNV-1a, then a SplitMix64 finish). What it keeps from the real layer is what
//! the protocol's rules depend on: the same message sizes, a first message that only a holder
//! of the shared secret can make the server accept, one key per direction, and a tag that
//! refuses any changed byte, a wrong key and the other direction's key.

use crate::wire::{ConnectionId, DatagramType, PacketHeader, Reader, PREFIX_LEN};

use super::crypto::{
    hello_clear, hello_fields, sealable_header, Accepted, Initiator, Keys, OpenError, Responder,
    HELLO_CLEAR_LEN, HELLO_LEN, INIT_LEN, MAX_PACKET_NUMBER, TAG_LEN,
};
use super::Hello;

/// Bytes of the first message before its hello: first byte, connection id, fingerprint.
const INIT_HEAD: usize = PREFIX_LEN + 32;
/// The answer: first byte, connection id, 32 bytes bound to the first message, tag.
const RESPONSE_LEN: usize = PREFIX_LEN + 32 + TAG_LEN;

/// SplitMix64's finish: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A keyed checksum of `parts` (and of their lengths). Each step of FNV-1a is a bijection of
/// its state for a fixed byte and of the byte for a fixed state, so any changed byte changes
/// the result; the key changes the start, so another key gives another tag (up to chance).
fn tag(key: u64, parts: &[&[u8]]) -> [u8; TAG_LEN] {
    let mut h = mix(key) ^ 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&(part.len() as u64).to_be_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let mut out = [0u8; TAG_LEN];
    out[..8].copy_from_slice(&mix(h ^ key).to_be_bytes());
    out[8..].copy_from_slice(&mix(h.rotate_left(32) ^ !key).to_be_bytes());
    out
}

fn fold(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(tag(0, &[bytes])[..8].try_into().expect("8 bytes"))
}

/// One connection's insecure packet keys.
#[derive(Debug, Clone)]
pub struct InsecureKeys {
    send: u64,
    recv: u64,
    cid: ConnectionId,
}

impl InsecureKeys {
    /// Both directions from the shared secret and the first message's fingerprint.
    fn pair(secret: u64, fingerprint: &[u8; 32], cid: ConnectionId) -> (InsecureKeys, InsecureKeys) {
        let base = mix(secret ^ fold(fingerprint));
        let (c, s) = (mix(base ^ 1), mix(base ^ 2));
        (InsecureKeys { send: c, recv: s, cid }, InsecureKeys { send: s, recv: c, cid })
    }
}

impl Keys for InsecureKeys {
    fn seal(&self, packet: &[u8], out: &mut Vec<u8>) -> Option<PacketHeader> {
        let (header, header_len) = sealable_header(packet)?;
        out.clear();
        out.extend_from_slice(packet);
        out.extend_from_slice(&tag(self.send, &[&packet[..header_len], &packet[header_len..]]));
        Some(header)
    }

    fn open(&self, datagram: &[u8], out: &mut Vec<u8>) -> Result<PacketHeader, OpenError> {
        let mut r = Reader::new(datagram);
        let header = PacketHeader::parse(&mut r).map_err(|_| OpenError::Malformed)?;
        let header_len = datagram.len() - r.remaining();
        if r.remaining() < TAG_LEN
            || header.number >= MAX_PACKET_NUMBER
            || header.dcid.is_some_and(|c| c != self.cid)
            || header.encoded_len() != header_len
        {
            return Err(OpenError::Malformed);
        }
        let body = datagram.len() - TAG_LEN;
        if tag(self.recv, &[&datagram[..header_len], &datagram[header_len..body]]) != datagram[body..] {
            return Err(OpenError::Authentication);
        }
        out.clear();
        out.extend_from_slice(&datagram[..body]);
        Ok(header)
    }

    fn seal_hello(&self, path: u8, counter: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(HELLO_LEN);
        out.extend_from_slice(&hello_clear(self.cid, path, counter));
        let t = tag(self.send, &[&out]);
        out.extend_from_slice(&t);
        out
    }

    fn open_hello(&self, datagram: &[u8]) -> Option<(u8, u64)> {
        let (path, counter) = hello_fields(datagram, self.cid)?;
        (tag(self.recv, &[&datagram[..HELLO_CLEAR_LEN]]) == datagram[HELLO_CLEAR_LEN..HELLO_LEN])
            .then_some((path, counter))
    }
}

/// The client's insecure handshake.
#[derive(Debug, Clone)]
pub struct InsecureInitiator {
    secret: u64,
    cid: ConnectionId,
    first: Vec<u8>,
    spent: bool,
}

impl InsecureInitiator {
    /// `secret`: the shared key; `seed` makes the first message's fingerprint (a fresh one
    /// per connection, as Noise's ephemeral key); `unix_micros`: the time the hello carries.
    pub fn new(
        secret: u64,
        cid: ConnectionId,
        hello: &Hello,
        seed: u64,
        unix_micros: u64,
    ) -> InsecureInitiator {
        let mut first = vec![0u8; INIT_LEN];
        DatagramType::NoiseInit.write_prefix(cid, &mut first);
        for (i, chunk) in first[PREFIX_LEN..INIT_HEAD].chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&mix(seed ^ (i as u64) << 56).to_be_bytes());
        }
        hello.encode(unix_micros, &mut first[INIT_HEAD..INIT_HEAD + Hello::MAX_LEN]);
        let t = tag(secret, &[&first[..INIT_LEN - TAG_LEN]]);
        first[INIT_LEN - TAG_LEN..].copy_from_slice(&t);
        InsecureInitiator { secret, cid, first, spent: false }
    }

    fn fingerprint(&self) -> [u8; 32] {
        self.first[PREFIX_LEN..INIT_HEAD].try_into().expect("32 bytes")
    }
}

/// The answer's 32 bytes: bound to the secret and the first message it answers.
fn answer_binding(secret: u64, fingerprint: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let base = mix(secret ^ fold(fingerprint) ^ 0xa5a5);
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&mix(base ^ i as u64).to_be_bytes());
    }
    out
}

impl Initiator for InsecureInitiator {
    type Keys = InsecureKeys;

    fn first_message(&self) -> &[u8] {
        &self.first
    }

    fn read_answer(&mut self, datagram: &[u8]) -> Option<InsecureKeys> {
        if datagram.len() != RESPONSE_LEN
            || DatagramType::of(datagram) != Some(DatagramType::NoiseResponse)
            || ConnectionId::of(datagram) != Some(self.cid)
            || self.spent
        {
            return None;
        }
        // As with Noise, a failed read spends the handshake.
        self.spent = true;
        let fingerprint = self.fingerprint();
        let body = RESPONSE_LEN - TAG_LEN;
        if datagram[PREFIX_LEN..body] != answer_binding(self.secret, &fingerprint)
            || tag(self.secret, &[&datagram[..body], &fingerprint]) != datagram[body..]
        {
            return None;
        }
        Some(InsecureKeys::pair(self.secret, &fingerprint, self.cid).0)
    }

    fn is_spent(&self) -> bool {
        self.spent
    }
}

/// The server's insecure credentials: the shared secret. It has no clock, so it does not
/// check the hello's time (the real layer refuses a first message more than 120 s off).
#[derive(Debug, Clone, Copy)]
pub struct InsecureResponder {
    pub secret: u64,
}

impl Responder for InsecureResponder {
    type Keys = InsecureKeys;

    fn accept(&self, first: &[u8]) -> Option<Accepted<InsecureKeys>> {
        if !super::crypto::is_init(first)
            || tag(self.secret, &[&first[..INIT_LEN - TAG_LEN]]) != first[INIT_LEN - TAG_LEN..]
        {
            return None;
        }
        let cid = super::crypto::init_cid(first)?;
        let fingerprint: [u8; 32] = first[PREFIX_LEN..INIT_HEAD].try_into().ok()?;
        let (hello, _) = Hello::decode(&first[INIT_HEAD..INIT_LEN - TAG_LEN])?;
        if !hello.paths_valid() {
            return None;
        }
        let mut response = vec![0; PREFIX_LEN];
        response.reserve(RESPONSE_LEN - PREFIX_LEN);
        DatagramType::NoiseResponse.write_prefix(cid, &mut response);
        response.extend_from_slice(&answer_binding(self.secret, &fingerprint));
        let t = tag(self.secret, &[&response, &fingerprint]);
        response.extend_from_slice(&t);
        let keys = InsecureKeys::pair(self.secret, &fingerprint, cid).1;
        Some(Accepted { cid, hello, keys, response, client_key: None, fingerprint })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{PacketType, Writer};

    const CID: ConnectionId = ConnectionId([7; 8]);

    fn handshake(client: u64, server: u64) -> Option<(InsecureKeys, InsecureKeys)> {
        let hello = Hello { paths: 2, mode: "fmtcp".into(), ..Hello::default() };
        let mut i = InsecureInitiator::new(client, CID, &hello, 1, 0);
        assert_eq!(i.first_message().len(), INIT_LEN);
        let a = InsecureResponder { secret: server }.accept(i.first_message())?;
        assert_eq!(a.hello, hello);
        assert!(a.response.len() * 3 <= INIT_LEN);
        Some((i.read_answer(&a.response)?, a.keys))
    }

    fn packet(number: u64) -> Vec<u8> {
        let mut p = Vec::new();
        PacketHeader { ty: PacketType::Data, dcid: Some(CID), path: 1, number }
            .write(&mut Writer::new(&mut p));
        p.extend_from_slice(b"frames");
        p
    }

    #[test]
    fn same_secret_works_each_way_and_nothing_else_does() {
        assert!(handshake(1, 2).is_none(), "a wrong secret is refused");
        let (client, server) = handshake(5, 5).unwrap();
        let (mut sealed, mut opened) = (Vec::new(), Vec::new());
        client.seal(&packet(9), &mut sealed).unwrap();
        assert_eq!(server.open(&sealed, &mut opened).unwrap().number, 9);
        assert_eq!(opened, packet(9));
        assert_eq!(client.open(&sealed, &mut opened), Err(OpenError::Authentication), "other direction");
        for i in 0..sealed.len() {
            let mut forged = sealed.clone();
            forged[i] ^= 0x10;
            assert!(server.open(&forged, &mut opened).is_err(), "byte {i} changed and accepted");
        }
        let h = server.seal_hello(3, 77);
        assert_eq!(h.len(), HELLO_LEN);
        assert_eq!(client.open_hello(&h), Some((3, 77)));
        assert_eq!(server.open_hello(&h), None);
        let mut forged = h.clone();
        forged[9] = 2;
        assert_eq!(client.open_hello(&forged), None);
        let mut padded = h.clone();
        padded.resize(super::super::crypto::MAX_HELLO_LEN, 0);
        assert_eq!(client.open_hello(&padded), Some((3, 77)), "padding is not sealed");
        padded.push(0);
        assert_eq!(client.open_hello(&padded), None, "longer than an announcement may be");
        // Another connection's keys (another fingerprint) do not open it.
        let hello = Hello { paths: 1, ..Hello::default() };
        let other = InsecureResponder { secret: 5 }
            .accept(InsecureInitiator::new(5, CID, &hello, 2, 0).first_message())
            .unwrap();
        assert!(other.keys.open(&sealed, &mut opened).is_err());
    }

    #[test]
    fn a_forged_answer_spends_the_handshake() {
        let hello = Hello { paths: 1, ..Hello::default() };
        let mut i = InsecureInitiator::new(5, CID, &hello, 1, 0);
        let a = InsecureResponder { secret: 5 }.accept(i.first_message()).unwrap();
        let mut forged = a.response.clone();
        forged[20] ^= 1;
        assert!(i.read_answer(&forged).is_none());
        assert!(i.is_spent());
        assert!(i.read_answer(&a.response).is_none());
        let mut moved = InsecureInitiator::new(5, CID, &hello, 1, 0).first_message().to_vec();
        moved[1] ^= 1;
        assert!(InsecureResponder { secret: 5 }.accept(&moved).is_none(), "first message under another id");
    }
}
