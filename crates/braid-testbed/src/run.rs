//! One contender over one scenario point: start the forwarders (time zero of the scenario's
//! outages and changes), the sink, the contender's helper commands and the sender; wait for the
//! last byte, the limit or Ctrl-C; collect the counters.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_sim::rng::derive_seed;
use braid_sim::Scenario;

use crate::bulk::{self, Progress};
use crate::contender::{expand, Contender};
use crate::forwarder::{self, Direction};
use crate::netns::{client_addr, server_addr, IfCounters, Testbed};
use crate::report::Row;
use crate::sys;

static PORT: AtomicU16 = AtomicU16::new(5001);

/// The steady-state goodput window starts this long after the first connect.
const STEADY_FROM: Duration = Duration::from_secs(2);

pub struct RunOptions {
    pub transfer: u64,
    pub limit: Duration,
    /// Where `ss -tinM` snapshots go.
    pub out_dir: std::path::PathBuf,
}

pub(crate) struct Helpers(pub(crate) Vec<Child>);

impl Drop for Helpers {
    /// Each helper leads its own process group (`ip netns exec` forks the command): end the whole
    /// group, politely first.
    fn drop(&mut self) {
        for c in &self.0 {
            // SAFETY: signalling a process group we created.
            unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGTERM) };
        }
        std::thread::sleep(Duration::from_millis(100));
        for c in &mut self.0 {
            // SAFETY: as above.
            unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL) };
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

/// Start both forwarders of every path; time zero of the scenario's outages and changes is now.
/// Set the flag to stop them; each handle returns its direction's statistics.
pub(crate) fn start_forwarders(
    tb: &Testbed,
    scenario: &Scenario,
) -> (Arc<AtomicBool>, Vec<std::thread::JoinHandle<forwarder::ForwardStats>>) {
    let fwd_stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let mut fwd = Vec::new();
    for (i, p) in scenario.paths.iter().enumerate() {
        let d = &tb.paths[i];
        fwd.push(forwarder::spawn(
            Direction {
                name: format!("{}>", p.name),
                input: d.client_tun.clone(),
                output: d.server_tun.clone(),
                config: p.forward.clone(),
                seed: derive_seed(scenario.seed, 2 * i as u64),
            },
            epoch,
            fwd_stop.clone(),
        ));
        fwd.push(forwarder::spawn(
            Direction {
                name: format!("{}<", p.name),
                input: d.server_tun.clone(),
                output: d.client_tun.clone(),
                config: p.reverse.clone(),
                seed: derive_seed(scenario.seed, 2 * i as u64 + 1),
            },
            epoch,
            fwd_stop.clone(),
        ));
    }
    (fwd_stop, fwd)
}

pub fn run_one(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    opts: &RunOptions,
) -> io::Result<Row> {
    let paths = scenario.paths.len();
    let load = sys::load_average();
    if let Some(cc) = contender.cc() {
        tb.set_default_cc(cc);
    }
    let before_c: Vec<IfCounters> = (0..paths).map(|i| tb.client_counters(i)).collect::<io::Result<_>>()?;
    let before_s: Vec<IfCounters> = (0..paths).map(|i| tb.server_counters(i)).collect::<io::Result<_>>()?;

    // Forwarders: time zero of the scenario is now.
    let (fwd_stop, fwd) = start_forwarders(tb, scenario);

    let port = PORT.fetch_add(1, Ordering::SeqCst);
    let progress = Progress::new(opts.transfer);
    let mptcp = matches!(contender, Contender::Mptcp { .. });
    let connections = if matches!(contender, Contender::MultiTcp { .. }) { paths } else { 1 };
    let (sink_addr, entry_addr) = match contender {
        Contender::External(_) => (
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, port.wrapping_add(10000)),
        ),
        _ => (SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port), SocketAddrV4::new(server_addr(0), port)),
    };
    let ready = Arc::new(AtomicBool::new(false));
    let sink = {
        let (progress, ready, total) = (progress.clone(), ready.clone(), opts.transfer);
        sys::spawn_in(&tb.server_ns, "sink", move || {
            bulk::sink(sink_addr, mptcp, connections, total, progress, ready)
        })
    };
    while !ready.load(Ordering::SeqCst) && !sink.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut helpers = Helpers(Vec::new());
    if let Contender::External(ext) = contender {
        let (s, e) = (sink_addr.to_string(), entry_addr.to_string());
        helpers.0.push(spawn_helper(&tb.server_ns, &expand(&ext.server_cmd, &s, &e, paths))?);
        helpers.0.push(spawn_helper(&tb.client_ns, &expand(&ext.client_cmd, &s, &e, paths))?);
        std::thread::sleep(Duration::from_millis(500));
    }
    let deadline = Instant::now() + opts.limit;
    let mut senders = Vec::new();
    for c in 0..connections {
        let (to, from) = match contender {
            Contender::MultiTcp { .. } => {
                (SocketAddrV4::new(server_addr(c), port), Some(SocketAddrV4::new(client_addr(c), 0)))
            }
            _ => (entry_addr, None),
        };
        let (cc, progress) = (contender.cc().map(str::to_owned), progress.clone());
        let is_mptcp = mptcp;
        // 2-TCP: chunks are claimed when the connection can send them (256 KB unsent at most).
        let lowat = (connections > 1).then_some(256 * 1024);
        senders.push(sys::spawn_in(&tb.client_ns, "sender", move || {
            bulk::send(to, from, is_mptcp, cc, lowat, deadline, progress)
        }));
    }

    let ss_file = opts.out_dir.join(format!(
        "ss-{}-{}{}.txt",
        scenario.name,
        contender.to_string().replace(':', "_"),
        if scenario.label.is_empty() {
            String::new()
        } else {
            format!("-{}", scenario.label.replace([' ', '='], "_"))
        }
    ));
    let mut ss_text: Option<String> = None;
    let started = Instant::now();
    let mut error = None;
    // (time, bytes) at the first sample 2 s after the first connect: the start of the
    // steady-state window (TESTBED.md's iperf3 numbers skip the first 2 s likewise).
    let mut mark_2s: Option<(Instant, u64)> = None;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        if mark_2s.is_none() {
            let t0 = *progress.started.lock().unwrap();
            if t0.is_some_and(|t0| t0.elapsed() >= STEADY_FROM) {
                mark_2s = Some((Instant::now(), progress.received.load(Ordering::SeqCst)));
            }
        }
        if progress.done.lock().unwrap().is_some() || Instant::now() >= deadline || sys::interrupted() {
            break;
        }
        if ss_text.is_none()
            && (progress.received.load(Ordering::Relaxed) > opts.transfer / 3
                || started.elapsed() > Duration::from_secs(2))
        {
            ss_text = Some(snapshot_ss(tb, &ss_file));
        }
        if senders.iter().all(|s| s.is_finished()) && progress.done.lock().unwrap().is_none() {
            // Every sender gave up (an error): nothing more will arrive.
            break;
        }
    }
    if ss_text.is_none() {
        ss_text = Some(snapshot_ss(tb, &ss_file));
    }
    progress.stop.store(true, Ordering::SeqCst);
    for s in senders {
        if let Ok(Err(e)) = s.join() {
            error.get_or_insert(format!("sender: {e}"));
        }
    }
    if let Ok(Err(e)) = sink.join() {
        error.get_or_insert(format!("sink: {e}"));
    }
    drop(helpers);
    fwd_stop.store(true, Ordering::SeqCst);
    let fwd_stats: Vec<_> = fwd.into_iter().map(|h| h.join().unwrap_or_default()).collect();
    let after_c: Vec<IfCounters> = (0..paths).map(|i| tb.client_counters(i)).collect::<io::Result<_>>()?;
    let after_s: Vec<IfCounters> = (0..paths).map(|i| tb.server_counters(i)).collect::<io::Result<_>>()?;

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
    let steady_mbps = mark_2s.and_then(|(t, b)| {
        let span = end.saturating_duration_since(t).as_secs_f64();
        (span >= 2.0).then(|| (received.saturating_sub(b)) as f64 * 8.0 / span / 1e6)
    });
    let mut tun_drops = 0;
    for i in 0..paths {
        tun_drops +=
            after_c[i].tx_dropped - before_c[i].tx_dropped + after_c[i].rx_dropped - before_c[i].rx_dropped;
        tun_drops +=
            after_s[i].tx_dropped - before_s[i].tx_dropped + after_s[i].rx_dropped - before_s[i].rx_dropped;
    }
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
        path_fwd_tx_bytes: (0..paths).map(|i| after_c[i].tx_bytes - before_c[i].tx_bytes).collect(),
        path_fwd_rx_bytes: (0..paths).map(|i| after_s[i].rx_bytes - before_s[i].rx_bytes).collect(),
        tun_drops,
        ss_check: ss_verdict(contender, &ss),
        ss_file: ss_file.display().to_string(),
        load,
        error,
        forwarders: fwd_stats,
        workload: "bulk".into(),
        web: None,
        video: None,
    })
}
