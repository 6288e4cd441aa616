//! UDP measurements of the tun workload: a fixed-rate stream whose packets carry their sequence
//! number and send time, and a ping-pong. Sender and receiver are threads of this process (one
//! clock), each in its own namespace; they talk plain UDP, so the same code measures braid's
//! tunnel and plain UDP over one path.
//!
//! A stream packet is `MAGIC | seq (u32) | send time (u64, µs since the stream's epoch)`, padded
//! to the payload size, big-endian. A packet is on time if it arrives within the deadline of its
//! send time; a lost one counts as infinitely late in the percentiles (as the video workload's
//! frames do).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::percentile::percentile;
use crate::sys;

const MAGIC: [u8; 4] = *b"bTuN";
const HEADER: usize = 16;

/// What one stream or ping-pong measures.
#[derive(Debug, Clone, Copy)]
pub struct StreamSpec {
    /// Payload bytes per packet (at least the 16-byte stamp).
    pub size: usize,
    /// Payload bit rate.
    pub rate_bps: f64,
    pub duration: Duration,
    pub deadline: Duration,
}

impl StreamSpec {
    pub fn packets(&self) -> usize {
        let per_second = self.rate_bps / (self.size as f64 * 8.0);
        (per_second * self.duration.as_secs_f64()).round().max(1.0) as usize
    }

    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.size as f64 * 8.0 / self.rate_bps)
    }
}

pub fn stamp(buf: &mut [u8], seq: u32, sent_us: u64) {
    buf[..4].copy_from_slice(&MAGIC);
    buf[4..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..16].copy_from_slice(&sent_us.to_be_bytes());
}

/// (seq, send time µs) of a packet of ours; `None` for anything else.
pub fn parse_stamp(buf: &[u8]) -> Option<(u32, u64)> {
    if buf.len() < HEADER || buf[..4] != MAGIC {
        return None;
    }
    let seq = u32::from_be_bytes(buf[4..8].try_into().ok()?);
    let sent = u64::from_be_bytes(buf[8..16].try_into().ok()?);
    Some((seq, sent))
}

/// The stream's outcome: each packet's one-way latency (`None` = never arrived).
#[derive(Debug, Clone, Default)]
pub struct StreamOutcome {
    pub latency: Vec<Option<Duration>>,
    /// Packets the sender could not hand to its socket (counted as lost).
    pub send_errors: u64,
    /// Copies of a packet after its first arrival.
    pub duplicates: u64,
    /// When the first packet left and the last one was handed to the socket.
    pub first_sent: Option<Instant>,
    pub last_sent: Option<Instant>,
}

/// Summary numbers of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSummary {
    pub packets: usize,
    pub received: usize,
    pub on_time: usize,
    pub on_time_share: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The longest run of consecutive packets (by sequence number) that missed the deadline.
    pub longest_miss_run: MissRun,
}

/// A run of consecutive stream packets that each missed the deadline (lost, or arrived late):
/// `packets` of them from sequence number `first`. Empty (`packets` 0) when none missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MissRun {
    pub first: usize,
    pub packets: usize,
}

/// The longest run of consecutive packets that missed the deadline; the earliest of equal runs.
/// A failover that costs "at most the deadline's worth" shows here as a run no longer than the
/// packets the deadline spans, read directly rather than derived from the on-time share (which
/// also counts scattered misses of the steady state).
pub fn longest_miss_run(latency: &[Option<Duration>], deadline: Duration) -> MissRun {
    let mut best = MissRun::default();
    let mut current = MissRun::default();
    for (seq, l) in latency.iter().enumerate() {
        if l.is_some_and(|d| d <= deadline) {
            current.packets = 0;
            continue;
        }
        if current.packets == 0 {
            current.first = seq;
        }
        current.packets += 1;
        if current.packets > best.packets {
            best = current;
        }
    }
    best
}

/// The most packets that missed the deadline among any `window` consecutive packets, and the
/// first of the earliest such window: the misses of a burst even when a few packets inside it
/// got through, which breaks the run.
pub fn most_misses_in_window(
    latency: &[Option<Duration>],
    deadline: Duration,
    window: usize,
) -> (usize, usize) {
    let missed: Vec<bool> = latency.iter().map(|l| !l.is_some_and(|d| d <= deadline)).collect();
    let window = window.clamp(1, missed.len().max(1));
    let mut inside = missed.iter().take(window).filter(|&&m| m).count();
    let mut most = (inside, 0);
    for i in window..missed.len() {
        inside = inside + usize::from(missed[i]) - usize::from(missed[i - window]);
        if inside > most.0 {
            most = (inside, i + 1 - window);
        }
    }
    most
}

pub fn summarize(latency: &[Option<Duration>], deadline: Duration) -> StreamSummary {
    let mut ms: Vec<f64> =
        latency.iter().map(|l| l.map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e3)).collect();
    ms.sort_by(f64::total_cmp);
    let on_time = latency.iter().filter(|l| l.is_some_and(|d| d <= deadline)).count();
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    StreamSummary {
        packets: latency.len(),
        received: latency.iter().filter(|l| l.is_some()).count(),
        on_time,
        on_time_share: if latency.is_empty() { 0.0 } else { on_time as f64 / latency.len() as f64 },
        p50_ms: finite(percentile(&ms, 0.5)),
        p99_ms: finite(percentile(&ms, 0.99)),
        longest_miss_run: longest_miss_run(latency, deadline),
    }
}

/// Any local port of `to`'s address family.
fn any_port(to: SocketAddr) -> SocketAddr {
    match to {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}

/// Run one stream: a receiver bound to `listen` in `rx_ns`, a sender in `tx_ns` (bound to `from`
/// when given: plain UDP on a chosen path) sending to `to`. Returns once the last packet's
/// deadline and a second more have passed.
pub fn stream(
    tx_ns: &str,
    from: Option<SocketAddr>,
    to: SocketAddr,
    rx_ns: &str,
    listen: SocketAddr,
    spec: StreamSpec,
) -> io::Result<StreamOutcome> {
    let n = spec.packets();
    let arrivals: Arc<Mutex<Vec<Option<Duration>>>> = Arc::new(Mutex::new(vec![None; n]));
    let duplicates = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let receiver = {
        let (arrivals, duplicates, stop) = (arrivals.clone(), duplicates.clone(), stop.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let h = sys::spawn_in(rx_ns, "udp-rx", move || {
            let socket = UdpSocket::bind(listen);
            let _ = tx.send(socket.as_ref().map(|_| ()).map_err(|e| e.to_string()));
            let socket = socket?;
            socket.set_read_timeout(Some(Duration::from_millis(50)))?;
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) && !sys::interrupted() {
                match socket.recv(&mut buf) {
                    Ok(len) => {
                        let now = epoch.elapsed();
                        let Some((seq, sent_us)) = parse_stamp(&buf[..len]) else { continue };
                        let mut a = arrivals.lock().unwrap_or_else(|e| e.into_inner());
                        match a.get_mut(seq as usize) {
                            Some(slot @ None) => {
                                *slot = Some(now.saturating_sub(Duration::from_micros(sent_us)))
                            }
                            Some(Some(_)) => *duplicates.lock().unwrap_or_else(|e| e.into_inner()) += 1,
                            None => {}
                        }
                    }
                    Err(e) if sys::transient(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        });
        match rx.recv() {
            Ok(Ok(())) => h,
            Ok(Err(e)) => return Err(io::Error::other(format!("UDP receiver on {listen}: {e}"))),
            Err(_) => return Err(io::Error::other("UDP receiver thread ended")),
        }
    };
    let sender = {
        let stop = stop.clone();
        sys::spawn_in(tx_ns, "udp-tx", move || {
            let socket = UdpSocket::bind(from.unwrap_or_else(|| any_port(to)))?;
            socket.connect(to)?;
            let mut buf = vec![0u8; spec.size.max(HEADER)];
            let interval = spec.interval();
            let mut errors = 0u64;
            let start = Instant::now();
            let mut first = None;
            for i in 0..n {
                let at = start + interval.mul_f64(i as f64);
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                if stop.load(Ordering::Relaxed) || sys::interrupted() {
                    break;
                }
                let sent = epoch.elapsed();
                stamp(&mut buf, i as u32, sent.as_micros() as u64);
                first.get_or_insert_with(Instant::now);
                if socket.send(&buf).is_err() {
                    errors += 1;
                }
            }
            Ok((errors, first, Instant::now()))
        })
    };
    let sent = sender.join().map_err(|_| io::Error::other("UDP sender panicked"))?;
    let (send_errors, first_sent, last_sent) = match sent {
        Ok(s) => s,
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            let _ = receiver.join();
            return Err(io::Error::other(format!("UDP sender: {e}")));
        }
    };
    let until = Instant::now() + spec.deadline + Duration::from_secs(1);
    while Instant::now() < until && !receiver.is_finished() && !sys::interrupted() {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    if let Ok(Err(e)) = receiver.join() {
        return Err(io::Error::other(format!("UDP receiver: {e}")));
    }
    let latency = arrivals.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let duplicates = *duplicates.lock().unwrap_or_else(|e| e.into_inner());
    Ok(StreamOutcome { latency, send_errors, duplicates, first_sent, last_sent: Some(last_sent) })
}

/// A UDP echo server in `ns` on `listen` until the returned flag is set (or Ctrl-C).
pub fn echo_server(
    ns: &str,
    listen: SocketAddr,
) -> io::Result<(Arc<AtomicBool>, std::thread::JoinHandle<io::Result<()>>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let s = stop.clone();
    let h = sys::spawn_in(ns, "udp-echo", move || {
        let socket = UdpSocket::bind(listen);
        let _ = tx.send(socket.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        let socket = socket?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        let mut buf = vec![0u8; 65_536];
        while !s.load(Ordering::Relaxed) && !sys::interrupted() {
            match socket.recv_from(&mut buf) {
                Ok((len, from)) => {
                    let _ = socket.send_to(&buf[..len], from);
                }
                Err(e) if sys::transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    });
    match rx.recv() {
        Ok(Ok(())) => Ok((stop, h)),
        Ok(Err(e)) => Err(io::Error::other(format!("UDP echo on {listen}: {e}"))),
        Err(_) => Err(io::Error::other("UDP echo thread ended")),
    }
}

/// `count` pings of `size` bytes from `ns` (bound to `from` when given) to an echo server at
/// `to`, one every `interval` or as soon as the previous answer came; a ping unanswered within
/// `wait` is lost. Returns each ping's round trip (`None` = lost).
pub fn ping_pong(
    ns: &str,
    from: Option<SocketAddr>,
    to: SocketAddr,
    count: usize,
    size: usize,
    interval: Duration,
    wait: Duration,
) -> io::Result<Vec<Option<Duration>>> {
    sys::spawn_in(ns, "udp-ping", move || {
        let socket = UdpSocket::bind(from.unwrap_or_else(|| any_port(to)))?;
        socket.connect(to)?;
        let mut out = vec![0u8; size.max(HEADER)];
        let mut buf = vec![0u8; 65_536];
        let mut rtts = Vec::with_capacity(count);
        let epoch = Instant::now();
        for i in 0..count {
            if sys::interrupted() {
                break;
            }
            let at = epoch + interval * i as u32;
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            let sent = Instant::now();
            stamp(&mut out, i as u32, sent.duration_since(epoch).as_micros() as u64);
            if socket.send(&out).is_err() {
                rtts.push(None);
                continue;
            }
            let mut rtt = None;
            while sent.elapsed() < wait {
                socket.set_read_timeout(Some((wait - sent.elapsed()).max(Duration::from_millis(1))))?;
                match socket.recv(&mut buf) {
                    // Older answers (their ping counted as lost already) are skipped.
                    Ok(len) if parse_stamp(&buf[..len]).is_some_and(|(seq, _)| seq == i as u32) => {
                        rtt = Some(sent.elapsed());
                        break;
                    }
                    Ok(_) => {}
                    Err(e) if sys::transient(&e) => {}
                    // ECONNREFUSED from an ICMP error of an earlier send: try again.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e),
                }
            }
            rtts.push(rtt);
        }
        Ok(rtts)
    })
    .join()
    .map_err(|_| io::Error::other("ping thread panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_others_are_ignored() {
        let mut b = vec![0u8; 40];
        stamp(&mut b, 77, 123_456_789);
        assert_eq!(parse_stamp(&b), Some((77, 123_456_789)));
        assert_eq!(parse_stamp(&b[..15]), None);
        b[0] = b'x';
        assert_eq!(parse_stamp(&b), None);
    }

    #[test]
    fn spec_paces_the_rate() {
        let s = StreamSpec {
            size: 1000,
            rate_bps: 3.4e6,
            duration: Duration::from_secs(10),
            deadline: Duration::from_millis(150),
        };
        assert_eq!(s.packets(), 4250);
        assert!((s.interval().as_secs_f64() - 8000.0 / 3.4e6).abs() < 1e-9);
    }

    #[test]
    fn summary_counts_lost_packets_as_late() {
        let ms = |m: u64| Some(Duration::from_millis(m));
        let mut lat: Vec<Option<Duration>> = (0..197).map(|i| ms(20 + i % 50)).collect();
        lat.extend([ms(151), ms(150), None]);
        let s = summarize(&lat, Duration::from_millis(150));
        assert_eq!((s.packets, s.received, s.on_time), (200, 199, 198));
        assert!((s.on_time_share - 0.99).abs() < 1e-12);
        assert_eq!(s.p99_ms, Some(150.0));
        assert_eq!(s.longest_miss_run, MissRun { first: 197, packets: 1 });
        let all_lost = summarize(&[None; 3], Duration::from_millis(150));
        assert_eq!((all_lost.on_time_share, all_lost.p50_ms), (0.0, None));
        assert_eq!(all_lost.longest_miss_run, MissRun { first: 0, packets: 3 });
    }

    /// Late and lost packets both break the deadline; an on-time packet ends a run; the
    /// earliest of two equal runs is reported; a packet exactly at the deadline is on time.
    #[test]
    fn longest_miss_run_counts_late_and_lost_packets() {
        let deadline = Duration::from_millis(150);
        let (ok, late, lost) = (Some(Duration::from_millis(40)), Some(Duration::from_millis(151)), None);
        let at = Some(deadline);
        let run = |l: &[Option<Duration>]| longest_miss_run(l, deadline);
        assert_eq!(run(&[]), MissRun::default());
        assert_eq!(run(&[ok, at, ok]), MissRun::default());
        assert_eq!(run(&[ok, lost, late, lost, ok, lost]), MissRun { first: 1, packets: 3 });
        assert_eq!(run(&[lost, lost, ok, late, late, ok]), MissRun { first: 0, packets: 2 });
        assert_eq!(run(&[ok, lost, ok, late, lost, late, lost]), MissRun { first: 3, packets: 4 });
        // A failover's shape: 30 straight misses, a few scattered ones around them.
        let mut l = vec![ok; 1000];
        for i in (400..430).chain([380, 432, 440, 900]) {
            l[i] = if i % 2 == 0 { lost } else { late };
        }
        assert_eq!(run(&l), MissRun { first: 400, packets: 30 });
        // 380..=443 holds 380, 400..430, 432 and 440; windows from 377 to 380 hold as many.
        assert_eq!(most_misses_in_window(&l, deadline, 64), (33, 377));
        assert_eq!(most_misses_in_window(&l, deadline, 5000), (34, 0));
        assert_eq!(most_misses_in_window(&l, deadline, 1), (1, 380));
        assert_eq!(most_misses_in_window(&[], deadline, 64), (0, 0));
        assert_eq!(most_misses_in_window(&[ok, lost], deadline, 0), (1, 1));
    }
}
