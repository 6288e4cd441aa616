//! A core connection with a test's application on top, as a simulator endpoint: every input
//! (a datagram, a timer) goes to the connection, then the application reads and writes what it
//! has; before each send it gets the same chance. The application may ask for its own wake-ups
//! (a sending clock).

use braid_proto::{Connection, Instant};
use braid_sim::Endpoint;

/// What a test's application does around its connection.
pub trait App {
    fn conn(&mut self) -> &mut Connection;
    fn conn_ref(&self) -> &Connection;
    /// Reads and writes what the application has at `now` (called after every input).
    fn drive(&mut self, now: Instant);
    /// The application's own next wake-up, if it has one.
    fn wake(&self) -> Option<Instant> {
        None
    }
}

/// An [`App`] as a simulator endpoint (the field is the application, to read after a run).
pub struct Driven<A>(pub A);

impl<A: App> Endpoint for Driven<A> {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        self.0.conn().handle_datagram(now, path as u8, datagram);
        self.0.drive(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.0.conn().handle_timeout(now);
        self.0.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        self.0.drive(now);
        let mut buf = Vec::new();
        let t = self.0.conn().poll_transmit(now, &mut buf)?;
        buf.truncate(t.size);
        Some((usize::from(t.path), buf))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (self.0.conn_ref().poll_timeout(), self.0.wake()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
