//! The mini-app `tests/apps/local_queries.c` asks MPI's local queries on a Cartesian grid
//! (MPI_Comm_rank, MPI_Comm_size, MPI_Cart_get, MPI_Cart_shift, MPI_Cart_rank,
//! MPI_Get_processor_name, MPI_Finalized, MPI_Comm_set_errhandler), checks MPI's answers and
//! prints them. Traced on 4, 8 and 16 ranks:
//! - each rank's calls are the app's own counts, op by op, and none is listed as unrecorded;
//! - every recorded value is what MPI answered the app (its ranks, the grid's dims, periods
//!   and coords, the shifted neighbours decoded from their relative form, MPI_PROC_NULL
//!   included, the processor name's length, the handler set);
//! - the trace keeps its size across the three scales (the queries compress across ranks);
//! - `iotrex-replay` replays the 4-rank trace with real communication under `mpirun` and with
//!   `--threads`, with the trace's counts, and the CODES export takes it in both formats.
//!
//! It needs the tracer's hooks for these calls: without them the counts differ and the test
//! fails. It skips, saying so, only where the tracer library, mpirun or mpicc are missing.

use crate::common;

use common::{app_setup, ops_of};
use rsd::mpi::{COMM_WORLD, Peer, decode_peer, errhandler};
use rsd::op::{Op, Param};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn env(c: &mut Command) -> &mut Command {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
}

/// (rank, op) -> calls, from the app's "COUNT <rank> <op> <calls> <bytes>" lines.
fn app_counts(stdout: &str) -> BTreeMap<(u32, String), u64> {
    stdout
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["COUNT", r, op, calls, _] => {
                    Some(((r.parse().ok()?, op.to_string()), calls.parse().ok()?))
                }
                _ => None,
            },
        )
        .collect()
}

/// What MPI answered each rank the last time round, from the app's "LOCAL" lines.
#[derive(Debug)]
struct Answers {
    grank: i64,
    gsize: i64,
    dims: [i64; 2],
    periods: [i64; 2],
    coords: [i64; 2],
    /// (source, dest) of the shift in each dimension; -1 for MPI_PROC_NULL.
    shifts: [(i64, i64); 2],
    cart_rank: i64,
    name_len: i64,
}

fn answers(stdout: &str) -> BTreeMap<u32, Answers> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<i64> = l
                .strip_prefix("LOCAL ")?
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            (f.len() == 15).then(|| {
                (
                    f[0] as u32,
                    Answers {
                        grank: f[1],
                        gsize: f[2],
                        dims: [f[3], f[4]],
                        periods: [f[5], f[6]],
                        coords: [f[7], f[8]],
                        shifts: [(f[9], f[10]), (f[11], f[12])],
                        cart_rank: f[13],
                        name_len: f[14],
                    },
                )
            })
        })
        .collect()
}

const ITERS: &str = "4";

/// Traces the app on `np` ranks into `dir`; gives the trace's path and the app's stdout.
fn traced(np: u32, tracer: &Path, app: &Path, dir: &Path) -> (std::path::PathBuf, String) {
    let trace = dir.join(format!("local.{np}.iotrex"));
    let data = dir.join(format!("data{np}"));
    std::fs::create_dir_all(&data).unwrap();
    let out = env(Command::new("timeout")
        .args(["-k", "5", "120", "mpirun", "-np"])
        .arg(np.to_string())
        .args(["-x", &format!("LD_PRELOAD={}", tracer.display())])
        .args(["-x", &format!("IOTREX_OUT={}", trace.display())])
        .arg(app)
        .arg(ITERS)
        .arg(&data))
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && trace.exists(),
        "traced run on {np} ranks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (trace, stdout)
}

/// The checks of one scale: counts, unrecorded functions, recorded values.
fn check(np: u32, tf: &rsd::TraceFile, stdout: &str) {
    let want = app_counts(stdout);
    let ans = answers(stdout);
    assert_eq!(
        ans.keys().copied().collect::<BTreeSet<u32>>(),
        (0..np).collect(),
        "every rank prints its answers:\n{stdout}"
    );
    let called: BTreeSet<&str> = want.keys().map(|(_, op)| op.as_str()).collect();
    for op in [
        Op::CommRank,
        Op::CommSize,
        Op::CartGet,
        Op::CartRank,
        Op::CartShift,
        Op::GetProcessorName,
        Op::Finalized,
        Op::CommSetErrhandler,
    ] {
        assert!(called.contains(op.name()), "{}: {want:?}", op.name());
    }
    let unrecorded: Vec<&String> = tf
        .header
        .unrecorded_mpi
        .iter()
        .filter(|f| called.contains(f.as_str()))
        .collect();
    assert!(
        unrecorded.is_empty(),
        "listed as unrecorded: {unrecorded:?}"
    );

    let mut got: BTreeMap<(u32, String), u64> = BTreeMap::new();
    for r in 0..np {
        let events = tf.trace.expand(r);
        for e in &events {
            *got.entry((r, e.op.name().to_string())).or_default() += 1;
        }
        let a = &ans[&r];
        let me = i64::from(r);
        // The grid: the communicator MPI_Cart_create made.
        let grid = events
            .iter()
            .find(|e| e.op == Op::CartCreate)
            .map(|e| e.p(Param::Newcomm))
            .expect("MPI_Cart_create recorded");
        assert!(grid > COMM_WORLD + 1, "rank {r}: grid id {grid}");
        let of = |op: Op| events.iter().filter(move |e| e.op == op);
        // app_init's on the world, then the grid's, which repeat the world's answers.
        let ranks: Vec<(i64, i64)> = of(Op::CommRank)
            .map(|e| (e.p(Param::Comm), e.p(Param::Rank)))
            .collect();
        assert_eq!(ranks[0], (COMM_WORLD, me), "rank {r}");
        assert!(
            ranks[1..].iter().all(|x| *x == (grid, a.grank)),
            "rank {r}: {ranks:?}"
        );
        let sizes: Vec<(i64, i64)> = of(Op::CommSize)
            .map(|e| (e.p(Param::Comm), e.p(Param::Size)))
            .collect();
        assert_eq!(sizes[0], (COMM_WORLD, i64::from(np)), "rank {r}");
        assert!(
            sizes[1..].iter().all(|x| *x == (grid, a.gsize)),
            "rank {r}: {sizes:?}"
        );
        for e in of(Op::CartGet) {
            assert_eq!(
                (e.p(Param::Comm), e.p(Param::Maxdims), e.p(Param::Ndims)),
                (grid, 2, 2),
                "rank {r}"
            );
            let arrays = &e.params[Op::CartGet.params().len()..];
            let want: Vec<i64> = [a.dims, a.periods, a.coords].concat();
            assert_eq!(arrays, want, "rank {r}: Cart_get");
        }
        // Shifts alternate between the two dimensions.
        for (k, e) in of(Op::CartShift).enumerate() {
            let d = k % 2;
            assert_eq!(
                (e.p(Param::Comm), e.p(Param::Direction), e.p(Param::Disp)),
                (grid, d as i64, 1),
                "rank {r}"
            );
            let real = |stored: i64| match decode_peer(stored, a.grank) {
                Peer::Rank(x) => x,
                Peer::Null => -1,
                Peer::Any => panic!("rank {r}: a shift gave MPI_ANY_SOURCE"),
            };
            assert_eq!(
                (real(e.p(Param::Source)), real(e.p(Param::Dest))),
                a.shifts[d],
                "rank {r}: Cart_shift {d}"
            );
        }
        // The grid's second dimension is not periodic: its edges have no neighbour.
        if a.coords[1] == 0 {
            assert_eq!(a.shifts[1].0, -1, "rank {r}");
        }
        for e in of(Op::CartRank) {
            assert_eq!(
                (e.p(Param::Comm), e.p(Param::Ndims), e.p(Param::Rank)),
                (grid, 2, a.cart_rank),
                "rank {r}"
            );
            let coords = &e.params[Op::CartRank.params().len()..];
            assert_eq!(
                coords,
                [(a.coords[0] + 1) % a.dims[0], a.coords[1]],
                "rank {r}: Cart_rank's coords"
            );
        }
        assert!(a.name_len > 0);
        assert!(
            of(Op::GetProcessorName).all(|e| e.p(Param::Length) == a.name_len),
            "rank {r}"
        );
        // Only the calls before MPI_Finalize, which said 0.
        assert!(of(Op::Finalized).all(|e| e.p(Param::Flag) == 0), "rank {r}");
        let handlers: Vec<(i64, i64)> = of(Op::CommSetErrhandler)
            .map(|e| (e.p(Param::Comm), e.p(Param::Errhandler)))
            .collect();
        assert_eq!(handlers, [(grid, errhandler::ERRORS_RETURN)], "rank {r}");
    }
    let diff: Vec<String> = want
        .keys()
        .chain(got.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| want.get(k) != got.get(k))
        .map(|k| {
            format!(
                "rank {} {}: app {:?}, trace {:?}",
                k.0,
                k.1,
                want.get(k),
                got.get(k)
            )
        })
        .collect();
    assert!(
        diff.is_empty(),
        "trace and app disagree:\n{}",
        diff.join("\n")
    );
}

#[test]
fn local_queries_are_traced_with_their_answers_and_replay() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("local_queries", t.path()) else {
        return;
    };
    let mut sizes = Vec::new();
    let mut four = None;
    for np in [4, 8, 16] {
        let (trace, stdout) = traced(np, &tracer, &app, t.path());
        let tf = rsd::TraceFile::read(&trace).unwrap();
        assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
        check(np, &tf, &stdout);
        sizes.push((np, std::fs::metadata(&trace).unwrap().len()));
        if np == 4 {
            four = Some((trace, tf));
        }
    }
    // The ranks' queries fold into one structure whatever the scale: the trace grows by no
    // more than its rank-dependent values (coords, edges) need.
    let (lo, hi) = (
        sizes.iter().map(|s| s.1).min().unwrap(),
        sizes.iter().map(|s| s.1).max().unwrap(),
    );
    eprintln!("local_queries trace sizes: {sizes:?}");
    assert!(hi * 100 <= lo * 115, "trace sizes {sizes:?}");

    let (trace, tf) = four.unwrap();
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for r in 0..4 {
        for e in tf.trace.expand(r) {
            *totals.entry(e.op.name().to_string()).or_default() += 1;
        }
    }
    for mpi in [false, true] {
        let root = t.path().join(format!("root{mpi}"));
        std::fs::create_dir_all(&root).unwrap();
        let json = t.path().join(format!("r{mpi}.json"));
        let o = replay(&trace, &root, &json, mpi);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "mpi={mpi}: {out}\n{err}");
        assert!(
            out.contains("op counts and bytes equal the trace's"),
            "mpi={mpi}: {out}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let replayed: BTreeMap<String, u64> =
            ops_of(&j).into_iter().map(|(op, n, _)| (op, n)).collect();
        for (op, n) in &totals {
            assert_eq!(replayed.get(op), Some(n), "mpi={mpi}: {op}: {replayed:?}");
        }
    }

    // The CODES export: one open and one close per rank, the ranks' bytes written through
    // the MPI-IO calls' POSIX children, the queries' time kept as delays.
    let s = rsd_view::stats::summarize(&tf.trace);
    let posix = |ops: &[Op]| -> (u64, u64) {
        ops.iter().fold((0, 0), |acc, op| {
            let t = s.ops.get(&(op.layer(), *op)).cloned().unwrap_or_default();
            (acc.0 + t.count, acc.1 + t.bytes)
        })
    };
    let writes = posix(&[Op::Write, Op::Pwrite, Op::Writev, Op::Pwritev]);
    let app_bytes = s
        .ops
        .get(&(Op::FileWriteAtAll.layer(), Op::FileWriteAtAll))
        .map_or(0, |t| t.bytes);
    assert_eq!(app_bytes, 4 * 4 * 1024, "the app's blocks");
    assert!(
        writes.1 >= app_bytes,
        "{writes:?}: the app's bytes reach the file"
    );
    for format in [codes_bridge::Format::Iolang, codes_bridge::Format::Recorder] {
        let d = t.path().join(format!("codes-{format:?}"));
        let opts = codes_bridge::ExportOptions {
            format,
            max_blocksize: None,
            force: false,
            nranks_check: false,
        };
        let rep =
            codes_bridge::export(&tf, &d, &opts).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert!(rep.counts.delay_ns > 0, "{format:?}");
        let got = codes_bridge::codes_stats(&d, format).unwrap();
        assert_eq!(got.ranks, 4, "{format:?}");
        assert_eq!(got.num_barriers, 0, "{format:?}: no query is a barrier");
        assert_eq!(
            (got.num_writes, got.write_size),
            writes,
            "{format:?}: {got:?}"
        );
    }
}

fn replay(trace: &Path, root: &Path, json: &Path, mpi: bool) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_iotrex-replay");
    let mut c = Command::new("timeout");
    c.arg("120");
    if mpi {
        c.args(["mpirun", "-np", "4", bin]);
    } else {
        c.args([bin, "--threads"]);
    }
    env(c
        .arg(trace)
        .args(["--comm", "real", "--stall-timeout", "30", "--root"])
        .arg(root)
        .arg("--json")
        .arg(json))
    .output()
    .unwrap()
}
