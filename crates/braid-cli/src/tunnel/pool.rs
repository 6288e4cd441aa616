//! The server's pool of tunnel addresses (`--tun-pool CIDR`).

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

/// IPv4 addresses handed to clients: the pool's hosts from its second one on (the first is
/// kept for the server's side of the tunnel network), one per tunnel, returned when it ends.
pub struct Pool {
    network: u32,
    prefix: u8,
    used: Mutex<HashSet<u32>>,
}

impl Pool {
    /// Parses `A.B.C.D/N` (N from 8 to 30).
    pub fn parse(cidr: &str) -> Result<Pool, String> {
        let bad =
            || format!("--tun-pool {cidr:?}: expected an IPv4 network such as 10.77.0.0/24 (prefix 8 to 30)");
        let (ip, len) = cidr.split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = len.parse().map_err(|_| bad())?;
        if !(8..=30).contains(&prefix) {
            return Err(bad());
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Pool { network: u32::from(ip) & mask, prefix, used: Mutex::new(HashSet::new()) })
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// The server's own address in the tunnel network (the pool's first host).
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    /// A free address, or `None` if the pool is exhausted.
    pub fn take(&self) -> Option<Ipv4Addr> {
        let hosts = (1u32 << (32 - self.prefix)) - 2;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let free = (2..=hosts).map(|i| self.network + i).find(|a| !used.contains(a))?;
        used.insert(free);
        Some(Ipv4Addr::from(free))
    }

    pub fn give_back(&self, addr: Ipv4Addr) {
        self.used.lock().unwrap_or_else(|e| e.into_inner()).remove(&u32::from(addr));
    }

    /// The host part of `addr` in the pool (2 for the first address handed out).
    pub fn index(&self, addr: Ipv4Addr) -> u32 {
        u32::from(addr).wrapping_sub(self.network)
    }

    /// Host bits of the pool's addresses.
    pub fn host_bits(&self) -> u8 {
        32 - self.prefix
    }
}

/// The tunnels' IPv6 addresses (`--tun-pool6 PREFIX`): a client's is the prefix plus the host
/// index of its IPv4 address, so the IPv4 pool's bookkeeping covers both.
pub struct Pool6 {
    network: u128,
    prefix: u8,
}

impl Pool6 {
    /// Parses `PREFIX/N` (N from 48 to 124), which must hold as many hosts as the IPv4 pool.
    pub fn parse(cidr: &str, v4: &Pool) -> Result<Pool6, String> {
        let bad =
            || format!("--tun-pool6 {cidr:?}: expected an IPv6 prefix such as fd77::/64 (length 48 to 124)");
        let (ip, len) = cidr.split_once('/').ok_or_else(bad)?;
        let ip: Ipv6Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = len.parse().map_err(|_| bad())?;
        if !(48..=124).contains(&prefix) {
            return Err(bad());
        }
        if 128 - prefix < v4.host_bits() {
            return Err(format!(
                "--tun-pool6 {cidr:?}: too small for --tun-pool's {} host bits (use a prefix of at most /{})",
                v4.host_bits(),
                128 - v4.host_bits()
            ));
        }
        let mask = u128::MAX << (128 - prefix);
        Ok(Pool6 { network: u128::from(ip) & mask, prefix })
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// The IPv6 address that goes with the IPv4 pool's `index`.
    pub fn address(&self, index: u32) -> Ipv6Addr {
        Ipv6Addr::from(self.network | u128::from(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_each_host_once_and_takes_them_back() {
        let pool = Pool::parse("10.77.0.9/30").unwrap();
        assert_eq!(pool.gateway(), Ipv4Addr::new(10, 77, 0, 9));
        assert_eq!(pool.take(), Some(Ipv4Addr::new(10, 77, 0, 10)));
        assert_eq!(pool.take(), None);
        pool.give_back(Ipv4Addr::new(10, 77, 0, 10));
        assert_eq!(pool.take(), Some(Ipv4Addr::new(10, 77, 0, 10)));
        for bad in ["10.0.0.0", "10.0.0.0/31", "x/24", "10.0.0.0/7"] {
            assert!(Pool::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ipv6_addresses_follow_the_ipv4_grant() {
        let v4 = Pool::parse("10.77.0.0/24").unwrap();
        let v6 = Pool6::parse("fd77::1/64", &v4).unwrap();
        assert_eq!(v6.prefix(), 64);
        let a = v4.take().unwrap();
        assert_eq!(v6.address(v4.index(a)), "fd77::2".parse::<Ipv6Addr>().unwrap());
        assert!(Pool6::parse("fd77::/124", &v4).is_err(), "4 host bits < 8");
        assert!(Pool6::parse("fd77::/120", &v4).is_ok());
        for bad in ["fd77::", "fd77::/47", "fd77::/125", "10.0.0.0/24", "x/64"] {
            assert!(Pool6::parse(bad, &v4).is_err(), "{bad}");
        }
    }
}
