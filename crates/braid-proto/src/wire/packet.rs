//! Packet header (PROTOCOL.md §7).

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
    fn code(self) -> u8 {
        match self {
            PacketType::Initial => 0,
            PacketType::Accept => 1,
            PacketType::Data => 2,
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
        let ty = match first & 0x1f {
            0 => PacketType::Initial,
            1 => PacketType::Accept,
            2 => PacketType::Data,
            other => return Err(WireError::UnknownPacketType(other)),
        };
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
}
