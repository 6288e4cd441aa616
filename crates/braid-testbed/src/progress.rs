//! The shared state of one bulk transfer, read and written by the sender threads, the sink's
//! connection threads and the latency probe: bytes received, when it started and finished, the
//! bytes no sender connection has claimed yet, and the stop flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::sys;

/// Shared progress of one transfer.
#[derive(Default)]
pub struct Progress {
    /// Bytes the sink has received, over all connections.
    pub received: AtomicU64,
    /// When the first sender called `connect`.
    pub started: Mutex<Option<Instant>>,
    /// When the sink held the last byte.
    pub done: Mutex<Option<Instant>>,
    /// Bytes not yet claimed by a sender connection.
    pub unclaimed: AtomicU64,
    pub stop: AtomicBool,
}

impl Progress {
    pub fn new(total: u64) -> Arc<Progress> {
        let p = Progress::default();
        p.unclaimed.store(total, Ordering::SeqCst);
        Arc::new(p)
    }

    /// The run was told to stop, or the process was interrupted (Ctrl-C).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || sys::interrupted()
    }
}
