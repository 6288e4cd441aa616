//! Where the latency beside a bulk stream goes in its first seconds: the testbed's latency
//! workload (scenarios/testbed/latency.toml, latency-two-paths.toml) in the simulator. A bulk
//! stream and, from the same moment, an 8-byte request every 50 ms on a second stream of the
//! same connection, echoed by the server. Prints each request's round trip over the first 3 s
//! beside the forward links' queues (in ms at the link's rate) and the client path's window,
//! in flight and pacing rate, then the p99 of all round trips, the p99 from 2 s on, the bulk
//! bytes delivered at 3 s and at the end, and the client's repair and source symbols sent:
//! `cargo run --release -p braid-sim --example startup_queue -- one 0.02 1` (`one LOSS SEED`:
//! one 20 Mbit/s, 100 ms path, loss on the data direction; `two SEED`: `braid demo`'s paths;
//! `FROM=2` prints the 3 s from 2 s on instead; `JITTER=10` adds up to 10 ms to each packet;
//! `EARLY=0` turns off a new path's early loss estimate; `BULK=25000000` ends the bulk stream
//! after that many bytes, as the testbed's transfer does).

use std::time::Duration;

use braid_proto::streams::StreamEvent;
use braid_proto::trace::{PathMetrics, TraceEvent};
use braid_proto::{Connection, ConnectionConfig, Event, Instant};
use braid_sim::{Endpoint, EndpointId, LinkConfig, LinkId, LossModel, Network, PathConfig};

const REQUEST: usize = 8;
const EVERY: Duration = Duration::from_millis(50);
const BULK_AHEAD: usize = 1 << 20;
/// Requests sent in the first 2 s, left out of the late p99 (as the testbed's `probe.rs`).
const STARTUP_REQUESTS: usize = 40;

struct Side {
    conn: Connection,
    client: bool,
    bulk: Option<u64>,
    requests: Option<u64>,
    next_request: Option<Instant>,
    sent_at: Vec<Instant>,
    echo_read: u64,
    echoed_at: Vec<Instant>,
    bulk_read: u64,
    /// Bulk bytes still to write (`BULK=BYTES`; unlimited by default), then the stream ends.
    bulk_left: u64,
}

impl Side {
    fn new(conn: Connection, client: bool) -> Side {
        Side {
            conn,
            client,
            bulk: None,
            requests: None,
            next_request: None,
            sent_at: Vec::new(),
            echo_read: 0,
            echoed_at: Vec::new(),
            bulk_read: 0,
            bulk_left: std::env::var("BULK").ok().and_then(|b| b.parse().ok()).unwrap_or(u64::MAX),
        }
    }

    fn drive(&mut self, now: Instant) {
        let mut buf = [0u8; 65_536];
        while let Some(event) = self.conn.poll_event() {
            let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
            let Some(streams) = self.conn.streams() else { return };
            while let Ok((n, _)) = streams.read(id, &mut buf) {
                if n == 0 {
                    break;
                }
                if self.client {
                    for _ in 0..n {
                        self.echo_read += 1;
                        if self.echo_read.is_multiple_of(REQUEST as u64) {
                            self.echoed_at.push(now);
                        }
                    }
                } else if id == 0 {
                    self.bulk_read += n as u64;
                } else {
                    streams.write(id, &buf[..n]).expect("open");
                }
            }
        }
        if !self.client || !self.conn.is_established() {
            return;
        }
        let Some(streams) = self.conn.streams() else { return };
        let bulk = *self.bulk.get_or_insert_with(|| streams.open().expect("stream"));
        let requests = *self.requests.get_or_insert_with(|| streams.open().expect("stream"));
        while streams.send_buffered(bulk) < BULK_AHEAD && self.bulk_left > 0 {
            let n = self.bulk_left.min(16_384);
            streams.write(bulk, &[0x5a; 16_384][..n as usize]).expect("open");
            self.bulk_left -= n;
            if self.bulk_left == 0 {
                streams.finish(bulk).expect("open");
            }
        }
        let mut at = *self.next_request.get_or_insert(now);
        while at <= now {
            streams.write(requests, &[self.sent_at.len() as u8; REQUEST]).expect("open");
            self.sent_at.push(at);
            at += EVERY;
        }
        self.next_request = Some(at);
    }
}

impl Endpoint for Side {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        self.conn.handle_datagram(now, path as u8, datagram);
        self.drive(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        self.drive(now);
        let mut buf = Vec::new();
        let t = self.conn.poll_transmit(now, &mut buf)?;
        buf.truncate(t.size);
        Some((usize::from(t.path), buf))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let wake = if self.client { self.next_request } else { None };
        match (self.conn.poll_timeout(), wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The paths (`one LOSS SEED` or `two SEED`, as the module's documentation says), the seed and
/// the seconds to run.
fn setup(args: &[String]) -> (Vec<PathConfig>, u64, u64) {
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    // The testbed's hosts are not idle: `JITTER=MS` adds up to MS of delay to each packet of
    // the one path, both ways (in order), as a loaded host's scheduling does.
    let jitter =
        Duration::from_millis(std::env::var("JITTER").ok().and_then(|j| j.parse().ok()).unwrap_or(0));
    if arg(0, "one") == "two" {
        let path = |rate, ms, loss| {
            let link = LinkConfig::new(rate, Duration::from_millis(ms)).with_loss(LossModel::bernoulli(loss));
            PathConfig { forward: link.clone(), reverse: link }
        };
        (vec![path(20_000_000, 20, 0.01), path(10_000_000, 80, 0.05)], arg(1, "1").parse().expect("seed"), 9)
    } else {
        let loss: f64 = arg(1, "0").parse().expect("loss");
        let link = LinkConfig::new(20_000_000, Duration::from_millis(50)).with_jitter(jitter, false);
        let path = PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link };
        (vec![path], arg(2, "1").parse().expect("seed"), 11)
    }
}

/// The network of a client and a server on `paths`, the client tracing.
fn network(paths: &[PathConfig], seed: u64) -> (Network<Side>, EndpointId, EndpointId) {
    let mut config = ConnectionConfig { paths: paths.len() as u8, ..ConnectionConfig::default() };
    // `EARLY=N`: a new path's early loss estimate for N symbols (`Redundancy::early_symbols`).
    if let Some(n) = std::env::var("EARLY").ok().and_then(|n| n.parse().ok()) {
        config.redundancy.early_symbols = n;
    }
    let client = Side::new(Connection::client(config.clone(), Instant::ZERO, seed), true);
    let server = Side::new(Connection::server(config, Instant::ZERO), false);
    let (mut net, c, s) = Network::pair(seed, client, server, paths).expect("network");
    net.endpoint_mut(c).conn.enable_trace();
    (net, c, s)
}

/// One line every 25 ms of the 3 s printed: each forward link's queue and the client path's
/// window, in flight and pacing rate, and the latest request answered by `now`.
fn print_row(
    net: &Network<Side>,
    c: EndpointId,
    forward: &[LinkId],
    rates: &[f64],
    metrics: &[Option<PathMetrics>],
    t: Duration,
    now: Instant,
) {
    let mut row = format!("{:5.3}", t.as_secs_f64());
    for (i, m) in metrics.iter().enumerate() {
        let queue = net.link(forward[i]).queued_bytes(now) as f64 / rates[i] * 1e3;
        let (cwnd, flight, pace) = m.map_or((0, 0, 0), |m| (m.cwnd, m.bytes_in_flight, m.pacing_rate));
        row += &format!(
            " | q {queue:5.1} ms cwnd {:4.0} kB fl {:4.0} kB pace {:5.1} Mb/s",
            cwnd as f64 / 1e3,
            flight as f64 / 1e3,
            pace as f64 * 8e-6
        );
    }
    let client = net.endpoint(c);
    if let Some(i) = client.sent_at.iter().position(|&a| a + Duration::from_millis(25) > now) {
        if let Some(&echo) = client.echoed_at.get(i.saturating_sub(1)) {
            let sent = client.sent_at[i.saturating_sub(1)];
            row += &format!(" | req {} rtt {:.0}", i - 1, (echo - sent).as_secs_f64() * 1e3);
        }
    }
    println!("{row}");
}

/// Runs `secs` seconds in 1 ms steps, printing the 3 s from `FROM` (0 by default) on; returns
/// the bulk bytes delivered 3 s after the first request.
fn run(net: &mut Network<Side>, c: EndpointId, s: EndpointId, paths: &[PathConfig], secs: u64) -> u64 {
    let rates: Vec<f64> = paths.iter().map(|p| p.forward.rate_bps as f64 / 8.0).collect();
    let forward: Vec<_> = (0..paths.len()).map(|i| net.route(c, i)[0]).collect();
    let mut metrics: Vec<Option<PathMetrics>> = vec![None; paths.len()];
    let mut now = Instant::ZERO;
    let mut start = None;
    let mut at_3s = 0;
    let mut line = 0;
    let from =
        Duration::from_secs_f64(std::env::var("FROM").ok().and_then(|f| f.parse().ok()).unwrap_or(0.0));
    let end = Instant::ZERO + Duration::from_secs(secs);
    while now < end {
        now += Duration::from_millis(1);
        net.run_until(now);
        while let Some(e) = net.endpoint_mut(c).conn.poll_trace() {
            if let TraceEvent::Metrics { path, metrics: m, .. } = e {
                metrics[usize::from(path)] = Some(m);
            }
        }
        let Some(t0) = start.or_else(|| net.endpoint(c).sent_at.first().copied()) else { continue };
        start = Some(t0);
        let t = now.saturating_duration_since(t0);
        if t >= Duration::from_secs(3) && at_3s == 0 {
            at_3s = net.endpoint(s).bulk_read;
        }
        if t >= from && t < from + Duration::from_secs(3) && (t - from).as_millis() as usize >= line * 25 {
            line += 1;
            print_row(net, c, &forward, &rates, &metrics, t, now);
        }
    }
    at_3s
}

/// The round trips (the first 60, those above 125 ms) and the summary line.
fn report(client: &Side, bulk_read: u64, at_3s: u64, secs: u64) {
    let end = Instant::ZERO + Duration::from_secs(secs);
    let rtt = |i: usize| {
        client.echoed_at.get(i).map_or(f64::INFINITY, |&e| (e - client.sent_at[i]).as_secs_f64() * 1e3)
    };
    let judged = client.sent_at.iter().filter(|&&a| a + Duration::from_secs(1) <= end).count();
    let mut all: Vec<f64> = (0..judged).map(rtt).collect();
    println!(
        "first 60 round trips: {}",
        all.iter().take(60).map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(" ")
    );
    let high: Vec<String> =
        all.iter().enumerate().filter(|(_, &r)| r > 125.0).map(|(i, r)| format!("{i}:{r:.0}")).collect();
    println!("above 125 ms (request:ms): {}", high.join(" "));
    let mut late = all.split_off(STARTUP_REQUESTS.min(all.len()));
    late.sort_by(f64::total_cmp);
    all.extend_from_slice(&late);
    all.sort_by(f64::total_cmp);
    let stats = client.conn.stats;
    println!(
        "requests {} p50 {:.0} p99 {:.0} max {:.0} ms; from 2 s p99 {:.0} ms; bulk at 3 s {} B, at {secs} s {} B; \
         repair {} of {} source symbols",
        all.len(),
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        percentile(&all, 1.0),
        percentile(&late, 0.99),
        at_3s,
        bulk_read,
        stats.repair_symbols_sent,
        stats.source_symbols_sent
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (paths, seed, secs) = setup(&args);
    let (mut net, c, s) = network(&paths, seed);
    let at_3s = run(&mut net, c, s, &paths, secs);
    report(net.endpoint(c), net.endpoint(s).bulk_read, at_3s, secs);
}
