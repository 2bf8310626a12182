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
