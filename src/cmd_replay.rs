//! `iotrex replay`: the CLI side of the `replay` crate, for replays with threads in one
//! process. Under MPI, ranks run `iotrex-replay` (the replay crate's binary) instead.

use anyhow::{Context, Result};

/// Arguments of `iotrex replay`: the one definition `iotrex-replay` uses too.
pub use replay::cli::ReplayArgs;

/// Runs `iotrex replay`. Returns a hint for the error, if there is one, with the error.
pub fn run(a: &ReplayArgs, json: bool) -> Result<()> {
    if !a.threads {
        anyhow::bail!(
            "iotrex replay runs ranks as threads only (add --threads); under MPI run `mpirun -np N iotrex-replay {} --root {}`",
            a.trace.display(),
            a.root.display()
        );
    }
    let opts = a.options();
    let max = a.max_threads;
    let report =
        replay::run_threads_file(&a.trace, &a.root, &opts, a.prep, a.allow_incomplete, max)?;
    if let Some(p) = &a.json_out {
        let s = serde_json::to_string_pretty(&report)?;
        std::fs::write(p, s + "\n").with_context(|| format!("--json-out {}", p.display()))?;
    }
    if json {
        crate::print_json(&report)
    } else {
        let mut text = report.render();
        if let Some(a) = replay::advice(&opts, report.ranks as usize) {
            text += &a;
            text.push('\n');
        }
        crate::print_text(&text)
    }
}

/// A suggestion for a replay error.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    replay::hint(e.downcast_ref::<replay::ReplayError>()?)
}
