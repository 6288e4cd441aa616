//! The `braid` command's modules. `src/main.rs` is the command line over them; they are a
//! library so that the fuzz targets and tests can reach the code that reads untrusted input
//! (the SOCKS5 exchange, `request`, the config file). Not a stable API.

#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod common;
#[doc(hidden)]
pub mod config;
#[doc(hidden)]
pub mod demo;
#[doc(hidden)]
pub mod fail;
#[doc(hidden)]
pub mod metrics;
#[doc(hidden)]
pub mod request;
#[doc(hidden)]
pub mod serve;
#[doc(hidden)]
pub mod socks;
#[doc(hidden)]
pub mod stats;
#[doc(hidden)]
pub mod transfer;
#[doc(hidden)]
pub mod tunnel;
