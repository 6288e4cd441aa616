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

/// A client and a server application in one network (`Network::pair` takes one endpoint type
/// for both ends): each variant's [`App`] answers for it.
pub enum Side<C, S> {
    Client(C),
    Server(S),
}

impl<C: App, S: App> App for Side<C, S> {
    fn conn(&mut self) -> &mut Connection {
        match self {
            Side::Client(c) => c.conn(),
            Side::Server(s) => s.conn(),
        }
    }

    fn conn_ref(&self) -> &Connection {
        match self {
            Side::Client(c) => c.conn_ref(),
            Side::Server(s) => s.conn_ref(),
        }
    }

    fn drive(&mut self, now: Instant) {
        match self {
            Side::Client(c) => c.drive(now),
            Side::Server(s) => s.drive(now),
        }
    }

    fn wake(&self) -> Option<Instant> {
        match self {
            Side::Client(c) => c.wake(),
            Side::Server(s) => s.wake(),
        }
    }
}
