//! What the `braid` command's tests share: temp dirs, keys, a `braid` process in the background
//! with its stderr collected, the one-line error check, a seeded byte pattern, and the server
//! and send/recv setups several tests start from.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BRAID: &str = env!("CARGO_BIN_EXE_braid");

/// A fresh directory under the system's temp dir (removed at the end of the test).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("braid-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    pub fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn keygen(dir: &TempDir, name: &str) -> PathBuf {
    let key = dir.path(name);
    let out = Command::new(BRAID).args(["keygen", "-o"]).arg(&key).output().unwrap();
    assert!(out.status.success(), "keygen: {}", String::from_utf8_lossy(&out.stderr));
    key
}

/// A braid process in the background; its stderr is collected; killed when dropped.
pub struct Bg {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Bg {
    pub fn spawn(args: &[&str], key: &Path) -> Bg {
        let mut child = Command::new(BRAID)
            .args(args)
            .arg("--key")
            .arg(key)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Bg { child, log }
    }

    /// Waits for a stderr line containing `marker`; returns that line.
    pub fn wait_for(&mut self, marker: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(line) = self.log().lines().find(|l| l.contains(marker)) {
                return line.to_string();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("braid exited ({status}) before printing {marker:?}: {}", self.log());
            }
            assert!(Instant::now() < deadline, "no {marker:?} in: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The address in a "listening on ADDR (UDP)" line.
    pub fn listening(&mut self) -> SocketAddr {
        let line = self.wait_for("listening on");
        line.split_whitespace().nth(3).unwrap().parse().unwrap()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "braid still running: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(args: &[&str]) -> Output {
    Command::new(BRAID).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A failure: non-zero exit and exactly one line on stderr, containing every `needle`.
pub fn assert_one_line_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err:?}");
    }
}

pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn free_tcp_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// A test's temp dir with a key `k`, and a `braid server` (with `extra` flags) on loopback.
pub struct ServerSetup {
    pub dir: TempDir,
    pub key: PathBuf,
    pub server: Bg,
    pub addr: String,
}

pub fn server_setup(name: &str, extra: &[&str]) -> ServerSetup {
    let dir = TempDir::new(name);
    let key = keygen(&dir, "k");
    let mut args = vec!["server", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut server = Bg::spawn(&args, &key);
    let addr = server.listening().to_string();
    ServerSetup { dir, key, server, addr }
}

/// A file transfer's two ends: a test's temp dir with a key `k`, `in.bin` holding `data`
/// (`len` bytes of `pattern(len, seed)`) and a `braid recv` (with `extra` flags) on loopback
/// that writes `out`.
pub struct RecvSetup {
    pub dir: TempDir,
    pub key: PathBuf,
    pub data: Vec<u8>,
    pub out: PathBuf,
    pub recv: Bg,
    pub addr: String,
}

pub fn recv_setup(name: &str, len: usize, seed: u64, extra: &[&str]) -> RecvSetup {
    let dir = TempDir::new(name);
    let key = keygen(&dir, "k");
    let data = pattern(len, seed);
    std::fs::write(dir.path("in.bin"), &data).unwrap();
    let out = dir.path("out.bin");
    let mut args = vec!["recv", "--listen", "127.0.0.1:0", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut recv = Bg::spawn(&args, &key);
    let addr = recv.listening().to_string();
    RecvSetup { dir, key, data, out, recv, addr }
}

impl RecvSetup {
    pub fn input(&self) -> String {
        self.dir.path("in.bin").to_str().unwrap().to_string()
    }

    /// `send` (its output `o`) succeeded, the receiver exited cleanly, and the file arrived intact.
    pub fn assert_delivered(&mut self, o: &Output) {
        assert!(o.status.success(), "send failed: {}\nrecv: {}", stderr(o), self.recv.log());
        assert!(self.recv.wait_exit(Duration::from_secs(10)).success(), "recv: {}", self.recv.log());
        assert!(std::fs::read(&self.out).unwrap() == self.data, "received file differs");
    }
}
