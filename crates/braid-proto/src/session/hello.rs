//! What the client tells the server in its first handshake message (PROTOCOL.md §13.2): the
//! path count, the names of the scheme, congestion controller and scheduler it asks for, and
//! its core's transport parameters, so the server's core can answer at once.

use crate::cc::CcAlgorithm;
use crate::conn::Mode;
use crate::sched::SchedulerKind;
use crate::wire::{Reader, TransportParams, Writer, MAX_PATHS};
use crate::ConnectionConfig;

/// Longest name kept in a hello (longer ones are cut).
const MAX_NAME: usize = 64;

/// Most bytes the transport parameters take (nine entries of at most 10 bytes and the count).
const MAX_PARAMS: usize = 96;

/// The client's choices, carried encrypted and authenticated in its first message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hello {
    /// Paths the client will use (1..=8): the server's core connection is created with as many.
    pub paths: u8,
    /// The scheme's name (`--mode`), so the server sends with it too; empty: the server's own.
    pub mode: String,
    /// The congestion controller's name (`--cc`); empty: the mode's default.
    pub cc: String,
    /// The multipath scheduler's name (`--scheduler`); empty: the mode's default. (A hello
    /// without it reads as empty: the padding is zeros.)
    pub scheduler: String,
    /// The client core's transport parameters, its Initial's HANDSHAKE frame (PROTOCOL.md
    /// §9.2): with them the server's core starts as that Initial would start it and its Accept
    /// follows the handshake's answer, so the core is up one round trip after the first message
    /// instead of two. `None`: the server waits for the Initial (a hello without them reads as
    /// `None`: the padding is zeros).
    pub params: Option<TransportParams>,
}

impl Hello {
    /// Bytes [`Hello::encode`] needs at most.
    pub const MAX_LEN: usize = 10 + 3 * (1 + MAX_NAME) + 1 + MAX_PARAMS;

    /// `version 1 | paths | unix time µs (8) | mode length | mode | cc length | cc |
    /// scheduler length | scheduler`, then with parameters `1 | parameters (§9.2's list)`,
    /// into the front of `out` (at least [`Hello::MAX_LEN`]
    /// bytes; the rest is left as it is, zeros in a first message). `unix_micros` is the
    /// sender's wall clock, which the server checks to bound replays (§13.3).
    pub fn encode(&self, unix_micros: u64, out: &mut [u8]) {
        out[0] = 1;
        out[1] = self.paths;
        out[2..10].copy_from_slice(&unix_micros.to_be_bytes());
        let mut at = 10;
        for name in [&self.mode, &self.cc, &self.scheduler] {
            let bytes = &name.as_bytes()[..name.len().min(MAX_NAME)];
            out[at] = bytes.len() as u8;
            out[at + 1..at + 1 + bytes.len()].copy_from_slice(bytes);
            at += 1 + bytes.len();
        }
        if let Some(params) = &self.params {
            let mut list = Vec::with_capacity(MAX_PARAMS);
            params.write(&mut Writer::new(&mut list));
            debug_assert!(list.len() <= MAX_PARAMS);
            out[at] = 1;
            out[at + 1..at + 1 + list.len()].copy_from_slice(&list);
        }
    }

    /// Returns the hello and the time it was written; `None` for bytes that are not a hello.
    /// These are peer bytes once a first message authenticates.
    pub fn decode(payload: &[u8]) -> Option<(Hello, u64)> {
        if payload.len() < 12 || payload[0] != 1 {
            return None;
        }
        let paths = payload[1];
        let sent = u64::from_be_bytes(payload[2..10].try_into().ok()?);
        let mut at = 10;
        let mut names = [String::new(), String::new(), String::new()];
        for name in &mut names {
            let len = usize::from(*payload.get(at)?);
            let bytes = payload.get(at + 1..at + 1 + len)?;
            *name = std::str::from_utf8(bytes).ok()?.to_string();
            at += 1 + len;
        }
        let [mode, cc, scheduler] = names;
        let params = match payload.get(at) {
            None | Some(0) => None,
            Some(1) => Some(TransportParams::parse(&mut Reader::new(&payload[at + 1..])).ok()?),
            Some(_) => return None,
        };
        Some((Hello { paths, mode, cc, scheduler, params }, sent))
    }

    /// What a client with `config` asks for over `paths` paths: its mode, and its congestion
    /// controller and scheduler where it set them (else empty: the mode's defaults). The
    /// server's [`Hello::apply`] undoes it.
    pub fn asking(config: &ConnectionConfig, paths: u8) -> Hello {
        Hello {
            paths,
            mode: config.mode.name().to_string(),
            cc: config.cc.map(|c| c.name().to_string()).unwrap_or_default(),
            scheduler: config.scheduler.map(|k| k.name().to_string()).unwrap_or_default(),
            params: None,
        }
    }

    /// Whether the path count is one a server accepts (1..=8).
    pub fn paths_valid(&self) -> bool {
        (1..=MAX_PATHS as u8).contains(&self.paths)
    }

    /// The server's `transport` with this client's choices: path count, mode, congestion
    /// controller and scheduler. A name the server does not know keeps the server's setting
    /// (the mode) or the mode's default (controller, scheduler), and is returned so the caller
    /// can say so.
    pub fn apply(&self, transport: &ConnectionConfig) -> (ConnectionConfig, Vec<UnknownChoice>) {
        let mut config = transport.clone();
        let mut unknown = Vec::new();
        config.paths = self.paths;
        if !self.mode.is_empty() {
            match self.mode.parse::<Mode>() {
                Ok(m) => config.mode = m,
                Err(error) => unknown.push(UnknownChoice::Mode { error, using: config.mode.name() }),
            }
        }
        if !self.cc.is_empty() {
            match self.cc.parse::<CcAlgorithm>() {
                Ok(c) => config.cc = Some(c),
                Err(e) => unknown.push(UnknownChoice::Cc(e)),
            }
        }
        if !self.scheduler.is_empty() {
            match self.scheduler.parse::<SchedulerKind>() {
                Ok(k) => config.scheduler = Some(k),
                Err(e) => unknown.push(UnknownChoice::Scheduler(e)),
            }
        }
        (config, unknown)
    }
}

/// A client's choice the server does not know (the parser's message), so its own is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownChoice {
    /// `using`: the server's mode, kept.
    Mode {
        error: String,
        using: &'static str,
    },
    Cc(String),
    Scheduler(String),
}

impl std::fmt::Display for UnknownChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnknownChoice::Mode { error, using } => {
                write!(f, "client's mode unknown ({error}); {using} is used")
            }
            UnknownChoice::Cc(e) => {
                write!(f, "client's congestion controller unknown ({e}); the mode's is used")
            }
            UnknownChoice::Scheduler(e) => write!(f, "client's scheduler unknown ({e}); the mode's is used"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client asks for is what the server then uses, whatever the server's own choices.
    #[test]
    fn the_server_applies_what_the_client_asks() {
        let client = ConnectionConfig {
            mode: "fmtcp".parse().unwrap(),
            cc: Some("bbr".parse().unwrap()),
            scheduler: Some("eat".parse().unwrap()),
            ..ConnectionConfig::default()
        };
        let hello = Hello::asking(&client, 3);
        assert_eq!(
            (hello.mode.as_str(), hello.cc.as_str(), hello.scheduler.as_str()),
            ("fmtcp", "bbr", "eat")
        );
        let (server, unknown) = hello.apply(&ConnectionConfig::default());
        assert!(unknown.is_empty());
        assert_eq!(
            (server.paths, server.mode, server.cc, server.scheduler),
            (3, client.mode, client.cc, client.scheduler)
        );
        // Left unset, the controller and scheduler stay the mode's defaults at the server.
        let plain = Hello::asking(&ConnectionConfig::default(), 1);
        assert!(plain.cc.is_empty() && plain.scheduler.is_empty());
        let (server, _) = plain.apply(&ConnectionConfig::default());
        assert_eq!((server.cc, server.scheduler), (None, None));
    }

    #[test]
    fn round_trip_cut_names_and_garbage() {
        let h = Hello {
            paths: 3,
            mode: "fmtcp".into(),
            cc: "x".repeat(100),
            scheduler: "eat".into(),
            params: None,
        };
        let mut out = [0u8; Hello::MAX_LEN];
        h.encode(42, &mut out);
        let (back, sent) = Hello::decode(&out).unwrap();
        assert_eq!(sent, 42);
        assert_eq!(back.cc.len(), MAX_NAME);
        assert_eq!((back.paths, back.mode.as_str(), back.scheduler.as_str()), (3, "fmtcp", "eat"));
        for cut in 0..12 {
            assert_eq!(Hello::decode(&out[..cut]), None);
        }
        out[0] = 2;
        assert_eq!(Hello::decode(&out), None);
        assert_eq!(back.params, None, "the padding's zeros carry no parameters");
        assert!(!Hello { paths: 0, ..Hello::default() }.paths_valid());
        assert!(!Hello { paths: 9, ..Hello::default() }.paths_valid());
    }

    #[test]
    fn choices_apply_and_unknown_names_keep_the_servers() {
        let base = ConnectionConfig::default();
        let h = Hello {
            paths: 3,
            mode: "fmtcp".into(),
            cc: "nope".into(),
            scheduler: "eat".into(),
            params: None,
        };
        let (config, unknown) = h.apply(&base);
        assert_eq!(config.paths, 3);
        assert_eq!(config.mode, "fmtcp".parse().unwrap());
        assert_eq!(config.cc, base.cc);
        assert_eq!(config.scheduler, Some("eat".parse().unwrap()));
        assert!(matches!(unknown.as_slice(), [UnknownChoice::Cc(_)]), "{unknown:?}");
        let (same, none) = Hello { paths: 1, ..Hello::default() }.apply(&base);
        assert!(none.is_empty());
        assert_eq!((same.mode, same.cc, same.scheduler), (base.mode, base.cc, base.scheduler));
    }

    /// The core's parameters ride after the names, the largest values included; a list that
    /// does not parse, or an unknown marker, makes the whole hello unreadable.
    #[test]
    fn parameters_round_trip_and_bad_ones_are_refused() {
        let params = TransportParams {
            symbol_size: 16_000,
            max_symbol_size: 16_384,
            initial_max_data: crate::wire::MAX_VARINT,
            initial_max_stream_data: crate::wire::MAX_VARINT,
            max_streams: 1 << 32,
            idle_timeout_ms: 86_400_000,
            ..TransportParams::default()
        };
        let name = "n".repeat(MAX_NAME);
        let h =
            Hello { paths: 8, mode: name.clone(), cc: name.clone(), scheduler: name, params: Some(params) };
        let mut out = [0u8; Hello::MAX_LEN];
        h.encode(7, &mut out);
        assert_eq!(Hello::decode(&out), Some((h, 7)));
        let marker = 10 + 3 * (1 + MAX_NAME);
        let mut bad = out;
        bad[marker + 1] = 65; // a parameter count above the list's limit
        assert_eq!(Hello::decode(&bad), None);
        let mut bad = out;
        bad[marker] = 2;
        assert_eq!(Hello::decode(&bad), None);
    }
}
