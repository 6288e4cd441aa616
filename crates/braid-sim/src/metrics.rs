//! Result recording for simulation runs: what endpoints and drivers report, summarized the way the
//! seed papers report it, and written as CSV or JSON.
//!
//! Definitions (each metric cites the paper it reproduces):
//! - Goodput: application bytes delivered in order, per bin of `bin` (100 ms by default), and the
//!   mean over the transfer (first `record_start` to completion, or to the last delivery).
//! - Block delivery delay (FMTCP §VI): from the transmission of a block's first symbol to the
//!   moment the block is decoded and ready for the application. FMTCP measures jitter "by the
//!   block" without a formula; `jitter` here is the standard deviation of the block delays, and
//!   `mean_delay_variation` the mean |d_i − d_{i−1}| over blocks in id order (RFC 3550's
//!   inter-arrival idea), reported alongside.
//! - Repair overhead (dFEC §IV): repair / (source + repair) symbols sent, i.e. m / (k + m).
//! - Redundancy ratio (FMTCP Eq. (7)): (source + repair) / source symbols sent.
//! - Effective recovery rate (Sato et al. §4): recovered packets / redundant packets sent.
//!
//! A [`Metrics`] is a plain value; endpoints built by a factory usually share one through a
//! [`MetricsHandle`] (`Rc<RefCell<Metrics>>`: the simulator is single-threaded).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Duration;

use braid_proto::Instant;
use serde::Serialize;

use crate::net::{Endpoint, NetStats, Network};
use braid_netem::link::LinkStats;

/// A [`Metrics`] shared by the endpoints of a run.
pub type MetricsHandle = Rc<RefCell<Metrics>>;

/// One decoded block: when its first symbol went out and when it was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DecodedBlock {
    pub block: u64,
    pub first_sent_us: u64,
    pub decoded_us: u64,
}

impl DecodedBlock {
    pub fn delay_us(&self) -> u64 {
        self.decoded_us.saturating_sub(self.first_sent_us)
    }
}

/// Counters of one link, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkRecord {
    pub name: String,
    #[serde(flatten)]
    pub stats: LinkStats,
}

/// Block delay statistics, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BlockStats {
    pub count: usize,
    pub mean_delay_ms: f64,
    pub min_delay_ms: f64,
    pub p50_delay_ms: f64,
    pub p95_delay_ms: f64,
    pub p99_delay_ms: f64,
    pub max_delay_ms: f64,
    /// Standard deviation of the block delays.
    pub jitter_ms: f64,
    /// Mean |d_i − d_{i−1}| over blocks in id order.
    pub mean_delay_variation_ms: f64,
}

/// Everything a run reports, ready for JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub delivered_bytes: u64,
    pub started_us: Option<u64>,
    pub completed_us: Option<u64>,
    /// Completion minus start, in seconds.
    pub completion_time_s: Option<f64>,
    /// Delivered bits over the transfer time (start to completion, or to the last delivery).
    pub mean_goodput_bps: Option<f64>,
    pub blocks: Option<BlockStats>,
    pub source_sent: u64,
    pub repair_sent: u64,
    pub recovered: u64,
    pub retransmitted: u64,
    pub repair_overhead: Option<f64>,
    pub redundancy_ratio: Option<f64>,
    pub effective_recovery_rate: Option<f64>,
    pub counters: BTreeMap<String, u64>,
    pub links: Vec<LinkRecord>,
    pub network: Option<NetStats>,
}

/// A recorder for one run (or one flow; merge or label as the driver likes).
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    bin: Duration,
    goodput_bins: Vec<u64>,
    delivered_bytes: u64,
    last_delivery: Option<Instant>,
    started: Option<Instant>,
    completed: Option<Instant>,
    blocks: Vec<DecodedBlock>,
    source_sent: u64,
    repair_sent: u64,
    recovered: u64,
    retransmitted: u64,
    counters: BTreeMap<String, u64>,
    links: Vec<LinkRecord>,
    network: Option<NetStats>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Goodput bins of 100 ms.
    pub fn new() -> Metrics {
        Metrics::with_bin(Duration::from_millis(100))
    }

    /// Goodput bins of `bin` (at least 1 µs).
    pub fn with_bin(bin: Duration) -> Metrics {
        Metrics {
            bin: bin.max(Duration::from_micros(1)),
            goodput_bins: Vec::new(),
            delivered_bytes: 0,
            last_delivery: None,
            started: None,
            completed: None,
            blocks: Vec::new(),
            source_sent: 0,
            repair_sent: 0,
            recovered: 0,
            retransmitted: 0,
            counters: BTreeMap::new(),
            links: Vec::new(),
            network: None,
        }
    }

    /// A fresh recorder behind a shared handle.
    pub fn shared() -> MetricsHandle {
        Rc::new(RefCell::new(Metrics::new()))
    }

    /// The transfer started (the first call wins).
    pub fn record_start(&mut self, now: Instant) {
        self.started.get_or_insert(now);
    }

    /// The transfer completed (the first call wins).
    pub fn record_completion(&mut self, now: Instant) {
        self.completed.get_or_insert(now);
    }

    /// `bytes` of application data were delivered in order at `now`.
    pub fn record_delivered(&mut self, now: Instant, bytes: u64) {
        let bin = (now.as_micros() / self.bin.as_micros() as u64) as usize;
        if self.goodput_bins.len() <= bin {
            self.goodput_bins.resize(bin + 1, 0);
        }
        self.goodput_bins[bin] += bytes;
        self.delivered_bytes += bytes;
        self.last_delivery = Some(now);
    }

    /// Block `block` had its first symbol sent at `first_sent` and was decoded at `decoded`
    /// (FMTCP's block delivery delay).
    pub fn record_block(&mut self, block: u64, first_sent: Instant, decoded: Instant) {
        self.blocks.push(DecodedBlock {
            block,
            first_sent_us: first_sent.as_micros(),
            decoded_us: decoded.as_micros(),
        });
    }

    /// Symbols sent: `source` systematic/original and `repair` redundant ones.
    pub fn record_sent(&mut self, source: u64, repair: u64) {
        self.source_sent += source;
        self.repair_sent += repair;
    }

    /// Lost packets recovered by decoding (without retransmission).
    pub fn record_recovered(&mut self, packets: u64) {
        self.recovered += packets;
    }

    /// Packets retransmitted.
    pub fn record_retransmitted(&mut self, packets: u64) {
        self.retransmitted += packets;
    }

    /// Add to a named counter (fast recoveries, timeouts, …).
    pub fn count(&mut self, name: &str, n: u64) {
        *self.counters.entry(name.to_owned()).or_insert(0) += n;
    }

    /// Copy the counters of every link and of the event loop of `net`.
    pub fn record_network<E: Endpoint>(&mut self, net: &Network<E>) {
        self.links = net
            .links()
            .map(|(_, name, link)| LinkRecord { name: name.to_owned(), stats: *link.stats() })
            .collect();
        self.network = Some(*net.stats());
    }

    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    pub fn completed(&self) -> Option<Instant> {
        self.completed
    }

    /// Completion minus start (start defaults to time zero).
    pub fn completion_time(&self) -> Option<Duration> {
        self.completed.map(|c| c - self.started.unwrap_or(Instant::ZERO))
    }

    /// (bin start, goodput in bit/s) for every bin from time zero to the last delivery.
    pub fn goodput_series(&self) -> Vec<(Instant, f64)> {
        let bin_us = self.bin.as_micros() as u64;
        let seconds = self.bin.as_secs_f64();
        self.goodput_bins
            .iter()
            .enumerate()
            .map(|(i, &bytes)| (Instant::from_micros(i as u64 * bin_us), bytes as f64 * 8.0 / seconds))
            .collect()
    }

    pub fn blocks(&self) -> &[DecodedBlock] {
        &self.blocks
    }

    /// Delay and jitter over the recorded blocks; `None` if there are none.
    pub fn block_stats(&self) -> Option<BlockStats> {
        if self.blocks.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let mut delays: Vec<u64> = self.blocks.iter().map(DecodedBlock::delay_us).collect();
        let n = delays.len();
        let mean = delays.iter().map(|&d| ms(d)).sum::<f64>() / n as f64;
        let variance = delays.iter().map(|&d| (ms(d) - mean).powi(2)).sum::<f64>() / n as f64;
        let mut by_id = self.blocks.clone();
        by_id.sort_by_key(|b| b.block);
        let variation = if n > 1 {
            by_id.windows(2).map(|w| ms(w[1].delay_us().abs_diff(w[0].delay_us()))).sum::<f64>()
                / (n - 1) as f64
        } else {
            0.0
        };
        delays.sort_unstable();
        // Nearest-rank percentile.
        let pct = |p: f64| ms(delays[((p * n as f64).ceil() as usize).clamp(1, n) - 1]);
        Some(BlockStats {
            count: n,
            mean_delay_ms: mean,
            min_delay_ms: ms(delays[0]),
            p50_delay_ms: pct(0.50),
            p95_delay_ms: pct(0.95),
            p99_delay_ms: pct(0.99),
            max_delay_ms: ms(delays[n - 1]),
            jitter_ms: variance.sqrt(),
            mean_delay_variation_ms: variation,
        })
    }

    /// repair / (source + repair) (dFEC's m / (k + m)).
    pub fn repair_overhead(&self) -> Option<f64> {
        let total = self.source_sent + self.repair_sent;
        (total > 0).then(|| self.repair_sent as f64 / total as f64)
    }

    /// (source + repair) / source (FMTCP Eq. (7)).
    pub fn redundancy_ratio(&self) -> Option<f64> {
        (self.source_sent > 0).then(|| (self.source_sent + self.repair_sent) as f64 / self.source_sent as f64)
    }

    /// recovered / repair sent (Sato et al.'s effective recovery rate).
    pub fn effective_recovery_rate(&self) -> Option<f64> {
        (self.repair_sent > 0).then(|| self.recovered as f64 / self.repair_sent as f64)
    }

    pub fn summary(&self) -> Summary {
        let started = self.started.unwrap_or(Instant::ZERO);
        let end = self.completed.or(self.last_delivery);
        let mean_goodput_bps = end.and_then(|end| {
            let seconds = (end - started).as_secs_f64();
            (seconds > 0.0).then(|| self.delivered_bytes as f64 * 8.0 / seconds)
        });
        Summary {
            delivered_bytes: self.delivered_bytes,
            started_us: self.started.map(Instant::as_micros),
            completed_us: self.completed.map(Instant::as_micros),
            completion_time_s: self.completion_time().map(|d| d.as_secs_f64()),
            mean_goodput_bps,
            blocks: self.block_stats(),
            source_sent: self.source_sent,
            repair_sent: self.repair_sent,
            recovered: self.recovered,
            retransmitted: self.retransmitted,
            repair_overhead: self.repair_overhead(),
            redundancy_ratio: self.redundancy_ratio(),
            effective_recovery_rate: self.effective_recovery_rate(),
            counters: self.counters.clone(),
            links: self.links.clone(),
            network: self.network,
        }
    }

    /// The summary, the goodput series and every block, as one JSON document.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Document<'a> {
            summary: Summary,
            goodput_bin_ms: f64,
            goodput_bps: Vec<f64>,
            blocks: &'a [DecodedBlock],
        }
        let doc = Document {
            summary: self.summary(),
            goodput_bin_ms: self.bin.as_secs_f64() * 1000.0,
            goodput_bps: self.goodput_series().into_iter().map(|(_, g)| g).collect(),
            blocks: &self.blocks,
        };
        // Serializing plain numbers, strings and maps with string keys cannot fail.
        serde_json::to_string_pretty(&doc).expect("metrics serialize to JSON")
    }

    /// `time_s,goodput_mbps` per bin.
    pub fn write_goodput_csv(&self, out: impl Write) -> io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["time_s", "goodput_mbps"])?;
        for (t, bps) in self.goodput_series() {
            w.write_record([format!("{:.3}", t.as_micros() as f64 / 1e6), format!("{:.6}", bps / 1e6)])?;
        }
        w.flush()
    }

    /// `block,first_sent_us,decoded_us,delay_ms` per block, in recording order.
    pub fn write_blocks_csv(&self, out: impl Write) -> io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(["block", "first_sent_us", "decoded_us", "delay_ms"])?;
        for b in &self.blocks {
            w.write_record([
                b.block.to_string(),
                b.first_sent_us.to_string(),
                b.decoded_us.to_string(),
                format!("{:.3}", b.delay_us() as f64 / 1000.0),
            ])?;
        }
        w.flush()
    }

    /// `name,sent,sent_bytes,delivered,delivered_bytes,dropped_queue,lost,lost_outage,duplicated,max_queue_bytes`
    /// per link recorded by [`record_network`](Self::record_network); a name with a comma or a
    /// quote is quoted.
    pub fn write_links_csv(&self, out: impl Write) -> io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "name",
            "sent",
            "sent_bytes",
            "delivered",
            "delivered_bytes",
            "dropped_queue",
            "lost",
            "lost_outage",
            "duplicated",
            "max_queue_bytes",
        ])?;
        for l in &self.links {
            let s = &l.stats;
            let counts = [
                s.sent,
                s.sent_bytes,
                s.delivered,
                s.delivered_bytes,
                s.dropped_queue,
                s.lost,
                s.lost_outage,
                s.duplicated,
                s.max_queue_bytes,
            ];
            w.write_record(std::iter::once(l.name.clone()).chain(counts.iter().map(u64::to_string)))?;
        }
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    #[test]
    fn goodput_bins_and_mean() {
        let mut m = Metrics::new();
        m.record_start(at_ms(0));
        m.record_delivered(at_ms(50), 125_000); // 1 Mbit in bin 0 → 10 Mbit/s
        m.record_delivered(at_ms(250), 250_000); // bin 2 → 20 Mbit/s
        m.record_completion(at_ms(300));
        let series = m.goodput_series();
        assert_eq!(series.len(), 3);
        assert_eq!(series[0], (at_ms(0), 10e6));
        assert_eq!(series[1], (at_ms(100), 0.0));
        assert_eq!(series[2], (at_ms(200), 20e6));
        assert_eq!(m.completion_time(), Some(Duration::from_millis(300)));
        let s = m.summary();
        assert_eq!(s.mean_goodput_bps, Some(375_000.0 * 8.0 / 0.3));
        let mut csv = Vec::new();
        m.write_goodput_csv(&mut csv).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "time_s,goodput_mbps\n0.000,10.000000\n0.100,0.000000\n0.200,20.000000\n"
        );
    }

    #[test]
    fn block_delay_and_jitter() {
        let mut m = Metrics::new();
        // Delays 100, 300, 200, 200 ms, recorded out of id order.
        m.record_block(1, at_ms(10), at_ms(310));
        m.record_block(0, at_ms(0), at_ms(100));
        m.record_block(2, at_ms(20), at_ms(220));
        m.record_block(3, at_ms(30), at_ms(230));
        let b = m.block_stats().unwrap();
        assert_eq!(b.count, 4);
        assert_eq!(b.mean_delay_ms, 200.0);
        assert_eq!(b.min_delay_ms, 100.0);
        assert_eq!(b.max_delay_ms, 300.0);
        assert_eq!(b.p50_delay_ms, 200.0);
        assert!((b.jitter_ms - 5000f64.sqrt()).abs() < 1e-9);
        // In id order: 100, 300, 200, 200 → |Δ| = 200, 100, 0.
        assert!((b.mean_delay_variation_ms - 100.0).abs() < 1e-9);
        let mut csv = Vec::new();
        m.write_blocks_csv(&mut csv).unwrap();
        assert!(String::from_utf8(csv).unwrap().contains("1,10000,310000,300.000"));
        assert_eq!(Metrics::new().block_stats(), None);
    }

    #[test]
    fn link_rows_quote_a_name_with_a_comma() {
        let mut m = Metrics::new();
        let stats = LinkStats { sent: 10, sent_bytes: 12_000, delivered: 9, lost: 1, ..LinkStats::default() };
        m.links.push(LinkRecord { name: "wifi,up".to_owned(), stats });
        m.links.push(LinkRecord { name: "lte".to_owned(), stats: LinkStats::default() });
        let mut csv = Vec::new();
        m.write_links_csv(&mut csv).unwrap();
        let text = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("name,sent,sent_bytes,"));
        assert_eq!(lines[1], "\"wifi,up\",10,12000,9,0,0,1,0,0,0");
        assert_eq!(lines[2], "lte,0,0,0,0,0,0,0,0,0");
    }

    #[test]
    fn overhead_and_recovery_rates() {
        let mut m = Metrics::new();
        assert_eq!(m.repair_overhead(), None);
        m.record_sent(90, 10);
        m.record_recovered(4);
        m.count("timeouts", 2);
        m.count("timeouts", 1);
        assert_eq!(m.repair_overhead(), Some(0.1));
        assert_eq!(m.redundancy_ratio(), Some(100.0 / 90.0));
        assert_eq!(m.effective_recovery_rate(), Some(0.4));
        let json: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(json["summary"]["counters"]["timeouts"], 3);
        assert_eq!(json["summary"]["effective_recovery_rate"], 0.4);
        assert_eq!(json["goodput_bin_ms"], 100.0);
    }
}
