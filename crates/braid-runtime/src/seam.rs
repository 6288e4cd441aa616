//! A test seam: the points of a driver round where the application's tasks can interleave
//! with it (the driver takes and releases the connection's lock several times per round, and
//! an application task may lock it in between). A unit test runs its code at exactly one of
//! these points, so a race that timing would hit once in a while is hit every time. Compiled
//! only in this crate's tests; a test must use a current-thread runtime (the hook is the
//! thread's).

use std::cell::RefCell;

use crate::shared::Handle;

/// Where in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
    /// The core's packets were sent; its events are not yet taken.
    AfterSends,
    /// The core's events were taken and the lock released; the driver has not yet decided
    /// whether the connection is over.
    AfterEvents,
}

type Hook = Box<dyn FnMut(Point, &Handle)>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Runs `hook` at every point of every round on this thread until [`clear`].
pub(crate) fn set(hook: impl FnMut(Point, &Handle) + 'static) {
    HOOK.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
}

pub(crate) fn clear() {
    HOOK.with(|h| *h.borrow_mut() = None);
}

/// Called by the driver at `point` for the connection `handle`.
pub(crate) fn hit(point: Point, handle: &Handle) {
    // Taken out while it runs: a hook that makes the driver hit a point again does not recurse.
    let Some(mut hook) = HOOK.with(|h| h.borrow_mut().take()) else { return };
    hook(point, handle);
    HOOK.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_none() {
            *h = Some(hook);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::{ClientConfig, Connection, Endpoint, Key, ServerConfig};

    /// The application closes the client's connection at `point` of a driver round; the close
    /// must end `Connection::closed()` on this end and reach the peer as a CLOSE (loopback, no
    /// loss: well within the server's 30 s idle timeout).
    async fn close_lands_at(point: Point) {
        let key = Key::generate().unwrap();
        let mut server =
            Endpoint::server(ServerConfig::new(key.clone()), "127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = server.local_addr().unwrap();
        let client = Endpoint::connect(ClientConfig::new(key), addr).await.unwrap();
        let accepted = server.accept().await.unwrap();

        let target = Arc::as_ptr(&client.handle.shared) as usize;
        let fired = Rc::new(Cell::new(false));
        let f = fired.clone();
        set(move |p, h| {
            if p == point && !f.get() && Arc::as_ptr(&h.shared) as usize == target {
                f.set(true);
                Connection { handle: h.clone() }.close(7, "raced");
            }
        });
        client.handle.poke(); // the next round drives the client's connection
        let ended = tokio::time::timeout(Duration::from_secs(2), client.closed()).await;
        let peer = tokio::time::timeout(Duration::from_secs(2), accepted.closed()).await;
        clear();
        assert!(fired.get(), "the close landed at {point:?}");
        assert!(ended.is_ok(), "closed() returns after a close at {point:?}");
        let peer = peer.unwrap_or_else(|_| panic!("the peer heard no CLOSE after a close at {point:?}"));
        assert!(peer.to_string().contains("raced"), "the peer got the reason: {peer}");
    }

    #[tokio::test]
    async fn a_close_between_the_sends_and_the_events_still_sends_its_close() {
        close_lands_at(Point::AfterSends).await;
    }

    #[tokio::test]
    async fn a_close_after_the_events_are_taken_still_ends_the_connection() {
        close_lands_at(Point::AfterEvents).await;
    }
}
