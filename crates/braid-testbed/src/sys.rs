//! The few raw syscalls the testbed needs: entering a network namespace, opening a TUN device,
//! sockets with a chosen protocol and congestion control, and the Ctrl-C flag. Through rustix
//! wherever it has the call; TCP_NOTSENT_LOWAT through socket2 (rustix has no wrapper for it)
//! and the signal handler through signal-hook. The one unsafe call left is the TUN ioctl
//! (rustix's `ioctl` with the ifreq layout, which no maintained crate wraps without taking over
//! the device's configuration too).

use std::fs::File;
use std::io;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::num::NonZeroU64;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::ioctl::Updater;
use rustix::net::{ipproto, AddressFamily, SocketFlags, SocketType};
use rustix::process::{Pid, Signal};
use rustix::thread::LinkNameSpaceType;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Catch SIGINT and SIGTERM: every loop of the testbed polls [`interrupted`] and the run unwinds
/// through its teardown. (The handler only sets the flag; system calls it interrupts restart.)
pub fn install_signal_handlers() {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Fails only for a signal that cannot be caught, which these are not.
        signal_hook::flag::register(signal, &INTERRUPTED).expect("SIGINT and SIGTERM can be caught");
    }
}

/// Whether the process runs as root (namespaces and TUN devices need it).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Send SIGTERM (or SIGKILL when `kill`) to the process group `leader` leads (one the testbed
/// spawned with `process_group(0)`).
pub fn signal_group(leader: u32, kill: bool) {
    send_to_group(leader, if kill { Signal::KILL } else { Signal::TERM });
}

/// Send SIGINT (what Ctrl-C sends) to the process group `leader` leads.
pub fn interrupt_group(leader: u32) {
    send_to_group(leader, Signal::INT);
}

fn send_to_group(leader: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(leader).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// An error a socket read or write with a timeout (or a non-blocking one) returns when it
/// should simply be tried again: nothing ready yet, the timeout ran out, a signal came.
pub fn transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

/// Move the calling thread into the named network namespace (`ip netns add` made it).
pub fn enter_netns(name: &str) -> io::Result<()> {
    let file = File::open(format!("/run/netns/{name}"))
        .or_else(|_| File::open(format!("/var/run/netns/{name}")))
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {name}: {e}")))?;
    rustix::thread::move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))?;
    Ok(())
}

/// Spawn a thread inside network namespace `ns` (threads enter namespaces one by one; the rest
/// of the process stays where it is).
pub fn spawn_in<T: Send + 'static>(
    ns: &str,
    name: &str,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> std::thread::JoinHandle<io::Result<T>> {
    let ns = ns.to_owned();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            enter_netns(&ns)?;
            f()
        })
        .expect("spawn thread")
}

/// `_IOW('T', 202, int)` (linux/if_tun.h); the kernel reads and writes a whole `struct ifreq`.
const TUNSETIFF: rustix::ioctl::Opcode = 0x4004_54ca;
const IFF_TUN: i16 = 0x0001;
const IFF_NO_PI: i16 = 0x1000;

/// `struct ifreq` (linux/if.h, 40 bytes) with the `ifr_flags` member of its union.
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: i16,
    _pad: [u8; 22],
}

/// Create TUN device `name` in the calling thread's namespace (TESTBED.md pitfall 7: open it
/// inside the target namespace). No packet-info header, no vnet header: reads and writes are
/// plain, MTU-sized IP packets. Non-blocking.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.len() >= 16 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("TUN name too long: {name}")));
    }
    let flags = OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open("/dev/net/tun", flags, Mode::empty())
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("/dev/net/tun: {e}")))?;
    let mut req = IfReq { name: [0; 16], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF is a valid opcode on a /dev/net/tun descriptor, and the kernel reads and
    // writes a `struct ifreq` through it, which `IfReq` is laid out as.
    unsafe { rustix::ioctl::ioctl(&fd, Updater::<TUNSETIFF, IfReq>::new(&mut req)) }
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("TUNSETIFF {name}: {e}")))?;
    Ok(fd)
}

/// Wait until `fd` is readable or `timeout` passes (microsecond resolution). Returns readable.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    let ts = Timespec::try_from(timeout).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
    matches!(rustix::event::poll(&mut fds, Some(&ts)), Ok(n) if n > 0)
        && fds[0].revents().contains(PollFlags::IN)
}

/// Ask for ~1 µs timer slack on this thread (the default 50 µs adds to every delay).
pub fn tight_timer_slack() {
    let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1000));
}

pub fn read_fd(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(fd, buf)?)
}

pub fn write_fd(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::write(fd, buf)?)
}

fn stream_socket(mptcp: bool) -> io::Result<OwnedFd> {
    let proto = mptcp.then_some(ipproto::MPTCP);
    rustix::net::socket_with(AddressFamily::INET, SocketType::STREAM, SocketFlags::CLOEXEC, proto)
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("socket(mptcp {mptcp}): {e}")))
}

/// A listening socket (MPTCP listeners accept plain TCP too).
pub fn listen(addr: SocketAddrV4, mptcp: bool) -> io::Result<TcpListener> {
    let fd = stream_socket(mptcp)?;
    rustix::net::sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr)
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("bind {addr}: {e}")))?;
    rustix::net::listen(&fd, 16)?;
    let listener = TcpListener::from(fd);
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Connect with the given congestion control (TCP_CONGESTION, per socket; on an MPTCP socket the
/// kernel applies it to every subflow), optionally from a source address, giving up at
/// `deadline` or on Ctrl-C.
pub fn connect(
    to: SocketAddrV4,
    from: Option<SocketAddrV4>,
    mptcp: bool,
    cc: Option<&str>,
    deadline: Instant,
    stop: &AtomicBool,
) -> io::Result<TcpStream> {
    let fd = stream_socket(mptcp)?;
    if let Some(cc) = cc {
        set_tcp_congestion(&fd, cc)?;
    }
    if let Some(from) = from {
        rustix::net::bind(&fd, &from)?;
    }
    rustix::io::ioctl_fionbio(&fd, true)?;
    match rustix::net::connect(&fd, &to) {
        Ok(()) => {}
        Err(Errno::INPROGRESS) => {
            let poll_interval = Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
            loop {
                if stop.load(Ordering::Relaxed) || interrupted() || Instant::now() >= deadline {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, format!("connect {to}: gave up")));
                }
                let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
                if matches!(rustix::event::poll(&mut fds, Some(&poll_interval)), Ok(n) if n > 0) {
                    break;
                }
            }
            rustix::net::sockopt::socket_error(&fd)??;
        }
        Err(e) => return Err(e.into()),
    }
    let stream = TcpStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// The 1-minute load average, for the record beside every measurement.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Give a socket a large receive buffer whatever `rmem_max` says (root only: SO_RCVBUFFORCE).
pub fn force_rcvbuf(fd: impl AsFd, bytes: usize) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_recv_buffer_size_force(fd, bytes)?)
}

/// UDP receive-buffer overflows in the calling thread's namespace (/proc/net/snmp `Udp:
/// RcvbufErrors`).
pub fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/self/net/snmp").unwrap_or_default();
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(head), Some(vals)) = (lines.next(), lines.next()) else { return 0 };
    head.split_whitespace()
        .zip(vals.split_whitespace())
        .find(|(k, _)| *k == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Bound the bytes queued in a socket but not yet sent (TCP_NOTSENT_LOWAT): writes then wait
/// until the connection can take more, so data is handed out close to when it is sent.
pub fn set_notsent_lowat(stream: &TcpStream, bytes: u32) -> io::Result<()> {
    socket2::SockRef::from(stream).set_tcp_notsent_lowat(bytes)
}

/// SO_LINGER on with a zero timeout: `close` resets the connection and drops unsent data, so a
/// run cut by its limit leaves no traffic behind for the next contender on the same paths (a
/// graceful close keeps sending up to the whole 16 MB socket buffer after the run).
pub fn set_linger_zero(stream: &TcpStream) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_linger(stream, Some(Duration::ZERO))?)
}

/// Set the congestion control of a connected socket (TCP_CONGESTION; root may pick any built-in
/// algorithm, whatever `tcp_allowed_congestion_control` says).
pub fn set_congestion(stream: &TcpStream, cc: &str) -> io::Result<()> {
    set_tcp_congestion(stream, cc)
}

fn set_tcp_congestion(fd: impl AsFd, cc: &str) -> io::Result<()> {
    rustix::net::sockopt::set_tcp_congestion(fd, cc)
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("TCP_CONGESTION {cc}: {e}")))
}

/// Waits until a TCP socket in namespace `ns` listens on `addr`, at most `timeout`, and returns
/// how long that took. It reads the namespace's `/proc/thread-self/net/tcp` (the thread's own
/// namespace; `/proc/self` is the process's) and never connects: a test connection to an
/// external contender's entry would be carried to the sink as a connection of its own.
pub fn wait_listen(ns: &str, addr: SocketAddrV4, timeout: Duration) -> io::Result<Duration> {
    wait_table(ns, "tcp", timeout, move |table| listens(table, addr), format!("nothing listens on {addr}"))
}

/// Waits until a UDP socket in namespace `ns` is bound to `port` (any IPv4 address), at most
/// `timeout`, and returns how long that took: an external server's socket, before its client
/// sends to it (a datagram that comes first is refused, and `braid forward` gives up on it).
/// It reads the namespace's `/proc/thread-self/net/udp`, as [`wait_listen`].
pub fn wait_udp_bound(ns: &str, port: u16, timeout: Duration) -> io::Result<Duration> {
    wait_table(
        ns,
        "udp",
        timeout,
        move |table| udp_bound(table, port),
        format!("no UDP socket on port {port}"),
    )
}

/// Polls the namespace's `/proc/thread-self/net/{table}` every 5 ms until `found` holds of it.
fn wait_table(
    ns: &str,
    table: &'static str,
    timeout: Duration,
    found: impl Fn(&str) -> bool + Send + 'static,
    missing: String,
) -> io::Result<Duration> {
    let began = Instant::now();
    spawn_in(ns, "wait-socket", move || loop {
        if found(&std::fs::read_to_string(format!("/proc/thread-self/net/{table}"))?) {
            return Ok(began.elapsed());
        }
        if began.elapsed() >= timeout || interrupted() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, missing.clone()));
        }
        std::thread::sleep(Duration::from_millis(5));
    })
    .join()
    .map_err(|_| io::Error::other("wait thread panicked"))?
}

/// Whether a `/proc/net/udp` table has a socket bound to `port` (the local address's port, in
/// hex after the colon).
fn udp_bound(table: &str, port: u16) -> bool {
    let port = format!(":{port:04X}");
    table.lines().skip(1).any(|line| line.split_whitespace().nth(1).is_some_and(|at| at.ends_with(&port)))
}

/// Whether a `/proc/net/tcp` table has a socket listening on `addr`. The table writes the local
/// address as the in-memory u32 in hex and the port in hex; state 0A is LISTEN.
fn listens(table: &str, addr: SocketAddrV4) -> bool {
    let local = format!("{:08X}:{:04X}", u32::from_ne_bytes(addr.ip().octets()), addr.port());
    table.lines().skip(1).any(|line| {
        let mut cols = line.split_whitespace();
        let (at, state) = (cols.nth(1), cols.nth(1));
        at == Some(local.as_str()) && state == Some("0A")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SIGTERM sets the flag and no longer ends the process. The flag is the whole process's,
    /// so the signal goes to a child: this test binary again, running only this test.
    #[test]
    fn a_signal_sets_the_interrupted_flag() {
        const CHILD: &str = "BRAID_TESTBED_SIGNAL_CHILD";
        if std::env::var_os(CHILD).is_some() {
            install_signal_handlers();
            rustix::process::kill_process(rustix::process::getpid(), Signal::TERM).unwrap();
            let until = Instant::now() + Duration::from_secs(5);
            while !interrupted() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(interrupted(), "the handler did not run");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sys::tests::a_signal_sets_the_interrupted_flag", "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains("1 passed"), "{:?}: {stdout}", out.status);
    }

    /// A listening socket on the address counts; a connected one on it, or one listening on
    /// another port, does not.
    #[test]
    fn the_socket_table_shows_who_listens() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:6D61 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:6D62 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
";
        let at = |port| SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port);
        if cfg!(target_endian = "little") {
            assert!(listens(table, at(0x6D61)));
        }
        assert!(!listens(table, at(0x6D62)), "an established socket is not listening");
        assert!(!listens(table, at(0x6D63)));
    }

    /// A UDP socket bound to the port on any address counts; a remote port that matches does not.
    #[test]
    fn the_udp_table_shows_a_bound_port() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  120: 00000000:61A9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0000000000000000 0
  121: 0100007F:9C41 0264640A:61AA 01 00000000:00000000 00:00000000 00000000     0        0 4 2 0000000000000000 0
";
        assert!(udp_bound(table, 25001));
        assert!(udp_bound(table, 0x9C41));
        assert!(!udp_bound(table, 25002), "only a local port counts");
        assert!(!udp_bound(table, 0x61A));
    }
}
