//! Packet header (PROTOCOL.md §7) and the first byte of every datagram braid sends, the
//! runtime's security-layer messages included (PROTOCOL.md §13.2): the type codes live here only.

use super::{Reader, WireError, Writer};

/// The packet format version this build speaks.
pub const VERSION: u8 = 1;

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
        VERSION << 5 | self.code()
    }

    /// The type of a datagram; `None` for an empty one, another version or an unknown type.
    pub fn of(datagram: &[u8]) -> Option<DatagramType> {
        let &first = datagram.first()?;
        if first >> 5 != VERSION {
            return None;
        }
        match first & 0x1f {
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
        w.u8(VERSION << 5 | self.ty.code());
        w.put(&self.dcid.0);
        w.varint(self.path.into());
        w.varint(self.number);
    }

    pub fn parse(r: &mut Reader<'_>) -> Result<PacketHeader, WireError> {
        let first = r.u8()?;
        if first >> 5 != VERSION {
            return Err(WireError::UnsupportedVersion(first >> 5));
        }
        let ty = PacketType::from_code(first & 0x1f).ok_or(WireError::UnknownPacketType(first & 0x1f))?;
        let dcid = ConnectionId(r.array()?);
        let path = r.varint_max(MAX_PATHS - 1, "path")? as u8;
        let number = r.varint()?;
        Ok(PacketHeader { ty, dcid, path, number })
    }

    /// Bytes [`PacketHeader::write`] produces.
    pub fn encoded_len(&self) -> usize {
        1 + 8 + super::varint_len(self.path.into()) + super::varint_len(self.number)
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
    }
}
