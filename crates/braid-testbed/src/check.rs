//! Self-check: does the emulated path do what its configuration says? On path 0 of a scenario
//! point it measures
//! - delay: the RTT of small UDP probes on the idle path, against 2 × delay (+ serialization);
//! - rate: a UDP blast at 1.3 × the rate, received bytes per second at the server against
//!   rate × (1 − loss) (the queue is full, so the transmitter never idles);
//! - loss: the forward model's lost / serialized against the configured mean, and the packets
//!   the server's socket received against those the model delivered (nothing lost elsewhere);
//! - TUN drops (`ip -s link`), which must be 0.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braid_netem::rng::derive_seed;
use braid_netem::QueueLimit;
use braid_sim::Scenario;
use serde::Serialize;

use crate::forwarder::{self, Direction, ForwardStats};
use crate::netns::{server_addr, Testbed};
use crate::sys;

/// The default self-check path: CTCP Table IV's link with 2 % loss on the data direction.
pub const DEFAULT: &str = r#"
name = "self-check"
seed = 1
duration = "10s"
[[path]]
name = "p0"
rate = "20Mbit/s"
rtt = "100ms"
loss = 0.02
[path.reverse]
loss = 0
"#;

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub rtt_configured_ms: f64,
    pub rtt_measured_ms: f64,
    pub rtt_median_ms: f64,
    pub rtt_p99_ms: f64,
    pub probes_sent: usize,
    pub probes_answered: usize,
    pub rate_configured_mbps: f64,
    pub rate_expected_mbps: f64,
    pub rate_measured_mbps: f64,
    pub loss_configured: f64,
    pub loss_measured: f64,
    pub loss_tolerance: f64,
    pub packets_delivered_by_model: u64,
    pub packets_received_by_socket: u64,
    pub tun_drops: u64,
    pub forwarders: Vec<ForwardStats>,
    pub passed: bool,
}

const PROBE: usize = 64;
const BLAST: usize = 1400;
const UDP_IP_OVERHEAD: usize = 28;

pub fn run(scenario: &Scenario) -> io::Result<CheckReport> {
    let tb = Testbed::create(scenario.paths.len())?;
    let path = &scenario.paths[0];
    let (fwd_cfg, rev_cfg) = (&path.forward, &path.reverse);
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let d = &tb.paths[0];
    let fwd = forwarder::spawn(
        Direction {
            name: "check>".into(),
            input: d.client_tun.clone(),
            output: d.server_tun.clone(),
            config: fwd_cfg.clone(),
            seed: derive_seed(scenario.seed, 0),
        },
        epoch,
        stop.clone(),
    );
    let rev = forwarder::spawn(
        Direction {
            name: "check<".into(),
            input: d.server_tun.clone(),
            output: d.client_tun.clone(),
            config: rev_cfg.clone(),
            seed: derive_seed(scenario.seed, 1),
        },
        epoch,
        stop.clone(),
    );
    let before_c = tb.client_counters(0)?;
    let before_s = tb.server_counters(0)?;

    // 1. Delay: UDP echo on the idle path.
    let echo_stop = Arc::new(AtomicBool::new(false));
    let echo = {
        let stop = echo_stop.clone();
        sys::spawn_in(&tb.server_ns, "echo", move || {
            let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 7))?;
            sock.set_read_timeout(Some(Duration::from_millis(50)))?;
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) && !sys::interrupted() {
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    sock.send_to(&buf[..n], from)?;
                }
            }
            Ok(())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let rtt_cfg = fwd_cfg.delay + rev_cfg.delay;
    let probes = 30;
    let rtts = sys::spawn_in(&tb.client_ns, "ping", move || {
        let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
        sock.set_read_timeout(Some(rtt_cfg * 2 + Duration::from_millis(200)))?;
        let mut rtts = Vec::new();
        let mut buf = [0u8; 2048];
        for seq in 0..probes as u32 {
            if sys::interrupted() {
                break;
            }
            let mut probe = [0u8; PROBE];
            probe[..4].copy_from_slice(&seq.to_be_bytes());
            let t = Instant::now();
            sock.send_to(&probe, SocketAddrV4::new(server_addr(0), 7))?;
            while let Ok((n, _)) = sock.recv_from(&mut buf) {
                if n >= 4 && buf[..4] == seq.to_be_bytes() {
                    rtts.push(t.elapsed().as_secs_f64() * 1e3);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(rtts)
    })
    .join()
    .map_err(|_| io::Error::other("ping thread panicked"))??;
    echo_stop.store(true, Ordering::SeqCst);
    let _ = echo.join();
    let mut sorted = rtts.clone();
    sorted.sort_by(f64::total_cmp);
    let rtt_measured = if rtts.is_empty() { f64::NAN } else { rtts.iter().sum::<f64>() / rtts.len() as f64 };
    let rtt_median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
    let rtt_p99 = sorted
        .get((sorted.len() * 99 / 100).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(f64::NAN);
    let probe_bits = ((PROBE + UDP_IP_OVERHEAD) * 8) as f64;
    let rtt_expected = rtt_cfg.as_secs_f64() * 1e3
        + probe_bits / fwd_cfg.rate_bps as f64 * 1e3
        + probe_bits / rev_cfg.rate_bps as f64 * 1e3;

    // 2 + 3. Rate and loss: a UDP blast above the rate.
    let rx = Arc::new(Mutex::new((0u64, 0u64, None::<Instant>, None::<Instant>, 0u64)));
    let rx_stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (rx, stop) = (rx.clone(), rx_stop.clone());
        sys::spawn_in(&tb.server_ns, "blast-rx", move || {
            let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 9))?;
            sys::force_rcvbuf(&sock, 8 << 20)?;
            sock.set_read_timeout(Some(Duration::from_millis(50)))?;
            let overflow_before = sys::udp_rcvbuf_errors();
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) && !sys::interrupted() {
                if let Ok((n, _)) = sock.recv_from(&mut buf) {
                    let now = Instant::now();
                    let mut r = rx.lock().unwrap();
                    r.0 += 1;
                    if r.2.is_none() {
                        r.2 = Some(now);
                        r.4 = (n + UDP_IP_OVERHEAD) as u64; // the first packet's bytes opened the clock
                    }
                    r.1 += (n + UDP_IP_OVERHEAD) as u64;
                    r.3 = Some(now);
                }
            }
            Ok(sys::udp_rcvbuf_errors() - overflow_before)
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let blast_secs = 4.0;
    let send_bps = fwd_cfg.rate_bps as f64 * 1.3;
    sys::spawn_in(&tb.client_ns, "blast-tx", move || {
        let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
        let payload = [0xa5u8; BLAST];
        let interval = ((BLAST + UDP_IP_OVERHEAD) * 8) as f64 / send_bps;
        let start = Instant::now();
        let mut sent = 0u64;
        while start.elapsed().as_secs_f64() < blast_secs && !sys::interrupted() {
            let due = sent as f64 * interval;
            let now = start.elapsed().as_secs_f64();
            if now < due {
                std::thread::sleep(Duration::from_secs_f64((due - now).min(0.002)));
                continue;
            }
            // ENOBUFS and the like only mean the TUN queue is full: the forwarder reads it.
            let _ = sock.send_to(&payload, SocketAddrV4::new(server_addr(0), 9));
            sent += 1;
        }
        Ok(())
    })
    .join()
    .map_err(|_| io::Error::other("blast thread panicked"))??;
    // Let the queue drain and the last packets cross the wire.
    std::thread::sleep(rtt_cfg + Duration::from_millis(300));
    let queue_bytes = match fwd_cfg.queue {
        QueueLimit::Bytes(b) => b as f64,
        QueueLimit::Packets(p) => p as f64 * 1500.0,
        QueueLimit::Bdp(k) => k * fwd_cfg.rate_bps as f64 / 8.0 * rtt_cfg.as_secs_f64(),
    };
    std::thread::sleep(Duration::from_secs_f64(queue_bytes * 8.0 / fwd_cfg.rate_bps as f64));
    rx_stop.store(true, Ordering::SeqCst);
    let rcvbuf_errors = receiver.join().map_err(|_| io::Error::other("receiver panicked"))??;
    stop.store(true, Ordering::SeqCst);
    let fstats = fwd.join().unwrap_or_default();
    let rstats = rev.join().unwrap_or_default();
    let after_c = tb.client_counters(0)?;
    let after_s = tb.server_counters(0)?;

    let (rx_packets, rx_bytes, first, last, first_bytes) = *rx.lock().unwrap();
    let span = match (first, last) {
        (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    let rate_measured = if span > 0.0 { (rx_bytes - first_bytes) as f64 * 8.0 / span } else { 0.0 };
    let loss_cfg = fwd_cfg.loss.mean_loss();
    let link = fstats.link;
    let serialized = link.sent - link.dropped_queue;
    let loss_measured = if serialized > 0 { link.lost as f64 / serialized as f64 } else { 0.0 };
    // Four standard deviations of a Bernoulli estimate (wider for bursty models), plus 0.1 %.
    let burst =
        if matches!(fwd_cfg.loss, braid_netem::LossModel::GilbertElliott { .. }) { 10.0 } else { 1.0 };
    let loss_tol = 4.0 * (burst * loss_cfg * (1.0 - loss_cfg) / serialized.max(1) as f64).sqrt() + 0.001;
    let rate_expected = fwd_cfg.rate_bps as f64 * (1.0 - loss_cfg);
    let tun_drops = (after_c.tx_dropped - before_c.tx_dropped)
        + (after_c.rx_dropped - before_c.rx_dropped)
        + (after_s.tx_dropped - before_s.tx_dropped)
        + (after_s.rx_dropped - before_s.rx_dropped);
    // Probes and blast both crossed the forward model: delivered = answered probes (+ probes
    // whose answer was lost on the way back) + blast packets.
    let unanswered = (probes - rtts.len()) as u64;
    let delivered_blast = link.delivered.saturating_sub(rtts.len() as u64);

    // The median, not the mean: a VM's scheduling spikes (TESTBED.md pitfall 10) are not the
    // emulator's delay.
    let ok_rtt = (rtt_median - rtt_expected).abs() <= 0.03 * rtt_expected + 1.0;
    let ok_rate = (rate_measured - rate_expected).abs() <= 0.03 * rate_expected;
    let ok_loss = (loss_measured - loss_cfg).abs() <= loss_tol;
    // Every packet the model delivered reached the socket (a few probes may count either way).
    let ok_delivery = rx_packets + unanswered >= delivered_blast && rx_packets <= delivered_blast;
    let ok_drops = tun_drops == 0 && fstats.write_errors == 0 && rstats.write_errors == 0;
    let verdict = |ok: bool| if ok { "ok" } else { "FAIL" };
    println!(
        "delay: RTT median {rtt_median:.2} ms (mean {rtt_measured:.2}, p99 {rtt_p99:.2}) vs {rtt_expected:.2} ms configured, {}/{} probes  [{}]",
        rtts.len(),
        probes,
        verdict(ok_rtt)
    );
    println!(
        "rate:  {:.3} Mbit/s at the receiver vs {:.3} = {:.1} × (1 − {:.3})  [{}]",
        rate_measured / 1e6,
        rate_expected / 1e6,
        fwd_cfg.rate_bps as f64 / 1e6,
        loss_cfg,
        verdict(ok_rate)
    );
    println!(
        "loss:  {:.4} of {} serialized packets vs {:.4} (± {:.4})  [{}]",
        loss_measured,
        serialized,
        loss_cfg,
        loss_tol,
        verdict(ok_loss)
    );
    println!(
        "delivery: model delivered {} blast packets, socket received {} (receive-buffer overflows {})  [{}]",
        delivered_blast,
        rx_packets,
        rcvbuf_errors,
        verdict(ok_delivery)
    );
    println!(
        "TUN drops {tun_drops}, write errors {}/{}; forwarder lateness mean {:.0} µs, max {} µs  [{}]",
        fstats.write_errors,
        rstats.write_errors,
        fstats.late_mean_us,
        fstats.late_max_us,
        verdict(ok_drops)
    );
    Ok(CheckReport {
        rtt_configured_ms: rtt_expected,
        rtt_measured_ms: rtt_measured,
        rtt_median_ms: rtt_median,
        rtt_p99_ms: rtt_p99,
        probes_sent: probes,
        probes_answered: rtts.len(),
        rate_configured_mbps: fwd_cfg.rate_bps as f64 / 1e6,
        rate_expected_mbps: rate_expected / 1e6,
        rate_measured_mbps: rate_measured / 1e6,
        loss_configured: loss_cfg,
        loss_measured,
        loss_tolerance: loss_tol,
        packets_delivered_by_model: delivered_blast,
        packets_received_by_socket: rx_packets,
        tun_drops,
        forwarders: vec![fstats, rstats],
        passed: ok_rtt && ok_rate && ok_loss && ok_delivery && ok_drops,
    })
}
