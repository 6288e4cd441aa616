//! [`Scenario`] → TOML, in the file format `parse` reads, every direction written out in full so
//! the text parses back to an equal scenario.

use toml::{Table, Value};

use super::Scenario;
use braid_netem::link::{LinkChange, LinkConfig, QueueLimit};
use braid_netem::loss::LossModel;
use braid_netem::units::{format_duration, format_rate};

pub(super) fn to_toml(s: &Scenario) -> String {
    let mut root = Table::new();
    root.insert("name".into(), Value::String(s.name.clone()));
    for (key, text) in [("label", &s.label), ("description", &s.description), ("source", &s.source)] {
        if !text.is_empty() {
            root.insert(key.into(), Value::String(text.clone()));
        }
    }
    // TOML integers are i64; a seed above i64::MAX cannot be written and is clamped.
    root.insert("seed".into(), Value::Integer(i64::try_from(s.seed).unwrap_or(i64::MAX)));
    root.insert("mode".into(), Value::String(s.mode.clone()));
    root.insert("flows".into(), Value::Integer(s.flows as i64));
    if let Some(d) = s.duration {
        root.insert("duration".into(), Value::String(format_duration(d)));
    }
    if let Some(t) = s.transfer {
        root.insert("transfer".into(), Value::Integer(i64::try_from(t).unwrap_or(i64::MAX)));
    }
    root.insert("stagger".into(), Value::String(format_duration(s.stagger)));
    if let Some(w) = s.receive_window {
        root.insert("receive_window".into(), Value::Integer(i64::try_from(w).unwrap_or(i64::MAX)));
    }
    if let Some(v) = s.video {
        root.insert("video".into(), Value::String(format_rate(v)));
    }
    if let Some(d) = s.video_playout {
        root.insert("video_playout".into(), Value::String(format_duration(d)));
    }
    if let Some(n) = s.block_len {
        root.insert("block_len".into(), Value::Integer(n.into()));
    }
    for (key, count) in [("sato_limit", s.sato_limit), ("sato_interleave", s.sato_interleave)] {
        if let Some(n) = count {
            root.insert(key.into(), Value::Integer(i64::try_from(n).unwrap_or(i64::MAX)));
        }
    }
    if let Some(r) = s.sato_reduction {
        root.insert("sato_reduction".into(), Value::Float(r));
    }
    if !s.bottlenecks.is_empty() {
        let bottlenecks = s
            .bottlenecks
            .iter()
            .map(|b| {
                let mut t = Table::new();
                t.insert("name".into(), Value::String(b.name.clone()));
                t.insert("forward".into(), Value::Table(link(&b.forward)));
                t.insert("reverse".into(), Value::Table(link(&b.reverse)));
                Value::Table(t)
            })
            .collect();
        root.insert("bottleneck".into(), Value::Array(bottlenecks));
    }
    let paths = s
        .paths
        .iter()
        .map(|p| {
            let mut t = Table::new();
            t.insert("name".into(), Value::String(p.name.clone()));
            t.insert("shared".into(), Value::Boolean(p.shared));
            if let Some(via) = &p.via {
                t.insert("via".into(), Value::String(via.clone()));
            }
            if let Some((low, high)) = p.side_delay {
                let range = format!("{}..{}", format_duration(low), format_duration(high));
                t.insert("side_delay".into(), Value::String(range));
            }
            t.insert("forward".into(), Value::Table(link(&p.forward)));
            t.insert("reverse".into(), Value::Table(link(&p.reverse)));
            Value::Table(t)
        })
        .collect();
    root.insert("path".into(), Value::Array(paths));
    // A table of strings, numbers, booleans, arrays and tables always serializes.
    toml::to_string(&root).expect("scenario serializes to TOML")
}

fn link(c: &LinkConfig) -> Table {
    let mut t = Table::new();
    t.insert("rate".into(), Value::String(format_rate(c.rate_bps)));
    t.insert("delay".into(), Value::String(format_duration(c.delay)));
    t.insert("queue".into(), Value::String(queue(c.queue)));
    t.insert("loss".into(), loss(&c.loss));
    t.insert("jitter".into(), Value::String(format_duration(c.jitter)));
    t.insert("reorder".into(), Value::Boolean(c.jitter_reorders));
    t.insert("duplication".into(), Value::Float(c.duplication));
    if !c.outages.is_empty() {
        let windows = c
            .outages
            .iter()
            .map(|o| {
                Value::Array(vec![
                    Value::String(format_duration(o.start - braid_proto::Instant::ZERO)),
                    Value::String(format_duration(o.end - braid_proto::Instant::ZERO)),
                ])
            })
            .collect();
        t.insert("outages".into(), Value::Array(windows));
    }
    if let Some(mtu) = c.mtu {
        t.insert("mtu".into(), Value::Integer(mtu as i64));
    }
    if !c.changes.is_empty() {
        t.insert("change".into(), Value::Array(c.changes.iter().map(change).collect()));
    }
    t
}

fn change(c: &LinkChange) -> Value {
    let mut t = Table::new();
    t.insert("at".into(), Value::String(format_duration(c.at - braid_proto::Instant::ZERO)));
    if let Some(rate) = c.rate_bps {
        t.insert("rate".into(), Value::String(format_rate(rate)));
    }
    if let Some(delay) = c.delay {
        t.insert("delay".into(), Value::String(format_duration(delay)));
    }
    if let Some(l) = &c.loss {
        t.insert("loss".into(), loss(l));
    }
    if let Some(jitter) = c.jitter {
        t.insert("jitter".into(), Value::String(format_duration(jitter)));
    }
    if let Some(d) = c.duplication {
        t.insert("duplication".into(), Value::Float(d));
    }
    if let Some(mtu) = c.mtu {
        t.insert("mtu".into(), Value::Integer(mtu as i64));
    }
    Value::Table(t)
}

fn queue(q: QueueLimit) -> String {
    match q {
        QueueLimit::Bdp(x) => format!("{x}bdp"),
        QueueLimit::Packets(n) => format!("{n}packets"),
        QueueLimit::Bytes(b) => format!("{b}B"),
    }
}

fn loss(l: &LossModel) -> Value {
    match *l {
        LossModel::None => Value::String("none".into()),
        LossModel::Bernoulli { p } => Value::Float(p),
        LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
            let mut t = Table::new();
            t.insert("model".into(), Value::String("gilbert-elliott".into()));
            t.insert("p_good_to_bad".into(), Value::Float(p_good_to_bad));
            t.insert("p_bad_to_good".into(), Value::Float(p_bad_to_good));
            t.insert("loss_good".into(), Value::Float(loss_good));
            t.insert("loss_bad".into(), Value::Float(loss_bad));
            Value::Table(t)
        }
    }
}
