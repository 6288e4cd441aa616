//! Command line: `run`, `check`, `cleanup`.

use std::path::PathBuf;
use std::time::Duration;

use braid_sim::Scenario;

use crate::contender::{Contender, External};
use crate::netns::{cleanup_stale, Testbed};
use crate::report::{self, Row};
use crate::run::{run_one, RunOptions};
use crate::workload::{self, Workload, WorkloadOptions};
use crate::{check, sys};

const USAGE: &str = "\
braid-testbed — network-namespace testbed (Linux, root)

USAGE:
  braid-testbed run <scenario.toml>... [options]
      --contenders a,b,..   cubic, bbr, reno, mptcp-<cc>, 2tcp-<cc> (default: cubic,bbr on one path;
                            mptcp-cubic,mptcp-bbr,2tcp-bbr on several)
      --ext NAME --server-cmd CMD --client-cmd CMD
                            add an external contender (placeholders {sink} {entry} {server0} {client0} ..
                            {self} = this binary)
      --transfer SIZE       bytes per run (default: the scenario's `transfer`, else 10MB)
      --limit DUR           give up after DUR (default: the scenario's `duration`, else 120s)
      --only K=V            run only the sweep points whose label has K=V (`loss=0.05` matches
                            `path.wifi.loss=0.05`; repeatable)
      --json FILE           write the rows as JSON (and FILE with .csv as CSV)
      --out-dir DIR         where `ss -tinM` snapshots go (default: the JSON's directory or .)
      --workload W          bulk (default), web or video; a scenario file may name its own with a
                            comment line `# workload: web`
      --pages 6,26,111      web: the dFEC Table II pages to load (by object count; default all)
      --loads N             web: loads of each page per contender (default 5); --limit caps each load
      --video-duration DUR  video: stream length (default: the scenario's `duration`, else 30s)
      --deadline DUR        video: a frame is on time if complete by capture + DUR (default 200ms)
      --video-trace FILE    video: frame sizes (`I 141002` per line; default: built-in H.264 trace)
      --assert-setup        exit 1 unless every run completed, saw no TUN drops, showed its kernel
                            congestion control in `ss`, and (multipath) used every path
  braid-testbed check [scenario.toml] [--json FILE]
      self-check of delay, rate and loss against the configuration (first sweep point; default:
      one path 20Mbit/s, 100 ms RTT, 2% loss on the forward direction); exits 1 on failure
  braid-testbed cleanup
      delete namespaces left by testbed processes that are gone
  braid-testbed relay LISTEN TO
      a plain TCP relay, for trying the external-contender interface
";

fn preflight() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
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
    ext: Option<External>,
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
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        files: Vec::new(),
        contenders: None,
        ext: None,
        transfer: None,
        limit: None,
        only: Vec::new(),
        json: None,
        out_dir: None,
        assert_setup: false,
        workload: None,
        wopts: WorkloadOptions { web: Default::default(), video: Default::default() },
        video_duration_set: false,
    };
    let (mut ext_name, mut server_cmd, mut client_cmd) = (None, None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--contenders" => {
                a.contenders = Some(value()?.split(',').map(str::parse).collect::<Result<_, _>>()?);
            }
            "--ext" => ext_name = Some(value()?),
            "--server-cmd" => server_cmd = Some(value()?),
            "--client-cmd" => client_cmd = Some(value()?),
            "--transfer" => {
                a.transfer =
                    Some(braid_sim::units::parse_size(&value()?).map_err(|e| format!("--transfer: {e}"))?)
            }
            "--limit" => {
                a.limit =
                    Some(braid_sim::units::parse_duration(&value()?).map_err(|e| format!("--limit: {e}"))?)
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
                a.wopts.video.duration = braid_sim::units::parse_duration(&value()?)
                    .map_err(|e| format!("--video-duration: {e}"))?;
                a.video_duration_set = true;
            }
            "--deadline" => {
                a.wopts.video.deadline =
                    braid_sim::units::parse_duration(&value()?).map_err(|e| format!("--deadline: {e}"))?
            }
            "--video-trace" => a.wopts.video.load_trace(std::path::Path::new(&value()?))?,
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n\n{USAGE}")),
            file => a.files.push(PathBuf::from(file)),
        }
    }
    match (ext_name, server_cmd, client_cmd) {
        (None, None, None) => {}
        (Some(name), Some(server_cmd), Some(client_cmd)) => {
            a.ext = Some(External { name, server_cmd, client_cmd })
        }
        _ => return Err("--ext needs --server-cmd and --client-cmd".into()),
    }
    Ok(a)
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
        let mut contenders: Vec<Contender> = match &a.contenders {
            Some(c) => c.clone(),
            None => Contender::defaults(scenario.paths.len())
                .into_iter()
                .filter(|c| workload.supports(c))
                .collect(),
        };
        if let Some(c) = contenders.iter().find(|c| !workload.supports(c)) {
            return Err(format!(
                "{c} carries only the bulk workload (one byte stream split over connections)"
            ));
        }
        if let Some(ext) = &a.ext {
            contenders.push(Contender::External(ext.clone()));
        }
        let opts = RunOptions {
            transfer: a.transfer.or(scenario.transfer).unwrap_or(10_000_000),
            limit: a.limit.or(scenario.duration).unwrap_or(Duration::from_secs(120)),
            out_dir: out_dir.clone(),
        };
        let mut tb = Testbed::create(scenario.paths.len()).map_err(|e| format!("testbed setup: {e}"))?;
        for c in &contenders {
            if sys::interrupted() {
                break 'points;
            }
            let new = match workload {
                Workload::Bulk => run_one(&tb, scenario, c, &opts).map(|r| vec![r]),
                w => {
                    let mut wopts = a.wopts.clone();
                    if let (false, Some(d)) = (a.video_duration_set, scenario.duration) {
                        wopts.video.duration = d;
                    }
                    workload::run(&tb, scenario, c, w, &opts, &wopts)
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
    if r.completion_s.is_none() {
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

    fn row(contender: &str, paths: Vec<u64>) -> Row {
        Row {
            scenario: "s".into(),
            label: String::new(),
            seed: 1,
            contender: contender.into(),
            transfer_bytes: 100,
            received_bytes: 100,
            completion_s: Some(1.0),
            elapsed_s: 1.0,
            goodput_mbps: 1.0,
            steady_mbps: None,
            ideal_mbps: 1.0,
            ratio: 1.0,
            path_fwd_tx_bytes: paths.clone(),
            path_fwd_rx_bytes: paths,
            tun_drops: 0,
            ss_check: "ok".into(),
            ss_file: String::new(),
            load: String::new(),
            error: None,
            forwarders: Vec::new(),
            workload: "bulk".into(),
            web: None,
            video: None,
        }
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
