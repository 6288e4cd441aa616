//! An app-limited workload: a live video source over one braid stream, and its metrics.
//!
//! The source captures a frame every 1/fps seconds (25 fps by default) and writes it to the
//! stream at once; frame sizes average the bitrate, with an I-frame `i_ratio` times a P-frame
//! every `gop` frames and P-frames varying ±30 % around their mean, all drawn from the seed, so
//! the receiver computes the same sizes and knows where each frame ends without a header. A frame
//! is on time when its last byte is readable (in order, intact) within the deadline after its
//! capture (200 ms by default, the live-video target's deadline).

use std::time::Duration;

use braid_proto::streams::StreamEvent;
use braid_proto::{Connection, ConnectionConfig, Event, Instant};

use crate::flow::{check_pattern, conn_flow_endpoint, pattern_slice, send_stream, PERIOD};
use braid_netem::rng::{derive_seed, Rng};

/// The frame sizes of a live video stream, deterministic from a seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VideoSource {
    /// Mean bitrate, bits/s.
    pub bitrate: u64,
    pub fps: u32,
    /// An I-frame every `gop` frames (frame 0 is one).
    pub gop: u32,
    /// I-frame size / mean P-frame size.
    pub i_ratio: f64,
    pub seed: u64,
}

impl VideoSource {
    /// 25 fps, an I-frame 5 × a P-frame every 50 frames (2 s).
    pub fn new(bitrate: u64, seed: u64) -> VideoSource {
        VideoSource { bitrate, fps: 25, gop: 50, i_ratio: 5.0, seed }
    }

    pub fn interval(&self) -> Duration {
        Duration::from_secs(1) / self.fps
    }

    /// Bytes of frame `i` (at least 1).
    pub fn frame_size(&self, i: u64) -> u64 {
        let gop = f64::from(self.gop.max(1));
        let per_gop = self.bitrate as f64 / 8.0 / f64::from(self.fps) * gop;
        let p_mean = per_gop / (gop - 1.0 + self.i_ratio);
        let size = if i.is_multiple_of(u64::from(self.gop.max(1))) {
            p_mean * self.i_ratio
        } else {
            let mut rng = Rng::new(derive_seed(self.seed, i));
            p_mean * (0.7 + 0.6 * rng.next_f64())
        };
        (size.round() as u64).max(1)
    }
}

/// What one run of a video flow measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct VideoStats {
    /// Frames judged: captured early enough that their deadline fell within the run.
    pub frames: usize,
    /// Of those, delivered in full by capture + deadline.
    pub on_time: usize,
    /// Frame latency (capture → last byte readable), ms; a frame never delivered counts as
    /// infinite (so a percentile may be `inf`).
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Frames judged and on time among those captured at least [`WARM_UP`] after the first:
    /// the steady state, without the first I-frame's slow start.
    pub steady_frames: usize,
    pub steady_on_time: usize,
}

/// What [`VideoStats::steady_frames`] leaves out: the connection's first second of video.
pub const WARM_UP: Duration = Duration::from_secs(1);

impl VideoStats {
    pub fn on_time_share(&self) -> f64 {
        self.on_time as f64 / self.frames.max(1) as f64
    }

    pub fn steady_on_time_share(&self) -> f64 {
        self.steady_on_time as f64 / self.steady_frames.max(1) as f64
    }

    /// Joins the sender's capture times and the receiver's completion times; frames captured
    /// later than `end − deadline` are not judged (they could not be late yet).
    pub fn compute(
        captured: &[Instant],
        completed: &[Instant],
        deadline: Duration,
        end: Instant,
    ) -> VideoStats {
        let mut latencies: Vec<f64> = Vec::new();
        let (mut on_time, mut steady_frames, mut steady_on_time) = (0, 0, 0);
        for (i, &at) in captured.iter().enumerate() {
            if at + deadline > end {
                break;
            }
            let latency = completed.get(i).map_or(f64::INFINITY, |&done| (done - at).as_secs_f64() * 1e3);
            let in_time = latency <= deadline.as_secs_f64() * 1e3;
            on_time += usize::from(in_time);
            if at >= captured[0] + WARM_UP {
                steady_frames += 1;
                steady_on_time += usize::from(in_time);
            }
            latencies.push(latency);
        }
        latencies.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            if latencies.is_empty() {
                return 0.0;
            }
            let k = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len());
            latencies[k - 1]
        };
        VideoStats {
            frames: latencies.len(),
            on_time,
            p50_ms: pick(0.5),
            p99_ms: pick(0.99),
            max_ms: latencies.last().copied().unwrap_or(0.0),
            steady_frames,
            steady_on_time,
        }
    }
}

enum Role {
    /// Captures start once the connection is established (a call starts after it connects).
    Sender {
        stream: Option<u64>,
        next_capture: Option<Instant>,
        written: u64,
        captured: Vec<Instant>,
    },
    Receiver {
        received: u64,
        next_end: u64,
        corrupt_at: Option<u64>,
        completed: Vec<Instant>,
        buf: Vec<u8>,
    },
}

/// One end of a live video stream over a braid connection.
pub struct VideoFlow {
    conn: Connection,
    source: VideoSource,
    role: Role,
    start: Instant,
}

impl VideoFlow {
    pub fn sender(config: ConnectionConfig, seed: u64, source: VideoSource, start: Instant) -> VideoFlow {
        VideoFlow {
            conn: Connection::client(config, start, seed),
            source,
            role: Role::Sender { stream: None, next_capture: None, written: 0, captured: Vec::new() },
            start,
        }
    }

    pub fn receiver(config: ConnectionConfig, source: VideoSource) -> VideoFlow {
        VideoFlow {
            conn: Connection::server(config, Instant::ZERO),
            source,
            role: Role::Receiver {
                received: 0,
                next_end: source.frame_size(0),
                corrupt_at: None,
                completed: Vec::new(),
                buf: vec![0; PERIOD],
            },
            start: Instant::ZERO,
        }
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection, to turn its trace on and drain it (`examples/video_trace.rs`).
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Capture times of the frames written so far (sender).
    pub fn captured(&self) -> &[Instant] {
        match &self.role {
            Role::Sender { captured, .. } => captured,
            Role::Receiver { .. } => &[],
        }
    }

    /// When each frame, in order, was readable in full (receiver).
    pub fn completed(&self) -> &[Instant] {
        match &self.role {
            Role::Receiver { completed, .. } => completed,
            Role::Sender { .. } => &[],
        }
    }

    /// The first byte that differed from the pattern (receiver).
    pub fn corrupt_at(&self) -> Option<u64> {
        match self.role {
            Role::Receiver { corrupt_at, .. } => corrupt_at,
            Role::Sender { .. } => None,
        }
    }

    /// Bytes received in order (receiver).
    pub fn received(&self) -> u64 {
        match self.role {
            Role::Receiver { received, .. } => received,
            Role::Sender { .. } => 0,
        }
    }

    fn drive(&mut self, now: Instant) {
        self.conn.drain_block_log().for_each(drop);
        let source = self.source;
        match &mut self.role {
            Role::Sender { stream, next_capture, written, captured } => {
                while self.conn.poll_event().is_some() {}
                if !self.conn.is_established() {
                    return;
                }
                let Some((streams, id)) = send_stream(&mut self.conn, stream) else { return };
                let mut at = *next_capture.get_or_insert(now);
                while at <= now {
                    let frame = captured.len() as u64;
                    let mut left = source.frame_size(frame);
                    while left > 0 {
                        let n = left.min(PERIOD as u64);
                        if streams.write(id, pattern_slice(*written, n as usize)).is_err() {
                            return;
                        }
                        *written += n;
                        left -= n;
                    }
                    captured.push(at);
                    at += source.interval();
                }
                *next_capture = Some(at);
            }
            Role::Receiver { received, next_end, corrupt_at, completed, buf } => {
                while let Some(event) = self.conn.poll_event() {
                    let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
                    let Some(streams) = self.conn.streams() else { return };
                    while let Ok((n, _)) = streams.read(id, buf) {
                        if n == 0 {
                            break;
                        }
                        check_pattern(&buf[..n], received, corrupt_at);
                        while *received >= *next_end {
                            completed.push(now);
                            *next_end += source.frame_size(completed.len() as u64);
                        }
                    }
                }
            }
        }
    }

    /// The next frame capture (the sender's own timer).
    fn app_timeout(&self) -> Option<Instant> {
        match self.role {
            Role::Sender { next_capture, .. } => next_capture,
            Role::Receiver { .. } => None,
        }
    }
}

conn_flow_endpoint!(VideoFlow);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_average_the_bitrate_and_repeat_from_the_seed() {
        let v = VideoSource::new(3_400_000, 7);
        let total: u64 = (0..500).map(|i| v.frame_size(i)).sum();
        // 20 s at 3.4 Mbit/s = 8.5 MB, within 2 %.
        let mean_bps = total as f64 * 8.0 / 20.0;
        assert!((mean_bps / 3.4e6 - 1.0).abs() < 0.02, "mean {mean_bps}");
        // I-frames every 50 frames, 5 × the mean P-frame.
        assert!(v.frame_size(50) > 3 * v.frame_size(51));
        assert_eq!(v.frame_size(123), VideoSource::new(3_400_000, 7).frame_size(123));
        assert_ne!(v.frame_size(123), VideoSource::new(3_400_000, 8).frame_size(123));
    }

    #[test]
    fn stats_count_late_and_missing_frames() {
        let ms = |m: u64| Instant::from_micros(m * 1000);
        let captured: Vec<Instant> = (0..10).map(|i| ms(40 * i)).collect();
        // Frames 0..7 take 100 ms, frame 8 takes 250 ms, frame 9 never arrives.
        let mut completed: Vec<Instant> = (0..8).map(|i| ms(40 * i + 100)).collect();
        completed.push(ms(40 * 8 + 250));
        let s = VideoStats::compute(&captured, &completed, Duration::from_millis(200), ms(1000));
        assert_eq!((s.frames, s.on_time), (10, 8));
        assert_eq!(s.p50_ms, 100.0);
        assert!(s.p99_ms.is_infinite());
        // 1 s after the first capture: frames 25.. (none here).
        assert_eq!((s.steady_frames, s.steady_on_time), (0, 0));
        let captured: Vec<Instant> = (0..30).map(|i| ms(40 * i)).collect();
        let mut completed: Vec<Instant> = captured.iter().map(|&c| c + Duration::from_millis(90)).collect();
        completed[0] = ms(500);
        completed[27] = ms(40 * 27 + 201);
        let s = VideoStats::compute(&captured, &completed, Duration::from_millis(200), ms(2000));
        assert_eq!((s.frames, s.on_time, s.steady_frames, s.steady_on_time), (30, 28, 5, 4));
        // A frame whose deadline is past the end is not judged: frames 0..=6 (frame 0 late).
        let s = VideoStats::compute(&captured, &completed, Duration::from_millis(200), ms(450));
        assert_eq!((s.frames, s.on_time), (7, 6));
    }
}
