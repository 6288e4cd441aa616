//! What a tunnel leaves behind: the client namespace's links and routes (IPv4 and IPv6) and
//! both namespaces' nftables rulesets, before a `braid tun` starts and after it stops.

use std::io;

use super::DEVICE;
use crate::netns::{ip, ns_exec, Testbed};

/// What the client namespace and both rulesets look like: compared before and after a tunnel.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NetState {
    routes: Vec<String>,
    links: Vec<String>,
    nft: Option<(String, String)>,
}

pub(super) fn net_state(tb: &Testbed) -> NetState {
    let lines = |s: io::Result<String>| {
        let mut v: Vec<String> = s.unwrap_or_default().lines().map(str::to_owned).collect();
        v.sort();
        v
    };
    let links = lines(ip(&["-n", &tb.client_ns, "-o", "link", "show"]))
        .iter()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().split('@').next().unwrap_or("").to_owned()))
        .collect();
    let nft = |ns: &str| ns_exec(ns, &["nft", "list", "ruleset"]);
    NetState {
        routes: [lines(ip(&["-n", &tb.client_ns, "route", "show", "table", "all"])), {
            lines(ip(&["-n", &tb.client_ns, "-6", "route", "show", "table", "all"]))
        }]
        .concat(),
        links,
        nft: match (nft(&tb.client_ns), nft(&tb.server_ns)) {
            (Ok(c), Ok(s)) => Some((c, s)),
            _ => None,
        },
    }
}

/// What a tunnel left behind, comparing the state before it started with the state after it
/// stopped: "clean" or the list.
fn leftovers(before: &NetState, after: &NetState) -> String {
    let mut left = Vec::new();
    if after.links.iter().any(|l| l == DEVICE) {
        left.push(format!("device {DEVICE}"));
    }
    for r in after.routes.iter().filter(|r| !before.routes.contains(r)) {
        left.push(format!("route `{r}`"));
    }
    for r in before.routes.iter().filter(|r| !after.routes.contains(r)) {
        left.push(format!("route `{r}` gone"));
    }
    match (&before.nft, &after.nft) {
        (Some(b), Some(a)) if a != b => left.push("nftables ruleset changed".into()),
        (Some(_), Some(_)) => {}
        _ => left.push("nftables not checked (`nft list ruleset` failed: apt-get install nftables)".into()),
    }
    if left.is_empty() {
        "clean".into()
    } else {
        left.join("; ")
    }
}

pub(super) fn teardown_verdict(before: &NetState, after: &NetState, clean_exit: bool) -> String {
    let left = leftovers(before, after);
    if clean_exit {
        left
    } else {
        format!("braid tun did not exit within 5 s of SIGINT (killed); {left}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_name_what_changed() {
        let s = |routes: &[&str], links: &[&str], nft: Option<&str>| NetState {
            routes: routes.iter().map(|r| r.to_string()).collect(),
            links: links.iter().map(|r| r.to_string()).collect(),
            nft: nft.map(|n| (n.to_string(), String::new())),
        };
        let before = s(&["default dev c0"], &["lo", "c0"], Some(""));
        assert_eq!(leftovers(&before, &before.clone()), "clean");
        let after =
            s(&["default dev c0", "10.201.0.0/24 dev braid0"], &["lo", "c0", "braid0"], Some("table x"));
        let l = leftovers(&before, &after);
        assert!(l.contains("device braid0") && l.contains("10.201.0.0/24") && l.contains("nftables"), "{l}");
        assert!(leftovers(&before, &s(&["default dev c0"], &["lo", "c0"], None)).contains("not checked"));
    }
}
