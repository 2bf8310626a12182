//! Running the oracle: `iotrex-h5oracle` on one rank under `iotrex trace`.

use crate::plan::Plan;
use rsd::op::{Op, Param};
use rsd::{RawEvent, TraceFile};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use thiserror::Error;

/// The programs a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The `iotrex` binary (its `trace` command preloads the tracer next to it).
    pub iotrex: PathBuf,
    /// The `iotrex-h5oracle` binary.
    pub oracle: PathBuf,
    /// How long the oracle may run, in seconds, before it is killed.
    pub timeout_secs: u64,
}

impl Launch {
    /// Both binaries next to the `iotrex` binary `exe` (how `cargo build --release
    /// --workspace` and an install put them), with a 120-second timeout.
    pub fn next_to(exe: &Path) -> Launch {
        let dir = exe.parent().unwrap_or(Path::new("."));
        Launch {
            iotrex: exe.to_path_buf(),
            oracle: dir.join("iotrex-h5oracle"),
            timeout_secs: 120,
        }
    }
}

/// A dataset's storage after the plan's last step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Storage {
    /// The `at` of the `H5Dcreate2` step that created it (of the `H5Dopen2` that opened it,
    /// for a dataset the plan opened without creating it).
    pub at: usize,
    /// Its name from its file's root (`rows`, `g/data`).
    pub name: String,
    /// Where its data is.
    pub layout: Layout,
}

/// Where a dataset's data is in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// One block (`H5Dget_offset`, `H5Dget_storage_size`).
    Contiguous {
        /// Its address.
        addr: u64,
        /// Its bytes.
        size: u64,
    },
    /// Chunks, in the order of `H5Dget_chunk_info`'s index.
    Chunked {
        /// Every allocated chunk.
        chunks: Vec<Chunk>,
    },
    /// Compact or virtual storage, contiguous storage not allocated, or a library without
    /// the chunk queries (before HDF5 1.10.5).
    Other,
}

/// One chunk of a chunked dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Its logical offset in the dataset, in elements per dimension (the coordinates of its
    /// first element, as `H5Dget_chunk_info` gives them).
    pub coords: Vec<u64>,
    /// Its address in the file.
    pub addr: u64,
    /// Its bytes in the file.
    pub size: u64,
}

/// What one run of the oracle gave.
#[derive(Debug, Clone)]
pub struct Run {
    /// The oracle's own one-rank trace, taken with the iotrex tracer, HDF5 layer on.
    pub trace: TraceFile,
    /// For each HDF5-layer call of that trace's rank 0 (depth first, in call order), the
    /// `at` of the plan step it replays.
    pub steps: Vec<usize>,
    /// Each dataset's storage after the last step, before the files close, by `at`.
    pub storage: Vec<Storage>,
}

/// Why the oracle gave nothing. Each says what failed, with the oracle's own words.
#[derive(Debug, Error)]
pub enum OracleError {
    /// The plan or the scratch directory could not be written.
    #[error("cannot write the HDF5 oracle's {what} {}: {source}", path.display())]
    Write {
        /// What.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The `iotrex` or `iotrex-h5oracle` binary is not there.
    #[error("the HDF5 oracle needs {} (`cargo build --release --workspace` builds it)", path.display())]
    Missing {
        /// The binary.
        path: PathBuf,
    },
    /// `timeout` could not be started.
    #[error("cannot start {} (the HDF5 oracle's launcher): {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The oracle ran past its time.
    #[error("the HDF5 oracle ({}) ran past {secs} s and was killed; its stderr:\n{stderr}", oracle.display())]
    Timeout {
        /// The oracle binary.
        oracle: PathBuf,
        /// The limit.
        secs: u64,
        /// What it said.
        stderr: String,
    },
    /// The oracle (or the launcher) failed.
    #[error("the HDF5 oracle ({}) failed ({status}) on {}; its stderr:\n{stderr}", oracle.display(), plan.display())]
    Failed {
        /// The oracle binary.
        oracle: PathBuf,
        /// The plan it ran.
        plan: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it said.
        stderr: String,
    },
    /// Its trace could not be read.
    #[error("cannot read the HDF5 oracle's trace {}: {source}; its stderr:\n{stderr}", path.display())]
    Trace {
        /// The trace.
        path: PathBuf,
        /// The cause (boxed: the error stays small).
        source: Box<rsd::RsdError>,
        /// What the oracle said.
        stderr: String,
    },
    /// Its storage report could not be read.
    #[error("cannot read the HDF5 oracle's storage report {}: {why}; its stderr:\n{stderr}", path.display())]
    Storage {
        /// The report.
        path: PathBuf,
        /// The cause.
        why: String,
        /// What the oracle said.
        stderr: String,
    },
    /// The oracle's traced HDF5 calls are not the plan's steps.
    #[error("the HDF5 oracle's trace {} does not replay the plan: {why}", path.display())]
    Mismatch {
        /// The oracle's trace.
        path: PathBuf,
        /// The first difference.
        why: String,
    },
}

/// Runs the oracle on `plan` in `dir` (created if missing): writes `dir/plan.json`, runs
/// `timeout T iotrex trace --hdf5 -o dir/oracle.iotrex -- mpirun -np 1 ORACLE dir/plan.json
/// dir/oracle.h5 dir/storage.json`, reads the trace and the storage report, and checks
/// that the trace's HDF5 calls are the plan's steps, one for one, in order.
pub fn run(plan: &Plan, launch: &Launch, dir: &Path) -> Result<Run, OracleError> {
    let write_err = |what, path: &Path| {
        let path = path.to_path_buf();
        move |source| OracleError::Write { what, path, source }
    };
    for exe in [&launch.iotrex, &launch.oracle] {
        if !exe.is_file() {
            return Err(OracleError::Missing { path: exe.clone() });
        }
    }
    std::fs::create_dir_all(dir).map_err(write_err("directory", dir))?;
    let plan_path = dir.join("plan.json");
    let trace_path = dir.join("oracle.iotrex");
    let h5 = dir.join("oracle.h5");
    let storage_path = dir.join("storage.json");
    let json = serde_json::to_vec(plan).expect("a plan serializes");
    std::fs::write(&plan_path, json).map_err(write_err("plan", &plan_path))?;
    // What an earlier run left must not pass for this one's.
    for p in [&trace_path, &storage_path] {
        match std::fs::remove_file(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(write_err("output", p)(e));
            }
            _ => {}
        }
    }
    let out = Command::new("timeout")
        .args(["-k", "5", &launch.timeout_secs.to_string()])
        .arg(&launch.iotrex)
        .args(["trace", "--hdf5", "-o"])
        .arg(&trace_path)
        .args(["--", "mpirun", "-np", "1"])
        .arg(&launch.oracle)
        .args([&plan_path, &h5, &storage_path])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| OracleError::Spawn {
            program: PathBuf::from("timeout"),
            source,
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => {}
        // `timeout`'s statuses: TERM sent (124), KILL needed (137).
        Some(124) | Some(137) => {
            return Err(OracleError::Timeout {
                oracle: launch.oracle.clone(),
                secs: launch.timeout_secs,
                stderr,
            });
        }
        _ => {
            return Err(OracleError::Failed {
                oracle: launch.oracle.clone(),
                plan: plan_path,
                status: out.status,
                stderr,
            });
        }
    }
    let trace = TraceFile::read(&trace_path).map_err(|source| OracleError::Trace {
        path: trace_path.clone(),
        source: Box::new(source),
        stderr: stderr.clone(),
    })?;
    let storage: Vec<Storage> = std::fs::read(&storage_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|why| OracleError::Storage {
            path: storage_path.clone(),
            why,
            stderr,
        })?;
    let steps =
        match_steps(plan, &trace.trace.rank_events(0)).map_err(|why| OracleError::Mismatch {
            path: trace_path,
            why,
        })?;
    Ok(Run {
        trace,
        steps,
        storage,
    })
}

/// The `at` of the plan step each HDF5-layer call of `events` (the oracle's rank 0) replays:
/// the calls must be the steps, one for one, in order, with the same op and the same values
/// (identifiers aside: the oracle's table holds only what it replays, so its slots differ).
fn match_steps(plan: &Plan, events: &[RawEvent]) -> Result<Vec<usize>, String> {
    if plan.is_netcdf() {
        return match_netcdf(plan, events);
    }
    let mut calls = Vec::new();
    crate::plan::collect(events, &mut calls);
    if calls.len() != plan.steps.len() {
        let first = plan
            .steps
            .iter()
            .zip(&calls)
            .position(|(s, c)| s.op != c.op)
            .unwrap_or(calls.len().min(plan.steps.len()));
        return Err(format!(
            "it made {} HDF5 calls for {} steps (first difference at step {first}: {} for {})",
            calls.len(),
            plan.steps.len(),
            calls.get(first).map_or("nothing", |c| c.op.name()),
            plan.steps
                .get(first)
                .map_or("no step".into(), |s| s.describe()),
        ));
    }
    let mut steps = Vec::with_capacity(calls.len());
    for (s, c) in plan.steps.iter().zip(calls) {
        if s.op != c.op {
            return Err(format!("{} replayed as {}", s.describe(), c.op.name()));
        }
        // Element sizes, flags, scopes and every dimension (what the oracle replayed is what
        // the plan says); not identifiers, nor the communicator (always the world here).
        let differs = s
            .params
            .iter()
            .zip(&c.params)
            .enumerate()
            .any(|(i, (a, b))| {
                let p = s.op.params().get(i);
                let kept = !matches!(
                    p,
                    Some(
                        Param::Loc
                            | Param::H5File
                            | Param::Dset
                            | Param::Space
                            | Param::Attr
                            | Param::Group
                            | Param::Comm
                    )
                );
                kept && a != b
            });
        if differs || s.params.len() != c.params.len() {
            return Err(format!(
                "{} replayed with {:?} where the plan has {:?}",
                s.describe(),
                c.params,
                s.params
            ));
        }
        steps.push(s.at);
    }
    Ok(steps)
}

/// [`match_steps`] of a NetCDF plan: the replay's NetCDF calls must be the steps, one for
/// one, in order, each having made the HDF5 ops the traced call made ([`Step::inner`]); each
/// of its HDF5 calls then replays the traced one at the same place, and no HDF5 call may be
/// outside a NetCDF call. (The NetCDF calls' own values are not compared: an attribute
/// replayed untyped records its file type as its memory type.)
fn match_netcdf(plan: &Plan, events: &[RawEvent]) -> Result<Vec<usize>, String> {
    fn walk<'a>(events: &'a [RawEvent], out: &mut Vec<&'a RawEvent>, stray: &mut usize) {
        for e in events {
            match e.op.layer() {
                rsd::op::Layer::Netcdf => out.push(e),
                rsd::op::Layer::Hdf5 => *stray += 1,
                _ => walk(&e.children, out, stray),
            }
        }
    }
    let (mut calls, mut stray) = (Vec::new(), 0);
    walk(events, &mut calls, &mut stray);
    if stray > 0 {
        return Err(format!(
            "it made {stray} HDF5 calls outside its NetCDF calls"
        ));
    }
    if calls.len() != plan.steps.len() {
        return Err(format!(
            "it made {} NetCDF calls for {} steps",
            calls.len(),
            plan.steps.len()
        ));
    }
    let mut steps = Vec::new();
    for (s, c) in plan.steps.iter().zip(calls) {
        if s.op != c.op {
            return Err(format!("{} replayed as {}", s.describe(), c.op.name()));
        }
        let mut made = Vec::new();
        crate::plan::collect(&c.children, &mut made);
        let ops: Vec<Op> = made.iter().map(|m| m.op).collect();
        let want: Vec<Op> = s.inner.iter().map(|&(_, op)| op).collect();
        if ops != want {
            let k = ops
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(ops.len().min(want.len()));
            return Err(format!(
                "{} made {} HDF5 calls where the traced call made {} (first difference at its HDF5 call {k}: {} for {})",
                s.describe(),
                ops.len(),
                want.len(),
                ops.get(k).map_or("nothing", |o| o.name()),
                want.get(k).map_or("nothing", |o| o.name()),
            ));
        }
        steps.extend(s.inner.iter().map(|&(at, _)| at));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Step;

    #[test]
    fn steps_match_calls_by_op_and_values_not_identifiers() {
        let plan = Plan {
            hdf5_version: None,
            steps: vec![
                Step {
                    at: 3,
                    op: Op::H5ScreateSimple,
                    name: None,
                    params: vec![1, 7, 8000, 8000],
                    inner: Vec::new(),
                },
                Step {
                    at: 5,
                    op: Op::H5DsetExtent,
                    name: None,
                    params: vec![2, 1, 24],
                    inner: Vec::new(),
                },
            ],
        };
        let mut call = RawEvent::new(Op::FileOpen, 0, vec![0, 0, 0]);
        call.children = vec![
            RawEvent::new(Op::H5ScreateSimple, 0, vec![1, 2, 8000, 8000]),
            RawEvent::new(Op::H5DsetExtent, 0, vec![0, 1, 24]),
        ];
        assert_eq!(
            match_steps(&plan, std::slice::from_ref(&call)),
            Ok(vec![3, 5])
        );
        call.children[1].params[2] = 8;
        let err = match_steps(&plan, &[call.clone()]).unwrap_err();
        assert!(
            err.contains("HDF5 call 5 (H5Dset_extent) replayed with"),
            "{err}"
        );
        call.children.pop();
        let err = match_steps(&plan, &[call]).unwrap_err();
        assert!(err.contains("1 HDF5 calls for 2 steps"), "{err}");
    }

    #[test]
    fn a_netcdf_replay_stands_for_the_traced_calls_hdf5_calls() {
        let step = |at, op: Op, inner: Vec<(usize, Op)>| Step {
            at,
            op,
            name: None,
            params: vec![0; op.params().len()],
            inner,
        };
        // The traced enddef made HDF5 calls 4 and 5; the read (HDF5 call 6) was left out.
        let plan = Plan {
            hdf5_version: None,
            steps: vec![
                step(2, Op::NcEnddef, vec![(4, Op::H5Awrite), (5, Op::H5Aclose)]),
                step(4, Op::NcClose, vec![(7, Op::H5Fclose)]),
            ],
        };
        let call = |op: Op, kids: &[Op]| {
            let mut e = RawEvent::new(op, 0, vec![0; op.params().len()]);
            e.children = kids
                .iter()
                .map(|&k| RawEvent::new(k, 0, vec![0; k.params().len()]))
                .collect();
            e
        };
        let replay = vec![
            call(Op::NcEnddef, &[Op::H5Awrite, Op::H5Aclose]),
            call(Op::NcClose, &[Op::H5Fclose]),
        ];
        assert_eq!(match_steps(&plan, &replay), Ok(vec![4, 5, 7]));
        // Another HDF5 call than the traced call made.
        let other = vec![
            call(Op::NcEnddef, &[Op::H5Awrite, Op::H5Dclose]),
            call(Op::NcClose, &[Op::H5Fclose]),
        ];
        let err = match_steps(&plan, &other).unwrap_err();
        assert!(
            err.contains("NetCDF call 2 (nc_enddef) made 2 HDF5 calls")
                && err.contains("H5Dclose for H5Aclose"),
            "{err}"
        );
        // An HDF5 call outside the NetCDF calls.
        let mut stray = replay.clone();
        stray.push(RawEvent::new(
            Op::H5Fflush,
            0,
            vec![0; Op::H5Fflush.params().len()],
        ));
        let err = match_steps(&plan, &stray).unwrap_err();
        assert!(err.contains("1 HDF5 calls outside"), "{err}");
    }

    #[test]
    fn launch_finds_the_oracle_next_to_iotrex() {
        let l = Launch::next_to(Path::new("/opt/iotrex/bin/iotrex"));
        assert_eq!(l.oracle, Path::new("/opt/iotrex/bin/iotrex-h5oracle"));
        assert_eq!(l.iotrex, Path::new("/opt/iotrex/bin/iotrex"));
        let plan = Plan {
            hdf5_version: None,
            steps: Vec::new(),
        };
        let dir = std::env::temp_dir().join("h5oracle-never-made");
        let err = run(&plan, &l, &dir).unwrap_err();
        assert!(matches!(err, OracleError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("/opt/iotrex/bin/iotrex"), "{err}");
        assert!(
            !dir.exists(),
            "nothing written before the binaries are found"
        );
    }
}
