//! The tun workload's UDP parts: the stamped stream and the ping-pong, through `braid tun` and
//! as plain UDP over the best single path ([`crate::udp`] measures).

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::teardown::{net_state, teardown_verdict};
use super::{interrupt, parse_repair_causes, parse_tunnel_stats, Family, Part, Setup};
use crate::contender::Contender;
use crate::netns::{client_addr, server_addr};
use crate::percentile::percentile;
use crate::report::Row;
use crate::run::{counter_delta, counters, PathCounters};
use crate::udp;
use crate::workload::{next_port, Session};

/// The best single path (highest rate × (1 − loss) at time zero): plain UDP's.
fn best_path(s: &Setup) -> usize {
    let c: Contender = "bbr@best".parse().expect("a valid contender");
    c.resolve(s.scenario).tcp_path()
}

/// Mean configured loss of each forward path.
fn forward_loss(s: &Setup) -> Vec<f64> {
    s.scenario.paths.iter().map(|p| p.forward.loss.mean_loss()).collect()
}

/// The stream's row; `epoch` is the scenario's time zero (its forwarders' start), against which
/// the stream's start is placed.
fn fill_stream(
    row: &mut Row,
    s: &Setup,
    out: &udp::StreamOutcome,
    epoch: Instant,
    wire_fwd: &[u64],
    wire_rev: &[u64],
) {
    let spec = s.t.stream;
    let sum = udp::summarize(&out.latency, spec.deadline);
    let payload = (sum.packets as u64) * spec.size as u64;
    let fwd: u64 = wire_fwd.iter().sum();
    let rev: u64 = wire_rev.iter().sum();
    let loss = forward_loss(s);
    // The loss the stream met: each path's configured loss, weighted by the bytes put on it.
    let met = if fwd > 0 {
        wire_fwd.iter().zip(&loss).map(|(&b, &l)| b as f64 * l).sum::<f64>() / fwd as f64
    } else {
        0.0
    };
    let secs = match (out.first_sent, out.last_sent) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64().max(1e-3),
        _ => spec.duration.as_secs_f64(),
    };
    row.transfer_bytes = payload;
    row.received_bytes = sum.received as u64 * spec.size as u64;
    row.elapsed_s = secs;
    row.goodput_mbps = row.received_bytes as f64 * 8.0 / secs / 1e6;
    row.completion_s = None;
    row.ratio = 0.0;
    let t = row.tun.as_mut().expect("set by row()");
    t.udp_packets = Some(sum.packets);
    t.udp_packet_bytes = Some(spec.size);
    t.udp_rate_mbps = Some(spec.rate_bps / 1e6);
    t.udp_deadline_ms = Some(spec.deadline.as_secs_f64() * 1e3);
    t.udp_received = Some(sum.received);
    t.udp_on_time = Some(sum.on_time);
    t.udp_on_time_within_deadline = Some(sum.on_time_share);
    t.udp_delivered_share = Some(sum.received as f64 / sum.packets.max(1) as f64);
    let interval_ms = spec.interval().as_secs_f64() * 1e3;
    let run = sum.longest_miss_run;
    t.udp_missed = Some(sum.packets - sum.on_time);
    t.udp_longest_miss_run = Some(run.packets);
    t.udp_longest_miss_ms = Some(run.packets as f64 * interval_ms);
    t.udp_longest_miss_at_s = (run.packets > 0).then(|| run.first as f64 * interval_ms / 1e3);
    let per_second = (1e3 / interval_ms).round() as usize;
    let (worst, worst_first) = udp::most_misses_in_window(&out.latency, spec.deadline, per_second);
    t.udp_misses_worst_1s = Some(worst);
    t.udp_misses_worst_1s_at_s = (worst > 0).then(|| worst_first as f64 * interval_ms / 1e3);
    t.udp_stream_start_s = out.first_sent.map(|f| f.saturating_duration_since(epoch).as_secs_f64());
    t.udp_p50_ms = sum.p50_ms;
    t.udp_p99_ms = sum.p99_ms;
    t.udp_send_errors = Some(out.send_errors);
    t.udp_duplicates = Some(out.duplicates);
    t.udp_wire_bytes_fwd = Some(fwd);
    t.udp_wire_bytes_rev = Some(rev);
    t.udp_wire_overhead = Some(fwd as f64 / payload.max(1) as f64 - 1.0);
    t.udp_wire_overhead_both = Some((fwd + rev) as f64 / payload.max(1) as f64 - 1.0);
    t.udp_loss_met = Some(met);
    t.forward_loss = loss;
}

pub(super) fn udp_braid(s: &Setup, family: Family) -> io::Result<Row> {
    let log = s.dir.join(format!("{}-udp.log", family.tun_row()));
    let before = net_state(s.tb);
    let closed_before = s.tunnels_closed();
    let session = Session::begin_plain(s.tb, s.scenario)?;
    let mut child = s.start_tun(&log)?;
    let port = next_port();
    let paths = s.scenario.paths.len();
    let c0 = counters(s.tb, paths)?;
    let at = SocketAddr::new(family.world(), port);
    let out = udp::stream(&s.tb.client_ns, None, at, &s.world, at, s.t.stream);
    let c1 = counters(s.tb, paths)?;
    let clean_exit = interrupt(&mut child);
    let load = session.load.clone();
    let epoch = session.epoch();
    let net = session.end(s.tb)?;
    let mut row = s.row(family.tun_row(), Part::Udp, &net, load);
    let (fwd, _, _) = counter_delta(&c0, &c1);
    let rev = reverse_bytes(&c0, &c1);
    match out {
        Ok(out) => fill_stream(&mut row, s, &out, epoch, &fwd, &rev),
        Err(e) => row.error = Some(e.to_string()),
    }
    let t = row.tun.as_mut().expect("set by row()");
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    if let Some([sent, sent_bytes, repairs, repair_bytes, rebuilt, late, dropped]) =
        parse_tunnel_stats(&log_text)
    {
        let _ = (rebuilt, late);
        t.braid_datagrams_sent = Some(sent);
        t.braid_repairs_sent = Some(repairs);
        t.braid_client_dropped = Some(dropped);
        t.udp_repair_overhead = Some(repair_bytes as f64 / sent_bytes.max(1) as f64);
    }
    if let Some([loss_driven, suspected, on_allowance, delivered]) = parse_repair_causes(&log_text) {
        t.braid_loss_repairs = Some(loss_driven);
        t.braid_suspected = Some(suspected);
        t.braid_suspected_on_allowance = Some(on_allowance);
        t.braid_suspected_delivered = Some(delivered);
    }
    if let Some([received, rebuilt, late, dropped]) = s.server_tunnel_stats(closed_before) {
        t.braid_server_received = Some(received);
        t.braid_server_rebuilt = Some(rebuilt);
        t.braid_server_late = Some(late);
        t.braid_server_dropped = Some(dropped);
    }
    t.teardown = Some(teardown_verdict(&before, &net_state(s.tb), clean_exit));
    Ok(row)
}

/// Bytes the server's side put into each path (server TUN tx) between two counter readings.
fn reverse_bytes(before: &PathCounters, after: &PathCounters) -> Vec<u64> {
    before.1.iter().zip(&after.1).map(|(b, a)| a.tx_bytes.saturating_sub(b.tx_bytes)).collect()
}

pub(super) fn udp_plain(s: &Setup) -> io::Result<Row> {
    let best = best_path(s);
    let name = format!("udp@{best}");
    let session = Session::begin_plain(s.tb, s.scenario)?;
    let port = next_port();
    let paths = s.scenario.paths.len();
    let c0 = counters(s.tb, paths)?;
    let dst = SocketAddrV4::new(server_addr(best), port).into();
    let out = udp::stream(
        &s.tb.client_ns,
        Some(SocketAddrV4::new(client_addr(best), 0).into()),
        dst,
        &s.tb.server_ns,
        dst,
        s.t.stream,
    );
    let c1 = counters(s.tb, paths)?;
    let load = session.load.clone();
    let epoch = session.epoch();
    let net = session.end(s.tb)?;
    let mut row = s.row(&name, Part::Udp, &net, load);
    let (fwd, _, _) = counter_delta(&c0, &c1);
    let rev = reverse_bytes(&c0, &c1);
    match out {
        Ok(out) => fill_stream(&mut row, s, &out, epoch, &fwd, &rev),
        Err(e) => row.error = Some(e.to_string()),
    }
    Ok(row)
}

fn fill_ping(row: &mut Row, rtts: &[Option<Duration>]) {
    let mut ms: Vec<f64> = rtts.iter().flatten().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let t = row.tun.as_mut().expect("set by row()");
    t.ping_sent = Some(rtts.len());
    t.ping_answered = Some(ms.len());
    t.ping_rtt_p50_ms = percentile(&ms, 0.5);
    t.ping_rtt_p99_ms = percentile(&ms, 0.99);
}

const PING_SIZE: usize = 100;
const PING_WAIT: Duration = Duration::from_secs(1);

pub(super) fn ping_braid(s: &Setup, family: Family) -> io::Result<Row> {
    let log = s.dir.join(format!("{}-ping.log", family.tun_row()));
    let before = net_state(s.tb);
    let session = Session::begin_plain(s.tb, s.scenario)?;
    let mut child = s.start_tun(&log)?;
    let at = SocketAddr::new(family.world(), next_port());
    let (stop, echo) = udp::echo_server(&s.world, at)?;
    let rtts = udp::ping_pong(&s.tb.client_ns, None, at, s.t.pings, PING_SIZE, s.t.ping_interval, PING_WAIT);
    stop.store(true, Ordering::SeqCst);
    let _ = echo.join();
    let clean_exit = interrupt(&mut child);
    let load = session.load.clone();
    let net = session.end(s.tb)?;
    let mut row = s.row(family.tun_row(), Part::Ping, &net, load);
    match rtts {
        Ok(r) => fill_ping(&mut row, &r),
        Err(e) => row.error = Some(format!("ping: {e}")),
    }
    let t = row.tun.as_mut().expect("set by row()");
    t.teardown = Some(teardown_verdict(&before, &net_state(s.tb), clean_exit));
    Ok(row)
}

pub(super) fn ping_plain(s: &Setup) -> io::Result<Row> {
    let best = best_path(s);
    let session = Session::begin_plain(s.tb, s.scenario)?;
    let at = SocketAddrV4::new(server_addr(best), next_port()).into();
    let (stop, echo) = udp::echo_server(&s.tb.server_ns, at)?;
    let from = Some(SocketAddrV4::new(client_addr(best), 0).into());
    let rtts = udp::ping_pong(&s.tb.client_ns, from, at, s.t.pings, PING_SIZE, s.t.ping_interval, PING_WAIT);
    stop.store(true, Ordering::SeqCst);
    let _ = echo.join();
    let load = session.load.clone();
    let net = session.end(s.tb)?;
    let mut row = s.row(&format!("udp@{best}"), Part::Ping, &net, load);
    match rtts {
        Ok(r) => fill_ping(&mut row, &r),
        Err(e) => row.error = Some(format!("ping: {e}")),
    }
    Ok(row)
}
