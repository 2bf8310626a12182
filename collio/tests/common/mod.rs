//! Real runs for the model's tests: build the C mini-apps of the workspace's `tests/apps`
//! with mpicc, run them under the tracer with `mpirun` (timeout-wrapped, oversubscribed,
//! Open MPI's defaults: no io/fcoll parameter is ever set), and check the model against the
//! nested calls of every collective call of the trace.

#![allow(dead_code)]

use testkit as build;

use collio::ompio::{self, Config};
use collio::traced;
use rsd::TraceFile;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// mpirun runs one at a time: the machine's cores are shared.
static MPIRUN: Mutex<()> = Mutex::new(());

pub use build::tracer_lib;

/// Builds `tests/apps/<name>.c` into target/iotrex-apps/collio (see [`build::app_in`]).
pub fn app(name: &str) -> PathBuf {
    build::app_in("collio", name)
}

/// A scratch directory in /dev/shm.
pub fn scratch() -> tempfile::TempDir {
    build::scratch_with("iotrex-collio-")
}

/// The MPI-IO library a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lib {
    /// Open MPI's default, OMPIO.
    Ompio,
    /// ROMIO (`--mca io romio321`): the library chosen to show the ROMIO model, nothing
    /// else set.
    Romio,
}

/// Runs `app args` on `np` ranks under the tracer (Open MPI's defaults, and the io component
/// `lib` names), writing the trace to `trace`, and reads it back. Panics when mpirun fails.
pub fn traced(np: u32, app: &Path, args: &[String], trace: &Path, lib: Lib) -> TraceFile {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let _ = std::fs::remove_file(trace);
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", "120", "mpirun", "-np", &np.to_string()])
        .args(["--oversubscribe", "--mca", "btl", "self,vader"]);
    if lib == Lib::Romio {
        cmd.args(["--mca", "io", "romio321"]);
    }
    let out = cmd
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .env("IOTREX_OUT", trace)
        .env("IOTREX_RAW", "0")
        .args(["-x", &format!("LD_PRELOAD={}", tracer_lib().display())])
        .args(["-x", "IOTREX_OUT", "-x", "IOTREX_RAW"])
        .arg(app)
        .args(args)
        .output()
        .expect("run timeout/mpirun");
    assert!(
        out.status.success(),
        "mpirun -np {np} {} {args:?} failed ({}):\n{}\n{}",
        app.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    TraceFile::read(trace).unwrap_or_else(|e| panic!("cannot read {}: {e}", trace.display()))
}

/// What one trace's check found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Collective calls compared.
    pub calls: usize,
    /// Nested POSIX calls compared.
    pub nested: usize,
    /// Aggregator counts seen (per call).
    pub aggregators: Vec<usize>,
    /// Calls whose aggregators wrote asynchronously (aio requests, recorded as collected).
    pub async_calls: usize,
}

/// The models' configurations with the hints a program passed to every file it opens
/// (`cb_nodes`, `cb_config_list` `*:1` or `*:*`) over the defaults.
fn hinted(hints: &[(&str, &str)]) -> (Config, collio::romio::Config) {
    let mut cfg = Config::default();
    let mut romio_cfg = collio::romio::Config::default();
    for &(k, v) in hints {
        match (k, v) {
            ("cb_nodes", n) => {
                let n: u32 = n.parse().expect("cb_nodes is a number");
                cfg.cb_nodes = Some(i64::from(n));
                romio_cfg.cb_nodes = Some(n);
            }
            ("cb_config_list", "*:*") => romio_cfg.cb_config_list = collio::romio::ConfigList::Any,
            ("cb_config_list", "*:1") => {}
            _ => panic!("the test does not apply the hint {k}={v}"),
        }
    }
    (cfg, romio_cfg)
}

/// Runs the model on every collective call of `tf` (all files opened on all `np` ranks),
/// with the `hints` the program passed to every file, and compares its nested calls with the
/// recorded ones. Each file's recorded hints must hold `hints`. Returns the first difference.
pub fn check(tf: &TraceFile, np: u32, lib: Lib, hints: &[(&str, &str)]) -> Result<Checked, String> {
    let (cfg, romio_cfg) = hinted(hints);
    let mut done = Checked::default();
    let calls = traced::collective_calls(&tf.trace, np).map_err(|e| e.to_string())?;
    let mc = tf
        .header
        .mpi_config
        .as_ref()
        .ok_or("no MPI configuration")?;
    for c in calls {
        let (path, i) = (&c.path, c.index);
        let recorded = mc
            .file_hints
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, h)| h.as_slice())
            .unwrap_or_default();
        if let Some((k, v)) = hints
            .iter()
            .find(|(k, v)| !recorded.iter().any(|(rk, rv)| rk == k && rv == v))
        {
            return Err(format!(
                "{path}: the hint {k}={v} the program passed is not recorded: {recorded:?}"
            ));
        }
        // The model's calls per rank, and how it got them.
        let (modelled, how) = match lib {
            Lib::Ompio => {
                let o = ompio::model(&cfg, c.view, &c.input)
                    .map_err(|e| format!("{path}: collective call {i}: {e}"))?;
                done.aggregators.push(o.aggregators.len());
                done.async_calls += usize::from(o.async_writes);
                let how = format!(
                    "OMPIO {:?}, aggregators {:?}, domain {:?}, cycles {}",
                    o.fcoll, o.aggregators, o.domain_size, o.cycles
                );
                (o.calls, how)
            }
            Lib::Romio => {
                let o = collio::romio::model(&romio_cfg, &c.input)
                    .map_err(|e| format!("{path}: collective call {i}: {e}"))?;
                done.aggregators
                    .push(if o.two_phase { o.aggregators.len() } else { 0 });
                let how = format!(
                    "ROMIO two-phase {}, aggregators {:?}, domain {:?}",
                    o.two_phase, o.aggregators, o.domain_size
                );
                (o.calls, how)
            }
        };
        if let Some(d) = traced::first_difference(&c.recorded, &modelled) {
            return Err(format!(
                "{path}: {} #{i} at {np} ranks, rank {} (model: {how}): {d}",
                c.op.name(),
                c.ranks[d.rank_index]
            ));
        }
        done.calls += 1;
        done.nested += c.recorded.iter().map(Vec::len).sum::<usize>();
    }
    Ok(done)
}
