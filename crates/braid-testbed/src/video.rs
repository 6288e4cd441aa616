//! The live-video workload: a 25 fps stream from the client to the server with real H.264 frame
//! sizes (the dFEC paper streams H.264 at 25 fps, 3.4 Mbit/s).
//!
//! The frame sizes come from `data/h264-720p25-3400k.txt` (libx264 at 3.4 Mbit/s, how it was made
//! is in the file's header), built into the binary so runs need no ffmpeg; `--video-trace FILE`
//! takes another. The trace repeats if the stream is longer than it.
//!
//! Sender (client namespace): one TCP connection (TCP_NODELAY; MPTCP and the congestion control
//! of a kernel contender; to `{entry}` for an external one). Frame i is captured at
//! epoch + i × 40 ms; the sender writes it then (or at once if the connection is behind), as a
//! 16-byte header — frame number (u32), capture time in µs since the epoch (u64), length (u32),
//! big-endian — and the frame's bytes. Capture starts (the epoch) when the receiver, having
//! accepted the connection, has sent one byte back: the connection is up end to end, for an
//! external contender (whose local connect returns at once) as for kernel TCP. Receiver (server namespace): reads the stream, notes when
//! each frame's last byte arrives. Both are threads of this process: one clock.
//!
//! Metrics: share of the stream's frames complete by capture + deadline (200 ms by default, the
//! project's target), frame latency (completion − capture) p50/p99 over all frames, a frame that never
//! arrived counting as infinitely late (p99 is then "never"). The receiver waits until the last
//! frame's capture + deadline + 3 s at most.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braid_sim::Scenario;

use crate::contender::Contender;
use crate::netns::{server_addr, Testbed};
use crate::percentile::percentile;
use crate::report::{Row, VideoMetrics};
use crate::run::{ss_verdict, RunOptions};
use crate::sys;
use crate::workload::{self, next_port, Session, Workload, LOOPBACK};

/// The built-in frame trace.
pub const TRACE: &str = include_str!("../data/h264-720p25-3400k.txt");

/// No frame is larger (the receiver refuses a header that says otherwise).
pub const MAX_FRAME: u32 = 4 << 20;

pub const HEADER_LEN: usize = 16;

/// The byte the receiver sends back once it holds the connection: frame 0 is captured then.
const GO: u8 = 0x47;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Picture type: I, P or B.
    pub kind: char,
    pub bytes: u32,
}

/// Parse a frame trace: `<I|P|B> <bytes>` per line; `#` comments and blank lines skipped.
pub fn parse_trace(text: &str) -> Result<Vec<Frame>, String> {
    let mut frames = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("frame trace line {}: {why}: `{line}`", n + 1);
        let mut it = line.split_whitespace();
        let kind = match it.next() {
            Some("I") => 'I',
            Some("P") => 'P',
            Some("B") => 'B',
            _ => return Err(bad("expected a picture type I, P or B")),
        };
        let bytes: u32 =
            it.next().and_then(|b| b.parse().ok()).ok_or_else(|| bad("expected a byte count"))?;
        if bytes == 0 || bytes > MAX_FRAME {
            return Err(bad(&format!("size must be 1 ..= {MAX_FRAME}")));
        }
        if it.next().is_some() {
            return Err(bad("trailing text"));
        }
        frames.push(Frame { kind, bytes });
    }
    if frames.is_empty() {
        return Err("frame trace: no frames".into());
    }
    Ok(frames)
}

#[derive(Debug, Clone)]
pub struct VideoOptions {
    pub frames: Vec<Frame>,
    pub fps: u32,
    pub duration: Duration,
    pub deadline: Duration,
}

impl Default for VideoOptions {
    fn default() -> VideoOptions {
        VideoOptions {
            frames: parse_trace(TRACE).expect("the built-in trace parses"),
            fps: 25,
            duration: Duration::from_secs(30),
            deadline: Duration::from_millis(200),
        }
    }
}

impl VideoOptions {
    pub fn load_trace(&mut self, file: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        self.frames = parse_trace(&text)?;
        Ok(())
    }

    /// The stream's frames: the trace, repeated to fill the duration.
    pub fn schedule(&self) -> Vec<u32> {
        let n = (self.duration.as_secs_f64() * self.fps as f64).round() as usize;
        self.frames.iter().cycle().take(n).map(|f| f.bytes).collect()
    }

    fn interval(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.fps.max(1) as f64)
    }
}

pub fn encode_header(frame: u32, capture_us: u64, len: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&frame.to_be_bytes());
    h[4..12].copy_from_slice(&capture_us.to_be_bytes());
    h[12..].copy_from_slice(&len.to_be_bytes());
    h
}

/// Receiver side: bytes in, (frame, capture µs) out as each frame's last byte arrives. Holds at
/// most one header; payload bytes are counted, not kept.
#[derive(Debug, Default)]
pub struct FrameReader {
    header: Vec<u8>,
    /// (frame, capture µs, bytes of the payload still to come).
    current: Option<(u32, u64, u32)>,
}

impl FrameReader {
    /// Feed bytes; each completed frame is passed to `done`. Errors on a header no sender of
    /// ours writes (a frame over [`MAX_FRAME`] or numbered `max_frames` or more).
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        max_frames: u32,
        mut done: impl FnMut(u32, u64),
    ) -> Result<(), String> {
        while !bytes.is_empty() {
            match &mut self.current {
                None => {
                    let take = (HEADER_LEN - self.header.len()).min(bytes.len());
                    self.header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if self.header.len() == HEADER_LEN {
                        let h = &self.header;
                        let frame = u32::from_be_bytes(h[..4].try_into().expect("4 bytes"));
                        let capture = u64::from_be_bytes(h[4..12].try_into().expect("8 bytes"));
                        let len = u32::from_be_bytes(h[12..].try_into().expect("4 bytes"));
                        self.header.clear();
                        if len == 0 || len > MAX_FRAME || frame >= max_frames {
                            return Err(format!("bad frame header: frame {frame}, {len} bytes"));
                        }
                        self.current = Some((frame, capture, len));
                    }
                }
                Some((frame, capture, left)) => {
                    let take = (*left as usize).min(bytes.len());
                    *left -= take as u32;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        done(*frame, *capture);
                        self.current = None;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The metrics from each frame's latency (`None` = never arrived).
pub fn metrics(
    latency: &[Option<Duration>],
    deadline: Duration,
    fps: u32,
    stream_bytes: u64,
) -> VideoMetrics {
    let ms: Vec<f64> = latency.iter().map(|l| l.map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e3)).collect();
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let received = latency.iter().filter(|l| l.is_some()).count();
    let on_time = latency.iter().filter(|l| l.is_some_and(|d| d <= deadline)).count();
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    let secs = latency.len() as f64 / fps.max(1) as f64;
    VideoMetrics {
        frames: latency.len(),
        fps,
        stream_mbps: if secs > 0.0 { stream_bytes as f64 * 8.0 / secs / 1e6 } else { 0.0 },
        deadline_ms: deadline.as_secs_f64() * 1e3,
        received,
        on_time,
        on_time_share: if latency.is_empty() { 0.0 } else { on_time as f64 / latency.len() as f64 },
        on_time_share_after_2s: {
            let later = &latency[(2 * fps as usize).min(latency.len())..];
            let ok = later.iter().filter(|l| l.is_some_and(|d| d <= deadline)).count();
            if later.is_empty() {
                0.0
            } else {
                ok as f64 / later.len() as f64
            }
        },
        p50_ms: finite(percentile(&sorted, 0.5)),
        p99_ms: finite(percentile(&sorted, 0.99)),
        max_ms: finite(sorted.last().copied()),
        latency_ms: ms
            .iter()
            .map(|&m| if m.is_finite() { (m * 10.0).round() / 10.0 } else { -1.0 })
            .collect(),
    }
}

struct Shared {
    /// When frame 0 is captured (set by the sender once connected).
    epoch: Mutex<Option<Instant>>,
    /// Completion instant of each frame.
    done: Mutex<Vec<Option<Instant>>>,
    connected: Mutex<Option<Instant>>,
    started: Instant,
    stop: AtomicBool,
}

fn receive(
    addr: SocketAddrV4,
    mptcp: bool,
    frames: u32,
    shared: Arc<Shared>,
    ready: Arc<AtomicBool>,
) -> io::Result<()> {
    let listener = sys::listen(addr, mptcp)?;
    ready.store(true, Ordering::SeqCst);
    let mut stream = loop {
        if shared.stop.load(Ordering::Relaxed) || sys::interrupted() {
            return Ok(());
        }
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(e),
        }
    };
    stream.set_nonblocking(false)?;
    // The stream is up end to end: tell the sender to start capturing.
    stream.write_all(&[GO])?;
    stream.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut reader = FrameReader::default();
    let mut buf = vec![0u8; 256 * 1024];
    let mut complete = 0u32;
    while complete < frames && !shared.stop.load(Ordering::Relaxed) && !sys::interrupted() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = Instant::now();
                let mut done = shared.done.lock().unwrap();
                reader
                    .feed(&buf[..n], frames, |f, _capture| {
                        if done[f as usize].is_none() {
                            done[f as usize] = Some(now);
                            complete += 1;
                        }
                    })
                    .map_err(io::Error::other)?;
            }
            Err(e) if sys::transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn send(
    to: SocketAddrV4,
    mptcp: bool,
    cc: Option<String>,
    sizes: Vec<u32>,
    interval: Duration,
    shared: Arc<Shared>,
) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stream = sys::connect(to, None, mptcp, cc.as_deref(), deadline, &shared.stop)?;
    stream.set_nodelay(true)?;
    *shared.connected.lock().unwrap() = Some(Instant::now());
    // Capture starts when the receiver has the connection (an external contender's local
    // `connect` returns before its own handshake over the path is done).
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut go = [0u8; 1];
    loop {
        match stream.read(&mut go) {
            Ok(1) if go[0] == GO => break,
            Ok(_) => return Err(io::Error::other("the receiver closed before the stream started")),
            Err(e) if sys::transient(&e) => {
                if shared.stop.load(Ordering::Relaxed) || sys::interrupted() || Instant::now() >= deadline {
                    return Err(io::Error::new(ErrorKind::TimedOut, "no go from the receiver"));
                }
            }
            Err(e) => return Err(e),
        }
    }
    stream.set_write_timeout(Some(Duration::from_millis(100)))?;
    let epoch = Instant::now();
    *shared.epoch.lock().unwrap() = Some(epoch);
    let payload = vec![0xa5u8; sizes.iter().copied().max().unwrap_or(0) as usize];
    for (i, &len) in sizes.iter().enumerate() {
        let capture = interval * i as u32;
        let at = epoch + capture;
        while Instant::now() < at {
            if shared.stop.load(Ordering::Relaxed) || sys::interrupted() {
                return Ok(());
            }
            std::thread::sleep((at - Instant::now()).min(Duration::from_millis(50)));
        }
        let header = encode_header(i as u32, capture.as_micros() as u64, len);
        write_all(&mut stream, &header, &shared.stop)?;
        write_all(&mut stream, &payload[..len as usize], &shared.stop)?;
    }
    // Hold the connection until the receiver has everything (or is told to stop).
    while !shared.stop.load(Ordering::Relaxed) && !sys::interrupted() {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn write_all(stream: &mut TcpStream, mut buf: &[u8], stop: &AtomicBool) -> io::Result<()> {
    while !buf.is_empty() {
        if stop.load(Ordering::Relaxed) || sys::interrupted() {
            return Ok(());
        }
        match stream.write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if sys::transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub fn run(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    opts: &RunOptions,
    video: &VideoOptions,
) -> io::Result<Row> {
    let sizes = video.schedule();
    let n = sizes.len();
    let stream_bytes: u64 = sizes.iter().map(|&s| s as u64 + HEADER_LEN as u64).sum();
    let port = next_port();
    let mptcp = matches!(contender, Contender::Mptcp { .. });
    let (listen, sink, entry, connect_to) = match contender {
        Contender::External(_) => {
            let sink = SocketAddrV4::new(LOOPBACK, port);
            let entry = SocketAddrV4::new(LOOPBACK, port.wrapping_add(10000));
            (sink, sink, entry, entry)
        }
        _ => {
            let to = SocketAddrV4::new(server_addr(0), port);
            (SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port), to, to, to)
        }
    };
    let shared = Arc::new(Shared {
        epoch: Mutex::new(None),
        done: Mutex::new(vec![None; n]),
        connected: Mutex::new(None),
        started: Instant::now(),
        stop: AtomicBool::new(false),
    });
    let ready = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (shared, ready) = (shared.clone(), ready.clone());
        sys::spawn_in(&tb.server_ns, "video-rx", move || receive(listen, mptcp, n as u32, shared, ready))
    };
    while !ready.load(Ordering::SeqCst) && !receiver.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let session = Session::begin(tb, scenario, contender, sink, entry)?;
    let sender = {
        let (shared, cc, interval) = (shared.clone(), contender.cc().map(str::to_owned), video.interval());
        sys::spawn_in(&tb.client_ns, "video-tx", move || send(connect_to, mptcp, cc, sizes, interval, shared))
    };
    let ss_path = workload::ss_file(opts, scenario, contender, "video");
    let mut ss_text = None;
    let grace = video.deadline + Duration::from_secs(3);
    let connect_limit = Instant::now() + Duration::from_secs(25);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let epoch = *shared.epoch.lock().unwrap();
        if let Some(e) = epoch {
            if ss_text.is_none() && e.elapsed() > Duration::from_secs(2) && contender.cc().is_some() {
                ss_text = Some(workload::snapshot_ss(&tb.client_ns, port, &ss_path));
            }
            let last_capture = e + video.interval() * (n.saturating_sub(1)) as u32;
            if Instant::now() > last_capture + grace {
                break;
            }
        } else if Instant::now() > connect_limit {
            break;
        }
        if receiver.is_finished() || sender.is_finished() && epoch.is_none() || sys::interrupted() {
            break;
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    let mut error = None;
    if let Ok(Err(e)) = sender.join() {
        error = Some(format!("sender: {e}"));
    }
    if let Ok(Err(e)) = receiver.join() {
        error.get_or_insert(format!("receiver: {e}"));
    }
    let load = session.load.clone();
    let net = session.end(tb)?;
    let epoch = *shared.epoch.lock().unwrap();
    let done = shared.done.lock().unwrap().clone();
    let interval = video.interval();
    let latency: Vec<Option<Duration>> = match epoch {
        Some(e) => done
            .iter()
            .enumerate()
            .map(|(i, d)| d.map(|d| d.saturating_duration_since(e + interval * i as u32)))
            .collect(),
        None => vec![None; n],
    };
    let received_bytes: u64 = done
        .iter()
        .zip(video.schedule())
        .filter(|(d, _)| d.is_some())
        .map(|(_, s)| s as u64 + HEADER_LEN as u64)
        .sum();
    let t0 = shared.connected.lock().unwrap().unwrap_or(shared.started);
    let last = done.iter().flatten().max().copied();
    let all = done.iter().all(Option::is_some);
    let elapsed = last.unwrap_or_else(Instant::now).saturating_duration_since(t0).as_secs_f64();
    if error.is_none() && !all {
        error = Some(format!("{} of {n} frames never arrived", done.iter().filter(|d| d.is_none()).count()));
    }
    let mut row = workload::base_row(
        scenario,
        contender,
        Workload::Video,
        load,
        &net,
        stream_bytes,
        received_bytes,
        all.then_some(elapsed),
        elapsed,
        ss_verdict(contender, &ss_text.unwrap_or_default()),
        ss_path.display().to_string(),
        error,
    );
    row.video = Some(metrics(&latency, video.deadline, video.fps, stream_bytes));
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_trace_is_25_fps_at_3_4_mbit() {
        let frames = parse_trace(TRACE).unwrap();
        assert_eq!(frames.len(), 1500, "60 s at 25 fps");
        let bits: u64 = frames.iter().map(|f| f.bytes as u64 * 8).sum();
        let mbps = bits as f64 / 60.0 / 1e6;
        assert!((mbps - 3.4).abs() < 0.05, "{mbps} Mbit/s");
        assert_eq!(frames[0].kind, 'I');
        assert_eq!(frames.iter().filter(|f| f.kind == 'I').count(), 30, "an I frame every 2 s");
    }

    #[test]
    fn trace_errors_name_the_line() {
        assert_eq!(
            parse_trace("# c\n\nI 10\nP 3\n").unwrap(),
            vec![Frame { kind: 'I', bytes: 10 }, Frame { kind: 'P', bytes: 3 }]
        );
        assert!(parse_trace("I 10\nX 3").unwrap_err().contains("line 2"));
        assert!(parse_trace("P 0").is_err());
        assert!(parse_trace("P 99999999").is_err());
        assert!(parse_trace("P 12 7").is_err());
        assert!(parse_trace("P").is_err());
        assert!(parse_trace("# nothing\n").is_err());
    }

    #[test]
    fn schedule_repeats_the_trace() {
        let o = VideoOptions {
            frames: parse_trace("I 100\nP 10\nP 20").unwrap(),
            fps: 25,
            duration: Duration::from_millis(280),
            deadline: Duration::from_millis(200),
        };
        assert_eq!(o.schedule(), vec![100, 10, 20, 100, 10, 20, 100]);
        assert_eq!(VideoOptions::default().schedule().len(), 750);
    }

    #[test]
    fn reader_finds_frames_across_any_split() {
        let mut stream = Vec::new();
        for (i, len) in [5u32, 1, 300].into_iter().enumerate() {
            stream.extend_from_slice(&encode_header(i as u32, 40_000 * i as u64, len));
            stream.extend(std::iter::repeat_n(7u8, len as usize));
        }
        for chunk in [1, 3, 16, 17, 1000] {
            let mut r = FrameReader::default();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                r.feed(piece, 3, |f, c| got.push((f, c))).unwrap();
            }
            assert_eq!(got, vec![(0, 0), (1, 40_000), (2, 80_000)], "chunk {chunk}");
        }
    }

    #[test]
    fn reader_refuses_headers_no_sender_writes() {
        let mut r = FrameReader::default();
        assert!(r.feed(&encode_header(0, 0, MAX_FRAME + 1), 10, |_, _| {}).is_err());
        let mut r = FrameReader::default();
        assert!(r.feed(&encode_header(10, 0, 5), 10, |_, _| {}).is_err(), "frame number out of range");
        let mut r = FrameReader::default();
        assert!(r.feed(&encode_header(1, 0, 0), 10, |_, _| {}).is_err());
    }

    #[test]
    fn metrics_count_missing_frames_as_late() {
        let ms = |m: u64| Some(Duration::from_millis(m));
        let mut lat: Vec<Option<Duration>> = (0..98).map(|i| ms(50 + i)).collect();
        lat.push(ms(250)); // late
        lat.push(None); // never
        let m = metrics(&lat, Duration::from_millis(200), 25, 100 * 17_000);
        assert_eq!((m.frames, m.received, m.on_time), (100, 99, 98));
        assert!((m.on_time_share - 0.98).abs() < 1e-12);
        assert!((m.on_time_share_after_2s - 48.0 / 50.0).abs() < 1e-12, "frames 50..100");
        assert_eq!(m.p50_ms, Some(99.0));
        assert_eq!(m.p99_ms, Some(250.0));
        assert_eq!(m.max_ms, None, "the missing frame is the maximum");
        assert!((m.stream_mbps - 3.4).abs() < 1e-9);
        assert_eq!(m.latency_ms[99], -1.0);
        let all_late = metrics(&[None, None], Duration::from_millis(200), 25, 10);
        assert_eq!((all_late.on_time_share, all_late.p50_ms), (0.0, None));
    }

    /// Every row, whatever its workload, has as many CSV fields as the header names.
    #[test]
    fn csv_columns_line_up() {
        use crate::contender::Contender;
        use crate::report::{csv_fields, TunMetrics, WebMetrics, CSV_COLUMNS};
        use crate::workload::{base_row, SessionEnd, Workload};
        let scenario = Scenario::parse(
            "name = \"s\"\nduration = \"1s\"\n[[path]]\nname = \"p\"\nrate = \"1Mbit/s\"\nrtt = \"10ms\"\n",
            "t",
        )
        .unwrap()
        .remove(0);
        let net = SessionEnd {
            path_fwd_tx_bytes: vec![1],
            path_fwd_rx_bytes: vec![1],
            path_rev_tx_bytes: vec![1],
            tun_drops: 0,
            forwarders: vec![],
        };
        let c: Contender = "bbr".parse().unwrap();
        let row = |w| {
            base_row(
                &scenario,
                &c,
                w,
                String::new(),
                &net,
                1,
                1,
                Some(1.0),
                1.0,
                "ok".into(),
                String::new(),
                None,
            )
        };
        let mut web = row(Workload::Web);
        web.web = Some(WebMetrics {
            page: "6x1080KiB".into(),
            objects: 6,
            page_bytes: 1,
            loads: 2,
            times_s: vec![1.0, 2.0],
            median_s: Some(1.0),
            p90_s: Some(2.0),
            finished_s: vec![1.1, 2.1],
            failures: vec![],
            connections_per_load: Some(1.0),
        });
        let mut video = row(Workload::Video);
        let o = VideoOptions::default();
        video.video = Some(metrics(&[Some(Duration::from_millis(50)), None], o.deadline, o.fps, 100));
        let mut tun = row(Workload::Tun);
        tun.tun = Some(TunMetrics {
            part: "udp-stream".into(),
            udp_on_time_within_deadline: Some(0.99),
            udp_longest_miss_run: Some(3),
            udp_longest_miss_ms: Some(7.1),
            udp_misses_worst_1s: Some(4),
            teardown: Some("left: a, b".into()),
            ..TunMetrics::default()
        });
        let columns = CSV_COLUMNS.split(',').count();
        for r in [row(Workload::Bulk), web, video, tun] {
            let fields = csv_fields(&r);
            assert_eq!(fields.len(), columns, "{}: {fields:?}", r.workload);
            assert_eq!(fields[0], r.workload);
        }
    }
}
