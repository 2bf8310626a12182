//! The HDF5 oracle for `iotrex extrap` (`extrap::hdf5::space`): rank 0's HDF5 calls replayed on
//! one rank by `iotrex-h5oracle` (next to this binary) through the parallel HDF5 library,
//! traced by this binary's own `iotrex trace`.

use extrap::hdf5::space::{Oracle, OracleRun};
use rsd::RawEvent;
use std::sync::Arc;

/// Replays through `iotrex-h5oracle` in a scratch directory removed after each replay.
struct H5Oracle {
    launch: h5oracle::Launch,
}

impl Oracle for H5Oracle {
    fn replay(&self, events: &[RawEvent], version: Option<&str>) -> Result<OracleRun, String> {
        let plan =
            h5oracle::plan_of(events, version.map(str::to_string)).map_err(|e| e.to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("iotrex-h5oracle.")
            .tempdir()
            .map_err(|e| format!("cannot make a scratch directory for the HDF5 oracle: {e}"))?;
        let run = h5oracle::run(&plan, &self.launch, dir.path()).map_err(|e| e.to_string())?;
        // `IOTREX_H5ORACLE_KEEP=1` keeps each replay's plan, file, trace and storage report
        // (to see what HDF5 did where an extrapolation disagrees with a real run).
        if std::env::var_os("IOTREX_H5ORACLE_KEEP").is_some_and(|v| v == "1") {
            let kept = dir.keep();
            eprintln!("iotrex: HDF5 oracle replay kept in {}", kept.display());
        }
        let storage = run
            .storage
            .iter()
            .map(|d| (d.name.clone(), runs_of(&d.layout)))
            .collect();
        Ok(OracleRun {
            trace: run.trace,
            steps: run.steps,
            storage,
        })
    }
}

/// The oracle next to this binary, if it is there (an extrapolation that needs it and has
/// none refuses, saying so).
pub fn next_to_this_binary() -> Option<Arc<dyn Oracle>> {
    let exe = std::env::current_exe().ok()?;
    let launch = h5oracle::Launch::next_to(&exe);
    launch
        .oracle
        .is_file()
        .then(|| Arc::new(H5Oracle { launch }) as Arc<dyn Oracle>)
}

/// A dataset's storage as runs of consecutive bytes (address, length), in element order.
fn runs_of(layout: &h5oracle::Layout) -> Vec<(u64, u64)> {
    match layout {
        h5oracle::Layout::Contiguous { addr, size } => vec![(*addr, *size)],
        h5oracle::Layout::Chunked { chunks } => {
            let mut sorted: Vec<&h5oracle::Chunk> = chunks.iter().collect();
            sorted.sort_by(|a, b| a.coords.cmp(&b.coords));
            let mut out: Vec<(u64, u64)> = Vec::new();
            for c in sorted {
                match out.last_mut() {
                    Some((a, l)) if *a + *l == c.addr => *l += c.size,
                    _ => out.push((c.addr, c.size)),
                }
            }
            out
        }
        h5oracle::Layout::Other => Vec::new(),
    }
}
