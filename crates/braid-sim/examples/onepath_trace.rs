//! Where a one-path bulk transfer's time goes (docs/DEVIATIONS.md, "Whole-transfer goodput"):
//! runs braid's default mode over the sweep points of a one-path scenario whose label is the
//! filter (or, if none is, contains it), with the sender's packet trace on
//! (`Connection::enable_trace`). The completion time splits into the wire bytes at the link's
//! rate and the link's idle time (a FIFO at the link's rate fed at the trace's send times), and
//! the idle time into the handshake, the ramp (until a 100 ms window first delivers 90 % of the
//! link at the receiver), steady state and the tail (last new source sent → last byte read).
//! Also printed: the bytes by kind, the losses by trigger, the time the window or the pacer held
//! the sender below the link, the ramp and the tail bin by bin, and every window drop of 10 % or
//! more; and every repair symbol by when it left (before any loss of its block was declared:
//! a margin; after: reactive; after the last new source: the tail's) and its fate at the
//! receiver (lost, useful: its block still lacked symbols, wasted: it arrived after):
//! `cargo run --release -p braid-sim --example onepath_trace -- scenarios/ctcp-table4-mtu1500.toml "seed=1 path.wifi.loss=0.1"`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use braid_proto::conn::ConnectionConfig;
use braid_proto::trace::{LossTrigger, PathMetrics, TraceEvent, TraceFrame};
use braid_proto::Instant;
use braid_sim::{BulkFlow, LinkStats, Scenario};

mod trace_common;
use trace_common::{busy_time, secs};

/// One sent packet, as the trace shows it.
struct Sent {
    at: f64,
    size: u64,
    source: u64,
    repair: u64,
    copy: u64,
    new_source: bool,
    number: u64,
    /// Its symbols: (block, index, repair), and its other frames but padding, as the trace
    /// names them.
    symbols: Vec<(u64, u32, bool)>,
    others: Vec<String>,
}

/// What one run's trace holds, times in seconds.
#[derive(Default)]
struct Trace {
    sent: Vec<Sent>,
    /// Sources already sent once: (block, index).
    seen: HashSet<(u64, u32)>,
    losses: Vec<(f64, LossTrigger)>,
    /// The path's state after each change, and each window drop of 10 % or more (from, to).
    series: Vec<(f64, PathMetrics)>,
    cuts: Vec<(f64, u64, u64)>,
    /// Bytes read at the receiver, once a millisecond.
    delivered: Vec<(f64, u64)>,
    established: Option<f64>,
    done: f64,
    /// Time (after the handshake) the window was full, and the pacer below the link.
    cwnd_limited: f64,
    pacing_below: f64,
    link: Option<LinkStats>,
    /// Each block as both ends saw it, and each sent packet's blocks (for its loss).
    blocks: BTreeMap<u64, Block>,
    packet_blocks: HashMap<u64, Vec<u64>>,
    /// Packet number → when it arrived at the receiver.
    arrived: HashMap<u64, f64>,
    /// The receiver's packets: when, and their frames but padding.
    replies: Vec<(f64, Vec<String>)>,
}

/// One block of the transfer (times in seconds).
#[derive(Default)]
struct Block {
    sources: HashSet<u32>,
    /// Repairs sent: (at, packet number).
    repairs: Vec<(f64, u64)>,
    first_loss_declared: Option<f64>,
    /// Arrival times of its symbols at the receiver, in order.
    received: Vec<f64>,
}

impl Block {
    /// When the block had as many symbols as sources (RLNC: every symbol innovative until then).
    fn complete_at(&self) -> Option<f64> {
        let n = self.sources.len();
        (n > 0 && self.received.len() >= n).then(|| self.received[n - 1])
    }
}

/// Repair symbols: [margin, reactive, tail] × [lost, useful, wasted].
#[derive(Default)]
struct RepairFates([[u64; 3]; 3]);

#[derive(Default)]
struct Totals {
    packets: u64,
    bytes: u64,
    source: u64,
    repair: u64,
    copies: u64,
    other: u64,
}

fn main() {
    trace_common::run_matching("onepath_trace", run);
}

impl Trace {
    fn on_event(&mut self, e: TraceEvent) {
        match e {
            TraceEvent::PacketSent(p) => {
                let mut s = Sent {
                    at: secs(p.at),
                    size: p.size as u64,
                    source: 0,
                    repair: 0,
                    copy: 0,
                    new_source: false,
                    number: p.number,
                    symbols: Vec::new(),
                    others: Vec::new(),
                };
                for f in &p.frames {
                    if !matches!(f, TraceFrame::Symbol { .. } | TraceFrame::Padding { .. }) {
                        s.others.push(format!("{f:?}"));
                    }
                    if let TraceFrame::Symbol { block, index, repair, length } = *f {
                        s.symbols.push((block, index, repair));
                        let b = self.blocks.entry(block).or_default();
                        if repair {
                            b.repairs.push((s.at, p.number));
                        } else {
                            b.sources.insert(index);
                        }
                        self.packet_blocks.entry(p.number).or_default().push(block);
                        if repair {
                            s.repair += length as u64;
                        } else if self.seen.insert((block, index)) {
                            s.source += length as u64;
                            s.new_source = true;
                        } else {
                            s.copy += length as u64;
                        }
                    }
                }
                self.sent.push(s);
            }
            TraceEvent::PacketLost { at, trigger, number, .. } => {
                self.losses.push((secs(at), trigger));
                for block in self.packet_blocks.get(&number).into_iter().flatten() {
                    self.blocks.entry(*block).or_default().first_loss_declared.get_or_insert(secs(at));
                }
            }
            TraceEvent::Metrics { at, metrics: m, .. } => {
                if let Some(&(_, old)) = self.series.last() {
                    if m.cwnd < old.cwnd * 9 / 10 {
                        self.cuts.push((secs(at), old.cwnd, m.cwnd));
                    }
                }
                self.series.push((secs(at), m));
            }
            _ => {}
        }
    }

    /// Runs `scenario`'s first flow to its end, a millisecond at a time, draining the trace.
    fn collect(scenario: &Scenario, rate: f64) -> Trace {
        let bytes = scenario.transfer.expect("transfer");
        let built = scenario
            .build(|cx| {
                let config = ConnectionConfig {
                    paths: cx.paths as u8,
                    max_plpmtu: cx.scenario.max_mtu().unwrap_or(1280),
                    ..ConnectionConfig::default()
                };
                (BulkFlow::sender(config.clone(), cx.seed, bytes, cx.start), BulkFlow::receiver(config))
            })
            .expect("network");
        let (mut net, (client, server)) = (built.network, built.flows[0]);
        net.endpoint_mut(client).connection_mut().enable_trace();
        net.endpoint_mut(server).connection_mut().enable_trace();
        let step = Duration::from_millis(1);
        let mut now = Instant::ZERO;
        let mut trace = Trace::default();
        while net.endpoint(server).done_at().is_none() && now < built.limit {
            now += step;
            net.run_until(now);
            let conn = net.endpoint_mut(client).connection_mut();
            if trace.established.is_none() && conn.is_established() {
                trace.established = Some(secs(now));
            }
            while let Some(e) = conn.poll_trace() {
                trace.on_event(e);
            }
            while let Some(e) = net.endpoint_mut(server).connection_mut().poll_trace() {
                match e {
                    TraceEvent::PacketReceived(p) => trace.on_received(secs(p.at), p.number, &p.frames),
                    TraceEvent::PacketSent(p) => trace.replies.push((
                        secs(p.at),
                        p.frames
                            .iter()
                            .filter(|f| !matches!(f, TraceFrame::Padding { .. }))
                            .map(|f| format!("{f:?}"))
                            .collect(),
                    )),
                    _ => {}
                }
            }
            if let (Some(&(_, m)), Some(_)) = (trace.series.last(), trace.established) {
                if m.bytes_in_flight + 1500 > m.cwnd {
                    trace.cwnd_limited += step.as_secs_f64();
                }
                if (m.pacing_rate as f64) < rate {
                    trace.pacing_below += step.as_secs_f64();
                }
            }
            trace.delivered.push((secs(now), net.endpoint(server).received()));
        }
        trace.done = net.endpoint(server).done_at().map_or(f64::NAN, secs);
        trace.link = net.links().find(|(_, name, _)| name.ends_with("fwd")).map(|(_, _, l)| *l.stats());
        trace
    }

    fn on_received(&mut self, at: f64, number: u64, frames: &[TraceFrame]) {
        self.arrived.insert(number, at);
        for f in frames {
            if let TraceFrame::Symbol { block, .. } = *f {
                self.blocks.entry(block).or_default().received.push(at);
            }
        }
    }

    /// Every repair's kind and fate (see [`RepairFates`]), and the source symbols lost on the
    /// link (what repair had to replace).
    fn repair_fates(&self, last_new: f64) -> (RepairFates, u64) {
        let (mut fates, mut sources_lost) = (RepairFates::default(), 0);
        for b in self.blocks.values() {
            let complete = b.complete_at();
            let repairs_arrived = b.repairs.iter().filter(|r| self.arrived.contains_key(&r.1)).count();
            sources_lost += (b.sources.len() + repairs_arrived).saturating_sub(b.received.len()) as u64;
            for &(at, number) in &b.repairs {
                let kind = if at >= last_new {
                    2
                } else {
                    usize::from(b.first_loss_declared.is_some_and(|l| l <= at))
                };
                let fate = match self.arrived.get(&number) {
                    None => 0,
                    Some(&a) if complete.is_none_or(|c| a <= c) => 1,
                    Some(_) => 2,
                };
                fates.0[kind][fate] += 1;
            }
        }
        (fates, sources_lost)
    }

    /// The first 100 ms window that delivered 90 % of the link's rate begins here.
    fn ramp_end(&self, rate: f64) -> f64 {
        self.delivered
            .windows(100)
            .find(|w| (w[99].1 - w[0].1) as f64 >= 0.9 * rate * 0.099)
            .map_or(self.done, |w| w[0].0)
    }

    fn last_new_source(&self) -> f64 {
        self.sent.iter().filter(|p| p.new_source).map(|p| p.at).fold(0.0, f64::max)
    }

    fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for p in &self.sent {
            t.packets += 1;
            t.bytes += p.size;
            t.source += p.source;
            t.repair += p.repair;
            t.copies += p.copy;
            t.other += p.size - p.source - p.repair - p.copy;
        }
        t
    }
}

fn run(scenario: &Scenario) {
    let bytes = scenario.transfer.expect("transfer");
    let link = &scenario.paths[0].forward;
    let rate = link.rate_bps as f64 / 8.0;
    let trace = Trace::collect(scenario, rate);
    let (done, t) = (trace.done, trace.totals());
    println!("== {} (seed {})", scenario.title(), scenario.seed);
    println!(
        "done {done:.3} s: {:.2} Mbit/s = {:.3} × (1 − p) × rate",
        bytes as f64 * 8.0 / done / 1e6,
        bytes as f64 / done / rate / (1.0 - link.loss.mean_loss())
    );
    println!(
        "wire: {} packets, {} B ({} B at the link), source {} B, repair {} B, copies {} B, \
         headers+frames+probes {} B ({:.1} B/packet)",
        t.packets,
        t.bytes,
        trace.link.map_or(0, |s| s.sent_bytes),
        t.source,
        t.repair,
        t.copies,
        t.other,
        t.other as f64 / t.packets as f64
    );
    if let Some(s) = trace.link {
        println!(
            "link: dropped by queue {}, lost {}, max queue {} B",
            s.dropped_queue, s.lost, s.max_queue_bytes
        );
    }
    let (established, ramp_end, last_new) =
        (trace.established.unwrap_or(0.0), trace.ramp_end(rate), trace.last_new_source());
    let phases = [
        ("handshake", 0.0, established),
        ("ramp", established, ramp_end),
        ("steady", ramp_end, last_new),
        ("tail", last_new, done),
    ];
    println!(
        "phase      from    to      span    link idle  (wire bytes at link rate = {:.3} s)",
        t.bytes as f64 / rate
    );
    for (name, from, to) in phases {
        let busy = busy_time(trace.sent.iter().map(|p| (p.at, p.size)), rate, from, to);
        println!("{name:<10} {from:>6.3}  {to:>6.3}  {:>6.3}  {:>6.3}", to - from, (to - from) - busy);
    }
    let by = |k: LossTrigger| trace.losses.iter().filter(|l| l.1 == k).count();
    println!(
        "losses declared: {} (ack {}, timer {}, probe timeout {}), {} in the tail",
        trace.losses.len(),
        by(LossTrigger::Ack),
        by(LossTrigger::Timer),
        by(LossTrigger::ProbeTimeout),
        trace.losses.iter().filter(|l| l.0 >= last_new).count()
    );
    println!(
        "after the handshake: cwnd-limited {:.3} s, pacing below the link {:.3} s",
        trace.cwnd_limited, trace.pacing_below
    );
    let (fates, sources_lost) = trace.repair_fates(last_new);
    println!("source symbols lost on the link: {sources_lost}; repair symbols lost / useful / wasted:");
    for (name, [lost, useful, wasted]) in ["margin", "reactive", "tail"].iter().zip(fates.0) {
        println!("  {name:<9} {:>5}: {lost:>4} / {useful:>5} / {wasted:>4}", lost + useful + wasted);
    }
    let last_complete = trace.blocks.values().filter_map(Block::complete_at).fold(0.0, f64::max);
    println!(
        "tail: last new source {last_new:.3}, last block complete {last_complete:.3} ({:.3} s after)",
        last_complete - last_new
    );
    print_late_blocks(&trace, last_new);
    print_ramp(&trace, rate, ramp_end);
    print_tail(&trace, last_new);
    print_stall(&trace, last_new);
    for &(at, from, to) in &trace.cuts {
        println!("  window cut at {at:.3}: {from} → {to}");
    }
}

/// The ramp by 25 ms: bytes sent, and the window and pacing rate at the bin's end.
fn print_ramp(trace: &Trace, rate: f64, ramp_end: f64) {
    let mut m_at = 0;
    for bin in 0..((ramp_end + 0.3) / 0.025) as usize {
        let (from, to) = (bin as f64 * 0.025, (bin + 1) as f64 * 0.025);
        let bytes: u64 = trace.sent.iter().filter(|p| p.at >= from && p.at < to).map(|p| p.size).sum();
        while m_at + 1 < trace.series.len() && trace.series[m_at + 1].0 < to {
            m_at += 1;
        }
        let m = trace.series.get(m_at).map(|s| s.1);
        println!(
            "  {from:.3}: sent {bytes:>6} B ({:>5.1} % of the link), cwnd {:>7}, in flight {:>7}, pacing {:>5.1} Mbit/s",
            bytes as f64 / (rate * 0.025) * 100.0,
            m.map_or(0, |m| m.cwnd),
            m.map_or(0, |m| m.bytes_in_flight),
            m.map_or(0.0, |m| m.pacing_rate as f64 * 8.0 / 1e6)
        );
    }
}

/// The tail by 10 ms, from 200 ms before the last new source: new source, repair and other
/// packets sent, losses declared.
fn print_tail(trace: &Trace, last_new: f64) {
    let start = (last_new - 0.2).max(0.0);
    for bin in 0..((trace.done - start) / 0.01).ceil() as usize {
        let (from, to) = (start + bin as f64 * 0.01, start + (bin + 1) as f64 * 0.01);
        let in_bin: Vec<&Sent> = trace.sent.iter().filter(|p| p.at >= from && p.at < to).collect();
        println!(
            "  tail {from:.3}: new {:>3}, repair {:>3}, other {:>3}, lost {:>3}",
            in_bin.iter().filter(|p| p.new_source).count(),
            in_bin.iter().filter(|p| p.repair > 0).count(),
            in_bin.iter().filter(|p| !p.new_source && p.repair == 0).count(),
            trace.losses.iter().filter(|l| l.0 >= from && l.0 < to).count()
        );
    }
}

/// The blocks that completed more than 60 ms after the last new source (about the one-way
/// trip): their symbols lost, the repairs they got after it (and how many of those were lost),
/// when their first loss was declared and when they completed.
fn print_late_blocks(trace: &Trace, last_new: f64) {
    for (id, b) in &trace.blocks {
        let complete = b.complete_at().unwrap_or(f64::NAN);
        if complete.is_nan() || complete - last_new > 0.06 {
            let sent = b.sources.len() + b.repairs.len();
            let late: Vec<_> = b.repairs.iter().filter(|r| r.0 >= last_new).collect();
            println!(
                "  late block {id}: {} sources, {} of {sent} symbols lost, {} repairs after the last source \
                 ({} lost, first at {:.3}), first loss declared {:.3}, complete {complete:.3}",
                b.sources.len(),
                sent - b.received.len(),
                late.len(),
                late.iter().filter(|r| !trace.arrived.contains_key(&r.1)).count(),
                late.first().map_or(f64::NAN, |r| r.0),
                b.first_loss_declared.unwrap_or(f64::NAN),
            );
        }
    }
}

/// A tail longer than 300 ms (a stall): every packet sent after the last new source, its
/// symbols and its fate, and every loss declared then with its trigger.
fn print_stall(trace: &Trace, last_new: f64) {
    if trace.done - last_new < 0.3 {
        return;
    }
    for p in trace.sent.iter().filter(|p| p.at >= last_new) {
        let fate = trace.arrived.get(&p.number).map_or("lost".to_string(), |a| format!("arrived {a:.3}"));
        let symbols: Vec<String> =
            p.symbols.iter().map(|(b, i, r)| format!("{b}:{i}{}", if *r { "r" } else { "" })).collect();
        println!(
            "  stall {:.3}: packet {} ({} B) [{}] {} {fate}",
            p.at,
            p.number,
            p.size,
            symbols.join(" "),
            p.others.join(" ")
        );
    }
    for (at, frames) in trace.replies.iter().filter(|r| r.0 >= last_new) {
        println!("  stall {at:.3}: the receiver sent {}", frames.join(" "));
    }
    for (at, trigger) in trace.losses.iter().filter(|l| l.0 >= last_new) {
        println!("  stall {at:.3}: loss declared by {trigger:?}");
    }
}
