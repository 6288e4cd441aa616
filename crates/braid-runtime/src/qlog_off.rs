//! Without the `qlog` feature no connection has a qlog file: [`QlogWriter`] has no values, so
//! the driver's qlog hooks compile to nothing and the crate needs no JSON serializer.

use std::path::Path;

use braid_proto::wire::ConnectionId;
use braid_proto::{Event, Instant};

use crate::shared::PathReport;

pub(crate) enum QlogWriter {}

impl QlogWriter {
    pub(crate) fn open(
        _: &Path,
        _: ConnectionId,
        _: bool,
        _: Instant,
        _: &[PathReport],
    ) -> Option<QlogWriter> {
        None
    }

    pub(crate) fn drain(&mut self, _: &mut braid_proto::Connection) {
        match *self {}
    }

    pub(crate) fn core_event(&mut self, _: Instant, _: &Event, _: &[PathReport]) {
        match *self {}
    }

    pub(crate) fn path(
        &mut self,
        _: Instant,
        _: u8,
        _: &str,
        _: Option<std::net::SocketAddr>,
        _: Option<std::net::SocketAddr>,
    ) {
        match *self {}
    }
}
