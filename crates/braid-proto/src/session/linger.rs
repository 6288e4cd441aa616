//! A connection the application let go of (it dropped every handle) with no I/O and no clock:
//! what the application wrote is still delivered, for at most [`LINGER`] from when it let go,
//! then the connection closes (code 0, as a close the application made itself); a connection
//! with nothing left to deliver closes at once. Like a TCP socket closed with data in flight
//! (SO_LINGER off: the kernel keeps sending it), bounded so a dead peer cannot hold it.

use std::time::Duration;

use crate::{Connection, Instant};

/// Once the application let go of a connection, undelivered data gets this long before the
/// connection closes.
pub const LINGER: Duration = Duration::from_secs(3);

/// When the application let go of the connection, if it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Linger {
    since: Option<Instant>,
}

impl Linger {
    /// The application let go at `now` (a later call keeps the first time).
    pub fn start(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    pub fn is_started(&self) -> bool {
        self.since.is_some()
    }

    /// Closes `core` if the application let go and everything was delivered, or the linger is
    /// over.
    pub fn handle_timeout(&self, core: &mut Connection, now: Instant) {
        let Some(since) = self.since else { return };
        if !core.is_closed() && (core.is_idle() || now >= since + LINGER) {
            core.close(0, "");
        }
    }

    /// When [`Linger::handle_timeout`] closes `core`: at once once everything was delivered,
    /// else at the end of the linger.
    pub fn poll_timeout(&self, core: &Connection) -> Option<Instant> {
        let since = self.since.filter(|_| !core.is_closed())?;
        Some(if core.is_idle() { since } else { since + LINGER })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConnectionConfig;

    /// A connection that never came up has nothing delivered: it is not idle, so the linger
    /// runs out before it closes.
    #[test]
    fn closes_at_the_end_of_the_linger_when_data_is_left() {
        let t0 = Instant::from_micros(5_000_000);
        let mut core = Connection::client(ConnectionConfig::default(), t0, 1);
        let mut linger = Linger::default();
        assert_eq!(linger.poll_timeout(&core), None);
        linger.handle_timeout(&mut core, t0 + LINGER);
        assert!(!core.is_closed(), "not let go: nothing happens");
        linger.start(t0);
        linger.start(t0 + Duration::from_secs(1));
        assert_eq!(linger.poll_timeout(&core), Some(t0 + LINGER), "the first time counts");
        linger.handle_timeout(&mut core, t0 + LINGER - Duration::from_micros(1));
        assert!(!core.is_closed());
        linger.handle_timeout(&mut core, t0 + LINGER);
        assert!(core.is_closed());
        assert_eq!(linger.poll_timeout(&core), None, "closed: nothing more to do");
    }
}
