//! `braid-testbed`: a network-namespace testbed (Linux, root) that joins a client and a server
//! namespace by N emulated paths and measures transports over them.
//!
//! Each path is a pair of TUN devices (`c<i>` in the client namespace, `s<i>` in the server
//! namespace) and a forwarder thread per direction that drives braid-netem's [`braid_netem::Link`]
//! model with the wall clock: rate, one-way delay, drop-tail queue, Bernoulli or Gilbert–Elliott
//! loss, outages and scheduled changes, exactly as the simulator models them. Contenders (kernel
//! TCP cubic/bbr, kernel MPTCP, two independent TCP flows, or an external command pair such as a
//! future `braid` binary) move N bytes from the client to the server; the testbed's own bulk
//! sender and sink measure goodput and completion (connect → last byte at the receiver).
//!
//! Besides bulk transfers, `--workload web` (HTTP/2 page loads with nghttpd and h2load) and
//! `--workload video` (a 25 fps live stream, frames on time) run over the same contenders, and
//! `--workload tun` runs unchanged applications (curl, a UDP stream, a ping-pong) through
//! `braid tun` beside kernel MPTCP and plain UDP.
//!
//! Subcommands: `run`, `check`, `list`, `cleanup`, `relay` (see `--help`).

#[cfg(target_os = "linux")]
mod bulk;
#[cfg(target_os = "linux")]
mod check;
#[cfg(target_os = "linux")]
mod cli;
#[cfg(target_os = "linux")]
mod contender;
#[cfg(target_os = "linux")]
mod forwarder;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod percentile;
#[cfg(target_os = "linux")]
mod probe;
#[cfg(target_os = "linux")]
mod progress;
#[cfg(target_os = "linux")]
mod relay;
#[cfg(target_os = "linux")]
mod report;
#[cfg(target_os = "linux")]
mod run;
// The raw syscalls live in this module and nowhere else.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod sys;
#[cfg(target_os = "linux")]
mod tun;
#[cfg(target_os = "linux")]
mod udp;
#[cfg(target_os = "linux")]
mod video;
#[cfg(target_os = "linux")]
mod web;
#[cfg(target_os = "linux")]
mod workload;

#[cfg(target_os = "linux")]
fn main() {
    std::process::exit(cli::main());
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("braid-testbed: Linux only (network namespaces, TUN devices, kernel MPTCP)");
    std::process::exit(2);
}
