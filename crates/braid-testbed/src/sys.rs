//! The few raw syscalls the testbed needs: entering a network namespace, opening a TUN device,
//! sockets with a chosen protocol and congestion control, and the Ctrl-C flag.

use std::fs::File;
use std::io;
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// IPPROTO_MPTCP (include/uapi/linux/in.h).
pub const IPPROTO_MPTCP: i32 = 262;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catch SIGINT and SIGTERM: every loop of the testbed polls [`interrupted`] and the run unwinds
/// through its teardown.
pub fn install_signal_handlers() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// Whether the process runs as root (namespaces and TUN devices need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Send SIGTERM (or SIGKILL when `kill`) to the process group `leader` leads (one the testbed
/// spawned with `process_group(0)`).
pub fn signal_group(leader: u32, kill: bool) {
    let signal = if kill { libc::SIGKILL } else { libc::SIGTERM };
    // SAFETY: signalling a process group we created; no memory is passed.
    unsafe { libc::kill(-(leader as libc::pid_t), signal) };
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// An error a socket read or write with a timeout (or a non-blocking one) returns when it
/// should simply be tried again: nothing ready yet, the timeout ran out, a signal came.
pub fn transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Move the calling thread into the named network namespace (`ip netns add` made it).
pub fn enter_netns(name: &str) -> io::Result<()> {
    let file = File::open(format!("/run/netns/{name}"))
        .or_else(|_| File::open(format!("/var/run/netns/{name}")))
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {name}: {e}")))?;
    // SAFETY: a valid namespace fd; affects only the calling thread.
    check(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) })?;
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

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Create TUN device `name` in the calling thread's namespace (TESTBED.md pitfall 7: open it
/// inside the target namespace). No packet-info header, no vnet header: reads and writes are
/// plain, MTU-sized IP packets. Non-blocking.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.len() >= 16 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("TUN name too long: {name}")));
    }
    // SAFETY: plain open of a path literal.
    let fd = check(unsafe {
        libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC)
    })?;
    // SAFETY: fd was just opened and is owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq { name: [0; 16], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is laid out as.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) })
        .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")))?;
    Ok(fd)
}

/// Wait until `fd` is readable or `timeout` passes (microsecond resolution). Returns readable.
pub fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec { tv_sec: timeout.as_secs() as _, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    n > 0 && pfd.revents & libc::POLLIN != 0
}

/// Ask for ~1 µs timer slack on this thread (the default 50 µs adds to every delay).
pub fn tight_timer_slack() {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
    }
}

pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub fn write_fd(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of buf.len() bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn stream_socket(mptcp: bool) -> io::Result<OwnedFd> {
    let proto = if mptcp { IPPROTO_MPTCP } else { 0 };
    // SAFETY: plain socket creation.
    let fd = check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) })
        .map_err(|e| io::Error::new(e.kind(), format!("socket(proto {proto}): {e}")))?;
    // SAFETY: fd was just created and is owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn setsockopt_bytes(fd: RawFd, level: i32, opt: i32, value: &[u8]) -> io::Result<()> {
    // SAFETY: value is valid for value.len() bytes.
    check(unsafe {
        libc::setsockopt(fd, level, opt, value.as_ptr().cast(), value.len() as libc::socklen_t)
    })?;
    Ok(())
}

fn setsockopt_int(fd: RawFd, level: i32, opt: i32, value: libc::c_int) -> io::Result<()> {
    setsockopt_bytes(fd, level, opt, &value.to_ne_bytes())
}

/// A listening socket (MPTCP listeners accept plain TCP too).
pub fn listen(addr: SocketAddrV4, mptcp: bool) -> io::Result<TcpListener> {
    let fd = stream_socket(mptcp)?;
    setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let sa = sockaddr(addr);
    // SAFETY: sa is a valid sockaddr_in.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })
    .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    // SAFETY: a bound socket.
    check(unsafe { libc::listen(fd.as_raw_fd(), 16) })?;
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
    let raw = fd.as_raw_fd();
    if let Some(cc) = cc {
        setsockopt_bytes(raw, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("TCP_CONGESTION {cc}: {e}")))?;
    }
    if let Some(from) = from {
        let sa = sockaddr(from);
        // SAFETY: sa is a valid sockaddr_in.
        check(unsafe {
            libc::bind(
                raw,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        })?;
    }
    // SAFETY: fcntl on an owned fd.
    unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let sa = sockaddr(to);
    // SAFETY: sa is a valid sockaddr_in.
    let r = unsafe {
        libc::connect(
            raw,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        loop {
            if stop.load(Ordering::Relaxed) || interrupted() || Instant::now() >= deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("connect {to}: gave up")));
            }
            let mut pfd = libc::pollfd { fd: raw, events: libc::POLLOUT, revents: 0 };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, 100) } > 0 {
                break;
            }
        }
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: err and len are valid for getsockopt(SO_ERROR).
        check(unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut len,
            )
        })?;
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
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
pub fn force_rcvbuf(fd: RawFd, bytes: i32) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes)
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
pub fn set_notsent_lowat(stream: &TcpStream, bytes: i32) -> io::Result<()> {
    setsockopt_int(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes)
}

/// SO_LINGER on with a zero timeout: `close` resets the connection and drops unsent data, so a
/// run cut by its limit leaves no traffic behind for the next contender on the same paths (a
/// graceful close keeps sending up to the whole 16 MB socket buffer after the run).
pub fn set_linger_zero(stream: &TcpStream) -> io::Result<()> {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a valid socket fd and a `linger` of the size passed.
    check(unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Set the congestion control of a connected socket (TCP_CONGESTION; root may pick any built-in
/// algorithm, whatever `tcp_allowed_congestion_control` says).
pub fn set_congestion(stream: &TcpStream, cc: &str) -> io::Result<()> {
    setsockopt_bytes(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("TCP_CONGESTION {cc}: {e}")))
}
