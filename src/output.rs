//! Printing a command's result: pretty JSON (`--json`) or text, to stdout.

use anyhow::Result;
use serde::Serialize;
use std::io::{self, BufWriter, Write};

/// Prints `value` as pretty JSON and a newline.
pub fn print_json(value: &impl Serialize) -> Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Prints `text` as is.
pub fn print_text(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A trace that could not be written where an option said: named as the output, so the
/// message and its hint are not those of an input that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the output {} ({flag}): {error}", path.display())]
pub struct OutputError {
    /// Where the output was to go.
    pub path: std::path::PathBuf,
    /// The option that named it (`-o`).
    pub flag: &'static str,
    /// The OS error.
    pub error: io::Error,
}

impl OutputError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        output_hint(&self.path, self.flag, self.error.kind())
    }
}

/// What to do about an output `path` (named by the option `flag`) that could not be written
/// or created, from the OS error's kind: shared by every command whose output can be refused.
pub fn output_hint(path: &std::path::Path, flag: &str, kind: io::ErrorKind) -> String {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    match kind {
        io::ErrorKind::IsADirectory => format!(
            "{flag} names a directory: give the path of the file to write in it, such as {}",
            path.join("out.iotrex").display()
        ),
        // A file where the path needs a directory (`-o notes.txt/out`).
        io::ErrorKind::NotADirectory => format!(
            "a part of {} is a file, not a directory: give {flag} a path under a directory",
            path.display(),
        ),
        io::ErrorKind::NotFound if !parent.is_dir() => format!(
            "the directory {} does not exist: create it, or give {flag} a path in one that does",
            parent.display(),
        ),
        _ => format!(
            "{} refuses new files (a read-only or special file system such as /proc, or \
             permissions): give {flag} a path where you can write",
            parent.display(),
        ),
    }
}

/// Writes `tf` to `path`, the output named by the option `flag`; an I/O error says it is
/// the output ([`OutputError`]). Returns the bytes written.
pub fn write_trace(tf: &rsd::TraceFile, path: &std::path::Path, flag: &'static str) -> Result<u64> {
    match tf.write(path) {
        Ok(n) => Ok(n),
        Err(rsd::RsdError::Io { path, error }) => Err(OutputError { path, flag, error }.into()),
        Err(e) => Err(e.into()),
    }
}
