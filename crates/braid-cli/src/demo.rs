//! `braid demo`: one command, no root, no key file. A server runs in this process on
//! 127.0.0.1; for each mode a client connects to it over two emulated lossy paths (real UDP
//! sockets, impairment in the client's socket layer, both directions), runs the `braid bench`
//! measurement, and the results are printed as a table and drawn as an SVG bar chart.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use braid_proto::conn::Mode;
use braid_runtime::{ClientConfig, ConnectionConfig, Emulation, Endpoint, Key, PathSpec, ServerConfig};
use clap::Args;

use crate::bench::{self, Amount, Measured};
use crate::common::{emulations, fail, Fail};
use crate::serve;

/// The modes in the order they run (and are drawn) by default.
const DEFAULT_MODES: &str = "braid,tcp,mptcp,ctcp,fmtcp,dfec,sato,tcp-ir";

#[derive(Args)]
pub struct DemoArgs {
    /// Modes to run, comma-separated (any of braid, tcp, mptcp, ctcp, fmtcp, dfec, sato, tcp-ir,
    /// mptcp-dfec).
    #[arg(long, default_value = DEFAULT_MODES, value_delimiter = ',')]
    modes: Vec<String>,
    /// Path 1's impairment "RATE,DELAY,LOSS" (both directions).
    #[arg(long, default_value = "20mbit,20ms,1%", value_name = "SPEC")]
    path_a: String,
    /// Path 2's impairment.
    #[arg(long, default_value = "10mbit,80ms,5%", value_name = "SPEC")]
    path_b: String,
    /// Instead of --path-a/--path-b: one path per --emulate (repeat it).
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["path_a", "path_b"])]
    emulate: Vec<String>,
    /// Seconds of data per mode.
    #[arg(long, default_value_t = 5.0, conflicts_with = "bytes")]
    seconds: f64,
    /// Send exactly this many bytes per mode instead (timed first byte to last at the receiver).
    #[arg(long)]
    bytes: Option<u64>,
    /// Where to write the SVG bar chart.
    #[arg(long, default_value = "braid-demo.svg", value_name = "FILE")]
    plot: PathBuf,
}

/// A mode's name in the table: what it is when the name alone would mislead.
fn label(mode: Mode) -> String {
    match mode {
        Mode::Tcp => "tcp (model of TCP over UDP)".to_string(),
        Mode::Mptcp => "mptcp (model)".to_string(),
        Mode::MptcpDfec => "mptcp-dfec (model)".to_string(),
        m => m.name().to_string(),
    }
}

struct Row {
    mode: Mode,
    m: Measured,
    /// Repair symbols over all symbols sent (source + repair), in %.
    repair_pct: f64,
}

pub async fn run(a: DemoArgs) -> Result<(), Fail> {
    let modes: Vec<Mode> = a
        .modes
        .iter()
        .map(|m| m.trim().parse::<Mode>().map_err(|e| fail(format!("--modes: {e}"))))
        .collect::<Result<_, _>>()?;
    if modes.is_empty() {
        return Err(fail("--modes: give at least one mode"));
    }
    let specs =
        if a.emulate.is_empty() { vec![a.path_a.clone(), a.path_b.clone()] } else { a.emulate.clone() };
    if specs.len() > 8 {
        return Err(fail("--emulate: at most 8 paths"));
    }
    let emulate = emulations(&specs, specs.len())?;
    let links: Vec<Emulation> = emulate.iter().flatten().copied().collect();
    let amount = match a.bytes {
        Some(0) => return Err(fail("--bytes: expected at least 1")),
        Some(n) => Amount::Bytes(n),
        None if a.seconds > 0.0 && a.seconds <= 600.0 => Amount::Time(Duration::from_secs_f64(a.seconds)),
        None => return Err(fail("--seconds: expected seconds between 0 and 600")),
    };
    // Fail on an unwritable plot now, not after the whole run.
    std::fs::write(&a.plot, "").map_err(|e| fail(format!("--plot {}: {e}", a.plot.display())))?;

    // The server, in this process, with a key that lives only in memory.
    let key = Key::generate()?;
    // The transport's own 16 MiB windows, not a small router's limits: the demo measures goodput.
    let mut config = ServerConfig::new(key.clone());
    config.limits.connection_memory = config.transport.params.initial_max_data;
    let server = Endpoint::server(config, "127.0.0.1:0".parse().expect("addr"))?;
    let server_addr = server.local_addr()?;
    let accept = tokio::spawn(accept_loop(server));

    let ideal = ideal_mbps(&links);
    eprintln!(
        "braid demo: server on {server_addr} (UDP, ephemeral key); {} path(s): {}; ideal Σ rate·(1−loss) = {}",
        links.len(),
        specs.iter().enumerate().map(|(i, s)| format!("path {} {s}", i + 1)).collect::<Vec<_>>().join(", "),
        ideal.map_or_else(|| "unbounded".to_string(), |i| format!("{i:.1} Mbit/s"))
    );
    let mut rows = Vec::new();
    for (i, &mode) in modes.iter().enumerate() {
        let what = match amount {
            Amount::Time(d) => format!("{:.1} s", d.as_secs_f64()),
            Amount::Bytes(n) => format!("{n} bytes"),
        };
        eprint!("[{}/{}] {:<28} {what} ... ", i + 1, modes.len(), label(mode));
        let row = match run_mode(mode, &key, server_addr, &emulate, amount).await {
            Ok(row) => row,
            Err(e) => {
                eprintln!("failed");
                return Err(fail(format!("demo: mode {}: {e}", mode.name())));
            }
        };
        eprintln!("{:.1} Mbit/s", row.m.goodput_mbps());
        rows.push(row);
    }
    accept.abort();

    let table = table(&rows, ideal);
    {
        use std::io::Write;
        let _ = write!(std::io::stdout(), "{table}");
    }
    let svg = svg(&rows, ideal, &specs);
    std::fs::write(&a.plot, svg).map_err(|e| fail(format!("--plot {}: {e}", a.plot.display())))?;
    eprintln!("braid demo: wrote the chart to {}", a.plot.display());
    Ok(())
}

async fn accept_loop(mut server: braid_runtime::Server) {
    let role = serve::Role {
        connect: false,
        dir: None,
        one_file: None,
        stats: Default::default(),
        limits: Default::default(),
        metrics: None,
        tun: None,
        qlog: None,
    };
    let (done, _keep) = tokio::sync::mpsc::channel(1);
    while let Some(conn) = server.accept().await {
        tokio::spawn(serve::serve_connection(conn, role.clone(), done.clone()));
    }
}

async fn run_mode(
    mode: Mode,
    key: &Key,
    server: std::net::SocketAddr,
    emulate: &[Option<Emulation>],
    amount: Amount,
) -> Result<Row, Fail> {
    let mut config = ClientConfig::new(key.clone());
    config.transport = ConnectionConfig { mode, ..ConnectionConfig::default() };
    config.paths = emulate.iter().map(|_| PathSpec::Addr("127.0.0.1:0".parse().expect("addr"))).collect();
    config.emulate = emulate.to_vec();
    let conn = Endpoint::connect(config, server).await?;
    let before = conn.stats();
    let m = bench::measure(&conn, amount, false).await?;
    if let Amount::Bytes(n) = amount {
        if m.bytes != n {
            return Err(fail(format!("the server counted {} of the {n} bytes sent", m.bytes)));
        }
    }
    let after = conn.stats();
    let repair = after.repair_symbols_sent - before.repair_symbols_sent;
    let source = after.source_symbols_sent - before.source_symbols_sent;
    let repair_pct = 100.0 * repair as f64 / (repair + source).max(1) as f64;
    conn.close(0, "done");
    let _ = tokio::time::timeout(Duration::from_millis(200), conn.closed()).await;
    Ok(Row { mode, m, repair_pct })
}

/// What the paths could carry at best: Σ rateᵢ·(1−pᵢ), in Mbit/s; `None` if a path is unlimited.
fn ideal_mbps(links: &[Emulation]) -> Option<f64> {
    links.iter().map(|l| l.rate_bps.map(|r| r as f64 * (1.0 - l.loss) / 1e6)).sum()
}

/// Each path's share of the bytes sent, in %.
fn shares(m: &Measured) -> Vec<f64> {
    let total: f64 = m.samples.iter().map(|s| s.send_mbps).sum();
    m.samples.iter().map(|s| if total > 0.0 { 100.0 * s.send_mbps / total } else { 0.0 }).collect()
}

fn table(rows: &[Row], ideal: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<28} {:>14} {:>8} {:>19} {:>9} {:>20}",
        "mode", "goodput Mbit/s", "× ideal", "path share (sent)", "repair %", "latency p50/max ms"
    );
    for r in rows {
        let share = shares(&r.m).iter().map(|p| format!("{p:.0}%")).collect::<Vec<_>>().join(" / ");
        let ratio = ideal.map_or_else(|| "-".to_string(), |i| format!("{:.2}", r.m.goodput_mbps() / i));
        let ms = |d: Option<&Duration>| {
            d.map_or_else(|| "-".to_string(), |d| format!("{:.0}", d.as_secs_f64() * 1e3))
        };
        let latency = format!("{} / {}", ms(bench::percentile(&r.m.rtts, 0.5)), ms(r.m.rtts.last()));
        let _ = writeln!(
            s,
            "{:<28} {:>14.2} {:>8} {:>19} {:>9.1} {:>20}",
            label(r.mode),
            r.m.goodput_mbps(),
            ratio,
            share,
            r.repair_pct,
            latency
        );
    }
    s.push_str(
        "goodput: payload bytes delivered in order; × ideal: over Σ rateᵢ·(1−lossᵢ); latency: probe\n",
    );
    s.push_str("round trips on a second stream during the transfer (max may be a lower bound, see `braid bench --help`)\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A bar chart of goodput per mode, with the ideal as a dashed line; written by hand.
fn svg(rows: &[Row], ideal: Option<f64>, specs: &[String]) -> String {
    let (left, top, plot_h, bar_w, gap) = (60.0, 50.0, 300.0, 56.0, 24.0);
    // Wide enough for the title and the note below the bars.
    let width = (left + rows.len() as f64 * (bar_w + gap) + gap + 20.0).max(560.0);
    let height = top + plot_h + 90.0;
    let top_value = rows.iter().map(|r| r.m.goodput_mbps()).chain(ideal).fold(1.0_f64, f64::max) * 1.1;
    let y = |v: f64| top + plot_h - v / top_value * plot_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14" font-weight="bold">braid demo: goodput per mode</text>"#
    );
    let paths = format!("{} emulated paths on loopback: {}", specs.len(), specs.join(" + "));
    let _ = writeln!(s, r#"<text x="{left}" y="38">{}</text>"#, escape(&paths));
    // Axis and ticks.
    let _ =
        writeln!(s, r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#333"/>"##, top + plot_h);
    let _ = writeln!(
        s,
        r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#333"/>"##,
        top + plot_h,
        width - 10.0
    );
    let step = nice_step(top_value / 5.0);
    let decimals = if step >= 1.0 { 0 } else { 1 };
    for k in 0.. {
        let t = k as f64 * step;
        if t > top_value {
            break;
        }
        let _ = writeln!(
            s,
            r##"<line x1="{x1:.1}" y1="{ty:.1}" x2="{left}" y2="{ty:.1}" stroke="#333"/><text x="{tx:.1}" y="{ly:.1}" text-anchor="end">{t:.decimals$}</text>"##,
            x1 = left - 4.0,
            ty = y(t),
            tx = left - 6.0,
            ly = y(t) + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">goodput (Mbit/s)</text>"#,
        top + plot_h / 2.0
    );
    for (i, r) in rows.iter().enumerate() {
        let g = r.m.goodput_mbps();
        let x = left + gap + i as f64 * (bar_w + gap);
        let fill = if r.mode == Mode::Braid { "#2a7ab0" } else { "#9bb7cc" };
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="{bar_w}" height="{:.1}" fill="{fill}"><title>{}: {g:.2} Mbit/s</title></rect>"#,
            y(g),
            top + plot_h - y(g),
            escape(&label(r.mode))
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{g:.1}</text>"#,
            x + bar_w / 2.0,
            y(g) - 4.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x + bar_w / 2.0,
            top + plot_h + 16.0,
            escape(r.mode.name())
        );
    }
    if let Some(i) = ideal {
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#c0392b" stroke-dasharray="6 4"/><text x="{1:.1}" y="{2:.1}" text-anchor="end" fill="#c0392b">ideal Σ rate·(1−loss) = {i:.1}</text>"##,
            y(i),
            width - 10.0,
            y(i) - 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{:.1}">tcp and mptcp are braid's models of them over UDP, not the kernel's</text>"#,
        top + plot_h + 44.0
    );
    s.push_str("</svg>\n");
    s
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1e-3).log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|k| k * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_is_the_sum_of_rate_times_delivery() {
        let a: Emulation = "20mbit,20ms,1%".parse().unwrap();
        let b: Emulation = "10mbit,80ms,5%".parse().unwrap();
        let i = ideal_mbps(&[a, b]).unwrap();
        assert!((i - (19.8 + 9.5)).abs() < 1e-9, "{i}");
        let c: Emulation = "20ms".parse().unwrap();
        assert_eq!(ideal_mbps(&[a, c]), None);
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_step(3.2), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.15), 0.2);
        assert_eq!(nice_step(20.0), 20.0);
    }

    #[test]
    fn the_chart_is_svg_and_escapes_text() {
        let rows = vec![Row {
            mode: Mode::Braid,
            m: Measured { bytes: 1_000_000, elapsed: Duration::from_secs(1), rtts: vec![], samples: vec![] },
            repair_pct: 5.0,
        }];
        let s = svg(&rows, Some(29.3), &["a<b".to_string()]);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && !s.contains("a<b"));
        assert!(s.contains(">braid<"));
    }
}
