//! # braid-fuzz: the fuzz targets' bodies
//!
//! One function per target, each taking the fuzzer's bytes. `/fuzz` (outside the workspace,
//! libFuzzer on the stable toolchain) calls them under coverage guidance; `tests/replay.rs` runs
//! every file of `/fuzz/corpus` and `/fuzz/regressions` through them in a plain `cargo test`, so
//! a finding stays fixed. A target panics only when an invariant breaks: peer bytes may be
//! refused, never panic or grow memory without bound (docs/RELIABILITY.md, "Fuzzing").

pub mod codec;
pub mod connection;
pub mod cursor;
pub mod handshake;
pub mod tunnel;
pub mod user_input;
pub mod wire;

/// A target: the fuzzer's bytes in, a panic if an invariant broke.
pub type Target = fn(&[u8]);

/// Every target, by the name of its file in `/fuzz/fuzz_targets` and its corpus folder.
pub const TARGETS: &[(&str, Target)] = &[
    ("packet", wire::packet),
    ("ack_ranges", wire::ack_ranges),
    ("transport_params", wire::transport_params),
    ("symbol_parts", wire::symbol_parts),
    ("codec", codec::decoders),
    ("handshake", handshake::handshake),
    ("socks", user_input::socks),
    ("config", user_input::config),
    ("connection", connection::connection),
    ("fragment", tunnel::fragments),
];
