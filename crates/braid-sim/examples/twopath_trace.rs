//! Where a multipath bulk transfer's time goes against the ideal Σ rateᵢ (1 − pᵢ): runs braid's
//! default mode over the sweep points of a scenario whose label is the filter (or, if none is,
//! contains it), with the sender's and receiver's packet traces on (`Connection::enable_trace`).
//!
//! Per path: when it first carried data, when its deliveries first reached 90 % of its rate for
//! 100 ms (its ramp's end), its last new source and last symbol sent, its bytes by kind, and its
//! link's idle time (a FIFO at the link's rate fed at the trace's send times) in the handshake,
//! the ramp (until the connection's deliveries reach 90 % of Σ rate for 100 ms), steady state and
//! the tail (last new source → last byte read), with what that idle time costs in seconds of the
//! whole connection (idle × rateᵢ / Σ rate). Also the reorder buffer: the symbols arrived but not
//! yet read in order (mean and max), and the blocks whose completion waited on an older block
//! (the wait, and the path that carried the older block's last symbol), and the five blocks
//! completed last (their symbols by path, their repairs and when they left). `RAMP=1` prints each
//! path's ramp by 100 ms (bytes sent, window, in flight, pacing rate, SRTT), `FULL=1` its whole
//! run, and `BLOCKS=N` sets the block window (`blocks_in_flight`, what-if runs):
//! `cargo run --release -p braid-sim --example twopath_trace -- scenarios/fmtcp-table2-delay.toml 500ms`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use braid_proto::conn::ConnectionConfig;
use braid_proto::trace::{PathMetrics, TraceEvent, TraceFrame};
use braid_proto::Instant;
use braid_sim::{BulkFlow, Scenario};

mod trace_common;
use trace_common::{busy_time, secs};

/// One sent packet, as the trace shows it.
struct Sent {
    at: f64,
    size: u64,
    source: u64,
    repair: u64,
    new_source: bool,
}

/// One path's side of the trace.
#[derive(Default)]
struct PathTrace {
    sent: Vec<Sent>,
    /// Symbol bytes that arrived at the receiver, once a millisecond (cumulative).
    arrived: Vec<u64>,
    arrived_now: u64,
    lost: u64,
    /// Time (after the handshake) the window was full.
    cwnd_limited: f64,
    cwnd_full: bool,
    /// The path's state after each change.
    series: Vec<(f64, PathMetrics)>,
}

/// One block: its sources, and each symbol's arrival (time, path).
#[derive(Default)]
struct Block {
    sources: HashSet<u32>,
    /// Repairs sent: (time, path).
    repairs: Vec<(f64, u8)>,
    /// Symbols sent: (time, path).
    sent: Vec<(f64, u8)>,
    received: Vec<(f64, u8)>,
}

impl Block {
    /// When (and on which path) the block had as many symbols as sources.
    fn complete_at(&self) -> Option<(f64, u8)> {
        let n = self.sources.len();
        (n > 0 && self.received.len() >= n).then(|| self.received[n - 1])
    }
}

#[derive(Default)]
struct Trace {
    paths: Vec<PathTrace>,
    seen: HashSet<(u64, u32)>,
    blocks: BTreeMap<u64, Block>,
    /// Bytes read at the receiver, once a millisecond.
    delivered: Vec<(f64, u64)>,
    established: Option<f64>,
    done: f64,
}

impl Trace {
    fn path(&mut self, p: u8) -> &mut PathTrace {
        let p = p as usize;
        if self.paths.len() <= p {
            self.paths.resize_with(p + 1, PathTrace::default);
        }
        &mut self.paths[p]
    }

    fn on_sent(&mut self, e: TraceEvent) {
        match e {
            TraceEvent::PacketSent(p) => {
                let mut s =
                    Sent { at: secs(p.at), size: p.size as u64, source: 0, repair: 0, new_source: false };
                for f in &p.frames {
                    if let TraceFrame::Symbol { block, index, repair, length } = *f {
                        let b = self.blocks.entry(block).or_default();
                        b.sent.push((secs(p.at), p.path));
                        if repair {
                            b.repairs.push((secs(p.at), p.path));
                            s.repair += length as u64;
                        } else {
                            self.blocks.entry(block).or_default().sources.insert(index);
                            if self.seen.insert((block, index)) {
                                s.source += length as u64;
                                s.new_source = true;
                            }
                        }
                    }
                }
                self.path(p.path).sent.push(s);
            }
            TraceEvent::PacketLost { path, .. } => self.path(path).lost += 1,
            TraceEvent::Metrics { at, path, metrics: m } => {
                let p = self.path(path);
                p.cwnd_full = m.bytes_in_flight + 1500 > m.cwnd;
                p.series.push((secs(at), m));
            }
            _ => {}
        }
    }

    fn on_received(&mut self, e: TraceEvent) {
        if let TraceEvent::PacketReceived(p) = e {
            let mut bytes = 0;
            for f in &p.frames {
                if let TraceFrame::Symbol { block, length, .. } = *f {
                    self.blocks.entry(block).or_default().received.push((secs(p.at), p.path));
                    bytes += length as u64;
                }
            }
            self.path(p.path).arrived_now += bytes;
        }
    }

    fn collect(scenario: &Scenario) -> Trace {
        let bytes = scenario.transfer.expect("transfer");
        let built = scenario
            .build(|cx| {
                let mut config = ConnectionConfig {
                    paths: cx.paths as u8,
                    max_plpmtu: cx.scenario.max_mtu().unwrap_or(1280),
                    ..ConnectionConfig::default()
                };
                // BLOCKS=N: the block window (what-if runs; the mode's minimum still applies).
                if let Some(n) = std::env::var("BLOCKS").ok().and_then(|v| v.parse().ok()) {
                    config.params.blocks_in_flight = n;
                }
                (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
            })
            .expect("network");
        let (mut net, (client, server)) = (built.network, built.flows[0]);
        net.endpoint_mut(client).connection_mut().enable_trace();
        net.endpoint_mut(server).connection_mut().enable_trace();
        let step = Duration::from_millis(1);
        let mut now = Instant::ZERO;
        let mut trace = Trace::default();
        for p in 0..scenario.paths.len() {
            trace.path(p as u8);
        }
        while net.endpoint(server).done_at().is_none() && now < built.limit {
            now += step;
            net.run_until(now);
            let conn = net.endpoint_mut(client).connection_mut();
            if trace.established.is_none() && conn.is_established() {
                trace.established = Some(secs(now));
            }
            while let Some(e) = conn.poll_trace() {
                trace.on_sent(e);
            }
            while let Some(e) = net.endpoint_mut(server).connection_mut().poll_trace() {
                trace.on_received(e);
            }
            let started = trace.established.is_some();
            for p in &mut trace.paths {
                p.arrived.push(p.arrived_now);
                if started && p.cwnd_full {
                    p.cwnd_limited += step.as_secs_f64();
                }
            }
            trace.delivered.push((secs(now), net.endpoint(server).received()));
        }
        trace.done = net.endpoint(server).done_at().map_or(f64::NAN, secs);
        trace
    }

    /// The start of the first 100 ms in which `series` (cumulative bytes, one a millisecond)
    /// grew by 90 % of `rate` bytes/s.
    fn ramp_end(&self, series: &[u64], rate: f64) -> f64 {
        series
            .windows(100)
            .position(|w| (w[99] - w[0]) as f64 >= 0.9 * rate * 0.099)
            .map_or(self.done, |i| self.delivered[i].0)
    }
}

fn main() {
    trace_common::run_matching("twopath_trace", run);
}

fn run(scenario: &Scenario) {
    let bytes = scenario.transfer.expect("transfer");
    let rates: Vec<f64> = scenario.paths.iter().map(|p| p.forward.rate_bps as f64 / 8.0).collect();
    let ideal: f64 =
        scenario.paths.iter().zip(&rates).map(|(p, r)| r * (1.0 - p.forward.loss.mean_loss())).sum();
    let total: f64 = rates.iter().sum();
    let trace = Trace::collect(scenario);
    let done = trace.done;
    println!("== {} (seed {})", scenario.title(), scenario.seed);
    println!(
        "done {done:.3} s: {:.2} Mbit/s = {:.3} × ideal (ideal time {:.3} s)",
        bytes as f64 * 8.0 / done / 1e6,
        bytes as f64 / done / ideal,
        bytes as f64 / ideal
    );
    let established = trace.established.unwrap_or(0.0);
    let conn_arrived: Vec<u64> =
        (0..trace.delivered.len()).map(|i| trace.paths.iter().map(|p| p.arrived[i]).sum()).collect();
    let ramp_end = trace.ramp_end(&conn_arrived, total);
    let last_new =
        trace.paths.iter().flat_map(|p| &p.sent).filter(|s| s.new_source).map(|s| s.at).fold(0.0, f64::max);
    let phases = [
        ("handshake", 0.0, established),
        ("ramp", established, ramp_end),
        ("steady", ramp_end, last_new),
        ("tail", last_new, done),
    ];
    print!("phases:");
    for (name, from, to) in phases {
        print!(" {name} {from:.3}–{to:.3}");
    }
    println!();
    let mut cost_total = 0.0;
    for (i, (p, &rate)) in trace.paths.iter().zip(&rates).enumerate() {
        let first_data = p.sent.iter().find(|s| s.source + s.repair > 0).map_or(f64::NAN, |s| s.at);
        let last_new_p = p.sent.iter().filter(|s| s.new_source).map(|s| s.at).fold(f64::NAN, f64::max);
        let last_sym =
            p.sent.iter().filter(|s| s.source + s.repair > 0).map(|s| s.at).fold(f64::NAN, f64::max);
        let (all, source, repair): (u64, u64, u64) =
            p.sent.iter().fold((0, 0, 0), |a, s| (a.0 + s.size, a.1 + s.source, a.2 + s.repair));
        println!(
            "path {i}: first data {first_data:.3}, ramp end {:.3}, last new source {last_new_p:.3}, last symbol \
             {last_sym:.3}; {} packets, {all} B (source {source}, repair {repair}), {} lost, cwnd-limited {:.3} s",
            trace.ramp_end(&p.arrived, rate),
            p.sent.len(),
            p.lost,
            p.cwnd_limited
        );
        print!("  idle s (conn s):");
        for (name, from, to) in phases {
            let idle = (to - from) - busy_time(p.sent.iter().map(|p| (p.at, p.size)), rate, from, to);
            let cost = idle * rate / total;
            cost_total += cost;
            print!(" {name} {idle:.3} ({cost:.3})");
        }
        println!();
        // RAMP=1: the path's ramp by 100 ms; FULL=1: its whole run.
        if std::env::var_os("FULL").is_some() {
            print_ramp(p, rate, done);
        } else if std::env::var_os("RAMP").is_some() {
            print_ramp(p, rate, trace.ramp_end(&p.arrived, rate));
        }
    }
    println!(
        "idle cost {cost_total:.3} s; the rest of done − ideal ({:.3} s) is overhead (headers, repair, losses)",
        done - bytes as f64 / ideal
    );
    print_reorder(&trace, &conn_arrived);
    print_waits(&trace);
    print_last_blocks(&trace);
}

/// The five blocks completed last: when, by which path's symbol, and their symbols by path.
fn print_last_blocks(trace: &Trace) {
    let mut done: Vec<(f64, u8, u64)> =
        trace.blocks.iter().filter_map(|(&id, b)| b.complete_at().map(|(at, p)| (at, p, id))).collect();
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    for &(at, path, id) in done.iter().rev().take(5) {
        let b = &trace.blocks[&id];
        let on = |p: u8| b.received.iter().filter(|r| r.1 == p).count();
        println!(
            "  block {id}: {} sources, complete {at:.3} by path {path}'s symbol; received {} on path 0, {} on path 1, \
             the first at {:.3}",
            b.sources.len(),
            on(0),
            on(1),
            b.received.first().map_or(f64::NAN, |r| r.0)
        );
        let last_on = |p: u8| b.sent.iter().filter(|s| s.1 == p).map(|s| s.0).fold(f64::NAN, f64::max);
        println!(
            "    sent {} ({} repairs: {:?}); last sent on path 0 {:.3}, on path 1 {:.3}",
            b.sent.len(),
            b.repairs.len(),
            b.repairs.iter().map(|r| format!("{:.3}@{}", r.0, r.1)).collect::<Vec<_>>(),
            last_on(0),
            last_on(1)
        );
    }
}

/// Symbol bytes arrived but not yet read in order: the mean and the largest.
fn print_reorder(trace: &Trace, arrived: &[u64]) {
    let held: Vec<f64> =
        trace.delivered.iter().zip(arrived).map(|(d, &a)| a.saturating_sub(d.1) as f64).collect();
    let mean = held.iter().sum::<f64>() / held.len().max(1) as f64;
    let max = held.iter().cloned().fold(0.0, f64::max);
    println!("reorder: arrived but unread: mean {:.0} kB, max {:.0} kB", mean / 1e3, max / 1e3);
}

/// Blocks complete before an older one: how long they waited for it (sum and largest), by the
/// path that carried the older block's completing symbol.
fn print_waits(trace: &Trace) {
    let mut older: Option<(f64, u8)> = None;
    let mut waits: HashMap<u8, (u64, f64, f64)> = HashMap::new();
    let mut by_path: HashMap<u8, u64> = HashMap::new();
    for b in trace.blocks.values() {
        let Some((at, path)) = b.complete_at() else { continue };
        *by_path.entry(path).or_default() += 1;
        if let Some((o, op)) = older.filter(|o| o.0 > at) {
            let w = waits.entry(op).or_default();
            w.0 += 1;
            w.1 += o - at;
            w.2 = w.2.max(o - at);
        } else {
            older = Some((at, path));
        }
    }
    let mut paths: Vec<_> = by_path.into_iter().collect();
    paths.sort();
    println!("blocks completed by each path's symbol: {paths:?}");
    let mut waits: Vec<_> = waits.into_iter().collect();
    waits.sort_by_key(|w| w.0);
    for (p, (n, sum, max)) in waits {
        println!("  {n} blocks waited for an older one completed on path {p}: {sum:.3} s in all, at most {max:.3} s");
    }
}

/// A path's ramp by 100 ms: bytes sent (share of its link), and its window, bytes in flight and
/// pacing rate at the bin's end.
fn print_ramp(p: &PathTrace, rate: f64, ramp_end: f64) {
    let mut m_at = 0;
    for bin in 0..((ramp_end + 0.3) / 0.1) as usize {
        let (from, to) = (bin as f64 * 0.1, (bin + 1) as f64 * 0.1);
        let bytes: u64 = p.sent.iter().filter(|s| s.at >= from && s.at < to).map(|s| s.size).sum();
        while m_at + 1 < p.series.len() && p.series[m_at + 1].0 < to {
            m_at += 1;
        }
        let m = p.series.get(m_at).map(|s| s.1);
        println!(
            "    {from:.1}: sent {bytes:>7} B ({:>5.1} %), cwnd {:>7}, in flight {:>7}, pacing {:>5.1} Mbit/s, srtt {:>4} ms",
            bytes as f64 / (rate * 0.1) * 100.0,
            m.map_or(0, |m| m.cwnd),
            m.map_or(0, |m| m.bytes_in_flight),
            m.map_or(0.0, |m| m.pacing_rate as f64 * 8.0 / 1e6),
            m.map_or(0, |m| m.smoothed_rtt.as_millis())
        );
    }
}
