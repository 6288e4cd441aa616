//! UDP sockets, one per path: binding to an address or an interface, with errors that say what
//! to do; and `PathSocket`, a bound socket as the driver uses it (GSO batches, `--emulate`
//! links).

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::task::{Context, Poll};

use braid_proto::Instant;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::emulate::{EmulatedLink, Emulation};
use crate::gso::{Batcher, RecvBufs};
use crate::Error;

/// Where a path's socket lives: `--path 192.168.8.10`, `--path 192.168.8.10:4000`, `--path wlan0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSpec {
    /// Any local address the system picks (the route to the server decides).
    Any,
    /// A local address (port 0: any port).
    Addr(SocketAddr),
    /// A network interface by name.
    Interface(String),
}

impl FromStr for PathSpec {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() || s == "any" {
            return Ok(PathSpec::Any);
        }
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(PathSpec::Addr(a));
        }
        if let Ok(ip) = s.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            return Ok(PathSpec::Addr(SocketAddr::new(ip, 0)));
        }
        Ok(PathSpec::Interface(s.to_string()))
    }
}

impl fmt::Display for PathSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathSpec::Any => f.write_str("any"),
            PathSpec::Addr(a) if a.port() == 0 => write!(f, "{}", a.ip()),
            PathSpec::Addr(a) => write!(f, "{a}"),
            PathSpec::Interface(i) => f.write_str(i),
        }
    }
}

/// Names of the interfaces that exist (for error messages).
pub fn interface_names() -> Vec<String> {
    let mut names: Vec<String> =
        if_addrs::get_if_addrs().map(|v| v.into_iter().map(|i| i.name).collect()).unwrap_or_default();
    names.sort();
    names.dedup();
    names
}

/// Socket buffer size asked for: a few bandwidth-delay products of a fast path, so bursts are
/// not dropped by the kernel before the driver reads them. The kernel caps it at
/// `net.core.rmem_max` unless the process may pass that (CAP_NET_ADMIN: `SO_RCVBUFFORCE`).
const SOCKET_BUFFER: usize = 8 << 20;

fn bind_error(addr: SocketAddr, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::AddrInUse => Error::AddrInUse(addr),
        io::ErrorKind::AddrNotAvailable => Error::AddrNotAvailable(addr),
        _ => Error::Bind { addr, source: e },
    }
}

/// Binds a UDP socket at `addr` with large buffers.
pub(crate) fn bind_udp(addr: SocketAddr, device: Option<&str>) -> Result<UdpSocket, Error> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| Error::Bind { addr, source: e })?;
    // Best effort: a smaller buffer works, only slower.
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    // Past rmem_max where allowed (root, CAP_NET_ADMIN); refused otherwise, leaving the above.
    // A server's one socket queues every client's datagrams while its driver is busy: with
    // rmem_max at 4 MiB, a 1,000-connection soak lost datagrams there by the hundred thousand.
    #[cfg(target_os = "linux")]
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size_force(&socket, SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(device) = device {
        // SO_BINDTODEVICE needs CAP_NET_RAW on most kernels; the address binding below already
        // picks the interface's source address, so without the capability we go on with that.
        if let Err(e) = socket.bind_device(Some(device.as_bytes())) {
            tracing::debug!("SO_BINDTODEVICE {device}: {e}; using the interface's address only");
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = device;
    socket.set_nonblocking(true).map_err(|e| Error::Bind { addr, source: e })?;
    socket.bind(&addr.into()).map_err(|e| bind_error(addr, e))?;
    UdpSocket::from_std(socket.into()).map_err(|e| Error::Bind { addr, source: e })
}

/// The receive buffer the kernel gave `udp`, in bytes as it reports them (Linux reports twice
/// the size it was asked for, its bookkeeping included, and caps the request at
/// `net.core.rmem_max`), and whether the request was capped.
pub(crate) fn recv_buffer(udp: &UdpSocket) -> (usize, bool) {
    let got = socket2::SockRef::from(udp).recv_buffer_size().unwrap_or(0);
    let granted = if cfg!(any(target_os = "linux", target_os = "android")) { got / 2 } else { got };
    (got, granted < SOCKET_BUFFER)
}

/// The kernel's number for `udp` (its inode), to find it in `/proc/net/udp` (Linux only).
pub(crate) fn socket_inode(udp: &UdpSocket) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // The descriptor's link reads `socket:[INODE]`.
        let link = std::fs::read_link(format!("/proc/self/fd/{}", udp.as_raw_fd())).ok()?;
        let link = link.to_str()?;
        link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = udp;
        None
    }
}

/// Datagrams the kernel dropped on the UDP socket numbered `inode` because its receive buffer
/// was full (the `drops` column of `/proc/net/udp` or `udp6`, Linux only): what a server that
/// does not read in time loses before braid sees it. `None` if the socket is not listed.
pub fn kernel_drops(inode: u64) -> Option<u64> {
    ["/proc/net/udp", "/proc/net/udp6"].iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        text.lines().skip(1).find_map(|line| {
            // sl local remote st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(9)?.parse::<u64>().ok()? != inode {
                return None;
            }
            fields.last()?.parse().ok()
        })
    })
}

/// The local address a path's socket binds to, for a server at `server`.
pub(crate) fn resolve_local(
    spec: &PathSpec,
    server: SocketAddr,
) -> Result<(SocketAddr, Option<String>), Error> {
    let unspecified: IpAddr = if server.is_ipv4() { [0, 0, 0, 0].into() } else { [0u16; 8].into() };
    match spec {
        PathSpec::Any => Ok((SocketAddr::new(unspecified, 0), None)),
        PathSpec::Addr(a) => {
            if a.is_ipv4() != server.is_ipv4() {
                return Err(Error::Family { path: spec.to_string(), server });
            }
            Ok((*a, None))
        }
        PathSpec::Interface(name) => {
            let all = if_addrs::get_if_addrs().unwrap_or_default();
            let mine: Vec<_> = all.iter().filter(|i| &i.name == name).collect();
            if mine.is_empty() {
                return Err(Error::NoSuchInterface {
                    name: name.clone(),
                    available: interface_names().join(", "),
                });
            }
            let ip = mine
                .iter()
                .map(|i| i.ip())
                .find(|ip| ip.is_ipv4() == server.is_ipv4())
                .ok_or_else(|| Error::Family { path: name.clone(), server })?;
            Ok((SocketAddr::new(ip, 0), Some(name.clone())))
        }
    }
}

/// One path's socket as the driver uses it: the UDP socket, its GSO batcher, and its emulated
/// links (`--emulate`), one each way (the server's: for everything its socket carries).
pub(crate) struct PathSocket {
    pub udp: UdpSocket,
    batch: Batcher,
    egress: Option<EmulatedLink>,
    ingress: Option<EmulatedLink>,
}

impl PathSocket {
    /// `seed` seeds the emulated links (if any): `seed` one way, `seed ^ 1` the other.
    pub fn new(udp: UdpSocket, emulate: Option<Emulation>, seed: u64) -> Result<PathSocket, Error> {
        Ok(PathSocket {
            batch: Batcher::new(&udp)?,
            udp,
            egress: emulate.map(|e| EmulatedLink::new(e, seed)),
            ingress: emulate.map(|e| EmulatedLink::new(e, seed ^ 1)),
        })
    }

    /// Queues `data` for `to` (a client's socket is connected: `to` is its server): onto the
    /// emulated link, or into the batch (sent when full, or at [`PathSocket::flush`]).
    pub fn send(&mut self, now: Instant, to: SocketAddr, data: &[u8]) -> io::Result<()> {
        match &mut self.egress {
            Some(link) => {
                link.push(now, to, data);
                Ok(())
            }
            None => self.batch.push(&self.udp, to, data),
        }
    }

    /// What the emulated link delivered by `now` goes into the batch.
    pub fn release_egress(&mut self, now: Instant) {
        while let Some((to, d)) = self.egress.as_mut().and_then(|l| l.pop(now)) {
            let _ = self.batch.push(&self.udp, to, &d);
        }
    }

    /// Sends the queued batch.
    pub fn flush(&mut self) -> io::Result<()> {
        self.batch.flush(&self.udp)
    }

    /// A datagram that came in: the emulated link holds it (true) until
    /// [`PathSocket::pop_ingress`], or there is none (false: handle it now).
    pub fn hold(&mut self, now: Instant, from: SocketAddr, data: &[u8]) -> bool {
        let Some(link) = &mut self.ingress else { return false };
        link.push(now, from, data);
        true
    }

    /// A datagram the emulated link delivered by `now`, with its source.
    pub fn pop_ingress(&mut self, now: Instant) -> Option<(SocketAddr, Vec<u8>)> {
        self.ingress.as_mut()?.pop(now)
    }

    /// When an emulated link next delivers.
    pub fn next_release(&self) -> Option<Instant> {
        [&self.egress, &self.ingress].into_iter().flatten().filter_map(EmulatedLink::next_release).min()
    }

    /// Nothing of ours on the emulated link any more (a CLOSE may still be on it).
    pub fn egress_idle(&self) -> bool {
        self.egress.as_ref().is_none_or(|l| l.next_release().is_none())
    }

    /// Datagrams the emulated links dropped, both ways.
    pub fn emulated_drops(&self) -> u64 {
        let dropped = |l: &EmulatedLink| l.dropped_random + l.dropped_queue + l.dropped_mtu;
        self.egress.as_ref().map_or(0, dropped) + self.ingress.as_ref().map_or(0, dropped)
    }

    /// Waits for datagrams and reads what is waiting into `bufs`; the number of messages.
    pub fn poll_recv(&self, cx: &mut Context<'_>, bufs: &mut RecvBufs) -> Poll<io::Result<usize>> {
        self.batch.poll_recv(&self.udp, cx, bufs)
    }

    /// Reads what is waiting into `bufs` (`WouldBlock` if nothing); the number of messages.
    pub fn try_recv(&self, bufs: &mut RecvBufs) -> io::Result<usize> {
        self.batch.try_recv(&self.udp, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_specs() {
        assert_eq!("10.0.0.2".parse::<PathSpec>().unwrap(), PathSpec::Addr("10.0.0.2:0".parse().unwrap()));
        assert_eq!("[::1]:5".parse::<PathSpec>().unwrap(), PathSpec::Addr("[::1]:5".parse().unwrap()));
        assert_eq!("::1".parse::<PathSpec>().unwrap(), PathSpec::Addr("[::1]:0".parse().unwrap()));
        assert_eq!("wlan0".parse::<PathSpec>().unwrap(), PathSpec::Interface("wlan0".into()));
        assert_eq!("".parse::<PathSpec>().unwrap(), PathSpec::Any);
    }

    #[test]
    fn missing_interface_lists_the_real_ones() {
        let server: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let err = resolve_local(&PathSpec::Interface("nosuch0".into()), server).unwrap_err().to_string();
        assert!(err.contains("nosuch0") && err.contains("lo"), "{err}");
        let (addr, dev) = resolve_local(&PathSpec::Interface("lo".into()), server).unwrap();
        assert!(addr.ip().is_loopback());
        assert_eq!(dev.as_deref(), Some("lo"));
    }

    /// Datagrams sent to a socket that is not read, past its receive buffer, are counted as
    /// the kernel's drops on that socket.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn kernel_drops_are_read_for_the_socket() {
        let udp = bind_udp("127.0.0.1:0".parse().unwrap(), None).unwrap();
        socket2::SockRef::from(&udp).set_recv_buffer_size(4096).unwrap();
        let inode = socket_inode(&udp).expect("inode");
        assert_eq!(kernel_drops(inode), Some(0));
        let to = udp.local_addr().unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..200 {
            sender.send_to(&[7; 1000], to).unwrap();
        }
        let drops = kernel_drops(inode).expect("listed");
        assert!((100..=200).contains(&drops), "{drops} drops");
        assert_eq!(kernel_drops(u64::MAX), None);
    }

    #[tokio::test]
    async fn port_in_use_is_named() {
        let a = bind_udp("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let taken = a.local_addr().unwrap();
        let err = bind_udp(taken, None).unwrap_err().to_string();
        assert!(err.contains("already in use") && err.contains(&taken.to_string()), "{err}");
    }
}
