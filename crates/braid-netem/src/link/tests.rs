//! Unit tests of the link model. Every randomized test names its seed in its failure message.

use super::*;

const MS: u64 = 1000;

fn packet(id: u32, size: usize) -> Vec<u8> {
    let mut d = vec![0u8; size.max(4)];
    d[..4].copy_from_slice(&id.to_be_bytes());
    d
}

fn id_of(d: &[u8]) -> u32 {
    u32::from_be_bytes(d[..4].try_into().unwrap())
}

fn at(us: u64) -> Instant {
    Instant::from_micros(us)
}

/// Drain everything due by `now`, returning (arrival, id) pairs.
fn drain(link: &mut Link, now: Instant, out: &mut Vec<(u64, u32)>) {
    while let Some(t) = link.next_delivery() {
        if t > now {
            break;
        }
        let d = link.poll_deliver(now).expect("due packet");
        out.push((t.as_micros(), id_of(&d)));
    }
}

/// Send `n` packets of `size` bytes every `spacing_us` and collect every delivery.
fn run_paced(link: &mut Link, n: u32, size: usize, spacing_us: u64) -> (Vec<Fate>, Vec<(u64, u32)>) {
    let mut fates = Vec::with_capacity(n as usize);
    let mut got = Vec::new();
    for i in 0..n {
        let now = at(i as u64 * spacing_us);
        drain(link, now, &mut got);
        fates.push(link.send(now, packet(i, size)));
    }
    drain(link, at(u64::MAX / 2), &mut got);
    (fates, got)
}

#[test]
fn burst_serializes_at_rate_then_adds_delay_exactly() {
    // 1000 × 1250 B at 10 Mbit/s is exactly 1 s of serialization: packet i leaves at (i+1) ms.
    let config = LinkConfig::new(10_000_000, Duration::from_millis(50)).with_queue(QueueLimit::Packets(1000));
    let mut link = Link::new(config, 1).unwrap();
    for i in 0..1000 {
        assert_eq!(link.send(Instant::ZERO, packet(i, 1250)), Fate::Queued);
    }
    let mut got = Vec::new();
    drain(&mut link, at(10_000 * MS), &mut got);
    assert_eq!(got.len(), 1000);
    for (i, &(t, id)) in got.iter().enumerate() {
        assert_eq!(id, i as u32);
        assert_eq!(t, (i as u64 + 1) * MS + 50 * MS, "packet {i}");
    }
    assert_eq!(got.last().unwrap().0, 1_050 * MS);
    assert_eq!(link.stats().delivered_bytes, 1_250_000);
}

#[test]
fn paced_stream_sees_only_serialization_and_delay() {
    let config = LinkConfig::new(10_000_000, Duration::from_millis(50));
    let mut link = Link::new(config, 1).unwrap();
    let (fates, got) = run_paced(&mut link, 1000, 1250, MS);
    assert!(fates.iter().all(|f| *f == Fate::Queued));
    for &(t, id) in &got {
        assert_eq!(t, id as u64 * MS + MS + 50 * MS);
    }
}

#[test]
fn odd_rates_do_not_accumulate_rounding() {
    // A 4-byte packet at 3 Mbit/s takes 32e9 / 3e6 = 10 666.67 ns, not an integer; 3000 of them
    // must still take exactly 3000 × 32 bit / 3 Mbit/s = 32 ms.
    let config = LinkConfig::new(3_000_000, Duration::ZERO).with_queue(QueueLimit::Packets(10_000));
    let mut link = Link::new(config, 1).unwrap();
    for i in 0..3000 {
        link.send(Instant::ZERO, packet(i, 4));
    }
    let mut got = Vec::new();
    drain(&mut link, at(1_000_000), &mut got);
    assert_eq!(got.last().unwrap().0, 32 * MS);
}

#[test]
fn drop_tail_bounds_hold() {
    // Packet limit: a burst of 100 into a 10-packet queue keeps exactly 10.
    let config = LinkConfig::new(1_000_000, Duration::from_millis(1)).with_queue(QueueLimit::Packets(10));
    let mut link = Link::new(config, 1).unwrap();
    let accepted = (0..100).filter(|&i| link.send(Instant::ZERO, packet(i, 1000)) == Fate::Queued).count();
    assert_eq!(accepted, 10);
    assert_eq!(link.stats().dropped_queue, 90);

    // Byte limit under sustained 2× overload: the queue never exceeds the limit, and the link
    // stays busy (delivered ≈ rate × time).
    let config = LinkConfig::new(10_000_000, Duration::from_millis(5)).with_queue(QueueLimit::Bytes(20_000));
    let mut link = Link::new(config, 1).unwrap();
    let (_, got) = run_paced(&mut link, 10_000, 1250, 500); // 20 Mbit/s offered for 5 s
    assert!(link.stats().max_queue_bytes <= 20_000, "{:?}", link.stats());
    assert_eq!(link.stats().dropped_queue + got.len() as u64, 10_000);
    // 5 s at 10 Mbit/s is 5000 packets of 1250 B, plus what the queue held at the end.
    assert!((4990..=5020).contains(&got.len()), "{}", got.len());

    // A packet larger than the limit is still accepted by an empty queue.
    let config = LinkConfig::new(1_000_000, Duration::ZERO).with_queue(QueueLimit::Bytes(100));
    let mut link = Link::new(config, 1).unwrap();
    assert_eq!(link.send(Instant::ZERO, packet(0, 1500)), Fate::Queued);
    assert_eq!(link.send(Instant::ZERO, packet(1, 10)), Fate::DroppedByQueue);
}

#[test]
fn default_queue_is_one_round_trip_bdp() {
    // CTCP Table IV's path: 20 Mbit/s, 100 ms RTT → 250 000 bytes.
    let config = LinkConfig::new(20_000_000, Duration::from_millis(50));
    assert_eq!(config.queue_limit_bytes(), Some(250_000));
}

#[test]
fn bernoulli_loss_rate_within_five_sigma() {
    for seed in [1u64, 2, 3] {
        let p = 0.02;
        let n = 100_000u32;
        let config = LinkConfig::new(1_000_000_000, Duration::ZERO).with_loss(LossModel::bernoulli(p));
        let mut link = Link::new(config, seed).unwrap();
        let (fates, got) = run_paced(&mut link, n, 100, 1);
        let lost = fates.iter().filter(|f| **f == Fate::Lost).count() as f64;
        let expected = p * n as f64;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (lost - expected).abs() < 5.0 * sigma,
            "seed {seed}: lost {lost}, expected {expected} ± {sigma}"
        );
        assert_eq!(got.len() as u64 + link.stats().lost, n as u64, "seed {seed}");
    }
}

/// Loss rate and mean length of loss runs of a Gilbert–Elliott link over `n` packets.
fn gilbert_elliott_run(seed: u64, model: LossModel, n: u32) -> (f64, f64) {
    let config = LinkConfig::new(1_000_000_000, Duration::ZERO).with_loss(model);
    let mut link = Link::new(config, seed).unwrap();
    let (fates, _) = run_paced(&mut link, n, 100, 1);
    let lost: Vec<bool> = fates.iter().map(|f| *f == Fate::Lost).collect();
    let losses = lost.iter().filter(|l| **l).count();
    let bursts = lost.windows(2).filter(|w| w[1] && !w[0]).count() + usize::from(lost[0]);
    (losses as f64 / n as f64, losses as f64 / bursts as f64)
}

#[test]
fn gilbert_elliott_mean_loss_and_burst_length_match_analysis() {
    // Plain Gilbert: π_B = 0.01 / 0.11, mean loss burst 1 / p_bg = 10 packets.
    let model =
        LossModel::GilbertElliott { p_good_to_bad: 0.01, p_bad_to_good: 0.1, loss_good: 0.0, loss_bad: 1.0 };
    for seed in [11u64, 12] {
        let (rate, burst) = gilbert_elliott_run(seed, model, 300_000);
        let expected = model.mean_loss();
        assert!((rate - expected).abs() < 0.1 * expected, "seed {seed}: loss {rate}, expected {expected}");
        assert!((burst - 10.0).abs() < 1.0, "seed {seed}: mean burst {burst}, expected 10");
    }
    // Elliott's variant with loss in both states: only the mean has a simple closed form.
    let model =
        LossModel::GilbertElliott { p_good_to_bad: 0.05, p_bad_to_good: 0.2, loss_good: 0.01, loss_bad: 0.5 };
    let (rate, burst) = gilbert_elliott_run(13, model, 300_000);
    let expected = model.mean_loss(); // 0.8 · 0.01 + 0.2 · 0.5 = 0.108
    assert!((rate - expected).abs() < 0.1 * expected, "seed 13: loss {rate}, expected {expected}");
    // Losses cluster: runs are longer than the 1 / (1 − p) ≈ 1.12 of independent loss at that rate.
    assert!(burst > 1.3, "seed 13: mean burst {burst}");
}

#[test]
fn outage_drops_exactly_the_packets_on_the_link_during_the_window() {
    // 125 B at 10 Mbit/s = 100 µs serialization, 10 ms delay, one packet per ms. Packet i is on
    // the link during [i ms, i ms + 10.1 ms]; the outage [100 ms, 200 ms) overlaps it iff
    // i < 200 and i + 10.1 ≥ 100, i.e. i ∈ 90..=199.
    let config =
        LinkConfig::new(10_000_000, Duration::from_millis(10)).with_outage(at(100 * MS), at(200 * MS));
    let mut link = Link::new(config, 5).unwrap();
    let (fates, got) = run_paced(&mut link, 400, 125, MS);
    for (i, fate) in fates.iter().enumerate() {
        let expected = if (90..=199).contains(&i) { Fate::LostInOutage } else { Fate::Queued };
        assert_eq!(*fate, expected, "packet {i}");
    }
    assert_eq!(got.len(), 400 - 110);
    assert_eq!(link.stats().lost_outage, 110);
}

#[test]
fn overlapping_outages_merge() {
    let config = LinkConfig::new(10_000_000, Duration::ZERO)
        .with_outage(at(10 * MS), at(20 * MS))
        .with_outage(at(15 * MS), at(30 * MS))
        .with_outage(at(50 * MS), at(51 * MS));
    let mut link = Link::new(config, 5).unwrap();
    let (fates, _) = run_paced(&mut link, 100, 125, MS);
    let lost: Vec<usize> = (0..100).filter(|&i| fates[i] == Fate::LostInOutage).collect();
    // Packet i occupies [i ms, i ms + 100 µs]; packet 9 ends before 10 ms.
    let expected: Vec<usize> = (10..30).chain(50..51).collect();
    assert_eq!(lost, expected);
}

#[test]
fn duplication_rate_within_five_sigma() {
    let seed = 21;
    let p = 0.05;
    let n = 100_000u32;
    let config = LinkConfig::new(1_000_000_000, Duration::from_millis(1)).with_duplication(p);
    let mut link = Link::new(config, seed).unwrap();
    let (_, got) = run_paced(&mut link, n, 100, 1);
    let dups = link.stats().duplicated as f64;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!((dups - p * n as f64).abs() < 5.0 * sigma, "seed {seed}: {dups} duplicates");
    assert_eq!(got.len() as u64, n as u64 + link.stats().duplicated, "seed {seed}");
    // Every id arrives at least once, duplicates adjacent (no jitter, FIFO).
    let mut ids: Vec<u32> = got.iter().map(|g| g.1).collect();
    ids.dedup();
    assert_eq!(ids, (0..n).collect::<Vec<_>>(), "seed {seed}");
}

/// Fraction of consecutive sends (i, i+1) delivered in the opposite order.
fn adjacent_inversions(got: &[(u64, u32)], n: u32) -> f64 {
    let mut position = vec![0usize; n as usize];
    for (pos, &(_, id)) in got.iter().enumerate() {
        position[id as usize] = pos;
    }
    let inversions = position.windows(2).filter(|w| w[1] < w[0]).count();
    inversions as f64 / (n - 1) as f64
}

#[test]
fn jitter_reorders_at_the_analytic_rate_only_when_allowed() {
    // Spacing s = 100 µs, jitter uniform in [0, J = 1 ms]: packet i+1 overtakes i iff
    // U_{i+1} + s < U_i, probability (J − s)² / (2 J²) = 0.405.
    let seed = 31;
    let n = 100_000u32;
    let config = LinkConfig::new(1_000_000_000, Duration::from_millis(10))
        .with_queue(QueueLimit::Packets(1_000_000))
        .with_jitter(Duration::from_millis(1), true);
    let mut link = Link::new(config.clone(), seed).unwrap();
    let (_, got) = run_paced(&mut link, n, 125, 100);
    let rate = adjacent_inversions(&got, n);
    assert!((rate - 0.405).abs() < 0.01, "seed {seed}: reorder rate {rate}, expected 0.405");

    let config = config.with_jitter(Duration::from_millis(1), false);
    let mut link = Link::new(config, seed).unwrap();
    let (_, got) = run_paced(&mut link, n, 125, 100);
    assert_eq!(adjacent_inversions(&got, n), 0.0, "seed {seed}");
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
    // Jitter still delays: the mean extra delay is between 0 and J.
    let extra: f64 =
        got.iter().map(|&(t, id)| (t - id as u64 * 100 - 10 * MS - 1) as f64).sum::<f64>() / n as f64;
    assert!(extra > 400.0 && extra < 1000.0, "seed {seed}: mean extra delay {extra} µs");
}

fn trace(seed: u64) -> Vec<(u64, u32)> {
    let config = LinkConfig::new(50_000_000, Duration::from_millis(20))
        .with_loss(LossModel::GilbertElliott {
            p_good_to_bad: 0.02,
            p_bad_to_good: 0.3,
            loss_good: 0.01,
            loss_bad: 0.6,
        })
        .with_jitter(Duration::from_millis(3), true)
        .with_duplication(0.01);
    let mut link = Link::new(config, seed).unwrap();
    run_paced(&mut link, 20_000, 1000, 150).1
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let a = trace(99);
    assert_eq!(a, trace(99), "seed 99 is not reproducible");
    assert_ne!(a, trace(100), "seeds 99 and 100 gave the same trace");
}

#[test]
fn scheduled_changes_apply_to_packets_sent_after_them() {
    // Loss surge: lossless, then every packet lost in [50 ms, 100 ms), then lossless again; rate
    // halves at 100 ms and delay grows at 150 ms.
    let config = LinkConfig::new(10_000_000, Duration::from_millis(10))
        .with_queue(QueueLimit::Packets(1000))
        .with_change(LinkChange {
            at: at(50 * MS),
            loss: Some(LossModel::bernoulli(1.0)),
            ..Default::default()
        })
        .with_change(LinkChange {
            at: at(100 * MS),
            loss: Some(LossModel::None),
            rate_bps: Some(5_000_000),
            ..Default::default()
        })
        .with_change(LinkChange {
            at: at(150 * MS),
            delay: Some(Duration::from_millis(30)),
            ..Default::default()
        });
    let mut link = Link::new(config, 3).unwrap();
    let (fates, got) = run_paced(&mut link, 200, 1250, MS);
    for (i, fate) in fates.iter().enumerate() {
        let expected = if (50..100).contains(&i) { Fate::Lost } else { Fate::Queued };
        assert_eq!(*fate, expected, "packet {i}");
    }
    let arrival = |id: u32| got.iter().find(|g| g.1 == id).unwrap().0;
    assert_eq!(arrival(10), 10 * MS + MS + 10 * MS);
    // At 5 Mbit/s a 1250 B packet takes 2 ms, so the link is now overloaded and queues build.
    assert_eq!(arrival(100), 100 * MS + 2 * MS + 10 * MS);
    assert_eq!(arrival(101), 100 * MS + 4 * MS + 10 * MS);
    // Packets sent after 150 ms see the new delay but cannot overtake the ones ahead.
    let late = arrival(150);
    assert!(late >= 150 * MS + 30 * MS, "{late}");
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn invalid_configs_are_rejected_with_the_reason() {
    let err = Link::new(LinkConfig::new(0, Duration::ZERO), 0).unwrap_err();
    assert!(err.to_string().contains("rate must be positive"), "{err}");
    let err = Link::new(LinkConfig::new(1, Duration::ZERO).with_duplication(2.0), 0).unwrap_err();
    assert!(err.to_string().contains("duplication"), "{err}");
    let err = Link::new(LinkConfig::new(1, Duration::ZERO).with_outage(at(5), at(5)), 0).unwrap_err();
    assert!(err.to_string().contains("outage"), "{err}");
}
