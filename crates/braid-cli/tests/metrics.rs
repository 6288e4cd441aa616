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
    assert!(sample(&body, "braid_limit_hits_total{limit=\"max-connections\"}").unwrap() >= 1.0, "{body}");
    assert!(body.contains("braid_path_srtt_seconds{"), "{body}");
    assert!(body.contains("braid_path_loss_ratio{"), "{body}");
    assert!(body.contains("braid_repair_symbols_sent_total{"), "{body}");
}
