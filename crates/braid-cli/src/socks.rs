//! `braid forward` (TCP port forwarding, as `ssh -L`) and `braid socks` (a SOCKS5 proxy, RFC 1928
//! CONNECT with RFC 1929 username/password): every TCP connection becomes a braid stream whose
//! far end the server connects.

use std::net::{Ipv4Addr, Ipv6Addr};

use braid_runtime::Connection;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::{fail, parse_listen, ClientOpts, Fail};
use crate::request;

/// Binds `addr` without listening yet, so a port in use fails before the server is contacted
/// but nothing connects until the braid connection is up.
fn bind(addr: &str) -> Result<TcpSocket, Fail> {
    let a = parse_listen(addr, "--listen")?;
    let socket = if a.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() };
    let socket = socket.map_err(|e| fail(format!("--listen {a}: {e}")))?;
    // As TcpListener::bind does: a restarted forwarder may reuse a port in TIME_WAIT.
    socket.set_reuseaddr(true).map_err(|e| fail(format!("--listen {a}: {e}")))?;
    socket.bind(a).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => fail(format!(
            "--listen {a}: address already in use (another program holds this port; pick another)"
        )),
        std::io::ErrorKind::AddrNotAvailable => {
            fail(format!("--listen {a}: no local interface has this address"))
        }
        _ => fail(format!("--listen {a}: {e}")),
    })?;
    Ok(socket)
}

/// Opens a stream and asks the server to connect it to `target`; the stream, or the server's
/// status and message.
async fn open(conn: &Connection, target: &str) -> Result<braid_runtime::Stream, (u8, String)> {
    let general = |e: String| (request::GENERAL_FAILURE, e);
    let mut stream = conn.open_stream().map_err(|e| general(e.to_string()))?;
    request::write_connect(&mut stream, target).await.map_err(|e| general(e.to_string()))?;
    match request::read_status(&mut stream).await {
        Ok(Ok(())) => Ok(stream),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(general(e.to_string())),
    }
}

async fn pipe(mut tcp: TcpStream, mut stream: braid_runtime::Stream) {
    let _ = tcp.set_nodelay(true);
    if let Err(e) = tokio::io::copy_bidirectional(&mut tcp, &mut stream).await {
        tracing::debug!("forwarded connection: {e}");
    }
}

pub async fn forward(listen_addr: &str, to: &str, client: &ClientOpts) -> Result<(), Fail> {
    if !to.contains(':') {
        return Err(fail(format!("--to {to:?}: expected HOST:PORT")));
    }
    let what = format!("forwarding {{listen}} -> {to}");
    serve_tcp(listen_addr, client, &what, move |tcp, from, conn| {
        let to = to.to_string();
        async move {
            if let Err(msg) = forward_one(&conn, tcp, &to).await {
                tracing::warn!("{from}: the server could not connect: {msg}");
            }
        }
    })
    .await
}

/// Carries one forwarded TCP connection without waiting for the server's answer: the CONNECT
/// request and the application's first bytes leave together, as TCP Fast Open sends data with
/// its SYN, so a request costs one round trip, not two. The answer is read before any byte goes
/// back; if the server could not connect, the TCP connection is closed (its bytes had nowhere
/// to go, as with a refused TCP connection).
async fn forward_one(conn: &Connection, tcp: TcpStream, to: &str) -> Result<(), String> {
    let mut stream = conn.open_stream().map_err(|e| e.to_string())?;
    request::write_connect(&mut stream, to).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let (mut tcp_read, mut tcp_write) = tcp.into_split();
    let (mut stream_read, mut stream_write) = tokio::io::split(stream);
    let up = async {
        let copied = tokio::io::copy(&mut tcp_read, &mut stream_write).await;
        let _ = stream_write.shutdown().await;
        copied
    };
    // Err: the server's refusal; Ok: how the copy back went.
    let down = async {
        match request::read_status(&mut stream_read).await {
            Ok(Ok(())) => {}
            Ok(Err((_, msg))) => return Err(msg),
            Err(e) => return Err(e.to_string()),
        }
        let copied = tokio::io::copy(&mut stream_read, &mut tcp_write).await;
        let _ = tcp_write.shutdown().await;
        Ok(copied)
    };
    tokio::pin!(up, down);
    // A refusal ends both directions at once; otherwise each runs to its end.
    let copied = tokio::select! {
        d = &mut down => {
            let d = d?;
            up.await.and(d)
        }
        u = &mut up => {
            let d = down.await?;
            u.and(d)
        }
    };
    if let Err(e) = copied {
        tracing::debug!("forwarded connection: {e}");
    }
    Ok(())
}

/// Accepts TCP connections on `listen_addr` over one braid connection to the server, each
/// handled by `session` in its own task, until the server is lost or Ctrl-C. `what` names the
/// service in the banner (`{listen}` stands for the bound address).
async fn serve_tcp<F, Fut>(listen_addr: &str, client: &ClientOpts, what: &str, session: F) -> Result<(), Fail>
where
    F: Fn(TcpStream, std::net::SocketAddr, Connection) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    // The port opens only once the server has answered: a connection accepted earlier would
    // wait for the handshake, and a server that cannot be reached fails here, not per connection.
    let socket = bind(listen_addr)?;
    let conn = client.connect().await?;
    let listener = socket.listen(1024).map_err(|e| fail(format!("--listen {listen_addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| fail(e.to_string()))?;
    eprintln!("braid: {} through {}", what.replace("{listen}", &bound.to_string()), client.server);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, from)) = accepted else { continue };
                tokio::spawn(session(tcp, from, conn.clone()));
            }
            e = conn.closed() => return Err(fail(format!("lost the server: {e}"))),
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

pub async fn socks(listen_addr: &str, auth: Option<&str>, client: &ClientOpts) -> Result<(), Fail> {
    let auth = match auth {
        None => None,
        Some(a) => {
            let (u, p) = a.split_once(':').ok_or_else(|| fail("--auth: expected USER:PASS"))?;
            if u.is_empty() || u.len() > 255 || p.len() > 255 {
                return Err(fail("--auth: user must be 1-255 bytes, password at most 255"));
            }
            Some((u.to_string(), p.to_string()))
        }
    };
    serve_tcp(listen_addr, client, "SOCKS5 on {listen}", move |tcp, from, conn| {
        let auth = auth.clone();
        async move {
            if let Err(e) = socks_session(tcp, &conn, auth.as_ref()).await {
                tracing::info!("SOCKS client {from}: {e}");
            }
        }
    })
    .await
}

const NO_AUTH: u8 = 0x00;
const USER_PASS: u8 = 0x02;
const NO_ACCEPTABLE: u8 = 0xFF;
const COMMAND_NOT_SUPPORTED: u8 = 0x07;
const ADDRESS_NOT_SUPPORTED: u8 = 0x08;

/// RFC 1928 §6 reply with a zero bound address (the far end's socket is on the server).
async fn reply<S: AsyncWrite + Unpin>(io: &mut S, rep: u8) -> std::io::Result<()> {
    io.write_all(&[5, rep, 0, 1, 0, 0, 0, 0, 0, 0]).await
}

async fn socks_session(
    mut tcp: TcpStream,
    conn: &Connection,
    auth: Option<&(String, String)>,
) -> Result<(), String> {
    let target = negotiate(&mut tcp, auth).await?;
    match open(conn, &target).await {
        Ok(stream) => {
            reply(&mut tcp, request::OK).await.map_err(|e| e.to_string())?;
            pipe(tcp, stream).await;
            Ok(())
        }
        Err((status, msg)) => {
            let _ = reply(&mut tcp, status).await;
            Err(msg)
        }
    }
}

/// The SOCKS5 exchange up to the CONNECT target (RFC 1928 §3–§4, RFC 1929 §2): reads the
/// greeting, answers it, checks the username and password if `auth` is set, reads the request.
/// Returns `host:port`; a request that cannot be served (other command, unknown address type)
/// has been answered with its status when the error comes back. Reads at most 1 + 1 + 255 +
/// 1 + 1 + 255 + 1 + 255 + 4 + 1 + 255 + 2 bytes: a client cannot make it allocate more.
pub async fn negotiate<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    auth: Option<&(String, String)>,
) -> Result<String, String> {
    let e = |e: std::io::Error| e.to_string();
    // RFC 1928 §3: version, methods.
    if io.read_u8().await.map_err(e)? != 5 {
        return Err("not SOCKS version 5".into());
    }
    let n = io.read_u8().await.map_err(e)?;
    let mut methods = vec![0u8; n.into()];
    io.read_exact(&mut methods).await.map_err(e)?;
    let want = if auth.is_some() { USER_PASS } else { NO_AUTH };
    if !methods.contains(&want) {
        io.write_all(&[5, NO_ACCEPTABLE]).await.map_err(e)?;
        return Err(format!("offered no acceptable method (need {want:#04x})"));
    }
    io.write_all(&[5, want]).await.map_err(e)?;
    if let Some((user, pass)) = auth {
        // RFC 1929 §2: version 1, username, password; status 0 = success.
        if io.read_u8().await.map_err(e)? != 1 {
            return Err("bad username/password negotiation version".into());
        }
        let ulen = io.read_u8().await.map_err(e)?;
        let mut u = vec![0u8; ulen.into()];
        io.read_exact(&mut u).await.map_err(e)?;
        let plen = io.read_u8().await.map_err(e)?;
        let mut p = vec![0u8; plen.into()];
        io.read_exact(&mut p).await.map_err(e)?;
        let ok = u == user.as_bytes() && p == pass.as_bytes();
        io.write_all(&[1, if ok { 0 } else { 1 }]).await.map_err(e)?;
        if !ok {
            return Err("wrong username or password".into());
        }
    }
    // RFC 1928 §4: the request.
    let mut head = [0u8; 4];
    io.read_exact(&mut head).await.map_err(e)?;
    let [ver, cmd, _, atyp] = head;
    if ver != 5 {
        return Err("not SOCKS version 5".into());
    }
    let host = match atyp {
        1 => {
            let mut a = [0u8; 4];
            io.read_exact(&mut a).await.map_err(e)?;
            Ipv4Addr::from(a).to_string()
        }
        3 => {
            let len = io.read_u8().await.map_err(e)?;
            let mut name = vec![0u8; len.into()];
            io.read_exact(&mut name).await.map_err(e)?;
            String::from_utf8(name).map_err(|_| "domain name is not UTF-8".to_string())?
        }
        4 => {
            let mut a = [0u8; 16];
            io.read_exact(&mut a).await.map_err(e)?;
            format!("[{}]", Ipv6Addr::from(a))
        }
        _ => {
            reply(io, ADDRESS_NOT_SUPPORTED).await.map_err(e)?;
            return Err(format!("address type {atyp} not supported"));
        }
    };
    let port = io.read_u16().await.map_err(e)?;
    if cmd != 1 {
        reply(io, COMMAND_NOT_SUPPORTED).await.map_err(e)?;
        return Err(format!("command {cmd} not supported (CONNECT only)"));
    }
    Ok(format!("{host}:{port}"))
}
