//! The latency-under-load workload's probes: round trips of small requests on a second
//! connection (for braid, a second stream of the same braid connection, since `braid forward`
//! carries each TCP connection as a stream) beside the bulk transfer of [`crate::bulk`].
//!
//! The client writes [`HELLO`] and then an 8-byte sequence number every [`INTERVAL`] without
//! waiting for earlier answers (a slow answer does not thin out the samples); the sink, seeing
//! `HELLO` as a connection's first byte, echoes everything after it. Bulk data never starts with
//! `HELLO` (the sender writes 0x5a). Probes still unanswered when the bulk transfer ends get
//! [`GRACE`] more and then count with their age (a lower bound on their round trip).

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::percentile::percentile;
use crate::progress::Progress;
use crate::sys;

/// A probe connection's first byte.
pub const HELLO: u8 = b'P';
/// 20 probes per second, as `braid bench` sends.
pub const INTERVAL: Duration = Duration::from_millis(50);
/// Probes sent in the first 2 s (excluded from `p99_after_2s_ms`).
const STARTUP_PROBES: usize = 40;
/// How long unanswered probes may still answer after the transfer ends.
const GRACE: Duration = Duration::from_secs(1);

/// A latency row's metrics: every probe's round trip, in sending order, and their percentiles.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProbeMetrics {
    pub probes: usize,
    /// Probes that got no answer (counted with their age in the percentiles).
    pub unanswered: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// The p99 of the probes sent from 2 s on, after start-up (shown beside `p99_ms`, never
    /// instead of it).
    pub p99_after_2s_ms: Option<f64>,
    pub rtt_ms: Vec<f64>,
}

impl ProbeMetrics {
    pub fn new(rtt_ms: Vec<f64>, unanswered: usize) -> ProbeMetrics {
        let sorted = |from: usize| {
            let mut v = rtt_ms.get(from..).unwrap_or_default().to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        let (all, late) = (sorted(0), sorted(STARTUP_PROBES));
        let q = |v: &[f64], q| percentile(v, q);
        ProbeMetrics {
            probes: rtt_ms.len(),
            unanswered,
            p50_ms: q(&all, 0.5),
            p99_ms: q(&all, 0.99),
            max_ms: q(&all, 1.0),
            p99_after_2s_ms: q(&late, 0.99),
            rtt_ms,
        }
    }
}

/// The sink side: echo what follows `HELLO` until the peer closes or the run stops.
pub fn echo(mut stream: TcpStream, rest: &[u8], progress: &Progress) {
    let _ = stream.set_nodelay(true);
    if stream.write_all(rest).is_err() {
        return;
    }
    let mut buf = [0u8; 4096];
    while !progress.stopped() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if sys::transient(&e) => {}
            Err(_) => break,
        }
    }
}

/// The client side: connect like the bulk sender (same path, congestion control and MPTCP),
/// probe until the transfer is done (or stopped, or `deadline`), and return the metrics.
pub fn run(
    to: SocketAddrV4,
    from: Option<SocketAddrV4>,
    mptcp: bool,
    cc: Option<String>,
    deadline: Instant,
    progress: Arc<Progress>,
) -> io::Result<ProbeMetrics> {
    let mut stream = sys::connect(to, from, mptcp, cc.as_deref(), deadline, &progress.stop)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_millis(20)))?;
    let sent: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let finished = |p: &Progress| p.done.lock().unwrap().is_some() || p.stop.load(Ordering::Relaxed);
    let writer = {
        let (mut tx, sent, progress) = (stream.try_clone()?, sent.clone(), progress.clone());
        std::thread::spawn(move || -> io::Result<()> {
            tx.write_all(&[HELLO])?;
            let mut next = Instant::now();
            while !finished(&progress) && Instant::now() < deadline && !sys::interrupted() {
                let seq = {
                    let mut s = sent.lock().unwrap();
                    s.push(Instant::now());
                    s.len() as u64 - 1
                };
                tx.write_all(&seq.to_be_bytes())?;
                next += INTERVAL;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            Ok(())
        })
    };
    let mut rtt: Vec<Option<Duration>> = Vec::new();
    let mut answer = [0u8; 8];
    let mut have = 0;
    let mut ended: Option<Instant> = None;
    loop {
        let expected = sent.lock().unwrap().len();
        if ended.is_none() && (finished(&progress) || Instant::now() >= deadline) {
            ended = Some(Instant::now());
        }
        let all_in = rtt.iter().filter(|r| r.is_some()).count() >= expected;
        if ended.is_some_and(|e| (all_in && writer.is_finished()) || e.elapsed() >= GRACE)
            || sys::interrupted()
        {
            break;
        }
        match stream.read(&mut answer[have..]) {
            Ok(0) => break,
            Ok(n) => {
                have += n;
                if have == answer.len() {
                    have = 0;
                    let seq = u64::from_be_bytes(answer) as usize;
                    let Some(at) = sent.lock().unwrap().get(seq).copied() else {
                        return Err(io::Error::other(format!("probe: an answer to probe {seq}, never sent")));
                    };
                    if rtt.len() <= seq {
                        rtt.resize(seq + 1, None);
                    }
                    rtt[seq] = Some(at.elapsed());
                }
            }
            Err(e) if sys::transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let _ = writer.join();
    let sent = sent.lock().unwrap().clone();
    rtt.resize(sent.len(), None);
    let unanswered = rtt.iter().filter(|r| r.is_none()).count();
    let ms =
        rtt.iter().zip(&sent).map(|(r, at)| r.unwrap_or_else(|| at.elapsed()).as_secs_f64() * 1e3).collect();
    Ok(ProbeMetrics::new(ms, unanswered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_take_nearest_rank_percentiles_over_every_probe() {
        let m = ProbeMetrics::new((1..=100).map(f64::from).collect(), 2);
        assert_eq!((m.probes, m.unanswered), (100, 2));
        assert_eq!((m.p50_ms, m.p99_ms, m.max_ms), (Some(50.0), Some(99.0), Some(100.0)));
        // Start-up's probes are high here: only the whole-run p99 sees them.
        let m = ProbeMetrics::new((0..100).map(|i| if i < 40 { 500.0 } else { 100.0 }).collect(), 0);
        assert_eq!((m.p99_ms, m.p99_after_2s_ms), (Some(500.0), Some(100.0)));
        assert_eq!(ProbeMetrics::new(Vec::new(), 0).p99_ms, None);
        assert_eq!(ProbeMetrics::new(vec![1.0], 0).p99_after_2s_ms, None);
    }
}
