//! The `braid` binary on loopback with real programs: send/recv, forward, SOCKS5 with curl,
//! wrong keys and the one-line errors. Each test finishes in seconds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod harness;

use harness::*;

#[test]
fn send_recv_hash_identical_over_two_lossy_paths() {
    let mut t = recv_setup("sendrecv", 300_000, 7, &[]);
    let o = Command::new(BRAID)
        .args(["send", &t.input(), "--server", &t.addr, "--key", t.key.to_str().unwrap()])
        .args([
            "--path",
            "127.0.0.1",
            "--path",
            "127.0.0.1",
            "--emulate",
            "40mbit,5ms,3%",
            "--emulate",
            "40mbit,15ms,3%",
        ])
        .output()
        .unwrap();
    t.assert_delivered(&o);
    let said = stderr(&o);
    assert!(said.contains("BLAKE2s") && said.contains(" ok"), "{said}");
    assert!(said.contains("paths 0:") && said.contains(" 1:"), "per-path shares: {said}");
}

/// A TCP echo server on a thread (serves `conns` connections).
fn tcp_echo(conns: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(conns) {
            let mut s = s.unwrap();
            std::thread::spawn(move || {
                let mut r = s.try_clone().unwrap();
                let _ = std::io::copy(&mut r, &mut s);
                let _ = s.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

#[test]
fn tcp_clients_through_forward() {
    let ServerSetup { dir: _dir, key, server, addr: braid_addr } = server_setup("forward", &[]);
    let echo = tcp_echo(3).to_string();
    let local = free_tcp_port().to_string();
    // Two paths: one by interface name (`lo`), one by address.
    let mut fwd = Bg::spawn(
        &[
            "forward",
            "--listen",
            &local,
            "--to",
            &echo,
            "--server",
            &braid_addr,
            "--path",
            "lo",
            "--path",
            "127.0.0.1",
        ],
        &key,
    );
    fwd.wait_for("forwarding");
    let clients: Vec<_> = (0..3u64)
        .map(|i| {
            let local = local.clone();
            std::thread::spawn(move || {
                let data = pattern(50_000 + i as usize, i + 1);
                let mut c = TcpStream::connect(&local).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
                let mut w = c.try_clone().unwrap();
                let d = data.clone();
                let writer = std::thread::spawn(move || {
                    w.write_all(&d).unwrap();
                    w.shutdown(std::net::Shutdown::Write).unwrap();
                });
                let mut back = Vec::new();
                c.read_to_end(&mut back).unwrap();
                writer.join().unwrap();
                assert!(back == data, "client {i}: {} bytes back of {}", back.len(), data.len());
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    drop(fwd);
    drop(server);
}

/// A forwarded connection's first bytes leave with its CONNECT, not a round trip after it:
/// over an emulated 100 ms round trip, the first echo comes back in about one round trip
/// (it took two while the forwarder waited for the server's answer before reading).
#[test]
fn forward_first_bytes_cost_one_round_trip() {
    let ServerSetup { dir: _dir, key, server, addr: braid_addr } = server_setup("forward-rtt", &[]);
    let echo = tcp_echo(1).to_string();
    let local = free_tcp_port().to_string();
    let mut fwd = Bg::spawn(
        &[
            "forward",
            "--listen",
            &local,
            "--to",
            &echo,
            "--server",
            &braid_addr,
            "--emulate",
            "1000mbit,50ms,0%",
        ],
        &key,
    );
    fwd.wait_for("forwarding");
    let started = Instant::now();
    let mut c = TcpStream::connect(&local).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    c.read_exact(&mut back).unwrap();
    let took = started.elapsed();
    assert_eq!(&back, b"ping");
    assert!(took < Duration::from_millis(185), "first echo took {took:?} over a 100 ms round trip");
    drop(fwd);
    drop(server);
}

/// `braid forward` sends a connection's first bytes with its CONNECT, before the server has
/// answered: when the server cannot connect to `--to`, the application's connection is closed
/// with nothing sent back, and the forwarder says why.
#[test]
fn forward_closes_a_connection_the_server_could_not_make() {
    let ServerSetup { dir: _dir, key, server, addr: braid_addr } = server_setup("forward-refused", &[]);
    // A port nothing listens on: the server's connect is refused.
    let nowhere = free_tcp_port().to_string();
    let local = free_tcp_port().to_string();
    let mut fwd =
        Bg::spawn(&["forward", "--listen", &local, "--to", &nowhere, "--server", &braid_addr], &key);
    fwd.wait_for("forwarding");
    let mut c = TcpStream::connect(&local).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Written before the refusal can be known; it must not come back or hang the connection.
    c.write_all(b"hello").unwrap();
    let mut back = Vec::new();
    let ended = c.read_to_end(&mut back);
    let timed_out = ended
        .as_ref()
        .is_err_and(|e| matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
    assert!(
        back.is_empty() && !timed_out,
        "expected the connection closed with nothing back: {ended:?}, {back:?}"
    );
    let line = fwd.wait_for("could not connect");
    assert!(line.contains(&nowhere), "the warning should name the target: {line}");
    drop(fwd);
    drop(server);
}

/// A minimal HTTP/1.0 server on a thread: GET /file returns `body`.
fn http_server(body: Vec<u8>) -> SocketAddr {
    http_server_on("127.0.0.1:0", body).unwrap()
}

fn http_server_on(addr: &str, body: Vec<u8>) -> Option<SocketAddr> {
    let l = TcpListener::bind(addr).ok()?;
    let addr = l.local_addr().unwrap();
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut req = Vec::new();
                let mut b = [0u8; 1];
                while !req.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                    req.push(b[0]);
                }
                let head =
                    format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&body);
            });
        }
    });
    Some(addr)
}

fn have_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn curl_through_socks_under_loss() {
    if !have_curl() {
        eprintln!("SKIPPED curl_through_socks_under_loss: curl is not installed (.ci/run installs it)");
        return;
    }
    let ServerSetup { dir: _dir, key, server, addr: braid_addr } = server_setup("socks", &[]);
    let body = pattern(200_000, 99);
    let http = http_server(body.clone());
    let socks = free_tcp_port().to_string();
    let mut proxy = Bg::spawn(
        &["socks", "--listen", &socks, "--server", &braid_addr, "--emulate", "40mbit,5ms,5%"],
        &key,
    );
    proxy.wait_for("SOCKS5 on");
    // A domain name the server resolves (socks5-hostname), then an IPv4 literal.
    for url in
        [format!("http://localhost:{}/file", http.port()), format!("http://127.0.0.1:{}/file", http.port())]
    {
        let got = Command::new("curl")
            .args(["-sS", "--max-time", "20", "--socks5-hostname", &socks, &url])
            .output()
            .unwrap();
        assert!(got.status.success(), "curl {url}: {}\nproxy: {}", stderr(&got), proxy.log());
        assert!(got.stdout == body, "{url}: {} bytes, expected {}", got.stdout.len(), body.len());
    }
    // An IPv6 literal (ATYP 4), where the machine has IPv6 loopback.
    match http_server_on("[::1]:0", body.clone()) {
        Some(v6) => {
            let url = format!("http://[::1]:{}/file", v6.port());
            let got = Command::new("curl")
                .args(["-sS", "-g", "--max-time", "20", "--socks5-hostname", &socks, &url])
                .output()
                .unwrap();
            assert!(got.status.success() && got.stdout == body, "curl {url}: {}", stderr(&got));
        }
        None => eprintln!("SKIPPED the IPv6 part: no IPv6 loopback here"),
    }
    // A port nobody listens on: curl is told the connection was refused (SOCKS5 reply 5).
    let closed = free_tcp_port();
    let got = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "--socks5-hostname",
            &socks,
            &format!("http://127.0.0.1:{}/", closed.port()),
        ])
        .output()
        .unwrap();
    assert!(!got.status.success());
    let said = stderr(&got).to_lowercase();
    assert!(said.contains("refused") || said.contains("(5)"), "{said}");
    drop(proxy);
    drop(server);
}

#[test]
fn socks_username_password() {
    if !have_curl() {
        eprintln!("SKIPPED socks_username_password: curl is not installed");
        return;
    }
    let ServerSetup { dir: _dir, key, server, addr: braid_addr } = server_setup("socksauth", &[]);
    let body = pattern(10_000, 5);
    let http = http_server(body.clone());
    let socks = free_tcp_port().to_string();
    let mut proxy =
        Bg::spawn(&["socks", "--listen", &socks, "--server", &braid_addr, "--auth", "alice:s3cret"], &key);
    proxy.wait_for("SOCKS5 on");
    let url = format!("http://localhost:{}/file", http.port());
    let ok = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--proxy", &format!("socks5h://alice:s3cret@{socks}"), &url])
        .output()
        .unwrap();
    assert!(ok.status.success() && ok.stdout == body, "right password: {}", stderr(&ok));
    let bad = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--proxy", &format!("socks5h://alice:wrong@{socks}"), &url])
        .output()
        .unwrap();
    assert!(!bad.status.success(), "wrong password must fail");
    drop(proxy);
    drop(server);
}

#[test]
fn wrong_key_is_refused_and_not_accepted() {
    let dir = TempDir::new("wrongkey");
    let good = keygen(&dir, "good");
    let other = keygen(&dir, "other");
    std::fs::write(dir.path("f"), b"secret").unwrap();
    let mut server =
        Bg::spawn(&["server", "-v", "--listen", "127.0.0.1:0", "--dir", dir.0.to_str().unwrap()], &good);
    let addr = server.listening().to_string();
    let o = run(&[
        "send",
        dir.path("f").to_str().unwrap(),
        "--server",
        &addr,
        "--key",
        other.to_str().unwrap(),
        "--timeout",
        "1",
    ]);
    assert_one_line_error(&o, &["refused our key", &addr]);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!server.log().contains("accepted"), "server accepted a wrong key: {}", server.log());
}

#[test]
fn errors_are_one_line_with_a_non_zero_exit() {
    let dir = TempDir::new("errors");
    let key = keygen(&dir, "k");
    let k = key.to_str().unwrap();
    std::fs::write(dir.path("f"), b"x").unwrap();
    let f = dir.path("f");
    let f = f.to_str().unwrap();
    // Bad addresses.
    assert_one_line_error(&run(&["send", f, "--key", k, "--server", "nonsense"]), &["--server", "HOST:PORT"]);
    assert_one_line_error(&run(&["server", "--key", k, "--listen", "1.2.3"]), &["--listen", "bad address"]);
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--server", "no.such.host.invalid:1"]),
        &["cannot resolve"],
    );
    // A missing interface lists the ones that exist.
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--server", "127.0.0.1:9", "--path", "nosuch0"]),
        &["nosuch0", "available", "lo"],
    );
    // Nothing listening (ICMP port unreachable), and a server that never answers.
    let free = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--server", &free.to_string()]),
        &["connection refused"],
    );
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--server", &silent_addr, "--timeout", "0.5"]),
        &["no answer"],
    );
    // Port in use.
    assert_one_line_error(&run(&["server", "--key", k, "--listen", &silent_addr]), &["already in use"]);
    // Missing key file, bad flags.
    assert_one_line_error(
        &run(&["server", "--key", dir.path("nokey").to_str().unwrap()]),
        &["not found", "braid keygen"],
    );
    assert_one_line_error(&run(&["send", f, "--key", k, "--mode", "quic"]), &["--mode", "unknown mode"]);
    // A wrong controller name lists the valid ones.
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--cc", "vegas"]),
        &["--cc", "vegas", "braid, newreno, cubic, bbr, ctcp, lia, newreno-ns3"],
    );
    assert_one_line_error(&run(&["send", f, "--key", k, "--emulate", "fast"]), &["--emulate"]);
    assert_one_line_error(&run(&["keygen", "-o", k]), &["already exists"]);
}

#[test]
fn peer_timeout_is_reported() {
    // The receiver vanishes mid-transfer: `send` notices within its idle timeout and fails
    // with one line rather than hang.
    let t = recv_setup("peertimeout", 20_000_000, 3, &[]);
    let mut send = Command::new(BRAID)
        .args(["send", &t.input(), "--server", &t.addr, "--key", t.key.to_str().unwrap()])
        .args(["--emulate", "10mbit,5ms,0%", "--idle-timeout", "2"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    drop(t.recv);
    let started = Instant::now();
    let out = loop {
        if let Some(_status) = send.try_wait().unwrap() {
            break send.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(15) {
            let _ = send.kill();
            panic!("send did not notice the receiver was gone");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_one_line_error(&out, &["timed out"]);
}

#[test]
fn bench_json_and_stats_json() {
    let ServerSetup { dir, key, server: _server, addr } = server_setup("bench", &[]);
    let stats = dir.path("stats.jsonl");
    for reverse in [false, true] {
        let mut args =
            vec!["bench", "-s", &addr, "-t", "2", "--json", "--path", "127.0.0.1", "--path", "127.0.0.1"];
        args.extend([
            "--emulate",
            "20mbit,5ms,1%",
            "--stats-json",
            stats.to_str().unwrap(),
            "--stats-interval",
            "0.2",
        ]);
        if reverse {
            args.push("-R");
        }
        let o = Command::new(BRAID).args(&args).arg("--key").arg(&key).output().unwrap();
        assert!(o.status.success(), "bench: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let direction = if reverse { "\"download\"" } else { "\"upload\"" };
        assert!(out.trim().starts_with('{') && out.contains(direction), "{out}");
        let json: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        let goodput = json["goodput_mbps"].as_f64().unwrap();
        assert!(goodput > 0.5 && goodput < 40.0, "goodput {goodput} Mbit/s on two 20 Mbit/s paths: {out}");
        assert_eq!(json["stats"]["paths"][1]["path"], 1, "per-path numbers: {out}");
        // Latency probes beside the transfer: at least 10 a second (20 are sent), with
        // min ≤ p50 ≤ p99 ≤ max.
        let latency = &json["latency_ms"];
        assert!(latency["probes"].as_u64().is_some_and(|n| n >= 20), "{out}");
        let q: Vec<f64> = ["min", "p50", "p99", "max"].iter().filter_map(|k| latency[k].as_f64()).collect();
        assert!(q.len() == 4 && q.windows(2).all(|w| w[0] <= w[1]), "{out}");
    }
    let lines = std::fs::read_to_string(&stats).unwrap();
    assert!(lines.lines().count() >= 4, "a line every 0.2 s: {lines}");
    for line in lines.lines() {
        let json: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        assert!(json["t"].is_number() && json["paths"].is_array(), "{line}");
    }
}

#[test]
fn a_server_without_dir_refuses_files_in_one_line() {
    let ServerSetup { dir, key, server: _server, addr } = server_setup("nodir", &[]);
    std::fs::write(dir.path("f"), pattern(10_000, 1)).unwrap();
    let o =
        run(&["send", dir.path("f").to_str().unwrap(), "--server", &addr, "--key", key.to_str().unwrap()]);
    assert_one_line_error(&o, &["takes no files", "braid recv"]);
}

#[test]
fn demo_runs_two_modes_and_draws_them() {
    let dir = TempDir::new("demo");
    let plot = dir.path("demo.svg");
    let out = run(&["demo", "--modes", "braid,tcp", "--seconds", "1", "--plot", plot.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "demo failed: {}\n{table}", stderr(&out));
    // Each mode's row, with a goodput above zero (the second column).
    for mode in ["braid", "tcp (model of TCP over UDP)"] {
        let row = table
            .lines()
            .find(|l| l.starts_with(mode) && l[mode.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no row for {mode} in:\n{table}"));
        let goodput: f64 = row[mode.len()..].split_whitespace().next().unwrap().parse().unwrap();
        assert!(goodput > 0.0, "{mode}: goodput {goodput} in:\n{table}");
    }
    // Progress on stderr, one line per mode.
    let err = stderr(&out);
    assert!(err.contains("[1/2] braid") && err.contains("[2/2] tcp"), "{err}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains(">braid<") && svg.contains(">tcp<"), "{svg}");
    assert_well_formed(&svg);
}

/// Tags nest and close, text holds no stray `<`, `>` or `&` (a check without an XML crate).
fn assert_well_formed(xml: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        assert!(!text.contains('>'), "stray '>' in {text:?}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;"].iter().any(|e| entity.starts_with(e)),
                "bare '&' in {text:?}"
            );
        }
        let end = rest[start..].find('>').expect("unclosed '<'") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag:?}");
        let name =
            |t: &'_ str| t.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("").to_string();
        if let Some(closing) = tag.strip_prefix('/') {
            let top = open.pop().unwrap_or_else(|| panic!("</{closing}> closes nothing"));
            assert_eq!(name(top), name(closing), "<{top}> closed by </{closing}>");
        } else if !tag.ends_with('/') {
            open.push(tag);
        }
        if open.is_empty() {
            assert!(rest[end + 1..].trim().is_empty(), "content after the root element");
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

#[test]
fn demo_errors_are_one_line() {
    let dir = TempDir::new("demo-errors");
    let plot = dir.path("x.svg");
    let p = plot.to_str().unwrap();
    assert_one_line_error(&run(&["demo", "--modes", "braid,quic", "--plot", p]), &["--modes", "quic"]);
    assert_one_line_error(&run(&["demo", "--path-a", "fast", "--plot", p]), &["--emulate", "fast"]);
    assert_one_line_error(&run(&["demo", "--seconds", "0", "--plot", p]), &["--seconds"]);
    let nowhere = dir.path("no/such/dir/x.svg");
    assert_one_line_error(&run(&["demo", "--plot", nowhere.to_str().unwrap()]), &["--plot"]);
}

/// `braid keygen --pair` for `name`: the private key file and its `.pub`.
fn keypair(dir: &TempDir, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.path(name);
    let out = Command::new(BRAID).args(["keygen", "--pair", "-o"]).arg(&key).output().unwrap();
    assert!(out.status.success(), "keygen --pair: {}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let public = dir.path(&format!("{name}.pub"));
    let written = std::fs::read_to_string(&public).unwrap();
    assert!(written.starts_with(&printed) && printed.len() == 64, "{printed:?} vs {written:?}");
    (key, public)
}

/// Key pairs (Noise IK): an authorized client gets in; a client not on the list, and a client
/// that names the wrong server key, get one line each, and the server logs neither as accepted.
#[test]
fn key_pairs_let_in_the_authorized_only() {
    let dir = TempDir::new("keypairs");
    let (server_key, server_pub) = keypair(&dir, "server");
    let (client_key, client_pub) = keypair(&dir, "client");
    let (stranger_key, stranger_pub) = keypair(&dir, "stranger");
    let list = format!("# clients\n\n{}", std::fs::read_to_string(&client_pub).unwrap());
    std::fs::write(dir.path("authorized"), list).unwrap();
    let data = pattern(100_000, 3);
    std::fs::write(dir.path("f"), &data).unwrap();
    std::fs::create_dir_all(dir.path("in")).unwrap();
    let mut server = Bg::spawn(
        &[
            "server",
            "-v",
            "--listen",
            "127.0.0.1:0",
            "--dir",
            dir.path("in").to_str().unwrap(),
            "--authorized",
            dir.path("authorized").to_str().unwrap(),
        ],
        &server_key,
    );
    let addr = server.listening().to_string();
    let send = |key: &Path, server_pub: &Path| {
        run(&[
            "send",
            dir.path("f").to_str().unwrap(),
            "--server",
            &addr,
            "--key",
            key.to_str().unwrap(),
            "--server-key",
            server_pub.to_str().unwrap(),
            "--timeout",
            "1",
        ])
    };
    let o = send(&client_key, &server_pub);
    assert!(o.status.success(), "authorized client: {}\nserver: {}", stderr(&o), server.log());
    assert!(std::fs::read(dir.path("in").join("f")).unwrap() == data, "file differs");
    std::thread::sleep(Duration::from_millis(100));
    let accepted = server.log().matches("accepted a connection").count();
    assert_eq!(accepted, 1, "{}", server.log());
    // -v: structured logs (fields after the message).
    let line = server.wait_for("accepted a connection");
    assert!(
        line.contains(" INFO ") && line.contains("peer=127.0.0.1:") && line.contains("paths=1"),
        "{line}"
    );
    assert_one_line_error(&send(&stranger_key, &server_pub), &["refused us", "--authorized", &addr]);
    assert_one_line_error(&send(&client_key, &stranger_pub), &["refused us", "--server-key"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.log().matches("accepted a connection").count(), accepted, "{}", server.log());
    // Mixing the kinds of key is a one-line error too.
    let psk = keygen(&dir, "shared");
    assert_one_line_error(&send(&psk, &server_pub), &["--server-key needs a private key"]);
    assert_one_line_error(
        &run(&[
            "send",
            dir.path("f").to_str().unwrap(),
            "--server",
            &addr,
            "--key",
            client_key.to_str().unwrap(),
        ]),
        &["private key", "--server-key"],
    );
    assert_one_line_error(
        &run(&["server", "--listen", "127.0.0.1:0", "--key", server_key.to_str().unwrap()]),
        &["private key", "--authorized"],
    );
}

/// `--code` and `--scheduler` reach the connection; a code the mode cannot use is refused in one
/// line that says which are allowed.
#[test]
fn code_and_scheduler_flags() {
    let mut t = recv_setup("scheme", 200_000, 9, &["-v"]);
    let key = t.key.clone();
    let k = key.to_str().unwrap();
    let f = t.input();
    let f = f.as_str();
    let o = run(&[
        "send",
        f,
        "--server",
        &t.addr,
        "--key",
        k,
        "--code",
        "raptorq",
        "--scheduler",
        "roundrobin",
        "--path",
        "127.0.0.1",
        "--path",
        "127.0.0.1",
        "--emulate",
        "40mbit,5ms,2%",
    ]);
    t.assert_delivered(&o);
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--mode", "dfec", "--code", "rlnc"]),
        &["--code rlnc", "--mode dfec", "allowed: xor"],
    );
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--mode", "fmtcp", "--code", "xor"]),
        &["allowed: raptorq"],
    );
    assert_one_line_error(&run(&["send", f, "--key", k, "--code", "lt"]), &["--code", "unknown code"]);
    assert_one_line_error(
        &run(&["send", f, "--key", k, "--scheduler", "fastest"]),
        &["--scheduler", "minrtt"],
    );
    assert_one_line_error(
        &run(&["server", "--key", k, "--mode", "sato", "--code", "raptorq"]),
        &["allowed: xor"],
    );
}

/// `--config`: the file fills what the command line leaves out, a flag wins over it, an unknown
/// key is an error naming the key and the file.
#[test]
fn config_file_fills_flags_and_flags_win() {
    let mut t = recv_setup("config", 50_000, 4, &[]);
    let (key, addr) = (t.key.clone(), t.addr.clone());
    let conf = t.dir.path("braid.toml");
    std::fs::write(
        &conf,
        format!(
            "key = {:?}\nmode = \"quic\"\n[client]\nserver = \"{addr}\"\ntimeout = 2.0\n",
            key.to_str().unwrap()
        ),
    )
    .unwrap();
    let c = conf.to_str().unwrap();
    let f = t.input();
    let f = f.as_str();
    // The file's (bad) mode is used when no flag says otherwise...
    assert_one_line_error(&run(&["--config", c, "send", f]), &["--mode", "unknown mode `quic`"]);
    // ...and the flag wins; the server address and key come from the file.
    let o = run(&["--config", c, "send", f, "--mode", "braid"]);
    t.assert_delivered(&o);
    std::fs::write(&conf, "mode = \"braid\"\n[client]\nsevrer = \"1.2.3.4:5\"\n").unwrap();
    assert_one_line_error(&run(&["--config", c, "send", f]), &["sevrer", c, "line 3"]);
    assert_one_line_error(
        &run(&["--config", t.dir.path("none.toml").to_str().unwrap(), "send", f]),
        &["cannot read"],
    );
    // Subcommand tables: `[server]` for `braid server`, `[forward]` for `braid forward`.
    std::fs::write(&conf, format!("key = {:?}\n[server]\nlisten = \"1.2.3\"\n", key.to_str().unwrap()))
        .unwrap();
    assert_one_line_error(&run(&["--config", c, "server"]), &["--listen \"1.2.3\"", "bad address"]);
    assert_one_line_error(
        &run(&["--config", c, "forward", "--to", "x:1"]),
        &["forward needs --listen", "[forward]"],
    );
    // The example in the repository is a valid file for every subcommand.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../braid.toml");
    let o = run(&["--config", example, "send", f, "--key", t.dir.path("nokey").to_str().unwrap()]);
    assert_one_line_error(&o, &["nokey", "not found"]);
}

/// `braid server --emulate` impairs the server's side: a 2 MB upload through a 20 Mbit/s
/// emulated server link takes at least 0.8 s (it takes a few ms unimpaired) and arrives intact.
#[test]
fn server_side_emulation() {
    let mut t = recv_setup("serveremu", 2_000_000, 8, &["--emulate", "20mbit,10ms,2%"]);
    let start = Instant::now();
    let o = run(&["send", &t.input(), "--server", &t.addr, "--key", t.key.to_str().unwrap()]);
    let took = start.elapsed();
    t.assert_delivered(&o);
    assert!(took >= Duration::from_millis(800), "2 MB through 20 Mbit/s in {took:?}");
    assert_one_line_error(
        &run(&["server", "--key", t.key.to_str().unwrap(), "--emulate", "fast"]),
        &["--emulate"],
    );
}
