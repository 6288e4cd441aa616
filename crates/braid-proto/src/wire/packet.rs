//! Packet header (PROTOCOL.md §7) and the first byte of every datagram braid sends, the
//! runtime's security-layer messages included (PROTOCOL.md §13.2): the type codes live here only.

use super::{Reader, WireError, Writer};

/// The packet format version this build speaks: 2, version 1's layout with shorter Data
/// headers and the frames that run to the end of their packet or symbol (PROTOCOL.md §7.6).
pub const VERSION: u8 = 2;

/// Bits of the first byte below the version: the type (PROTOCOL.md §7.2).
const TYPE_BITS: u8 = 5;
const TYPE_MASK: u8 = (1 << TYPE_BITS) - 1;

/// Every datagram braid sends but a server's Data packet opens with its first byte and the
/// 8-byte connection id of its destination (PROTOCOL.md §7.2, §13.2); what follows depends on
/// the type.
pub const PREFIX_LEN: usize = 9;

/// Type bits of a Data packet that carries the connection id (a client's): `0x08 | path`.
const DATA_WITH_CID: u8 = 0x08;
/// Type bits of a Data packet without it (a server's, PROTOCOL.md §7.4): `0x10 | path`.
const DATA_NO_CID: u8 = 0x10;
/// The path's bits in a Data packet's type.
const PATH_MASK: u8 = 0x07;

/// The most paths a connection may have (ids 0..MAX_PATHS).
pub const MAX_PATHS: u64 = 8;

/// What a packet is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    /// Client's first flight: carries its transport parameters.
    Initial,
    /// Server's answer: its transport parameters, the connection is up.
    Accept,
    /// Everything after the handshake.
    Data,
}

impl PacketType {
    /// The type bits of the header's first byte (PROTOCOL.md §7.2); the AEAD nonce carries
    /// them too (§13.4).
    pub const fn code(self) -> u8 {
        match self {
            PacketType::Initial => 0,
            PacketType::Accept => 1,
            PacketType::Data => 2,
        }
    }

    const fn from_code(code: u8) -> Option<PacketType> {
        match code {
            0 => Some(PacketType::Initial),
            1 => Some(PacketType::Accept),
            2 => Some(PacketType::Data),
            _ => None,
        }
    }
}

/// What a datagram is, by its first byte (`version << 5 | type`, PROTOCOL.md §7.2 and §13.2):
/// a core packet, or one of the messages the security layer sends around the core's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramType {
    /// A core packet (types 0–2), sealed once the Noise handshake is done.
    Packet(PacketType),
    /// The client's Noise first message (0x23).
    NoiseInit,
    /// The server's Noise answer (0x24).
    NoiseResponse,
    /// A path announcement, or the server's challenge to a new address (0x25).
    PathHello,
    /// The server's unauthenticated hint that a first message did not decrypt (0x26).
    Refused,
}

impl DatagramType {
    /// The type bits of the first byte (a Data packet's: one with the connection id, on path 0).
    pub const fn code(self) -> u8 {
        match self {
            DatagramType::Packet(PacketType::Data) => DATA_WITH_CID,
            DatagramType::Packet(ty) => ty.code(),
            DatagramType::NoiseInit => 3,
            DatagramType::NoiseResponse => 4,
            DatagramType::PathHello => 5,
            DatagramType::Refused => 6,
        }
    }

    /// The whole first byte: this build's version and the type.
    pub const fn first_byte(self) -> u8 {
        self.first_byte_of_version(VERSION)
    }

    /// The first byte another version would give this type (for tests of what a peer of that
    /// version sends).
    pub const fn first_byte_of_version(self, version: u8) -> u8 {
        version << TYPE_BITS | self.code()
    }

    /// Writes this type's first byte and `cid` into the first [`PREFIX_LEN`] bytes of `out`
    /// (a buffer of ours, at least that long).
    pub fn write_prefix(self, cid: ConnectionId, out: &mut [u8]) {
        out[0] = self.first_byte();
        out[1..PREFIX_LEN].copy_from_slice(&cid.0);
    }

    /// The type of a datagram; `None` for an empty one, another version or an unknown type.
    pub fn of(datagram: &[u8]) -> Option<DatagramType> {
        let &first = datagram.first()?;
        if first >> TYPE_BITS != VERSION {
            return None;
        }
        match first & TYPE_MASK {
            3 => Some(DatagramType::NoiseInit),
            4 => Some(DatagramType::NoiseResponse),
            5 => Some(DatagramType::PathHello),
            6 => Some(DatagramType::Refused),
            DATA_WITH_CID..=0x17 => Some(DatagramType::Packet(PacketType::Data)),
            code => PacketType::from_code(code).filter(|&t| t != PacketType::Data).map(DatagramType::Packet),
        }
    }
}

/// Identifies a connection independently of addresses, so a path whose address changes (NAT
/// rebinding) keeps its connection. Chosen by the endpoint that receives packets carrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ConnectionId(pub [u8; 8]);

impl ConnectionId {
    /// The destination connection id of a datagram (the bytes after the first); `None` if the
    /// datagram is shorter than [`PREFIX_LEN`] or is a Data packet without one.
    pub fn of(datagram: &[u8]) -> Option<ConnectionId> {
        if datagram.first().is_some_and(|&b| b & !PATH_MASK & TYPE_MASK == DATA_NO_CID) {
            return None;
        }
        Some(ConnectionId(datagram.get(1..PREFIX_LEN)?.try_into().ok()?))
    }
}

/// A packet's header (PROTOCOL.md §7.2). Initial and Accept: `version << 5 | type`, the 8-byte
/// destination connection id, the path id (varint), the packet number (varint). Data:
/// `version << 5 | 0x08 | path` and the connection id (a client's), or `version << 5 | 0x10 |
/// path` and none (a server's: its client knows its connection by its own socket, §7.4), then
/// the packet number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    pub ty: PacketType,
    /// The destination connection id: always there but in a server's Data packets.
    pub dcid: Option<ConnectionId>,
    /// The path this packet was sent on (0..8).
    pub path: u8,
    /// Per-path packet number: counts transmissions on the path (CTCP's seqno), never reused.
    pub number: u64,
}

impl PacketHeader {
    /// Writes the header. An Initial or Accept always carries a connection id (none given:
    /// zeros, which no receiver takes).
    pub fn write(&self, w: &mut Writer<'_>) {
        debug_assert!(u64::from(self.path) < MAX_PATHS);
        match (self.ty, self.dcid) {
            (PacketType::Data, dcid) => {
                let form = if dcid.is_some() { DATA_WITH_CID } else { DATA_NO_CID };
                w.u8(VERSION << TYPE_BITS | form | (self.path & PATH_MASK));
                if let Some(cid) = dcid {
                    w.put(&cid.0);
                }
            }
            (ty, dcid) => {
                debug_assert!(dcid.is_some(), "an Initial or Accept names its connection");
                w.u8(DatagramType::Packet(ty).first_byte());
                w.put(&dcid.unwrap_or_default().0);
                w.varint(self.path.into());
            }
        }
        w.varint(self.number);
    }

    pub fn parse(r: &mut Reader<'_>) -> Result<PacketHeader, WireError> {
        let first = r.u8()?;
        if first >> TYPE_BITS != VERSION {
            return Err(WireError::UnsupportedVersion(first >> TYPE_BITS));
        }
        let code = first & TYPE_MASK;
        let (ty, dcid, path) = match code & !PATH_MASK {
            DATA_WITH_CID => (PacketType::Data, Some(ConnectionId(r.array()?)), code & PATH_MASK),
            DATA_NO_CID => (PacketType::Data, None, code & PATH_MASK),
            _ => {
                let ty = PacketType::from_code(code)
                    .filter(|&t| t != PacketType::Data)
                    .ok_or(WireError::UnknownPacketType(code))?;
                let dcid = ConnectionId(r.array()?);
                (ty, Some(dcid), r.varint_max(MAX_PATHS - 1, "path")? as u8)
            }
        };
        let number = r.varint()?;
        Ok(PacketHeader { ty, dcid, path, number })
    }

    /// Bytes [`PacketHeader::write`] produces.
    pub fn encoded_len(&self) -> usize {
        let path = if self.ty == PacketType::Data { 0 } else { super::varint_len(self.path.into()) };
        let cid = if self.dcid.is_some() || self.ty != PacketType::Data { 8 } else { 0 };
        1 + cid + path + super::varint_len(self.number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(h: &PacketHeader) -> Vec<u8> {
        let mut out = Vec::new();
        h.write(&mut Writer::new(&mut out));
        assert_eq!(out.len(), h.encoded_len());
        out
    }

    #[test]
    fn round_trip_and_refusals() {
        let cid = ConnectionId([1, 2, 3, 4, 5, 6, 7, 8]);
        let accept = PacketHeader { ty: PacketType::Accept, dcid: Some(cid), path: 3, number: 70_000 };
        let out = written(&accept);
        assert_eq!(out.len(), 1 + 8 + 1 + 4);
        assert_eq!(PacketHeader::parse(&mut Reader::new(&out)).unwrap(), accept);
        for cut in 0..out.len() {
            assert!(matches!(
                PacketHeader::parse(&mut Reader::new(&out[..cut])),
                Err(WireError::Truncated { .. })
            ));
        }
        let mut bad = out.clone();
        bad[0] = 1 << 5 | 1;
        assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::UnsupportedVersion(1)));
        // Type 2 (version 1's Data with a path varint) and the unused codes are refused.
        for code in [2, 7, 9 + 15, 31] {
            bad[0] = VERSION << 5 | code;
            let code = code & TYPE_MASK;
            assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::UnknownPacketType(code)));
        }
        bad = out.clone();
        bad[9] = 8;
        assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::OutOfRange("path")));
    }

    /// A Data packet carries its path in the first byte, and the connection id only when a
    /// client sends it (PROTOCOL.md §7.2): 1 + 8 + number bytes, or 1 + number bytes.
    #[test]
    fn data_headers_carry_the_path_in_the_first_byte() {
        let cid = ConnectionId([9; 8]);
        for path in 0..MAX_PATHS as u8 {
            for (dcid, len) in [(Some(cid), 11), (None, 3)] {
                let h = PacketHeader { ty: PacketType::Data, dcid, path, number: 300 };
                let out = written(&h);
                assert_eq!(out.len(), len);
                assert_eq!(out[0] & PATH_MASK, path);
                assert_eq!(DatagramType::of(&out), Some(DatagramType::Packet(PacketType::Data)));
                assert_eq!(ConnectionId::of(&out), dcid.filter(|_| out.len() >= PREFIX_LEN));
                assert_eq!(PacketHeader::parse(&mut Reader::new(&out)).unwrap(), h);
                for cut in 0..out.len() {
                    assert!(matches!(
                        PacketHeader::parse(&mut Reader::new(&out[..cut])),
                        Err(WireError::Truncated { .. })
                    ));
                }
            }
        }
        // A number written longer than it needs parses, but not to the canonical length (the
        // sealers refuse it, §13.4).
        let bytes = [VERSION << 5 | DATA_NO_CID | 2, 0x40, 0x05];
        let h = PacketHeader::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!((h.path, h.number, h.dcid), (2, 5, None));
        assert_ne!(h.encoded_len(), bytes.len());
    }

    /// Every first byte is read back as the type that wrote it; the security layer's bytes are
    /// the ones PROTOCOL.md §13.2 lists; nothing else is taken for a type.
    #[test]
    fn datagram_types_by_first_byte() {
        let all = [
            DatagramType::Packet(PacketType::Initial),
            DatagramType::Packet(PacketType::Accept),
            DatagramType::Packet(PacketType::Data),
            DatagramType::NoiseInit,
            DatagramType::NoiseResponse,
            DatagramType::PathHello,
            DatagramType::Refused,
        ];
        for ty in all {
            assert_eq!(DatagramType::of(&[ty.first_byte(), 0]), Some(ty));
        }
        let firsts: Vec<u8> = all[3..].iter().map(|t| t.first_byte()).collect();
        assert_eq!(firsts, [0x43, 0x44, 0x45, 0x46]);
        let known: Vec<u8> = (0..=255u8).filter(|&b| DatagramType::of(&[b]).is_some()).collect();
        let data: Vec<u8> = (0x48..=0x57).collect();
        assert_eq!(known, [&[0x40, 0x41, 0x43, 0x44, 0x45, 0x46][..], &data].concat());
        assert_eq!(DatagramType::of(&[]), None);
        assert_eq!(DatagramType::of(&[DatagramType::PathHello.first_byte_of_version(VERSION + 1)]), None);
    }

    /// A prefix written for any type gives back its type and connection id; a packet header
    /// with a connection id starts with the same prefix.
    #[test]
    fn prefix_round_trip() {
        let cid = ConnectionId([9, 8, 7, 6, 5, 4, 3, 2]);
        let mut out = [0u8; PREFIX_LEN + 3];
        DatagramType::NoiseResponse.write_prefix(cid, &mut out);
        assert_eq!(DatagramType::of(&out), Some(DatagramType::NoiseResponse));
        assert_eq!(ConnectionId::of(&out), Some(cid));
        assert_eq!(ConnectionId::of(&out[..PREFIX_LEN - 1]), None);
        for ty in [PacketType::Accept, PacketType::Data] {
            let packet = written(&PacketHeader { ty, dcid: Some(cid), path: 0, number: 5 });
            DatagramType::Packet(ty).write_prefix(cid, &mut out);
            assert_eq!(packet[..PREFIX_LEN], out[..PREFIX_LEN]);
        }
    }
}
