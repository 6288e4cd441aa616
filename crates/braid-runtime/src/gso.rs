//! Batching of datagrams for one `sendmsg` with UDP generic segmentation offload (GSO, through
//! `quinn-udp`): consecutive datagrams to the same address, all of one size but the last, leave
//! as one system call. Where the kernel has no GSO, `quinn-udp` reports one segment and every
//! datagram goes alone. Receiving goes through `quinn-udp` too, because it turns on generic
//! receive offload (GRO): one read may return several datagrams of `stride` bytes each.
//!
//! Replies leave from the local address the peer wrote to. A server socket bound to the
//! wildcard address on a multihomed host would otherwise answer a path's datagrams from whatever
//! address the kernel's route picks, and a client whose path socket is connected to the
//! server's address drops them (seen on the namespace testbed: path 2 reached the server's path-1
//! address through policy routing, and every answer came back from the path-2 address).

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::task::{Context, Poll};

use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Bytes in one batch: below the 64 KiB UDP limit.
const MAX_BATCH_BYTES: usize = 60_000;

/// Peers whose local address is remembered for replies. Any datagram may add one (they are
/// recorded before authentication), so the map is cleared when it would grow past this; a peer
/// forgotten that way is answered from the kernel's choice until its next datagram.
const MAX_REPLY_ADDRESSES: usize = 4096;

pub(crate) struct Batcher {
    state: UdpSocketState,
    buf: Vec<u8>,
    to: Option<SocketAddr>,
    segment: usize,
    count: usize,
    /// The last datagram was shorter than `segment`: nothing may follow it in this batch.
    closed: bool,
    /// For each peer, the local address its latest datagram was sent to (see the module doc).
    reply_from: Mutex<HashMap<SocketAddr, IpAddr>>,
}

impl Batcher {
    pub fn new(udp: &UdpSocket) -> io::Result<Batcher> {
        Ok(Batcher {
            state: UdpSocketState::new(udp.into())?,
            buf: Vec::with_capacity(MAX_BATCH_BYTES + 2048),
            to: None,
            segment: 0,
            count: 0,
            closed: false,
            reply_from: Mutex::new(HashMap::new()),
        })
    }

    /// Queues a datagram; sends the batch first when this one cannot join it. Errors are
    /// those of a send (the datagram counts as lost).
    pub fn push(&mut self, udp: &UdpSocket, to: SocketAddr, data: &[u8]) -> io::Result<()> {
        let mut result = Ok(());
        let fits = self.to == Some(to)
            && !self.closed
            && data.len() <= self.segment
            && self.count < self.state.max_gso_segments()
            && self.buf.len() + data.len() <= MAX_BATCH_BYTES;
        if self.count > 0 && !fits {
            result = self.flush(udp);
        }
        if self.count == 0 {
            self.to = Some(to);
            self.segment = data.len();
        }
        self.buf.extend_from_slice(data);
        self.count += 1;
        self.closed = data.len() < self.segment;
        result
    }

    /// Sends what is queued.
    pub fn flush(&mut self, udp: &UdpSocket) -> io::Result<()> {
        let Some(destination) = self.to.take() else { return Ok(()) };
        let transmit = Transmit {
            destination,
            ecn: None,
            contents: &self.buf,
            segment_size: (self.count > 1).then_some(self.segment),
            src_ip: self.reply_from.lock().ok().and_then(|m| m.get(&destination).copied()),
        };
        let r = udp.try_io(Interest::WRITABLE, || self.state.try_send(udp.into(), &transmit));
        self.buf.clear();
        self.count = 0;
        self.closed = false;
        r
    }
}

/// What one read returned: `len` bytes of datagrams `stride` bytes each (the last may be
/// shorter), all from `from`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Received {
    pub len: usize,
    pub stride: usize,
    pub from: SocketAddr,
}

/// Receive buffer size: a full GRO batch (64 segments) of the largest datagram we accept.
pub(crate) const RECV_BUFFER: usize = 64 * 2048;

impl Batcher {
    /// Reads what is waiting, without blocking (`WouldBlock` when nothing is).
    pub fn try_recv(&self, udp: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
        udp.try_io(Interest::READABLE, || {
            let mut meta = [RecvMeta::default()];
            let mut bufs = [IoSliceMut::new(buf)];
            let n = self.state.recv(udp.into(), &mut bufs, &mut meta)?;
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let m = meta[0];
            if let Some(local) = m.dst_ip {
                if let Ok(mut map) = self.reply_from.lock() {
                    if map.len() >= MAX_REPLY_ADDRESSES && !map.contains_key(&m.addr) {
                        map.clear();
                    }
                    map.insert(m.addr, local);
                }
            }
            Ok(Received { len: m.len, stride: m.stride.max(1), from: m.addr })
        })
    }

    /// Waits until `udp` may have something, then reads it.
    pub fn poll_recv(
        &self,
        udp: &UdpSocket,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<Received>> {
        loop {
            match udp.poll_recv_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.try_recv(udp, buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
}
