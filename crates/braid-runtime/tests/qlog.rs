//! `qlog`: a loopback transfer over two lossy paths writes one qlog file at each end; every
//! record is JSON-SEQ (RFC 7464) with valid JSON, the header is qlog 0.3's, and the packet,
//! loss, congestion, path and repair events are there.

use std::collections::BTreeSet;
use std::time::Duration;

use braid_runtime::qlog::RECORD_SEPARATOR;
use braid_runtime::{ClientConfig, Endpoint, Key, ServerConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The records of a JSON-SEQ file, each parsed (panics on anything malformed).
fn records(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(bytes.first(), Some(&RECORD_SEPARATOR), "a record starts the file");
    bytes[1..]
        .split(|&b| b == RECORD_SEPARATOR)
        .map(|r| {
            assert_eq!(r.last(), Some(&b'\n'), "a record ends with a line feed");
            serde_json::from_slice(r).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(r)))
        })
        .collect()
}

/// Checks one file; its event names.
fn check(path: &std::path::Path, vantage: &str) -> BTreeSet<String> {
    let recs = records(&std::fs::read(path).unwrap());
    let header = &recs[0];
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["trace"]["vantage_point"]["type"], vantage);
    assert_eq!(header["trace"]["common_fields"]["time_format"], "relative");
    let mut names = BTreeSet::new();
    for e in &recs[1..] {
        let name = e["name"].as_str().unwrap_or_else(|| panic!("an event has a name: {e}"));
        let time = e["time"].as_f64().unwrap_or_else(|| panic!("an event has a time: {e}"));
        assert!((0.0..60_000.0).contains(&time), "{e}");
        assert!(e["data"].is_object(), "{e}");
        if name.starts_with("transport:packet_") || name == "recovery:packet_lost" {
            assert!(e["data"]["header"]["packet_number"].is_u64(), "{e}");
            assert!(e["data"]["path_id"].is_u64(), "{e}");
        }
        if name == "recovery:metrics_updated" {
            assert!(e["data"]["congestion_window"].as_u64().unwrap() > 0, "{e}");
            assert!(e["data"]["bytes_in_flight"].is_u64(), "{e}");
            assert!(e["data"]["smoothed_rtt"].is_f64(), "{e}");
        }
        names.insert(name.to_string());
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_writes_a_qlog_file_at_each_end() {
    let dir = std::env::temp_dir().join(format!("braid-qlog-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (server_dir, client_dir) = (dir.join("server"), dir.join("client"));
    std::fs::create_dir_all(&server_dir).unwrap();
    std::fs::create_dir_all(&client_dir).unwrap();

    let key = Key::generate().unwrap();
    let mut config = ServerConfig::new(key.clone());
    config.qlog = Some(server_dir.clone());
    // The client's close may be lost on the 5 % link (it is sent once): the server then ends
    // the connection at its idle timeout, which is short here so its file completes soon.
    config.transport.params.idle_timeout_ms = 3000;
    let mut server = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Some(mut stream) = conn.accept_stream().await {
                    tokio::spawn(async move {
                        let mut data = Vec::new();
                        stream.read_to_end(&mut data).await.unwrap();
                        stream.write_all(&data).await.unwrap();
                        stream.shutdown().await.unwrap();
                    });
                }
            });
        }
    });

    let mut client = ClientConfig::new(key);
    client.paths = vec!["127.0.0.1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
    client.emulate = vec![Some("20mbit,5ms,5%".parse().unwrap()); 2];
    client.qlog = Some(client_dir.clone());
    let conn = Endpoint::connect(client, addr).await.unwrap();
    let data: Vec<u8> = (0..400_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut stream = conn.open_stream().unwrap();
    stream.write_all(&data).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut back)).await.unwrap().unwrap();
    assert!(back == data, "the echo differs");
    conn.close(0, "done");
    tokio::time::timeout(Duration::from_secs(5), conn.closed()).await.expect("a local close ends closed()");
    drop(stream);
    drop(conn);

    // Each end's file is complete once its connection is gone (the server's after the close
    // crossed the lossy link, or its idle timeout).
    let file_in = |d: &std::path::Path| {
        let files: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "one file per connection: {files:?}");
        files[0].clone()
    };
    let (client_file, server_file) = (file_in(&client_dir), file_in(&server_dir));
    assert!(client_file.to_str().unwrap().ends_with("_client.sqlog"), "{client_file:?}");
    assert!(server_file.to_str().unwrap().ends_with("_server.sqlog"), "{server_file:?}");
    // Both files end with the close: the client's at once, the server's when the client's
    // CLOSE arrives (or at its 3 s idle timeout if the CLOSE was lost).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let closed = |f: &std::path::Path| {
        std::fs::read_to_string(f).unwrap_or_default().contains("connectivity:connection_closed")
    };
    while !(closed(&client_file) && closed(&server_file)) {
        assert!(
            std::time::Instant::now() < deadline,
            "both files end with the close (client {}, server {})",
            closed(&client_file),
            closed(&server_file)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let client_names = check(&client_file, "client");
    let server_names = check(&server_file, "server");
    for names in [&client_names, &server_names] {
        for expected in [
            "connectivity:connection_started",
            "connectivity:connection_state_updated",
            "connectivity:path_updated",
            "connectivity:connection_closed",
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:metrics_updated",
        ] {
            assert!(names.contains(expected), "{expected} missing: {names:?}");
        }
    }
    // 5 % loss each way on both paths over ~600 packets: losses, and repair sent for them.
    let all: BTreeSet<_> = client_names.union(&server_names).collect();
    assert!(all.contains(&"recovery:packet_lost".to_string()), "{all:?}");
    assert!(all.contains(&"braid:repair_sent".to_string()), "{all:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
