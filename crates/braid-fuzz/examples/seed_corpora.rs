//! Writes the fuzz targets' seed corpora to `fuzz/corpus/TARGET/` from real traffic: a client
//! and a server of every mode, two paths, one datagram in seven lost, a 40 KB stream, on the
//! virtual clock (the simulator's harness without its links). Each datagram seeds `packet`; its
//! ACK frames seed `ack_ranges`, its HANDSHAKE frames `transport_params`, its payloads the
//! forged-datagram steps of `connection`; the handshake layer's real messages seed `handshake`.
//!
//!     cargo run -p braid-fuzz --example seed_corpora [-- DIR]   # default: fuzz/corpus
//!
//! Files are named by a hash of their bytes, so running it again adds nothing twice.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use braid_fec::{CodeFamily, CodecConfig, Encoder, SymbolHeader};
use braid_proto::conn::Mode;
use braid_proto::wire::{ConnectionId, Frame, FrameIter, PacketHeader, Reader, Writer};
use braid_proto::{Connection, ConnectionConfig, Instant};
use braid_runtime::crypto::{server_accept, ClientHandshake, Hello};
use braid_runtime::Key;

fn save(root: &Path, target: &str, bytes: &[u8]) {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir).expect("corpus folder");
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    std::fs::write(dir.join(format!("seed-{:016x}", h.finish())), bytes).expect("corpus file");
}

/// Every datagram of one transfer in `mode`.
fn record(mode: Mode) -> Vec<Vec<u8>> {
    let config = ConnectionConfig { mode, paths: 2, ..ConnectionConfig::default() };
    let mut client = Connection::client(config.clone(), Instant::ZERO, 7);
    let mut server = Connection::server(config, Instant::ZERO);
    let mut buf = Vec::new();
    let mut seen = Vec::new();
    let mut stream = None;
    let mut written = 0usize;
    let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7) as u8).collect();
    let mut sink = vec![0u8; 65536];
    for step in 0..4000u64 {
        let now = Instant::from_micros(step * 2_000);
        if client.is_established() && written < data.len() {
            let s = client.streams().expect("established");
            let id = *stream.get_or_insert_with(|| s.open().expect("a stream"));
            written += s.write(id, &data[written..]).unwrap_or(0);
            if written == data.len() {
                let _ = s.finish(id);
            }
        }
        exchange(&mut client, &mut server, now, &mut buf, &mut seen);
        exchange(&mut server, &mut client, now, &mut buf, &mut seen);
        while let Some(e) = server.poll_event() {
            if let braid_proto::Event::Stream(braid_proto::streams::StreamEvent::Readable(id)) = e {
                let s = server.streams().expect("established");
                while let Ok((n, _)) = s.read(id, &mut sink) {
                    if n == 0 {
                        break;
                    }
                }
            }
        }
        if client.is_idle() && written == data.len() && step > 50 {
            break;
        }
    }
    seen
}

/// What `from` sends now, recorded, and delivered to `to` unless it is the one in seven lost.
fn exchange(
    from: &mut Connection,
    to: &mut Connection,
    now: Instant,
    buf: &mut Vec<u8>,
    seen: &mut Vec<Vec<u8>>,
) {
    while let Some(t) = from.poll_transmit(now, buf) {
        let d = buf[..t.size].to_vec();
        if seen.len() % 7 != 3 {
            to.handle_datagram(now, t.path, &d);
        }
        seen.push(d);
    }
    from.handle_timeout(now);
}

fn main() {
    let root: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus"));
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut add = |target: &'static str, bytes: &[u8]| {
        save(&root, target, bytes);
        *counts.entry(target).or_default() += 1;
    };

    for (m, mode) in Mode::ALL.into_iter().enumerate() {
        let datagrams = record(mode);
        // Every frame type present in this mode's traffic, a few of each.
        let mut per_kind = std::collections::HashMap::<std::mem::Discriminant<Frame<'_>>, usize>::new();
        for d in datagrams.iter() {
            let mut r = Reader::new(d);
            let Ok(_) = PacketHeader::parse(&mut r) else { continue };
            let payload = r.rest();
            let mut novel = false;
            for frame in FrameIter::new(payload).flatten() {
                let n = per_kind.entry(std::mem::discriminant(&frame)).or_default();
                *n += 1;
                novel |= *n <= 3;
                let mut out = Vec::new();
                if frame.write(&mut Writer::new(&mut out)).is_err() {
                    continue;
                }
                match frame {
                    Frame::Ack(_) if *n <= 6 => add("ack_ranges", &out[1..]),
                    Frame::Handshake(_) => add("transport_params", &out[1..]),
                    _ => {}
                }
            }
            if novel {
                add("packet", d);
                // `connection`: mode, window, paths, length; then this payload forged to the
                // server on path 0 (step 11), then an honest network.
                let mut script = vec![m as u8, 0, 1, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
                // Deliver to the server, to the client, move the clock: the handshake.
                script.extend((0..20).flat_map(|_| [0, 4, 10]));
                script.extend_from_slice(&[11, 0, 0, 0, 5, 0]);
                let len = payload.len().min(1500) as u16;
                script.extend_from_slice(&len.to_le_bytes());
                script.extend_from_slice(&payload[..len as usize]);
                add("connection", &script);
            }
        }
        // An honest run of this mode: just the header bytes, the tail does the rest.
        add("connection", &[m as u8, 2, 1, 0xff, 0xbf]);
        add("connection", &[m as u8, 0, 2, 0x10, 0x27, 9, 1, 1, 1, 6, 0, 10, 0, 1, 2, 3, 13, 0, 5, 1]);
    }

    // The handshake layer's real messages.
    let key = Key([7; 32]);
    let cid = ConnectionId([1, 2, 3, 4, 5, 6, 7, 8]);
    let hello = Hello {
        paths: 2,
        mode: "braid".into(),
        cc: "cubic".into(),
        scheduler: String::new(),
        params: Some(braid_proto::wire::TransportParams::default()),
    };
    let client = ClientHandshake::new(&key, cid, &hello);
    let init = client.init_datagram().to_vec();
    let accepted = server_accept(&key, &init).expect("own handshake");
    for (op, bytes) in [(0u8, &init), (2, &accepted.response), (3, &accepted.keys.seal_hello(1, 5))] {
        let mut v = vec![op];
        v.extend_from_slice(bytes);
        add("handshake", &v);
    }
    add("handshake", &[1, 0x10, 0, 0xff]);
    add("handshake", &[4, 2, 1, 9, 0, 0, 0, 0, 0, 0, 0, 40, 0, 1, 2, 3, 4]);
    add("handshake", &[5, 0, 5, 0, 2, 3, 0, 4, 1, 7, 2, 9, 0, 0, 4]);

    // Codec scripts: each family, a block delivered whole in order, then with lies mixed in.
    for family in 0..3u8 {
        let mut s = vec![family, 16, 8, 3, 0, 0, 5, 1, 9, 1];
        s.extend((0..12u8).flat_map(|i| [0, i]));
        add("codec", &s);
        let mut s = vec![family, 7, 20, 1, 1, 1, 15, 2, 3, 0];
        s.extend((0..30u8).flat_map(|i| [i % 8, i, 5]));
        add("codec", &s);
    }
    // And the header of each kind of real symbol, as the hostile bytes of step 4.
    let config = CodecConfig { symbol_size: 8, max_block_len: 8, ..CodecConfig::new(CodeFamily::Rlnc) };
    let mut encoder = config.encoder(3).expect("valid");
    let id = encoder.push_source(&[1; 8]).expect("fits");
    let h = SymbolHeader { block: 3, id };
    let mut header = vec![0u8; h.encoded_len()];
    h.write(&mut header).expect("fits");
    let mut s = vec![1, 7, 7, 0, 0, 0, 0, 3, 1, 1, 4, (header.len() + 8) as u8];
    s.extend_from_slice(&header);
    s.extend_from_slice(&[1; 8]);
    add("codec", &s);

    // SYMBOL_PART scripts: a frame in three pieces; pieces of many frames; a lying total.
    add("symbol_parts", &[1, 30, 9, 0, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    add("symbol_parts", &[1, 30, 9, 10, 0, 20, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    add("symbol_parts", &[2, 0, 0xff, 0xff, 3, 0, 1, 9, 3, 40, 5, 0, 0, 3, 1, 2, 3, 4, 1, 2, 0, 0, 1, 7]);

    for s in [
        &[0u8, 5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80][..],
        &[
            1, 5, 1, 2, 1, 4, b'u', b's', b'e', b'r', 4, b'p', b'a', b's', b's', 5, 1, 0, 3, 11, b'e', b'x',
            b'a', b'm', b'p', b'l', b'e', b'.', b'o', b'r', b'g', 1, 187,
        ],
        &[0, 5, 2, 0, 2, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22],
        &[0, 5, 1, 0, 5, 2, 0, 9],
        &[0, 1, 9, b'h', b'o', b's', b't', b':', b'8', b'0', b'8', b'0'],
    ] {
        add("socks", s);
    }
    add("config", include_bytes!("../../../braid.toml"));
    add("config", b"mode = \"ctcp\"\n[client]\nserver = \"x:1\"\npath = [\"a\", \"b\"]\n");
    add("config", b"idle-timeout = 1e400\n[server]\nlisten = '0.0.0.0:1'\n\"\\u00e9\" = 1\n");

    for (target, n) in counts {
        println!("{target}: {n} seeds");
    }
    println!("written under {}", root.display());
}
