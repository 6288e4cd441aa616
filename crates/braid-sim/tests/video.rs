//! The live-video workload: 25 fps at 3.4 Mbit/s over one 20 Mbit/s, 100 ms RTT path
//! with 2 % random loss on the data direction. braid repairs a frame's losses in one reactive
//! round within the deadline: a tail probe shows a lost tail symbol a round trip after it was
//! sent, and the replacements carry their own margin; the `tcp` model, which retransmits and
//! halves its window at each loss, cannot even carry the bitrate. The seed is in every failure
//! message.

use std::time::Duration;

use braid_proto::conn::Mode;
use braid_proto::{ConnectionConfig, Instant};
use braid_sim::{LinkConfig, LossModel, Network, PathConfig, VideoFlow, VideoSource, VideoStats};

const DEADLINE: Duration = Duration::from_millis(200);

fn run(mode: Mode, loss: f64, seed: u64, secs: u64) -> (VideoStats, f64) {
    let config = ConnectionConfig { mode, ..ConnectionConfig::default() };
    let source = VideoSource::new(3_400_000, seed);
    let client = VideoFlow::sender(config.clone(), seed, source, Instant::ZERO);
    let server = VideoFlow::receiver(config, source);
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50));
    let path = PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link };
    let (mut net, tx, rx) = Network::pair(seed, client, server, &[path]).expect("network");
    let end = Instant::ZERO + Duration::from_secs(secs);
    net.run_until(end);
    let (tx, rx) = (net.endpoint(tx), net.endpoint(rx));
    assert_eq!(rx.corrupt_at(), None, "{mode:?} seed {seed}: corrupted byte");
    let stats = VideoStats::compute(tx.captured(), rx.completed(), DEADLINE, end);
    let c = tx.connection().stats;
    let overhead =
        c.repair_symbols_sent as f64 / (c.source_symbols_sent + c.repair_symbols_sent).max(1) as f64;
    (stats, overhead)
}

#[test]
fn braid_delivers_live_video_on_time_at_2_percent_loss() {
    let seed = 2;
    let (braid, overhead) = run(Mode::Braid, 0.02, seed, 20);
    let (tcp, _) = run(Mode::Tcp, 0.02, seed, 20);
    eprintln!("seed {seed}: braid {braid:?} overhead {overhead:.3}; tcp {tcp:?}");
    assert!(braid.frames >= 490, "seed {seed}: only {} frames judged", braid.frames);
    // After the first second (the first I-frame, 85 kB, waits for slow start from 10 packets,
    // and the frames of that second queue behind it): every frame on time; the median frame
    // takes the one-way delay plus its serialization.
    assert_eq!(braid.steady_on_time, braid.steady_frames, "seed {seed}: braid {braid:?}");
    assert!(braid.p50_ms < 70.0, "seed {seed}: braid {braid:?}");
    // Repair within the budget of 2 × loss + 2 points: 5.6 % of the symbols here (5.0-6.2 %
    // over three seeds × 20 or 60 s; 15 % with a δ̂ = 0.01 margin and no tail probes). Seed 2
    // is the one whose frames waited a second reactive round when a lone replacement was lost
    // too.
    assert!(overhead < 0.06, "seed {seed}: repair overhead {overhead:.3}");
    assert!(tcp.on_time_share() < 0.5, "seed {seed}: tcp {tcp:?}");
}

#[test]
fn no_loss_no_repair() {
    let seed = 3;
    let (braid, overhead) = run(Mode::Braid, 0.0, seed, 10);
    assert_eq!(braid.steady_on_time, braid.steady_frames, "seed {seed}: braid {braid:?}");
    // The target: repair overhead ≤ 1 % at 0 % loss.
    assert!(overhead <= 0.01, "seed {seed}: repair overhead {overhead:.3}");
}

/// Frames late among the first `secs` seconds of a stream whose first I-frame is the testbed
/// trace's size (`i_ratio` 10: 144 kB, 3.4 initial windows), and the latencies of frames 0-2.
fn late_at_the_start(loss: f64, seed: u64, secs: u64) -> (Vec<usize>, [f64; 3]) {
    let config = ConnectionConfig { mode: Mode::Braid, ..ConnectionConfig::default() };
    let source = VideoSource { i_ratio: 10.0, ..VideoSource::new(3_400_000, seed) };
    let client = VideoFlow::sender(config.clone(), seed, source, Instant::ZERO);
    let server = VideoFlow::receiver(config, source);
    let link = LinkConfig::new(20_000_000, Duration::from_millis(50));
    let path = PathConfig { forward: link.clone().with_loss(LossModel::bernoulli(loss)), reverse: link };
    let (mut net, tx, rx) = Network::pair(seed, client, server, &[path]).expect("network");
    net.run_until(Instant::ZERO + Duration::from_secs(secs));
    let (tx, rx) = (net.endpoint(tx), net.endpoint(rx));
    let latency: Vec<Duration> = tx.captured().iter().zip(rx.completed()).map(|(&c, &d)| d - c).collect();
    let late = latency.iter().enumerate().filter(|(_, &l)| l > DEADLINE).map(|(i, _)| i).collect();
    let first = [0, 1, 2].map(|i| latency.get(i).map_or(f64::INFINITY, |l| l.as_secs_f64() * 1e3));
    (late, first)
}

/// The testbed's first I-frame (141 kB) leaves in Startup from the initial window: 1 + 2
/// windows in the first two round trips, so its last symbols go in the third and it completes
/// ~270-280 ms after capture, frames 1 and 2 just after it (docs/DEVIATIONS.md, "No head start
/// for a stream's first frame"). At 0 % loss nothing else may be late; at 2 % a reactive round
/// in that burst costs the frames behind it (49 late frames over these ten seeds' first 4 s).
/// Every I-frame of this source is that large (the testbed's later ones are 55-75 kB), and one
/// whose 64-symbol block loses more than its margin may miss by a reactive round's few ms: seed
/// 9's second I-frame (frame 50, 213 ms: 3 of 64 sources lost, a margin of 2 fixed when its last
/// source went out; on time before the margin was fixed so, with 49 late in all then as now).
/// So the late frames are the first second's or an I-frame itself. The count over ten seeds
/// moves by a frame or two with any change of packet sizes (where each seed's losses fall):
/// over seeds 1-40, 197 late on main 937e3a5 and 199 with packet version 2 (seeds 1-10: 49 and
/// 50, seed 5's 6 -> 7), every one of them in the first 25 frames or an I-frame; the bound
/// leaves that spread room (55, about 10 % over the 40 seeds' rate).
#[test]
fn a_large_first_i_frame_costs_at_most_its_own_slow_start() {
    let mut late_at_2 = 0;
    for seed in 1..=10 {
        let (late, first) = late_at_the_start(0.0, seed, 4);
        assert!(late.iter().all(|&i| i < 3), "seed {seed}, 0 %: late frames {late:?} (0-2: {first:?} ms)");
        assert!(first[0] < 300.0, "seed {seed}, 0 %: frame 0 took {} ms", first[0]);
        let (late, _) = late_at_the_start(0.02, seed, 4);
        assert!(late.iter().all(|&i| i < 25 || i % 50 == 0), "seed {seed}, 2 %: late frames {late:?}");
        late_at_2 += late.len();
    }
    assert!(late_at_2 <= 55, "{late_at_2} frames late at 2 % loss over ten seeds");
}

/// The repair follows the loss: within the budget of 2 × loss + 2 points at 1 % and 5 % random
/// loss as at 2 % (above), every frame after the first second on time. Measured: 3.0 % of the
/// symbols at 1 % (budget 4 %), 10.7 % at 5 % (budget 12 %).
#[test]
fn repair_follows_the_loss_rate() {
    for (loss, seed) in [(0.01, 4), (0.05, 5)] {
        let (braid, overhead) = run(Mode::Braid, loss, seed, 20);
        eprintln!("loss {loss} seed {seed}: braid {braid:?} overhead {overhead:.4}");
        assert!(braid.frames >= 490, "seed {seed}: only {} frames judged", braid.frames);
        assert_eq!(braid.steady_on_time, braid.steady_frames, "loss {loss} seed {seed}: braid {braid:?}");
        assert!(overhead <= 2.0 * loss + 0.02, "loss {loss} seed {seed}: repair overhead {overhead:.4}");
    }
}
