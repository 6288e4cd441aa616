//! Streams as tokio `AsyncRead` + `AsyncWrite`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use braid_proto::streams::StreamError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::shared::{Handle, STREAM_SEND_BUFFER};

/// A bidirectional stream of a [`crate::Connection`]. Reads end (`Ok(0)`) when the peer
/// finished its side; `shutdown` finishes ours. Dropping a stream without `shutdown` finishes it
/// too (what was written is still delivered).
pub struct Stream {
    handle: Handle,
    id: u64,
    finished: bool,
}

impl Stream {
    pub(crate) fn new(handle: Handle, id: u64) -> Stream {
        Stream { handle, id, finished: false }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Abandons sending: unsent data is dropped and the peer's reads fail.
    pub fn reset(&mut self, code: u64) {
        if !self.finished {
            self.finished = true;
            if let Some(streams) = self.handle.lock().core.streams() {
                let _ = streams.reset(self.id, code);
            }
            self.handle.poke();
        }
    }
}

fn stream_error(e: StreamError) -> io::Error {
    let kind = match e {
        StreamError::Reset { .. } => io::ErrorKind::ConnectionReset,
        StreamError::Closed(_) => io::ErrorKind::BrokenPipe,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e.to_string())
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut s = this.handle.lock();
        let ended = s.ended.clone();
        let Some(streams) = s.core.streams() else {
            return Poll::Ready(Err(
                ended.map_or_else(|| io::Error::other("not connected"), |e| e.error().to_io())
            ));
        };
        match streams.read(this.id, buf.initialize_unfilled()) {
            Ok((0, true)) => Poll::Ready(Ok(())),
            Ok((0, false)) => {
                if let Some(e) = ended {
                    return Poll::Ready(Err(e.error().to_io()));
                }
                s.readers.insert(this.id, cx.waker().clone());
                Poll::Pending
            }
            Ok((n, _)) => {
                buf.advance(n);
                drop(s);
                // Reading may open the flow-control window: the driver sends the update.
                this.handle.poke();
                Poll::Ready(Ok(()))
            }
            Err(e) => Poll::Ready(Err(stream_error(e))),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut s = this.handle.lock();
        if let Some(e) = &s.ended {
            return Poll::Ready(Err(e.error().to_io()));
        }
        let Some(streams) = s.core.streams() else {
            return Poll::Ready(Err(io::Error::other("not connected")));
        };
        let buffered = streams.send_buffered(this.id);
        if buffered >= STREAM_SEND_BUFFER {
            s.writers.insert(this.id, cx.waker().clone());
            return Poll::Pending;
        }
        let n = data.len().min(STREAM_SEND_BUFFER - buffered);
        let r = streams.write(this.id, &data[..n]).map_err(stream_error);
        drop(s);
        this.handle.poke();
        Poll::Ready(r)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(Ok(()));
        }
        this.finished = true;
        let mut s = this.handle.lock();
        if let Some(e) = &s.ended {
            return Poll::Ready(Err(e.error().to_io()));
        }
        let r = match s.core.streams() {
            Some(streams) => streams.finish(this.id).map_err(stream_error),
            None => Err(io::Error::other("not connected")),
        };
        drop(s);
        this.handle.poke();
        Poll::Ready(r)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !self.finished {
            if let Some(streams) = self.handle.lock().core.streams() {
                let _ = streams.finish(self.id);
            }
            self.handle.poke();
        }
    }
}
