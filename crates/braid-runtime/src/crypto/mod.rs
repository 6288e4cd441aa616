//! The security layer (PROTOCOL.md §13): a Noise handshake before the core's own, then every
//! core packet AEAD-sealed with an explicit nonce made of its header's values.
//!
//! Pattern `Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s`: both ends hold the same 32-byte key (the
//! `braid keygen` file). The PSK is mixed in before the first message, so the server can check a
//! client's first message and drop it, keeping no state, when the key is wrong; the ephemeral
//! DH gives each connection fresh keys (forward secrecy). We use snow (no home-made crypto);
//! snow's stateless transport takes the nonce as an argument, which is what datagrams need.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use braid_proto::session::crypto::{self as layer, Initiator, Keys, Responder};
use braid_proto::wire::{ConnectionId, DatagramType, PacketHeader, PacketType, Reader, PREFIX_LEN};
use snow::{HandshakeState, StatelessTransportState};

mod keys;

pub use braid_proto::session::crypto::{
    hello_cid, init_cid, is_init, refusal, OpenError, HELLO_LEN, INIT_LEN, MAX_PACKET_NUMBER, TAG_LEN,
};
use braid_proto::session::crypto::{hello_clear, hello_fields, sealable_header, HELLO_CLEAR_LEN};
pub use braid_proto::session::{Hello, ReplayWindow, CHALLENGE_BIT};
pub use keys::{generate_pair, ClientAuth, Key, KeyError, KeyFile, ServerAuth};

const NOISE_PARAMS: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// Key pairs (PROTOCOL.md §13.6): Noise IK. The client knows the server's static public key
/// beforehand (`--server-key`), so its first message already carries its own static key,
/// encrypted to the server's, and the server can check it against its allow-list (`--authorized`)
/// before keeping any state (Noise §7.5: IK's first payload has sender and receiver
/// authentication only against a compromised receiver key, which is enough here: the payload is
/// the hello, not data). The handshake is still one round trip.
const NOISE_PARAMS_IK: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";
/// Binds the handshake to this protocol and version (Noise prologue).
const PROLOGUE: &[u8] = b"braid/2";

const DH_LEN: usize = 32;
/// Payload of the first message: version, path count, unix time (µs), zero padding.
const INIT_PAYLOAD_LEN: usize = INIT_LEN - PREFIX_LEN - DH_LEN - TAG_LEN;
/// The same in IK: the client's static key (encrypted: DH + tag) takes room from the padding.
const INIT_PAYLOAD_LEN_IK: usize = INIT_PAYLOAD_LEN - DH_LEN - TAG_LEN;
/// A first message more than this far from the server's clock is refused (bounds replays).
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(120);

fn builder_ik<'a>(private: &'a Key, prologue: &'a [u8]) -> snow::Builder<'a> {
    snow::Builder::new(NOISE_PARAMS_IK.parse().expect("valid Noise parameters"))
        .prologue(prologue)
        .expect("prologue once")
        .local_private_key(&private.0)
        .expect("local key once")
}

/// The handshake is bound to the protocol, its version and the connection id (Noise prologue):
/// a first message replayed under another connection id fails to decrypt.
fn builder<'a>(key: &'a Key, prologue: &'a [u8]) -> snow::Builder<'a> {
    snow::Builder::new(NOISE_PARAMS.parse().expect("valid Noise parameters"))
        .prologue(prologue)
        .expect("prologue once")
        .psk(0, &key.0)
        .expect("psk slot 0 exists in NNpsk0")
}

fn prologue(cid: ConnectionId) -> Vec<u8> {
    [PROLOGUE, &cid.0].concat()
}

fn unix_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The client's side of the Noise handshake.
pub struct ClientHandshake {
    /// `None` once an answer was read (a forged one included: snow's state is then spent).
    state: Option<HandshakeState>,
    cid: ConnectionId,
    /// The first message, kept to be repeated if no answer comes.
    init: Vec<u8>,
}

impl ClientHandshake {
    /// A handshake with a pre-shared key.
    pub fn new(key: &Key, cid: ConnectionId, hello: &Hello) -> ClientHandshake {
        ClientHandshake::with_auth(&ClientAuth::Psk(key.clone()), cid, hello)
    }

    pub fn with_auth(auth: &ClientAuth, cid: ConnectionId, hello: &Hello) -> ClientHandshake {
        let prologue = prologue(cid);
        let (mut state, payload_len) = match auth {
            ClientAuth::Psk(key) => {
                (builder(key, &prologue).build_initiator().expect("valid initiator"), INIT_PAYLOAD_LEN)
            }
            ClientAuth::Pair { private, server } => (
                builder_ik(private, &prologue)
                    .remote_public_key(&server.0)
                    .expect("remote key once")
                    .build_initiator()
                    .expect("valid initiator"),
                INIT_PAYLOAD_LEN_IK,
            ),
        };
        let mut payload = [0u8; INIT_PAYLOAD_LEN];
        let payload = &mut payload[..payload_len];
        hello.encode(unix_micros(), payload);
        let mut init = vec![0u8; INIT_LEN];
        DatagramType::NoiseInit.write_prefix(cid, &mut init);
        let n = state.write_message(payload, &mut init[PREFIX_LEN..]).expect("message fits");
        debug_assert_eq!(PREFIX_LEN + n, INIT_LEN);
        ClientHandshake { state: Some(state), cid, init }
    }

    /// The datagram to send (and to repeat until answered).
    pub fn init_datagram(&self) -> &[u8] {
        &self.init
    }

    /// Reads the server's answer; `None` if it is not a valid answer to this handshake.
    /// Whether an answer was already tried (see [`ClientHandshake::on_response`]).
    pub fn is_spent(&self) -> bool {
        self.state.is_none()
    }

    pub fn on_response(&mut self, datagram: &[u8]) -> Option<PacketKeys> {
        if datagram.len() < PREFIX_LEN + DH_LEN + TAG_LEN
            || DatagramType::of(datagram) != Some(DatagramType::NoiseResponse)
            || ConnectionId::of(datagram) != Some(self.cid)
        {
            return None;
        }
        let mut payload = [0u8; 64];
        // A failed read leaves snow's state unusable, so the state is taken: an on-path forger
        // who knows the connection id can spoil this handshake (the caller then reports it
        // failed), never complete it.
        let mut state = self.state.take()?;
        state.read_message(&datagram[PREFIX_LEN..], &mut payload).ok()?;
        state.into_stateless_transport_mode().ok().map(|s| PacketKeys::new(s, self.cid))
    }
}

/// A server's decision on a client's first message, with Noise keys.
pub type Accepted = layer::Accepted<PacketKeys>;

/// The server reads a client's first message. `None` (and no state kept) unless it decrypts
/// under the key, is recent, and is well-formed.
pub fn server_accept(key: &Key, datagram: &[u8]) -> Option<Accepted> {
    server_accept_with(&ServerAuth::Psk(key.clone()), datagram)
}

/// [`server_accept`] for either kind of credentials; with key pairs, a client whose static key
/// is not authorized is refused like a wrong key (nothing kept).
pub fn server_accept_with(auth: &ServerAuth, datagram: &[u8]) -> Option<Accepted> {
    if !is_init(datagram) {
        return None;
    }
    let cid = init_cid(datagram)?;
    let prologue = prologue(cid);
    let mut state = match auth {
        ServerAuth::Psk(key) => builder(key, &prologue).build_responder().ok()?,
        ServerAuth::Pair { private, .. } => builder_ik(private, &prologue).build_responder().ok()?,
    };
    let mut payload = [0u8; INIT_LEN];
    let n = state.read_message(&datagram[PREFIX_LEN..], &mut payload).ok()?;
    let client_key = match auth {
        ServerAuth::Psk(_) => None,
        ServerAuth::Pair { authorized, .. } => {
            let remote: [u8; 32] = state.get_remote_static()?.try_into().ok()?;
            if !authorized.iter().any(|k| k.0 == remote) {
                return None;
            }
            Some(remote)
        }
    };
    let (hello, sent) = Hello::decode(&payload[..n])?;
    if !hello.paths_valid() {
        return None;
    }
    let skew = Duration::from_micros(unix_micros().abs_diff(sent));
    if skew > MAX_CLOCK_SKEW {
        return None;
    }
    let mut response = vec![0u8; PREFIX_LEN + DH_LEN + TAG_LEN + 1];
    DatagramType::NoiseResponse.write_prefix(cid, &mut response);
    let written = state.write_message(&[0], &mut response[PREFIX_LEN..]).ok()?;
    response.truncate(PREFIX_LEN + written);
    let keys = PacketKeys::new(state.into_stateless_transport_mode().ok()?, cid);
    // The ephemeral key follows the first byte and the connection id (Noise message 1 starts
    // with it, in clear).
    let fingerprint: [u8; DH_LEN] = datagram[PREFIX_LEN..PREFIX_LEN + DH_LEN].try_into().ok()?;
    Some(Accepted { cid, hello, keys, response, client_key, fingerprint })
}

/// The nonce's type field of a Data packet without a connection id (a server's): apart from
/// every [`PacketType`] code and the path announcement's, so that re-framing a packet into the
/// other Data form (adding or dropping the connection id, which travels in clear) changes the
/// nonce and fails authentication.
const DATA_NO_CID_NONCE: u8 = 8;

/// The AEAD nonce of a core packet: its packet number, path, type and, for Data, whether it
/// carries the connection id (PROTOCOL.md §13.3). Together with the connection's own keys
/// (which bind its connection id) and the canonical header check in [`PacketKeys::open`], every
/// header field is authenticated although snow's transport takes no associated data.
fn packet_nonce(header: &PacketHeader) -> u64 {
    let ty = match (header.ty, header.dcid) {
        (PacketType::Data, None) => DATA_NO_CID_NONCE,
        (ty, _) => ty.code(),
    };
    header.number | u64::from(header.path) << 56 | u64::from(ty) << 59
}

/// Nonce of a path announcement (its own type, its own counter space).
fn hello_nonce(path: u8, counter: u64) -> u64 {
    counter | u64::from(path) << 56 | u64::from(DatagramType::PathHello.code()) << 59
}

/// One connection's transport keys.
pub struct PacketKeys {
    state: StatelessTransportState,
    /// The connection these keys belong to: a packet naming another is refused.
    cid: ConnectionId,
}

impl PacketKeys {
    fn new(state: StatelessTransportState, cid: ConnectionId) -> PacketKeys {
        PacketKeys { state, cid }
    }

    /// Seals the core packet in `packet` (header in clear, the rest encrypted, a tag appended)
    /// into `out`. `None` if the packet's header cannot be parsed or its number is too large.
    pub fn seal(&self, packet: &[u8], out: &mut Vec<u8>) -> Option<PacketHeader> {
        let (header, header_len) = sealable_header(packet)?;
        out.clear();
        out.extend_from_slice(&packet[..header_len]);
        out.resize(packet.len() + TAG_LEN, 0);
        self.state
            .write_message(packet_nonce(&header), &packet[header_len..], &mut out[header_len..])
            .ok()?;
        Some(header)
    }

    /// Opens a sealed packet into `out` (the core packet, header included).
    pub fn open(&self, datagram: &[u8], out: &mut Vec<u8>) -> Result<PacketHeader, OpenError> {
        let mut r = Reader::new(datagram);
        let header = PacketHeader::parse(&mut r).map_err(|_| OpenError::Malformed)?;
        let header_len = datagram.len() - r.remaining();
        if r.remaining() < TAG_LEN
            || header.number >= MAX_PACKET_NUMBER
            || header.dcid.is_some_and(|c| c != self.cid)
        {
            return Err(OpenError::Malformed);
        }
        // Only the canonical encoding of the header is accepted, so no header byte can change
        // without changing the nonce or the key: the first byte and the connection id have one
        // encoding, and a varint written longer than needed is the only other way to spell the
        // same header, which shows in its length.
        if header.encoded_len() != header_len {
            return Err(OpenError::Malformed);
        }
        out.clear();
        out.extend_from_slice(&datagram[..header_len]);
        out.resize(datagram.len() - TAG_LEN, 0);
        self.state
            .read_message(packet_nonce(&header), &datagram[header_len..], &mut out[header_len..])
            .map_err(|_| OpenError::Authentication)?;
        Ok(header)
    }

    /// A path announcement: `PATH_HELLO | cid | path | counter (8 bytes) | tag`.
    pub fn seal_hello(&self, path: u8, counter: u64) -> Vec<u8> {
        let mut out = vec![0u8; HELLO_LEN];
        out[..HELLO_CLEAR_LEN].copy_from_slice(&hello_clear(self.cid, path, counter));
        self.state
            .write_message(hello_nonce(path, counter), &[], &mut out[HELLO_CLEAR_LEN..])
            .expect("tag fits");
        out
    }

    /// Checks a path announcement (its padding, if any, is not part of the seal); returns
    /// (path, counter).
    pub fn open_hello(&self, datagram: &[u8]) -> Option<(u8, u64)> {
        let (path, counter) = hello_fields(datagram, self.cid)?;
        let mut empty = [0u8; 0];
        let tag = &datagram[HELLO_CLEAR_LEN..HELLO_LEN];
        self.state.read_message(hello_nonce(path, counter), tag, &mut empty).ok()?;
        Some((path, counter))
    }
}

/// Noise's side of the security layer's crypto traits (the inherent methods above are the same
/// functions; the traits let the sans-IO session layer drive them).
impl Keys for PacketKeys {
    fn seal(&self, packet: &[u8], out: &mut Vec<u8>) -> Option<PacketHeader> {
        PacketKeys::seal(self, packet, out)
    }

    fn open(&self, datagram: &[u8], out: &mut Vec<u8>) -> Result<PacketHeader, OpenError> {
        PacketKeys::open(self, datagram, out)
    }

    fn seal_hello(&self, path: u8, counter: u64) -> Vec<u8> {
        PacketKeys::seal_hello(self, path, counter)
    }

    fn open_hello(&self, datagram: &[u8]) -> Option<(u8, u64)> {
        PacketKeys::open_hello(self, datagram)
    }
}

impl Initiator for ClientHandshake {
    type Keys = PacketKeys;

    fn first_message(&self) -> &[u8] {
        self.init_datagram()
    }

    fn read_answer(&mut self, datagram: &[u8]) -> Option<PacketKeys> {
        self.on_response(datagram)
    }

    fn is_spent(&self) -> bool {
        ClientHandshake::is_spent(self)
    }
}

impl Responder for ServerAuth {
    type Keys = PacketKeys;

    fn accept(&self, first_message: &[u8]) -> Option<Accepted> {
        server_accept_with(self, first_message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_proto::session::crypto::MAX_HELLO_LEN;
    use braid_proto::wire::Writer;

    fn pair(key_client: &Key, key_server: &Key) -> Option<(PacketKeys, PacketKeys)> {
        let cid = ConnectionId([7; 8]);
        let mut client = ClientHandshake::new(
            key_client,
            cid,
            &Hello {
                paths: 2,
                mode: "fmtcp".into(),
                cc: String::new(),
                scheduler: "roundrobin".into(),
                params: None,
            },
        );
        let accepted = server_accept(key_server, client.init_datagram())?;
        assert_eq!(accepted.hello.paths, 2);
        assert_eq!(accepted.hello.mode, "fmtcp");
        assert_eq!(accepted.hello.cc, "");
        assert_eq!(accepted.hello.scheduler, "roundrobin");
        assert!(accepted.response.len() * 3 <= INIT_LEN, "answer ≤ 3× the request");
        let keys = client.on_response(&accepted.response)?;
        Some((keys, accepted.keys))
    }

    fn packet(path: u8, number: u64) -> Vec<u8> {
        let mut p = Vec::new();
        let h = PacketHeader { ty: PacketType::Data, dcid: Some(ConnectionId([7; 8])), path, number };
        h.write(&mut Writer::new(&mut p));
        p.extend_from_slice(b"frames go here");
        p
    }

    #[test]
    fn handshake_and_packets_round_trip() {
        let key = Key::generate().unwrap();
        let (client, server) = pair(&key, &key).expect("same key: handshake completes");
        let p = packet(1, 300);
        let mut sealed = Vec::new();
        client.seal(&p, &mut sealed).unwrap();
        assert_eq!(sealed.len(), p.len() + TAG_LEN);
        assert_ne!(&sealed[12..p.len()], &p[12..], "frames are encrypted");
        let mut opened = Vec::new();
        server.open(&sealed, &mut opened).unwrap();
        assert_eq!(opened, p);
        // The other direction uses the other key.
        assert_eq!(client.open(&sealed, &mut opened), Err(OpenError::Authentication));
    }

    #[test]
    fn wrong_key_is_refused_without_answer() {
        let a = Key::generate().unwrap();
        let b = Key::generate().unwrap();
        let client = ClientHandshake::new(&a, ConnectionId([1; 8]), &Hello { paths: 1, ..Hello::default() });
        assert!(server_accept(&b, client.init_datagram()).is_none());
        // The right key, but the first message replayed under another connection id.
        let mut moved = client.init_datagram().to_vec();
        moved[1] ^= 1;
        assert!(server_accept(&a, &moved).is_none());
        assert!(server_accept(&a, client.init_datagram()).is_some());
    }

    #[test]
    fn key_pairs_admit_the_authorized_only() {
        let (server_private, server_public) = generate_pair().unwrap();
        let (client_private, client_public) = generate_pair().unwrap();
        let (other_private, other_public) = generate_pair().unwrap();
        let server = ServerAuth::Pair { private: server_private, authorized: vec![client_public.clone()] };
        let hello = Hello { paths: 3, mode: "braid".into(), ..Hello::default() };
        let cid = ConnectionId([7; 8]); // as `packet` names
        let good = ClientAuth::Pair { private: client_private.clone(), server: server_public.clone() };
        let mut client = ClientHandshake::with_auth(&good, cid, &hello);
        assert_eq!(client.init_datagram().len(), INIT_LEN);
        let accepted = server_accept_with(&server, client.init_datagram()).expect("authorized client");
        assert_eq!(accepted.hello.paths, 3);
        assert_eq!(accepted.client_key, Some(client_public.0));
        assert!(accepted.response.len() * 3 <= INIT_LEN, "answer ≤ 3× the request");
        let keys = client.on_response(&accepted.response).expect("the server's answer");
        let mut sealed = Vec::new();
        let mut opened = Vec::new();
        keys.seal(&packet(0, 1), &mut sealed).unwrap();
        assert!(accepted.keys.open(&sealed, &mut opened).is_ok());
        // A client not on the list, and a client that takes another key for the server's.
        let stranger = ClientAuth::Pair { private: other_private, server: server_public };
        assert!(server_accept_with(
            &server,
            ClientHandshake::with_auth(&stranger, cid, &hello).init_datagram()
        )
        .is_none());
        let misled = ClientAuth::Pair { private: client_private, server: other_public };
        assert!(server_accept_with(
            &server,
            ClientHandshake::with_auth(&misled, cid, &hello).init_datagram()
        )
        .is_none());
        // A PSK server does not take an IK first message, nor the reverse.
        let psk = Key::generate().unwrap();
        assert!(server_accept(&psk, ClientHandshake::with_auth(&good, cid, &hello).init_datagram()).is_none());
        assert!(
            server_accept_with(&server, ClientHandshake::new(&psk, cid, &hello).init_datagram()).is_none()
        );
    }

    #[test]
    fn key_files_round_trip() {
        let dir = std::env::temp_dir().join(format!("braid-keyfiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (private, public) = generate_pair().unwrap();
        private.write_private(&dir.join("p")).unwrap();
        assert!(matches!(Key::read_any(&dir.join("p")).unwrap(), KeyFile::Private(k) if k.0 == private.0));
        let shared = Key::generate().unwrap();
        shared.write_file(&dir.join("s")).unwrap();
        assert!(matches!(Key::read_any(&dir.join("s")).unwrap(), KeyFile::Shared(k) if k.0 == shared.0));
        std::fs::write(dir.join("a"), format!("# list\n\n{} laptop\n", public.to_hex())).unwrap();
        let list = Key::read_authorized(&dir.join("a")).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].0, public.0);
        std::fs::write(dir.join("b"), "zz laptop\n").unwrap();
        let e = Key::read_authorized(&dir.join("b")).unwrap_err().to_string();
        assert!(e.contains(":1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn any_header_change_is_detected() {
        let key = Key::generate().unwrap();
        let (client, server) = pair(&key, &key).unwrap();
        let mut sealed = Vec::new();
        client.seal(&packet(1, 300), &mut sealed).unwrap();
        let mut out = Vec::new();
        for i in 0..sealed.len() {
            for bit in 0..8 {
                let mut forged = sealed.clone();
                forged[i] ^= 1 << bit;
                assert!(server.open(&forged, &mut out).is_err(), "byte {i} bit {bit} flipped and accepted");
            }
        }
        // A non-canonical (longer) varint for the same packet number is refused too.
        let mut long = sealed[..9].to_vec();
        long.push(0x40); // path 1 as a 2-byte varint
        long.push(1);
        long.extend_from_slice(&sealed[10..]);
        assert_eq!(server.open(&long, &mut out), Err(OpenError::Malformed));
    }

    /// A server's Data packet carries no connection id; the client's carry it. Moving a sealed
    /// packet into the other form (the id is in clear, so anyone on the path can) must fail
    /// authentication, or a forged copy could be opened and its number spent in the replay
    /// window before the core drops it, and the real packet then count as a replay.
    #[test]
    fn a_data_packet_moved_into_the_other_form_is_refused() {
        let key = Key::generate().unwrap();
        let (client, server) = pair(&key, &key).unwrap();
        let cid = ConnectionId([7; 8]);
        let mut p = Vec::new();
        PacketHeader { ty: PacketType::Data, dcid: None, path: 1, number: 300 }
            .write(&mut Writer::new(&mut p));
        p.extend_from_slice(b"frames go here");
        let mut sealed = Vec::new();
        server.seal(&p, &mut sealed).unwrap();
        let mut out = Vec::new();
        client.open(&sealed, &mut out).expect("the server's own form opens");
        // The same bytes re-framed with the connection id: the first byte of the other form,
        // the id, then the rest unchanged.
        let mut with_cid = Vec::new();
        PacketHeader { ty: PacketType::Data, dcid: Some(cid), path: 1, number: 300 }
            .write(&mut Writer::new(&mut with_cid));
        let (no_cid_len, with_cid_len) = (p.len() - b"frames go here".len(), with_cid.len());
        with_cid.extend_from_slice(&sealed[no_cid_len..]);
        assert_eq!(client.open(&with_cid, &mut out), Err(OpenError::Authentication));
        // And a client's packet stripped of its id.
        client.seal(&packet(1, 301), &mut sealed).unwrap();
        let mut stripped = Vec::new();
        PacketHeader { ty: PacketType::Data, dcid: None, path: 1, number: 301 }
            .write(&mut Writer::new(&mut stripped));
        stripped.extend_from_slice(&sealed[with_cid_len..]);
        assert_eq!(server.open(&stripped, &mut out), Err(OpenError::Authentication));
    }

    #[test]
    fn path_hello_round_trip_and_forgery() {
        let key = Key::generate().unwrap();
        let (client, server) = pair(&key, &key).unwrap();
        let h = client.seal_hello(3, 9);
        assert_eq!(hello_cid(&h), Some(ConnectionId([7; 8])));
        assert_eq!(server.open_hello(&h), Some((3, 9)));
        let mut forged = h.clone();
        forged[9] = 2;
        assert_eq!(server.open_hello(&forged), None);
        // Padded to the most an announcement may be: the same announcement; one byte more: none.
        let mut padded = h.clone();
        padded.resize(MAX_HELLO_LEN, 0);
        assert_eq!(server.open_hello(&padded), Some((3, 9)));
        padded.push(0);
        assert_eq!(server.open_hello(&padded), None);
        let mut forged = h.clone();
        forged.resize(MAX_HELLO_LEN, 0);
        forged[HELLO_LEN - 1] ^= 1;
        assert_eq!(server.open_hello(&forged), None, "the tag is checked, not the padding's end");
    }
}
