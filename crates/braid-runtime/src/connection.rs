//! [`Connection`]: an established connection, as the application holds it: streams,
//! datagrams, flushing, closing and live numbers.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::task::Poll;

use braid_proto::datagram::{DatagramStats, SendDatagramError};

use crate::crypto::TAG_LEN;
use crate::shared::{Handle, PathReport};
use crate::stream::Stream;
use crate::Error;

/// An established connection.
#[derive(Clone)]
pub struct Connection {
    pub(crate) handle: Handle,
}

impl Connection {
    /// Opens a stream (bidirectional).
    pub fn open_stream(&self) -> Result<Stream, Error> {
        let mut s = self.handle.lock();
        if let Some(e) = &s.ended {
            return Err(e.error());
        }
        let id = s.core.streams().ok_or_else(|| Error::Closed("not established".into()))?.open()?;
        drop(s);
        self.handle.poke();
        Ok(Stream::new(self.handle.clone(), id))
    }

    /// The next stream the peer opened; `None` once the connection ended.
    pub async fn accept_stream(&self) -> Option<Stream> {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(id) = s.incoming_streams.pop_front() {
                return Poll::Ready(Some(id));
            }
            if s.ended.is_some() {
                return Poll::Ready(None);
            }
            s.accept_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
        .map(|id| Stream::new(self.handle.clone(), id))
    }

    /// Waits until everything written so far was delivered to the peer (or the connection
    /// ended: then the reason).
    pub async fn flush(&self) -> Result<(), Error> {
        self.handle.poke();
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(e) = &s.ended {
                return Poll::Ready(Err(e.error()));
            }
            if s.core.is_idle() {
                return Poll::Ready(Ok(()));
            }
            s.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Waits until the connection ends; the reason.
    pub async fn closed(&self) -> Error {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(e) = &s.ended {
                return Poll::Ready(e.error());
            }
            s.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Closes the connection now (unsent data is dropped; see [`Connection::flush`]).
    pub fn close(&self, code: u64, reason: &str) {
        let mut s = self.handle.lock();
        if s.ended.is_none() {
            s.core.close(code, reason);
        }
        drop(s);
        self.handle.poke();
    }

    /// The peer's address (path 0's as last seen).
    pub fn remote_address(&self) -> SocketAddr {
        self.handle.lock().paths[0].remote.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Live per-path numbers.
    pub fn paths(&self) -> Vec<PathReport> {
        let s = self.handle.lock();
        let core_stats = s.core.path_stats();
        let state = s.core.path_state();
        let mtus = s.core.path_mtus();
        s.paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut p = p.clone();
                if let (Some(st), Some(&(srtt, cwnd, loss))) = (core_stats.get(i), state.get(i)) {
                    p.stats = *st;
                    // Sent counts are the core's; on the wire each packet carries the AEAD tag.
                    p.datagrams_sent = st.packets_sent;
                    p.bytes_sent = st.bytes_sent + st.packets_sent * TAG_LEN as u64;
                    p.srtt = srtt;
                    p.cwnd = cwnd;
                    p.loss = loss;
                }
                p.plpmtu = mtus.get(i).map_or(0, |&(_, m)| m + TAG_LEN);
                p
            })
            .collect()
    }

    /// Connection-wide counters of the core (symbols, repairs, recoveries, retransmissions).
    pub fn stats(&self) -> braid_proto::conn::ConnectionStats {
        self.handle.lock().core.stats
    }

    /// Sends an unreliable datagram (PROTOCOL.md §15): sent once, on the path expected to
    /// deliver it first, covered by repair across datagrams so a loss is rebuilt without a
    /// round trip, and dropped once past its deadline (`ConnectionConfig::datagrams`, default
    /// 150 ms). Never blocks: a full queue drops its oldest datagram.
    ///
    /// An echo of datagrams over loopback:
    ///
    /// ```
    /// use braid_runtime::{ClientConfig, Endpoint, Key, ServerConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let key = Key::generate()?;
    /// let mut server = Endpoint::server(ServerConfig::new(key.clone()), "127.0.0.1:0".parse()?)?;
    /// let addr = server.local_addr()?;
    /// tokio::spawn(async move {
    ///     while let Some(conn) = server.accept().await {
    ///         tokio::spawn(async move {
    ///             while let Ok(datagram) = conn.recv_datagram().await {
    ///                 let _ = conn.send_datagram(&datagram);
    ///             }
    ///         });
    ///     }
    /// });
    /// let conn = Endpoint::connect(ClientConfig::new(key), addr).await?;
    /// assert!(conn.max_datagram_size() >= 1200);
    /// conn.send_datagram(b"ping")?;
    /// assert_eq!(conn.recv_datagram().await?, b"ping");
    /// let stats = conn.datagram_stats();
    /// assert_eq!((stats.sent, stats.delivered), (1, 1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn send_datagram(&self, data: &[u8]) -> Result<(), Error> {
        let mut s = self.handle.lock();
        if let Some(e) = &s.ended {
            return Err(e.error());
        }
        let now = braid_proto::Instant::from_micros(s.epoch.elapsed().as_micros() as u64);
        s.core.send_datagram(now, data).map_err(|e| match e {
            SendDatagramError::TooLarge { size, max } => Error::DatagramTooLarge { size, max },
            SendDatagramError::Closed => Error::Closed("closed".into()),
        })?;
        drop(s);
        self.handle.poke();
        Ok(())
    }

    /// The next datagram received (or rebuilt from repair before its deadline); waits for one.
    /// Fails once the connection ended and nothing is left to read.
    pub async fn recv_datagram(&self) -> Result<Vec<u8>, Error> {
        poll_fn(|cx| {
            let mut s = self.handle.lock();
            if let Some(d) = s.core.recv_datagram() {
                return Poll::Ready(Ok(d));
            }
            if let Some(e) = &s.ended {
                return Poll::Ready(Err(e.error()));
            }
            s.datagram_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The largest datagram [`Connection::send_datagram`] takes now: the smallest path MTU
    /// less braid's headers (a TUN device's MTU follows it).
    pub fn max_datagram_size(&self) -> usize {
        self.handle.lock().core.max_datagram_size()
    }

    /// Datagram counters: sent, delivered, recovered, late, dropped, repair overhead.
    pub fn datagram_stats(&self) -> DatagramStats {
        self.handle.lock().core.datagram_stats()
    }

    /// Whether the core handshake is done and the connection has not ended.
    pub fn is_established(&self) -> bool {
        let s = self.handle.lock();
        s.core.is_established() && s.ended.is_none()
    }

    /// Bytes of the peer's data held now (decoders and unread stream bytes).
    pub fn receive_buffered(&self) -> u64 {
        let b = self.handle.lock().core.receive_buffered();
        b.decoder_bytes + b.stream_bytes
    }
}
