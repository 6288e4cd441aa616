//! What local programs and users hand the `braid` command: the SOCKS5 exchange of a client
//! application (RFC 1928/1929), the server's reading of a stream's request, and the config file.

use std::sync::OnceLock;

use braid_cli::config::FileConfig;
use braid_cli::{request, socks};
use tokio::runtime::Runtime;

use crate::cursor::Cursor;

fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("a runtime"))
}

/// A SOCKS5 client's bytes, with and without username/password required; then the same bytes
/// as the first bytes of a braid stream the server reads a request from.
pub fn socks(data: &[u8]) {
    let mut c = Cursor::new(data);
    let auth = match c.u8() % 3 {
        0 => None,
        1 => Some(("user".to_string(), "pass".to_string())),
        _ => Some(("u".repeat(255), String::new())),
    };
    let input = c.rest();
    runtime().block_on(async {
        let mut answer = Vec::new();
        let mut io = tokio::io::join(input, &mut answer);
        if let Ok(target) = socks::negotiate(&mut io, auth.as_ref()).await {
            // host (at most 255 bytes, or an address) and port.
            assert!(target.len() <= 255 + 8, "{target}");
            assert!(target.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok()));
        }
        // The greeting's answer, the auth status and one reply at most.
        assert!(answer.len() <= 2 + 2 + 10, "{} bytes answered", answer.len());

        let mut stream = input;
        let _ = request::read_short_string(&mut stream).await;
        let mut stream = input;
        let _ = request::read_status(&mut stream).await;
    });
}

/// A config file: parses, or gives one line.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = FileConfig::parse(text) {
        assert!(!e.contains('\n'), "a config error of more than one line: {e:?}");
    }
}
