//! Batching of datagrams for one `sendmsg` with UDP generic segmentation offload (GSO, through
//! `quinn-udp`): consecutive datagrams to the same address, all of one size but the last, leave
//! as one system call. Where the kernel has no GSO, `quinn-udp` reports one segment and every
//! datagram goes alone. Receiving goes through `quinn-udp` too, because it turns on generic
//! receive offload (GRO): one message may hold several datagrams of `stride` bytes each, and
//! one read (`recvmmsg`) may return several messages.
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
        let src_ip = self.reply_from.lock().ok().and_then(|m| m.get(&destination).copied());
        let state = &self.state;
        let r = send_batch(&self.buf, self.segment, self.count, |contents, segment_size| {
            let transmit = Transmit { destination, ecn: None, contents, segment_size, src_ip };
            udp.try_io(Interest::WRITABLE, || state.try_send(udp.into(), &transmit))
        });
        self.buf.clear();
        self.count = 0;
        self.closed = false;
        r
    }
}

/// Sends `count` datagrams packed in `buf`, `segment` bytes each but the last, through `send`
/// (contents, GSO segment size): as one send, or, when the kernel refuses that send as too large
/// (EMSGSIZE), each datagram alone. The kernel judges a GSO send by its segment size, and a
/// segment larger than the interface MTU fails the whole send: a path MTU probe (PROTOCOL.md
/// §14, conn/pmtu.rs) starts a batch (it is larger than what went before) and the next, smaller
/// datagram joins it, so every probe of a size the path does not carry took a packet of data
/// with it (the namespace testbed's one-path `latency` runs: the three 1500-byte probes each lost
/// the data symbol behind them in the first 1.5 s, at 0 % loss, none dropped at the link).
/// Alone, only the oversized datagram fails, which is the probe's answer. The error returned is
/// the first of the sends that failed.
fn send_batch(
    buf: &[u8],
    segment: usize,
    count: usize,
    mut send: impl FnMut(&[u8], Option<usize>) -> io::Result<()>,
) -> io::Result<()> {
    match send(buf, (count > 1).then_some(segment)) {
        Err(e) if count > 1 && too_big(&e) => {
            let mut result = Ok(());
            for datagram in buf.chunks(segment) {
                let r = send(datagram, None);
                if result.is_ok() {
                    result = r;
                }
            }
            result
        }
        r => r,
    }
}

/// EMSGSIZE. Only Linux batches (elsewhere `quinn-udp` reports one segment per send).
fn too_big(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    return e.raw_os_error() == Some(rustix::io::Errno::MSGSIZE.raw_os_error());
    #[cfg(not(target_os = "linux"))]
    return {
        let _ = e;
        false
    };
}

/// What one message of a read holds: datagrams `stride` bytes each (the last may be shorter),
/// all from `from`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Received {
    pub stride: usize,
    pub from: SocketAddr,
}

/// One message's buffer: a full GRO batch (64 segments) of the largest datagram we accept.
const MESSAGE_BUFFER: usize = 64 * 2048;

/// Where reads land: room for `count` messages, each a GRO batch, filled by one `recvmmsg`
/// (through `quinn-udp`) per read. A server's socket carries every client's datagrams, and one
/// system call per datagram was a good part of what its driver spent reading them; a client's
/// socket carries one connection, and a soak runs a thousand of them in one process, so a
/// client reads one message at a time.
pub(crate) struct RecvBufs {
    bytes: Vec<u8>,
    meta: Vec<RecvMeta>,
    /// Messages the last read filled.
    filled: usize,
}

impl RecvBufs {
    /// Room for `count` messages (at least one, at most `quinn_udp::BATCH_SIZE`, what one
    /// `recvmmsg` takes). The memory is allocated zeroed, so pages no read reaches are never
    /// touched.
    pub fn new(count: usize) -> RecvBufs {
        let count = count.clamp(1, quinn_udp::BATCH_SIZE);
        RecvBufs { bytes: vec![0; count * MESSAGE_BUFFER], meta: vec![RecvMeta::default(); count], filled: 0 }
    }

    /// The messages of the last read, each with its bytes.
    pub fn messages(&self) -> impl Iterator<Item = (Received, &[u8])> {
        self.meta[..self.filled].iter().zip(self.bytes.chunks(MESSAGE_BUFFER)).map(|(m, buf)| {
            let got = Received { stride: m.stride.max(1), from: m.addr };
            (got, &buf[..m.len.min(buf.len())])
        })
    }
}

impl Batcher {
    /// Reads what is waiting, up to `bufs`' room, without blocking (`WouldBlock` when nothing
    /// is); returns the number of messages read.
    pub fn try_recv(&self, udp: &UdpSocket, bufs: &mut RecvBufs) -> io::Result<usize> {
        bufs.filled = 0;
        let n = udp.try_io(Interest::READABLE, || {
            let mut slices: Vec<IoSliceMut<'_>> =
                bufs.bytes.chunks_mut(MESSAGE_BUFFER).map(IoSliceMut::new).collect();
            let n = self.state.recv(udp.into(), &mut slices, &mut bufs.meta)?;
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(n)
        })?;
        bufs.filled = n;
        if let Ok(mut map) = self.reply_from.lock() {
            for m in &bufs.meta[..n] {
                let Some(local) = m.dst_ip else { continue };
                if map.len() >= MAX_REPLY_ADDRESSES && !map.contains_key(&m.addr) {
                    map.clear();
                }
                map.insert(m.addr, local);
            }
        }
        Ok(n)
    }

    /// Waits until `udp` may have something, then reads it.
    pub fn poll_recv(
        &self,
        udp: &UdpSocket,
        cx: &mut Context<'_>,
        bufs: &mut RecvBufs,
    ) -> Poll<io::Result<usize>> {
        loop {
            match udp.poll_recv_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.try_recv(udp, bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket::bind_udp;

    /// A batch whose first datagram is larger than the interface MTU (a path MTU probe) and
    /// whose second is not: the kernel refuses the whole GSO send, and the second datagram must
    /// still leave, alone, while the first stays lost. A fake `sendmsg` with a 1500-byte MTU
    /// stands in for the kernel (a test socket on loopback has a 64 KiB MTU).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_oversized_datagram_loses_only_itself() {
        const MTU: usize = 1500 - 28;
        let emsgsize = || io::Error::from_raw_os_error(rustix::io::Errno::MSGSIZE.raw_os_error());
        let (probe, data) = (vec![1u8; 1500], vec![2u8; 1430]);
        let buf = [probe.clone(), data.clone()].concat();
        // (length, first byte) of each datagram the fake kernel took.
        let mut wire: Vec<(usize, u8)> = Vec::new();
        let mut calls = 0;
        let r = send_batch(&buf, probe.len(), 2, |contents, segment| {
            calls += 1;
            if segment.unwrap_or(contents.len()) > MTU {
                return Err(emsgsize());
            }
            wire.extend(contents.chunks(segment.unwrap_or(contents.len())).map(|d| (d.len(), d[0])));
            Ok(())
        });
        assert_eq!(wire, vec![(data.len(), 2)], "the data datagram left, the probe did not");
        assert_eq!(calls, 3, "the batch, then each datagram alone");
        assert!(r.is_err_and(|e| too_big(&e)), "the probe's EMSGSIZE is reported");
        // Datagrams that fit leave as one batch, untouched.
        let (mut wire, mut calls) = (Vec::new(), 0);
        let buf = [data.clone(), data.clone(), vec![3u8; 100]].concat();
        send_batch(&buf, data.len(), 3, |contents, segment| {
            calls += 1;
            wire.push((contents.len(), segment));
            Ok(())
        })
        .unwrap();
        assert_eq!((wire, calls), (vec![(buf.len(), Some(data.len()))], 1));
    }

    /// Datagrams waiting on a socket come back in order, several per read when there is room,
    /// one per read when there is not.
    #[tokio::test]
    async fn one_read_takes_what_is_waiting() {
        let server = bind_udp("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let to = server.local_addr().unwrap();
        let batch = Batcher::new(&server).unwrap();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let from = client.local_addr().unwrap();
        let sent: Vec<Vec<u8>> = (1..=6).map(|i| vec![i as u8; 100 * i]).collect();
        let read_all = |bufs: &mut RecvBufs, reads: &mut usize| {
            let mut got = Vec::new();
            while got.len() < sent.len() {
                match batch.try_recv(&server, bufs) {
                    Ok(n) => {
                        *reads += 1;
                        assert!(n >= 1 && bufs.messages().count() == n);
                        for (m, bytes) in bufs.messages() {
                            assert_eq!(m.from, from);
                            got.push(bytes.to_vec());
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(5))
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            got
        };
        // A datagram sent on loopback is in the receiver's queue when `send_to` returns.
        for (room, reads_expected) in [(32, 1), (1, 6)] {
            for d in &sent {
                client.send_to(d, to).unwrap();
            }
            server.readable().await.unwrap();
            let mut reads = 0;
            let got = read_all(&mut RecvBufs::new(room), &mut reads);
            assert_eq!(got, sent, "room for {room}");
            assert_eq!(reads, reads_expected, "room for {room}");
        }
    }
}
