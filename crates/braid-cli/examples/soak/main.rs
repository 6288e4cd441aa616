//! Server soak: one `braid server` process on loopback, many concurrent client connections from
//! this process with churn, then three hostile checks. Bounded in count and time: it stops by
//! itself. Numbers and how to read them: docs/RELIABILITY.md, "Server soak".
//!
//!     cargo build --release -p braid-cli --bins --examples
//!     target/release/examples/soak --connections 1000 --seconds 600
//!
//! Each of `--connections` workers loops until the time is up: connect (one in ten over an
//! emulated lossy link: 50 Mbit/s, 5 ms, 1 % loss, both ways; another one in ten through a
//! relay that moves to a new port every 1–6 s, as a NAT rebinding), make 1–4 echo transfers of mixed
//! sizes (1 KiB to 1 MiB) checking every byte that comes back, hold the connection a few
//! seconds, close it, start again. Every 10 s it prints the server's RSS (and RSS per live
//! connection above the idle server's), open descriptors, CPU, and transfers done, failed and
//! corrupted. A transfer fails when it has not finished 60 s after it began; the end says how
//! many of the failed were *stalled* (nothing moved in their last 20 s) rather than slow.
//! Then: a replayed first message sent 2,000 times (bytes answered per byte
//! received); a flood of 5,000 first messages with the right key that never finish
//! (half-open: what the server holds) and 5,000 with a wrong key; a client that asks for a
//! download and stops reading (the server's memory for it).
//!
//! Each link kind reaches the server from its own loopback address (plain 127.0.0.1, lossy
//! 127.0.0.2, the rebinding relay 127.0.0.3), so the server's log line for a connection it
//! ended by its idle timeout names the kind; those are counted per kind until the end of the
//! run (not after: the workers still running then are stopped, and their connections time
//! out on the server).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_cli::request;
use braid_runtime::{ClientConfig, Endpoint, Key, PathSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod host;
mod hostile;
mod relay;

use host::{probe, server_view, start_server, udp_drops};
use relay::{Relay, RELAY_LINGER};

#[derive(Default)]
struct Tally {
    live: AtomicU64,
    connects: AtomicU64,
    connect_failures: AtomicU64,
    transfers: AtomicU64,
    failed: AtomicU64,
    corrupted: AtomicU64,
    bytes: AtomicU64,
    /// Times a rebinding worker's relay moved to a new port.
    rebinds: AtomicU64,
    /// Finished transfers' durations (ms), per class: [link kind][size class].
    durations: std::sync::Mutex<[[Vec<u32>; 4]; 3]>,
    /// Timed-out transfers per class.
    timeouts: std::sync::Mutex<[[u64; 4]; 3]>,
    /// Timed-out transfers in which nothing moved for `STALLED_AFTER` before the time ran out
    /// (the rest were still moving).
    stalled: AtomicU64,
    /// Timed-out transfers still moving that were described.
    slow_shown: AtomicU64,
    /// Connections the server ended by its idle timeout, per link kind (from its log), until
    /// the end of the run.
    idle_ended: [AtomicU64; 3],
    /// The run is over: stop counting `idle_ended`.
    over: AtomicBool,
}

const KINDS: [&str; 3] = ["plain", "lossy", "rebinding"];

/// The local address each link kind reaches the server from (the server's log names it).
fn kind_ip(kind: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1 + kind as u8))
}

fn kind_of(ip: IpAddr) -> Option<usize> {
    (0..KINDS.len()).find(|&k| kind_ip(k) == ip)
}

const SIZES: [usize; 4] = [1 << 10, 16 << 10, 128 << 10, 1 << 20];

fn size_class(len: usize) -> usize {
    SIZES.iter().position(|&s| s == len).unwrap_or(0)
}

struct Args {
    connections: usize,
    seconds: u64,
    server_bin: PathBuf,
    /// Write the lossy workers' client-side qlog files here.
    qlog: Option<PathBuf>,
    /// Print one line per close: worker, link kind, the client's local address (what the
    /// server sees for plain and lossy workers), to match the server's debug log.
    log_closes: bool,
    /// Run this command with the server's pid as its argument once the clients have left,
    /// before the hostile checks, and wait for it (`scripts/heap.sh`: the allocator's view of
    /// the server's heap, then the free memory given back, so the checks start from the heap
    /// in use rather than from the soak's peak).
    after_run: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        connections: 1000,
        seconds: 600,
        server_bin: std::env::current_exe()
            .expect("exe")
            .parent()
            .and_then(|p| p.parent())
            .expect("dir")
            .join("braid"),
        qlog: None,
        log_closes: false,
        after_run: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| die(&format!("{flag}: needs a value")));
        match flag.as_str() {
            "--connections" => {
                a.connections = value().parse().unwrap_or_else(|_| die("--connections: a number (1 to 5000)"))
            }
            "--seconds" => {
                a.seconds = value().parse().unwrap_or_else(|_| die("--seconds: a number (1 to 3600)"))
            }
            "--server-bin" => a.server_bin = value().into(),
            "--qlog" => a.qlog = Some(value().into()),
            "--log-closes" => a.log_closes = true,
            "--after-run" => a.after_run = Some(value()),
            _ => die(&format!(
                "unknown flag {flag} (--connections N, --seconds S, --server-bin PATH, --qlog DIR, --log-closes, --after-run CMD)"
            )),
        }
    }
    if !(1..=5000).contains(&a.connections) || !(1..=3600).contains(&a.seconds) {
        die("--connections 1 to 5000, --seconds 1 to 3600");
    }
    if !a.server_bin.exists() {
        die(&format!(
            "{}: no braid binary (cargo build --release -p braid-cli --bins)",
            a.server_bin.display()
        ));
    }
    a
}

fn die(msg: &str) -> ! {
    eprintln!("soak: {msg}");
    std::process::exit(2)
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// How far one echo transfer got (kept by the caller, read when it timed out).
struct Progress {
    written: AtomicU64,
    shut: AtomicU64,
    read: AtomicU64,
    began: Instant,
    /// When a byte last went out or came back (ms after `began`).
    moved_ms: AtomicU64,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            written: AtomicU64::new(0),
            shut: AtomicU64::new(0),
            read: AtomicU64::new(0),
            began: Instant::now(),
            moved_ms: AtomicU64::new(0),
        }
    }

    fn moved(&self) {
        self.moved_ms.store(self.began.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// How long nothing has moved.
    fn still_for(&self) -> Duration {
        self.began.elapsed().saturating_sub(Duration::from_millis(self.moved_ms.load(Ordering::Relaxed)))
    }
}

/// A timed-out transfer is *stalled* when nothing moved for this long before its time ran
/// out (more than a probe timeout's 4 s cap several times over, and longer than any RTT the
/// overloaded runs showed); otherwise it was still moving, only too slowly.
const STALLED_AFTER: Duration = Duration::from_secs(20);

/// One echo transfer of `len` bytes; whether every byte came back intact.
async fn echo(
    conn: &braid_runtime::Connection,
    len: usize,
    seed: u64,
    progress: &Progress,
) -> Result<bool, String> {
    let stream = conn.open_stream().map_err(|e| e.to_string())?;
    let (mut rd, mut wr) = tokio::io::split(stream);
    let data = pattern(seed, len);
    let send = async {
        wr.write_all(&[request::ECHO]).await?;
        for chunk in data.chunks(16 << 10) {
            wr.write_all(chunk).await?;
            progress.written.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            progress.moved();
        }
        wr.shutdown().await?;
        progress.shut.store(1, Ordering::Relaxed);
        Ok::<(), std::io::Error>(())
    };
    let recv = async {
        let mut back = Vec::with_capacity(len);
        let mut buf = vec![0u8; 16 << 10];
        loop {
            let n = rd.read(&mut buf).await?;
            if n == 0 {
                return Ok::<Vec<u8>, std::io::Error>(back);
            }
            back.extend_from_slice(&buf[..n]);
            progress.read.fetch_add(n as u64, Ordering::Relaxed);
            progress.moved();
        }
    };
    let (s, r) = tokio::join!(send, recv);
    s.map_err(|e| e.to_string())?;
    let back = r.map_err(|e| e.to_string())?;
    Ok(back == data)
}

/// A transfer fails when it has not finished this long after it began.
const TRANSFER_LIMIT: Duration = Duration::from_secs(60);

/// Per path: datagrams sent and received, packets acknowledged.
fn path_counters(conn: &braid_runtime::Connection) -> Vec<[u64; 3]> {
    conn.paths().iter().map(|r| [r.datagrams_sent, r.datagrams_received, r.stats.packets_acked]).collect()
}

/// One line about a transfer that did not finish: which worker, what it moved, what the
/// connection's paths were doing, and (given their counters `STALLED_AFTER` before the limit)
/// what they exchanged in that time.
fn describe_stall(
    i: usize,
    kind: &str,
    len: usize,
    p: &Progress,
    conn: &braid_runtime::Connection,
    counters_before: Option<Vec<[u64; 3]>>,
) -> String {
    let before = counters_before.unwrap_or_default();
    let paths: Vec<String> = conn
        .paths()
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let [out, inn, acked] = before.get(k).copied().unwrap_or_default();
            format!(
                "path {} {:?} srtt {:.1} ms cwnd {} sent {} acked {} lost {} PTOs {} datagrams out {} in {} (last {} s: out {}, in {}, acked {}) emu-drops {} remote {:?}",
                r.id,
                r.stats.state,
                r.srtt.as_secs_f64() * 1e3,
                r.cwnd,
                r.stats.packets_sent,
                r.stats.packets_acked,
                r.stats.packets_lost,
                r.stats.timeouts,
                r.datagrams_sent,
                r.datagrams_received,
                STALLED_AFTER.as_secs(),
                r.datagrams_sent - out.min(r.datagrams_sent),
                r.datagrams_received - inn.min(r.datagrams_received),
                r.stats.packets_acked - acked.min(r.stats.packets_acked),
                r.emulated_drops,
                r.remote
            )
        })
        .collect();
    let st = conn.stats();
    format!(
        "soak: timed out: worker {i} ({kind}) len {len}: written {} shut {} read {}, nothing moved for {:.1} s; established {}; symbols sent {} repair {} received {}; retransmissions {}; {}",
        p.written.load(Ordering::Relaxed),
        p.shut.load(Ordering::Relaxed),
        p.read.load(Ordering::Relaxed),
        p.still_for().as_secs_f64(),
        conn.is_established(),
        st.source_symbols_sent,
        st.repair_symbols_sent,
        st.symbols_received,
        st.retransmissions,
        paths.join("; ")
    )
}

async fn worker(
    i: usize,
    key: Key,
    addr: SocketAddr,
    until: Instant,
    tally: Arc<Tally>,
    qlog: Option<PathBuf>,
    log_closes: bool,
) {
    let mut rng = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Spread the first handshakes over a few seconds.
    tokio::time::sleep(Duration::from_millis(next() % 3000)).await;
    let lossy = i.is_multiple_of(10);
    // One worker in ten (not the lossy ones) talks through a relay standing for a NAT that
    // moves to a new port every few seconds, mid-transfer or not (address rebinding).
    let rebinding = i % 10 == 5;
    let kind = if lossy {
        1
    } else if rebinding {
        2
    } else {
        0
    };
    while Instant::now() < until {
        let relay = if rebinding {
            match Relay::start(addr, kind_ip(2), next()).await {
                Ok(r) => Some(r),
                Err(e) => die(&format!("relay: {e}")),
            }
        } else {
            None
        };
        let target = relay.as_ref().map_or(addr, |r| r.addr);
        let mut config = ClientConfig::new(key.clone());
        config.handshake_timeout = Duration::from_secs(20);
        if relay.is_none() {
            config.paths = vec![PathSpec::Addr(SocketAddr::new(kind_ip(kind), 0))];
        }
        if lossy {
            config.emulate = vec![Some("50mbit,5ms,1%".parse().expect("spec"))];
            config.qlog = qlog.clone();
        }
        let conn = match Endpoint::connect(config, target).await {
            Ok(c) => c,
            Err(e) => {
                tally.connect_failures.fetch_add(1, Ordering::Relaxed);
                if tally.connect_failures.load(Ordering::Relaxed) <= 5 {
                    eprintln!("soak: connect failed: {e}");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        tally.connects.fetch_add(1, Ordering::Relaxed);
        tally.live.fetch_add(1, Ordering::Relaxed);
        let mover = relay.as_ref().map(|r| r.keep_moving(tally.clone()));
        for _ in 0..1 + next() % 4 {
            let len = match next() % 100 {
                0..=1 => 1 << 20,
                2..=19 => 128 << 10,
                20..=59 => 16 << 10,
                _ => 1 << 10,
            };
            let progress = Progress::new();
            let began = progress.began;
            // The paths' counters `STALLED_AFTER` before the limit, so a stalled transfer's line
            // can say what its connection exchanged while nothing moved.
            let transfer = echo(&conn, len, next(), &progress);
            tokio::pin!(transfer);
            let mut counters_before = None;
            let outcome = tokio::select! {
                r = &mut transfer => Ok(r),
                _ = tokio::time::sleep(TRANSFER_LIMIT - STALLED_AFTER) => {
                    counters_before = Some(path_counters(&conn));
                    tokio::time::timeout(STALLED_AFTER, &mut transfer).await
                }
            };
            tally.transfers.fetch_add(1, Ordering::Relaxed);
            match outcome {
                Ok(Ok(true)) => {
                    tally.bytes.fetch_add(len as u64, Ordering::Relaxed);
                    let ms = began.elapsed().as_millis().min(u32::MAX as u128) as u32;
                    tally.durations.lock().expect("tally")[kind][size_class(len)].push(ms);
                }
                Ok(Ok(false)) => {
                    tally.corrupted.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) => {
                    if tally.failed.fetch_add(1, Ordering::Relaxed) < 5 {
                        eprintln!("soak: transfer failed: {e}");
                    }
                }
                Err(_) => {
                    tally.timeouts.lock().expect("tally")[kind][size_class(len)] += 1;
                    // Every stalled one is described (up to 100), and the first 20 slow ones.
                    let shown = if progress.still_for() >= STALLED_AFTER {
                        tally.stalled.fetch_add(1, Ordering::Relaxed) < 100
                    } else {
                        tally.slow_shown.fetch_add(1, Ordering::Relaxed) < 20
                    };
                    tally.failed.fetch_add(1, Ordering::Relaxed);
                    if shown {
                        eprintln!(
                            "{}",
                            describe_stall(i, KINDS[kind], len, &progress, &conn, counters_before)
                        );
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(next() % 2000)).await;
        }
        tokio::time::sleep(Duration::from_millis(next() % 5000)).await;
        if log_closes {
            let local = conn.paths().first().and_then(|p| p.local);
            let relay_out = relay.as_ref().map(|r| (r.outside(), !r.task.is_finished()));
            let path = conn.paths().first().map(|p| {
                format!("{:?} sent {} received {}", p.stats.state, p.datagrams_sent, p.datagrams_received)
            });
            eprintln!("soak: close worker {i} kind {kind} local {local:?} relay (outside, alive) {relay_out:?} path {path:?}");
        }
        conn.close(0, "soak churn");
        tally.live.fetch_sub(1, Ordering::Relaxed);
        if let Some(m) = mover {
            m.abort();
        }
        // The relay stays (without moving) while the close and its repeats go through: the
        // client's closing period is three probe timeouts, seconds on a loaded host, and a NAT
        // keeps an idle UDP mapping for minutes (RFC 4787 REQ-5). One that went 2 s after the
        // close took the repeats of a lost CLOSE with it, and the server held the connection
        // until its idle timeout.
        if let Some(r) = relay {
            let carried = r.up.load(Ordering::Relaxed);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                if log_closes {
                    let after = r.up.load(Ordering::Relaxed) - carried;
                    eprintln!(
                        "soak: relay of worker {i} ({:?}) carried {after} datagrams up in the 2 s after the close",
                        r.outside()
                    );
                }
                tokio::time::sleep(RELAY_LINGER - Duration::from_secs(2)).await;
                r.task.abort();
            });
        }
    }
}

fn main() {
    let a = args();
    let dir = std::env::temp_dir().join(format!("braid-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let key_file = dir.join("soak.key");
    let key = Key::generate().expect("key");
    key.write_file(&key_file).expect("key file");
    let tally = Arc::new(Tally::default());
    let server = start_server(&a.server_bin, &key_file, a.connections, tally.clone());
    let pid = server.child.id();
    let (idle_rss, idle_fds, _) = probe(pid);
    println!(
        "soak: server pid {pid} on {}, idle RSS {:.1} MiB, {idle_fds} fds; {} connections for {} s",
        server.addr,
        idle_rss as f64 / 1024.0,
        a.connections,
        a.seconds
    );

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let until = Instant::now() + Duration::from_secs(a.seconds);
    let ticks_per_s = 100.0; // USER_HZ
    runtime.block_on(async {
        let workers: Vec<_> = (0..a.connections)
            .map(|i| tokio::spawn(worker(i, key.clone(), server.addr, until, tally.clone(), a.qlog.clone(), a.log_closes)))
            .collect();
        let stop_counting = tally.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(until.into()).await;
            stop_counting.over.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let (mut last_ticks, mut last_at) = (probe(pid).2, Instant::now());
        let me = std::process::id();
        let mut last_own = probe(me).2;
        let drops_before = udp_drops(server.addr.port());
        let mut peak_server_conns = 0u64;
        let (mut peak_rss, mut peak_fds, mut peak_live, mut max_per_conn) = (0u64, 0usize, 0u64, 0f64);
        println!("   t s   live   RSS MiB  KiB/conn   fds   CPU %   transfers  failed  corrupted  connects  connect-fail  srv-conns  srv-idle-ended  idle-ended p/l/r  srv-sock-drops  host-drops  soak CPU %");
        let idle_ended = |t: &Tally| -> String {
            t.idle_ended.iter().map(|n| n.load(Ordering::Relaxed).to_string()).collect::<Vec<_>>().join("/")
        };
        while Instant::now() < until + Duration::from_secs(70) && !workers.iter().all(|w| w.is_finished()) {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let (rss, fds, ticks) = probe(pid);
            let own = probe(me).2;
            let live = tally.live.load(Ordering::Relaxed);
            let elapsed = last_at.elapsed().as_secs_f64();
            let cpu = (ticks - last_ticks) as f64 / ticks_per_s / elapsed * 100.0;
            let own_cpu = own.saturating_sub(last_own) as f64 / ticks_per_s / elapsed * 100.0;
            (last_ticks, last_own, last_at) = (ticks, own, Instant::now());
            let (established, handshaking, idle_ended_total) = server_view(server.metrics);
            peak_server_conns = peak_server_conns.max(established + handshaking);
            let (server_drops, host_drops) = udp_drops(server.addr.port());
            let per_conn = if live > 0 { rss.saturating_sub(idle_rss) as f64 / live as f64 } else { 0.0 };
            if live as usize >= a.connections * 9 / 10 {
                max_per_conn = max_per_conn.max(per_conn);
            }
            (peak_rss, peak_fds, peak_live) = (peak_rss.max(rss), peak_fds.max(fds), peak_live.max(live));
            println!(
                "{:>6} {:>6} {:>9.1} {:>9.1} {:>5} {:>7.1} {:>11} {:>7} {:>10} {:>9} {:>13} {:>10} {:>15} {:>17} {:>15} {:>11} {:>11.1}",
                started.elapsed().as_secs(),
                live,
                rss as f64 / 1024.0,
                per_conn,
                fds,
                cpu,
                tally.transfers.load(Ordering::Relaxed),
                tally.failed.load(Ordering::Relaxed),
                tally.corrupted.load(Ordering::Relaxed),
                tally.connects.load(Ordering::Relaxed),
                tally.connect_failures.load(Ordering::Relaxed),
                established + handshaking,
                idle_ended_total,
                idle_ended(&tally),
                server_drops.saturating_sub(drops_before.0),
                host_drops.saturating_sub(drops_before.1),
                own_cpu,
            );
        }
        let (server_drops, host_drops) = udp_drops(server.addr.port());
        tally.over.store(true, Ordering::Relaxed);
        for w in workers {
            w.abort();
        }
        println!(
            "soak: connections the server ended by its idle timeout during the run (to {} s), by link kind: {}",
            a.seconds,
            KINDS
                .iter()
                .zip(&tally.idle_ended)
                .map(|(k, n)| format!("{k} {}", n.load(Ordering::Relaxed)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "soak: done: peak {peak_live} live connections, peak RSS {:.1} MiB, at most {max_per_conn:.1} KiB per connection (≥ 90 % live), peak {peak_fds} fds; {} transfers ({:.1} MB echoed), {} failed ({} of them stalled: nothing moved in their last {} s), {} corrupted; {} connects, {} failed; {} rebinds",
            peak_rss as f64 / 1024.0,
            tally.transfers.load(Ordering::Relaxed),
            tally.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            tally.failed.load(Ordering::Relaxed),
            tally.stalled.load(Ordering::Relaxed),
            STALLED_AFTER.as_secs(),
            tally.corrupted.load(Ordering::Relaxed),
            tally.connects.load(Ordering::Relaxed),
            tally.connect_failures.load(Ordering::Relaxed),
            tally.rebinds.load(Ordering::Relaxed),
        );
        println!(
            "soak: the server's own count: at most {peak_server_conns} connections (handshakes included); datagrams the kernel dropped for a full receive buffer: {} on the server's socket, {} on the host's UDP sockets in all",
            server_drops.saturating_sub(drops_before.0),
            host_drops.saturating_sub(drops_before.1),
        );
    });
    println!("soak: transfer times (ms) by link and size: count, median, p99, max, timed out at 60 s");
    let durations = tally.durations.lock().expect("tally");
    let timeouts = tally.timeouts.lock().expect("tally");
    for (kind, name) in [(0, "plain"), (1, "lossy"), (2, "rebinding")] {
        for (c, size) in SIZES.iter().enumerate() {
            let mut d = durations[kind][c].clone();
            d.sort_unstable();
            let at = |q: f64| {
                d.get(((d.len() as f64 * q) as usize).min(d.len().saturating_sub(1))).copied().unwrap_or(0)
            };
            println!(
                "  {name:>9} {:>5} KiB: {:>6} done, median {:>6}, p99 {:>6}, max {:>6}; {} timed out",
                size >> 10,
                d.len(),
                at(0.5),
                at(0.99),
                d.last().copied().unwrap_or(0),
                timeouts[kind][c]
            );
        }
    }
    drop((durations, timeouts));
    // Let the churned connections end (idle timeout 30 s) before the hostile checks.
    std::thread::sleep(Duration::from_secs(35));
    let (rss, fds, _) = probe(pid);
    println!(
        "soak: after the clients left: RSS {:.1} MiB, {fds} fds (idle: {idle_fds})",
        rss as f64 / 1024.0
    );
    if let Some(cmd) = &a.after_run {
        match std::process::Command::new(cmd).arg(pid.to_string()).status() {
            Ok(status) if status.success() => {}
            Ok(status) => eprintln!("soak: --after-run {cmd}: {status}"),
            Err(e) => eprintln!("soak: --after-run {cmd}: {e}"),
        }
        println!("soak: after --after-run: RSS {:.1} MiB", probe(pid).0 as f64 / 1024.0);
    }

    hostile::checks(&runtime, server.addr, pid, &key);
    let _ = std::fs::remove_dir_all(&dir);
}
