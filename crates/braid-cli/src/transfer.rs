//! `braid send FILE`: the file, then its BLAKE2s-256 hash; the receiver answers with its own.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use blake2::{Blake2s256, Digest};
use braid_runtime::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{fail, ClientOpts, Fail};
use crate::request;
use crate::serve::hex;

pub async fn send(file: &Path, client: &ClientOpts) -> Result<(), Fail> {
    let shown = file.display().to_string();
    let mut f = tokio::fs::File::open(file).await.map_err(|e| fail(format!("{shown}: {e}")))?;
    let size = f.metadata().await.map_err(|e| fail(format!("{shown}: {e}")))?.len();
    let name = file.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
    let conn = client.connect().await?;
    let mut stream = conn.open_stream()?;
    let io = |e: std::io::Error| fail(format!("sending: {e}"));
    let mut header = vec![request::FILE];
    header.extend_from_slice(&(name.len() as u16).to_be_bytes());
    header.extend_from_slice(name.as_bytes());
    header.extend_from_slice(&size.to_be_bytes());
    stream.write_all(&header).await.map_err(io)?;

    let started = Instant::now();
    let mut progress = Progress::new(size);
    let (mut rd, mut wr) = tokio::io::split(stream);
    // The receiver's answer is read while sending: one that comes early is a refusal.
    let answer = async {
        let mut a = [0u8; 33];
        rd.read_exact(&mut a).await.map(|_| a)
    };
    tokio::pin!(answer);
    let mut sent = 0u64;
    let write = async {
        let mut hasher = Blake2s256::new();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = f.read(&mut buf).await.map_err(|e| fail(format!("{shown}: {e}")))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            wr.write_all(&buf[..n]).await.map_err(io)?;
            sent += n as u64;
            progress.show(sent, &conn, false);
        }
        if sent != size {
            return Err(fail(format!(
                "{shown}: changed while being sent ({sent} bytes read, {size} expected)"
            )));
        }
        let ours: [u8; 32] = hasher.finalize().into();
        wr.write_all(&ours).await.map_err(io)?;
        wr.shutdown().await.map_err(io)?;
        Ok::<_, Fail>(ours)
    };
    let ours = tokio::select! {
        ours = write => ours?,
        early = &mut answer => {
            return Err(match early {
                Ok(a) => refused(a[0]),
                Err(e) => fail(format!("the receiver stopped: {e}")),
            });
        }
    };
    // Wait for the receiver's verdict, showing progress meanwhile.
    let answer = loop {
        tokio::select! {
            r = &mut answer => break r.map_err(|e| fail(format!("no answer from the receiver: {e}")))?,
            _ = tokio::time::sleep(Duration::from_millis(250)) => progress.show(sent, &conn, false),
        }
    };
    progress.show(sent, &conn, true);
    if answer[0] != request::OK && answer[0] != request::HASH_MISMATCH {
        return Err(refused(answer[0]));
    }
    let secs = started.elapsed().as_secs_f64();
    let same = answer[0] == request::OK && answer[1..] == ours;
    let shares = path_shares(&conn);
    conn.close(0, "done");
    let _ = tokio::time::timeout(Duration::from_millis(200), conn.closed()).await;
    if !same {
        return Err(fail(format!(
            "{shown}: the receiver's hash differs (sent {}, received {})",
            hex(&ours[..8]),
            hex(&answer[1..9])
        )));
    }
    eprintln!(
        "braid: sent {name} ({size} bytes) in {secs:.2}s, {:.1} Mbit/s, paths {shares}, BLAKE2s {} ok",
        size as f64 * 8.0 / secs.max(1e-6) / 1e6,
        hex(&ours[..8]),
    );
    Ok(())
}

fn refused(status: u8) -> Fail {
    if status == request::NOT_ALLOWED {
        fail("the server takes no files (run `braid recv` there, or `braid server --dir DIR`)")
    } else {
        fail(format!("the receiver refused the file (status {status})"))
    }
}

/// Each path's share of the bytes sent, e.g. "0:52% 1:48%".
fn path_shares(conn: &Connection) -> String {
    let paths = conn.paths();
    let total: u64 = paths.iter().map(|p| p.bytes_sent).sum::<u64>().max(1);
    paths
        .iter()
        .map(|p| format!("{}:{:.0}%", p.id, p.bytes_sent as f64 * 100.0 / total as f64))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-line progress display on a terminal (rate, ETA, per-path share); silent otherwise.
struct Progress {
    size: u64,
    started: Instant,
    last: Instant,
    terminal: bool,
}

impl Progress {
    fn new(size: u64) -> Progress {
        let now = Instant::now();
        Progress { size, started: now, last: now, terminal: std::io::stderr().is_terminal() }
    }

    fn show(&mut self, sent: u64, conn: &Connection, last: bool) {
        if !self.terminal || (!last && self.last.elapsed() < Duration::from_millis(250)) {
            return;
        }
        self.last = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = sent as f64 / secs;
        let eta = if rate > 0.0 { (self.size - sent) as f64 / rate } else { 0.0 };
        let pct = if self.size == 0 { 100.0 } else { sent as f64 * 100.0 / self.size as f64 };
        eprint!(
            "\r{:8.1} MiB / {:.1} MiB {pct:5.1}%  {:7.1} Mbit/s  ETA {eta:4.0}s  paths {}   {}",
            sent as f64 / 1048576.0,
            self.size as f64 / 1048576.0,
            rate * 8.0 / 1e6,
            path_shares(conn),
            if last { "\n" } else { "" }
        );
    }
}
