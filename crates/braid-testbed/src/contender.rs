//! Contenders: what moves the bytes. Every contender is measured the same way — the testbed's
//! sender writes N bytes in the client namespace and the testbed's sink counts them in the server
//! namespace — so a tool is never trusted for its own numbers.
//!
//! - `cubic`, `bbr`, `reno`: one kernel TCP connection over path 0 (TCP_CONGESTION per socket
//!   and the namespaces' default set to the same).
//! - `mptcp-cubic`, `mptcp-bbr`: one kernel MPTCP connection (IPPROTO_MPTCP = 262), a subflow
//!   per path (endpoints with `dev`, policy routing).
//! - `2tcp-cubic`, `2tcp-bbr`: one kernel TCP connection per path, sharing the N bytes
//!   (FMTCP's "2-TCP" reference).
//! - `ext:NAME`: an external command pair (e.g. a future `braid` binary): `server_cmd` runs in
//!   the server namespace and must deliver to the sink at `{sink}`; `client_cmd` runs in the
//!   client namespace and must accept the sender at `{entry}`. Placeholders: `{sink}`
//!   (server-side address:port of the sink), `{entry}` (client-side address:port the sender
//!   connects to), `{server<i>}`/`{client<i>}` (path i's server/client address), `{self}` (this
//!   binary).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq)]
pub enum Contender {
    Tcp { cc: String },
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
        if CCS.contains(&s) {
            return Ok(Contender::Tcp { cc: s.to_owned() });
        }
        Err(format!(
            "unknown contender `{s}` (expected cubic, bbr, reno, mptcp-<cc>, 2tcp-<cc>; external ones with --ext)"
        ))
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contender::Tcp { cc } => write!(f, "{cc}"),
            Contender::Mptcp { cc } => write!(f, "mptcp-{cc}"),
            Contender::MultiTcp { cc } => write!(f, "2tcp-{cc}"),
            Contender::External(e) => write!(f, "ext:{}", e.name),
        }
    }
}

impl Contender {
    pub fn cc(&self) -> Option<&str> {
        match self {
            Contender::Tcp { cc } | Contender::Mptcp { cc } | Contender::MultiTcp { cc } => Some(cc),
            Contender::External(_) => None,
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

/// Fill a command template's placeholders.
pub fn expand(template: &str, sink: &str, entry: &str, paths: usize) -> String {
    let me =
        std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "braid-testbed".into());
    let mut s = template.replace("{sink}", sink).replace("{entry}", entry).replace("{self}", &me);
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
        for name in ["cubic", "bbr", "mptcp-cubic", "mptcp-bbr", "2tcp-bbr", "2tcp-cubic"] {
            let c: Contender = name.parse().unwrap();
            assert_eq!(c.to_string(), name);
        }
        assert!("mptcp-vegas".parse::<Contender>().is_err());
        assert!("quic".parse::<Contender>().is_err());
    }

    #[test]
    fn placeholders_expand() {
        let s = expand("braid server --to {sink} --bind {server0},{server1}", "10.100.0.2:5001", "x", 2);
        assert_eq!(s, "braid server --to 10.100.0.2:5001 --bind 10.100.0.2,10.100.1.2");
    }
}
