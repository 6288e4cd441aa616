//! Packet header (PROTOCOL.md §7) and the first byte of every datagram braid sends, the
//! runtime's security-layer messages included (PROTOCOL.md §13.2): the type codes live here only.

use super::{Reader, WireError, Writer};

/// The packet format version this build speaks.
pub const VERSION: u8 = 1;

/// Bits of the first byte below the version: the type (PROTOCOL.md §7.2).
const TYPE_BITS: u8 = 5;
const TYPE_MASK: u8 = (1 << TYPE_BITS) - 1;

/// Every datagram braid sends opens with its first byte and the 8-byte connection id of its
/// destination (PROTOCOL.md §7.2, §13.2); what follows depends on the type.
pub const PREFIX_LEN: usize = 9;

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
    /// The type bits of the first byte.
    pub const fn code(self) -> u8 {
        match self {
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
            code => PacketType::from_code(code).map(DatagramType::Packet),
        }
    }
}

/// Identifies a connection independently of addresses, so a path whose address changes (NAT
/// rebinding) keeps its connection. Chosen by the endpoint that receives packets carrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ConnectionId(pub [u8; 8]);

impl ConnectionId {
    /// The destination connection id of any datagram braid sends (the bytes after the first),
    /// whatever its type; `None` if the datagram is shorter than [`PREFIX_LEN`].
    pub fn of(datagram: &[u8]) -> Option<ConnectionId> {
        Some(ConnectionId(datagram.get(1..PREFIX_LEN)?.try_into().ok()?))
    }
}

/// `version << 5 | type`, 8-byte destination connection id, path id, packet number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    pub ty: PacketType,
    pub dcid: ConnectionId,
    /// The path this packet was sent on (0..8).
    pub path: u8,
    /// Per-path packet number: counts transmissions on the path (CTCP's seqno), never reused.
    pub number: u64,
}

impl PacketHeader {
    pub fn write(&self, w: &mut Writer<'_>) {
        w.u8(DatagramType::Packet(self.ty).first_byte());
        w.put(&self.dcid.0);
        w.varint(self.path.into());
        w.varint(self.number);
    }

    pub fn parse(r: &mut Reader<'_>) -> Result<PacketHeader, WireError> {
        let first = r.u8()?;
        if first >> TYPE_BITS != VERSION {
            return Err(WireError::UnsupportedVersion(first >> TYPE_BITS));
        }
        let code = first & TYPE_MASK;
        let ty = PacketType::from_code(code).ok_or(WireError::UnknownPacketType(code))?;
        let dcid = ConnectionId(r.array()?);
        let path = r.varint_max(MAX_PATHS - 1, "path")? as u8;
        let number = r.varint()?;
        Ok(PacketHeader { ty, dcid, path, number })
    }

    /// Bytes [`PacketHeader::write`] produces.
    pub fn encoded_len(&self) -> usize {
        PREFIX_LEN + super::varint_len(self.path.into()) + super::varint_len(self.number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let h = PacketHeader {
            ty: PacketType::Data,
            dcid: ConnectionId([1, 2, 3, 4, 5, 6, 7, 8]),
            path: 3,
            number: 70_000,
        };
        let mut out = Vec::new();
        h.write(&mut Writer::new(&mut out));
        assert_eq!(out.len(), h.encoded_len());
        assert_eq!(PacketHeader::parse(&mut Reader::new(&out)).unwrap(), h);
        for cut in 0..out.len() {
            assert!(matches!(
                PacketHeader::parse(&mut Reader::new(&out[..cut])),
                Err(WireError::Truncated { .. })
            ));
        }
        let mut bad = out.clone();
        bad[0] = 2 << 5 | 2;
        assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::UnsupportedVersion(2)));
        bad[0] = 1 << 5 | 9;
        assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::UnknownPacketType(9)));
        bad = out.clone();
        bad[9] = 8;
        assert_eq!(PacketHeader::parse(&mut Reader::new(&bad)), Err(WireError::OutOfRange("path")));
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
        assert_eq!(firsts, [0x23, 0x24, 0x25, 0x26]);
        let known = (0..=255u8).filter(|&b| DatagramType::of(&[b]).is_some()).count();
        assert_eq!(known, all.len());
        assert_eq!(DatagramType::of(&[]), None);
        assert_eq!(DatagramType::of(&[DatagramType::PathHello.first_byte_of_version(VERSION + 1)]), None);
    }

    /// A prefix written for any type gives back its type and connection id; a packet header
    /// starts with the same prefix.
    #[test]
    fn prefix_round_trip() {
        let cid = ConnectionId([9, 8, 7, 6, 5, 4, 3, 2]);
        let mut out = [0u8; PREFIX_LEN + 3];
        DatagramType::NoiseResponse.write_prefix(cid, &mut out);
        assert_eq!(DatagramType::of(&out), Some(DatagramType::NoiseResponse));
        assert_eq!(ConnectionId::of(&out), Some(cid));
        assert_eq!(ConnectionId::of(&out[..PREFIX_LEN - 1]), None);
        let mut packet = Vec::new();
        PacketHeader { ty: PacketType::Accept, dcid: cid, path: 1, number: 5 }
            .write(&mut Writer::new(&mut packet));
        DatagramType::Packet(PacketType::Accept).write_prefix(cid, &mut out);
        assert_eq!(packet[..PREFIX_LEN], out[..PREFIX_LEN]);
    }
}
