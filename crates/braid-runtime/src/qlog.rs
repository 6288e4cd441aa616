//! qlog: one file per connection (`ClientConfig::qlog` / `ServerConfig::qlog`, `braid --qlog
//! DIR`), in the JSON-SEQ serialization of the qlog main schema 0.3
//! (draft-ietf-quic-qlog-main-schema-05; RFC 7464: each record is an ASCII record separator,
//! a JSON text and a line feed), with the QUIC event names of draft-ietf-quic-qlog-quic-events-03
//! where braid has the same thing, so qvis (qvis.quictools.info) reads it: packets sent,
//! received and lost, `recovery:metrics_updated` (congestion window, bytes in flight, RTTs,
//! pacing rate) and the connection's state. Braid's own additions carry a `path_id` (the
//! multipath qlog draft's field) on every packet and metrics event, a `braid:` category for
//! repair (`braid:repair_sent`, `braid:symbols_recovered`) and `connectivity:path_updated` for
//! a path's state and addresses. Frame types qlog does not know are named as braid's wire
//! format names them (`symbol`, `block_ack`, `symbol_part`, ...).
//!
//! The core records the packet-level events as plain data ([`braid_proto::trace`]); this
//! module only writes them out, through a buffer, from the driver task.

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use braid_proto::trace::{LossTrigger, TraceEvent, TraceFrame, TracePacket};
use braid_proto::wire::{ConnectionId, PacketType};
use braid_proto::{CloseReason, Event, Instant};
use serde_json::{json, Value};

use crate::shared::PathReport;

/// ASCII RS: starts every JSON-SEQ record (RFC 7464 §2.2).
pub const RECORD_SEPARATOR: u8 = 0x1e;

/// The file a connection's qlog goes to: `DIR/<connection id>_<client|server>.sqlog`.
pub fn file_name(dir: &Path, cid: ConnectionId, server: bool) -> PathBuf {
    let id: String = cid.0.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{id}_{}.sqlog", if server { "server" } else { "client" }))
}

/// Bytes of whole records held before they are written.
const BUFFER: usize = 64 << 10;

/// One connection's qlog file. Records are written whole (the file never ends in half a
/// record while the connection lives): when [`BUFFER`] bytes wait, when a second passed since
/// the last write, and when the connection ends.
pub(crate) struct QlogWriter {
    file: File,
    buf: Vec<u8>,
    last_write: Instant,
    /// The core's clock at the connection's start: event times are milliseconds since it.
    start: Instant,
    /// A write failed: stop (said once).
    broken: bool,
}

fn packet_type(ty: PacketType) -> &'static str {
    match ty {
        PacketType::Initial => "initial",
        PacketType::Accept => "handshake",
        PacketType::Data => "1RTT",
    }
}

/// A packet event's data (`packet_sent` and `packet_received` alike).
fn packet(p: &TracePacket) -> Value {
    let frames: Vec<Value> = p.frames.iter().map(frame).collect();
    json!({
        "path_id": p.path,
        "header": {"packet_type": packet_type(p.ty), "packet_number": p.number},
        "raw": {"length": p.size},
        "frames": frames,
    })
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn frame(f: &TraceFrame) -> Value {
    match f {
        TraceFrame::Padding { length } => json!({"frame_type": "padding", "payload_length": length}),
        TraceFrame::Ping => json!({"frame_type": "ping"}),
        TraceFrame::Ack { path, ack_delay, ranges } => {
            // qlog lists acknowledged ranges lowest first, as [first, last] (or [n] alone).
            let ranges: Vec<Value> = ranges
                .iter()
                .rev()
                .map(|&(lo, hi)| if lo == hi { json!([lo]) } else { json!([lo, hi]) })
                .collect();
            json!({"frame_type": "ack", "path_id": path, "ack_delay": ms(*ack_delay), "acked_ranges": ranges})
        }
        TraceFrame::BlockAck { lowest_undecoded, dofs } => {
            json!({"frame_type": "block_ack", "lowest_undecoded": lowest_undecoded, "dofs": dofs})
        }
        TraceFrame::Symbol { block, index, repair, length } => {
            json!({"frame_type": "symbol", "block": block, "index": index, "repair": repair, "length": length})
        }
        TraceFrame::SymbolPart { id, offset, length, total } => {
            json!({"frame_type": "symbol_part", "id": id, "offset": offset, "length": length, "total": total})
        }
        TraceFrame::FecStatus { path, recovered } => {
            json!({"frame_type": "fec_status", "path_id": path, "recovered": recovered})
        }
        TraceFrame::MaxData(max) => json!({"frame_type": "max_data", "maximum": max}),
        TraceFrame::MaxStreamData { stream, max } => {
            json!({"frame_type": "max_stream_data", "stream_id": stream, "maximum": max})
        }
        TraceFrame::Close { code, reason } => json!({
            "frame_type": "connection_close", "error_space": "application",
            "raw_error_code": code, "reason": reason
        }),
        TraceFrame::Handshake => json!({"frame_type": "crypto"}),
        TraceFrame::PathAbandon(p) => json!({"frame_type": "path_abandon", "path_id": p}),
        TraceFrame::Datagram { block, index, length } => {
            json!({"frame_type": "datagram", "block": block, "index": index, "length": length})
        }
        TraceFrame::DatagramRepair { block, span, length } => {
            json!({"frame_type": "datagram_repair", "block": block, "span": span, "length": length})
        }
    }
}

impl QlogWriter {
    /// A connection's qlog file in `dir`, with its start and its paths; `None` (said once in
    /// the log) if the file cannot be made.
    pub(crate) fn open(
        dir: &Path,
        cid: ConnectionId,
        server: bool,
        now: Instant,
        paths: &[PathReport],
    ) -> Option<QlogWriter> {
        match QlogWriter::create(dir, cid, server, now) {
            Ok(mut q) => {
                q.started(now, paths.first().and_then(|p| p.local), paths.first().and_then(|p| p.remote));
                for p in paths {
                    q.path(now, p.id, "active", p.local, p.remote);
                }
                Some(q)
            }
            Err(e) => {
                tracing::warn!("qlog: cannot create {}: {e}", file_name(dir, cid, server).display());
                None
            }
        }
    }

    /// Writes out what the core traced since the last call.
    pub(crate) fn drain(&mut self, core: &mut braid_proto::Connection) {
        while let Some(t) = core.poll_trace() {
            self.trace(t);
        }
    }

    /// The core's events a qlog shows: the connection's state and its paths'.
    pub(crate) fn core_event(&mut self, now: Instant, ev: &Event, paths: &[PathReport]) {
        let addrs = |p: u8| paths.get(usize::from(p)).map_or((None, None), |r| (r.local, r.remote));
        let path_state = match ev {
            Event::Connected => return self.state(now, "handshake_complete"),
            Event::PathFailed(p) => (*p, "failed"),
            Event::PathRecovered(p) => (*p, "recovered"),
            Event::PathRemoved(p) => (*p, "removed"),
            Event::Closed(reason) => {
                let (owner, trigger, why) = match reason {
                    CloseReason::Local { code } => ("local", "application", format!("code {code}")),
                    CloseReason::Peer { code, reason } => {
                        ("remote", "application", format!("code {code}: {reason}"))
                    }
                    CloseReason::Violation(v) => ("local", "error", v.clone()),
                    CloseReason::IdleTimeout => ("local", "idle_timeout", String::new()),
                };
                return self.closed(now, owner, trigger, &why);
            }
            Event::Stream(_) => return,
        };
        let (local, remote) = addrs(path_state.0);
        self.path(now, path_state.0, path_state.1, local, remote);
    }

    /// Creates `dir`'s file for `cid` and writes the header record. `start`: the core's clock now.
    pub fn create(
        dir: &Path,
        cid: ConnectionId,
        server: bool,
        start: Instant,
    ) -> std::io::Result<QlogWriter> {
        let path = file_name(dir, cid, server);
        let file = File::create(&path)?;
        let mut w =
            QlogWriter { file, buf: Vec::with_capacity(BUFFER), last_write: start, start, broken: false };
        let id: String = cid.0.iter().map(|b| format!("{b:02x}")).collect();
        let reference_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3;
        let header = json!({
            "qlog_version": "0.3",
            "qlog_format": "JSON-SEQ",
            "title": format!("braid connection {id}"),
            "trace": {
                "title": format!("braid {} {id}", if server { "server" } else { "client" }),
                "vantage_point": {"name": "braid", "type": if server { "server" } else { "client" }},
                "common_fields": {
                    "ODCID": id,
                    "group_id": id,
                    "protocol_type": ["QUIC"],
                    "time_format": "relative",
                    "reference_time": reference_ms,
                },
            },
        });
        w.record(&header)?;
        Ok(w)
    }

    fn record(&mut self, v: &Value) -> std::io::Result<()> {
        self.buf.push(RECORD_SEPARATOR);
        serde_json::to_writer(&mut self.buf, v)?;
        self.buf.push(b'\n');
        Ok(())
    }

    fn write_out(&mut self) -> std::io::Result<()> {
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r
    }

    /// Writes one event at core time `at`.
    pub fn event(&mut self, at: Instant, name: &str, data: Value) {
        if self.broken {
            return;
        }
        let time = ms(at.saturating_duration_since(self.start));
        let mut r = self.record(&json!({"time": time, "name": name, "data": data}));
        if r.is_ok()
            && (self.buf.len() >= BUFFER || at >= self.last_write + std::time::Duration::from_secs(1))
        {
            self.last_write = at;
            r = self.write_out();
        }
        if let Err(e) = r {
            tracing::warn!("qlog: {e}; this connection's qlog stops here");
            self.broken = true;
        }
    }

    /// Writes one of the core's trace events.
    pub fn trace(&mut self, e: TraceEvent) {
        match e {
            TraceEvent::PacketSent(p) => {
                let (at, path, number) = (p.at, p.path, p.number);
                for f in &p.frames {
                    if let TraceFrame::Symbol { block, index, repair: true, length } = f {
                        self.event(
                            at,
                            "braid:repair_sent",
                            json!({"path_id": path, "block": block, "index": index, "length": length, "packet_number": number}),
                        );
                    }
                }
                self.event(at, "transport:packet_sent", packet(&p));
            }
            TraceEvent::PacketReceived(p) => self.event(p.at, "transport:packet_received", packet(&p)),
            TraceEvent::PacketLost { at, path, number, size, trigger } => {
                let trigger = match trigger {
                    LossTrigger::Ack => "reordering_threshold",
                    LossTrigger::Timer => "time_threshold",
                    LossTrigger::ProbeTimeout => "pto_expired",
                };
                self.event(
                    at,
                    "recovery:packet_lost",
                    json!({
                        "path_id": path,
                        "header": {"packet_type": "1RTT", "packet_number": number},
                        "raw": {"length": size},
                        "trigger": trigger,
                    }),
                );
            }
            TraceEvent::Metrics { at, path, metrics: m } => self.event(
                at,
                "recovery:metrics_updated",
                json!({
                    "path_id": path,
                    "congestion_window": m.cwnd,
                    "bytes_in_flight": m.bytes_in_flight,
                    "smoothed_rtt": ms(m.smoothed_rtt),
                    "min_rtt": ms(m.min_rtt),
                    "latest_rtt": ms(m.latest_rtt),
                    "rtt_variance": ms(m.rtt_variance),
                    // qlog's pacing rate is in bits per second.
                    "pacing_rate": m.pacing_rate.saturating_mul(8),
                    "loss_estimate": m.loss,
                }),
            ),
            TraceEvent::Recovered { at, symbols } => {
                self.event(at, "braid:symbols_recovered", json!({"count": symbols}))
            }
        }
    }

    /// `connectivity:connection_started` (the first path's addresses).
    pub fn started(&mut self, at: Instant, local: Option<SocketAddr>, remote: Option<SocketAddr>) {
        let mut data = serde_json::Map::new();
        if let Some(l) = local {
            data.insert("src_ip".into(), json!(l.ip().to_string()));
            data.insert("src_port".into(), json!(l.port()));
            data.insert("ip_version".into(), json!(if l.is_ipv4() { "ipv4" } else { "ipv6" }));
        }
        if let Some(r) = remote {
            data.insert("dst_ip".into(), json!(r.ip().to_string()));
            data.insert("dst_port".into(), json!(r.port()));
        }
        self.event(at, "connectivity:connection_started", Value::Object(data));
    }

    /// `connectivity:path_updated`: a path's state (`active`, `failed`, `recovered`,
    /// `removed`, `moved`) and its addresses as this end knows them.
    pub fn path(
        &mut self,
        at: Instant,
        path: u8,
        state: &str,
        local: Option<SocketAddr>,
        remote: Option<SocketAddr>,
    ) {
        self.event(
            at,
            "connectivity:path_updated",
            json!({
                "path_id": path,
                "state": state,
                "local": local.map(|a| a.to_string()),
                "remote": remote.map(|a| a.to_string()),
            }),
        );
    }

    /// `connectivity:connection_state_updated`.
    pub fn state(&mut self, at: Instant, new: &str) {
        self.event(at, "connectivity:connection_state_updated", json!({"new": new}));
    }

    /// `connectivity:connection_closed`, then the file is flushed.
    pub fn closed(&mut self, at: Instant, owner: &str, trigger: &str, reason: &str) {
        self.event(
            at,
            "connectivity:connection_closed",
            json!({"owner": owner, "trigger": trigger, "reason": reason}),
        );
        self.flush();
    }

    pub fn flush(&mut self) {
        if !self.broken && self.write_out().is_err() {
            self.broken = true;
        }
    }
}

impl Drop for QlogWriter {
    fn drop(&mut self) {
        self.flush();
    }
}
