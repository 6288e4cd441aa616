//! What a client asks of the server on a new stream: the first bytes of the stream.
//!
//! `CONNECT`: `0x01 | len (1) | "host:port"`; the server answers one status byte (below), then
//! `len (1) | message` when it is not OK, and the stream then carries the TCP connection. The
//! client may write the connection's bytes right after the request, before the answer
//! (`braid forward` does); the server reads exactly the request, so they wait in the stream.
//! `FILE`: `0x02 | name len (2, BE) | name | size (8, BE)`, then `size` bytes, then the sender's
//! 32-byte BLAKE2s-256 hash of them; the receiver answers `status (1) | its hash (32)`.
//! `BENCH` and `ECHO`: below.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const CONNECT: u8 = 1;
pub const FILE: u8 = 2;
/// `0x03 | direction (1: 0 client sends, 1 server sends) | duration ms (4, BE)`. Upload: the
/// server reads to the end, then answers `bytes (8) | µs from first to last byte (8)`.
/// Download: the server writes for the duration, then ends the stream.
pub const BENCH: u8 = 3;
/// `0x04`, then every byte is echoed until the end (latency probes).
pub const ECHO: u8 = 4;

/// Status codes, chosen to be SOCKS5 reply codes (RFC 1928 §6), so `braid socks` passes them on.
pub const OK: u8 = 0;
pub const GENERAL_FAILURE: u8 = 1;
pub const NOT_ALLOWED: u8 = 2;
pub const NETWORK_UNREACHABLE: u8 = 3;
pub const HOST_UNREACHABLE: u8 = 4;
pub const CONNECTION_REFUSED: u8 = 5;
pub const TIMED_OUT: u8 = 6;

pub const HASH_MISMATCH: u8 = 0x10;

pub async fn write_connect<W: AsyncWrite + Unpin>(w: &mut W, target: &str) -> std::io::Result<()> {
    let bytes = target.as_bytes();
    if bytes.len() > 255 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "target longer than 255 bytes"));
    }
    let mut msg = vec![CONNECT, bytes.len() as u8];
    msg.extend_from_slice(bytes);
    w.write_all(&msg).await
}

/// Reads a length-prefixed (1 byte) string.
pub async fn read_short_string<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<String> {
    let len = r.read_u8().await?;
    let mut b = vec![0u8; len.into()];
    r.read_exact(&mut b).await?;
    String::from_utf8(b).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
}

pub async fn write_status<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u8,
    message: &str,
) -> std::io::Result<()> {
    let mut msg = vec![status];
    if status != OK {
        let m = &message.as_bytes()[..message.len().min(255)];
        msg.push(m.len() as u8);
        msg.extend_from_slice(m);
    }
    w.write_all(&msg).await
}

/// Reads the server's answer to a CONNECT: `Ok(())` or the status and message.
pub async fn read_status<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Result<(), (u8, String)>> {
    let status = r.read_u8().await?;
    if status == OK {
        return Ok(Ok(()));
    }
    let message = read_short_string(r).await?;
    Ok(Err((status, message)))
}
