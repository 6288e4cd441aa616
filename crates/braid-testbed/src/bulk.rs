//! The testbed's own bulk traffic: a sender that writes N bytes (split over one or more
//! connections from a shared pool) and a sink that counts them. Completion is measured at the
//! receiver: from the sender's `connect` call to the moment the sink holds the last byte. Both run
//! as threads of this process (each inside its namespace), so their clocks are the same clock.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{probe, sys};

/// Shared progress of one transfer.
#[derive(Default)]
pub struct Progress {
    /// Bytes the sink has received, over all connections.
    pub received: AtomicU64,
    /// When the first sender called `connect`.
    pub started: Mutex<Option<Instant>>,
    /// When the sink held the last byte.
    pub done: Mutex<Option<Instant>>,
    /// Bytes not yet claimed by a sender connection.
    pub unclaimed: AtomicU64,
    pub stop: AtomicBool,
}

impl Progress {
    pub fn new(total: u64) -> Arc<Progress> {
        let p = Progress::default();
        p.unclaimed.store(total, Ordering::SeqCst);
        Arc::new(p)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || sys::interrupted()
    }
}

const CHUNK: u64 = 64 * 1024;

/// Accept `connections` connections on `listen` (inside the server namespace: call from a
/// thread made by [`sys::spawn_in`]) and count bytes until `total` arrived or `stop`. A
/// connection that opens with [`probe::HELLO`] is a latency probe's and is echoed instead.
pub fn sink(
    addr: SocketAddrV4,
    mptcp: bool,
    connections: usize,
    total: u64,
    progress: Arc<Progress>,
    ready: Arc<AtomicBool>,
) -> io::Result<()> {
    let listener = sys::listen(addr, mptcp)?;
    ready.store(true, Ordering::SeqCst);
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    while readers.len() < connections && !progress.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                let progress = progress.clone();
                readers.push(std::thread::spawn(move || read_all(stream, total, &progress)));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(e),
        }
    }
    for r in readers {
        let _ = r.join();
    }
    Ok(())
}

fn read_all(mut stream: TcpStream, total: u64, progress: &Progress) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; 256 * 1024];
    let mut first = true;
    while !progress.stopped() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if first && buf[0] == probe::HELLO => return probe::echo(stream, &buf[1..n], progress),
            Ok(n) => {
                first = false;
                let before = progress.received.fetch_add(n as u64, Ordering::SeqCst);
                if before < total && before + n as u64 >= total {
                    *progress.done.lock().unwrap() = Some(Instant::now());
                }
            }
            Err(e) if sys::transient(&e) => {}
            Err(_) => break,
        }
    }
}

/// One sender connection: connect (from `from`, if given) to `to`, then write chunks claimed
/// from the shared pool until it is empty; then wait for the sink to close.
/// `notsent_lowat`: with several connections sharing the pool, keep each one's unsent backlog
/// small, or a slow path's socket buffer swallows megabytes that the fast path then waits for.
pub fn send(
    to: SocketAddrV4,
    from: Option<SocketAddrV4>,
    mptcp: bool,
    cc: Option<String>,
    notsent_lowat: Option<i32>,
    deadline: Instant,
    progress: Arc<Progress>,
) -> io::Result<()> {
    {
        let mut started = progress.started.lock().unwrap();
        if started.is_none() {
            *started = Some(Instant::now());
        }
    }
    let mut stream = sys::connect(to, from, mptcp, cc.as_deref(), deadline, &progress.stop)?;
    stream.set_write_timeout(Some(Duration::from_millis(100)))?;
    if let Some(lowat) = notsent_lowat {
        sys::set_notsent_lowat(&stream, lowat)?;
    }
    let buf = vec![0x5au8; CHUNK as usize];
    let result = write_claimed(&mut stream, &buf, &progress);
    if progress.done.lock().unwrap().is_none() {
        // Cut by the limit (or an error): reset rather than let the kernel keep sending the
        // socket buffer into the next run.
        let _ = sys::set_linger_zero(&stream);
    }
    result
}

fn write_claimed(stream: &mut TcpStream, buf: &[u8], progress: &Progress) -> io::Result<()> {
    'claim: loop {
        let claimed = progress
            .unclaimed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| Some(u.saturating_sub(CHUNK)));
        let n = match claimed {
            Ok(before) => before.min(CHUNK) as usize,
            Err(_) => 0,
        };
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            if progress.stopped() {
                break 'claim;
            }
            match stream.write(&buf[off..n]) {
                Ok(w) => off += w,
                Err(e) if sys::transient(&e) => {}
                // The run ended while this write was under way (the sink closed first).
                Err(_) if progress.stopped() => break 'claim,
                Err(e) => return Err(e),
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
    // Hold the socket until the sink is done (so `ss` sees it and nothing is cut short).
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut b = [0u8; 64];
    while !progress.stopped() {
        match stream.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if sys::transient(&e) => {}
            Err(_) => break,
        }
    }
    Ok(())
}
