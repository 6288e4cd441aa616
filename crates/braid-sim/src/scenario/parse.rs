//! Scenario files → [`Scenario`]s: serde checks the structure (unknown keys, wrong table shapes)
//! with the TOML parser's spans; every value is then interpreted here with its span, so each error
//! names `file:line:column` and the key. Sweeps are expanded by interpreting the file once per
//! point of the cartesian product of its arrays.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use braid_proto::Instant;
use serde::Deserialize;
use toml::{Spanned, Value};

use super::values::{
    as_count, as_delay_range, as_duration, as_f64, as_loss, as_mtu, as_probability, as_queue, as_rate,
    as_size, as_u64, expected,
};
use super::{PathSpec, Scenario, ScenarioError, MAX_SWEEP_RUNS};
use braid_netem::link::{LinkChange, LinkConfig, Outage};

type Field = Option<Spanned<Value>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    label: Option<String>,
    description: Option<String>,
    source: Option<String>,
    seed: Field,
    mode: Field,
    flows: Field,
    duration: Field,
    transfer: Field,
    stagger: Field,
    receive_window: Field,
    video: Field,
    video_playout: Field,
    block_len: Field,
    sato_limit: Field,
    sato_reduction: Field,
    sato_interleave: Field,
    #[serde(default)]
    bottleneck: Vec<RawBottleneck>,
    #[serde(default)]
    path: Vec<RawPath>,
}

/// The link keys, shared by `[[path]]` (both directions) and `[path.forward]`/`[path.reverse]`.
macro_rules! link_table {
    ($name:ident { $($extra:tt)* }) => {
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            rate: Field,
            delay: Field,
            rtt: Field,
            queue: Field,
            loss: Field,
            jitter: Field,
            reorder: Field,
            duplication: Field,
            outages: Field,
            mtu: Field,
            change: Option<Vec<RawChange>>,
            $($extra)*
        }

        impl $name {
            fn keys(&self) -> LinkKeys<'_> {
                LinkKeys {
                    rate: self.rate.as_ref(),
                    delay: self.delay.as_ref(),
                    rtt: self.rtt.as_ref(),
                    queue: self.queue.as_ref(),
                    loss: self.loss.as_ref(),
                    jitter: self.jitter.as_ref(),
                    reorder: self.reorder.as_ref(),
                    duplication: self.duplication.as_ref(),
                    outages: self.outages.as_ref(),
                    mtu: self.mtu.as_ref(),
                    change: self.change.as_deref(),
                }
            }
        }
    };
}

link_table!(RawLink {});
link_table!(RawPath {
    name: Option<String>,
    shared: Option<bool>,
    via: Option<Spanned<String>>,
    side_delay: Field,
    forward: Option<RawLink>,
    reverse: Option<RawLink>,
});
link_table!(RawBottleneck {
    name: Option<Spanned<String>>,
    forward: Option<RawLink>,
    reverse: Option<RawLink>,
});

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    at: Spanned<Value>,
    rate: Field,
    delay: Field,
    rtt: Field,
    loss: Field,
    jitter: Field,
    duplication: Field,
    mtu: Field,
}

#[derive(Clone, Copy, Default)]
struct LinkKeys<'a> {
    rate: Option<&'a Spanned<Value>>,
    delay: Option<&'a Spanned<Value>>,
    rtt: Option<&'a Spanned<Value>>,
    queue: Option<&'a Spanned<Value>>,
    loss: Option<&'a Spanned<Value>>,
    jitter: Option<&'a Spanned<Value>>,
    reorder: Option<&'a Spanned<Value>>,
    duplication: Option<&'a Spanned<Value>>,
    outages: Option<&'a Spanned<Value>>,
    mtu: Option<&'a Spanned<Value>>,
    change: Option<&'a [RawChange]>,
}

impl<'a> LinkKeys<'a> {
    /// `self` (a direction's table) over `path` (the path's keys). Giving `delay` or `rtt` in the
    /// direction overrides both of the path's.
    fn over(self, path: LinkKeys<'a>) -> LinkKeys<'a> {
        let own_delay = self.delay.is_some() || self.rtt.is_some();
        LinkKeys {
            rate: self.rate.or(path.rate),
            delay: if own_delay { self.delay } else { path.delay },
            rtt: if own_delay { self.rtt } else { path.rtt },
            queue: self.queue.or(path.queue),
            loss: self.loss.or(path.loss),
            jitter: self.jitter.or(path.jitter),
            reorder: self.reorder.or(path.reorder),
            duplication: self.duplication.or(path.duplication),
            outages: self.outages.or(path.outages),
            mtu: self.mtu.or(path.mtu),
            change: self.change.or(path.change),
        }
    }
}

/// Where the parse stands: the text (for line numbers), the file name, and the sweep.
struct Context<'t> {
    text: &'t str,
    file: &'t str,
    sweep: Sweep,
}

/// The sweep dimensions, keyed by the span of their array so that a path-level array used by
/// both directions is one dimension, not two.
#[derive(Default)]
struct Sweep {
    collecting: bool,
    dims: Vec<Dim>,
    by_span: HashMap<usize, usize>,
    choice: Vec<usize>,
}

struct Dim {
    key: String,
    values: Vec<Value>,
}

impl Context<'_> {
    fn error(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        let (line, column) = line_column(self.text, span.start);
        ScenarioError::Invalid { file: self.file.to_owned(), line, column, message: message.into() }
    }

    /// The value of a sweepable key at the current sweep point, and the key to name in errors.
    fn pick<'v>(
        &mut self,
        key: &str,
        field: &'v Spanned<Value>,
    ) -> Result<(&'v Value, String), ScenarioError> {
        let Value::Array(items) = field.get_ref() else {
            return Ok((field.get_ref(), key.to_owned()));
        };
        if items.is_empty() {
            return Err(self.error(field.span(), format!("{key}: an empty array sweeps over nothing")));
        }
        let start = field.span().start;
        let dim = match self.sweep.by_span.get(&start) {
            Some(&dim) => dim,
            None => {
                self.sweep.dims.push(Dim { key: key.to_owned(), values: items.clone() });
                self.sweep.by_span.insert(start, self.sweep.dims.len() - 1);
                self.sweep.dims.len() - 1
            }
        };
        let index = if self.sweep.collecting { 0 } else { self.sweep.choice[dim] };
        Ok((&items[index], format!("{key}[{index}]")))
    }

    /// Interpret a sweepable key with `interpret`, turning its complaint into a located error.
    fn value<T>(
        &mut self,
        key: &str,
        field: &Spanned<Value>,
        interpret: impl FnOnce(&Value) -> Result<T, String>,
    ) -> Result<T, ScenarioError> {
        let (value, name) = self.pick(key, field)?;
        interpret(value).map_err(|e| self.error(field.span(), format!("{name}: {e}")))
    }

    /// Interpret a key that may not be swept (inside `change`, `outages`).
    fn fixed<T>(
        &self,
        key: &str,
        field: &Spanned<Value>,
        interpret: impl FnOnce(&Value) -> Result<T, String>,
    ) -> Result<T, ScenarioError> {
        if field.get_ref().is_array() {
            return Err(self.error(field.span(), format!("{key}: sweeps (arrays) are not allowed here")));
        }
        interpret(field.get_ref()).map_err(|e| self.error(field.span(), format!("{key}: {e}")))
    }
}

/// 1-based line and column (in characters) of byte offset `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

pub(super) fn parse(text: &str, file: &str) -> Result<Vec<Scenario>, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_column(text, s.start));
        ScenarioError::Invalid { file: file.to_owned(), line, column, message: e.message().trim().to_owned() }
    })?;
    let default_name =
        Path::new(file).file_stem().map_or_else(|| file.to_owned(), |s| s.to_string_lossy().into_owned());
    let mut cx = Context { text, file, sweep: Sweep { collecting: true, ..Sweep::default() } };

    // First pass: find the sweep dimensions (and check the first point).
    let first = scenario(&mut cx, &raw, &default_name)?;
    if cx.sweep.dims.is_empty() {
        return Ok(vec![first]);
    }
    let runs = cx.sweep.dims.iter().try_fold(1usize, |n, d| n.checked_mul(d.values.len()));
    if runs.is_none_or(|n| n > MAX_SWEEP_RUNS) {
        let sizes: Vec<String> =
            cx.sweep.dims.iter().map(|d| format!("{} ({})", d.key, d.values.len())).collect();
        return Err(ScenarioError::Invalid {
            file: file.to_owned(),
            line: 1,
            column: 1,
            message: format!("the sweep {} has more than {MAX_SWEEP_RUNS} runs", sizes.join(" × ")),
        });
    }
    cx.sweep.collecting = false;
    cx.sweep.choice = vec![0; cx.sweep.dims.len()];
    let mut out = Vec::with_capacity(runs.unwrap_or(0));
    loop {
        let mut run = scenario(&mut cx, &raw, &default_name)?;
        let label: Vec<String> = cx
            .sweep
            .dims
            .iter()
            .zip(&cx.sweep.choice)
            .map(|(d, &i)| format!("{}={}", d.key, render(&d.values[i])))
            .collect();
        let label = label.join(" ");
        run.label = if run.label.is_empty() { label } else { format!("{} {label}", run.label) };
        out.push(run);
        // Odometer over the dimensions, the last one fastest, so runs follow file order.
        let mut dim = cx.sweep.dims.len();
        loop {
            if dim == 0 {
                return Ok(out);
            }
            dim -= 1;
            cx.sweep.choice[dim] += 1;
            if cx.sweep.choice[dim] < cx.sweep.dims[dim].values.len() {
                break;
            }
            cx.sweep.choice[dim] = 0;
        }
    }
}

/// A sweep value as it appears in a label: strings without quotes, numbers as written.
fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Table(t) => {
            let fields: Vec<String> = t.iter().map(|(k, v)| format!("{k}:{}", render(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        other => other.to_string(),
    }
}

fn scenario(cx: &mut Context<'_>, raw: &RawScenario, default_name: &str) -> Result<Scenario, ScenarioError> {
    let seed = match &raw.seed {
        Some(f) => cx.value("seed", f, as_u64)?,
        None => 0,
    };
    let mode = match &raw.mode {
        Some(f) => {
            cx.value("mode", f, |v| v.as_str().map(str::to_owned).ok_or_else(|| expected("a string", v)))?
        }
        None => "default".to_owned(),
    };
    let flows = match &raw.flows {
        Some(f) => cx.value("flows", f, |v| match as_u64(v)? {
            0 => Err("there must be at least one flow".to_owned()),
            n => usize::try_from(n).map_err(|_| "too many flows".to_owned()),
        })?,
        None => 1,
    };
    let duration = raw.duration.as_ref().map(|f| cx.value("duration", f, as_duration)).transpose()?;
    let transfer = raw.transfer.as_ref().map(|f| cx.value("transfer", f, as_size)).transpose()?;
    let stagger = match &raw.stagger {
        Some(f) => cx.value("stagger", f, as_duration)?,
        None => Duration::ZERO,
    };
    if duration.is_none() && transfer.is_none() {
        return Err(cx.error(0..0, "set `duration` (run length) or `transfer` (bytes per flow), or both"));
    }
    if duration == Some(Duration::ZERO) {
        let span = raw.duration.as_ref().map_or(0..0, |f| f.span());
        return Err(cx.error(span, "duration: must be longer than zero"));
    }
    let receive_window = raw
        .receive_window
        .as_ref()
        .map(|f| {
            cx.value("receive_window", f, |v| match as_size(v)? {
                0 => Err("the receive window must hold at least one byte".to_owned()),
                n => Ok(n),
            })
        })
        .transpose()?;
    let block_len = raw
        .block_len
        .as_ref()
        .map(|f| {
            cx.value("block_len", f, |v| match as_u64(v)? {
                n @ 1..=65535 => Ok(n as u16),
                _ => Err("a block holds 1 to 65535 symbols".to_owned()),
            })
        })
        .transpose()?;
    // Sato et al.'s l, r, g (§3.1, §3.3, §3.4), for the `sato` mode's parameter sweeps.
    let sato_limit = raw
        .sato_limit
        .as_ref()
        // Table 1's l = 0: no limit (§4).
        .map(|f| {
            cx.value("sato_limit", f, |v| {
                as_u64(v).and_then(|n| {
                    usize::try_from(n).map_err(|_| "the group size limit l is too large".to_owned())
                })
            })
        })
        .transpose()?;
    let sato_reduction = raw
        .sato_reduction
        .as_ref()
        .map(|f| {
            cx.value("sato_reduction", f, |v| match as_f64(v) {
                Some(r) if r > 0.0 && r <= 1.0 => Ok(r),
                _ => Err(expected("a reduction factor r in (0, 1]", v)),
            })
        })
        .transpose()?;
    let sato_interleave = raw
        .sato_interleave
        .as_ref()
        .map(|f| cx.value("sato_interleave", f, |v| as_count(v, "the number of groups g")))
        .transpose()?;
    let video = raw
        .video
        .as_ref()
        .map(|f| {
            cx.value("video", f, |v| match as_rate(v)? {
                0 => Err("a video stream needs a bitrate above zero".to_owned()),
                n => Ok(n),
            })
        })
        .transpose()?;
    let video_playout =
        raw.video_playout.as_ref().map(|f| cx.value("video_playout", f, as_duration)).transpose()?;
    if video_playout.is_some() && video.is_none() {
        let span = raw.video_playout.as_ref().map_or(0..0, |f| f.span());
        return Err(cx.error(span, "video_playout: only a `video` workload has frames to judge"));
    }
    if video.is_some() && duration.is_none() {
        return Err(cx.error(0..0, "a `video` workload runs for a `duration`: set one"));
    }
    if raw.path.is_empty() {
        return Err(cx.error(0..0, "no [[path]] given: a scenario needs at least one path"));
    }
    let mut bottlenecks: Vec<PathSpec> = Vec::with_capacity(raw.bottleneck.len());
    for (i, b) in raw.bottleneck.iter().enumerate() {
        let Some(spanned) = &b.name else {
            let span = b.rate.as_ref().map_or(0..0, |f| f.span());
            return Err(cx.error(span, format!("bottleneck[{i}]: no `name` given (paths name it in `via`)")));
        };
        let name = spanned.get_ref().clone();
        if bottlenecks.iter().any(|o| o.name == name) {
            return Err(cx.error(spanned.span(), format!("bottleneck `{name}` is defined twice")));
        }
        let prefix = format!("bottleneck.{name}");
        let both = b.keys();
        let forward = link(cx, &prefix, "forward", direction_keys(&b.forward), both)?;
        let reverse = link(cx, &prefix, "reverse", direction_keys(&b.reverse), both)?;
        bottlenecks.push(PathSpec { name, shared: true, via: None, forward, reverse, side_delay: None });
    }
    let mut paths = Vec::with_capacity(raw.path.len());
    for (i, p) in raw.path.iter().enumerate() {
        let name = p.name.clone().unwrap_or_else(|| format!("p{i}"));
        let prefix = format!("path.{name}");
        let via = match &p.via {
            Some(v) if bottlenecks.iter().any(|b| b.name == *v.get_ref()) => Some(v.get_ref().clone()),
            Some(v) => {
                let known: Vec<&str> = bottlenecks.iter().map(|b| b.name.as_str()).collect();
                return Err(cx.error(
                    v.span(),
                    format!(
                        "{prefix}.via: no [[bottleneck]] named `{}` (defined: {})",
                        v.get_ref(),
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ),
                ));
            }
            None => None,
        };
        let both = p.keys();
        let forward = link(cx, &prefix, "forward", direction_keys(&p.forward), both)?;
        let reverse = link(cx, &prefix, "reverse", direction_keys(&p.reverse), both)?;
        let shared = p.shared.unwrap_or(false);
        let side_delay = match &p.side_delay {
            Some(f) if shared => {
                return Err(
                    cx.error(f.span(), format!("{prefix}.side_delay: a shared path has no per-flow link"))
                )
            }
            Some(f) => Some(cx.fixed(&format!("{prefix}.side_delay"), f, as_delay_range)?),
            None => None,
        };
        paths.push(PathSpec { name, shared, via, forward, reverse, side_delay });
    }
    Ok(Scenario {
        name: raw.name.clone().unwrap_or_else(|| default_name.to_owned()),
        label: raw.label.clone().unwrap_or_default(),
        description: raw.description.clone().unwrap_or_default(),
        source: raw.source.clone().unwrap_or_default(),
        seed,
        mode,
        flows,
        duration,
        transfer,
        stagger,
        receive_window,
        video,
        video_playout,
        block_len,
        sato_limit,
        sato_reduction,
        sato_interleave,
        bottlenecks,
        paths,
    })
}

fn direction_keys(table: &Option<RawLink>) -> LinkKeys<'_> {
    table.as_ref().map_or(LinkKeys::default(), RawLink::keys)
}

/// The link of one direction: `own` are the keys of its `[path.forward]`/`[path.reverse]` table,
/// `both` those of the path. Errors and sweep labels name the table a value came from.
fn link(
    cx: &mut Context<'_>,
    prefix: &str,
    direction: &str,
    own: LinkKeys<'_>,
    both: LinkKeys<'_>,
) -> Result<LinkConfig, ScenarioError> {
    let keys = own.over(both);
    let key = |k: &str| {
        let from_own = match k {
            "rate" => own.rate.is_some(),
            "delay" | "rtt" => own.delay.is_some() || own.rtt.is_some(),
            "queue" => own.queue.is_some(),
            "loss" => own.loss.is_some(),
            "jitter" => own.jitter.is_some(),
            "reorder" => own.reorder.is_some(),
            "duplication" => own.duplication.is_some(),
            "outages" => own.outages.is_some(),
            "mtu" => own.mtu.is_some(),
            _ => own.change.is_some(),
        };
        if from_own {
            format!("{prefix}.{direction}.{k}")
        } else {
            format!("{prefix}.{k}")
        }
    };
    let Some(rate) = keys.rate else {
        // Point at the path's first key if there is one; the path table itself has no span.
        let span = keys.delay.or(keys.rtt).or(keys.loss).map_or(0..0, |f| f.span());
        return Err(
            cx.error(span, format!("{prefix}.{direction}: no `rate` given (e.g. rate = \"20Mbit/s\")"))
        );
    };
    let rate_bps = cx.value(&key("rate"), rate, as_rate)?;
    let delay = match (keys.delay, keys.rtt) {
        (Some(_), Some(rtt)) => {
            return Err(
                cx.error(rtt.span(), format!("{}: give `delay` (one way) or `rtt`, not both", key("rtt")))
            )
        }
        (Some(d), None) => cx.value(&key("delay"), d, as_duration)?,
        (None, Some(rtt)) => cx.value(&key("rtt"), rtt, as_duration)? / 2,
        (None, None) => {
            return Err(cx.error(
                rate.span(),
                format!("{prefix}.{direction}: no `delay` or `rtt` given (e.g. rtt = \"100ms\")"),
            ))
        }
    };
    let mut config = LinkConfig::new(rate_bps, delay);
    if let Some(q) = keys.queue {
        config.queue = cx.value(&key("queue"), q, as_queue)?;
    }
    if let Some(l) = keys.loss {
        config.loss = cx.value(&key("loss"), l, as_loss)?;
    }
    if let Some(j) = keys.jitter {
        config.jitter = cx.value(&key("jitter"), j, as_duration)?;
    }
    if let Some(r) = keys.reorder {
        config.jitter_reorders =
            cx.value(&key("reorder"), r, |v| v.as_bool().ok_or_else(|| expected("true or false", v)))?;
    }
    if let Some(d) = keys.duplication {
        config.duplication = cx.value(&key("duplication"), d, as_probability)?;
    }
    if let Some(o) = keys.outages {
        config.outages = outages(cx, &key("outages"), o)?;
    }
    if let Some(m) = keys.mtu {
        config.mtu = Some(cx.value(&key("mtu"), m, as_mtu)?);
    }
    let change_key = key("change");
    for (i, change) in keys.change.unwrap_or_default().iter().enumerate() {
        config.changes.push(link_change(cx, &format!("{change_key}[{i}]"), change)?);
    }
    if let Err(e) = config.validate() {
        return Err(cx.error(rate.span(), format!("{prefix}.{direction}: {}", e.0)));
    }
    Ok(config)
}

fn outages(cx: &Context<'_>, key: &str, field: &Spanned<Value>) -> Result<Vec<Outage>, ScenarioError> {
    let bad = |why: String| cx.error(field.span(), format!("{key}: {why}"));
    let usage = "write outages = [[\"10s\", \"20s\"], …] (start, end)";
    let Value::Array(windows) = field.get_ref() else {
        return Err(bad(usage.to_owned()));
    };
    let mut out = Vec::with_capacity(windows.len());
    for (i, window) in windows.iter().enumerate() {
        let pair = window
            .as_array()
            .filter(|a| a.len() == 2)
            .ok_or_else(|| bad(format!("[{i}] is not a pair; {usage}")))?;
        let start = as_duration(&pair[0]).map_err(|e| bad(format!("[{i}] start: {e}")))?;
        let end = as_duration(&pair[1]).map_err(|e| bad(format!("[{i}] end: {e}")))?;
        if end <= start {
            return Err(bad(format!("[{i}] ends before it starts")));
        }
        out.push(Outage { start: Instant::ZERO + start, end: Instant::ZERO + end });
    }
    Ok(out)
}

fn link_change(cx: &Context<'_>, prefix: &str, raw: &RawChange) -> Result<LinkChange, ScenarioError> {
    let key = |k: &str| format!("{prefix}.{k}");
    let at = cx.fixed(&key("at"), &raw.at, as_duration)?;
    let delay = match (&raw.delay, &raw.rtt) {
        (Some(_), Some(rtt)) => {
            return Err(
                cx.error(rtt.span(), format!("{}: give `delay` (one way) or `rtt`, not both", key("rtt")))
            )
        }
        (Some(d), None) => Some(cx.fixed(&key("delay"), d, as_duration)?),
        (None, Some(rtt)) => Some(cx.fixed(&key("rtt"), rtt, as_duration)? / 2),
        (None, None) => None,
    };
    let change = LinkChange {
        at: Instant::ZERO + at,
        rate_bps: raw.rate.as_ref().map(|f| cx.fixed(&key("rate"), f, as_rate)).transpose()?,
        delay,
        loss: raw.loss.as_ref().map(|f| cx.fixed(&key("loss"), f, as_loss)).transpose()?,
        jitter: raw.jitter.as_ref().map(|f| cx.fixed(&key("jitter"), f, as_duration)).transpose()?,
        duplication: raw
            .duplication
            .as_ref()
            .map(|f| cx.fixed(&key("duplication"), f, as_probability))
            .transpose()?,
        mtu: raw.mtu.as_ref().map(|f| cx.fixed(&key("mtu"), f, as_mtu)).transpose()?,
    };
    if change.rate_bps.is_none()
        && change.delay.is_none()
        && change.loss.is_none()
        && change.jitter.is_none()
        && change.duplication.is_none()
        && change.mtu.is_none()
    {
        return Err(cx.error(
            raw.at.span(),
            format!("{prefix}: changes nothing (set rate, delay, rtt, loss, jitter, duplication or mtu)"),
        ));
    }
    Ok(change)
}
