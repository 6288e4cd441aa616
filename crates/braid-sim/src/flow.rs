//! braid connections as simulator endpoints, carrying one bulk transfer from client to server.
//!
//! The data is a deterministic byte pattern, so the receiver checks every byte, in order, as it
//! reads, without keeping a copy: a run that completes has delivered the whole transfer intact.

use braid_proto::conn::Mode;
use braid_proto::session::CoreNews;
use braid_proto::streams::{StreamEvent, Streams};
use braid_proto::{BlockRecord, Connection, ConnectionConfig, Event, Instant};

mod secure;

pub use secure::SecureFlow;

/// The transfer pattern repeats every `PERIOD` bytes (a prime, so it never lines up with
/// symbol or block sizes).
pub(crate) const PERIOD: usize = 65_521;

fn pattern_table() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        // Two periods, so any window of up to `PERIOD` bytes is one contiguous slice.
        (0..2 * PERIOD as u64)
            .map(|i| ((i % PERIOD as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
            .collect()
    })
}

/// Byte `i` of every transfer.
pub fn pattern(i: u64) -> u8 {
    pattern_table()[(i % PERIOD as u64) as usize]
}

/// Bytes `offset .. offset + len` of the pattern (`len` ≤ `PERIOD`).
pub(crate) fn pattern_slice(offset: u64, len: usize) -> &'static [u8] {
    let start = (offset % PERIOD as u64) as usize;
    &pattern_table()[start..start + len]
}

enum Role {
    Sender { total: u64, written: u64, stream: Option<u64> },
    Receiver { received: u64, corrupt_at: Option<u64>, done_at: Option<Instant>, read_buf: Vec<u8> },
}

/// One end of a bulk transfer over a braid connection.
pub struct BulkFlow {
    conn: Connection,
    role: Role,
    start: Instant,
    /// Block milestones drained from the connection.
    blocks: Vec<BlockRecord>,
}

/// Bytes the sender keeps queued in its stream ahead of the pipe.
const SEND_AHEAD: usize = 1 << 20;

impl BulkFlow {
    /// The sending end: connects at `start`, then writes `bytes` on one stream and finishes it.
    pub fn sender(config: ConnectionConfig, seed: u64, bytes: u64, start: Instant) -> BulkFlow {
        BulkFlow {
            conn: Connection::client(config, start, seed),
            role: Role::Sender { total: bytes, written: 0, stream: None },
            start,
            blocks: Vec::new(),
        }
    }

    /// The receiving end: accepts the connection and reads and checks everything.
    pub fn receiver(config: ConnectionConfig) -> BulkFlow {
        BulkFlow {
            conn: Connection::server(config, Instant::ZERO),
            role: Role::Receiver { received: 0, corrupt_at: None, done_at: None, read_buf: vec![0; PERIOD] },
            start: Instant::ZERO,
            blocks: Vec::new(),
        }
    }

    /// A client/server pair for `mode`.
    pub fn pair(mode: Mode, paths: usize, seed: u64, bytes: u64, start: Instant) -> (BulkFlow, BulkFlow) {
        let config = ConnectionConfig { mode, paths: paths as u8, ..ConnectionConfig::default() };
        (BulkFlow::sender(config.clone(), seed, bytes, start), BulkFlow::receiver(config))
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection itself, e.g. to open or remove a path during the transfer.
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Bytes received in order and intact (receiver).
    pub fn received(&self) -> u64 {
        match self.role {
            Role::Receiver { received, .. } => received,
            Role::Sender { .. } => 0,
        }
    }

    /// When the whole stream, FIN included, had been read (receiver).
    pub fn done_at(&self) -> Option<Instant> {
        match self.role {
            Role::Receiver { done_at, .. } => done_at,
            Role::Sender { .. } => None,
        }
    }

    /// Block milestones this end recorded (sender: first symbol sent; receiver: delivered).
    pub fn block_log(&self) -> &[BlockRecord] {
        &self.blocks
    }

    /// Checks a finished transfer's block logs: every block `sender` started (its first symbol
    /// sent) was delivered by `receiver` once and in order (0, 1, 2, …). Returns how many.
    pub fn check_block_order(sender: &BulkFlow, receiver: &BulkFlow) -> Result<usize, String> {
        let delivered: Vec<u64> = receiver
            .block_log()
            .iter()
            .filter_map(|b| match *b {
                BlockRecord::Delivered { block, .. } => Some(block),
                _ => None,
            })
            .collect();
        let started =
            sender.block_log().iter().filter(|b| matches!(b, BlockRecord::FirstSent { .. })).count();
        if delivered.is_empty() {
            return Err("no block delivered".into());
        }
        if let Some((i, &b)) = delivered.iter().enumerate().find(|&(i, &b)| b != i as u64) {
            return Err(format!("blocks out of order: delivery {i} was block {b}"));
        }
        if delivered.len() != started {
            return Err(format!("{started} blocks started, {} delivered", delivered.len()));
        }
        Ok(started)
    }

    /// The first offset whose byte differed from the pattern, if any (receiver).
    pub fn corrupt_at(&self) -> Option<u64> {
        match self.role {
            Role::Receiver { corrupt_at, .. } => corrupt_at,
            Role::Sender { .. } => None,
        }
    }

    /// A bulk transfer has no timer of its own.
    fn app_timeout(&self) -> Option<Instant> {
        None
    }

    /// The application's side: write what flow control and the send-ahead bound allow; read
    /// and check everything readable. Returns what the core's events it took said of the
    /// connection (for the security layer's table; see [`SecureFlow`]).
    fn drive(&mut self, now: Instant) -> CoreNews {
        let mut news = CoreNews::default();
        self.blocks.extend(self.conn.drain_block_log());
        match &mut self.role {
            Role::Sender { total, written, stream } => {
                if !self.conn.is_established() || written == total {
                    return news;
                }
                let Some((streams, id)) = send_stream(&mut self.conn, stream) else { return news };
                while *written < *total && streams.send_buffered(id) < SEND_AHEAD {
                    let n = (*total - *written).min(PERIOD as u64);
                    if streams.write(id, pattern_slice(*written, n as usize)).is_err() {
                        return news;
                    }
                    *written += n;
                    if written == total {
                        let _ = streams.finish(id);
                    }
                }
            }
            Role::Receiver { received, corrupt_at, done_at, read_buf } => {
                while let Some(event) = self.conn.poll_event() {
                    news.note(&event);
                    let Event::Stream(StreamEvent::Readable(id)) = event else { continue };
                    let Some(streams) = self.conn.streams() else { return news };
                    while let Ok((n, fin)) = streams.read(id, read_buf) {
                        check_pattern(&read_buf[..n], received, corrupt_at);
                        if fin && done_at.is_none() {
                            *done_at = Some(now);
                        }
                        if n == 0 {
                            break;
                        }
                    }
                }
            }
        }
        if matches!(self.role, Role::Sender { .. }) {
            while let Some(event) = self.conn.poll_event() {
                news.note(&event);
            }
        }
        news
    }
}

/// `impl Endpoint` for a flow type: a braid connection (field `conn`) with an application on
/// top that drives it (writes or reads its streams; inherent `fn drive(&mut self, now)`) after
/// every input, and may have a timer of its own (inherent `fn app_timeout(&self)`, a frame
/// capture, ...). The connection starts at field `start`: before then it neither sends nor
/// takes timeouts. Written once here for every such flow (bulk, video).
macro_rules! conn_flow_endpoint {
    ($flow:ty) => {
        impl $crate::net::Endpoint for $flow {
            fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
                self.conn.handle_datagram(now, path as u8, datagram);
                self.drive(now);
            }

            fn handle_timeout(&mut self, now: Instant) {
                if now >= self.start {
                    self.conn.handle_timeout(now);
                    self.drive(now);
                }
            }

            fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
                let mut buf = Vec::new();
                let path = self.poll_transmit_into(now, &mut buf)?;
                Some((path, buf))
            }

            fn poll_transmit_into(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<usize> {
                if now < self.start {
                    return None;
                }
                self.drive(now);
                // The connection writes straight into the network's recycled buffer: no copy.
                let t = self.conn.poll_transmit(now, buf)?;
                buf.truncate(t.size);
                Some(usize::from(t.path))
            }

            fn poll_timeout(&self) -> Option<Instant> {
                let conn = self.conn.poll_timeout().map(|t| t.max(self.start));
                match (conn, self.app_timeout()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
        }
    };
}
pub(crate) use conn_flow_endpoint;

conn_flow_endpoint!(BulkFlow);

/// The sender's stream (opened on first use, its id kept in `stream`), or `None` while the
/// connection has no streams or cannot open one yet.
pub(crate) fn send_stream<'a>(
    conn: &'a mut Connection,
    stream: &mut Option<u64>,
) -> Option<(&'a mut Streams, u64)> {
    let streams = conn.streams()?;
    let id = match stream {
        Some(id) => *id,
        None => *stream.insert(streams.open().ok()?),
    };
    Some((streams, id))
}

/// Checks `buf`, read at stream offset `*received`, against the transfer pattern, records the
/// first wrong byte's offset in `corrupt_at` (if none is recorded yet), and advances `received`.
pub(crate) fn check_pattern(buf: &[u8], received: &mut u64, corrupt_at: &mut Option<u64>) {
    let n = buf.len();
    if corrupt_at.is_none() && *buf != *pattern_slice(*received, n) {
        let k = (0..n).find(|&k| buf[k] != pattern(*received + k as u64));
        *corrupt_at = k.map(|k| *received + k as u64);
    }
    *received += n as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_slices_agree_with_the_bytewise_pattern() {
        for offset in [0u64, 1, 65_520, 65_521, 100_000, 1 << 33] {
            for len in [0usize, 1, 1200, PERIOD] {
                let slice = pattern_slice(offset, len);
                assert!(
                    slice.iter().enumerate().all(|(k, &b)| b == pattern(offset + k as u64)),
                    "{offset}+{len}"
                );
            }
        }
    }

    #[test]
    fn block_order_check_names_what_is_wrong() {
        let at = Instant::ZERO;
        let flow = |records: &[BlockRecord]| {
            let mut f = BulkFlow::receiver(ConnectionConfig::default());
            f.blocks = records.to_vec();
            f
        };
        let sent =
            |n: u64| flow(&(0..n).map(|block| BlockRecord::FirstSent { block, at }).collect::<Vec<_>>());
        let got = |blocks: &[u64]| {
            flow(&blocks.iter().map(|&block| BlockRecord::Delivered { block, at }).collect::<Vec<_>>())
        };
        assert_eq!(BulkFlow::check_block_order(&sent(3), &got(&[0, 1, 2])), Ok(3));
        assert!(BulkFlow::check_block_order(&sent(3), &got(&[0, 2, 1]))
            .unwrap_err()
            .contains("out of order"));
        assert!(BulkFlow::check_block_order(&sent(3), &got(&[0, 1]))
            .unwrap_err()
            .contains("3 blocks started"));
        assert!(BulkFlow::check_block_order(&sent(1), &got(&[])).is_err());
    }
}
