//! The hostile checks after the soak: a replayed first message, half-open and wrong-key
//! floods, a client that stops reading.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use braid_cli::request;
use braid_proto::wire::ConnectionId;
use braid_runtime::crypto::{ClientHandshake, Hello};
use braid_runtime::{ClientConfig, Endpoint, Key};
use tokio::io::AsyncWriteExt;

use crate::probe;

/// Sends `datagrams` to the server from one socket at about `per_second`; the bytes answered.
fn send_and_count(server: SocketAddr, datagrams: &[Vec<u8>], per_second: u64) -> (u64, u64) {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(1))).expect("timeout");
    let (mut sent, mut answered) = (0u64, 0u64);
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    for (n, d) in datagrams.iter().enumerate() {
        let _ = sock.send_to(d, server);
        sent += d.len() as u64;
        while let Ok((len, _)) = sock.recv_from(&mut buf) {
            answered += len as u64;
        }
        let due = start + Duration::from_micros(n as u64 * 1_000_000 / per_second);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let drain = Instant::now() + Duration::from_millis(500);
    while Instant::now() < drain {
        if let Ok((len, _)) = sock.recv_from(&mut buf) {
            answered += len as u64;
        }
    }
    (sent, answered)
}

/// Runs the checks against the server at `server` (process `pid`) and prints what each found.
pub fn checks(runtime: &tokio::runtime::Runtime, server: SocketAddr, pid: u32, key: &Key) {
    // A replayed first message.
    let hello = Hello { paths: 1, ..Hello::default() };
    let one = ClientHandshake::new(key, ConnectionId([9; 8]), &hello).init_datagram().to_vec();
    let (sent, answered) = send_and_count(server, &vec![one; 2000], 2000);
    println!(
        "hostile: one first message sent 2,000 times: {sent} bytes in, {answered} answered ({:.3}×)",
        answered as f64 / sent as f64
    );

    // Half-open: first messages with the right key that never go further, and with a wrong one.
    let before = probe(pid).0;
    let good: Vec<Vec<u8>> = (0..5000u64)
        .map(|n| {
            ClientHandshake::new(key, ConnectionId((n + 100).to_be_bytes()), &hello).init_datagram().to_vec()
        })
        .collect();
    let (sent, answered) = send_and_count(server, &good, 1000);
    let (after, _, _) = probe(pid);
    println!(
        "hostile: 5,000 authenticated first messages never finished (1,000/s): {sent} bytes in, {answered} answered ({:.3}×); server RSS {:.1} → {:.1} MiB",
        answered as f64 / sent as f64,
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    let wrong = Key::generate().expect("key");
    let bad: Vec<Vec<u8>> = (0..5000u64)
        .map(|n| {
            ClientHandshake::new(&wrong, ConnectionId((n + 10_000).to_be_bytes()), &hello)
                .init_datagram()
                .to_vec()
        })
        .collect();
    let (sent, answered) = send_and_count(server, &bad, 1000);
    println!(
        "hostile: 5,000 first messages with a wrong key: {sent} bytes in, {answered} answered ({:.4}×); server RSS {:.1} MiB",
        answered as f64 / sent as f64,
        probe(pid).0 as f64 / 1024.0
    );

    // A client that asks for a 20 s download and reads nothing.
    std::thread::sleep(Duration::from_secs(35)); // the half-open ones time out
    let before = probe(pid).0;
    runtime.block_on(async {
        let conn = Endpoint::connect(ClientConfig::new(key.clone()), server).await.expect("connect");
        let mut stream = conn.open_stream().expect("stream");
        let mut req = vec![request::BENCH, 1];
        req.extend_from_slice(&20_000u32.to_be_bytes());
        stream.write_all(&req).await.expect("request");
        let mut peak = 0;
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            peak = peak.max(probe(pid).0);
        }
        println!(
            "hostile: a client that stops reading a download: server RSS {:.1} MiB before, at most {:.1} MiB over 15 s (the connection's window is 1 MiB)",
            before as f64 / 1024.0,
            peak as f64 / 1024.0
        );
        drop(stream);
        conn.close(0, "done");
    });
}
