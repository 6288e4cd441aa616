//! Command line: `run`, `check`, `list`, `cleanup`.

use std::path::PathBuf;
use std::time::Duration;

use braid_sim::Scenario;

use crate::contender::{Contender, External};
use crate::netns::{cleanup_stale, Testbed};
use crate::report::{self, Row};
use crate::run::{run_mix, run_one, RunOptions};
use crate::workload::{self, Workload};
use crate::{check, sys};
use crate::{tun, video, web};

const USAGE: &str = "\
braid-testbed — network-namespace testbed (Linux, root)

USAGE:
  braid-testbed run <scenario.toml>... [options]
      --contenders a,b,..   cubic, bbr, reno, mptcp-<cc>, 2tcp-<cc>, <cc>@<path> or <cc>@best (one
                            TCP connection on that path / the best path) (default: cubic,bbr on one
                            path; mptcp-cubic,mptcp-bbr,2tcp-bbr on several)
      --ext NAME --server-cmd CMD --client-cmd CMD
                            add an external contender (placeholders {sink} {entry} {server0} {client0} ..
                            {port} = a port of the run's own, {self} = this binary); repeatable: each
                            --ext takes the --server-cmd and --client-cmd after it
      --mix NAME:N,NAME:N   run these flows at once over the same paths (kernel names, or the NAME
                            of an --ext) until the limit, and report each flow's goodput over
                            [5 s, limit] and Jain's index; repeatable; with --mix and no
                            --contenders only the mixes run
      --transfer SIZE       bytes per run (default: the scenario's `transfer`, else 10MB)
      --limit DUR           give up after DUR (default: the scenario's `duration`, else 120s)
      --only K=V            run only the sweep points whose label has K=V (`loss=0.05` matches
                            `path.wifi.loss=0.05`; repeatable)
      --json FILE           write the rows as JSON (and FILE with .csv as CSV)
      --out-dir DIR         where `ss -tinM` snapshots go (default: the JSON's directory or .)
      --workload W          bulk (default), web, video, latency (bulk with 20 probe round trips
                            a second beside it) or tun; a scenario file may name its own with a
                            comment line `# workload: web`
      --pages 6,26,111      web: the dFEC Table II pages to load (by object count; default all)
      --loads N             web: loads of each page per contender (default 5); --limit caps each load
      --video-duration DUR  video: stream length (default: the scenario's `duration`, else 30s)
      --deadline DUR        video: a frame is on time if complete by capture + DUR (default 200ms)
      --video-trace FILE    video: frame sizes (`I 141002` per line; default: built-in H.264 trace)
      --braid PATH          tun: the braid binary (default: `braid` beside this binary)
      --braid-arg ARG       tun: an extra argument for `braid tun` and `braid forward` (repeatable)
      --tun-parts P,P       tun: tcp (curl download; --transfer bytes), udp (a stamped stream), ping
                            (a UDP ping-pong) (default all three)
      --tun-ip 4|4,6        tun: run each part through the tunnel over IPv4 only, or over IPv4
                            and IPv6 (`braid-tun-v6` rows; default 4,6)
      --udp-rate RATE       tun: the stream's payload rate (default 3.4Mbit/s)
      --udp-size BYTES      tun: the stream's payload per packet (default 1000, at least 16)
      --udp-duration DUR    tun: the stream's length (default 10s); --deadline sets its deadline
                            (default 150ms)
      --pings N             tun: round trips of the ping-pong, one every 20 ms (default 200)
      --assert-setup        exit 1 unless every run completed, saw no TUN drops, showed its kernel
                            congestion control in `ss`, and (multipath) used every path
  braid-testbed check [scenario.toml] [--json FILE]
      self-check of delay, rate and loss against the configuration (first sweep point; default:
      one path 20Mbit/s, 100 ms RTT, 2% loss on the forward direction); exits 1 on failure
  braid-testbed list <scenario.toml>... [--only K=V] [--contenders ..] [--ext NAME ..] [--mix ..]
      one line per sweep point, tab-separated: scenario, label, paths, ideal Mbit/s, transfer
      bytes, limit s, the highest mean loss of a forward path, and the contenders (resolved,
      e.g. bbr@best → bbr@1); no root needed
  braid-testbed cleanup
      delete namespaces left by testbed processes that are gone
  braid-testbed relay LISTEN TO
      a plain TCP relay, for trying the external-contender interface
";

fn preflight() -> Result<(), String> {
    if !sys::is_root() {
        return Err("must run as root (network namespaces, TUN devices)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun is missing (CONFIG_TUN)".into());
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        return Err("`ip` not found: apt-get install iproute2".into());
    }
    Ok(())
}

pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("check") => cmd_check(&args[1..]),
        Some("list") => cmd_list(&args[1..]),
        Some("cleanup") => preflight().map(|_| {
            for n in cleanup_stale() {
                println!("removed {n}");
            }
        }),
        Some("relay") => match &args[1..] {
            [listen, to] => crate::relay::run(listen, to).map_err(|e| format!("relay: {e}")),
            _ => Err("usage: braid-testbed relay LISTEN_ADDR:PORT TO_ADDR:PORT".into()),
        },
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("expected a subcommand\n\n{USAGE}")),
    };
    match result {
        Ok(()) if sys::interrupted() => {
            eprintln!("interrupted; namespaces removed");
            130
        }
        Ok(()) => 0,
        Err(e) => {
            eprintln!("braid-testbed: {e}");
            1
        }
    }
}

struct Args {
    files: Vec<PathBuf>,
    contenders: Option<Vec<Contender>>,
    ext: Vec<External>,
    mix: Vec<String>,
    transfer: Option<u64>,
    limit: Option<Duration>,
    only: Vec<String>,
    json: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    assert_setup: bool,
    workload: Option<Workload>,
    wopts: WorkloadOptions,
    /// `--video-duration` given (else the scenario's `duration`, else 30 s).
    video_duration_set: bool,
    tun: tun::TunOptions,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        files: Vec::new(),
        contenders: None,
        ext: Vec::new(),
        mix: Vec::new(),
        transfer: None,
        limit: None,
        only: Vec::new(),
        json: None,
        out_dir: None,
        assert_setup: false,
        workload: None,
        wopts: WorkloadOptions { web: Default::default(), video: Default::default() },
        video_duration_set: false,
        tun: tun::TunOptions::default(),
    };
    // Each --ext opens a contender; --server-cmd and --client-cmd fill the last one opened.
    let mut ext: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--contenders" => {
                a.contenders = Some(value()?.split(',').map(str::parse).collect::<Result<_, _>>()?);
            }
            "--ext" => ext.push((value()?, None, None)),
            "--server-cmd" | "--client-cmd" => {
                let v = value()?;
                let Some(last) = ext.last_mut() else { return Err(format!("{arg} before any --ext")) };
                let slot = if arg == "--server-cmd" { &mut last.1 } else { &mut last.2 };
                if slot.replace(v).is_some() {
                    return Err(format!("--ext {}: {arg} given twice", last.0));
                }
            }
            "--mix" => a.mix.push(value()?),
            "--transfer" => {
                a.transfer =
                    Some(braid_netem::units::parse_size(&value()?).map_err(|e| format!("--transfer: {e}"))?)
            }
            "--limit" => {
                a.limit =
                    Some(braid_netem::units::parse_duration(&value()?).map_err(|e| format!("--limit: {e}"))?)
            }
            "--only" => a.only.push(value()?),
            "--json" => a.json = Some(PathBuf::from(value()?)),
            "--out-dir" => a.out_dir = Some(PathBuf::from(value()?)),
            "--assert-setup" => a.assert_setup = true,
            "--workload" => a.workload = Some(value()?.parse()?),
            "--pages" => a.wopts.web.pages = crate::web::parse_pages(&value()?)?,
            "--loads" => {
                a.wopts.web.loads =
                    value()?.parse().ok().filter(|&n| n > 0).ok_or("--loads: expected a positive number")?
            }
            "--video-duration" => {
                a.wopts.video.duration = braid_netem::units::parse_duration(&value()?)
                    .map_err(|e| format!("--video-duration: {e}"))?;
                a.video_duration_set = true;
            }
            "--deadline" => {
                a.wopts.video.deadline =
                    braid_netem::units::parse_duration(&value()?).map_err(|e| format!("--deadline: {e}"))?;
                a.tun.stream.deadline = a.wopts.video.deadline;
            }
            "--braid" => a.tun.braid = Some(PathBuf::from(value()?)),
            "--braid-arg" => a.tun.client_args.push(value()?),
            "--tun-parts" => a.tun.parts = tun::parse_parts(&value()?)?,
            "--tun-ip" => a.tun.ipv6 = tun::parse_ip(&value()?)?,
            "--udp-rate" => {
                let bps =
                    braid_netem::units::parse_rate(&value()?).map_err(|e| format!("--udp-rate: {e}"))?;
                if bps == 0 {
                    return Err("--udp-rate: expected a positive rate".into());
                }
                a.tun.stream.rate_bps = bps as f64;
            }
            "--udp-size" => {
                a.tun.stream.size = value()?
                    .parse()
                    .ok()
                    .filter(|n| (16..=65_000).contains(n))
                    .ok_or("--udp-size: expected 16 to 65000 bytes")?
            }
            "--udp-duration" => {
                a.tun.stream.duration = braid_netem::units::parse_duration(&value()?)
                    .map_err(|e| format!("--udp-duration: {e}"))?
            }
            "--pings" => {
                a.tun.pings = value()?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0 && n <= 100_000)
                    .ok_or("--pings: expected 1 to 100000")?
            }
            "--video-trace" => a.wopts.video.load_trace(std::path::Path::new(&value()?))?,
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n\n{USAGE}")),
            file => a.files.push(PathBuf::from(file)),
        }
    }
    for (name, server_cmd, client_cmd) in ext {
        let (Some(server_cmd), Some(client_cmd)) = (server_cmd, client_cmd) else {
            return Err(format!("--ext {name} needs --server-cmd and --client-cmd"));
        };
        if a.ext.iter().any(|e| e.name == name) || name.parse::<Contender>().is_ok() {
            return Err(format!("--ext {name}: the name is taken"));
        }
        a.ext.push(External { name, server_cmd, client_cmd });
    }
    for m in &a.mix {
        parse_mix(m, &a.ext)?;
    }
    Ok(a)
}

/// `braid:2,cubic:2` → the flows, kernel names parsed and the others looked up among the
/// external contenders (`braid` or `ext:braid`). A count of 0 or above 16 is refused.
fn parse_mix(text: &str, ext: &[External]) -> Result<Vec<Contender>, String> {
    let mut flows = Vec::new();
    for part in text.split(',') {
        // A count is the last `:`-separated part when it is a number (`ext:braid` has none).
        let (name, n) = match part.rsplit_once(':') {
            Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                (name, n.parse::<usize>().map_err(|_| format!("--mix {text}: `{part}`: count too large"))?)
            }
            _ => (part, 1),
        };
        if n == 0 || n > 16 {
            return Err(format!("--mix {text}: {n} flows of {name} (1 to 16)"));
        }
        let bare = name.strip_prefix("ext:").unwrap_or(name);
        let c = match ext.iter().find(|e| e.name == bare) {
            Some(e) => Contender::External(e.clone()),
            None => name.parse::<Contender>().map_err(|e| format!("--mix {text}: {e}"))?,
        };
        flows.extend(std::iter::repeat_n(c, n));
    }
    if flows.len() > 32 {
        return Err(format!("--mix {text}: {} flows (32 at most)", flows.len()));
    }
    Ok(flows)
}

/// The contenders of one scenario point, in run order: the kernel ones (given or the defaults;
/// `@best` resolved), then every external one.
/// The contenders of one sweep point: the named ones, else the defaults the workload can carry
/// (none when only flow mixes were asked for), then the external ones.
fn contenders_for(a: &Args, scenario: &Scenario, workload: Workload) -> Vec<Contender> {
    if a.contenders.is_none() && !a.mix.is_empty() {
        return Vec::new();
    }
    let mut c: Vec<Contender> = a
        .contenders
        .clone()
        .unwrap_or_else(|| {
            Contender::defaults(scenario.paths.len()).into_iter().filter(|c| workload.supports(c)).collect()
        })
        .iter()
        .map(|c| c.resolve(scenario))
        .collect();
    c.extend(a.ext.iter().cloned().map(Contender::External));
    c
}

fn load(files: &[PathBuf], only: &[String]) -> Result<Vec<Scenario>, String> {
    let mut all = Vec::new();
    for f in files {
        let points = Scenario::load(f).map_err(|e| e.to_string())?;
        all.extend(points.into_iter().filter(|s| {
            only.iter().all(|o| s.label.split(' ').any(|l| l == o || l.ends_with(&format!(".{o}"))))
        }));
    }
    Ok(all)
}

/// The workload the scenario files name (`# workload: NAME`), bulk if none; they must agree.
fn file_workload(files: &[PathBuf]) -> Result<Workload, String> {
    let mut found: Option<Workload> = None;
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let w = workload::directive(&text)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .unwrap_or(Workload::Bulk);
        if found.is_some_and(|x| x != w) {
            return Err("the scenario files name different workloads: run them separately".into());
        }
        found = Some(w);
    }
    Ok(found.unwrap_or(Workload::Bulk))
}

fn cmd_run(args: &[String]) -> Result<(), String> {
    let a = parse_args(args)?;
    if a.files.is_empty() {
        return Err(format!("run: no scenario file\n\n{USAGE}"));
    }
    let scenarios = load(&a.files, &a.only)?;
    let workload = match a.workload {
        Some(w) => w,
        None => file_workload(&a.files)?,
    };
    if workload == Workload::Web {
        if let Some(why) = crate::web::tools_missing() {
            return Err(format!("--workload web: {why}"));
        }
    }
    if workload == Workload::Tun {
        tun::braid_binary(a.tun.braid.as_deref())?;
        if let Some(why) = tun::tools_missing() {
            return Err(format!("--workload tun: {why}"));
        }
    }
    preflight()?;
    sys::install_signal_handlers();
    for n in cleanup_stale() {
        eprintln!("removed leftover namespace {n}");
    }
    let out_dir = a
        .out_dir
        .clone()
        .or_else(|| a.json.as_ref().and_then(|j| j.parent().map(PathBuf::from)))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let mut rows: Vec<Row> = Vec::new();
    println!("{}", report::header());
    'points: for scenario in &scenarios {
        let contenders = contenders_for(&a, scenario, workload);
        if let Some(c) = contenders.iter().find(|c| !workload.supports(c)) {
            return Err(match workload {
                Workload::Tun => format!(
                    "{c}: the tun workload runs braid itself (--braid) beside kernel TCP and MPTCP contenders only"
                ),
                _ => format!("{c} carries only the bulk workload (one byte stream split over connections)"),
            });
        }
        let mixed: Vec<Contender> =
            a.mix.iter().flat_map(|m| parse_mix(m, &a.ext).unwrap_or_default()).collect();
        if let Some(bad) = contenders.iter().chain(&mixed).find(|c| c.tcp_path() >= scenario.paths.len()) {
            return Err(format!(
                "{}: {bad}: the scenario has {} paths",
                scenario.title(),
                scenario.paths.len()
            ));
        }
        let opts = RunOptions {
            transfer: a.transfer.or(scenario.transfer).unwrap_or(10_000_000),
            limit: a.limit.or(scenario.duration).unwrap_or(Duration::from_secs(120)),
            out_dir: out_dir.clone(),
            probes: workload == Workload::Latency,
        };
        let mut tb = Testbed::create(scenario.paths.len()).map_err(|e| format!("testbed setup: {e}"))?;
        if workload == Workload::Tun {
            let mut emit = |row: Row| -> Result<(), String> {
                println!("{}", report::line(&row));
                rows.push(row);
                if let Some(j) = &a.json {
                    report::write_json(&rows, j).map_err(|e| format!("{}: {e}", j.display()))?;
                    report::write_csv(&rows, &j.with_extension("csv")).map_err(|e| format!("csv: {e}"))?;
                }
                Ok(())
            };
            tun::run(&tb, scenario, &contenders, &opts, &a.tun, &mut emit)?;
            tb.teardown();
            if sys::interrupted() {
                break 'points;
            }
            continue;
        }
        for c in &contenders {
            if sys::interrupted() {
                break 'points;
            }
            let new = match workload {
                Workload::Bulk | Workload::Latency => run_one(&tb, scenario, c, &opts).map(|r| vec![r]),
                w => {
                    let mut wopts = a.wopts.clone();
                    if let (false, Some(d)) = (a.video_duration_set, scenario.duration) {
                        wopts.video.duration = d;
                    }
                    run_workload(&tb, scenario, c, w, &opts, &wopts)
                }
            }
            .map_err(|e| format!("{} / {c}: {e}", scenario.title()))?;
            for row in new {
                println!("{}", report::line(&row));
                rows.push(row);
            }
            if let Some(j) = &a.json {
                report::write_json(&rows, j).map_err(|e| format!("{}: {e}", j.display()))?;
                report::write_csv(&rows, &j.with_extension("csv")).map_err(|e| format!("csv: {e}"))?;
            }
        }
        for m in &a.mix {
            if sys::interrupted() {
                break 'points;
            }
            let flows: Vec<Contender> = parse_mix(m, &a.ext)?.iter().map(|c| c.resolve(scenario)).collect();
            let mix_rows = run_mix(&tb, scenario, &flows, m, &opts)
                .map_err(|e| format!("{} / mix {m}: {e}", scenario.title()))?;
            for row in mix_rows {
                println!("{}", report::line(&row));
                rows.push(row);
            }
            if let Some(j) = &a.json {
                report::write_json(&rows, j).map_err(|e| format!("{}: {e}", j.display()))?;
                report::write_csv(&rows, &j.with_extension("csv")).map_err(|e| format!("csv: {e}"))?;
            }
        }
        tb.teardown();
    }
    if a.assert_setup {
        let problems: Vec<String> = rows.iter().flat_map(setup_problems).collect();
        if !problems.is_empty() {
            return Err(format!("setup check failed:\n  {}", problems.join("\n  ")));
        }
        println!("setup check passed ({} runs)", rows.len());
    }
    Ok(())
}

/// What makes a run evidence of a broken testbed rather than a slow transport.
fn setup_problems(r: &Row) -> Vec<String> {
    let id = format!("{} {} {}", r.scenario, r.label, r.contender);
    let mut p = Vec::new();
    if let Some(e) = &r.error {
        p.push(format!("{id}: {e}"));
    }
    if let Some(t) = &r.tun {
        // A tun row: the part ran and braid cleaned up; speed and loss are not judged.
        if t.tcp_intact == Some(false) {
            p.push(format!("{id}: the download was not intact"));
        }
        if t.udp_received == Some(0) || t.ping_answered == Some(0) {
            p.push(format!("{id} ({}): nothing came back", t.part));
        }
        if t.teardown.as_ref().is_some_and(|td| td != "clean") {
            p.push(format!("{id}: teardown: {}", t.teardown.as_deref().unwrap_or_default()));
        }
        if r.tun_drops > 0 {
            p.push(format!("{id}: {} TUN drops", r.tun_drops));
        }
        if r.ss_check != "ok" && r.ss_check != "n/a" {
            p.push(format!("{id}: ss -tinM: {}", r.ss_check));
        }
        return p;
    }
    if !r.mix.is_empty() {
        if r.received_bytes == 0 {
            p.push(format!("{id} (mix {} flow {}): received nothing", r.mix, r.flow));
        }
    } else if r.completion_s.is_none() {
        p.push(format!("{id}: did not complete ({} of {} bytes)", r.received_bytes, r.transfer_bytes));
    }
    if r.tun_drops > 0 {
        p.push(format!("{id}: {} TUN drops", r.tun_drops));
    }
    if r.ss_check != "ok" && r.ss_check != "n/a" {
        p.push(format!("{id}: ss -tinM: {}", r.ss_check));
    }
    let total: u64 = r.path_fwd_tx_bytes.iter().sum();
    // Bulk only: an app-limited stream (video) or short page loads may rightly keep to one path.
    let multipath =
        r.workload == "bulk" && (r.contender.starts_with("mptcp-") || r.contender.starts_with("2tcp-"));
    if multipath && r.path_fwd_tx_bytes.iter().any(|&b| b * 20 < total) {
        p.push(format!("{id}: a path carried < 5% of the bytes {:?}", r.path_fwd_tx_bytes));
    }
    p
}

fn cmd_list(args: &[String]) -> Result<(), String> {
    for line in list_lines(&parse_args(args)?)? {
        println!("{line}");
    }
    Ok(())
}

/// `list`'s lines: scenario, label, paths, ideal Mbit/s over the limit, transfer, limit s, the
/// highest mean forward loss, the contenders — tab-separated.
fn list_lines(a: &Args) -> Result<Vec<String>, String> {
    if a.files.is_empty() {
        return Err(format!("list: no scenario file\n\n{USAGE}"));
    }
    let workload = match a.workload {
        Some(w) => w,
        None => file_workload(&a.files)?,
    };
    let mut lines = Vec::new();
    for scenario in load(&a.files, &a.only)? {
        let transfer = a.transfer.or(scenario.transfer).unwrap_or(10_000_000);
        let limit = a.limit.or(scenario.duration).unwrap_or(Duration::from_secs(120));
        let names: Vec<String> =
            contenders_for(a, &scenario, workload).iter().map(|c| c.to_string()).collect();
        let loss = scenario.paths.iter().map(|p| p.forward.loss.mean_loss()).fold(0.0, f64::max);
        lines.push(format!(
            "{}\t{}\t{}\t{:.4}\t{}\t{}\t{}\t{}",
            scenario.name,
            scenario.label,
            scenario.paths.len(),
            scenario.ideal_goodput_bps(limit) / 1e6,
            transfer,
            limit.as_secs_f64(),
            loss,
            names.join(",")
        ));
    }
    Ok(lines)
}

fn cmd_check(args: &[String]) -> Result<(), String> {
    let a = parse_args(args)?;
    let scenario = match a.files.first() {
        Some(f) => load(std::slice::from_ref(f), &a.only)?.into_iter().next().ok_or("no scenario point")?,
        None => Scenario::parse(check::DEFAULT, "built-in").map_err(|e| e.to_string())?.remove(0),
    };
    preflight()?;
    sys::install_signal_handlers();
    cleanup_stale();
    let report = check::run(&scenario).map_err(|e| format!("check: {e}"))?;
    if let Some(j) = &a.json {
        std::fs::write(j, serde_json::to_string_pretty(&report).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", j.display()))?;
    }
    if report.passed {
        println!("self-check passed");
        Ok(())
    } else {
        Err("self-check FAILED (see above)".into())
    }
}

/// Options of the web and video workloads (command line).
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    pub web: web::WebOptions,
    pub video: video::VideoOptions,
}

/// Run a web or video workload for one contender over one scenario point.
fn run_workload(
    tb: &Testbed,
    scenario: &Scenario,
    contender: &Contender,
    workload: Workload,
    opts: &RunOptions,
    wopts: &WorkloadOptions,
) -> std::io::Result<Vec<Row>> {
    match workload {
        Workload::Bulk | Workload::Latency => run_one(tb, scenario, contender, opts).map(|r| vec![r]),
        Workload::Web => web::run(tb, scenario, contender, opts, &wopts.web),
        Workload::Video => video::run(tb, scenario, contender, opts, &wopts.video).map(|r| vec![r]),
        Workload::Tun => Err(std::io::Error::other("the tun workload runs once per point (cmd_run)")),
    }
}

#[cfg(test)]
mod scenario_files {
    use super::*;

    /// Every testbed scenario parses with braid-sim's parser (no root needed).
    #[test]
    fn testbed_scenarios_parse() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("scenarios/testbed exists")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{files:?}");
        let ctcp = load(&[dir.join("ctcp-table4.toml")], &[]).unwrap();
        assert_eq!(ctcp.len(), 7, "loss 0, 1, 2, 3, 5, 10, 20 %");
        assert_eq!(ctcp[0].transfer, Some(11_492_499));
        for f in files {
            let points = load(std::slice::from_ref(&f), &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!points.is_empty(), "{}", f.display());
        }
        let only = load(&[dir.join("ctcp-table4.toml")], &["loss=0.05".into()]).unwrap();
        assert_eq!(only.len(), 1, "--only picks one sweep point");
    }
}

#[cfg(test)]
mod setup_check {
    use super::*;

    pub(super) fn row_for_tests(contender: &str, paths: Vec<u64>) -> Row {
        row(contender, paths)
    }

    fn row(contender: &str, paths: Vec<u64>) -> Row {
        Row {
            scenario: "s".into(),
            seed: 1,
            contender: contender.into(),
            transfer_bytes: 100,
            received_bytes: 100,
            completion_s: Some(1.0),
            elapsed_s: 1.0,
            goodput_mbps: 1.0,
            ideal_mbps: 1.0,
            ratio: 1.0,
            path_fwd_tx_bytes: paths.clone(),
            path_fwd_rx_bytes: paths,
            ss_check: "ok".into(),
            workload: "bulk".into(),
            ..Row::default()
        }
    }

    #[test]
    fn tun_rows_need_intact_bytes_answers_and_a_clean_teardown() {
        use crate::report::TunMetrics;
        let mut r = row("braid-tun", vec![5000, 4000]);
        r.completion_s = None;
        r.ss_check = "n/a".into();
        r.tun = Some(TunMetrics {
            part: "udp-stream".into(),
            udp_received: Some(10),
            teardown: Some("clean".into()),
            ..TunMetrics::default()
        });
        assert!(setup_problems(&r).is_empty(), "a stream has no completion time");
        let t = r.tun.as_mut().unwrap();
        t.udp_received = Some(0);
        t.teardown = Some("device braid0".into());
        t.tcp_intact = Some(false);
        assert_eq!(setup_problems(&r).len(), 3);
    }

    #[test]
    fn flags_a_broken_setup_not_a_slow_one() {
        assert!(setup_problems(&row("mptcp-bbr", vec![5000, 4000])).is_empty());
        let mut slow = row("cubic", vec![5000]);
        slow.goodput_mbps = 0.01;
        assert!(setup_problems(&slow).is_empty(), "speed is not checked");
        assert_eq!(setup_problems(&row("mptcp-bbr", vec![10_000, 100])).len(), 1, "one path unused");
        assert!(setup_problems(&row("cubic", vec![10_000, 0])).is_empty(), "single-path TCP uses path 0");
        let mut r = row("bbr", vec![5000]);
        r.completion_s = None;
        r.tun_drops = 3;
        r.ss_check = "bbr not seen".into();
        assert_eq!(setup_problems(&r).len(), 3);
    }
}

#[cfg(test)]
mod args {
    use super::*;

    fn args(s: &[&str]) -> Result<Args, String> {
        parse_args(&s.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn several_external_contenders_and_mixes() {
        let a = args(&[
            "x.toml",
            "--ext",
            "braid",
            "--server-cmd",
            "s1 {port}",
            "--client-cmd",
            "c1",
            "--ext",
            "ctcp",
            "--client-cmd",
            "c2",
            "--server-cmd",
            "s2",
            "--mix",
            "braid:2,cubic:2",
            "--mix",
            "ext:ctcp,bbr",
        ])
        .unwrap();
        assert_eq!(a.ext.len(), 2);
        assert_eq!((a.ext[1].name.as_str(), a.ext[1].server_cmd.as_str()), ("ctcp", "s2"));
        let m = parse_mix(&a.mix[0], &a.ext).unwrap();
        let names: Vec<String> = m.iter().map(|c| c.to_string()).collect();
        assert_eq!(names, ["ext:braid", "ext:braid", "cubic", "cubic"]);
        assert_eq!(parse_mix(&a.mix[1], &a.ext).unwrap().len(), 2, "a count defaults to 1");
        assert!(args(&["--ext", "b", "--server-cmd", "s"]).is_err(), "no client command");
        assert!(args(&["--server-cmd", "s"]).is_err(), "no --ext before it");
        assert!(args(&["--ext", "bbr", "--server-cmd", "s", "--client-cmd", "c"]).is_err(), "a kernel name");
        assert!(args(&["--mix", "quic:2"]).is_err());
        assert!(args(&["--mix", "cubic:0"]).is_err());
        assert!(args(&["--mix", "cubic:17"]).is_err());
    }

    #[test]
    fn contenders_in_run_order_and_mix_only_runs() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
        let sc = load(&[dir.join("dfec-table3.toml")], &[]).unwrap().remove(0);
        let a = args(&[
            "--contenders",
            "mptcp-bbr,bbr@best",
            "--ext",
            "b",
            "--server-cmd",
            "s",
            "--client-cmd",
            "c",
        ])
        .unwrap();
        let names: Vec<String> =
            contenders_for(&a, &sc, Workload::Bulk).iter().map(|c| c.to_string()).collect();
        assert_eq!(names, ["mptcp-bbr", "bbr", "ext:b"], "B1 (20 Mbit/s, no loss) is the best path");
        let lossy = load(&[dir.join("dfec-table3.toml")], &["path.B1.loss=0.05".into()]).unwrap().remove(0);
        let names: Vec<String> =
            contenders_for(&a, &lossy, Workload::Bulk).iter().map(|c| c.to_string()).collect();
        assert_eq!(names[1], "bbr", "20 × 0.95 = 19 still beats B2's 10");
        let only_mix = args(&["--mix", "cubic:2"]).unwrap();
        assert!(contenders_for(&only_mix, &sc, Workload::Bulk).is_empty());
    }

    #[test]
    fn list_gives_every_point_with_the_overrides() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed");
        let f = dir.join("dfec-table3.toml").display().to_string();
        let lines =
            list_lines(&args(&[&f, "--transfer", "3MB", "--contenders", "bbr@best"]).unwrap()).unwrap();
        assert_eq!(lines.len(), 12, "B1 loss 0/1/3/5 % × B2 RTT 25/100/400 ms");
        let first: Vec<&str> = lines[0].split('\t').collect();
        assert_eq!(first[..3], ["dfec-table3", "path.B1.loss=0 path.B2.rtt=25ms", "2"]);
        assert_eq!(first[3].parse::<f64>().unwrap(), 30.0, "20 + 10 Mbit/s, no loss");
        assert_eq!(first[4..], ["3000000", "12", "0", "bbr"]);
        let last: Vec<&str> = lines[11].split('\t').collect();
        assert_eq!((last[3].parse::<f64>().unwrap() * 10.0).round(), 290.0, "20 × 0.95 + 10");
        assert_eq!(last[6], "0.05");
        let sat = dir.join("satellite-cellular.toml").display().to_string();
        let lines = list_lines(&args(&[&sat, "--contenders", "bbr@best,mptcp-bbr"]).unwrap()).unwrap();
        assert!(lines[0].ends_with("\tbbr@1,mptcp-bbr"), "the cellular path is the best: {}", lines[0]);
    }

    #[test]
    fn setup_check_of_a_mix_needs_bytes_not_completion() {
        let mut r = super::setup_check::row_for_tests("cubic", vec![100]);
        r.mix = "cubic:2".into();
        r.completion_s = None;
        assert!(setup_problems(&r).is_empty());
        r.received_bytes = 0;
        assert_eq!(setup_problems(&r).len(), 1);
    }
}
