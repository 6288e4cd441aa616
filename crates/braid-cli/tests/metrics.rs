//! `braid server --metrics`: a scrape parses as Prometheus text and shows the connections,
//! paths, handshakes and the limit that turned a client away.

use std::time::Duration;

use braid_cli::metrics;
use braid_runtime::{ClientConfig, Endpoint, Key, Limit, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_string()
}

/// The value of the sample `name` (labels included, as written), if present.
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_connections_paths_handshakes_and_limits() {
    let key = Key::generate().unwrap();
    let mut config = ServerConfig::new(key.clone());
    config.limits.max_connections = 1;
    let mut server = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    let at = metrics::serve("127.0.0.1:0".parse().unwrap(), server.counters(), server.connections())
        .await
        .ok()
        .unwrap();
    let counters = server.counters();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some(conn) = server.accept().await {
            held.push(conn);
        }
    });
    let mut client_config = ClientConfig::new(key.clone());
    client_config.paths = vec!["any".parse().unwrap(), "any".parse().unwrap()];
    let _conn = Endpoint::connect(client_config, addr).await.unwrap();
    // A second client: over the limit of one connection, never answered.
    let mut second = ClientConfig::new(key);
    second.handshake_timeout = Duration::from_millis(600);
    assert!(Endpoint::connect(second, addr).await.is_err());
    assert!(counters.limit_hits(Limit::MaxConnections) >= 1);

    let body = scrape(at).await;
    assert!(body.ends_with("# EOF\n"), "{body}");
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "not a sample: {line}");
    }
    assert_eq!(sample(&body, "braid_connections{state=\"established\"}"), Some(1.0), "{body}");
    assert_eq!(sample(&body, "braid_paths{state=\"active\"}"), Some(2.0), "{body}");
    assert_eq!(sample(&body, "braid_handshakes_accepted_total"), Some(1.0), "{body}");
    if cfg!(target_os = "linux") {
        // Read from /proc/net/udp; nothing here fills the socket's buffer.
        assert_eq!(sample(&body, "braid_socket_receive_drops_total"), Some(0.0), "{body}");
    }
    assert!(sample(&body, "braid_limit_hits_total{limit=\"max-connections\"}").unwrap() >= 1.0, "{body}");
    assert!(body.contains("braid_path_srtt_seconds{"), "{body}");
    assert!(body.contains("braid_path_loss_ratio{"), "{body}");
    assert!(body.contains("braid_repair_symbols_sent_total{"), "{body}");
}

/// Reads `child`'s stderr lines into a shared string (in the background).
fn collect_stderr(child: &mut std::process::Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::BufRead;
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut l = sink.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    log
}

/// The text after `marker` on the first stderr line that has it, waiting up to 10 s.
fn wait_for(log: &std::sync::Mutex<String>, marker: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(rest) =
            log.lock().unwrap().lines().find_map(|l| l.split_once(marker).map(|(_, r)| r.to_string()))
        {
            return rest;
        }
        assert!(std::time::Instant::now() < deadline, "no {marker:?} in: {}", log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client subcommand (`braid bench` over two paths) serves its connection's metrics under
/// the server's names while it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_subcommand_serves_its_connection() {
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_braid");
    let dir = std::env::temp_dir().join(format!("braid-client-metrics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("k");
    Key::generate().unwrap().write_file(&key).unwrap();
    let mut server = Command::new(bin)
        .args(["server", "--listen", "127.0.0.1:0", "--key"])
        .arg(&key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server_log = collect_stderr(&mut server);
    let addr = wait_for(&server_log, "listening on ").split_whitespace().next().unwrap().to_string();
    let mut bench = Command::new(bin)
        .args(["bench", "-s", &addr, "-t", "4", "--path", "127.0.0.1", "--path", "127.0.0.1"])
        .args(["--emulate", "20mbit,5ms,1%", "--metrics", "127.0.0.1:0", "--key"])
        .arg(&key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bench_log = collect_stderr(&mut bench);
    let at = wait_for(&bench_log, "metrics on http://");
    let at: std::net::SocketAddr = at.trim_end_matches("/metrics").parse().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let body = scrape(at).await;
    let _ = bench.kill();
    let _ = server.kill();
    let _ = (bench.wait(), server.wait());
    let _ = std::fs::remove_dir_all(&dir);

    assert!(body.ends_with("# EOF\n"), "{body}");
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.rsplit(' ').next().unwrap().parse::<f64>().is_ok(), "not a sample: {line}");
    }
    assert_eq!(sample(&body, "braid_connections{state=\"established\"}"), Some(1.0), "{body}");
    assert_eq!(sample(&body, "braid_paths{state=\"active\"}"), Some(2.0), "{body}");
    let sent: f64 = body
        .lines()
        .filter(|l| l.starts_with("braid_path_sent_bytes_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(sent > 100_000.0, "a second of a bench sent more: {body}");
    assert!(body.contains("braid_path_srtt_seconds{"), "{body}");
    assert!(body.contains("braid_repair_symbols_sent_total{"), "{body}");
    assert!(body.contains("braid_datagrams_late_total{"), "{body}");
    // Server-wide counters are the server's alone.
    assert!(!body.contains("braid_handshakes_accepted_total"), "{body}");
}
