//! Results: one [`Row`] per contender and scenario point (with a web or video row's own
//! metrics), printed as a table and written as JSON and CSV. The workloads fill rows; this
//! module knows none of them.

use std::io;
use std::path::Path;

use serde::Serialize;

use crate::forwarder::ForwardStats;
use crate::probe::ProbeMetrics;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub scenario: String,
    pub label: String,
    pub seed: u64,
    pub contender: String,
    pub transfer_bytes: u64,
    pub received_bytes: u64,
    /// Connect → last byte at the receiver; `None` if the limit came first.
    pub completion_s: Option<f64>,
    pub elapsed_s: f64,
    /// received × 8 / elapsed (the whole transfer, slow start included).
    pub goodput_mbps: f64,
    /// Goodput from 2 s after connect to the last byte (or the limit), when that window is ≥ 2 s:
    /// comparable with iperf3's steady-state numbers in TESTBED.md.
    pub steady_mbps: Option<f64>,
    /// Σ rateᵢ × (1 − pᵢ) of the forward paths over the same time (braid-sim's ideal).
    pub ideal_mbps: f64,
    pub ratio: f64,
    /// Bytes the client's kernel put into each path (client TUN tx), and that came out of it at
    /// the server (server TUN rx): proof of which path each subflow used.
    pub path_fwd_tx_bytes: Vec<u64>,
    pub path_fwd_rx_bytes: Vec<u64>,
    /// TX/RX drops on the TUN devices during the run (loss nobody configured; should be 0).
    pub tun_drops: u64,
    /// Whether `ss -tinM` showed the contender's congestion control (and an MPTCP socket).
    pub ss_check: String,
    pub ss_file: String,
    /// /proc/loadavg (1, 5, 15 min) at the start of the run.
    pub load: String,
    pub error: Option<String>,
    pub forwarders: Vec<ForwardStats>,
    /// The flow mix of a concurrent run (`braid:2,cubic:2`), empty for a run of one contender.
    /// In a mix: `steady_mbps` is the flow's goodput over the fairness window, `ratio` that over
    /// its fair share, `transfer_bytes` 0 (flows send until the limit).
    pub mix: String,
    /// The flow's index in its mix (0 outside a mix).
    pub flow: usize,
    /// Jain's fairness index over the mix's flows (the same on each of its rows).
    pub jain: Option<f64>,
    /// `bulk`, `web` or `video` (crate::workload). Web and video rows reuse the bulk fields as
    /// documented on [`WebMetrics`] and [`VideoMetrics`].
    pub workload: String,
    pub web: Option<WebMetrics>,
    pub video: Option<VideoMetrics>,
    /// Latency under load: probe round trips beside the transfer (the `latency` workload).
    pub probe: Option<ProbeMetrics>,
    pub tun: Option<TunMetrics>,
    /// `--timeline`: when the first sender connected, in seconds from the links' time zero
    /// (where the scenario's outages and changes count from).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_s: Option<f64>,
    /// An external contender's setup: from spawning its commands to its entry port listening,
    /// in seconds. `braid forward` opens its port once its handshake completed, so this is the
    /// tunnel's setup, and not part of `completion_s` (which starts at the sender's connect, as
    /// a kernel contender's starts at its SYN). JSON only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_s: Option<f64>,
    /// `--timeline`: (seconds from the links' time zero, bytes at the sink), every 100 ms
    /// from the run's start to its end. JSON only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<(f64, u64)>,
}

/// One tun-workload row's metrics (crate::tun): one row per part and contender. In the row's bulk
/// fields: `tcp-download` rows as a bulk run's (the file's bytes, curl's time to the last byte,
/// received only if every byte matched); `udp-stream` rows: `transfer_bytes` = payload sent,
/// `received_bytes` = payload that arrived (on time or not), `goodput_mbps` over the sending
/// time; `udp-ping` rows: none. Path counters and forwarder statistics cover the whole part
/// (braid's start and stop included).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TunMetrics {
    /// `tcp-download`, `udp-stream` or `udp-ping`.
    pub part: String,
    /// Bytes the server's side put into each path during the part (a download's direction;
    /// the row's `path_fwd_tx_bytes` are the client's).
    pub path_rev_tx_bytes: Vec<u64>,
    /// Whether the downloaded file equals the served one, byte for byte.
    pub tcp_intact: Option<bool>,
    /// `braid-tun` rows: what the tunnel left in the client namespace after it stopped (device,
    /// routes, both namespaces' nftables rulesets, compared with before it started): `clean` or
    /// the list.
    pub teardown: Option<String>,
    pub udp_packets: Option<usize>,
    /// Payload bytes per packet.
    pub udp_packet_bytes: Option<usize>,
    pub udp_rate_mbps: Option<f64>,
    pub udp_deadline_ms: Option<f64>,
    pub udp_received: Option<usize>,
    pub udp_on_time: Option<usize>,
    /// Share of the stream's packets that arrived within the deadline of their send time.
    pub udp_on_time_within_deadline: Option<f64>,
    /// Share that arrived at all.
    pub udp_delivered_share: Option<f64>,
    /// Packets that missed the deadline (lost or late): `udp_packets - udp_on_time`.
    pub udp_missed: Option<usize>,
    /// The longest run of consecutive packets (by sequence number) that all missed the
    /// deadline: how many, the stream time they span (packets × the sending interval) and when
    /// the run's first packet was due to be sent (seconds from the stream's start). A path's
    /// death costs at most the deadline's worth when the run spans no more than the deadline.
    pub udp_longest_miss_run: Option<usize>,
    pub udp_longest_miss_ms: Option<f64>,
    pub udp_longest_miss_at_s: Option<f64>,
    /// The most misses among the packets of any one second of the stream: a burst's cost even
    /// when a few of its packets got through (which ends a run); and when that second began
    /// (the earliest such, from the stream's start).
    pub udp_misses_worst_1s: Option<usize>,
    pub udp_misses_worst_1s_at_s: Option<f64>,
    /// When the stream's first packet left, on the scenario's clock (from the part's forwarders'
    /// start, which outages count from): add it to the `_at_s` fields to place them against an
    /// outage. The tunnel's start-up comes before it.
    pub udp_stream_start_s: Option<f64>,
    /// One-way latency over every packet (a lost one is infinitely late: none when the
    /// percentile falls on one).
    pub udp_p50_ms: Option<f64>,
    pub udp_p99_ms: Option<f64>,
    pub udp_send_errors: Option<u64>,
    pub udp_duplicates: Option<u64>,
    /// Bytes into the paths at the client (IP headers included) while the stream ran, and out
    /// of the paths' server side back (braid's acknowledgements).
    pub udp_wire_bytes_fwd: Option<u64>,
    pub udp_wire_bytes_rev: Option<u64>,
    /// Forward wire bytes over payload bytes, minus 1 (headers, tunnel framing, repair).
    pub udp_wire_overhead: Option<f64>,
    /// The same with the reverse direction's bytes counted too.
    pub udp_wire_overhead_both: Option<f64>,
    /// braid's repair bytes over its datagram bytes (the tunnel client's own count).
    pub udp_repair_overhead: Option<f64>,
    /// The configured loss the stream met: each forward path's, weighted by its share of bytes.
    pub udp_loss_met: Option<f64>,
    /// Each forward path's configured mean loss.
    pub forward_loss: Vec<f64>,
    /// The tunnel client's datagram counts at exit (its whole run): datagrams and repairs it
    /// sent, datagrams it dropped (past their deadline, queue full).
    pub braid_datagrams_sent: Option<u64>,
    pub braid_repairs_sent: Option<u64>,
    pub braid_client_dropped: Option<u64>,
    /// Of the repairs sent, those answering a loss detected from ACKs or a path's silence;
    /// datagrams and repairs given up as lost on a path that fell silent, of them those whose
    /// repairs the takeover allowance paid (beyond the repair credit), and those acknowledged
    /// after all (the silence was a slow path or host, not a death).
    pub braid_loss_repairs: Option<u64>,
    pub braid_suspected: Option<u64>,
    pub braid_suspected_on_allowance: Option<u64>,
    pub braid_suspected_delivered: Option<u64>,
    /// The server's counts for the tunnel (its `tunnel closed` log line): datagrams received,
    /// of them rebuilt from repair, rebuilt too late (dropped), dropped.
    pub braid_server_received: Option<u64>,
    pub braid_server_rebuilt: Option<u64>,
    pub braid_server_late: Option<u64>,
    pub braid_server_dropped: Option<u64>,
    pub ping_sent: Option<usize>,
    pub ping_answered: Option<usize>,
    pub ping_rtt_p50_ms: Option<f64>,
    pub ping_rtt_p99_ms: Option<f64>,
}

/// One web row's metrics (one row per page and contender). In the row's bulk fields:
/// `transfer_bytes` = page bytes × loads, `received_bytes` = bytes of the loads that verified,
/// `completion_s` = the sum of the page times if every load verified (else none),
/// `elapsed_s` = wall time of this page's loads, path byte counters and forwarder statistics of
/// the whole run (every page: do not add them up over a contender's rows). `ideal_mbps` and
/// `ratio` are of the forward (client → server) direction, not the pages' direction: ignore them.
#[derive(Debug, Clone, Serialize)]
pub struct WebMetrics {
    pub page: String,
    pub objects: usize,
    pub page_bytes: u64,
    pub loads: usize,
    /// Page completion time of each verified load, in load order (seconds).
    pub times_s: Vec<f64>,
    pub median_s: Option<f64>,
    pub p90_s: Option<f64>,
    /// h2load's "finished in" of each verified load: from its TCP connect (the handshake
    /// included) to the last response.
    pub finished_s: Vec<f64>,
    /// Why loads failed (requests, statuses, bytes, h2load's error), one per failed load.
    pub failures: Vec<String>,
    /// TCP connections the path relay accepted per load (kernel contenders: 1 = multiplexed).
    pub connections_per_load: Option<f64>,
}

/// One video row's metrics. In the row's bulk fields: `transfer_bytes` = the stream's bytes
/// (headers included), `received_bytes` = bytes of the frames that arrived whole,
/// `completion_s` = connect → last frame complete if every frame arrived (else none),
/// `goodput_mbps` = received over that time.
#[derive(Debug, Clone, Serialize)]
pub struct VideoMetrics {
    pub frames: usize,
    pub fps: u32,
    pub stream_mbps: f64,
    pub deadline_ms: f64,
    pub received: usize,
    pub on_time: usize,
    pub on_time_share: f64,
    /// The same share over the frames captured from 2 s on (after the connection's slow start
    /// has carried the first I frame): shown beside `on_time_share`, never instead of it.
    pub on_time_share_after_2s: f64,
    /// Over every frame of the stream; none ("never") when the percentile is a missing frame.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Latency of each frame in ms (-1 = never arrived), for CDFs.
    pub latency_ms: Vec<f64>,
}

pub fn header() -> String {
    format!(
        "{:<22} {:<22} {:<12} {:>9} {:>8} {:>11} {:>18} {:>5} {:>6} {}",
        "scenario",
        "point",
        "contender",
        "goodput",
        "x ideal",
        "completion",
        "per-path MB",
        "drops",
        "ss",
        "load"
    )
}

pub fn line(r: &Row) -> String {
    let completion = match r.completion_s {
        Some(c) => format!("{c:.2} s"),
        None => format!("> {:.0} s", r.elapsed_s),
    };
    let per_path: Vec<String> =
        r.path_fwd_tx_bytes.iter().map(|b| format!("{:.1}", *b as f64 / 1e6)).collect();
    let mut s = format!(
        "{:<22} {:<22} {:<12} {:>9} {:>8.3} {:>11} {:>8} {:>18} {:>5} {:>6} {}",
        r.scenario,
        r.label,
        r.contender,
        format!("{:.2}", r.goodput_mbps),
        r.ratio,
        completion,
        r.steady_mbps.map(|s| format!("{s:.2}")).unwrap_or_else(|| "-".into()),
        per_path.join("/"),
        r.tun_drops,
        r.ss_check,
        r.load
    );
    if !r.mix.is_empty() {
        s.push_str(&format!("  mix {} flow {} jain {:.3}", r.mix, r.flow, r.jain.unwrap_or(0.0)));
    }
    s.push_str(&summary(r));
    if let Some(e) = &r.error {
        s.push_str(&format!("  ERROR: {e}"));
    }
    s
}

pub fn write_json(rows: &[Row], path: &Path) -> io::Result<()> {
    let text = serde_json::to_string_pretty(rows).map_err(io::Error::other)?;
    std::fs::write(path, text)
}

/// The CSV's columns: the run's, then the workloads' ([`CSV_COLUMNS`]).
const BASE_COLUMNS: &str = "scenario,label,seed,contender,transfer_bytes,received_bytes,completion_s,elapsed_s,\
goodput_mbps,steady_mbps,ideal_mbps,ratio,path_fwd_tx_bytes,path_fwd_rx_bytes,tun_drops,ss_check,load,error,mix,flow,jain";

/// The rows as CSV: [`BASE_COLUMNS`] and [`CSV_COLUMNS`], a line per row; lists inside a cell
/// are `;`-separated, a missing value is an empty cell.
pub fn write_csv(rows: &[Row], path: &Path) -> io::Result<()> {
    let mut out = csv::Writer::from_path(path)?;
    out.write_record(BASE_COLUMNS.split(',').chain(CSV_COLUMNS.split(',')))?;
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(";");
    for r in rows {
        let mut record = vec![
            r.scenario.clone(),
            r.label.clone(),
            r.seed.to_string(),
            r.contender.clone(),
            r.transfer_bytes.to_string(),
            r.received_bytes.to_string(),
            r.completion_s.map(|c| format!("{c:.3}")).unwrap_or_default(),
            format!("{:.3}", r.elapsed_s),
            format!("{:.4}", r.goodput_mbps),
            r.steady_mbps.map(|s| format!("{s:.4}")).unwrap_or_default(),
            format!("{:.4}", r.ideal_mbps),
            format!("{:.4}", r.ratio),
            join(&r.path_fwd_tx_bytes),
            join(&r.path_fwd_rx_bytes),
            r.tun_drops.to_string(),
            r.ss_check.clone(),
            r.load.clone(),
            r.error.clone().unwrap_or_default(),
            r.mix.clone(),
            r.flow.to_string(),
            r.jain.map(|j| format!("{j:.4}")).unwrap_or_default(),
        ];
        record.extend(csv_fields(r));
        out.write_record(&record)?;
    }
    out.flush()
}

/// The workload's metrics for the one-line table (empty for bulk).
pub fn summary(r: &Row) -> String {
    if let Some(w) = &r.web {
        let f = |v: Option<f64>| v.map(|s| format!("{s:.2} s")).unwrap_or_else(|| "-".into());
        format!(
            "  web {}: median {} p90 {} ({}/{} loads ok)",
            w.page,
            f(w.median_s),
            f(w.p90_s),
            w.times_s.len(),
            w.loads
        )
    } else if let Some(v) = &r.video {
        let f = |v: Option<f64>| v.map(|s| format!("{s:.0} ms")).unwrap_or_else(|| "never".into());
        format!(
            "  video: {:.2}% of {} frames on time ({:.2}% from 2 s), p50 {} p99 {}",
            v.on_time_share * 100.0,
            v.frames,
            v.on_time_share_after_2s * 100.0,
            f(v.p50_ms),
            f(v.p99_ms)
        )
    } else if let Some(p) = &r.probe {
        let f = |v: Option<f64>| v.map(|s| format!("{s:.0} ms")).unwrap_or_else(|| "-".into());
        format!(
            "  latency: {} probes ({} unanswered), p50 {} p99 {} max {} (p99 from 2 s {})",
            p.probes,
            p.unanswered,
            f(p.p50_ms),
            f(p.p99_ms),
            f(p.max_ms),
            f(p.p99_after_2s_ms)
        )
    } else if let Some(t) = &r.tun {
        tun_summary(t)
    } else {
        String::new()
    }
}

fn tun_summary(t: &TunMetrics) -> String {
    let ms = |v: Option<f64>| v.map(|s| format!("{s:.1} ms")).unwrap_or_else(|| "-".into());
    let pct = |v: Option<f64>| v.map(|s| format!("{:.2}%", s * 100.0)).unwrap_or_else(|| "-".into());
    let secs = |v: Option<f64>| v.map(|s| format!("{s:.2} s")).unwrap_or_else(|| "-".into());
    let mut s = match t.part.as_str() {
        "tcp-download" => {
            format!("  tun tcp: intact {}", t.tcp_intact.map_or("-", |i| if i { "yes" } else { "NO" }))
        }
        "udp-stream" => format!(
            "  tun udp: {} within {} of {} packets ({} missed, longest run {} = {} at {}, worst second {} \
             at {}; stream from {}), p50 {} p99 {}, wire +{} (repair {})",
            pct(t.udp_on_time_within_deadline),
            ms(t.udp_deadline_ms),
            t.udp_packets.unwrap_or(0),
            t.udp_missed.unwrap_or(0),
            t.udp_longest_miss_run.unwrap_or(0),
            ms(t.udp_longest_miss_ms),
            secs(t.udp_longest_miss_at_s),
            t.udp_misses_worst_1s.unwrap_or(0),
            secs(t.udp_misses_worst_1s_at_s),
            secs(t.udp_stream_start_s),
            ms(t.udp_p50_ms),
            ms(t.udp_p99_ms),
            pct(t.udp_wire_overhead),
            pct(t.udp_repair_overhead),
        ),
        _ => format!(
            "  tun ping: rtt p50 {} p99 {} ({}/{} answered)",
            ms(t.ping_rtt_p50_ms),
            ms(t.ping_rtt_p99_ms),
            t.ping_answered.unwrap_or(0),
            t.ping_sent.unwrap_or(0)
        ),
    };
    if let Some(td) = &t.teardown {
        s.push_str(&format!("; teardown {td}"));
    }
    s
}

/// Columns appended to the CSV for the workloads (empty for bulk rows).
pub const CSV_COLUMNS: &str = "workload,page,page_objects,page_bytes,loads,loads_ok,page_median_s,\
page_p90_s,page_times_s,frames,frames_received,frames_on_time,on_time_share,on_time_share_after_2s,frame_p50_ms,frame_p99_ms,\
frame_max_ms,probes,probes_unanswered,probe_p50_ms,probe_p99_ms,probe_max_ms,probe_p99_after_2s_ms,\
tun_part,tcp_intact,udp_on_time_within_deadline,udp_p50_ms,udp_p99_ms,udp_wire_overhead,\
udp_repair_overhead,udp_longest_miss_run,udp_longest_miss_ms,udp_misses_worst_1s,ping_rtt_p50_ms,\
ping_rtt_p99_ms,teardown";

/// A row's cells under [`CSV_COLUMNS`] (empty ones for the workloads it did not run).
pub fn csv_fields(r: &Row) -> Vec<String> {
    let o = |v: Option<f64>, d: usize| {
        v.filter(|x| x.is_finite()).map(|x| format!("{x:.d$}")).unwrap_or_default()
    };
    // A workload's cells, or as many empty ones for a row without it.
    fn cells<const N: usize>(values: Option<[String; N]>) -> [String; N] {
        values.unwrap_or_else(|| std::array::from_fn(|_| String::new()))
    }
    let web = cells(r.web.as_ref().map(|w| {
        [
            w.page.to_string(),
            w.objects.to_string(),
            w.page_bytes.to_string(),
            w.loads.to_string(),
            w.times_s.len().to_string(),
            o(w.median_s, 3),
            o(w.p90_s, 3),
            w.times_s.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(";"),
        ]
    }));
    let video = cells(r.video.as_ref().map(|v| {
        [
            v.frames.to_string(),
            v.received.to_string(),
            v.on_time.to_string(),
            format!("{:.5}", v.on_time_share),
            format!("{:.5}", v.on_time_share_after_2s),
            o(v.p50_ms, 1),
            o(v.p99_ms, 1),
            o(v.max_ms, 1),
        ]
    }));
    let probe = cells(r.probe.as_ref().map(|p| {
        let [p50, p99, max, p99_after_2s] =
            [p.p50_ms, p.p99_ms, p.max_ms, p.p99_after_2s_ms].map(|v| o(v, 1));
        [p.probes.to_string(), p.unanswered.to_string(), p50, p99, max, p99_after_2s]
    }));
    let tun = cells(r.tun.as_ref().map(|t| {
        [
            t.part.clone(),
            t.tcp_intact.map(|b| b.to_string()).unwrap_or_default(),
            o(t.udp_on_time_within_deadline, 5),
            o(t.udp_p50_ms, 2),
            o(t.udp_p99_ms, 2),
            o(t.udp_wire_overhead, 4),
            o(t.udp_repair_overhead, 4),
            t.udp_longest_miss_run.map(|n| n.to_string()).unwrap_or_default(),
            o(t.udp_longest_miss_ms, 1),
            t.udp_misses_worst_1s.map(|n| n.to_string()).unwrap_or_default(),
            o(t.ping_rtt_p50_ms, 2),
            o(t.ping_rtt_p99_ms, 2),
            // A list of what was left behind, `;`-separated like the other lists.
            t.teardown.clone().unwrap_or_default().replace([',', '"'], ";"),
        ]
    }));
    [r.workload.clone()].into_iter().chain(web).chain(video).chain(probe).chain(tun).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header, byte for byte as scripts/make-report.py and earlier result files know it.
    const HEADER: &str = "scenario,label,seed,contender,transfer_bytes,received_bytes,completion_s,elapsed_s,\
goodput_mbps,steady_mbps,ideal_mbps,ratio,path_fwd_tx_bytes,path_fwd_rx_bytes,tun_drops,ss_check,load,error,mix,flow,jain,\
workload,page,page_objects,page_bytes,loads,loads_ok,page_median_s,page_p90_s,page_times_s,frames,frames_received,\
frames_on_time,on_time_share,on_time_share_after_2s,frame_p50_ms,frame_p99_ms,frame_max_ms,probes,probes_unanswered,\
probe_p50_ms,probe_p99_ms,probe_max_ms,probe_p99_after_2s_ms,tun_part,tcp_intact,udp_on_time_within_deadline,\
udp_p50_ms,udp_p99_ms,udp_wire_overhead,udp_repair_overhead,udp_longest_miss_run,udp_longest_miss_ms,\
udp_misses_worst_1s,ping_rtt_p50_ms,ping_rtt_p99_ms,teardown";

    /// Cells with spaces, commas, quotes and a line break come back as they went in; numbers keep
    /// their precision; a row without a workload's metrics has empty cells there.
    #[test]
    fn csv_keeps_the_header_and_every_cell() {
        let row = Row {
            scenario: "dfec-table3".into(),
            label: "path.B1.loss=0.05 path.B2.rtt=25ms".into(),
            seed: 3,
            contender: "mptcp-bbr".into(),
            transfer_bytes: 1000,
            received_bytes: 900,
            completion_s: None,
            elapsed_s: 12.34567,
            goodput_mbps: 1.0 / 3.0,
            ideal_mbps: 29.0,
            ratio: 0.5,
            path_fwd_tx_bytes: vec![5, 6],
            path_fwd_rx_bytes: vec![4, 6],
            ss_check: "ok".into(),
            load: "0.52 0.58 0.59".into(),
            error: Some("connect 10.0.0.1:80: \"refused\", twice\nthen gave up".into()),
            mix: "cubic:1,bbr:1".into(),
            flow: 1,
            jain: Some(0.98765),
            workload: "bulk".into(),
            ..Row::default()
        };
        let path = std::env::temp_dir().join(format!("braid-testbed-report-{}.csv", std::process::id()));
        write_csv(&[row.clone(), row], &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text.lines().next(), Some(HEADER));
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        let columns: Vec<&str> = HEADER.split(',').collect();
        let cell = |name: &str| &records[1][columns.iter().position(|c| *c == name).unwrap()];
        assert_eq!(records[1].len(), columns.len());
        assert_eq!(cell("label"), "path.B1.loss=0.05 path.B2.rtt=25ms");
        assert_eq!(cell("error"), "connect 10.0.0.1:80: \"refused\", twice\nthen gave up");
        assert_eq!((cell("mix"), cell("load")), ("cubic:1,bbr:1", "0.52 0.58 0.59"));
        assert_eq!((cell("completion_s"), cell("elapsed_s"), cell("goodput_mbps")), ("", "12.346", "0.3333"));
        assert_eq!((cell("path_fwd_tx_bytes"), cell("jain")), ("5;6", "0.9877"));
        assert_eq!((cell("workload"), cell("page"), cell("probes"), cell("teardown")), ("bulk", "", "", ""));
    }
}
