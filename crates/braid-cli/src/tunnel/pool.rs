//! The server's pool of tunnel addresses (`--tun-pool CIDR`).

use std::collections::HashSet;
use std::net::Ipv4Addr;
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
}
