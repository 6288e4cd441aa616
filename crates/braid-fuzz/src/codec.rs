//! Every decoder of braid-fec (XOR, RLNC, RaptorQ) fed a mix of a real block's symbols, in an
//! order and subset the fuzzer picks, and hostile symbols: ids out of range, wrong lengths,
//! lying source counts, absurd RaptorQ ESIs, explicit coefficients of any length.
//!
//! Checked: no panic; a refused symbol leaves the decoder as it was; rank never exceeds the
//! block's size; and while only real symbols were accepted, a complete decoder returns exactly
//! the sources that were encoded.

use braid_fec::{CodeFamily, CodecConfig, Decoder, Encoder, SymbolHeader, SymbolId};

use crate::cursor::Cursor;

pub fn decoders(data: &[u8]) {
    let mut c = Cursor::new(data);
    let family = CodeFamily::ALL[c.below(3)];
    let symbol_size = 1 + c.below(48);
    let max_block_len = 1 + c.below(32);
    let config = CodecConfig {
        family,
        symbol_size,
        max_block_len,
        xor_group_len: 1 + c.below(8),
        xor_interleave: 1 + c.below(3),
        rlnc_explicit_coefficients: c.u8() & 1 == 1,
    };
    let k = 1 + c.below(max_block_len);
    let block = u64::from(c.u8());
    let seed = c.u8();
    let sources: Vec<Vec<u8>> = (0..k)
        .map(|i| {
            (0..symbol_size).map(|b| (i as u8).wrapping_mul(31) ^ (b as u8).wrapping_mul(7) ^ seed).collect()
        })
        .collect();

    // The real block: every source, then up to 2k repairs, each as header bytes + payload.
    let mut encoder = config.encoder(block).expect("valid config");
    let mut real: Vec<Vec<u8>> = Vec::new();
    for s in &sources {
        let id = encoder.push_source(s).expect("source fits");
        real.push(symbol_bytes(block, &id, s));
    }
    encoder.flush();
    let mut repair = vec![0u8; symbol_size];
    for _ in 0..2 * k {
        match encoder.next_repair(&mut repair) {
            Ok(Some(id)) => real.push(symbol_bytes(block, &id, &repair)),
            _ => break,
        }
    }

    let announce = c.u8() & 1 == 1;
    let mut decoder = config.decoder(announce.then_some(k)).expect("valid config");
    let mut tainted = false;
    let mut steps = 0;
    while !c.is_empty() && steps < 512 {
        steps += 1;
        match c.u8() % 8 {
            // A real symbol, any of them, again and again.
            0..=3 => {
                let bytes = &real[c.below(real.len())];
                let (header, payload) = SymbolHeader::parse(bytes).expect("written header parses");
                offer(&mut decoder, &header.id, payload);
            }
            // A hostile symbol: header and payload from the fuzzer.
            4 | 5 => {
                let bytes = c.bytes(200);
                if let Ok((header, payload)) = SymbolHeader::parse(bytes) {
                    if offer(&mut decoder, &header.id, payload) {
                        tainted = true;
                    }
                }
            }
            // A source count, true or not.
            6 => {
                let n = if c.u8() & 1 == 1 { k } else { usize::from(c.u16()) };
                let before = snapshot(&decoder);
                match decoder.set_source_count(n) {
                    Ok(()) if n != k => tainted = true,
                    Ok(()) => {}
                    Err(_) => {
                        assert_eq!(snapshot(&decoder), before, "a refused source count changed the decoder")
                    }
                }
            }
            _ => while decoder.poll_recovered().is_some() {},
        }
        assert!(decoder.rank() <= config.family.max_block_len());
        // RaptorQ's rank counts distinct symbols while a solve has not succeeded (a fountain
        // code may need a few beyond k), so only the other codes are held to the source count;
        // the transport clamps the count it reports (`blocks/recv.rs`).
        if let (Some(n), false) = (decoder.source_count(), family == CodeFamily::RaptorQ) {
            assert!(decoder.rank() <= n, "rank {} above the source count {n}", decoder.rank());
        }
        for i in 0..k.max(decoder.source_count().unwrap_or(0)).min(u16::MAX as usize) {
            let _ = decoder.source(i as u16);
        }
    }
    if !tainted && decoder.is_complete() && decoder.source_count() == Some(k) {
        for (i, s) in sources.iter().enumerate() {
            assert_eq!(decoder.source(i as u16), Some(&s[..]), "{family}: source {i} decoded wrong");
        }
    }
}

fn symbol_bytes(block: u64, id: &SymbolId<'_>, payload: &[u8]) -> Vec<u8> {
    let h = SymbolHeader { block, id: *id };
    let mut v = vec![0u8; h.encoded_len()];
    h.write(&mut v).expect("header fits");
    v.extend_from_slice(payload);
    v
}

type Snapshot = (usize, usize, bool, Option<usize>);

fn snapshot(d: &impl Decoder) -> Snapshot {
    (d.rank(), d.needed(), d.is_complete(), d.source_count())
}

/// Offers a symbol; a refusal must leave the decoder as it was. Whether it was taken.
fn offer(d: &mut impl Decoder, id: &SymbolId<'_>, payload: &[u8]) -> bool {
    let before = snapshot(d);
    match d.receive(id, payload) {
        Ok(_) => true,
        Err(_) => {
            assert_eq!(snapshot(d), before, "a refused symbol changed the decoder");
            false
        }
    }
}
