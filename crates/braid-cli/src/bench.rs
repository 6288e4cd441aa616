//! `braid bench`: an iperf-like goodput test through a `braid server`, with latency probes on a
//! second stream while the data flows, per path, optionally as JSON.

use std::time::{Duration, Instant};

use braid_runtime::{Connection, Stream};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::common::{fail, ClientOpts, Fail};
use crate::request;
use crate::stats::Sampler;

/// The server's side of a BENCH request.
pub async fn serve(stream: &mut Stream) -> std::io::Result<()> {
    let direction = stream.read_u8().await?;
    let millis = stream.read_u32().await?;
    let mut buf = vec![0u8; 256 << 10];
    if direction == 0 {
        // Count what arrives within the duration from the first byte, answer at once (data
        // still queued behind it must not delay the verdict), then discard the rest.
        let mut total = stream.read(&mut buf).await? as u64;
        let first = Instant::now();
        let deadline = first + Duration::from_millis(millis.min(600_000).into());
        loop {
            tokio::select! {
                r = stream.read(&mut buf) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n as u64,
                },
                _ = tokio::time::sleep_until(deadline.into()) => break,
            }
        }
        let micros = first.elapsed().min(deadline - first).as_micros() as u64;
        let mut answer = total.to_be_bytes().to_vec();
        answer.extend_from_slice(&micros.to_be_bytes());
        stream.write_all(&answer).await?;
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    } else {
        let until = Instant::now() + Duration::from_millis(millis.min(600_000).into());
        fill(&mut buf);
        while Instant::now() < until {
            stream.write_all(&buf).await?;
        }
    }
    stream.shutdown().await
}

/// The server's side of an ECHO request.
pub async fn echo(stream: &mut Stream) -> std::io::Result<()> {
    let mut buf = [0u8; 512];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return stream.shutdown().await;
        }
        stream.write_all(&buf[..n]).await?;
    }
}

fn fill(buf: &mut [u8]) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// Probes sent per second on the latency stream.
pub const PROBES_PER_SECOND: u32 = 20;

/// Round trips of 8-byte probes (a sequence number), sent every 50 ms until the end of the
/// transfer (`end`: set when it is known) without waiting for earlier answers, so a slow answer
/// does not thin out the samples. Probes still unanswered 1 s after the end are abandoned and
/// count with their age so far (a lower bound).
async fn probe_latency(
    conn: &Connection,
    end: watch::Receiver<Option<Instant>>,
) -> Result<Vec<Duration>, Fail> {
    let err = |e: std::io::Error| fail(format!("latency probe: {e}"));
    let mut s = conn.open_stream()?;
    s.write_all(&[request::ECHO]).await.map_err(err)?;
    let (mut rx, mut tx) = tokio::io::split(s);
    let sent_at = std::sync::Mutex::new(Vec::<Instant>::new());
    let give_up =
        |end: &watch::Receiver<Option<Instant>>| (*end.borrow()).map(|u| u + Duration::from_secs(1));
    let send = async {
        let mut end = end.clone();
        let mut ended = false;
        let mut tick = tokio::time::interval(Duration::from_secs(1) / PROBES_PER_SECOND);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                r = end.changed(), if !ended => ended = r.is_err(),
            }
            if (*end.borrow()).is_some_and(|u| Instant::now() >= u) {
                break;
            }
            let seq = {
                let mut sent = sent_at.lock().expect("not poisoned");
                sent.push(Instant::now());
                sent.len() as u64 - 1
            };
            tx.write_all(&seq.to_be_bytes()).await.map_err(err)?;
        }
        Ok::<_, Fail>(tx)
    };
    let receive = async {
        let mut end = end.clone();
        let mut ended = false;
        let mut rtts = Vec::new();
        let mut answer = [0u8; 8];
        loop {
            let deadline = give_up(&end);
            let expected = sent_at.lock().expect("not poisoned").len();
            let over = (*end.borrow()).is_some_and(|u| Instant::now() >= u);
            if over && rtts.len() >= expected {
                break;
            }
            tokio::select! {
                r = rx.read_exact(&mut answer) => {
                    r.map_err(err)?;
                    let seq = u64::from_be_bytes(answer) as usize;
                    let sent = sent_at.lock().expect("not poisoned").get(seq).copied();
                    let Some(sent) = sent else { return Err(fail("latency probe: an answer to no probe")) };
                    rtts.push(sent.elapsed());
                }
                r = end.changed(), if !ended => ended = r.is_err(),
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)).into()), if deadline.is_some() => break,
            }
        }
        Ok::<_, Fail>(rtts)
    };
    let (tx, rtts) = tokio::join!(send, receive);
    let mut rtts = rtts?;
    // Unanswered probes count with their age (a lower bound on their round trip).
    let sent = sent_at.lock().expect("not poisoned").clone();
    rtts.extend(sent.iter().skip(rtts.len()).map(|t| t.elapsed()));
    if let Ok(mut tx) = tx {
        let _ = tx.shutdown().await;
    }
    Ok(rtts)
}

/// The `q` quantile of sorted samples (nearest rank), if any.
pub fn percentile(sorted: &[Duration], q: f64) -> Option<&Duration> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1)
}

/// How much one measurement sends.
#[derive(Clone, Copy)]
pub enum Amount {
    /// For this long (the server counts what arrives within it).
    Time(Duration),
    /// Exactly this many bytes, upload only (timed at the server, first byte to last).
    Bytes(u64),
}

/// One measurement's results.
pub struct Measured {
    /// Payload bytes that reached the receiver, and over how long.
    pub bytes: u64,
    pub elapsed: Duration,
    /// Latency probes' round trips, sorted.
    pub rtts: Vec<Duration>,
    /// Per path, over the measurement.
    pub samples: Vec<crate::stats::PathSample>,
}

impl Measured {
    pub fn goodput_mbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elapsed.as_secs_f64().max(1e-6) / 1e6
    }
}

/// A BENCH request on `conn` with latency probes beside it.
pub async fn measure(conn: &Connection, amount: Amount, reverse: bool) -> Result<Measured, Fail> {
    let mut sampler = Sampler::new(conn);
    let mut stream = conn.open_stream()?;
    let io = |e: std::io::Error| fail(format!("bench: {e}"));
    let (duration, byte_limit) = match amount {
        Amount::Time(d) => (d, None),
        // The server stops counting at the end of the stream or after this cap.
        Amount::Bytes(n) if !reverse => (Duration::from_secs(600), Some(n)),
        Amount::Bytes(_) => return Err(fail("bench: a byte count is for uploads only")),
    };
    let mut head = vec![request::BENCH, u8::from(reverse)];
    head.extend_from_slice(&(duration.as_millis() as u32).to_be_bytes());
    stream.write_all(&head).await.map_err(io)?;
    let started = Instant::now();
    let until = started + duration;
    let (end_tx, end_rx) = watch::channel(byte_limit.is_none().then_some(until));
    let latency = probe_latency(conn, end_rx);
    let transfer = async {
        let mut buf = vec![0u8; 256 << 10];
        if reverse {
            // What arrived within the duration (data still queued is not waited for).
            let mut total = 0u64;
            loop {
                tokio::select! {
                    r = stream.read(&mut buf) => match r.map_err(io)? {
                        0 => break,
                        n => total += n as u64,
                    },
                    _ = tokio::time::sleep_until(until.into()) => break,
                }
            }
            Ok::<_, Fail>((total, started.elapsed().min(duration)))
        } else {
            fill(&mut buf);
            if let Some(mut left) = byte_limit {
                while left > 0 {
                    let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    stream.write_all(&buf[..n]).await.map_err(io)?;
                    left -= n as u64;
                }
                // The server answers at the end of the stream.
                stream.shutdown().await.map_err(io)?;
            } else {
                loop {
                    tokio::select! {
                        r = stream.write_all(&buf) => r.map_err(io)?,
                        _ = tokio::time::sleep_until(until.into()) => break,
                    }
                }
                // Unsent data is dropped; the server answers from its own clock.
                stream.reset(0);
            }
            let mut answer = [0u8; 16];
            stream.read_exact(&mut answer).await.map_err(io)?;
            if byte_limit.is_some() {
                // The probes stop now (a timed run's end was known from the start).
                let _ = end_tx.send(Some(Instant::now()));
            }
            let total = u64::from_be_bytes(answer[..8].try_into().expect("8"));
            let micros = u64::from_be_bytes(answer[8..].try_into().expect("8"));
            Ok((total, Duration::from_micros(micros)))
        }
    };
    let (transfer, latency) = tokio::join!(transfer, latency);
    let (bytes, elapsed) = transfer?;
    let mut rtts = latency?;
    rtts.sort();
    let samples = sampler.sample(conn);
    Ok(Measured { bytes, elapsed, rtts, samples })
}

/// `braid bench --json`: one line per run.
#[derive(Serialize)]
struct BenchJson<'a> {
    direction: &'a str,
    mode: &'a str,
    seconds: f64,
    bytes: u64,
    goodput_mbps: f64,
    latency_ms: LatencyJson,
    stats: crate::stats::StatsJson,
}

/// Stream round trips under load, in ms (`null` when no probe was answered).
#[derive(Serialize)]
struct LatencyJson {
    min: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
    probes: usize,
}

pub async fn run(client: &ClientOpts, seconds: f64, reverse: bool, json: bool) -> Result<(), Fail> {
    if !(seconds > 0.0 && seconds <= 600.0) {
        return Err(fail("--time: expected seconds between 0 and 600"));
    }
    let conn = client.connect().await?;
    let m = measure(&conn, Amount::Time(Duration::from_secs_f64(seconds)), reverse).await?;
    let (bytes, elapsed, rtts, samples) = (m.bytes, m.elapsed, &m.rtts, &m.samples);
    let goodput = m.goodput_mbps();
    let ms = |d: Option<&Duration>| {
        d.map_or_else(|| "null".to_string(), |d| format!("{:.3}", d.as_secs_f64() * 1e3))
    };
    let (min, p50, max) = (ms(rtts.first()), ms(percentile(rtts, 0.5)), ms(rtts.last()));
    let p99 = ms(percentile(rtts, 0.99));
    let direction = if reverse { "download" } else { "upload" };
    // stdout may be a closed pipe (`| head`): what cannot be printed is dropped, not a panic.
    use std::io::Write;
    let mut stdout = std::io::stdout();
    if json {
        // A missing latency (no probe answered) is `null`.
        let ms = |d: Option<&Duration>| d.map(|d| crate::stats::rounded(d.as_secs_f64() * 1e3, 3));
        let line = BenchJson {
            direction,
            mode: &client.transport.mode,
            seconds: crate::stats::rounded(elapsed.as_secs_f64(), 3),
            bytes,
            goodput_mbps: crate::stats::rounded(goodput, 3),
            latency_ms: LatencyJson {
                min: ms(rtts.first()),
                p50: ms(percentile(rtts, 0.5)),
                p99: ms(percentile(rtts, 0.99)),
                max: ms(rtts.last()),
                probes: rtts.len(),
            },
            stats: crate::stats::report(samples, &conn.stats(), elapsed),
        };
        let _ = writeln!(stdout, "{}", serde_json::to_string(&line).expect("numbers and strings serialize"));
    } else {
        let _ = writeln!(
            stdout,
            "{direction}: {bytes} bytes in {:.2}s = {goodput:.1} Mbit/s (mode {})",
            elapsed.as_secs_f64(),
            client.transport.mode
        );
        let _ = writeln!(stdout, "latency under load (stream round trip, {} probes, {PROBES_PER_SECOND}/s): min {min} ms, p50 {p50} ms, p99 {p99} ms, max {max} ms (max may be a lower bound: see `braid bench --help`)", rtts.len());
        let _ = write!(stdout, "{}", crate::stats::table(samples, &conn));
    }
    conn.close(0, "done");
    let _ = tokio::time::timeout(Duration::from_millis(200), conn.closed()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest rank, as the testbed's probes take it: the p50 of an even count is the lower of
    /// the two middle samples, the p99 of fewer than 100 the largest.
    #[test]
    fn percentiles_are_nearest_rank() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let four = ms(&[10, 20, 30, 40]);
        assert_eq!(percentile(&four, 0.5), Some(&Duration::from_millis(20)));
        assert_eq!(percentile(&four, 0.99), Some(&Duration::from_millis(40)));
        assert_eq!(percentile(&four, 0.0), Some(&Duration::from_millis(10)));
        assert_eq!(percentile(&ms(&[7]), 0.5), Some(&Duration::from_millis(7)));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
