//! What a server's [`Sessions`] round costs as its table grows: `n` clients on a virtual
//! clock (the insecure stand-in for Noise, no I/O), each established, then a steady load in
//! which one client at a time writes a little and every datagram reaches the other side in
//! the next round. Only the server's calls are timed (its datagrams in, its round, its
//! `poll_timeout`); the result is the wall time per server round, for each table size.
//!
//! ```text
//! cargo run --release -p braid-proto --example sessions_rounds -- [ROUNDS] [N...]
//! ```
//!
//! Defaults: 20,000 rounds at 10, 100 and 1,000 connections. The machine's noise moves the
//! absolute figures; compare the sizes of one run (the ratio to the 10-connection table).
//! Last, the server closes every connection and rounds with nothing due are timed again with
//! `n` closing records kept.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::session::insecure::{InsecureInitiator, InsecureKeys, InsecureResponder};
use braid_proto::session::{
    CoreCell, CoreNews, Hello, Host, Listener, ListenerConfig, NewConnection, SecureTransmit, Session,
    Sessions,
};
use braid_proto::wire::ConnectionId;
use braid_proto::{Connection, ConnectionConfig, Instant};

/// A core in a plain field.
struct Cell {
    core: Connection,
}

impl CoreCell for Cell {
    type Guard<'a> = &'a mut Connection;
    fn core(&mut self) -> &mut Connection {
        &mut self.core
    }
}

/// One end's I/O: the datagrams it sent this round, with their destination.
#[derive(Default)]
struct Io {
    out: Vec<(SocketAddr, Vec<u8>)>,
    /// Connections driven (each drive ends with its core's events).
    driven: u64,
}

impl Host<InsecureKeys, Cell> for Io {
    fn send(&mut self, _now: Instant, t: SecureTransmit, data: &[u8]) {
        self.out.push((t.to, data[..t.size].to_vec()));
    }
    fn core_events(&mut self, _cid: ConnectionId, cell: &mut Cell, _now: Instant) -> CoreNews {
        self.driven += 1;
        let mut news = CoreNews::default();
        while let Some(e) = cell.core.poll_event() {
            news.note(&e);
        }
        news
    }
    fn accept(&mut self, _now: Instant, new: NewConnection<InsecureKeys>) -> (Cell, Session<InsecureKeys>) {
        (Cell { core: new.core }, new.session)
    }
}

type Table = Sessions<InsecureResponder, Cell>;

fn server_addr() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], 443))
}

fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 2], 1000 + i as u16))
}

struct Client {
    table: Table,
    io: Io,
    cid: ConnectionId,
    stream: Option<u64>,
}

struct Net {
    now: Instant,
    server: Table,
    server_io: Io,
    clients: Vec<Client>,
    by_addr: HashMap<SocketAddr, usize>,
    /// Wall time spent in the server's calls (datagrams in, rounds, `poll_timeout`), and its
    /// rounds.
    server_time: [Duration; 3],
    server_rounds: u64,
}

impl Net {
    fn new(n: usize) -> Net {
        let config =
            ListenerConfig { max_connections: n + 1, handshake_rate: 1_000_000, ..ListenerConfig::default() };
        let listener = Listener::new(
            InsecureResponder { secret: 5 },
            config,
            ConnectionConfig::default(),
            Box::new(|| Box::new(|| 3)),
            Instant::ZERO,
        );
        let clients = (0..n)
            .map(|i| {
                let core = Connection::client(ConnectionConfig::default(), Instant::ZERO, 1 + i as u64);
                let cid = core.cid();
                let hello = Hello { paths: 1, ..Hello::default() };
                let initiator = InsecureInitiator::new(5, cid, &hello, 9 + i as u64, 0);
                let session = Session::client(
                    Box::new(initiator),
                    1,
                    server_addr(),
                    Duration::from_secs(30),
                    Box::new(|| 1),
                    Instant::ZERO,
                );
                let cell = Cell { core };
                Client { table: Sessions::client(cid, cell, session), io: Io::default(), cid, stream: None }
            })
            .collect();
        Net {
            now: Instant::ZERO,
            server: Sessions::server(listener),
            server_io: Io::default(),
            clients,
            by_addr: (0..n).map(|i| (client_addr(i), i)).collect(),
            server_time: [Duration::ZERO; 3],
            server_rounds: 0,
        }
    }

    /// Delivers what each side sent last round, then a round on every client and the server.
    fn step(&mut self) {
        let now = self.now;
        let started = std::time::Instant::now();
        for (i, c) in self.clients.iter_mut().enumerate() {
            for (_, d) in c.io.out.drain(..) {
                self.server.handle_datagram(now, 0, client_addr(i), &d, &mut self.server_io);
            }
        }
        let received = std::time::Instant::now();
        self.server.handle_timeout(now, &mut self.server_io);
        let rounded = std::time::Instant::now();
        let _ = std::hint::black_box(self.server.poll_timeout());
        let polled = std::time::Instant::now();
        self.server_time[0] += received - started;
        self.server_time[1] += rounded - received;
        self.server_time[2] += polled - rounded;
        self.server_rounds += 1;
        for (to, d) in self.server_io.out.drain(..) {
            if let Some(&i) = self.by_addr.get(&to) {
                let c = &mut self.clients[i];
                c.table.handle_datagram(now, 0, server_addr(), &d, &mut c.io);
            }
        }
        for c in &mut self.clients {
            c.table.handle_timeout(now, &mut c.io);
        }
        self.now = now + Duration::from_micros(500);
    }

    fn established(&self) -> usize {
        self.clients.iter().filter(|c| c.table.cell(&c.cid).is_some_and(|x| x.core.is_established())).count()
    }

    /// Client `i` writes `bytes` on its stream and pokes its table.
    fn write(&mut self, i: usize, bytes: &[u8]) {
        let c = &mut self.clients[i];
        let Some(cell) = c.table.cell_mut(&c.cid) else { return };
        let Some(streams) = cell.core.streams() else { return };
        let id = match c.stream {
            Some(id) => id,
            None => {
                let id = streams.open().expect("a stream");
                c.stream = Some(id);
                id
            }
        };
        let _ = streams.write(id, bytes);
        c.table.poke(&c.cid);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u64 = args.next().map_or(20_000, |a| a.parse().expect("ROUNDS: a number"));
    let mut sizes: Vec<usize> = args.map(|a| a.parse().expect("N: a number")).collect();
    if sizes.is_empty() {
        sizes = vec![10, 100, 1000];
    }
    let mut base = None;
    for n in sizes {
        let mut net = Net::new(n);
        while net.established() < n && net.now < Instant::ZERO + Duration::from_secs(20) {
            net.step();
        }
        assert_eq!(net.established(), n, "every client up");
        // Each round one client writes 200 bytes (every client in turn): a server that is
        // busy with a few connections at a time while the rest sit idle.
        net.server_time = [Duration::ZERO; 3];
        net.server_rounds = 0;
        net.server_io.driven = 0;
        let chunk = [7u8; 200];
        for r in 0..rounds {
            net.write(r as usize % n, &chunk);
            net.step();
        }
        let us = |d: Duration| d.as_nanos() as f64 / net.server_rounds as f64 / 1000.0;
        let [datagrams, round, poll] = net.server_time.map(us);
        let per_round = datagrams + round + poll;
        // Rounds with nothing to do (at the instant of the last round: what was due is done):
        // what the table costs just for being asked.
        let now = net.now - Duration::from_micros(500);
        let idle_rounds = 20_000u32;
        let started = std::time::Instant::now();
        for _ in 0..idle_rounds {
            net.server.handle_timeout(now, &mut net.server_io);
            let _ = std::hint::black_box(net.server.poll_timeout());
        }
        let idle = started.elapsed().as_nanos() as f64 / f64::from(idle_rounds) / 1000.0;
        // The server closes every connection: each leaves its closing record (the sealed
        // CLOSE, kept for three probe timeouts). Then rounds with nothing due again, at the
        // same instant (no record's repeat or end is due): what the records cost a round.
        for c in &net.clients {
            if let Some(cell) = net.server.cell_mut(&c.cid) {
                cell.core.close(0, "bye");
            }
            net.server.poke(&c.cid);
        }
        net.server.handle_timeout(now, &mut net.server_io);
        net.server_io.out.clear();
        assert_eq!((net.server.connections(), net.server.closing()), (0, n), "every connection closing");
        let started = std::time::Instant::now();
        for _ in 0..idle_rounds {
            net.server.handle_timeout(now, &mut net.server_io);
            let _ = std::hint::black_box(net.server.poll_timeout());
        }
        let closing_idle = started.elapsed().as_nanos() as f64 / f64::from(idle_rounds) / 1000.0;
        let ratio = *base.get_or_insert(per_round);
        println!(
            "connections {n:5}  server rounds {}  driven {:.2}/round  {per_round:8.2} us/round \
             (datagrams {datagrams:.2} + handle_timeout {round:.2} + poll_timeout {poll:.2})  x{:.2} of the first size; \
             an idle round {idle:.3} us; with {n} closing records {closing_idle:.3} us",
            net.server_rounds,
            net.server_io.driven as f64 / net.server_rounds as f64,
            per_round / ratio
        );
    }
}
