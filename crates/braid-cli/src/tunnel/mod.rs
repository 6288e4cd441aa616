//! `braid tun` and `braid server --tun`: whole-device bonding (docs/TUN.md).
//!
//! The client's TUN device feeds a userspace TCP/IP stack (`ipstack`): each TCP connection an
//! application opens is terminated there and carried as a braid stream (a TUN_CONNECT request;
//! the server connects to the destination from its own address), so TCP never runs over TCP
//! and braid's coding and paths apply to it. UDP flows and ICMP echo travel as braid's
//! unreliable datagrams (repaired across datagrams, never retransmitted, dropped past their
//! deadline); the server keeps a bounded NAT table of one socket per flow with an idle timeout.
//! A control stream (TUN_OPEN) hands the client its addresses (IPv4, and IPv6 with
//! `--tun-pool6`) from the server's pools and lives as long as the tunnel. A tunnel message
//! larger than one datagram is split into fragments (`fragment`), so the device can keep
//! IPv6's 1280-byte minimum MTU on paths that carry only 1280-byte packets.

pub mod client;
pub mod fragment;
pub mod pool;
pub mod server;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Request kinds on a stream (after `request::ECHO`).
pub const TUN_OPEN: u8 = 5;
pub const TUN_CONNECT: u8 = 6;

/// Datagram kinds.
pub const UDP: u8 = 1;
pub const ICMP_ECHO: u8 = 2;
/// A UDP datagram to an IPv6 destination (replies use [`UDP`]: the flow names the socket).
pub const UDP6: u8 = 3;
/// An ICMPv6 echo request, and its answer.
pub const ICMP6_ECHO: u8 = 4;
/// One piece of a tunnel message too large for one datagram (`fragment`).
pub const FRAGMENT: u8 = 5;

/// A client → server UDP datagram: kind ([`UDP`] or [`UDP6`]), flow, destination, payload.
pub fn udp_out(flow: u32, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(23 + payload.len());
    match dst.ip() {
        IpAddr::V4(ip) => {
            d.push(UDP);
            d.extend_from_slice(&flow.to_be_bytes());
            d.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            d.push(UDP6);
            d.extend_from_slice(&flow.to_be_bytes());
            d.extend_from_slice(&ip.octets());
        }
    }
    d.extend_from_slice(&dst.port().to_be_bytes());
    d.extend_from_slice(payload);
    d
}

/// Parses [`udp_out`]; `None` if it is too short or not UDP.
pub fn parse_udp_out(d: &[u8]) -> Option<(u32, SocketAddr, &[u8])> {
    let (ip, rest) = match *d.first()? {
        UDP => ip4(d.get(5..)?)?,
        UDP6 => ip6(d.get(5..)?)?,
        _ => return None,
    };
    let flow = u32::from_be_bytes(d[1..5].try_into().ok()?);
    let port = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?);
    Some((flow, SocketAddr::new(ip, port), &rest[2..]))
}

fn ip4(b: &[u8]) -> Option<(IpAddr, &[u8])> {
    let o: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some((IpAddr::V4(Ipv4Addr::from(o)), &b[4..]))
}

fn ip6(b: &[u8]) -> Option<(IpAddr, &[u8])> {
    let o: [u8; 16] = b.get(..16)?.try_into().ok()?;
    Some((IpAddr::V6(Ipv6Addr::from(o)), &b[16..]))
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

/// A client → server echo request: kind ([`ICMP_ECHO`] or [`ICMP6_ECHO`]), id, destination,
/// the ICMP message.
pub fn echo_out(id: u32, dst: IpAddr, icmp: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(21 + icmp.len());
    match dst {
        IpAddr::V4(ip) => {
            d.push(ICMP_ECHO);
            d.extend_from_slice(&id.to_be_bytes());
            d.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            d.push(ICMP6_ECHO);
            d.extend_from_slice(&id.to_be_bytes());
            d.extend_from_slice(&ip.octets());
        }
    }
    d.extend_from_slice(icmp);
    d
}

/// Parses [`echo_out`]; the message holds at least an echo header (8 bytes).
pub fn parse_echo_out(d: &[u8]) -> Option<(u32, IpAddr, &[u8])> {
    let (ip, icmp) = match *d.first()? {
        ICMP_ECHO => ip4(d.get(5..)?)?,
        ICMP6_ECHO => ip6(d.get(5..)?)?,
        _ => return None,
    };
    if icmp.len() < 8 {
        return None;
    }
    Some((u32::from_be_bytes(d[1..5].try_into().ok()?), ip, icmp))
}

/// The Internet checksum (RFC 1071) of `bytes`.
pub fn checksum(bytes: &[u8]) -> u16 {
    fold(sum(0, bytes))
}

/// The ICMPv6 checksum (RFC 4443 §2.3): over the IPv6 pseudo-header (RFC 8200 §8.1: source,
/// destination, upper-layer length, next header 58) and the message, its checksum field zero.
pub fn icmp6_checksum(src: Ipv6Addr, dst: Ipv6Addr, message: &[u8]) -> u16 {
    let mut s = sum(0, &src.octets());
    s = sum(s, &dst.octets());
    s = sum(s, &(message.len() as u32).to_be_bytes());
    s = sum(s, &[0, 0, 0, 58]);
    fold(sum(s, message))
}

fn sum(mut sum: u64, bytes: &[u8]) -> u64 {
    for chunk in bytes.chunks(2) {
        let word = if chunk.len() == 2 {
            u16::from_be_bytes([chunk[0], chunk[1]])
        } else {
            u16::from(chunk[0]) << 8
        };
        sum += u64::from(word);
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
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
        let dst = SocketAddr::from((Ipv4Addr::new(10, 1, 2, 3), 53));
        let d = udp_out(7, dst, b"query");
        assert_eq!(d.len(), 11 + 5);
        assert_eq!(parse_udp_out(&d), Some((7, dst, &b"query"[..])));
        assert_eq!(parse_udp_out(&d[..10]), None);
        let r = reply(UDP, 7, b"answer");
        assert_eq!(parse_reply(&r), Some((UDP, 7, &b"answer"[..])));
        assert_eq!(parse_reply(&r[..4]), None);
        let e = echo_out(9, dst.ip(), &[8, 0, 0, 0, 0, 1, 0, 1]);
        assert_eq!(parse_echo_out(&e), Some((9, dst.ip(), &[8, 0, 0, 0, 0, 1, 0, 1][..])));
        assert_eq!(parse_echo_out(&e[..12]), None);
    }

    #[test]
    fn ipv6_datagrams_round_trip_and_every_truncation_is_refused() {
        let dst = SocketAddr::from(("fd00:200:2::2".parse::<Ipv6Addr>().unwrap(), 9999));
        let d = udp_out(0xdead_beef, dst, b"v6");
        assert_eq!((d[0], d.len()), (UDP6, 23 + 2));
        assert_eq!(parse_udp_out(&d), Some((0xdead_beef, dst, &b"v6"[..])));
        for n in 0..23 {
            assert_eq!(parse_udp_out(&d[..n]), None, "{n} bytes");
        }
        let msg = [128, 0, 0, 0, 0, 1, 0, 1, 42];
        let e = echo_out(3, dst.ip(), &msg);
        assert_eq!(e[0], ICMP6_ECHO);
        assert_eq!(parse_echo_out(&e), Some((3, dst.ip(), &msg[..])));
        for n in 0..e.len() - 1 {
            assert_eq!(parse_echo_out(&e[..n]), None, "{n} bytes");
        }
    }

    #[test]
    fn checksum_verifies_to_zero() {
        let mut msg = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'h', b'i', b'!'];
        let c = checksum(&msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&msg), 0);
    }

    #[test]
    fn icmp6_checksum_verifies_to_zero_and_covers_the_pseudo_header() {
        // An echo reply ::1 → ::1, id 0x1234, seq 1, payload "abcd" (the kernel checks the
        // real thing: the smoke test's ping6 through the tunnel).
        let lo = Ipv6Addr::LOCALHOST;
        let mut msg = vec![129, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b', b'c', b'd'];
        let c = icmp6_checksum(lo, lo, &msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        // Verifying over the whole message (checksum included) gives zero.
        assert_eq!(icmp6_checksum(lo, lo, &msg), 0);
        // The pseudo-header counts: another destination gives another checksum.
        assert_ne!(icmp6_checksum(lo, Ipv6Addr::UNSPECIFIED, &msg), 0);
    }
}
