//! Errors of the `rsd` crate.

use std::path::PathBuf;

/// `7` for a new format version, `1.7` for a newer minor version of this one.
fn version_text(version: u32, minor: u32) -> String {
    if minor == 0 {
        version.to_string()
    } else {
        format!("{version}.{minor}")
    }
}

/// Everything that can go wrong reading, writing or merging traces.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RsdError {
    /// The file does not start with the iotrex magic bytes.
    #[error("{path}: not an iotrex trace ({})", magic_detail(found))]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// What it starts with instead.
        found: Vec<u8>,
    },
    /// The file was written by a newer iotrex: a newer format version, or a minor version
    /// (fields added at the end) this build does not know. Not damage.
    #[error(
        "{path}: trace format version {} is newer than this iotrex reads (up to {supported}.{supported_minor}): the file was written by a newer iotrex; upgrade iotrex",
        version_text(*found, *found_minor)
    )]
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// Its minor version.
        found_minor: u32,
        /// The newest version this build reads.
        supported: u32,
        /// The newest minor version of `supported` this build reads.
        supported_minor: u32,
    },
    /// The file ends early.
    #[error("{path}: truncated trace: expected {expected} bytes, found {found}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header announces.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// Bytes follow the end of the trace.
    #[error("{path}: {extra} bytes of trailing garbage after the trace")]
    TrailingGarbage {
        /// The file.
        path: PathBuf,
        /// Number of extra bytes.
        extra: u64,
    },
    /// The body does not match its checksum or does not decode.
    #[error("{path}: corrupt trace body: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The body is intact (its checksum matches) but names an operation this build does not
    /// know: it was written by a newer iotrex, whose operation list has grown.
    #[error("{path}: the trace uses an operation this iotrex does not know ({op})")]
    UnknownOperation {
        /// The file.
        path: PathBuf,
        /// The operation's name as stored.
        op: String,
    },
    /// The trace could not be encoded.
    #[error("cannot encode trace: {0}")]
    Encode(String),
    /// Reading or writing the file failed.
    // The OS error is part of the message and deliberately not a `source()`, so printing the
    // error chain does not repeat it.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// Two traces given to merge share a rank.
    #[error("cannot merge traces that both contain rank {rank}")]
    OverlappingRanks {
        /// A rank in both.
        rank: u32,
    },
    /// A setting (environment variable) with a value it does not take.
    #[error("{name}={value}: expected {expected}")]
    BadSetting {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A consumer that needs exact values met a summarised parameter.
    #[error(
        "{file}: {op} (ranks {ranks}) parameter `{param}` is approximate (a statistical summary, \
         IOTREX_APPROX): {what} needs its exact values; trace \
         with IOTREX_APPROX=none (or `iotrex trace --approx none`) for an exact trace"
    )]
    Approximate {
        /// The trace.
        file: String,
        /// The event's operation.
        op: &'static str,
        /// The parameter.
        param: String,
        /// The event's ranks.
        ranks: String,
        /// The consumer.
        what: &'static str,
    },
    /// Drawing exact values for a summarised parameter would take more calls than allowed.
    #[error(
        "{param}: {calls} calls to draw values for, more than the {limit} a drawn trace holds \
         explicitly; replay or export fewer ranks"
    )]
    TooManyDraws {
        /// The call and parameter.
        param: String,
        /// Its calls over every rank.
        calls: u64,
        /// [`crate::draw::DRAW_LIMIT`].
        limit: u64,
    },
}

/// What a file that does not start with the magic bytes starts with instead: nothing at all is
/// said as such (an empty file is a copy or a run that went wrong, not a file of another kind).
fn magic_detail(found: &[u8]) -> String {
    if found.is_empty() {
        "bad magic: the file is empty".into()
    } else {
        format!("bad magic bytes {found:02x?}")
    }
}
