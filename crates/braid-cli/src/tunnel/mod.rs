//! `braid tun` and `braid server --tun`: whole-device bonding (docs/TUN.md).
//!
//! The client's TUN device feeds a userspace TCP/IP stack (`ipstack`): each TCP connection an
//! application opens is terminated there and carried as a braid stream (a TUN_CONNECT request;
//! the server connects to the destination from its own address), so TCP never runs over TCP
//! and braid's coding and paths apply to it. UDP flows and ICMP echo travel as braid's
//! unreliable datagrams (repaired across datagrams, never retransmitted, dropped past their
//! deadline); the server keeps a bounded NAT table of one socket per flow with an idle timeout.
//! A control stream (TUN_OPEN) hands the client its address from the server's pool and lives
//! as long as the tunnel.

pub mod client;
pub mod pool;
pub mod server;

use std::net::{Ipv4Addr, SocketAddrV4};

/// Request kinds on a stream (after `request::ECHO`).
pub const TUN_OPEN: u8 = 5;
pub const TUN_CONNECT: u8 = 6;

/// Datagram kinds.
pub const UDP: u8 = 1;
pub const ICMP_ECHO: u8 = 2;

/// A client → server UDP datagram: kind, flow, destination, payload.
pub fn udp_out(flow: u32, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(11 + payload.len());
    d.push(UDP);
    d.extend_from_slice(&flow.to_be_bytes());
    d.extend_from_slice(&dst.ip().octets());
    d.extend_from_slice(&dst.port().to_be_bytes());
    d.extend_from_slice(payload);
    d
}

/// Parses [`udp_out`]; `None` if it is too short or not UDP.
pub fn parse_udp_out(d: &[u8]) -> Option<(u32, SocketAddrV4, &[u8])> {
    if d.len() < 11 || d[0] != UDP {
        return None;
    }
    let flow = u32::from_be_bytes(d[1..5].try_into().ok()?);
    let ip = Ipv4Addr::new(d[5], d[6], d[7], d[8]);
    let port = u16::from_be_bytes([d[9], d[10]]);
    Some((flow, SocketAddrV4::new(ip, port), &d[11..]))
}

/// A server → client datagram of a flow (UDP) or an echo (ICMP): kind, id, payload.
pub fn reply(kind: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(5 + payload.len());
    d.push(kind);
    d.extend_from_slice(&id.to_be_bytes());
    d.extend_from_slice(payload);
    d
}

/// Parses [`reply`].
pub fn parse_reply(d: &[u8]) -> Option<(u8, u32, &[u8])> {
    if d.len() < 5 {
        return None;
    }
    Some((d[0], u32::from_be_bytes(d[1..5].try_into().ok()?), &d[5..]))
}

/// A client → server ICMP echo request: kind, id, destination, the ICMP message.
pub fn echo_out(id: u32, dst: Ipv4Addr, icmp: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(9 + icmp.len());
    d.push(ICMP_ECHO);
    d.extend_from_slice(&id.to_be_bytes());
    d.extend_from_slice(&dst.octets());
    d.extend_from_slice(icmp);
    d
}

/// Parses [`echo_out`].
pub fn parse_echo_out(d: &[u8]) -> Option<(u32, Ipv4Addr, &[u8])> {
    if d.len() < 9 + 8 || d[0] != ICMP_ECHO {
        return None;
    }
    let id = u32::from_be_bytes(d[1..5].try_into().ok()?);
    Some((id, Ipv4Addr::new(d[5], d[6], d[7], d[8]), &d[9..]))
}

/// The Internet checksum (RFC 1071) of `bytes`.
pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for chunk in bytes.chunks(2) {
        let word = if chunk.len() == 2 {
            u16::from_be_bytes([chunk[0], chunk[1]])
        } else {
            u16::from(chunk[0]) << 8
        };
        sum += u32::from(word);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_round_trip_and_short_ones_are_refused() {
        let dst = SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 53);
        let d = udp_out(7, dst, b"query");
        assert_eq!(parse_udp_out(&d), Some((7, dst, &b"query"[..])));
        assert_eq!(parse_udp_out(&d[..10]), None);
        let r = reply(UDP, 7, b"answer");
        assert_eq!(parse_reply(&r), Some((UDP, 7, &b"answer"[..])));
        assert_eq!(parse_reply(&r[..4]), None);
        let e = echo_out(9, *dst.ip(), &[8, 0, 0, 0, 0, 1, 0, 1]);
        assert_eq!(parse_echo_out(&e), Some((9, *dst.ip(), &[8, 0, 0, 0, 0, 1, 0, 1][..])));
        assert_eq!(parse_echo_out(&e[..12]), None);
    }

    #[test]
    fn checksum_verifies_to_zero() {
        let mut msg = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'h', b'i', b'!'];
        let c = checksum(&msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&msg), 0);
    }
}
