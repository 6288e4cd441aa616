//! `braid`: the command. A server (`braid server`, far end of forwards and SOCKS), file
//! transfer (`braid send` / `braid recv`), TCP port forwarding (`braid forward`), a SOCKS5 proxy
//! (`braid socks`), `braid bench`, `braid demo` and `braid keygen`. Every failure is one line on
//! stderr and a non-zero exit.

use braid_cli::{bench, common, config, demo, serve, socks, stats, transfer, tunnel};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use common::{ClientOpts, Fail};

#[derive(Parser)]
#[command(
    name = "braid",
    version,
    about = "Coded multipath transport: file transfer, port forwarding and SOCKS5 over several paths at once"
)]
struct Cli {
    /// More log output (-v: info, -vv: debug, -vvv: trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// A TOML file with a key for every flag (see braid.toml); flags given here win over it.
    #[arg(long, value_name = "FILE", global = true, env = "BRAID_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a new pre-shared key file (give the same file to both ends), or with --pair a
    /// private key and its public key (FILE.pub).
    Keygen {
        /// Where to write it (refuses to overwrite).
        #[arg(short, long, default_value = "braid.key")]
        out: PathBuf,
        /// A key pair (Noise IK) instead of a shared key: the private key goes to --out, the
        /// public key to --out with ".pub" appended and to stdout.
        #[arg(long)]
        pair: bool,
    },
    /// Accept braid connections: the far end of `forward` and `socks`.
    Server(ServerArgs),
    /// Send a file to `braid recv` (progress, end-to-end hash check).
    Send {
        /// The file to send.
        file: PathBuf,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Receive one file from `braid send`.
    Recv {
        /// UDP address to listen on.
        #[arg(short, long, default_value = "0.0.0.0:4433")]
        listen: String,
        /// Where to write the file (default: its name, in the current directory).
        #[arg(short, long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        key: common::KeyOpt,
        /// Key pairs: the file of client public keys let in (one per line).
        #[arg(long, value_name = "FILE")]
        authorized: Option<PathBuf>,
        /// Emulated impairment "RATE,DELAY,LOSS" on everything this end sends and receives.
        #[arg(long, value_name = "SPEC")]
        emulate: Option<String>,
        #[command(flatten)]
        transport: common::TransportOpts,
    },
    /// Forward a local TCP port through braid to HOST:PORT (as `ssh -L`).
    Forward {
        /// Local TCP address to accept on (required, here or in the config file).
        #[arg(long)]
        listen: Option<String>,
        /// Where the server connects each forwarded connection (required, here or in the config file).
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Measure goodput and latency under load through a `braid server` (as iperf3).
    ///
    /// Latency is the round trip of 8-byte probes on a second stream while the data flows, 20 a
    /// second, each sent without waiting for the others' answers (p50, p99, max). Streams are
    /// delivered each on its own, so a probe waits only for the paths' queues and what braid cut
    /// ahead of it (about 10 ms). A probe unanswered 1 s after the end is abandoned and counted
    /// with its age (a lower bound).
    Bench {
        /// Seconds of data.
        #[arg(short, long, default_value_t = 5.0)]
        time: f64,
        /// The server sends (download) instead of the client.
        #[arg(short = 'R', long)]
        reverse: bool,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// The demo: every mode over two emulated lossy paths on this machine, a table and a chart.
    ///
    /// No root and no key file: a server runs in this process on 127.0.0.1 with a key that lives
    /// only in memory, and each mode makes a real transfer through real UDP sockets to it.
    Demo(demo::DemoArgs),
    /// Bond the whole device: a TUN device whose TCP, UDP and pings go through a `braid server
    /// --tun` (root; see docs/TUN.md).
    Tun {
        #[command(flatten)]
        tun: tunnel::client::TunOpts,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// A SOCKS5 proxy (RFC 1928 CONNECT) whose connections leave from the braid server.
    Socks {
        /// Local TCP address to accept SOCKS clients on.
        #[arg(long, default_value = "127.0.0.1:1080")]
        listen: String,
        /// Require RFC 1929 username/password (USER:PASS); default: no authentication.
        #[arg(long)]
        auth: Option<String>,
        #[command(flatten)]
        client: ClientOpts,
    },
}

#[derive(Args)]
struct ServerArgs {
    /// Accept tunnels from `braid tun`, handing out addresses from --tun-pool.
    #[arg(long)]
    tun: bool,
    /// The tunnels' addresses (an IPv4 network; its first host is the server's side).
    #[arg(long, value_name = "CIDR", default_value = "10.77.0.0/24")]
    tun_pool: String,
    /// The tunnels' IPv6 addresses (a prefix such as fd77::/64; a client's is the prefix plus
    /// its IPv4 address's host part). Without it the tunnels carry IPv4 only.
    #[arg(long, value_name = "PREFIX")]
    tun_pool6: Option<String>,
    /// Let tunnels reach this host's own addresses and loopback (refused by default).
    #[arg(long)]
    tun_allow_local: bool,
    /// UDP address to listen on.
    #[arg(short, long, default_value = "0.0.0.0:4433")]
    listen: String,
    /// Also accept files from `braid send`, written into this directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    key: common::KeyOpt,
    /// Key pairs: the file of client public keys let in (one per line, as ssh's authorized_keys).
    #[arg(long, value_name = "FILE")]
    authorized: Option<PathBuf>,
    /// Emulated impairment "RATE,DELAY,LOSS" on everything the server sends and receives (the
    /// client's --emulate impairs its own side: both together impair both ends).
    #[arg(long, value_name = "SPEC")]
    emulate: Option<String>,
    #[command(flatten)]
    transport: common::TransportOpts,
    #[command(flatten)]
    stats: stats::StatsOpts,
    #[command(flatten)]
    limits: common::LimitOpts,
    /// Serve Prometheus metrics over HTTP on this TCP address (e.g. 127.0.0.1:9090).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Write one qlog file per connection (JSON-SEQ, for qvis) into this directory (made if
    /// missing).
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
}

fn init_logs(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BRAID_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("braid={level},braid_runtime={level},braid_cli={level}"))
    });
    // Structured: each event's fields follow its message as key=value; colours only on a terminal.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Fills what the command line left unsaid from `--config` (flags win).
fn apply_config(cli: &mut Cli, matches: &clap::ArgMatches) -> Result<(), Fail> {
    let Some(path) = &cli.config else { return Ok(()) };
    let mut file = config::FileConfig::read(path)?;
    let Some((_, m)) = matches.subcommand() else { return Ok(()) };
    use config::{merge, merge_opt};
    match &mut cli.command {
        Command::Keygen { .. } | Command::Demo(_) => {}
        Command::Server(a) => {
            let s = std::mem::take(&mut file.server);
            merge(m, "listen", &mut a.listen, s.listen);
            merge_opt(m, "dir", &mut a.dir, s.dir);
            merge_opt(m, "authorized", &mut a.authorized, s.authorized);
            merge_opt(m, "emulate", &mut a.emulate, s.emulate);
            merge(m, "max_connections", &mut a.limits.max_connections, s.max_connections);
            merge(m, "connection_memory", &mut a.limits.connection_memory, s.connection_memory);
            merge(m, "max_streams", &mut a.limits.max_streams, s.max_streams);
            merge(m, "handshake_rate", &mut a.limits.handshake_rate, s.handshake_rate);
            merge_opt(m, "metrics", &mut a.metrics, s.metrics);
            merge_opt(m, "qlog", &mut a.qlog, s.qlog);
            file.apply_key(m, &mut a.key);
            file.apply_transport(m, &mut a.transport);
            file.apply_stats(m, &mut a.stats);
        }
        Command::Recv { listen, out, key, authorized, emulate, transport } => {
            let s = std::mem::take(&mut file.recv);
            merge(m, "listen", listen, s.listen);
            merge_opt(m, "out", out, s.out);
            merge_opt(m, "authorized", authorized, s.authorized);
            merge_opt(m, "emulate", emulate, s.emulate);
            file.apply_key(m, key);
            file.apply_transport(m, transport);
        }
        Command::Send { client, .. } => file.apply_client(m, client),
        Command::Forward { listen, to, client } => {
            let s = std::mem::take(&mut file.forward);
            merge_opt(m, "listen", listen, s.listen);
            merge_opt(m, "to", to, s.to);
            file.apply_client(m, client);
        }
        Command::Bench { time, reverse, json, client } => {
            let s = std::mem::take(&mut file.bench);
            merge(m, "time", time, s.time);
            merge(m, "reverse", reverse, s.reverse);
            merge(m, "json", json, s.json);
            file.apply_client(m, client);
        }
        Command::Tun { client, .. } => file.apply_client(m, client),
        Command::Socks { listen, auth, client } => {
            let s = std::mem::take(&mut file.socks);
            merge(m, "listen", listen, s.listen);
            merge_opt(m, "auth", auth, s.auth);
            file.apply_client(m, client);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    init_logs(cli.verbose);
    if let Err(e) = apply_config(&mut cli, &matches) {
        eprintln!("braid: {e}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("braid: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: Result<(), Fail> = runtime.block_on(async move {
        match cli.command {
            Command::Keygen { out, pair } => common::keygen(&out, pair),
            Command::Server(a) => {
                a.stats.check()?;
                let key = a.key.server_auth(a.authorized.as_deref())?;
                let listen = common::parse_listen(&a.listen, "--listen")?;
                let limits = a.limits.limits()?;
                let metrics =
                    a.metrics.as_deref().map(|m| common::parse_listen(m, "--metrics")).transpose()?;
                let tun = match a.tun {
                    true => Some(std::sync::Arc::new({
                        let pool = tunnel::pool::Pool::parse(&a.tun_pool).map_err(common::fail)?;
                        let pool6 = a
                            .tun_pool6
                            .as_deref()
                            .map(|p| tunnel::pool::Pool6::parse(p, &pool))
                            .transpose()
                            .map_err(common::fail)?;
                        tunnel::server::TunServer {
                            pool,
                            pool6,
                            allow_local: a.tun_allow_local,
                            dropped: Default::default(),
                        }
                    })),
                    false => None,
                };
                serve::run_server(
                    key,
                    listen,
                    a.transport.config()?,
                    common::server_emulation(a.emulate.as_deref())?,
                    serve::Role {
                        connect: true,
                        dir: a.dir,
                        one_file: None,
                        stats: a.stats,
                        limits,
                        metrics,
                        tun,
                        qlog: common::qlog_dir(a.qlog.as_deref())?,
                    },
                )
                .await
            }
            Command::Recv { listen, out, key, authorized, emulate, transport } => {
                let key = key.server_auth(authorized.as_deref())?;
                let listen = common::parse_listen(&listen, "--listen")?;
                let role = serve::Role {
                    connect: false,
                    dir: None,
                    one_file: Some(out),
                    stats: Default::default(),
                    limits: Default::default(),
                    metrics: None,
                    tun: None,
                    qlog: None,
                };
                let emulate = common::server_emulation(emulate.as_deref())?;
                serve::run_server(key, listen, transport.config()?, emulate, role).await
            }
            Command::Send { file, client } => transfer::send(&file, &client).await,
            Command::Forward { listen, to, client } => {
                let need = |v: Option<String>, flag: &str| {
                    v.ok_or_else(|| {
                        common::fail(format!(
                            "forward needs {flag} (or `{}` under [forward] in --config)",
                            &flag[2..]
                        ))
                    })
                };
                socks::forward(&need(listen, "--listen")?, &need(to, "--to")?, &client).await
            }
            Command::Bench { time, reverse, json, client } => bench::run(&client, time, reverse, json).await,
            Command::Demo(a) => demo::run(a).await,
            Command::Socks { listen, auth, client } => socks::socks(&listen, auth.as_deref(), &client).await,
            Command::Tun { tun, client } => tunnel::client::run(&tun, &client).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid: {e}");
            ExitCode::FAILURE
        }
    }
}
