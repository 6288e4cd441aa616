//! One contender over one scenario point ([`run_one`]), or several flows at once sharing the
//! paths ([`run_mix`]): start the forwarders (time zero of the scenario's outages and changes),
//! each flow's sink, helper commands and sender; wait for the last byte, the limit or Ctrl-C;
//! collect the counters.

use std::io::{self, ErrorKind, Read};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_netem::rng::derive_seed;
use braid_sim::Scenario;

use crate::bulk;
use crate::contender::{expand, Contender};
use crate::forwarder::{self, Direction};
use crate::netns::{client_addr, server_addr, IfCounters, Testbed};
use crate::probe::{self, ProbeMetrics};
use crate::progress::Progress;
use crate::report::Row;
use crate::sys;

static PORT: AtomicU16 = AtomicU16::new(5001);
/// The longest an external server's UDP socket is waited for before its client starts.
const SERVER_BIND_WAIT: Duration = Duration::from_secs(5);

/// The steady-state goodput window starts this long after the first connect.
const STEADY_FROM: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct RunOptions {
    /// Bytes per run (per flow in a mix: ignored, flows send until the limit).
    pub transfer: u64,
    pub limit: Duration,
    /// Where `ss -tinM` snapshots go.
    pub out_dir: std::path::PathBuf,
    /// Latency under load: probe round trips on a second connection beside the transfer
    /// ([`crate::probe`]).
    pub probes: bool,
    /// Sample the bytes at the sink every [`TIMELINE_STEP`] into the row's `timeline`.
    pub timeline: bool,
}

/// The spacing of a row's `timeline` samples.
pub const TIMELINE_STEP: Duration = Duration::from_millis(100);

pub(crate) struct Helpers(pub(crate) Vec<Child>);

impl Drop for Helpers {
    /// Each helper leads its own process group (`ip netns exec` forks the command): end the whole
    /// group, politely first.
    fn drop(&mut self) {
        for c in &self.0 {
            sys::signal_group(c.id(), false);
        }
        std::thread::sleep(Duration::from_millis(100));
        for c in &mut self.0 {
            sys::signal_group(c.id(), true);
            let _ = c.wait();
        }
    }
}

pub(crate) fn spawn_helper(ns: &str, cmd: &str) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", cmd])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start `{cmd}`: {e}")))
}

fn snapshot_ss(tb: &Testbed, file: &std::path::Path) -> String {
    let out =
        crate::netns::ns_exec(&tb.client_ns, &["ss", "-tinM"]).unwrap_or_else(|e| format!("ss failed: {e}"));
    let _ = std::fs::write(file, &out);
    out
}

/// What `ss -tinM` must show for a kernel contender to count as the kernel's.
pub(crate) fn ss_verdict(contender: &Contender, ss: &str) -> String {
    let Some(cc) = contender.cc() else { return "n/a".into() };
    let has_cc = ss.contains(&format!(" {cc} ")) || ss.contains(&format!("\t{cc} "));
    let mptcp_ok =
        !matches!(contender, Contender::Mptcp { .. }) || ss.contains("mptcp") || ss.contains("MPTCP");
    match (has_cc, mptcp_ok) {
        (true, true) => "ok".into(),
        (false, _) => format!("{cc} not seen"),
        (_, false) => "no mptcp socket seen".into(),
    }
}

/// The forwarders of every path, both directions; time zero of the scenario is when they start.
pub(crate) struct Forwarders {
    /// The scenario's time zero (outages and scheduled changes count from it).
    pub(crate) epoch: Instant,
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<forwarder::ForwardStats>>,
}

impl Forwarders {
    pub(crate) fn start(tb: &Testbed, scenario: &Scenario) -> Forwarders {
        let stop = Arc::new(AtomicBool::new(false));
        let epoch = Instant::now();
        let mut handles = Vec::new();
        for (i, p) in scenario.paths.iter().enumerate() {
            let d = &tb.paths[i];
            for (fwd, name, input, output, config) in [
                (true, format!("{}>", p.name), &d.client_tun, &d.server_tun, &p.forward),
                (false, format!("{}<", p.name), &d.server_tun, &d.client_tun, &p.reverse),
            ] {
                handles.push(forwarder::spawn(
                    Direction {
                        name,
                        input: input.clone(),
                        output: output.clone(),
                        config: config.clone(),
                        seed: derive_seed(scenario.seed, 2 * i as u64 + u64::from(!fwd)),
                    },
                    epoch,
                    stop.clone(),
                ));
            }
        }
        Forwarders { epoch, stop, handles }
    }

    pub(crate) fn finish(self) -> Vec<forwarder::ForwardStats> {
        self.stop.store(true, Ordering::SeqCst);
        self.handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    }
}

/// Accept `connections` connections on `addr` (inside the server namespace: call from a thread
/// made by [`sys::spawn_in`]) and serve each on a thread of its own until `total` bytes arrived or
/// the run stops.
fn sink(
    addr: SocketAddrV4,
    mptcp: bool,
    connections: usize,
    total: u64,
    progress: Arc<Progress>,
    ready: Arc<AtomicBool>,
) -> io::Result<()> {
    let listener = sys::listen(addr, mptcp)?;
    ready.store(true, Ordering::SeqCst);
    let mut readers: Vec<std::thread::JoinHandle<()>> = Vec::new();
    while readers.len() < connections && !progress.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                let progress = progress.clone();
                readers.push(std::thread::spawn(move || serve(stream, total, &progress)));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(e),
        }
    }
    for r in readers {
        let _ = r.join();
    }
    Ok(())
}

/// One accepted connection: a latency probe's opens with [`probe::HELLO`] and is echoed; any
/// other is bulk data and is counted.
fn serve(mut stream: TcpStream, total: u64, progress: &Progress) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; 256 * 1024];
    while !progress.stopped() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if buf[0] == probe::HELLO => return probe::echo(stream, &buf[1..n], progress),
            Ok(n) => return bulk::receive(stream, buf, n, total, progress),
            Err(e) if sys::transient(&e) => {}
            Err(_) => break,
        }
    }
}

/// One flow: a sink in the server namespace, the contender's helpers, its sender(s).
struct Flow {
    contender: Contender,
    progress: Arc<Progress>,
    port: u16,
    sink: std::thread::JoinHandle<io::Result<()>>,
    senders: Vec<std::thread::JoinHandle<io::Result<()>>>,
    helpers: Helpers,
    probe: Option<std::thread::JoinHandle<io::Result<ProbeMetrics>>>,
    /// (time, bytes) at the start of the steady-state window.
    mark: Option<(Instant, u64)>,
    /// When an external contender's commands were spawned.
    spawned: Option<Instant>,
}

impl Flow {
    /// The sink and the helper commands (the caller waits for the helpers to come up).
    fn prepare(tb: &Testbed, paths: usize, contender: &Contender, opts: &RunOptions) -> io::Result<Flow> {
        let transfer = opts.transfer;
        let port = PORT.fetch_add(1, Ordering::SeqCst);
        let progress = Progress::new(transfer);
        let mptcp = matches!(contender, Contender::Mptcp { .. });
        let connections = if matches!(contender, Contender::MultiTcp { .. }) { paths } else { 1 };
        let connections = connections + usize::from(opts.probes);
        let sink_addr = match contender {
            Contender::External(_) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
            _ => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port),
        };
        let ready = Arc::new(AtomicBool::new(false));
        let sink = {
            let (progress, ready) = (progress.clone(), ready.clone());
            sys::spawn_in(&tb.server_ns, "sink", move || {
                sink(sink_addr, mptcp, connections, transfer, progress, ready)
            })
        };
        while !ready.load(Ordering::SeqCst) && !sink.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut helpers = Helpers(Vec::new());
        let spawned = matches!(contender, Contender::External(_)).then(Instant::now);
        if let Contender::External(ext) = contender {
            let (s, e) = (sink_addr.to_string(), Self::entry(contender, port).to_string());
            let own = port.wrapping_add(20000);
            helpers.0.push(spawn_helper(&tb.server_ns, &expand(&ext.server_cmd, &s, &e, own, paths))?);
            if ext.server_cmd.contains("{port}") {
                // The client's first datagram must find the server's socket: on a loaded machine
                // the server took longer to bind than the client to send, and the client, refused,
                // gave up (its row: goodput 0). A server that never binds is left to fail there.
                let _ = sys::wait_udp_bound(&tb.server_ns, own, SERVER_BIND_WAIT);
            }
            helpers.0.push(spawn_helper(&tb.client_ns, &expand(&ext.client_cmd, &s, &e, own, paths))?);
        }
        Ok(Flow {
            contender: contender.clone(),
            progress,
            port,
            sink,
            senders: Vec::new(),
            helpers,
            probe: None,
            mark: None,
            spawned,
        })
    }

    /// An external contender: waits until its entry port listens (`braid forward` opens it once
    /// its handshake with the server completed; on a long first path that takes more than any
    /// fixed grace), at most `limit`, and returns how long that took from spawning its commands.
    /// A contender that never listens is left to fail at the sender's connect, in its row.
    fn wait_external(&self, tb: &Testbed, limit: Duration) -> Option<Duration> {
        let spawned = self.spawned?;
        let entry = Self::entry(&self.contender, self.port);
        sys::wait_listen(&tb.client_ns, entry, limit).ok()?;
        Some(spawned.elapsed())
    }

    /// Where the sender connects.
    fn entry(contender: &Contender, port: u16) -> SocketAddrV4 {
        match contender {
            Contender::External(_) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, port.wrapping_add(10000)),
            c => SocketAddrV4::new(server_addr(c.tcp_path()), port),
        }
    }

    /// Start the sender connection(s), and the probe connection beside the first.
    fn start(&mut self, tb: &Testbed, paths: usize, deadline: Instant, probes: bool) {
        let multi = matches!(self.contender, Contender::MultiTcp { .. });
        let connections = if multi { paths } else { 1 };
        for c in 0..connections {
            let (to, from) = match &self.contender {
                Contender::MultiTcp { .. } => {
                    (SocketAddrV4::new(server_addr(c), self.port), Some(SocketAddrV4::new(client_addr(c), 0)))
                }
                // A single TCP connection on path i leaves from path i's address (policy routing).
                Contender::Tcp { .. } if self.contender.tcp_path() > 0 => {
                    let i = self.contender.tcp_path();
                    (Self::entry(&self.contender, self.port), Some(SocketAddrV4::new(client_addr(i), 0)))
                }
                _ => (Self::entry(&self.contender, self.port), None),
            };
            let (cc, progress) = (self.contender.cc().map(str::to_owned), self.progress.clone());
            let is_mptcp = matches!(self.contender, Contender::Mptcp { .. });
            // 2-TCP: chunks are claimed when the connection can send them (256 KB unsent at most).
            let lowat = (connections > 1).then_some(256 * 1024);
            if probes && c == 0 {
                let (cc, progress) = (cc.clone(), progress.clone());
                self.probe = Some(sys::spawn_in(&tb.client_ns, "probe", move || {
                    probe::run(to, from, is_mptcp, cc, deadline, progress)
                }));
            }
            self.senders.push(sys::spawn_in(&tb.client_ns, "sender", move || {
                bulk::send(to, from, is_mptcp, cc, lowat, deadline, progress)
            }));
        }
    }

    fn received(&self) -> u64 {
        self.progress.received.load(Ordering::SeqCst)
    }

    fn done(&self) -> bool {
        self.progress.done.lock().unwrap().is_some()
    }

    /// Every sender gave up (an error) before the end: nothing more will arrive.
    fn failed(&self) -> bool {
        !self.done() && self.senders.iter().all(|s| s.is_finished())
    }

    /// Take the steady-state mark once `from` has passed since the first connect.
    fn maybe_mark(&mut self, from: Duration) {
        if self.mark.is_none() {
            let t0 = *self.progress.started.lock().unwrap();
            if t0.is_some_and(|t0| t0.elapsed() >= from) {
                self.mark = Some((Instant::now(), self.received()));
            }
        }
    }

    /// Stop the flow and join its threads and helpers: the first error, if any, and the probes'
    /// metrics. After a complete transfer the probes first get their answers (the probe thread
    /// ends by itself within a second); otherwise everything stops now.
    fn stop(&mut self) -> (Option<String>, Option<ProbeMetrics>) {
        let mut error = None;
        if !self.done() {
            self.progress.stop.store(true, Ordering::SeqCst);
        }
        let probe = match self.probe.take().map(|p| p.join()) {
            Some(Ok(Ok(m))) => Some(m),
            Some(Ok(Err(e))) => {
                error = Some(format!("probe: {e}"));
                None
            }
            Some(Err(_)) => {
                error = Some("probe: the thread panicked".to_string());
                None
            }
            None => None,
        };
        self.progress.stop.store(true, Ordering::SeqCst);
        for s in self.senders.drain(..) {
            if let Ok(Err(e)) = s.join() {
                error.get_or_insert(format!("sender: {e}"));
            }
        }
        let sink = std::mem::replace(&mut self.sink, std::thread::spawn(|| Ok(())));
        if let Ok(Err(e)) = sink.join() {
            error.get_or_insert(format!("sink: {e}"));
        }
        self.helpers.stop();
        (error, probe)
    }
}

impl Helpers {
    fn stop(&mut self) {
        let all = std::mem::take(&mut self.0);
        drop(Helpers(all));
    }
}

/// Each path's interface counters: (client side, server side).
pub(crate) type PathCounters = (Vec<IfCounters>, Vec<IfCounters>);

pub(crate) fn counters(tb: &Testbed, paths: usize) -> io::Result<PathCounters> {
    Ok((
        (0..paths).map(|i| tb.client_counters(i)).collect::<io::Result<_>>()?,
        (0..paths).map(|i| tb.server_counters(i)).collect::<io::Result<_>>()?,
    ))
}

/// What the interface counters say about a run: (bytes into each path at the client, bytes out
/// of each path at the server, TUN drops).
pub(crate) fn counter_delta(before: &PathCounters, after: &PathCounters) -> (Vec<u64>, Vec<u64>, u64) {
    let ((bc, bs), (ac, as_)) = (before, after);
    let mut drops = 0;
    for i in 0..bc.len() {
        drops += ac[i].tx_dropped - bc[i].tx_dropped + ac[i].rx_dropped - bc[i].rx_dropped;
        drops += as_[i].tx_dropped - bs[i].tx_dropped + as_[i].rx_dropped - bs[i].rx_dropped;
    }
    (
        (0..bc.len()).map(|i| ac[i].tx_bytes - bc[i].tx_bytes).collect(),
        (0..bc.len()).map(|i| as_[i].rx_bytes - bs[i].rx_bytes).collect(),
        drops,
    )
}

fn ss_file(opts: &RunOptions, scenario: &Scenario, what: &str) -> std::path::PathBuf {
    opts.out_dir.join(format!(
        "ss-{}-{}{}.txt",
        scenario.name,
        what.replace([':', ','], "_"),
        if scenario.label.is_empty() {
            String::new()
        } else {
            format!("-{}", scenario.label.replace([' ', '='], "_"))
        }
    ))
}

/// What every run does first: note the load average, set the contender's congestion control
/// as the default, read the interface counters and start the forwarders (time zero now).
/// Returns (load average, counters before, forwarders).
pub(crate) fn begin_measuring(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
) -> io::Result<(String, PathCounters, Forwarders)> {
    let load = sys::load_average();
    if let Some(cc) = contender.cc() {
        tb.set_default_cc(cc);
    }
    let before = counters(tb, scenario.paths.len())?;
    let fwd = Forwarders::start(tb, scenario);
    Ok((load, before, fwd))
}

pub fn run_one(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    opts: &RunOptions,
) -> io::Result<Row> {
    let paths = scenario.paths.len();
    let (load, before, fwd) = begin_measuring(tb, scenario, contender)?;
    let mut flow = Flow::prepare(tb, paths, contender, opts)?;
    let setup = flow.wait_external(tb, opts.limit);
    let deadline = Instant::now() + opts.limit;
    flow.start(tb, paths, deadline, opts.probes);

    let ss_file = ss_file(opts, scenario, &contender.to_string());
    let mut ss_text: Option<String> = None;
    let started = Instant::now();
    let mut timeline = Vec::new();
    let mut next_sample = started;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        // Times from the links' time zero, where the scenario's outages and changes count from.
        if opts.timeline && Instant::now() >= next_sample {
            let at = fwd.epoch.elapsed().as_secs_f64();
            timeline.push(((at * 1e3).round() / 1e3, flow.received()));
            next_sample += TIMELINE_STEP;
        }
        // (time, bytes) at the first sample 2 s after the first connect: the start of the
        // steady-state window (TESTBED.md's iperf3 numbers skip the first 2 s likewise).
        flow.maybe_mark(STEADY_FROM);
        if flow.done() || Instant::now() >= deadline || sys::interrupted() {
            break;
        }
        if ss_text.is_none()
            && (flow.received() > opts.transfer / 3 || started.elapsed() > Duration::from_secs(2))
        {
            ss_text = Some(snapshot_ss(tb, &ss_file));
        }
        if flow.failed() {
            break;
        }
    }
    if opts.timeline {
        timeline.push(((fwd.epoch.elapsed().as_secs_f64() * 1e3).round() / 1e3, flow.received()));
    }
    if ss_text.is_none() {
        ss_text = Some(snapshot_ss(tb, &ss_file));
    }
    let (error, probe) = flow.stop();
    let fwd_epoch = fwd.epoch;
    let fwd_stats = fwd.finish();
    let after = counters(tb, paths)?;
    let (tx, rx, tun_drops) = counter_delta(&before, &after);

    let progress = &flow.progress;
    let t0 = progress.started.lock().unwrap().unwrap_or(started);
    let done = *progress.done.lock().unwrap();
    let received = progress.received.load(Ordering::SeqCst).min(opts.transfer);
    let elapsed = done.unwrap_or_else(Instant::now).saturating_duration_since(t0);
    let completion = done.map(|d| d.saturating_duration_since(t0).as_secs_f64());
    let secs = elapsed.as_secs_f64().max(1e-6);
    let ideal_bps = scenario.ideal_goodput_bps(elapsed.max(Duration::from_millis(1)));
    let goodput_bps = received as f64 * 8.0 / secs;
    let end = done.unwrap_or_else(Instant::now);
    // Only when the window is at least 2 s long (a transfer of 4 s or more).
    let steady_mbps = flow.mark.and_then(|(t, b)| {
        let span = end.saturating_duration_since(t).as_secs_f64();
        (span >= 2.0).then(|| (received.saturating_sub(b)) as f64 * 8.0 / span / 1e6)
    });
    let ss = ss_text.unwrap_or_default();
    Ok(Row {
        scenario: scenario.name.clone(),
        label: scenario.label.clone(),
        seed: scenario.seed,
        contender: contender.to_string(),
        transfer_bytes: opts.transfer,
        received_bytes: received,
        completion_s: completion,
        elapsed_s: secs,
        goodput_mbps: goodput_bps / 1e6,
        steady_mbps,
        ideal_mbps: ideal_bps / 1e6,
        ratio: if ideal_bps > 0.0 { goodput_bps / ideal_bps } else { 0.0 },
        path_fwd_tx_bytes: tx,
        path_fwd_rx_bytes: rx,
        tun_drops,
        ss_check: ss_verdict(contender, &ss),
        ss_file: ss_file.display().to_string(),
        load,
        error,
        forwarders: fwd_stats,
        workload: if opts.probes { "latency" } else { "bulk" }.into(),
        probe,
        connect_s: opts.timeline.then(|| t0.saturating_duration_since(fwd_epoch).as_secs_f64()),
        setup_s: setup.map(|d| d.as_secs_f64()),
        timeline,
        ..Row::default()
    })
}

/// Fairness window: per-flow goodput is measured from this share of the limit to its end (the
/// flows' slow starts left out).
const MIX_WARMUP: Duration = Duration::from_secs(5);

/// Several flows at once over the same paths (fairness on a shared bottleneck): every flow
/// starts together and sends until the limit. A row per flow: `steady_mbps` is its goodput over
/// [5 s, limit] (the whole run when the limit is shorter than 10 s), `ratio` that goodput over
/// its fair share (the ideal / number of flows), `jain` Jain's fairness index of the flows'
/// window goodputs, (Σx)² / (n Σx²) — R. Jain, D. Chiu, W. Hawe, DEC-TR-301 (1984), Eq. (1).
/// Kernel flows set their congestion control per socket, so cubic and bbr flows can share a
/// run; the namespaces' default is left as it is.
pub fn run_mix(
    tb: &Testbed,
    scenario: &Scenario,
    mix: &[Contender],
    mix_name: &str,
    opts: &RunOptions,
) -> io::Result<Vec<Row>> {
    let paths = scenario.paths.len();
    let load = sys::load_average();
    let before = counters(tb, paths)?;
    let fwd = Forwarders::start(tb, scenario);
    // Unbounded in practice: the limit ends the run.
    let unbounded = RunOptions { transfer: u64::MAX / 4, probes: false, ..opts.clone() };
    let mut flows = Vec::new();
    for c in mix {
        flows.push(Flow::prepare(tb, paths, c, &unbounded)?);
    }
    for f in &flows {
        f.wait_external(tb, opts.limit);
    }
    let started = Instant::now();
    let deadline = started + opts.limit;
    for f in &mut flows {
        f.start(tb, paths, deadline, false);
    }
    let warmup = if opts.limit >= 2 * MIX_WARMUP { MIX_WARMUP } else { Duration::ZERO };
    let mut window_start: Option<(Instant, Vec<u64>)> = None;
    let ss_file = ss_file(opts, scenario, &format!("mix-{mix_name}"));
    let mut ss_text: Option<String> = None;
    while Instant::now() < deadline && !sys::interrupted() {
        std::thread::sleep(Duration::from_millis(10));
        if window_start.is_none() && started.elapsed() >= warmup {
            window_start = Some((Instant::now(), flows.iter().map(Flow::received).collect()));
        }
        if ss_text.is_none() && started.elapsed() > Duration::from_secs(2) {
            ss_text = Some(snapshot_ss(tb, &ss_file));
        }
        if flows.iter().all(Flow::failed) {
            break;
        }
    }
    let end = Instant::now();
    let end_bytes: Vec<u64> = flows.iter().map(Flow::received).collect();
    let ss = ss_text.unwrap_or_else(|| snapshot_ss(tb, &ss_file));
    let errors: Vec<Option<String>> = flows.iter_mut().map(|f| f.stop().0).collect();
    let fwd_stats = fwd.finish();
    let after = counters(tb, paths)?;
    let (tx, rx, tun_drops) = counter_delta(&before, &after);

    let (w_at, w_bytes) = window_start.unwrap_or((started, vec![0; flows.len()]));
    let span = end.saturating_duration_since(w_at).as_secs_f64().max(1e-6);
    let window: Vec<f64> =
        end_bytes.iter().zip(&w_bytes).map(|(e, b)| e.saturating_sub(*b) as f64 * 8.0 / span / 1e6).collect();
    let jain = jain_index(&window);
    let elapsed = end.saturating_duration_since(started);
    let ideal_bps = scenario.ideal_goodput_bps(elapsed.max(Duration::from_millis(1)));
    let share = ideal_bps / 1e6 / flows.len().max(1) as f64;
    let rows = flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let t0 = f.progress.started.lock().unwrap().unwrap_or(started);
            let secs = end.saturating_duration_since(t0).as_secs_f64().max(1e-6);
            Row {
                scenario: scenario.name.clone(),
                label: scenario.label.clone(),
                seed: scenario.seed,
                contender: f.contender.to_string(),
                transfer_bytes: 0,
                received_bytes: end_bytes[i],
                completion_s: None,
                elapsed_s: secs,
                goodput_mbps: end_bytes[i] as f64 * 8.0 / secs / 1e6,
                steady_mbps: Some(window[i]),
                ideal_mbps: ideal_bps / 1e6,
                ratio: if share > 0.0 { window[i] / share } else { 0.0 },
                path_fwd_tx_bytes: tx.clone(),
                path_fwd_rx_bytes: rx.clone(),
                tun_drops,
                ss_check: ss_verdict(&f.contender, &ss),
                ss_file: ss_file.display().to_string(),
                load: load.clone(),
                error: errors[i].clone(),
                forwarders: if i == 0 { fwd_stats.clone() } else { Vec::new() },
                mix: mix_name.to_owned(),
                flow: i,
                jain,
                workload: "bulk".into(),
                ..Row::default()
            }
        })
        .collect();
    Ok(rows)
}

/// Jain's fairness index (Σx)² / (n Σx²): 1 when all are equal, 1/n when one takes everything.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && squares > 0.0).then(|| sum * sum / (x.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        let one = jain_index(&[8.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((one - 0.25).abs() < 1e-12, "{one}");
        let two = jain_index(&[3.0, 1.0]).unwrap();
        assert!((two - 0.8).abs() < 1e-12, "16 / (2 × 10) = {two}");
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }
}
