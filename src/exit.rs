//! How a command's result becomes the process's end: the error message, a hint where there is
//! a useful one, and the exit status (0 success, 1 unreadable or invalid input, 2 bad arguments,
//! or the traced command's own status; `diff`, like diff(1), 0 same, 1 different, 2 trouble).
//! With `--json` the error is also printed on stdout as `{"error": ..., "hint": ...}`, so a
//! script reading stdout sees it; an extrapolation's refusal adds its fields as `"refusal"`.

use rsd::RsdError;
use std::io;
use std::process::ExitCode;

/// The traced command failed: exit with its status, without an error message of our own.
#[derive(Debug)]
pub struct ChildExit(pub i32);

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the traced command exited with status {}", self.0)
    }
}

impl std::error::Error for ChildExit {}

/// A bad argument: exit status 2, like clap's own usage errors.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A suggestion for what to do about an error, where there is a useful one.
fn hint(e: &anyhow::Error) -> Option<String> {
    if let Some(h) = crate::cmd_extrap::hint(e) {
        return Some(h);
    }
    if let Some(h) = crate::cmd_replay::hint(e) {
        return Some(h);
    }
    if let Some(o) = e.downcast_ref::<crate::output::OutputError>() {
        return Some(o.hint());
    }
    if let Some(codes_bridge::CodesError::OutputDir { dir, source }) = e.downcast_ref() {
        return Some(crate::output::output_hint(dir, "-o", source.kind()));
    }
    if let Some(columnar::ExportError::OutputDir { dir, source }) = e.downcast_ref() {
        return Some(crate::output::output_hint(dir, "-o", source.kind()));
    }
    if let Some(otf2out::Otf2Error::Output { dir, source }) = e.downcast_ref() {
        return Some(crate::output::output_hint(dir, "-o", source.kind()));
    }
    if e.downcast_ref::<extrap::provenance::ProvenanceError>()
        .is_some()
    {
        return Some(
            "give --extrap the trace `iotrex extrap` wrote from the traces given as IN (the same \
             program at the rank counts it names)"
                .into(),
        );
    }
    match e.downcast_ref::<RsdError>()? {
        RsdError::BadMagic { found, .. } if found.is_empty() => Some(
            "an empty file is what a run that failed or is still running, or an interrupted \
             copy, leaves: trace again or copy the trace again"
                .into(),
        ),
        RsdError::BadMagic { .. } => {
            Some("iotrex reads .iotrex files written by the iotrex tracer or `iotrex synth`".into())
        }
        RsdError::Io { path, error } if error.kind() == io::ErrorKind::IsADirectory => {
            Some(directory_hint(path))
        }
        RsdError::Truncated { .. } => Some(
            "the file was cut short: an incomplete copy, or the run died while writing it".into(),
        ),
        RsdError::Corrupt { .. } => {
            Some("the file was damaged after it was written; re-copy or re-trace it".into())
        }
        RsdError::UnknownOperation { .. } => Some(
            "the file was written by a newer iotrex; read it with that version (or newer)".into(),
        ),
        RsdError::Io { path, error } if error.kind() == io::ErrorKind::NotFound => Some(
            crate::cmd_merge::hint_for_missing(path).unwrap_or_else(|| "check the path".into()),
        ),
        _ => None,
    }
}

/// What to give instead of the directory `dir`: the traces in it, if there are any.
fn directory_hint(dir: &std::path::Path) -> String {
    let mut traces: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "iotrex"))
        .map(|p| p.display().to_string())
        .collect();
    traces.sort();
    let more = traces.len().saturating_sub(4);
    traces.truncate(4);
    match (traces.is_empty(), more) {
        (true, _) => "this is a directory: give the path of a .iotrex file, which iotrex trace \
                      writes where -o says"
            .into(),
        (false, 0) => format!(
            "this is a directory: give a trace in it, such as {}",
            traces.join(" ")
        ),
        (false, m) => format!(
            "this is a directory: give a trace in it, such as {} (and {m} more)",
            traces.join(" ")
        ),
    }
}

/// The error and its causes, each cause left out when the message before already says it (rsd's
/// I/O errors print their OS error and also return it as their source).
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// How the error of a failed command is reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report {
    /// `--json`: the error also goes to stdout as JSON.
    pub json: bool,
    /// The exit status of an error (not of a usage error, always 2): 1, or 2 for `diff`,
    /// whose 1 means "different".
    pub trouble: u8,
}

/// The error as JSON: `{"error": message, "hint": hint or null}`, and what else a script
/// can act on (`"refusal"`: an extrapolation's refusal, field by field), where there is some.
fn error_json(msg: &str, hint: Option<&str>, more: Option<(&str, serde_json::Value)>) -> String {
    let mut v = serde_json::json!({ "error": msg, "hint": hint });
    if let Some((key, value)) = more {
        v[key] = value;
    }
    v.to_string()
}

/// Prints a usage error (bad arguments, found by clap) as JSON on stdout.
pub fn print_usage_json(msg: &str) {
    println!("{}", error_json(msg, Some("see --help"), None));
}

/// Prints the error of a failed command (with its hint) and gives the exit status.
pub fn status(result: anyhow::Result<()>, how: Report) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `iotrex expand big.iotrex --rank 0 | head` is normal use, not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<ChildExit>().is_some() => {
            let code = e.downcast_ref::<ChildExit>().map_or(1, |c| c.0);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            let msg = message(&e);
            let h = hint(&e);
            eprintln!("error: {msg}");
            if let Some(h) = &h {
                eprintln!("hint: {h}");
            }
            if how.json {
                let refusal = crate::cmd_extrap::refusal_json(&e).map(|r| ("refusal", r));
                println!("{}", error_json(&msg, h.as_deref(), refusal));
            }
            if e.downcast_ref::<Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(how.trouble.max(1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_json_has_both_fields() {
        let v: serde_json::Value =
            serde_json::from_str(&super::error_json("a \"b\"", None, None)).unwrap();
        assert_eq!(v["error"], "a \"b\"");
        assert!(v["hint"].is_null());
    }
}
