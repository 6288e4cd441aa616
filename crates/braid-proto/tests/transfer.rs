//! End-to-end transfers between two connections over a small deterministic link model (the
//! full simulator lives in braid-sim; this keeps the core's own tests self-contained).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::streams::StreamEvent;
use braid_proto::{Connection, ConnectionConfig, Event, Instant};

/// One direction: fixed rate, one-way delay, Bernoulli loss, drop-tail queue in bytes.
struct Link {
    rate_bps: f64,
    delay: Duration,
    loss: f64,
    queue_limit: usize,
    busy_until: Instant,
    rng: u64,
    in_flight: BinaryHeap<Reverse<(Instant, u64, Vec<u8>)>>,
    seq: u64,
    queued_bytes: Vec<(Instant, usize)>,
}

impl Link {
    fn new(rate_bps: f64, delay_ms: u64, loss: f64, seed: u64) -> Link {
        let bdp = (rate_bps / 8.0 * 2.0 * delay_ms as f64 / 1000.0) as usize;
        Link {
            rate_bps,
            delay: Duration::from_millis(delay_ms),
            loss,
            queue_limit: bdp.max(20_000),
            busy_until: Instant::ZERO,
            rng: seed | 1,
            in_flight: BinaryHeap::new(),
            seq: 0,
            queued_bytes: Vec::new(),
        }
    }

    fn random(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    fn send(&mut self, now: Instant, datagram: Vec<u8>) {
        self.queued_bytes.retain(|(done, _)| *done > now);
        let queued: usize = self.queued_bytes.iter().map(|(_, n)| n).sum();
        if queued + datagram.len() > self.queue_limit {
            return; // tail drop
        }
        let start = self.busy_until.max(now);
        let done = start + Duration::from_secs_f64(datagram.len() as f64 * 8.0 / self.rate_bps);
        self.busy_until = done;
        self.queued_bytes.push((done, datagram.len()));
        if self.random() < self.loss {
            return;
        }
        self.seq += 1;
        self.in_flight.push(Reverse((done + self.delay, self.seq, datagram)));
    }

    fn next(&self) -> Option<Instant> {
        self.in_flight.peek().map(|Reverse((t, _, _))| *t)
    }

    fn poll(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next()? <= now {
            self.in_flight.pop().map(|Reverse((_, _, d))| d)
        } else {
            None
        }
    }
}

struct Outcome {
    received: Vec<u8>,
    finished_at: Option<Instant>,
}

/// Sends `data` on one stream from client to server through the two links.
fn transfer(data: &[u8], up: Link, down: Link, deadline: Duration, mode: Mode) -> Outcome {
    transfer_with(data, up, down, deadline, ConnectionConfig { mode, ..ConnectionConfig::default() })
}

fn transfer_with(
    data: &[u8],
    mut up: Link,
    mut down: Link,
    deadline: Duration,
    config: ConnectionConfig,
) -> Outcome {
    let mut client = Connection::client(config.clone(), Instant::ZERO, 7);
    let mut server = Connection::server(config, Instant::ZERO);
    let mut now = Instant::ZERO;
    let end = Instant::ZERO + deadline;
    let mut buf = Vec::new();
    let mut stream = None;
    let mut written = 0;
    let mut received = Vec::new();
    let mut finished_at = None;
    let mut read_buf = vec![0u8; 65536];
    let mut last_trace = u64::MAX;
    while now < end && finished_at.is_none() {
        // Application: write as flow control allows, read everything.
        if stream.is_none() && client.is_established() {
            stream = client.streams().unwrap().open().ok();
        }
        if let Some(id) = stream {
            let s = client.streams().unwrap();
            if written < data.len() && s.send_buffered(id) < 256 * 1024 {
                let n = (data.len() - written).min(64 * 1024);
                s.write(id, &data[written..written + n]).unwrap();
                written += n;
                if written == data.len() {
                    s.finish(id).unwrap();
                }
            }
        }
        while let Some(event) = server.poll_event() {
            if let Event::Stream(StreamEvent::Readable(id)) = event {
                loop {
                    let (n, fin) = server.streams().unwrap().read(id, &mut read_buf).unwrap();
                    received.extend_from_slice(&read_buf[..n]);
                    if fin {
                        finished_at = Some(now);
                    }
                    if n == 0 {
                        break;
                    }
                }
            }
        }
        while client.poll_event().is_some() {}
        // Network.
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            up.send(now, buf[..t.size].to_vec());
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            down.send(now, buf[..t.size].to_vec());
        }
        while let Some(d) = up.poll(now) {
            server.handle_datagram(now, 0, &d);
        }
        while let Some(d) = down.poll(now) {
            client.handle_datagram(now, 0, &d);
        }
        if std::env::var("TRACE").is_ok() && now.as_micros() / 500_000 != last_trace {
            last_trace = now.as_micros() / 500_000;
            eprintln!(
                "{:?} client {:?} {:?} recv {}",
                now,
                client.path_state(),
                client.path_stats(),
                received.len()
            );
            if std::env::var("TRACE").as_deref() == Ok("blocks") {
                eprintln!(
                    "  client blocks {:?}\n  server {:?}",
                    client.block_state().0,
                    server.block_state().1
                );
            }
        }
        // Advance to the next event.
        let next = [client.poll_timeout(), server.poll_timeout(), up.next(), down.next()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end)
            .max(now + Duration::from_micros(1));
        if client.poll_timeout().is_some_and(|t| t <= next) {
            client.handle_timeout(next);
        }
        if server.poll_timeout().is_some_and(|t| t <= next) {
            server.handle_timeout(next);
        }
        now = next;
    }
    Outcome { received, finished_at }
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 2654435761usize) >> 7) as u8).collect()
}

fn modes() -> Vec<Mode> {
    match std::env::var("MODE") {
        Ok(m) => vec![m.parse().unwrap()],
        Err(_) => Mode::ALL.to_vec(),
    }
}

#[test]
fn lossless_transfer_is_exact() {
    for mode in modes() {
        let d = data(2_000_000);
        let out = transfer(
            &d,
            Link::new(20e6, 50, 0.0, 1),
            Link::new(20e6, 50, 0.0, 2),
            Duration::from_secs(30),
            mode,
        );
        assert_eq!(out.received.len(), d.len(), "{mode:?}");
        assert!(out.received == d, "{mode:?}: content differs");
        let secs = out.finished_at.unwrap().as_micros() as f64 / 1e6;
        let goodput = d.len() as f64 * 8.0 / secs / 1e6;
        println!("{}: lossless: {secs:.2} s, {goodput:.1} Mbit/s", mode.name());
    }
}

/// Every mode delivers every byte, in order, under loss (seed printed on failure).
#[test]
fn lossy_transfer_is_exact() {
    let cases: Vec<(f64, u64)> = match std::env::var("LOSS") {
        Ok(l) => vec![(l.parse().unwrap(), 3)],
        Err(_) => vec![(0.01, 3), (0.05, 4), (0.2, 5)],
    };
    for mode in modes() {
        for &(loss, seed) in &cases {
            let size = std::env::var("SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
            let d = data(size);
            let out = transfer(
                &d,
                Link::new(20e6, 50, loss, seed),
                Link::new(20e6, 50, loss, seed + 100),
                Duration::from_secs(120),
                mode,
            );
            let name = mode.name();
            assert!(
                out.received == d,
                "{name}, loss {loss}, seed {seed}: {} of {} bytes",
                out.received.len(),
                d.len()
            );
            let secs = out.finished_at.unwrap().as_micros() as f64 / 1e6;
            println!("{name}: loss {loss}: {secs:.2} s, {:.1} Mbit/s", d.len() as f64 * 8.0 / secs / 1e6);
        }
    }
}

/// The code family is the client's choice (PROTOCOL.md §9.2): every family must work, RaptorQ
/// (blocks sealed by their first repair) and XOR (no new symbol for a loss: retransmission)
/// included, in both modes.
#[test]
fn every_code_family_delivers() {
    use braid_fec::CodeFamily;
    use braid_proto::wire::TransportParams;
    let codes: Vec<CodeFamily> = match std::env::var("CODE") {
        Ok(c) => vec![c.parse().unwrap()],
        Err(_) => CodeFamily::ALL.to_vec(),
    };
    for code in codes {
        for mode in modes() {
            let config = ConnectionConfig {
                mode,
                params: TransportParams { code, ..TransportParams::default() },
                ..ConnectionConfig::default()
            };
            let size = std::env::var("SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(600_000);
            let d = data(size);
            let started = std::time::Instant::now();
            let out = transfer_with(
                &d,
                Link::new(20e6, 50, 0.05, 11),
                Link::new(20e6, 50, 0.05, 12),
                Duration::from_secs(120),
                config,
            );
            assert!(out.received == d, "{code} / {mode:?}: {} of {} bytes", out.received.len(), d.len());
            let secs = out.finished_at.unwrap().as_micros() as f64 / 1e6;
            println!(
                "{code} / {}: {secs:.2} s simulated, {:.2} s wall",
                mode.name(),
                started.elapsed().as_secs_f64()
            );
        }
    }
}

/// A client asking for huge blocks gets the server's limits, and both ends agree on them.
#[test]
fn server_caps_the_clients_code_parameters() {
    use braid_proto::wire::TransportParams;
    let greedy = ConnectionConfig {
        params: TransportParams {
            symbol_size: 1200,
            max_block_len: 1024,
            blocks_in_flight: 64,
            ..TransportParams::default()
        },
        ..ConnectionConfig::default()
    };
    let mut client = Connection::client(greedy, Instant::ZERO, 3);
    let mut server = Connection::server(ConnectionConfig::default(), Instant::ZERO);
    let mut buf = Vec::new();
    for step in 0..10u64 {
        let now = Instant::from_micros(step * 1000);
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            server.handle_datagram(now, t.path, &buf[..t.size]);
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            client.handle_datagram(now, t.path, &buf[..t.size]);
        }
    }
    assert!(client.is_established() && server.is_established());
    let defaults = TransportParams::default();
    for c in [&client, &server] {
        let p = c.params();
        assert_eq!(
            (p.max_block_len, p.blocks_in_flight),
            (defaults.max_block_len, defaults.blocks_in_flight)
        );
    }
}
