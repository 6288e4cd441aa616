//! The repair budget of app-limited traffic: the repair rate follows the measured loss, at most
//! 2 × loss + 2 percentage points of what the application sent.
//!
//! What the budget counts: repair symbols over source symbols sent by one endpoint over a run,
//! all its streams together (every symbol carries at most one symbol's bytes, so this is also
//! an upper bound on repair bytes over source bytes). Per request it cannot hold: a request
//! that fits one symbol has either no proactive repair or 100 %. braid gives a request its
//! margin as a latency buy where it pays: a request written while another stream still sends (a
//! request beside bulk data, `Tail::Request`) gets δ̂ 0.01, one repair for a one-symbol request
//! above 1 % loss; a request or response after which the application idles (`Tail::AppIdle`)
//! gets δ̂ 0.35, no proactive repair at all for a one-symbol request below 35 % loss (its loss
//! is repaired reactively, after a tail probe, by two symbols: the reactive round carries its
//! own margin, so such a request's repair is about twice the loss it met, and the budget's two
//! points are what one run's luck may add). So the budget is met over the connection: by
//! request/response traffic alone (each side's own symbols), and by requests beside bulk only
//! as long as the requests are a small share of the connection's symbols (20 one-symbol
//! requests a second beside 20 Mbit/s of bulk: about one point). The seed is in every failure
//! message.

use std::time::Duration;

mod common {
    pub mod app;
}

use braid_proto::conn::Mode;
use braid_proto::streams::StreamEvent;
use braid_proto::{Connection, ConnectionConfig, Event, Instant};
use braid_sim::{LinkConfig, LossModel, Network, PathConfig, VideoFlow, VideoSource, VideoStats};
use common::app::{App, Driven};

/// A request every 50 ms (the testbed's latency workload), `REQUEST` bytes each.
const REQUEST: usize = 200;
const EVERY: Duration = Duration::from_millis(50);

/// Repair over source symbols an endpoint sent.
fn overhead(conn: &Connection) -> (f64, u64) {
    let s = conn.stats;
    (s.repair_symbols_sent as f64 / s.source_symbols_sent.max(1) as f64, s.source_symbols_sent)
}

fn budget(loss: f64) -> f64 {
    2.0 * loss + 0.02
}

/// One 20 Mbit/s, 100 ms RTT path; `loss` on the data direction (`both`: on both).
fn path(loss: f64, both: bool) -> PathConfig {
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50));
    let forward = link.clone().with_loss(LossModel::bernoulli(loss));
    let reverse = if both { forward.clone() } else { link };
    PathConfig { forward, reverse }
}

/// Live video (the simulator's source: 25 fps, 3.4 Mbit/s, an I-frame a second) at 1, 2 and 5 %
/// random loss, counted over six seeds × 20 s (two minutes of video: one 20 s run's count
/// swings by about ±0.7 points with where the losses fall). Measured, repair over source
/// symbols: 1 %: 3.0 % (runs 2.7-3.4 %; budget 4 %); 2 %: 5.8 % (5.3-6.6 %; budget 6 %); 5 %:
/// 11.9 % (11.3-12.4 %; budget 12 %). So the budget holds over the two minutes, narrowly at 2 and
/// 5 %, and not in every 20 s run (seed 1 at 2 % and 5 %, seed 4 at 2 %, are over it).
#[test]
fn live_video_repair_follows_the_loss() {
    for loss in [0.01, 0.02, 0.05] {
        let (mut repair, mut sources) = (0, 0);
        for seed in 1..=6 {
            let config = ConnectionConfig { mode: Mode::Braid, ..ConnectionConfig::default() };
            let source = VideoSource::new(3_400_000, seed);
            let client = VideoFlow::sender(config.clone(), seed, source, Instant::ZERO);
            let server = VideoFlow::receiver(config, source);
            let (mut net, tx, rx) =
                Network::pair(seed, client, server, &[path(loss, false)]).expect("network");
            net.run_until(Instant::ZERO + Duration::from_secs(20));
            let (tx, rx) = (net.endpoint(tx), net.endpoint(rx));
            assert_eq!(rx.corrupt_at(), None, "loss {loss} seed {seed}: corrupted byte");
            assert!(rx.completed().len() >= 490, "loss {loss} seed {seed}: {} frames", rx.completed().len());
            let s = tx.connection().stats;
            eprintln!(
                "video, loss {loss} seed {seed}: repair {:.4} of {} source symbols",
                overhead(tx.connection()).0,
                s.source_symbols_sent
            );
            // 20 s of 3.4 Mbit/s is about 7,000 symbols: the frames must have gone out.
            assert!(
                s.source_symbols_sent > 6_500,
                "loss {loss} seed {seed}: {} sources",
                s.source_symbols_sent
            );
            repair += s.repair_symbols_sent;
            sources += s.source_symbols_sent;
        }
        let over = repair as f64 / sources as f64;
        eprintln!("video, loss {loss}: repair {over:.4} of {sources} source symbols over six seeds");
        assert!(over <= budget(loss), "loss {loss}: repair {over:.4} > {:.2}", budget(loss));
    }
}

/// The client: requests on one stream, and with `bulk` a second stream kept full.
struct Client {
    conn: Connection,
    bulk: bool,
    streams: Option<(u64, u64)>,
    next_request: Instant,
    sent_at: Vec<Instant>,
    /// Response bytes read, and when each response was complete.
    read: u64,
    answered_at: Vec<Instant>,
    response: usize,
}

/// The server: reads everything; answers each request with `response` bytes on its stream.
struct Server {
    conn: Connection,
    request_read: u64,
    response: usize,
    buf: Vec<u8>,
}

impl App for Client {
    fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    fn conn_ref(&self) -> &Connection {
        &self.conn
    }

    /// The request clock.
    fn wake(&self) -> Option<Instant> {
        Some(self.next_request)
    }

    fn drive(&mut self, now: Instant) {
        let mut buf = [0u8; 4096];
        while let Some(event) = self.conn.poll_event() {
            let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
            let Some(streams) = self.conn.streams() else { return };
            while let Ok((n, _)) = streams.read(id, &mut buf) {
                if n == 0 {
                    break;
                }
                let before = self.read / self.response as u64;
                self.read += n as u64;
                for _ in before..self.read / self.response as u64 {
                    self.answered_at.push(now);
                }
            }
        }
        if !self.conn.is_established() {
            return;
        }
        let Some(streams) = self.conn.streams() else { return };
        let (requests, bulk) = *self.streams.get_or_insert_with(|| {
            let requests = streams.open().expect("stream");
            (requests, streams.open().expect("stream"))
        });
        while self.bulk && streams.send_buffered(bulk) < 1 << 20 {
            streams.write(bulk, &[7; 16_384]).expect("open");
        }
        while self.next_request <= now {
            streams.write(requests, &[self.sent_at.len() as u8; REQUEST]).expect("open");
            self.sent_at.push(self.next_request);
            self.next_request += EVERY;
        }
    }
}

impl App for Server {
    fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    fn conn_ref(&self) -> &Connection {
        &self.conn
    }

    fn drive(&mut self, _now: Instant) {
        while let Some(event) = self.conn.poll_event() {
            let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
            let Some(streams) = self.conn.streams() else { return };
            while let Ok((n, _)) = streams.read(id, &mut self.buf) {
                if n == 0 {
                    break;
                }
                // The request stream is the client's first (id 0); the bulk is only read.
                if id != 0 {
                    continue;
                }
                let before = self.request_read / REQUEST as u64;
                self.request_read += n as u64;
                for i in before..self.request_read / REQUEST as u64 {
                    streams.write(id, &vec![i as u8; self.response]).expect("open");
                }
            }
        }
    }
}

type Side = common::app::Side<Client, Server>;

/// What a run measured: each side's (repair over source, source symbols), the requests judged
/// and their round trips in ms, sorted.
struct Run {
    client: (f64, u64),
    server: (f64, u64),
    rtts: Vec<f64>,
}

fn run(bulk: bool, response: usize, loss: f64, seed: u64, secs: u64) -> Run {
    let config = ConnectionConfig { mode: Mode::Braid, ..ConnectionConfig::default() };
    let client = Client {
        conn: Connection::client(config.clone(), Instant::ZERO, seed),
        bulk,
        streams: None,
        next_request: Instant::ZERO + Duration::from_secs(1),
        sent_at: Vec::new(),
        read: 0,
        answered_at: Vec::new(),
        response,
    };
    let server = Server {
        conn: Connection::server(config, Instant::ZERO),
        request_read: 0,
        response,
        buf: vec![0; 65_536],
    };
    let (mut net, c, s) =
        Network::pair(seed, Driven(Side::Client(client)), Driven(Side::Server(server)), &[path(loss, true)])
            .expect("network");
    let end = Instant::ZERO + Duration::from_secs(secs);
    net.run_until(end);
    let (Side::Client(client), Side::Server(server)) = (&net.endpoint(c).0, &net.endpoint(s).0) else {
        unreachable!("built above")
    };
    let mut rtts: Vec<f64> = client
        .sent_at
        .iter()
        .enumerate()
        .filter(|(_, &at)| at + Duration::from_secs(1) <= end)
        .map(|(i, &at)| client.answered_at.get(i).map_or(f64::INFINITY, |&t| (t - at).as_secs_f64() * 1e3))
        .collect();
    rtts.sort_by(f64::total_cmp);
    Run { client: overhead(&client.conn), server: overhead(&server.conn), rtts }
}

fn p99(sorted: &[f64]) -> f64 {
    sorted[((0.99 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Request/response alone: a 200-byte request every 50 ms, each answered with 16 kB (a dozen
/// symbols), loss on both directions of one 20 Mbit/s, 100 ms RTT path, seeds 1-20 × 6 s at 1 %
/// and 2 % loss, 1-40 at 5 % (a run's client sends ~100 one-symbol requests, so one run's count
/// swings with how many of them the link took: at 5 % its repair ranges over 0.02-0.24 of its
/// sources). Each side's repair over the runs is within the budget, and every request is
/// answered. A lost one-symbol request is replaced by two symbols (an app-idle tail's reactive
/// round, δ̂ 0.01, `redundancy::adaptive`), so the client's repair is about twice the loss it saw.
/// Measured, client / server over seeds 1-20 before packet version 2: 1 %: 0.022 / 0.024 (budget
/// 0.04); 2 %: 0.044 / 0.047 (0.06); 5 %: 0.108 / 0.110 (0.12), single runs 0.04-0.20; with it,
/// 0.020 / 0.024, 0.044 / 0.048, and at 5 % over seeds 1-40 0.102 / 0.113. Where the link's losses fall
/// among the packets moves with any change of packet sizes, and twenty runs at 5 % are not
/// enough for the client's mean: with packet version 2's shorter headers seeds 1-20 gave 0.121
/// (main's binary 0.108), seeds 1-40 0.102 (0.108), seeds 1-80 0.096 (0.104). Before a
/// BLOCK_ACK's own ACK ranges told the sender which symbols it could not hold
/// (`blocks/send.rs`, `on_symbol_acked_in`), a lost BLOCK_ACK cost a one-symbol request a
/// repair of a block the receiver had decoded: the client's repair at 5 % was 0.151 over seeds
/// 1-40.
#[test]
fn requests_and_responses_within_the_budget() {
    for loss in [0.01, 0.02, 0.05] {
        let (mut client, mut server) = ((0.0, 0), (0.0, 0));
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        let seeds = if loss >= 0.05 { 40 } else { 20 };
        for seed in 1..=seeds {
            let r = run(false, 16_000, loss, seed, 6);
            assert!(r.rtts.len() >= 80, "loss {loss} seed {seed}: {} requests judged", r.rtts.len());
            assert!(p99(&r.rtts).is_finite(), "loss {loss} seed {seed}: a request never answered");
            for (side, (_, sources)) in [("client", r.client), ("server", r.server)] {
                assert!(sources >= 80, "loss {loss} seed {seed}: {side} sent {sources} source symbols");
            }
            (lo, hi) = (lo.min(r.client.0), hi.max(r.client.0));
            client = (client.0 + r.client.0 * r.client.1 as f64, client.1 + r.client.1);
            server = (server.0 + r.server.0 * r.server.1 as f64, server.1 + r.server.1);
        }
        for (side, (repair, sources)) in [("client", client), ("server", server)] {
            let over = repair / sources as f64;
            eprintln!(
                "request/response, loss {loss}: {side} repair {over:.4} of {sources} sources over {seeds} runs{}",
                if side == "client" { format!(" (runs {lo:.3}-{hi:.3})") } else { String::new() }
            );
            assert!(over <= budget(loss), "loss {loss}: {side}'s repair {over:.4} > {:.2}", budget(loss));
        }
    }
}

/// Requests beside a bulk stream (the server answers each with 200 bytes): the requests' tails
/// carry a δ̂ 0.01 margin, 100 % of a one-symbol request, and the client's connection still
/// keeps within the budget because they are a small share of its symbols.
#[test]
fn requests_beside_bulk_within_the_budget() {
    for (loss, seed) in [(0.02, 2), (0.05, 4)] {
        let r = run(true, REQUEST, loss, seed, 5);
        eprintln!(
            "beside bulk, loss {loss} seed {seed}: client repair {:.4} of {}, {} requests, round trip p99 {:.0} ms",
            r.client.0,
            r.client.1,
            r.rtts.len(),
            p99(&r.rtts)
        );
        assert!(r.rtts.len() >= 60, "loss {loss} seed {seed}: {} requests judged", r.rtts.len());
        assert!(r.client.1 > 5_000, "loss {loss} seed {seed}: bulk sent only {} symbols", r.client.1);
        assert!(
            r.client.0 <= budget(loss),
            "loss {loss} seed {seed}: repair {:.4} > {:.2}",
            r.client.0,
            budget(loss)
        );
    }
}

/// Live video split over two paths of 3 Mbit/s and 100 ms RTT, one with 0.5 % loss and one with
/// 20 % (the video, 3.4 Mbit/s, needs both), seeds 1-4 × 20 s. A frame's margin counts each of
/// its symbols by the loss of the path it crossed (`redundancy::Adaptive`): measured, repair
/// 16.6 % of the source symbols, 31 of 1,860 frames after the first second later than 300 ms (an
/// I-frame alone takes ~110 ms to serialize on the two), p99 322-387 ms. Sized with the asking
/// path's loss alone it was 28.4 %, 34 late, p99 317-862 ms: a frame sent over the clean path
/// got the lossy path's margin when the lossy path asked.
#[test]
fn a_frame_split_over_two_paths_is_repaired_by_each_paths_loss() {
    let (mut repair, mut sources, mut late, mut frames) = (0, 0, 0, 0);
    for seed in 1..=4 {
        let config = ConnectionConfig { mode: Mode::Braid, paths: 2, ..ConnectionConfig::default() };
        let source = VideoSource::new(3_400_000, seed);
        let client = VideoFlow::sender(config.clone(), seed, source, Instant::ZERO);
        let server = VideoFlow::receiver(config, source);
        let link = LinkConfig::new(3_000_000, Duration::from_millis(50));
        let lossy = |loss| PathConfig {
            forward: link.clone().with_loss(LossModel::bernoulli(loss)),
            reverse: link.clone(),
        };
        let (mut net, tx, rx) =
            Network::pair(seed, client, server, &[lossy(0.005), lossy(0.2)]).expect("network");
        let end = Instant::ZERO + Duration::from_secs(20);
        net.run_until(end);
        let (tx, rx) = (net.endpoint(tx), net.endpoint(rx));
        assert_eq!(rx.corrupt_at(), None, "seed {seed}: corrupted byte");
        let stats = VideoStats::compute(tx.captured(), rx.completed(), Duration::from_millis(300), end);
        let s = tx.connection().stats;
        eprintln!("two paths, seed {seed}: {stats:?}, repair {:.4}", overhead(tx.connection()).0);
        let paths = tx.connection().path_stats();
        assert!(paths[1].bytes_sent * 5 > paths[0].bytes_sent, "seed {seed}: the lossy path carried little");
        repair += s.repair_symbols_sent;
        sources += s.source_symbols_sent;
        late += stats.steady_frames - stats.steady_on_time;
        frames += stats.steady_frames;
    }
    let over = repair as f64 / sources as f64;
    eprintln!("two paths: repair {over:.4} of {sources} source symbols, {late} of {frames} frames late");
    assert!(frames >= 1_800, "{frames} frames judged");
    assert!(over < 0.20, "repair {over:.4} of the source symbols");
    assert!(late <= 40, "{late} of {frames} frames later than 300 ms");
}
