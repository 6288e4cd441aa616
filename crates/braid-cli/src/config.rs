//! `--config FILE`: a TOML file with a key for every flag (docs/CLI.md, "Config file"). Flags given
//! on the command line (or through `BRAID_KEY`) win over the file; the file wins over the
//! defaults. Options every subcommand shares sit at the top; the client's in `[client]`; each
//! subcommand's own in a table named after it. Unknown keys are an error naming the key and the
//! file.

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::ArgMatches;
use serde::Deserialize;

use crate::common::{fail, ClientOpts, Fail, KeyOpt, TransportOpts};
use crate::stats::StatsOpts;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    pub key: Option<PathBuf>,
    pub mode: Option<String>,
    pub code: Option<String>,
    pub scheduler: Option<String>,
    pub cc: Option<String>,
    pub idle_timeout: Option<f64>,
    pub stats: Option<bool>,
    pub stats_json: Option<PathBuf>,
    pub stats_interval: Option<f64>,
    #[serde(default)]
    pub client: ClientSection,
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub recv: RecvSection,
    #[serde(default)]
    pub forward: ForwardSection,
    #[serde(default)]
    pub socks: SocksSection,
    #[serde(default)]
    pub bench: BenchSection,
}

/// Flags of every client subcommand (send, forward, socks, bench).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClientSection {
    pub server: Option<String>,
    pub path: Option<Vec<String>>,
    pub emulate: Option<Vec<String>>,
    pub timeout: Option<f64>,
    pub server_key: Option<String>,
    pub metrics: Option<String>,
    pub qlog: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerSection {
    pub listen: Option<String>,
    pub max_connections: Option<usize>,
    pub connection_memory: Option<String>,
    pub max_streams: Option<u64>,
    pub handshake_rate: Option<u32>,
    pub metrics: Option<String>,
    pub qlog: Option<PathBuf>,
    pub dir: Option<PathBuf>,
    pub authorized: Option<PathBuf>,
    pub emulate: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RecvSection {
    pub listen: Option<String>,
    pub out: Option<PathBuf>,
    pub authorized: Option<PathBuf>,
    pub emulate: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ForwardSection {
    pub listen: Option<String>,
    pub to: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SocksSection {
    pub listen: Option<String>,
    pub auth: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BenchSection {
    pub time: Option<f64>,
    pub reverse: Option<bool>,
    pub json: Option<bool>,
}

impl FileConfig {
    /// Reads and checks a config file; errors are one line naming the file.
    pub fn read(path: &Path) -> Result<FileConfig, Fail> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("--config {}: cannot read ({e})", path.display())))?;
        FileConfig::parse(&text).map_err(|e| fail(format!("--config {}: {e}", path.display())))
    }

    /// Parses a config text; the error is one line (an unknown key is named).
    pub fn parse(text: &str) -> Result<FileConfig, String> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let place = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: ")
                })
                .unwrap_or_default();
            format!("{place}{}", e.message().lines().next().unwrap_or("invalid").trim())
        })
    }
}

/// Whether the user gave flag `id` (on the command line or through its environment variable).
fn given(m: &ArgMatches, id: &str) -> bool {
    matches!(m.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable))
}

/// `*field = file` unless the flag was given.
pub fn merge<T>(m: &ArgMatches, id: &str, field: &mut T, file: Option<T>) {
    if let Some(v) = file {
        if !given(m, id) {
            *field = v;
        }
    }
}

/// The same for a flag without a default (`Option`).
pub fn merge_opt<T>(m: &ArgMatches, id: &str, field: &mut Option<T>, file: Option<T>) {
    if file.is_some() && !given(m, id) {
        *field = file;
    }
}

impl FileConfig {
    pub fn apply_key(&mut self, m: &ArgMatches, k: &mut KeyOpt) {
        merge(m, "key", &mut k.key, self.key.take());
    }

    pub fn apply_transport(&mut self, m: &ArgMatches, t: &mut TransportOpts) {
        merge(m, "mode", &mut t.mode, self.mode.take());
        merge_opt(m, "code", &mut t.code, self.code.take());
        merge_opt(m, "scheduler", &mut t.scheduler, self.scheduler.take());
        merge_opt(m, "cc", &mut t.cc, self.cc.take());
        merge(m, "idle_timeout", &mut t.idle_timeout, self.idle_timeout.take());
    }

    pub fn apply_stats(&mut self, m: &ArgMatches, s: &mut StatsOpts) {
        merge(m, "stats", &mut s.stats, self.stats.take());
        merge_opt(m, "stats_json", &mut s.stats_json, self.stats_json.take());
        merge(m, "stats_interval", &mut s.stats_interval, self.stats_interval.take());
    }

    pub fn apply_client(&mut self, m: &ArgMatches, c: &mut ClientOpts) {
        let s = std::mem::take(&mut self.client);
        merge(m, "server", &mut c.server, s.server);
        merge(m, "paths", &mut c.paths, s.path);
        merge(m, "emulate", &mut c.emulate, s.emulate);
        merge(m, "timeout", &mut c.timeout, s.timeout);
        merge_opt(m, "server_key", &mut c.server_key, s.server_key);
        merge_opt(m, "metrics", &mut c.metrics, s.metrics);
        merge_opt(m, "qlog", &mut c.qlog, s.qlog);
        self.apply_key(m, &mut c.key);
        self.apply_transport(m, &mut c.transport);
        self.apply_stats(m, &mut c.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_parses_and_says_what_it_shows() {
        let text = include_str!("../../../braid.toml");
        let c = FileConfig::parse(text).unwrap();
        assert_eq!(c.mode.as_deref(), Some("braid"));
        assert_eq!(c.client.path.as_ref().map(Vec::len), Some(2));
        assert_eq!(c.server.listen.as_deref(), Some("0.0.0.0:4433"));
        assert_eq!(c.socks.listen.as_deref(), Some("127.0.0.1:1080"));
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = FileConfig::parse("mode = \"braid\"\nmdoe = \"ctcp\"\n").unwrap_err();
        assert!(e.contains("mdoe") && e.contains("line 2"), "{e}");
        let e = FileConfig::parse("[client]\nservr = \"x:1\"\n").unwrap_err();
        assert!(e.contains("servr"), "{e}");
        let e = FileConfig::parse("[nosuch]\n").unwrap_err();
        assert!(e.contains("nosuch"), "{e}");
        assert!(!e.contains('\n'));
        let e = FileConfig::parse("idle-timeout = \"long\"\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }
}
