//! A connection as the driver keeps it in its [`Sessions`](braid_proto::session::Sessions)
//! table: the handle the application shares (the core behind its mutex) and the qlog file.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, MutexGuard};

use braid_proto::session::CoreCell;

use crate::qlog::QlogWriter;
use crate::shared::{Handle, Shared};

pub(crate) struct Conn {
    pub(crate) handle: Handle,
    /// The connection's qlog file (`--qlog DIR`).
    pub(crate) qlog: Option<QlogWriter>,
}

/// The core, lent under the connection's lock.
pub(crate) struct CoreGuard<'a>(MutexGuard<'a, Shared>);

impl Deref for CoreGuard<'_> {
    type Target = braid_proto::Connection;
    fn deref(&self) -> &braid_proto::Connection {
        &self.0.core
    }
}

impl DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut braid_proto::Connection {
        &mut self.0.core
    }
}

impl CoreCell for Conn {
    type Guard<'a> = CoreGuard<'a>;

    fn core(&mut self) -> CoreGuard<'_> {
        CoreGuard(self.handle.lock())
    }

    fn clear_poke(&mut self) {
        self.handle.poke.clear();
    }

    /// Only this reference is left: the application dropped every handle and stream (a
    /// server's connection counts once handed to `accept`).
    fn is_released(&self) -> bool {
        Arc::strong_count(&self.handle.shared) <= 1
    }
}
