//! A server's admission (PROTOCOL.md §13.2, §13.3) on a virtual clock: the [`Listener`] fed
//! first messages and other datagrams with their source addresses, with
//! [`insecure`](braid_proto::session::insecure)'s test double for the cryptography. No
//! sockets, no sleeps. Each test states a rule and would fail if the listener dropped it: the
//! connection cap under a flood of half-open handshakes, the 3× budget toward unvalidated
//! addresses, the memory of first messages, the refusal hint, the handshake rate, routing.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::crypto::{refusal, Initiator, INIT_LEN};
use braid_proto::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use braid_proto::session::{
    Dropped, HandshakeFailure, Hello, Incoming, Listener, ListenerConfig, ListenerEvent, NewConnection,
    Session, SessionEvent, AMPLIFICATION,
};
use braid_proto::wire::{ConnectionId, DatagramType, PacketType};
use braid_proto::{Connection, ConnectionConfig, Instant};
use proptest::prelude::*;

const SECRET: u64 = 5;

fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// A source address of its own for datagram `i` (a flood from spoofed addresses).
fn spoofed(i: u32) -> SocketAddr {
    SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 4000))
}

fn listener(max_connections: usize, handshake_rate: u32) -> Listener<InsecureResponder> {
    let config = ListenerConfig { max_connections, handshake_rate, ..ListenerConfig::default() };
    let mut token = 0u64;
    let random = Box::new(move || -> braid_proto::session::Random {
        token += 1;
        let mut x = token;
        Box::new(move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            x
        })
    });
    Listener::new(
        InsecureResponder { secret: SECRET },
        config,
        ConnectionConfig::default(),
        random,
        Instant::ZERO,
    )
}

fn cid(n: u64) -> ConnectionId {
    ConnectionId(n.to_be_bytes())
}

/// Client `n`'s first message under `secret` (its own connection id and ephemeral key).
fn first(secret: u64, n: u64) -> Vec<u8> {
    let hello = Hello { paths: 1, ..Hello::default() };
    InsecureInitiator::new(secret, cid(n), &hello, n, 0).first_message().to_vec()
}

/// Everything the new connection's session sends at once (its answer), as (to, bytes).
fn answers(new: &mut NewConnection<InsecureKeys>, now: Instant) -> Vec<(SocketAddr, usize)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while let Some(t) = new.session.poll_transmit(&mut new.core, now, &mut buf) {
        out.push((t.to, t.size));
    }
    out
}

/// Bytes in and out per address, to hold the listener to the 3× budget.
#[derive(Default)]
struct Budget(HashMap<SocketAddr, (usize, usize)>);

impl Budget {
    fn received(&mut self, from: SocketAddr, n: usize) {
        self.0.entry(from).or_default().0 += n;
    }

    fn sent(&mut self, to: SocketAddr, n: usize) {
        self.0.entry(to).or_default().1 += n;
    }

    fn check(&self) {
        for (addr, (got, sent)) in &self.0 {
            assert!(
                *sent as u64 <= AMPLIFICATION * *got as u64,
                "{addr}: {sent} bytes sent for {got} received"
            );
        }
    }
}

/// A flood of authenticated first messages whose clients never finish the core handshake: the
/// listener holds at most `max_connections`, turns the rest away before any crypto, sends no
/// address more than 3× what came from it, and forgets the half-open ones when their time is up
/// (an established one stays), so new clients get in again.
#[test]
fn a_flood_of_half_open_first_messages_stays_under_the_cap() {
    const CAP: usize = 16;
    let mut l = listener(CAP, 100_000);
    let mut budget = Budget::default();
    let mut accepted = Vec::new();
    let mut capped = 0;
    for i in 0..1000u32 {
        let now = at_ms(u64::from(i));
        let (from, data) = (spoofed(i), first(SECRET, u64::from(i)));
        budget.received(from, data.len());
        match l.handle_datagram(now, from, &data) {
            Incoming::Accepted(mut new) => {
                assert_eq!(new.from, from);
                for (to, n) in answers(&mut new, now) {
                    budget.sent(to, n);
                }
                accepted.push(new.cid);
            }
            Incoming::Dropped(Dropped::ConnectionLimit) => capped += 1,
            _ => panic!("first message {i}: neither accepted nor capped"),
        }
        assert!(l.connections() <= CAP);
    }
    budget.check();
    assert_eq!((accepted.len(), capped), (CAP, 1000 - CAP));
    assert_eq!(l.half_open(), CAP);
    // One finishes its handshake; the others expire 10 s after their first message.
    l.established(accepted[3]);
    assert_eq!(l.poll_timeout(), Some(at_ms(0) + l.config().handshake_timeout));
    l.handle_timeout(at_ms(9_999));
    assert_eq!(l.poll_event(), None, "nothing expires early");
    l.handle_timeout(at_ms(10_000 + CAP as u64));
    let mut expired = Vec::new();
    while let Some(ListenerEvent::HandshakeExpired(c)) = l.poll_event() {
        expired.push(c);
    }
    assert_eq!(expired.len(), CAP - 1);
    assert!(!expired.contains(&accepted[3]));
    assert_eq!((l.connections(), l.half_open(), l.poll_timeout()), (1, 0, None));
    // Room again, for CAP - 1 new clients.
    let now = at_ms(20_000);
    let again = (2000..2100u64)
        .filter(|n| {
            matches!(l.handle_datagram(now, spoofed(*n as u32), &first(SECRET, *n)), Incoming::Accepted(_))
        })
        .count();
    assert_eq!(again, CAP - 1);
}

/// A first message seen before creates nothing and gets no answer, whether its connection
/// closed or expired half-open; while the connection exists, a repeat goes to that connection's
/// session, which answers only a byte-identical one with the same (smaller) answer.
#[test]
fn a_replayed_first_message_gets_no_answer() {
    let mut l = listener(8, 100);
    let data = first(SECRET, 1);
    let Incoming::Accepted(mut new) = l.handle_datagram(at_ms(0), spoofed(1), &data) else {
        panic!("accepted")
    };
    let answer = answers(&mut new, at_ms(0));
    assert_eq!(answer.len(), 1);
    // A repeat while it exists (its answer was lost): routed to the connection's session.
    assert!(matches!(l.handle_datagram(at_ms(5), spoofed(1), &data), Incoming::Connection(c) if c == cid(1)));
    new.session.handle_datagram(&mut new.core, at_ms(5), 0, spoofed(1), &data);
    assert_eq!(answers(&mut new, at_ms(5)), answer, "the same answer again");
    // The connection closes; the same first message later, from anywhere: nothing.
    assert!(l.forget(new.cid));
    for (t, from) in [(1_000, spoofed(1)), (2_000, spoofed(99))] {
        assert!(matches!(l.handle_datagram(at_ms(t), from, &data), Incoming::Dropped(Dropped::Replayed)));
    }
    assert_eq!(l.connections(), 0);
    // The same after a half-open connection expired.
    let other = first(SECRET, 2);
    assert!(matches!(l.handle_datagram(at_ms(3_000), spoofed(2), &other), Incoming::Accepted(_)));
    l.handle_timeout(at_ms(13_000));
    assert_eq!(l.poll_event(), Some(ListenerEvent::HandshakeExpired(cid(2))));
    assert!(matches!(
        l.handle_datagram(at_ms(13_001), spoofed(2), &other),
        Incoming::Dropped(Dropped::Replayed)
    ));
    assert_eq!(l.connections(), 0);
}

/// A client with the wrong key: each first message is refused with the 9-byte hint and nothing
/// is kept; the client's session, fed the hints, fails at its deadline saying the server
/// refused it (the reason the runtime turns into "wrong key").
#[test]
fn a_wrong_key_is_refused_with_the_reason() {
    let mut l = listener(8, 100);
    let server = SocketAddr::from(([192, 0, 2, 1], 443));
    let me = spoofed(7);
    let config = ConnectionConfig::default();
    let mut core = Connection::client(config, Instant::ZERO, 1);
    let initiator =
        InsecureInitiator::new(SECRET + 1, core.cid(), &Hello { paths: 1, ..Hello::default() }, 3, 0);
    let timeout = Duration::from_secs(5);
    let mut client = Session::client(Box::new(initiator), 1, server, timeout, Box::new(|| 1), Instant::ZERO);
    let (mut now, mut buf, mut hints, mut events) = (Instant::ZERO, Vec::new(), 0, Vec::new());
    loop {
        client.handle_timeout(&mut core, now);
        while let Some(e) = client.poll_event() {
            events.push(e);
        }
        while let Some(t) = client.poll_transmit(&mut core, now, &mut buf) {
            let sent = buf[..t.size].to_vec();
            let Incoming::Refused { hint } = l.handle_datagram(now, me, &sent) else { panic!("refused") };
            assert_eq!(Some(hint), refusal(&sent));
            assert_eq!(hint[1..9], core.cid().0);
            assert!(hint.len() as u64 * AMPLIFICATION <= INIT_LEN as u64);
            hints += 1;
            client.handle_datagram(&mut core, now, 0, server, &hint);
        }
        let Some(next) = client.poll_timeout(&core) else { break };
        now = next;
    }
    assert!(hints >= 3, "the first message was repeated and refused each time ({hints})");
    assert_eq!(l.connections(), 0, "nothing kept");
    assert_eq!(events, [SessionEvent::Failed(HandshakeFailure::TimedOut { refused: true })]);
    assert_eq!(now, Instant::ZERO + timeout);
}

/// The handshake rate: a burst gets one second's worth, then the rate; first messages beyond
/// it are dropped before authentication (a wrong key then gets no hint: no crypto was done) and
/// keep nothing.
#[test]
fn the_handshake_rate_holds() {
    const RATE: u32 = 20;
    let mut l = listener(100_000, RATE);
    let mut n = 0u64;
    let mut offer = |l: &mut Listener<InsecureResponder>, now: Instant, count: u64| {
        let mut got = 0;
        for _ in 0..count {
            n += 1;
            match l.handle_datagram(now, spoofed(n as u32), &first(SECRET, n)) {
                Incoming::Accepted(_) => got += 1,
                Incoming::Dropped(Dropped::RateLimited) => {}
                _ => panic!("neither accepted nor rate-limited"),
            }
        }
        got
    };
    assert_eq!(offer(&mut l, Instant::ZERO, 100), RATE as usize, "a burst: one second's worth");
    // 500 a second offered for 5 s: the rate's 100 get in.
    let later: usize = (1..=50).map(|i| offer(&mut l, at_ms(i * 100), 50)).sum();
    assert!((99..=101).contains(&later), "{later}");
    assert_eq!(l.connections(), RATE as usize + later, "the rest kept nothing");
    // Out of tokens, a wrong key is dropped, not answered.
    let wrong = first(SECRET + 1, 1 << 40);
    assert!(matches!(
        l.handle_datagram(at_ms(5_000), spoofed(1), &wrong),
        Incoming::Dropped(Dropped::RateLimited)
    ));
    assert!(matches!(l.handle_datagram(at_ms(6_000), spoofed(1), &wrong), Incoming::Refused { .. }));
}

/// Later datagrams go to their connection by its id; anything else is dropped with its reason;
/// a server that stopped accepting drops new first messages and still routes to what it has.
#[test]
fn datagrams_are_routed_by_connection_id() {
    let mut l = listener(8, 100);
    let Incoming::Accepted(new) = l.handle_datagram(at_ms(0), spoofed(1), &first(SECRET, 1)) else {
        panic!("accepted")
    };
    let for_cid = |c: ConnectionId| {
        let mut d = vec![DatagramType::PathHello.first_byte()];
        d.extend_from_slice(&c.0);
        d.resize(34, 0);
        d
    };
    let route =
        |l: &mut Listener<InsecureResponder>, d: &[u8]| match l.handle_datagram(at_ms(1), spoofed(2), d) {
            Incoming::Connection(c) => Ok(c),
            Incoming::Dropped(why) => Err(why),
            _ => panic!("neither routed nor dropped"),
        };
    assert_eq!(route(&mut l, &for_cid(new.cid)), Ok(new.cid));
    assert_eq!(route(&mut l, &for_cid(cid(2))), Err(Dropped::UnknownConnection));
    assert_eq!(route(&mut l, &[0xff; 40]), Err(Dropped::UnknownType));
    assert_eq!(route(&mut l, &for_cid(new.cid)[..5]), Err(Dropped::Malformed));
    assert_eq!(route(&mut l, &first(SECRET, 3)[..INIT_LEN - 1]), Err(Dropped::Malformed));
    l.stop_accepting();
    assert_eq!(route(&mut l, &first(SECRET, 3)), Err(Dropped::NotAccepting));
    assert_eq!(route(&mut l, &for_cid(new.cid)), Ok(new.cid));
    assert!(l.forget(new.cid));
    assert_eq!(route(&mut l, &for_cid(new.cid)), Err(Dropped::UnknownConnection));
}

/// One step of a hostile peer population.
#[derive(Debug, Clone)]
enum Step {
    /// Random bytes (a random first byte of the init type half the time).
    Garbage(Vec<u8>, bool),
    /// Client `n`'s first message (under the wrong key if the flag is set), from address `n`.
    First(u8, bool),
    /// Client `n`'s first message again, from a forged address.
    Replay(u8, u16),
    /// A datagram naming client `n`'s connection id: a core packet, a first message or an
    /// answer, by the second field.
    ForConnection(u8, u8),
    /// Time passes.
    Wait(u16),
    /// Client `n`'s core handshake finishes, or its connection closes.
    Establish(u8),
    Close(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (proptest::collection::vec(any::<u8>(), 0..1300), any::<bool>())
            .prop_map(|(d, i)| Step::Garbage(d, i)),
        (0u8..40, proptest::bool::weighted(0.2)).prop_map(|(n, w)| Step::First(n, w)),
        (0u8..40, any::<u16>()).prop_map(|(n, a)| Step::Replay(n, a)),
        (0u8..40, 0u8..3).prop_map(|(n, t)| Step::ForConnection(n, t)),
        (0u16..3000).prop_map(Step::Wait),
        (0u8..40).prop_map(Step::Establish),
        (0u8..40).prop_map(Step::Close),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever arrives in whatever order, the listener never panics, never holds more than its
    /// cap, accepts each first message at most once ever, answers only a first message's length
    /// with a refusal, never sends an address more than 3× what came from it, and routes only
    /// to connections it has.
    #[test]
    fn hostile_traffic_keeps_the_rules(steps in proptest::collection::vec(step(), 1..300)) {
        const CAP: usize = 6;
        let mut l = listener(CAP, 10);
        let mut now = Instant::ZERO;
        let mut budget = Budget::default();
        let mut live: HashMap<ConnectionId, NewConnection<InsecureKeys>> = HashMap::new();
        let mut ever = std::collections::HashSet::new();
        for s in steps {
            let (from, data) = match s {
                Step::Garbage(mut d, init) => {
                    if init && !d.is_empty() {
                        d[0] = DatagramType::NoiseInit.first_byte();
                    }
                    (spoofed(9999), d)
                }
                Step::First(n, wrong) => (spoofed(n.into()), first(if wrong { SECRET + 1 } else { SECRET }, n.into())),
                Step::Replay(n, a) => (spoofed(10_000 + u32::from(a)), first(SECRET, n.into())),
                Step::ForConnection(n, t) => {
                    let ty = [DatagramType::Packet(PacketType::Data), DatagramType::NoiseInit, DatagramType::NoiseResponse];
                    let mut d = vec![ty[usize::from(t)].first_byte()];
                    d.extend_from_slice(&cid(n.into()).0);
                    d.resize(60, 1);
                    (spoofed(n.into()), d)
                }
                Step::Wait(ms) => {
                    now += Duration::from_millis(ms.into());
                    l.handle_timeout(now);
                    while let Some(ListenerEvent::HandshakeExpired(c)) = l.poll_event() {
                        prop_assert!(live.remove(&c).is_some(), "expired a connection it did not have");
                    }
                    continue;
                }
                Step::Establish(n) => {
                    l.established(cid(n.into()));
                    continue;
                }
                Step::Close(n) => {
                    prop_assert_eq!(l.forget(cid(n.into())), live.remove(&cid(n.into())).is_some());
                    continue;
                }
            };
            budget.received(from, data.len());
            match l.handle_datagram(now, from, &data) {
                Incoming::Connection(c) => {
                    prop_assert!(live.contains_key(&c), "routed to a connection it does not have");
                    let new = live.get_mut(&c).expect("checked");
                    new.session.handle_datagram(&mut new.core, now, 0, from, &data);
                    for (to, n) in answers(new, now) {
                        budget.sent(to, n);
                    }
                }
                Incoming::Accepted(mut new) => {
                    prop_assert!(ever.insert(data.clone()), "a first message accepted twice");
                    for (to, n) in answers(&mut new, now) {
                        budget.sent(to, n);
                    }
                    live.insert(new.cid, *new);
                }
                Incoming::Refused { hint } => {
                    prop_assert_eq!(data.len(), INIT_LEN);
                    prop_assert_eq!(Some(hint), refusal(&data));
                    budget.sent(from, hint.len());
                }
                Incoming::Dropped(_) => {}
            }
            prop_assert!(l.connections() <= CAP);
            prop_assert_eq!(l.connections(), live.len());
        }
        budget.check();
    }
}
