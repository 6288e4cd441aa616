//! `braid-testbed relay LISTEN TO`: a plain TCP relay (accept on LISTEN, connect to TO, copy
//! both ways until either side closes). It exists to exercise the external-contender interface
//! end to end (`--ext relay --server-cmd '{self} relay 0.0.0.0:7000 {sink}' --client-cmd
//! '{self} relay {entry} {server0}:7000'`), the way a `braid` client/server pair will plug in.

use std::io;
use std::net::{TcpListener, TcpStream};

pub fn run(listen: &str, to: &str) -> io::Result<()> {
    let listener = TcpListener::bind(listen)?;
    for conn in listener.incoming() {
        let inbound = conn?;
        let to = to.to_owned();
        std::thread::spawn(move || {
            let Ok(outbound) = TcpStream::connect(&to) else { return };
            let (Ok(mut a_r), Ok(mut b_w)) = (inbound.try_clone(), outbound.try_clone()) else { return };
            let up = std::thread::spawn(move || {
                let _ = io::copy(&mut a_r, &mut b_w);
                let _ = b_w.shutdown(std::net::Shutdown::Write);
            });
            let (mut b_r, mut a_w) = (outbound, inbound);
            let _ = io::copy(&mut b_r, &mut a_w);
            let _ = a_w.shutdown(std::net::Shutdown::Write);
            let _ = up.join();
        });
    }
    Ok(())
}
