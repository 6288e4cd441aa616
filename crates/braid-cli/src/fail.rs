//! The one error of the command: a line to print, then a non-zero exit.

/// A failure to report: one line, non-zero exit.
pub struct Fail(pub String);

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<braid_runtime::Error> for Fail {
    fn from(e: braid_runtime::Error) -> Fail {
        Fail(e.to_string())
    }
}

impl From<braid_runtime::KeyError> for Fail {
    fn from(e: braid_runtime::KeyError) -> Fail {
        match e {
            braid_runtime::KeyError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Fail(format!("key file {path} not found (create one with `braid keygen -o {path}` and copy it to both ends)"))
            }
            e => Fail(e.to_string()),
        }
    }
}

pub fn fail(msg: impl Into<String>) -> Fail {
    Fail(msg.into())
}
