//! The command line (clap): the subcommands and their flags, and what they resolve to — the
//! external contenders, the flow mixes, the workloads' options, the scenario points and the
//! contenders to run on each.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use braid_sim::Scenario;
use clap::error::ErrorKind;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::contender::{Contender, External};
use crate::tun::{self, Part, TunOptions};
use crate::video::VideoOptions;
use crate::web::{self, PageSpec, WebOptions};
use crate::workload::{self, Workload};

/// Network-namespace testbed (Linux, root): transports measured over emulated paths.
///
/// A client and a server namespace are joined by emulated paths (userspace TUN forwarders
/// running braid-netem's link model); kernel TCP and MPTCP, and external command pairs such as
/// `braid`, move bytes over them (docs/TESTBED.md).
#[derive(Debug, Parser)]
#[command(name = "braid-testbed")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the contenders over every sweep point of the scenario files.
    ///
    /// A row per run (and per web page, tun part or mix flow), printed as it comes and, with
    /// --json, saved after every run.
    #[command(args_override_self = true)]
    Run(RunArgs),
    /// Self-check of delay, rate and loss against the configuration; exits 1 on failure.
    ///
    /// Checks the first sweep point of the scenario file, or by default one path of 20Mbit/s,
    /// 100 ms RTT and 2% loss on the forward direction.
    #[command(args_override_self = true)]
    Check(CheckArgs),
    /// One line per sweep point and what `run` would run on it; no root needed.
    ///
    /// Tab-separated: scenario, label, paths, ideal Mbit/s, transfer bytes, limit s, the highest
    /// mean loss of a forward path, and the contenders (resolved, e.g. bbr@best → bbr@1). Takes
    /// `run`'s flags.
    #[command(args_override_self = true)]
    List(RunArgs),
    /// Delete namespaces left by testbed processes that are gone.
    Cleanup,
    /// A plain TCP relay, for trying the external-contender interface.
    Relay {
        /// Listen here (ADDR:PORT).
        #[arg(value_name = "LISTEN")]
        listen: String,
        /// Relay every connection to here (ADDR:PORT).
        #[arg(value_name = "TO")]
        to: String,
    },
}

/// The flags of `run` and `list`.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Scenario files (TOML, braid-sim's format; docs/TESTBED.md). A file may name its workload
    /// with a comment line `# workload: web`.
    #[arg(value_name = "SCENARIO.toml", required = true)]
    files: Vec<PathBuf>,
    /// Kernel contenders: CC (cubic, bbr or reno), mptcp-CC, 2tcp-CC, CC@N or CC@best (one TCP
    /// connection on path N / the best path) (default: cubic,bbr on one path;
    /// mptcp-cubic,mptcp-bbr,2tcp-bbr on several).
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    contenders: Option<Vec<Contender>>,
    /// Add an external contender; repeatable: each --ext takes the --server-cmd and --client-cmd
    /// after it. Placeholders in the commands: {sink} {entry} {server0} {client0} .., {port} (a
    /// port of the run's own), {self} (this binary).
    #[arg(long, value_name = "NAME")]
    ext: Vec<String>,
    /// The server namespace's command of the --ext before it.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    server_cmd: Vec<String>,
    /// The client namespace's command of the --ext before it.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    client_cmd: Vec<String>,
    /// Run these flows at once over the same paths (kernel names, or the NAME of an --ext) until
    /// the limit, and report each flow's goodput over [5 s, limit] and Jain's index; repeatable;
    /// with --mix and no --contenders only the mixes run.
    #[arg(long, value_name = "NAME:N,NAME:N")]
    mix: Vec<String>,
    /// Bytes per run (default: the scenario's `transfer`, else 10MB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    transfer: Option<u64>,
    /// Give up after DUR (default: the scenario's `duration`, else 120s).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    limit: Option<Duration>,
    /// Run only the sweep points whose label has K=V (`loss=0.05` matches `path.wifi.loss=0.05`;
    /// repeatable).
    #[arg(long, value_name = "K=V")]
    only: Vec<String>,
    /// Write the rows as JSON (and FILE with .csv as CSV), rewritten after every run.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Where `ss -tinM` snapshots go (default: the JSON's directory, else .).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// bulk (default), web, video, latency (bulk with 20 probe round trips a second beside it)
    /// or tun; a scenario file may name its own with a comment line `# workload: web`.
    #[arg(long, value_name = "W")]
    workload: Option<Workload>,
    /// web: the dFEC Table II pages to load, by object count (default all: 6,26,111).
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = page)]
    pages: Option<Vec<PageSpec>>,
    /// web: loads of each page per contender (default 5); --limit caps each load.
    #[arg(long, value_name = "N", value_parser = positive)]
    loads: Option<usize>,
    /// video: stream length (default: the scenario's `duration`, else 30s).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    video_duration: Option<Duration>,
    /// video: a frame is on time if complete by capture + DUR (default 200ms); tun: the UDP
    /// stream's deadline (default 150ms).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    deadline: Option<Duration>,
    /// video: frame sizes, `I 141002` per line (default: a built-in H.264 trace).
    #[arg(long, value_name = "FILE")]
    video_trace: Option<PathBuf>,
    /// tun: the braid binary (default: `braid` beside this binary).
    #[arg(long, value_name = "PATH")]
    braid: Option<PathBuf>,
    /// tun: an extra argument for `braid tun` and `braid forward` (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    braid_arg: Vec<String>,
    /// tun: tcp (a curl download of --transfer bytes), udp (a stamped stream), ping (a UDP
    /// ping-pong) (default all three).
    #[arg(long, value_name = "P,P", value_delimiter = ',')]
    tun_parts: Option<Vec<Part>>,
    /// tun: run each part through the tunnel over IPv4 only (4), or over IPv4 and IPv6 (4,6:
    /// `braid-tun-v6` rows) (default 4,6).
    #[arg(long, value_name = "4|4,6", value_parser = tun::parse_ip)]
    tun_ip: Option<bool>,
    /// tun: the stream's payload rate (default 3.4Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = rate)]
    udp_rate: Option<u64>,
    /// tun: the stream's payload per packet, 16 to 65000 bytes (default 1000).
    #[arg(long, value_name = "BYTES", value_parser = udp_size)]
    udp_size: Option<usize>,
    /// tun: the stream's length (default 10s); --deadline sets its deadline.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    udp_duration: Option<Duration>,
    /// tun: round trips of the ping-pong, one every 20 ms, 1 to 100000 (default 200).
    #[arg(long, value_name = "N", value_parser = pings)]
    pings: Option<usize>,
    /// Exit 1 unless every run completed, saw no TUN drops, showed its kernel congestion control
    /// in `ss`, and (multipath) used every path.
    #[arg(long)]
    assert_setup: bool,
    /// bulk: record the bytes at the sink every 100 ms (the row's `timeline`, JSON only), to
    /// see a transfer through a scenario's outages and changes.
    #[arg(long)]
    timeline: bool,
}

/// The flags of `check`.
#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// A scenario file whose first sweep point is checked (default: the built-in one).
    #[arg(value_name = "SCENARIO.toml")]
    file: Option<PathBuf>,
    /// Run only the sweep points whose label has K=V (repeatable); the first of them is checked.
    #[arg(long, value_name = "K=V")]
    only: Vec<String>,
    /// Also write the check's report as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// What the command line asks for.
pub enum Action {
    Run(Args),
    Check { file: Option<PathBuf>, only: Vec<String>, json: Option<PathBuf> },
    List(Args),
    Cleanup,
    Relay { listen: String, to: String },
}

/// The options of `run` and `list`, resolved: external contenders paired with their commands,
/// mixes checked, the workloads' options filled in.
#[derive(Debug, Clone)]
pub struct Args {
    pub files: Vec<PathBuf>,
    pub contenders: Option<Vec<Contender>>,
    pub ext: Vec<External>,
    pub mix: Vec<String>,
    pub transfer: Option<u64>,
    pub limit: Option<Duration>,
    pub only: Vec<String>,
    pub json: Option<PathBuf>,
    pub out_dir: Option<PathBuf>,
    pub assert_setup: bool,
    /// `--timeline`: bulk rows carry the bytes at the sink every 100 ms.
    pub timeline: bool,
    pub workload: Option<Workload>,
    pub wopts: WorkloadOptions,
    /// `--video-duration` given (else the scenario's `duration`, else 30 s).
    pub video_duration_set: bool,
    pub tun: TunOptions,
}

/// Options of the web and video workloads (command line).
#[derive(Debug, Clone, Default)]
pub struct WorkloadOptions {
    pub web: WebOptions,
    pub video: VideoOptions,
}

/// Parses this process's arguments; on a wrong one, prints what was wrong and the usage, and
/// exits 2 (`--help` exits 0).
pub fn parse() -> Action {
    parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

/// Parses `argv` (the program's name first).
pub fn parse_from<I, T>(argv: I) -> Result<Action, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(argv)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let sub = |name| matches.subcommand_matches(name).expect("clap matched this subcommand");
    Ok(match cli.command {
        Command::Run(a) => Action::Run(resolve(a, sub("run")).map_err(|e| invalid("run", e))?),
        Command::List(a) => Action::List(resolve(a, sub("list")).map_err(|e| invalid("list", e))?),
        Command::Check(CheckArgs { file, only, json }) => Action::Check { file, only, json },
        Command::Cleanup => Action::Cleanup,
        Command::Relay { listen, to } => Action::Relay { listen, to },
    })
}

/// A wrong combination of `sub`'s flags, said as clap says a wrong flag (the usage follows,
/// exit 2).
fn invalid(sub: &str, why: String) -> clap::Error {
    let mut cli = Cli::command();
    cli.build();
    let sub = cli.find_subcommand_mut(sub).expect("a subcommand of ours");
    sub.error(ErrorKind::ArgumentConflict, why)
}

fn resolve(r: RunArgs, matches: &ArgMatches) -> Result<Args, String> {
    let ext = externals(&r, matches)?;
    for m in &r.mix {
        parse_mix(m, &ext)?;
    }
    let mut wopts = WorkloadOptions::default();
    let mut tun = TunOptions::default();
    if let Some(pages) = r.pages {
        wopts.web.pages = pages;
    }
    if let Some(loads) = r.loads {
        wopts.web.loads = loads;
    }
    if let Some(d) = r.video_duration {
        wopts.video.duration = d;
    }
    if let Some(d) = r.deadline {
        wopts.video.deadline = d;
        tun.stream.deadline = d;
    }
    if let Some(file) = &r.video_trace {
        wopts.video.load_trace(file).map_err(|e| format!("--video-trace: {e}"))?;
    }
    tun.braid = r.braid;
    tun.client_args = r.braid_arg;
    if let Some(parts) = r.tun_parts {
        tun.parts = parts;
    }
    if let Some(ipv6) = r.tun_ip {
        tun.ipv6 = ipv6;
    }
    if let Some(bps) = r.udp_rate {
        tun.stream.rate_bps = bps as f64;
    }
    if let Some(size) = r.udp_size {
        tun.stream.size = size;
    }
    if let Some(d) = r.udp_duration {
        tun.stream.duration = d;
    }
    if let Some(n) = r.pings {
        tun.pings = n;
    }
    Ok(Args {
        files: r.files,
        contenders: r.contenders,
        ext,
        mix: r.mix,
        transfer: r.transfer,
        limit: r.limit,
        only: r.only,
        json: r.json,
        out_dir: r.out_dir,
        assert_setup: r.assert_setup,
        timeline: r.timeline,
        workload: r.workload,
        wopts,
        video_duration_set: r.video_duration.is_some(),
        tun,
    })
}

/// The external contenders: each `--ext NAME` takes the `--server-cmd` and `--client-cmd` that
/// follow it on the command line (before the next `--ext`).
fn externals(r: &RunArgs, matches: &ArgMatches) -> Result<Vec<External>, String> {
    let at = |id: &str| -> Vec<usize> { matches.indices_of(id).map(Iterator::collect).unwrap_or_default() };
    let ext_at = at("ext");
    let mut commands: Vec<[Option<String>; 2]> = vec![[None, None]; r.ext.len()];
    for (slot, (flag, values)) in
        [("--server-cmd", &r.server_cmd), ("--client-cmd", &r.client_cmd)].into_iter().enumerate()
    {
        let id = &flag[2..].replace('-', "_");
        for (i, value) in at(id).into_iter().zip(values) {
            let Some(owner) = ext_at.iter().rposition(|&e| e < i) else {
                return Err(format!("{flag} `{value}` comes before any --ext: give --ext NAME first"));
            };
            if commands[owner][slot].replace(value.clone()).is_some() {
                return Err(format!("--ext {}: {flag} given twice (each --ext takes one)", r.ext[owner]));
            }
        }
    }
    let mut ext: Vec<External> = Vec::new();
    for (name, [server_cmd, client_cmd]) in r.ext.iter().zip(commands) {
        let (Some(server_cmd), Some(client_cmd)) = (server_cmd, client_cmd) else {
            return Err(format!("--ext {name} needs a --server-cmd and a --client-cmd after it"));
        };
        if ext.iter().any(|e| e.name == *name) || name.parse::<Contender>().is_ok() {
            return Err(format!("--ext {name}: the name is taken (a kernel contender's or another --ext's)"));
        }
        ext.push(External { name: name.clone(), server_cmd, client_cmd });
    }
    Ok(ext)
}

/// `braid:2,cubic:2` → the flows, kernel names parsed and the others looked up among the
/// external contenders (`braid` or `ext:braid`). A count of 0 or above 16 is refused.
pub fn parse_mix(text: &str, ext: &[External]) -> Result<Vec<Contender>, String> {
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

/// The contenders of one sweep point, in run order: the named ones, else the defaults the
/// workload can carry (none when only flow mixes were asked for), `@best` resolved; then the
/// external ones.
pub fn contenders_for(a: &Args, scenario: &Scenario, workload: Workload) -> Vec<Contender> {
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

/// The sweep points of `files` whose labels have every `only` K=V.
pub fn load(files: &[PathBuf], only: &[String]) -> Result<Vec<Scenario>, String> {
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
pub fn file_workload(files: &[PathBuf]) -> Result<Workload, String> {
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

// Value parsers: each error says what the value must be (clap names the flag and the value).

fn size(s: &str) -> Result<u64, String> {
    braid_netem::units::parse_size(s)
}

fn duration(s: &str) -> Result<Duration, String> {
    braid_netem::units::parse_duration(s)
}

fn rate(s: &str) -> Result<u64, String> {
    match braid_netem::units::parse_rate(s)? {
        0 => Err("expected a positive rate".into()),
        bps => Ok(bps),
    }
}

fn positive(s: &str) -> Result<usize, String> {
    s.parse().ok().filter(|&n| n > 0).ok_or_else(|| "expected a positive number".into())
}

fn udp_size(s: &str) -> Result<usize, String> {
    s.parse().ok().filter(|n| (16..=65_000).contains(n)).ok_or_else(|| "expected 16 to 65000 bytes".into())
}

fn pings(s: &str) -> Result<usize, String> {
    s.parse().ok().filter(|&n| n > 0 && n <= 100_000).ok_or_else(|| "expected 1 to 100000".into())
}

fn page(s: &str) -> Result<PageSpec, String> {
    web::parse_page(s)
}

#[cfg(test)]
mod tests;
