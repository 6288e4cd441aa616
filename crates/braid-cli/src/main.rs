//! `braid`: the command. A server (`braid server`, far end of forwards and SOCKS), file
//! transfer (`braid send` / `braid recv`), TCP port forwarding (`braid forward`), a SOCKS5 proxy
//! (`braid socks`), `braid bench`, `braid demo` and `braid keygen`. Every failure is one line on
//! stderr and a non-zero exit.

mod bench;
mod common;
mod demo;
mod request;
mod serve;
mod socks;
mod stats;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a new pre-shared key file (give the same file to both ends).
    Keygen {
        /// Where to write it (refuses to overwrite).
        #[arg(short, long, default_value = "braid.key")]
        out: PathBuf,
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
        #[command(flatten)]
        transport: common::TransportOpts,
    },
    /// Forward a local TCP port through braid to HOST:PORT (as `ssh -L`).
    Forward {
        /// Local TCP address to accept on.
        #[arg(long)]
        listen: String,
        /// Where the server connects each forwarded connection.
        #[arg(long)]
        to: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Measure goodput and latency under load through a `braid server` (as iperf3).
    ///
    /// Latency is the round trip of 1-byte probes on a second stream while the data flows; the
    /// streams share one ordered pipe, so a probe waits behind the data queued before it. A probe
    /// unanswered 1 s after the end is abandoned and counted with its age (a lower bound).
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
    /// UDP address to listen on.
    #[arg(short, long, default_value = "0.0.0.0:4433")]
    listen: String,
    /// Also accept files from `braid send`, written into this directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    key: common::KeyOpt,
    #[command(flatten)]
    transport: common::TransportOpts,
    #[command(flatten)]
    stats: stats::StatsOpts,
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
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("braid: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: Result<(), Fail> = runtime.block_on(async move {
        match cli.command {
            Command::Keygen { out } => common::keygen(&out),
            Command::Server(a) => {
                a.stats.check()?;
                let key = a.key.load()?;
                let listen = common::parse_listen(&a.listen, "--listen")?;
                serve::run_server(
                    key,
                    listen,
                    a.transport.config()?,
                    serve::Role { connect: true, dir: a.dir, one_file: None, stats: a.stats },
                )
                .await
            }
            Command::Recv { listen, out, key, transport } => {
                let key = key.load()?;
                let listen = common::parse_listen(&listen, "--listen")?;
                let role =
                    serve::Role { connect: false, dir: None, one_file: Some(out), stats: Default::default() };
                serve::run_server(key, listen, transport.config()?, role).await
            }
            Command::Send { file, client } => transfer::send(&file, &client).await,
            Command::Forward { listen, to, client } => socks::forward(&listen, &to, &client).await,
            Command::Bench { time, reverse, json, client } => bench::run(&client, time, reverse, json).await,
            Command::Demo(a) => demo::run(a).await,
            Command::Socks { listen, auth, client } => socks::socks(&listen, auth.as_deref(), &client).await,
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
