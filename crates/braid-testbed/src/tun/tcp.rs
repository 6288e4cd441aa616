//! The tun workload's TCP part: curl downloads the file through `braid tun`, through
//! `braid forward`, and through the kernel contenders' relays; the bytes are compared.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::teardown::{net_state, teardown_verdict};
use super::{interrupt, wait_for_line, Family, Part, Setup, HTTP_PORT, WORLD};
use crate::contender::Contender;
use crate::netns::{client_addr, ns_exec, server_addr};
use crate::report::Row;
use crate::run::spawn_helper;
use crate::workload::{self, next_port, Session, LOOPBACK};

/// curl in the client namespace: (seconds from start to last byte, bytes, intact, error).
fn curl(s: &Setup, url: &str, tag: &str) -> (f64, u64, bool, Option<String>) {
    let out_file = s.dir.join(format!("got-{tag}.bin"));
    let _ = std::fs::remove_file(&out_file);
    let limit = s.opts.limit.as_secs().max(1).to_string();
    let out = ns_exec(
        &s.tb.client_ns,
        &[
            "curl",
            "-s",
            "-S",
            "--max-time",
            &limit,
            "-o",
            &out_file.display().to_string(),
            "-w",
            "%{time_total} %{size_download} %{http_code}",
            url,
        ],
    );
    let (secs, bytes, mut error) = match out {
        Ok(text) => {
            let w: Vec<&str> = text.split_whitespace().collect();
            let secs = w.first().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            let bytes = w.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let code = w.get(2).copied().unwrap_or("?");
            (secs, bytes, (code != "200").then(|| format!("HTTP status {code}")))
        }
        Err(e) => {
            (0.0, std::fs::metadata(&out_file).map(|m| m.len()).unwrap_or(0), Some(format!("curl: {e}")))
        }
    };
    let intact = match (std::fs::read(&s.file), std::fs::read(&out_file)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if error.is_none() && !intact {
        error = Some(format!("downloaded bytes differ from the file ({bytes} of {} bytes)", s.file_len));
    }
    let _ = std::fs::remove_file(&out_file);
    (secs, bytes, intact, error)
}

fn fill_tcp(row: &mut Row, s: &Setup, (secs, bytes, intact, error): (f64, u64, bool, Option<String>)) {
    let secs_ok = secs.max(1e-6);
    row.transfer_bytes = s.file_len;
    row.received_bytes = if intact { bytes } else { 0 };
    row.completion_s = intact.then_some(secs);
    row.elapsed_s = secs_ok;
    row.goodput_mbps = if intact { bytes as f64 * 8.0 / secs_ok / 1e6 } else { 0.0 };
    row.ratio = if row.ideal_mbps > 0.0 { row.goodput_mbps / row.ideal_mbps } else { 0.0 };
    row.error = row.error.take().or(error);
    if let Some(t) = row.tun.as_mut() {
        t.tcp_intact = Some(intact);
    }
}

/// The download through `braid tun` to the world's address of `tun`'s family, or (`None`)
/// through `braid forward`.
pub(super) fn tcp_braid(s: &Setup, tun: Option<Family>) -> io::Result<Row> {
    let name = tun.map_or("braid-forward", Family::tun_row);
    let log = s.dir.join(format!("{name}.log"));
    let before = net_state(s.tb);
    let session = Session::begin_plain(s.tb, s.scenario)?;
    let (mut child, url) = if let Some(f) = tun {
        let world = SocketAddr::new(f.world(), HTTP_PORT);
        (s.start_tun(&log)?, format!("http://{world}/download.bin"))
    } else {
        let entry = SocketAddrV4::new(LOOPBACK, next_port());
        let cmd = format!(
            "exec '{}' forward --listen {entry} --to {WORLD}:{HTTP_PORT} {} 2>'{}'",
            s.braid.display(),
            s.braid_client_args(),
            log.display()
        );
        let mut child = spawn_helper(&s.tb.client_ns, &cmd)?;
        wait_for_line(&log, " through ", Duration::from_secs(20), &mut child)
            .map_err(|e| io::Error::new(e.kind(), format!("braid forward: {e}")))?;
        (child, format!("http://{entry}/download.bin"))
    };
    let got = curl(s, &url, name);
    let clean_exit = interrupt(&mut child);
    let load = session.load.clone();
    let net = session.end(s.tb)?;
    let mut row = s.row(name, Part::Tcp, &net, load);
    fill_tcp(&mut row, s, got);
    if tun.is_some() {
        let t = row.tun.as_mut().expect("set by row()");
        t.teardown = Some(teardown_verdict(&before, &net_state(s.tb), clean_exit));
    }
    Ok(row)
}

/// The download through a kernel contender (curl → client relay → the paths → server relay →
/// the world).
pub(super) fn tcp_kernel(s: &Setup, c: &Contender) -> io::Result<Row> {
    let cc = c.cc().unwrap_or("bbr").to_owned();
    let mptcp = matches!(c, Contender::Mptcp { .. });
    let world = SocketAddrV4::new(WORLD, HTTP_PORT);
    let entry = SocketAddrV4::new(LOOPBACK, next_port());
    let session = Session::begin(s.tb, s.scenario, c, world, entry)?;
    let path_port = next_port();
    let path = c.tcp_path();
    let listen = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, path_port);
    let server_relay = workload::relay_server(&s.tb.server_ns, listen, world, mptcp, cc.clone())?;
    let to = SocketAddrV4::new(server_addr(path), path_port);
    let from = (path > 0).then(|| SocketAddrV4::new(client_addr(path), 0));
    let client_relay = workload::relay_client_via(&s.tb.client_ns, entry, to, from, mptcp, cc.clone())?;
    let ss_path = workload::ss_file(s.opts, s.scenario, c, "tun-tcp");
    // `ss -tinM` every 100 ms until it shows the contender's algorithm (a short download may be
    // over before a fixed moment comes).
    let done = Arc::new(AtomicBool::new(false));
    let ss = {
        let (ns, file, c, done) = (s.tb.client_ns.clone(), ss_path.clone(), c.clone(), done.clone());
        std::thread::spawn(move || {
            let mut text = String::new();
            while !done.load(Ordering::SeqCst) {
                text = workload::snapshot_ss(&ns, path_port, &file);
                if crate::run::ss_verdict(&c, &text) == "ok" {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            text
        })
    };
    let got = curl(s, &format!("http://{entry}/download.bin"), &c.to_string());
    done.store(true, Ordering::SeqCst);
    let ss_text = ss.join().unwrap_or_default();
    drop(client_relay);
    drop(server_relay);
    let load = session.load.clone();
    let net = session.end(s.tb)?;
    let mut row = s.row(&c.to_string(), Part::Tcp, &net, load);
    row.ss_check = crate::run::ss_verdict(c, &ss_text);
    row.ss_file = ss_path.display().to_string();
    fill_tcp(&mut row, s, got);
    Ok(row)
}
