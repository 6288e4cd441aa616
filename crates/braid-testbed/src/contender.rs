//! Contenders: what moves the bytes. Every contender is measured the same way — the testbed's
//! sender writes N bytes in the client namespace and the testbed's sink counts them in the server
//! namespace — so a tool is never trusted for its own numbers.
//!
//! - `cubic`, `bbr`, `reno`: one kernel TCP connection over path 0 (TCP_CONGESTION per socket
//!   and the namespaces' default set to the same); `bbr@1` over path 1, `bbr@best` over the path
//!   with the highest rate × (1 − loss) at time zero (ties: the shorter delay) — the single-path
//!   reference of a multipath scenario.
//! - `mptcp-cubic`, `mptcp-bbr`: one kernel MPTCP connection (IPPROTO_MPTCP = 262), a subflow
//!   per path (endpoints with `dev`, policy routing).
//! - `2tcp-cubic`, `2tcp-bbr`: one kernel TCP connection per path, sharing the N bytes
//!   (FMTCP's "2-TCP" reference).
//! - `ext:NAME`: an external command pair (e.g. a future `braid` binary): `server_cmd` runs in
//!   the server namespace and must deliver to the sink at `{sink}`; `client_cmd` runs in the
//!   client namespace and must accept the sender at `{entry}`. Placeholders: `{sink}`
//!   (server-side address:port of the sink), `{entry}` (client-side address:port the sender
//!   connects to), `{server<i>}`/`{client<i>}` (path i's server/client address), `{port}` (a
//!   port of this run's own, for the pair's rendezvous, so that several pairs run at once),
//!   `{self}` (this binary). Several `--ext` contenders may be given; each runs in turn, or
//!   together with others in a `--mix`.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq)]
pub enum Contender {
    Tcp { cc: String, path: TcpPath },
    Mptcp { cc: String },
    MultiTcp { cc: String },
    External(External),
}

#[derive(Debug, Clone, PartialEq)]
pub struct External {
    pub name: String,
    pub server_cmd: String,
    pub client_cmd: String,
}

/// Which path a single kernel TCP connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpPath {
    Index(usize),
    /// The path of the highest rate × (1 − loss) at time zero, resolved per scenario.
    Best,
}

const CCS: [&str; 3] = ["cubic", "bbr", "reno"];

impl FromStr for Contender {
    type Err = String;
    fn from_str(s: &str) -> Result<Contender, String> {
        let cc_of = |cc: &str| -> Result<String, String> {
            if CCS.contains(&cc) {
                Ok(cc.to_owned())
            } else {
                Err(format!("unknown congestion control `{cc}` (expected one of {})", CCS.join(", ")))
            }
        };
        if let Some(cc) = s.strip_prefix("mptcp-") {
            return Ok(Contender::Mptcp { cc: cc_of(cc)? });
        }
        if let Some(cc) = s.strip_prefix("2tcp-") {
            return Ok(Contender::MultiTcp { cc: cc_of(cc)? });
        }
        let (name, path) = match s.split_once('@') {
            None => (s, TcpPath::Index(0)),
            Some((n, "best")) => (n, TcpPath::Best),
            Some((n, i)) => match i.parse::<usize>() {
                Ok(i) if i < 64 => (n, TcpPath::Index(i)),
                _ => return Err(format!("`{s}`: expected <cc>@<path index> or <cc>@best")),
            },
        };
        if CCS.contains(&name) {
            return Ok(Contender::Tcp { cc: name.to_owned(), path });
        }
        Err(format!(
            "unknown contender `{s}` (expected cubic, bbr, reno, mptcp-<cc>, 2tcp-<cc>; external ones with --ext)"
        ))
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contender::Tcp { cc, path: TcpPath::Index(0) } => write!(f, "{cc}"),
            Contender::Tcp { cc, path: TcpPath::Index(i) } => write!(f, "{cc}@{i}"),
            Contender::Tcp { cc, path: TcpPath::Best } => write!(f, "{cc}@best"),
            Contender::Mptcp { cc } => write!(f, "mptcp-{cc}"),
            Contender::MultiTcp { cc } => write!(f, "2tcp-{cc}"),
            Contender::External(e) => write!(f, "ext:{}", e.name),
        }
    }
}

impl Contender {
    pub fn cc(&self) -> Option<&str> {
        match self {
            Contender::Tcp { cc, .. } | Contender::Mptcp { cc } | Contender::MultiTcp { cc } => Some(cc),
            Contender::External(_) => None,
        }
    }

    /// `@best` made concrete for `scenario`: the path with the highest rate × (1 − mean loss) at
    /// time zero, ties broken by the shorter one-way delay.
    pub fn resolve(&self, scenario: &braid_sim::Scenario) -> Contender {
        match self {
            Contender::Tcp { cc, path: TcpPath::Best } => {
                Contender::Tcp { cc: cc.clone(), path: TcpPath::Index(best_path(scenario)) }
            }
            c => c.clone(),
        }
    }

    /// The path a single-path kernel TCP contender uses (0 for the others).
    pub fn tcp_path(&self) -> usize {
        match self {
            Contender::Tcp { path: TcpPath::Index(i), .. } => *i,
            _ => 0,
        }
    }

    /// The contenders a scenario gets by default: the single-path ones, and on several paths the
    /// multipath ones too.
    pub fn defaults(paths: usize) -> Vec<Contender> {
        let names: &[&str] =
            if paths > 1 { &["mptcp-cubic", "mptcp-bbr", "2tcp-bbr"] } else { &["cubic", "bbr"] };
        names.iter().map(|n| n.parse().expect("built-in name")).collect()
    }
}

/// The best single path of `scenario` (see [`Contender::resolve`]).
pub fn best_path(scenario: &braid_sim::Scenario) -> usize {
    let score = |i: usize| {
        let l = &scenario.paths[i].forward;
        (l.rate_bps as f64 * (1.0 - l.loss.mean_loss()), std::cmp::Reverse(l.delay))
    };
    (0..scenario.paths.len())
        .max_by(|&a, &b| {
            let (sa, sb) = (score(a), score(b));
            sa.0.total_cmp(&sb.0).then(sa.1.cmp(&sb.1)).then(b.cmp(&a))
        })
        .unwrap_or(0)
}

/// Fill a command template's placeholders.
pub fn expand(template: &str, sink: &str, entry: &str, port: u16, paths: usize) -> String {
    let me =
        std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "braid-testbed".into());
    let mut s = template
        .replace("{sink}", sink)
        .replace("{entry}", entry)
        .replace("{port}", &port.to_string())
        .replace("{self}", &me);
    for i in 0..paths {
        s = s
            .replace(&format!("{{server{i}}}"), &crate::netns::server_addr(i).to_string())
            .replace(&format!("{{client{i}}}"), &crate::netns::client_addr(i).to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in
            ["cubic", "bbr", "mptcp-cubic", "mptcp-bbr", "2tcp-bbr", "2tcp-cubic", "bbr@1", "bbr@best"]
        {
            let c: Contender = name.parse().unwrap();
            assert_eq!(c.to_string(), name);
        }
        assert!("mptcp-vegas".parse::<Contender>().is_err());
        assert!("quic".parse::<Contender>().is_err());
        assert!("bbr@x".parse::<Contender>().is_err());
        assert_eq!("bbr@0".parse::<Contender>().unwrap().to_string(), "bbr");
    }

    #[test]
    fn placeholders_expand() {
        let s = expand(
            "braid server --to {sink} --bind {server0},{server1}:{port}",
            "10.100.0.2:5001",
            "x",
            25001,
            2,
        );
        assert_eq!(s, "braid server --to 10.100.0.2:5001 --bind 10.100.0.2,10.100.1.2:25001");
    }
}

#[cfg(test)]
mod best {
    use super::*;

    #[test]
    fn best_path_is_the_highest_delivery_rate_then_the_shortest_delay() {
        let text = |p2: &str| {
            format!(
                "name = \"t\"\nduration = \"10s\"\n[[path]]\nname = \"a\"\nrate = \"20Mbit/s\"\nrtt = \"25ms\"\nloss = 0.05\n\
                 [[path]]\nname = \"b\"\n{p2}\n"
            )
        };
        let pick = |p2: &str| {
            let s = braid_sim::Scenario::parse(&text(p2), "t.toml").unwrap().remove(0);
            let c: Contender = "bbr@best".parse().unwrap();
            c.resolve(&s).tcp_path()
        };
        // 20 × 0.95 = 19 against 10: path a.
        assert_eq!(pick("rate = \"10Mbit/s\"\nrtt = \"25ms\""), 0);
        // 20 × 0.95 = 19 against 19.5: path b.
        assert_eq!(pick("rate = \"19.5Mbit/s\"\nrtt = \"400ms\""), 1);
        // 19 against 19, the shorter delay wins.
        assert_eq!(pick("rate = \"19Mbit/s\"\nrtt = \"20ms\""), 1);
        assert_eq!(pick("rate = \"19Mbit/s\"\nrtt = \"30ms\""), 0);
    }
}
