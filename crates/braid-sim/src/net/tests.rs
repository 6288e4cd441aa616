//! Tests of the event loop with small endpoints written for the purpose.

use std::time::Duration;

use super::*;
use braid_netem::link::QueueLimit;
use braid_netem::loss::LossModel;

const MS: u64 = 1000;

fn at(us: u64) -> Instant {
    Instant::from_micros(us)
}

/// Sends a ping of `size` bytes on every path every `interval`, records the RTT of each pong.
/// As a server (`echo`), returns every datagram on the path it came from.
#[derive(Default)]
struct Pinger {
    echo: bool,
    size: usize,
    interval: u64,
    paths: usize,
    next_ping: u64,
    count: u32,
    outbox: Vec<(usize, Vec<u8>)>,
    /// (path, sent at, rtt)
    rtts: Vec<(usize, u64, u64)>,
}

impl Pinger {
    fn client(size: usize, interval: u64, paths: usize) -> Pinger {
        Pinger { size, interval, paths, ..Default::default() }
    }
    fn server() -> Pinger {
        Pinger { echo: true, ..Default::default() }
    }
}

impl Endpoint for Pinger {
    fn handle_datagram(&mut self, now: Instant, path: usize, datagram: &[u8]) {
        if self.echo {
            self.outbox.push((path, datagram.to_vec()));
        } else {
            let sent = u64::from_be_bytes(datagram[..8].try_into().unwrap());
            self.rtts.push((path, sent, now.as_micros() - sent));
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        if !self.echo && now.as_micros() >= self.next_ping {
            for path in 0..self.paths {
                let mut d = vec![0u8; self.size];
                d[..8].copy_from_slice(&now.as_micros().to_be_bytes());
                self.outbox.push((path, d));
            }
            self.count += 1;
            self.next_ping = now.as_micros() + self.interval;
        }
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<(usize, Vec<u8>)> {
        if self.outbox.is_empty() {
            None
        } else {
            Some(self.outbox.remove(0))
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (!self.echo).then(|| at(self.next_ping))
    }
}

#[test]
fn ping_pong_rtt_is_two_delays_plus_serialization() {
    // 1250 B at 10 Mbit/s: 1 ms serialization each way; 50 ms each way.
    let link = LinkConfig::new(10_000_000, Duration::from_millis(50));
    let (mut net, client, _server) =
        Network::pair(1, Pinger::client(1250, 200 * MS, 1), Pinger::server(), &[PathConfig::symmetric(link)])
            .unwrap();
    let report = net.run_until(at(1_950 * MS));
    assert_eq!(report.stop, StopReason::Deadline);
    assert_eq!(net.now(), at(1_950 * MS));
    let rtts = &net.endpoint(client).rtts;
    assert_eq!(rtts.len(), 10, "pings at 0, 200, …, 1800 ms all answered by 1.95 s");
    for &(_, sent, rtt) in rtts {
        assert_eq!(rtt, 2 * 50 * MS + 2 * MS, "ping sent at {sent} µs");
    }
    assert_eq!(net.stats().datagrams_sent, 20);
    assert_eq!(net.stats().datagrams_delivered, 20);
}

#[test]
fn disjoint_paths_keep_their_own_delays_and_indices() {
    let fast = PathConfig::symmetric(LinkConfig::new(100_000_000, Duration::from_millis(10)));
    let slow = PathConfig::symmetric(LinkConfig::new(1_000_000, Duration::from_millis(100)));
    let (mut net, client, server) =
        Network::pair(2, Pinger::client(125, 500 * MS, 2), Pinger::server(), &[fast, slow]).unwrap();
    assert_eq!(net.path_count(client), 2);
    assert_eq!(net.path_count(server), 2);
    net.run_until(at(1_400 * MS));
    let rtts = &net.endpoint(client).rtts;
    assert_eq!(rtts.len(), 6);
    for &(path, _, rtt) in rtts {
        // 125 B: 10 µs at 100 Mbit/s, 1 ms at 1 Mbit/s, each way.
        let expected = if path == 0 { 20 * MS + 20 } else { 200 * MS + 2 * MS };
        assert_eq!(rtt, expected, "path {path}");
    }
}

#[test]
fn multi_hop_routes_add_up() {
    let mut net = Network::new(3);
    let c = net.add_endpoint(Pinger::client(1000, 1_000 * MS, 1));
    let s = net.add_endpoint(Pinger::server());
    let access = |d| LinkConfig::new(80_000_000, Duration::from_millis(d));
    let core = LinkConfig::new(8_000_000, Duration::from_millis(20));
    let up = [net.add_link("access.up", access(1)).unwrap(), net.add_link("core.fwd", core.clone()).unwrap()];
    let down = [net.add_link("core.rev", core).unwrap(), net.add_link("access.down", access(1)).unwrap()];
    assert_eq!(net.add_path(c, s, &up, &down).unwrap(), (0, 0));
    net.run_until(at(500 * MS));
    // Per direction: 1 ms + 100 µs (access) + 20 ms + 1 ms (core) = 22.1 ms.
    assert_eq!(net.endpoint(c).rtts, vec![(0, 0, 44_200)]);
    assert_eq!(net.route(c, 0), up.to_vec());
    assert_eq!(net.link_name(up[1]), "core.fwd");
}

/// A window-limited bulk sender: keeps `window` packets of 1000 B in flight, one per ack; the
/// receiver acks each packet with a 40-byte datagram carrying the flow id it saw.
#[derive(Clone, Copy)]
struct Bulk {
    flow: u32,
    receiver: bool,
    window: u32,
    in_flight: u32,
    sent: u64,
    acked: u64,
    received: u64,
    wrong_flow: u64,
    pending_acks: u32,
}

impl Bulk {
    fn pair(flow: u32, window: u32) -> (Bulk, Bulk) {
        let base = Bulk {
            flow,
            receiver: false,
            window,
            in_flight: 0,
            sent: 0,
            acked: 0,
            received: 0,
            wrong_flow: 0,
            pending_acks: 0,
        };
        (base, Bulk { receiver: true, ..base })
    }
}

impl Endpoint for Bulk {
    fn handle_datagram(&mut self, _now: Instant, _path: usize, datagram: &[u8]) {
        let flow = u32::from_be_bytes(datagram[..4].try_into().unwrap());
        if flow != self.flow {
            self.wrong_flow += 1;
        }
        if self.receiver {
            self.received += 1;
            self.pending_acks += 1;
        } else {
            self.acked += 1;
            self.in_flight -= 1;
        }
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<(usize, Vec<u8>)> {
        let size = if self.receiver {
            if self.pending_acks == 0 {
                return None;
            }
            self.pending_acks -= 1;
            40
        } else {
            if self.in_flight == self.window {
                return None;
            }
            self.in_flight += 1;
            self.sent += 1;
            1000
        };
        let mut d = vec![0u8; size];
        d[..4].copy_from_slice(&self.flow.to_be_bytes());
        Some((0, d))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[test]
fn dumbbell_shares_the_bottleneck_and_routes_each_flow_home() {
    // 4 flows, window 50 each (200 packets in flight) over 10 Mbit/s with 10 ms each way: the
    // BDP is 25 packets, so the bottleneck is saturated and its 1000-packet queue never drops.
    let bottleneck = PathConfig::symmetric(
        LinkConfig::new(10_000_000, Duration::from_millis(10)).with_queue(QueueLimit::Packets(1000)),
    );
    let flows = (0..4).map(|f| Bulk::pair(f, 50));
    let (mut net, pairs) = Network::dumbbell(4, flows, &bottleneck).unwrap();
    net.run_until(at(10_000 * MS));
    let forward = net.links().next().unwrap().2.stats();
    // 10 s at 10 Mbit/s = 12 500 packets of 1000 B (acks take the reverse link).
    assert!((12_400..=12_500).contains(&forward.delivered), "{forward:?}");
    assert_eq!(forward.dropped_queue, 0);
    let mut total = 0;
    for &(c, s) in &pairs {
        assert_eq!(net.endpoint(c).wrong_flow + net.endpoint(s).wrong_flow, 0);
        total += net.endpoint(s).received;
        // FIFO sharing with equal windows: each flow gets a quarter, within a window.
        assert!(net.endpoint(s).received.abs_diff(forward.delivered / 4) <= 50);
    }
    assert_eq!(total, forward.delivered);
}

#[test]
fn run_until_condition_stops_on_time() {
    let link = LinkConfig::new(10_000_000, Duration::from_millis(5));
    let (mut net, client, _) =
        Network::pair(5, Pinger::client(100, 100 * MS, 1), Pinger::server(), &[PathConfig::symmetric(link)])
            .unwrap();
    let report = net.run_until_condition(at(60_000 * MS), |n| n.endpoint(client).rtts.len() >= 3);
    assert_eq!(report.stop, StopReason::Condition);
    // The third pong (ping at 200 ms) arrives after 10 ms + 2 × 80 µs.
    assert_eq!(report.now, at(210 * MS + 160));
}

#[test]
fn lossy_runs_are_reproducible_by_seed() {
    let run = |seed| {
        let link = LinkConfig::new(10_000_000, Duration::from_millis(5)).with_loss(LossModel::bernoulli(0.3));
        let (mut net, client, _) = Network::pair(
            seed,
            Pinger::client(100, 10 * MS, 1),
            Pinger::server(),
            &[PathConfig::symmetric(link)],
        )
        .unwrap();
        net.run_until(at(2_000 * MS));
        net.endpoint(client).rtts.iter().map(|r| r.1).collect::<Vec<_>>()
    };
    let a = run(7);
    assert_eq!(a, run(7), "seed 7 not reproducible");
    assert_ne!(a, run(8), "seeds 7 and 8 lost the same pings");
    // 200 pings, each survives both directions with probability 0.49.
    assert!((60..140).contains(&a.len()), "seed 7: {} pongs", a.len());
}

/// An endpoint with an expired timer that `handle_timeout` never clears, or that never stops
/// transmitting, or that echoes empty datagrams instantly.
struct Misbehaving {
    stuck_timer: bool,
    endless: bool,
    echo_empty: bool,
    timeouts: u64,
    pending: u32,
}

impl Misbehaving {
    fn new() -> Self {
        Misbehaving { stuck_timer: false, endless: false, echo_empty: false, timeouts: 0, pending: 0 }
    }
}

impl Endpoint for Misbehaving {
    fn handle_datagram(&mut self, _: Instant, _: usize, _: &[u8]) {
        if self.echo_empty {
            self.pending += 1;
        }
    }
    fn handle_timeout(&mut self, _: Instant) {
        self.timeouts += 1;
    }
    fn poll_transmit(&mut self, _: Instant) -> Option<(usize, Vec<u8>)> {
        if self.endless {
            return Some((0, vec![0u8; 100]));
        }
        if self.pending > 0 {
            self.pending -= 1;
            return Some((0, Vec::new()));
        }
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.stuck_timer.then_some(Instant::ZERO)
    }
}

#[test]
fn a_stuck_timer_cannot_spin_forever() {
    let link = PathConfig::symmetric(LinkConfig::new(1_000_000, Duration::from_millis(1)));
    let (mut net, a, _) = Network::pair(
        0,
        Misbehaving { stuck_timer: true, ..Misbehaving::new() },
        Misbehaving::new(),
        &[link],
    )
    .unwrap();
    let report = net.run_until(at(100));
    assert_eq!(report.stop, StopReason::Deadline);
    // 64 timeouts at each of the 101 microseconds 0..=100.
    assert_eq!(net.endpoint(a).timeouts, 64 * 101);
    assert_eq!(net.stats().timeout_deferrals, 101);
}

#[test]
fn an_endless_transmitter_is_cut_off_and_resumed() {
    let config = NetConfig { max_transmits_per_poll: 10, ..NetConfig::default() };
    let mut net = Network::with_config(config);
    let a = net.add_endpoint(Misbehaving { endless: true, ..Misbehaving::new() });
    let b = net.add_endpoint(Misbehaving::new());
    let small = LinkConfig::new(1_000_000, Duration::ZERO).with_queue(QueueLimit::Packets(1));
    net.connect(a, b, &[PathConfig::symmetric(small)]).unwrap();
    let report = net.run_until(at(49));
    assert_eq!(report.stop, StopReason::Deadline);
    assert_eq!(net.stats().datagrams_sent, 500, "10 per microsecond for 50 µs");
    assert_eq!(net.stats().transmit_deferrals, 50);
}

#[test]
fn zero_time_ping_pong_is_reported_as_livelock() {
    let config = NetConfig { max_events_per_instant: 1000, ..NetConfig::default() };
    let mut net = Network::with_config(config);
    let a = net.add_endpoint(Misbehaving { echo_empty: true, pending: 1, ..Misbehaving::new() });
    let b = net.add_endpoint(Misbehaving { echo_empty: true, ..Misbehaving::new() });
    net.connect(a, b, &[PathConfig::symmetric(LinkConfig::new(1_000_000, Duration::ZERO))]).unwrap();
    let report = net.run_until(at(1_000));
    assert_eq!(report.stop, StopReason::Livelock { at: Instant::ZERO });
    assert!(report.events > 1000);
}

#[test]
fn unknown_paths_are_counted_not_fatal() {
    let link = PathConfig::symmetric(LinkConfig::new(1_000_000, Duration::ZERO));
    let (mut net, _, _) =
        Network::pair(0, Pinger::client(100, 1_000 * MS, 3), Pinger::server(), &[link]).unwrap();
    net.run_until(at(10));
    assert_eq!(net.stats().unroutable, 2);
    assert_eq!(net.stats().datagrams_sent, 1);
}

#[test]
fn building_errors_name_the_problem() {
    let mut net: Network<Pinger> = Network::new(0);
    let a = net.add_endpoint(Pinger::server());
    let err = net.add_path(a, EndpointId(9), &[LinkId(0)], &[LinkId(0)]).unwrap_err();
    assert_eq!(err, NetError::UnknownEndpoint(EndpointId(9)));
    let b = net.add_endpoint(Pinger::server());
    assert_eq!(net.add_path(a, b, &[], &[]).unwrap_err(), NetError::EmptyRoute);
    let err = net.add_link("wifi", LinkConfig::new(0, Duration::ZERO)).unwrap_err();
    assert!(err.to_string().contains("link `wifi`"), "{err}");
}
