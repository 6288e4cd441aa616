//! The testbed's own bulk traffic: a sender that writes N bytes (split over one or more
//! connections from a shared pool) and the sink's side that counts them (accepting, and telling
//! bulk from probe connections, is the run's: [`crate::run`]). Completion is measured at the
//! receiver: from the sender's `connect` call to the moment the sink holds the last byte. Both run
//! as threads of this process (each inside its namespace), so their clocks are the same clock.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::progress::Progress;
use crate::sys;

const CHUNK: u64 = 64 * 1024;

/// The sink's side of one bulk connection, whose first `first` bytes are already read into
/// `buf` (the run's sink reads them to tell a bulk connection from a probe's): count them and
/// everything after them until the peer closes, the run stops or `total` arrived.
pub fn receive(mut stream: TcpStream, mut buf: Vec<u8>, first: usize, total: u64, progress: &Progress) {
    let count = |n: usize| {
        let before = progress.received.fetch_add(n as u64, Ordering::SeqCst);
        if before < total && before + n as u64 >= total {
            *progress.done.lock().unwrap() = Some(Instant::now());
        }
    };
    count(first);
    while !progress.stopped() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => count(n),
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
    notsent_lowat: Option<u32>,
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
