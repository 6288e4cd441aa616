//! One TOML value → a typed value of a scenario (a duration, a rate, a size, a queue, a loss
//! model, …), or a message saying what was expected; `parse.rs` adds the file, line, column
//! and key. The unit grammar itself is braid-netem's (`units`).

use std::time::Duration;

use toml::Value;

use braid_netem::link::QueueLimit;
use braid_netem::loss::LossModel;
use braid_netem::units::{parse_duration, parse_percent, parse_rate, parse_size};

/// A link MTU in bytes: 1280 (IPv6's minimum, braid's starting size) to 65535.
pub(super) fn as_mtu(v: &Value) -> Result<usize, String> {
    match as_u64(v)? {
        n @ 1280..=65_535 => Ok(n as usize),
        n => Err(format!("mtu = {n}: must be 1280 (IPv6's minimum) to 65535 bytes")),
    }
}

pub(super) fn expected(what: &str, got: &Value) -> String {
    format!("expected {what}, found {} `{got}`", got.type_str())
}

/// A count of at least one (Sato's l and g).
pub(super) fn as_count(v: &Value, what: &str) -> Result<usize, String> {
    match as_u64(v)? {
        0 => Err(format!("{what} must be at least 1")),
        n => usize::try_from(n).map_err(|_| format!("{what} is too large")),
    }
}

/// `"1ms..5ms"`: a delay range, low end first.
pub(super) fn as_delay_range(v: &Value) -> Result<(Duration, Duration), String> {
    let usage = || expected("a delay range such as \"1ms..5ms\"", v);
    let (low, high) = v.as_str().and_then(|s| s.split_once("..")).ok_or_else(usage)?;
    let parse = |s: &str| as_duration(&Value::String(s.trim().to_owned()));
    let (low, high) = (parse(low)?, parse(high)?);
    if low > high {
        return Err(format!("the range's low end ({low:?}) is above its high end ({high:?})"));
    }
    Ok((low, high))
}

pub(super) fn as_u64(v: &Value) -> Result<u64, String> {
    match v.as_integer() {
        Some(i) if i >= 0 => Ok(i as u64),
        _ => Err(expected("a non-negative integer", v)),
    }
}

pub(super) fn as_f64(v: &Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

pub(super) fn as_probability(v: &Value) -> Result<f64, String> {
    if let Value::String(s) = v {
        if s.trim_end().ends_with('%') {
            return parse_percent(s);
        }
    }
    match as_f64(v) {
        Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Some(p) => Err(format!("{p} is not a probability in [0, 1] (write 2% as 0.02)")),
        None => Err(expected("a probability", v)),
    }
}

pub(super) fn as_duration(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => parse_duration(s),
        Value::Integer(0) => Ok(Duration::ZERO),
        Value::Integer(_) | Value::Float(_) => {
            Err(format!("`{v}` needs a unit: write \"{v}ms\" or \"{v}s\""))
        }
        _ => Err(expected("a duration such as \"50ms\"", v)),
    }
}

pub(super) fn as_rate(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_rate(s),
        Value::Integer(_) | Value::Float(_) => {
            Err(format!("`{v}` needs a unit: write \"{v}bit/s\" or, e.g., \"20Mbit/s\""))
        }
        _ => Err(expected("a rate such as \"20Mbit/s\"", v)),
    }
}

pub(super) fn as_size(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_size(s),
        Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        _ => Err(expected("a size such as \"11MB\" or a byte count", v)),
    }
}

pub(super) fn as_queue(v: &Value) -> Result<QueueLimit, String> {
    let usage = "write \"1bdp\", \"300packets\" or a size such as \"64KB\"";
    let Value::String(s) = v else {
        return Err(format!("{}; {usage}", expected("a string", v)));
    };
    let s = s.trim();
    let number = |n: &str| n.trim().parse::<f64>().map_err(|_| format!("`{s}`: {usage}"));
    let limit = if let Some(n) = s.strip_suffix("bdp").or_else(|| s.strip_suffix("BDP")) {
        QueueLimit::Bdp(number(n)?)
    } else if let Some(n) = ["packets", "packet", "pkts"].iter().find_map(|suffix| s.strip_suffix(suffix)) {
        let n = number(n)?;
        if n.fract() != 0.0 {
            return Err(format!("`{s}`: a packet count must be a whole number"));
        }
        QueueLimit::Packets(n as u64)
    } else {
        QueueLimit::Bytes(parse_size(s).map_err(|e| format!("{e}; {usage}"))?)
    };
    match limit {
        QueueLimit::Bdp(x) if !(x > 0.0 && x.is_finite()) => {
            Err(format!("`{s}`: the queue must be positive"))
        }
        QueueLimit::Packets(0) | QueueLimit::Bytes(0) => Err(format!("`{s}`: the queue must be positive")),
        ok => Ok(ok),
    }
}

pub(super) fn as_loss(v: &Value) -> Result<LossModel, String> {
    match v {
        Value::String(s) if s == "none" => Ok(LossModel::None),
        Value::Table(t) => {
            let get = |name: &str, default: Option<f64>| match t.get(name) {
                Some(x) => as_probability(x).map_err(|e| format!("{name}: {e}")),
                None => default.ok_or_else(|| format!("missing `{name}`")),
            };
            let model = t.get("model").and_then(Value::as_str).unwrap_or("");
            let allowed: &[&str] = match model {
                "bernoulli" => &["model", "p"],
                "gilbert-elliott" => &["model", "p_good_to_bad", "p_bad_to_good", "loss_good", "loss_bad"],
                _ => return Err("a loss table needs model = \"bernoulli\" or \"gilbert-elliott\"".to_owned()),
            };
            if let Some(unknown) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(format!(
                    "unknown key `{unknown}` for model {model} (expected {})",
                    allowed[1..].join(", ")
                ));
            }
            if model == "bernoulli" {
                return Ok(LossModel::bernoulli(get("p", None)?));
            }
            Ok(LossModel::GilbertElliott {
                p_good_to_bad: get("p_good_to_bad", None)?,
                p_bad_to_good: get("p_bad_to_good", None)?,
                loss_good: get("loss_good", Some(0.0))?,
                loss_bad: get("loss_bad", Some(1.0))?,
            })
        }
        _ => as_probability(v)
            .map(LossModel::bernoulli)
            .map_err(|e| format!("{e}; or \"none\", or a table with model = \"gilbert-elliott\"")),
    }
}
