//! A relay standing for a NAT that rebinds.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Tally;

/// How long a rebinding worker's relay outlives the connection's close.
pub const RELAY_LINGER: Duration = Duration::from_secs(30);

/// A UDP relay between a client and the server standing for a NAT: `rebind` makes it talk to
/// the server from a new port (what a NAT does when its mapping changes).
pub struct Relay {
    /// Where the client sends.
    pub addr: SocketAddr,
    rebind: tokio::sync::mpsc::UnboundedSender<()>,
    pub task: tokio::task::JoinHandle<()>,
    seed: u64,
    /// The address the server sees now (the relay's outside port).
    outside: Arc<std::sync::Mutex<Option<SocketAddr>>>,
    /// Datagrams carried from the client to the server.
    pub up: Arc<AtomicU64>,
}

impl Relay {
    /// A relay to `server` whose outside ports are on `ip`.
    pub async fn start(server: SocketAddr, ip: IpAddr, seed: u64) -> std::io::Result<Relay> {
        let front = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
        let addr = front.local_addr()?;
        let (rebind, mut moves) = tokio::sync::mpsc::unbounded_channel::<()>();
        let mut back = tokio::net::UdpSocket::bind(SocketAddr::new(ip, 0)).await?;
        let outside = Arc::new(std::sync::Mutex::new(back.local_addr().ok()));
        let seen = outside.clone();
        let up_count = Arc::new(AtomicU64::new(0));
        let carried = up_count.clone();

        let task = tokio::spawn(async move {
            let mut client: Option<SocketAddr> = None;
            let (mut up, mut down) = (vec![0u8; 65536], vec![0u8; 65536]);
            loop {
                tokio::select! {
                    r = front.recv_from(&mut up) => {
                        let (n, from) = match r {
                            Ok(got) => got,
                            Err(e) => {
                                eprintln!("soak: relay: client side: {e}");
                                return;
                            }
                        };
                        client = Some(from);
                        carried.fetch_add(1, Ordering::Relaxed);
                        let _ = back.send_to(&up[..n], server).await;
                    }
                    r = back.recv_from(&mut down) => {
                        let n = match r {
                            Ok((n, _)) => n,
                            Err(e) => {
                                eprintln!("soak: relay: server side: {e}");
                                return;
                            }
                        };
                        if let Some(c) = client {
                            let _ = front.send_to(&down[..n], c).await;
                        }
                    }
                    m = moves.recv() => {
                        if m.is_none() {
                            return;
                        }
                        match tokio::net::UdpSocket::bind(SocketAddr::new(ip, 0)).await {
                            Ok(b) => back = b,
                            Err(e) => {
                                eprintln!("soak: relay: a new port: {e}");
                                return;
                            }
                        }
                        *seen.lock().expect("relay") = back.local_addr().ok();
                    }
                }
            }
        });
        Ok(Relay { addr, rebind, task, seed, outside, up: up_count })
    }

    pub fn outside(&self) -> Option<SocketAddr> {
        *self.outside.lock().expect("relay")
    }

    /// Moves the relay to a new port every 1–6 s until aborted.
    pub fn keep_moving(&self, tally: Arc<Tally>) -> tokio::task::JoinHandle<()> {
        let rebind = self.rebind.clone();
        let mut x = self.seed | 1;
        tokio::spawn(async move {
            loop {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                tokio::time::sleep(Duration::from_millis(1000 + x % 5000)).await;
                if rebind.send(()).is_err() {
                    return;
                }
                tally.rebinds.fetch_add(1, Ordering::Relaxed);
            }
        })
    }
}
