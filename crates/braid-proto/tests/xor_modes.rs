//! The seed papers' XOR modes at connection level, over a hand-driven link (10 ms each way)
//! that drops exactly the symbols a test names: what a repaired and a failed loss do to cwnd
//! (TCP-dFEC §III-B, Sato et al. §3.3), and TCP-IR's parity beyond a full window.

use braid_fec::SymbolId;
use braid_proto::conn::Mode;
use braid_proto::streams::StreamEvent;
use braid_proto::wire::{Frame, FrameIter, PacketHeader, Reader};
use braid_proto::{Connection, ConnectionConfig, Instant};

/// A symbol seen on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sym {
    Source { block: u64, index: u16 },
    Parity { block: u64, first: u16, count: u16 },
}

fn symbols(datagram: &[u8]) -> Vec<Sym> {
    let mut r = Reader::new(datagram);
    let Ok(_) = PacketHeader::parse(&mut r) else { return Vec::new() };
    FrameIter::new(r.rest())
        .filter_map(|f| match f.ok()? {
            Frame::Symbol(s) => match s.header.id {
                SymbolId::Source { index } => Some(Sym::Source { block: s.header.block, index }),
                SymbolId::XorParity { first, count, .. } => {
                    Some(Sym::Parity { block: s.header.block, first, count })
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

struct Pair {
    client: Connection,
    server: Connection,
    now: Instant,
    buf: Vec<u8>,
    /// Datagrams on the wire, with their arrival time: client → server, server → client.
    forward: Vec<(Instant, Vec<u8>)>,
    reverse: Vec<(Instant, Vec<u8>)>,
    /// Stream bytes the server has read, checked against the pattern.
    received: usize,
    /// The client's cwnd before and after each datagram it received and each timer.
    cwnd_changes: Vec<(u64, u64)>,
}

const BYTES: usize = 120_000;
const ONE_WAY: std::time::Duration = std::time::Duration::from_millis(10);

fn take_due(wire: &mut Vec<(Instant, Vec<u8>)>, now: Instant) -> Vec<(Instant, Vec<u8>)> {
    let (due, later) = std::mem::take(wire).into_iter().partition(|(t, _)| *t <= now);
    *wire = later;
    due
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

impl Pair {
    fn new(mode: Mode) -> Pair {
        Pair::with_config(ConnectionConfig { mode, ..ConnectionConfig::default() })
    }

    fn with_config(config: ConnectionConfig) -> Pair {
        let mut pair = Pair {
            client: Connection::client(config.clone(), Instant::ZERO, 7),
            server: Connection::server(config, Instant::ZERO),
            now: Instant::ZERO,
            buf: Vec::new(),
            forward: Vec::new(),
            reverse: Vec::new(),
            received: 0,
            cwnd_changes: Vec::new(),
        };
        while !(pair.client.is_established() && pair.server.is_established()) {
            pair.step(&mut |_| false);
        }
        let data: Vec<u8> = (0..BYTES).map(pattern).collect();
        let streams = pair.client.streams().expect("connected");
        let id = streams.open().unwrap();
        assert_eq!(streams.write(id, &data).unwrap(), BYTES);
        streams.finish(id).unwrap();
        pair
    }

    fn cwnd(&self) -> u64 {
        self.client.path_state()[0].1
    }

    /// One millisecond: arrivals, timers, then what each end sends goes on the wire (the
    /// client's unless `drop` says so).
    fn step(&mut self, drop: &mut dyn FnMut(&[Sym]) -> bool) {
        self.now += std::time::Duration::from_millis(1);
        let now = self.now;
        if self.server.poll_timeout().is_some_and(|t| t <= now) {
            self.server.handle_timeout(now);
        }
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            let before = self.cwnd();
            self.client.handle_timeout(now);
            self.cwnd_changes.push((before, self.cwnd()));
        }
        for (_, d) in take_due(&mut self.forward, now) {
            self.server.handle_datagram(now, 0, &d);
        }
        for (_, d) in take_due(&mut self.reverse, now) {
            let before = self.cwnd();
            self.client.handle_datagram(now, 0, &d);
            self.cwnd_changes.push((before, self.cwnd()));
        }
        let arrival = now + ONE_WAY;
        while let Some(t) = self.client.poll_transmit(now, &mut self.buf) {
            if !drop(&symbols(&self.buf[..t.size])) {
                self.forward.push((arrival, self.buf[..t.size].to_vec()));
            }
        }
        while let Some(t) = self.server.poll_transmit(now, &mut self.buf) {
            self.reverse.push((arrival, self.buf[..t.size].to_vec()));
        }
        while self.server.poll_event().is_some() {}
        if let Some(streams) = self.server.streams() {
            while let Some(StreamEvent::Opened(_) | StreamEvent::Readable(_)) = streams.poll_event() {}
            let mut out = vec![0; 65_536];
            while let Ok((n, _)) = streams.read(0, &mut out) {
                if n == 0 {
                    break;
                }
                for (i, b) in out[..n].iter().enumerate() {
                    assert_eq!(*b, pattern(self.received + i), "byte {}", self.received + i);
                }
                self.received += n;
            }
        }
    }

    /// Runs until the transfer is read whole (or 3 s), dropping the first copy of each named
    /// source symbol. Returns the cwnd reductions seen, as (before, after).
    fn run(&mut self, lose: &[(u64, u16)]) -> Vec<(u64, u64)> {
        let mut dropped = Vec::new();
        let mut drop = |syms: &[Sym]| {
            syms.iter().any(|s| match *s {
                Sym::Source { block, index }
                    if lose.contains(&(block, index)) && !dropped.contains(&(block, index)) =>
                {
                    dropped.push((block, index));
                    true
                }
                _ => false,
            })
        };
        for _ in 0..3000 {
            self.step(&mut drop);
            if self.received == BYTES {
                break;
            }
        }
        assert_eq!(self.received, BYTES, "transfer incomplete");
        self.cwnd_changes.iter().copied().filter(|(b, a)| a < b).collect()
    }
}

#[test]
fn dfec_repaired_loss_keeps_cwnd_failed_loss_cuts_it() {
    // Nothing lost: cwnd only grows.
    assert!(Pair::new(Mode::Dfec).run(&[]).is_empty());
    // One loss in the first FEC block (ratio 9: sources 0..9): the parity repairs it, cwnd is
    // not reduced (dFEC §III-B (i)).
    assert_eq!(Pair::new(Mode::Dfec).run(&[(0, 3)]), []);
    // Two losses in the same block: FEC fails, the sources are retransmitted, cwnd is cut once
    // (CUBIC's β = 0.7 on dFEC's Linux TCP).
    let cuts = Pair::new(Mode::Dfec).run(&[(0, 3), (0, 5)]);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
}

#[test]
fn sato_repaired_loss_multiplies_cwnd_by_r() {
    assert!(Pair::new(Mode::Sato).run(&[]).is_empty());
    // One loss repaired by its group's parity is still congestion: cwnd ← 0.7 cwnd (§3.3). The
    // ACK that settles it may first grow cwnd by the bytes it acknowledges, so the ratio to the
    // value before that ACK is 0.7 or a little above — and never NewReno's 0.5.
    let cuts = Pair::new(Mode::Sato).run(&[(0, 3)]);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    let (before, after) = cuts[0];
    let ratio = after as f64 / before as f64;
    assert!((0.69..0.85).contains(&ratio), "{before} → {after}");
}

/// The control for the dFEC test: the same single loss in the `tcp` model is congestion.
#[test]
fn tcp_model_cuts_on_the_same_loss() {
    let cuts = Pair::new(Mode::Tcp).run(&[(0, 3)]);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
}

/// TCP-IR sends one parity every RTT/4 over what was sent since the previous one, at a fixed
/// rate: also when the window is full.
#[test]
fn tcp_ir_parity_every_quarter_rtt_even_with_a_full_window() {
    let mut pair = Pair::new(Mode::TcpIr);
    // A black hole: nothing reaches the server, nothing is acknowledged, the window fills.
    let mut sent: Vec<(Instant, Sym)> = Vec::new();
    for _ in 0..60 {
        let now = pair.now + std::time::Duration::from_millis(1);
        pair.step(&mut |syms| {
            sent.extend(syms.iter().map(|s| (now, *s)));
            true
        });
    }
    let period = pair.client.path_state()[0].0 / 4;
    // Up to the first retransmission (the probe timeout).
    let mut seen = Vec::new();
    let first_sends: Vec<(Instant, Sym)> = sent
        .into_iter()
        .take_while(|(_, s)| match *s {
            Sym::Source { index, .. } if seen.contains(&index) => false,
            Sym::Source { index, .. } => {
                seen.push(index);
                true
            }
            Sym::Parity { .. } => true,
        })
        .collect();
    let mut parities = 0;
    let (mut covered_to, mut since, mut last_parity) = (0u16, 0u16, None::<Instant>);
    let mut last_source = None;
    for &(at, s) in &first_sends {
        match s {
            Sym::Source { .. } => {
                since += 1;
                last_source = Some(at);
            }
            Sym::Parity { first, count, .. } => {
                parities += 1;
                assert_eq!(
                    (first, count),
                    (covered_to, since),
                    "the parity covers what was sent since the last"
                );
                if let Some(t) = last_parity {
                    assert!(at - t >= period - std::time::Duration::from_millis(1), "one per RTT/4");
                }
                (covered_to, since, last_parity) = (covered_to + count, 0, Some(at));
            }
        }
    }
    assert!(parities >= 2, "{first_sends:?}");
    // The last parity went out after the last source: the window was full (no source could
    // follow) and the parity was sent anyway.
    assert!(last_parity > last_source, "{first_sends:?}");
    // In flight: every source and parity (all ack-eliciting), at least 1200 bytes each.
    let in_flight = (u64::from(covered_to) + parities) * 1200;
    assert!(in_flight + 1280 > pair.cwnd(), "the window was full: {in_flight} of {}", pair.cwnd());
}

/// `ConnectionConfig { mode, ..Default::default() }` yields the mode's code family (proposed in
/// the handshake and agreed by the server), block length and congestion controller.
#[test]
fn modes_imply_their_code_and_controller() {
    use braid_fec::CodeFamily;
    use braid_proto::cc::CcAlgorithm;
    for (name, mode, cc) in [
        ("tcp-ir", Mode::TcpIr, CcAlgorithm::Cubic),
        ("DFEC", Mode::Dfec, CcAlgorithm::Cubic),
        ("sato", Mode::Sato, CcAlgorithm::NewReno),
    ] {
        assert_eq!(name.parse::<Mode>(), Ok(mode));
        assert_eq!((mode.code_family(), mode.default_cc()), (CodeFamily::Xor, cc));
        let pair = Pair::new(mode);
        for end in [&pair.client, &pair.server] {
            assert_eq!((end.params().code, end.params().max_block_len), (CodeFamily::Xor, 256), "{name}");
        }
    }
    assert_eq!((Mode::Braid.code_family(), Mode::Braid.default_cc()), (CodeFamily::Rlnc, CcAlgorithm::Braid));
    assert!("ctcp-ir".parse::<Mode>().unwrap_err().contains("tcp-ir, dfec, sato"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The XOR modes act on the peer's ACK and BLOCK_ACK frames (held losses, groups, released
    /// blocks): mutated ones, however absurd (a huge lowest undecoded block, ranges beyond what
    /// was sent), must not panic the sender, which must then go on.
    #[test]
    fn mutated_acks_never_panic_an_xor_sender(
        mode in proptest::sample::select(vec![Mode::TcpIr, Mode::Dfec, Mode::Sato]),
        flips in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), 1u8..=255), 1..6),
        pick in proptest::prelude::any::<proptest::sample::Index>(),
    ) {
        let mut pair = Pair::new(mode);
        let mut samples = Vec::new();
        for _ in 0..40 {
            samples.extend(pair.reverse.iter().map(|(_, d)| d.clone()));
            pair.step(&mut |_| false);
        }
        proptest::prop_assume!(!samples.is_empty());
        let mut d = pick.get(&samples).clone();
        for (at, x) in &flips {
            let i = at.index(d.len());
            d[i] ^= x;
        }
        let now = pair.now;
        pair.client.handle_datagram(now, 0, &d);
        for _ in 0..40 {
            pair.step(&mut |_| false);
        }
    }
}

/// Absurd but well-formed feedback: an ACK for packets never sent and a BLOCK_ACK claiming
/// every block decoded far beyond what exists. The XOR sender must neither panic nor grow
/// without bound, and must keep running.
#[test]
fn absurd_feedback_is_survived() {
    use braid_proto::wire::{AckFrame, AckRange, BlockAckFrame, Writer};
    for mode in [Mode::TcpIr, Mode::Dfec, Mode::Sato] {
        let mut pair = Pair::new(mode);
        let mut real = None;
        for _ in 0..100 {
            real = real.or_else(|| pair.reverse.first().map(|(_, d)| d.clone()));
            pair.step(&mut |_| false);
        }
        let real = real.expect("the server answers");
        let mut r = Reader::new(&real);
        let mut header = PacketHeader::parse(&mut r).unwrap();
        header.number += 1_000;
        let mut d = Vec::new();
        header.write(&mut Writer::new(&mut d));
        let mut w = Writer::new(&mut d);
        Frame::Ack(AckFrame {
            path: 0,
            ack_delay_us: u64::MAX >> 3,
            ranges: (&[AckRange { start: 0, end: 1 << 40 }]).into(),
        })
        .write(&mut w)
        .unwrap();
        Frame::BlockAck(BlockAckFrame {
            lowest_undecoded: 1 << 50,
            dofs: u64::MAX >> 3,
            decoded_beyond: u64::MAX >> 2,
        })
        .write(&mut w)
        .unwrap();
        let now = pair.now;
        pair.client.handle_datagram(now, 0, &d);
        for _ in 0..100 {
            pair.step(&mut |_| false);
        }
    }
}

/// A flow-control-limited sender (a stream window of 5 symbols, below dFEC's FEC block of 9):
/// a loss held for a group that would never fill must still be settled — the sender closes the
/// group when it has nothing more to send.
#[test]
fn held_loss_does_not_wait_for_data_that_cannot_come() {
    use braid_proto::wire::TransportParams;
    for mode in [Mode::Dfec, Mode::Sato] {
        let params = TransportParams { initial_max_stream_data: 6_000, ..TransportParams::default() };
        let mut pair = Pair::with_config(ConnectionConfig { mode, params, ..ConnectionConfig::default() });
        pair.run(&[(0, 2)]);
    }
}
