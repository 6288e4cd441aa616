//! Keys: the shared key and X25519 key pairs, their files (`braid keygen`), and how each end
//! authenticates (a shared key, or a key pair and the peer's public key).

use std::fmt;
use std::path::Path;

use super::NOISE_PARAMS_IK;

/// A pre-shared key (32 bytes).
#[derive(Clone)]
pub struct Key(pub [u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("key file {0}: expected 64 hexadecimal digits (as written by `braid keygen`)")]
    Format(String),
    #[error("{0}: expected a public key (64 hexadecimal digits, then an optional comment)")]
    Public(String),
    #[error("no system randomness: {0}")]
    Random(String),
}

impl Key {
    /// A fresh random key.
    pub fn generate() -> Result<Key, KeyError> {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Key(k))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn from_hex(text: &str) -> Option<Key> {
        let text = text.trim();
        if text.len() != 64 || !text.is_ascii() {
            return None;
        }
        let mut k = [0u8; 32];
        for (i, byte) in k.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Key(k))
    }

    /// Reads a key file written by [`Key::write_file`].
    pub fn read_file(path: &Path) -> Result<Key, KeyError> {
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| KeyError::Io { path: shown.clone(), source })?;
        Key::from_hex(&text).ok_or(KeyError::Format(shown))
    }

    /// Writes the key as hex, readable by the owner only (Unix), refusing to overwrite a file.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        write_secret(path, &format!("{}\n", self.to_hex()))
    }

    /// Writes the key as a private key file (`braid-private-key HEX`), owner-only, no overwrite.
    pub fn write_private(&self, path: &Path) -> Result<(), KeyError> {
        write_secret(path, &format!("{PRIVATE_TAG} {}\n", self.to_hex()))
    }

    /// Reads a key file: a pre-shared key (`braid keygen`) or a private key (`braid keygen --pair`).
    pub fn read_any(path: &Path) -> Result<KeyFile, KeyError> {
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| KeyError::Io { path: shown.clone(), source })?;
        let text = text.trim();
        match text.strip_prefix(PRIVATE_TAG) {
            Some(rest) => Key::from_hex(rest).map(KeyFile::Private).ok_or(KeyError::Format(shown)),
            None => Key::from_hex(text).map(KeyFile::Shared).ok_or(KeyError::Format(shown)),
        }
    }

    /// A public key as written in a `.pub` file or an authorized list: `HEX [comment]`.
    pub fn parse_public(line: &str) -> Option<Key> {
        Key::from_hex(line.split_whitespace().next()?)
    }

    /// An allow-list of client public keys: one `HEX [comment]` per line, `#` comments and blank
    /// lines skipped (as ssh's authorized_keys).
    pub fn read_authorized(path: &Path) -> Result<Vec<Key>, KeyError> {
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| KeyError::Io { path: shown.clone(), source })?;
        let mut keys = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            keys.push(Key::parse_public(line).ok_or_else(|| KeyError::Public(format!("{shown}:{}", i + 1)))?);
        }
        Ok(keys)
    }
}

/// What a key file holds.
#[derive(Debug, Clone)]
pub enum KeyFile {
    Shared(Key),
    Private(Key),
}

const PRIVATE_TAG: &str = "braid-private-key";

fn write_secret(path: &Path, text: &str) -> Result<(), KeyError> {
    use std::io::Write;
    let shown = path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path).map_err(|source| KeyError::Io { path: shown.clone(), source })?;
    f.write_all(text.as_bytes()).map_err(|source| KeyError::Io { path: shown, source })
}

/// How a client proves itself: the shared key, or its key pair and the server's public key.
#[derive(Clone, Debug)]
pub enum ClientAuth {
    Psk(Key),
    Pair { private: Key, server: Key },
}

/// How a server checks clients: the shared key, or its key pair and the public keys allowed in.
#[derive(Clone, Debug)]
pub enum ServerAuth {
    Psk(Key),
    Pair { private: Key, authorized: Vec<Key> },
}

impl From<Key> for ClientAuth {
    fn from(k: Key) -> ClientAuth {
        ClientAuth::Psk(k)
    }
}

impl From<Key> for ServerAuth {
    fn from(k: Key) -> ServerAuth {
        ServerAuth::Psk(k)
    }
}

/// A fresh X25519 key pair (private, public) for Noise IK (`braid keygen --pair`).
pub fn generate_pair() -> Result<(Key, Key), KeyError> {
    let kp = snow::Builder::new(NOISE_PARAMS_IK.parse().expect("valid Noise parameters"))
        .generate_keypair()
        .map_err(|e| KeyError::Random(e.to_string()))?;
    let private: [u8; 32] =
        kp.private.as_slice().try_into().map_err(|_| KeyError::Random("key size".into()))?;
    let public: [u8; 32] =
        kp.public.as_slice().try_into().map_err(|_| KeyError::Random("key size".into()))?;
    Ok((Key(private), Key(public)))
}
