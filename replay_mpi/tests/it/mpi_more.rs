//! The mini-app `tests/apps/mpi_more.c` calls every function of the rest of the MPI
//! communication API (persistent requests, probes, matched receives, the test calls, cancel,
//! Sendrecv_replace, buffers, Alltoallw, the nonblocking and neighbourhood collectives, the
//! topology, group and intercommunicator creations) and checks its own results. Traced on 4
//! ranks, the trace must hold each rank's calls exactly as the app counted them, none of them
//! listed as unrecorded, and replay with `--comm real` under `mpirun` and with `--threads` with
//! every op's count equal to the trace's.
//!
//! This needs the tracer's hooks for these calls: without them the counts differ and the test
//! fails (it does not skip). It skips, saying so, only where the tracer library, mpirun or
//! mpicc are missing.

use crate::common;

use common::{app_setup, ops_of};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const NP: u32 = 4;

/// (rank, op) -> calls, from the app's "COUNT <rank> <op> <calls> <bytes>" lines.
fn app_counts(stdout: &str) -> BTreeMap<(u32, String), u64> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["COUNT", r, op, calls, _] => {
                    Some(((r.parse().ok()?, op.to_string()), calls.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

fn env(c: &mut Command) -> &mut Command {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
}

#[test]
fn mpi_more_is_traced_call_by_call_and_replays_with_real_communication() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("mpi_more", t.path()) else {
        return;
    };
    let trace = t.path().join("mpi_more.4.iotrex");
    let out = env(Command::new("timeout")
        .args(["-k", "5", "120", "mpirun", "-np"])
        .arg(NP.to_string())
        .args(["-x", &format!("LD_PRELOAD={}", tracer.display())])
        .args(["-x", &format!("IOTREX_OUT={}", trace.display())])
        .arg(&app)
        .arg("3")
        // The split collectives and MPI_File_seek_shared, on a file in this directory.
        .arg(t.path()))
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && trace.exists(),
        "traced run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = app_counts(&stdout);
    assert_eq!(
        want.keys()
            .map(|(r, _)| *r)
            .collect::<std::collections::BTreeSet<_>>(),
        (0..NP).collect(),
        "every rank prints its counts:\n{stdout}"
    );
    // At least the 70 functions the app calls on an odd rank.
    assert!(
        want.keys().filter(|(r, _)| *r == 1).count() >= 70,
        "{want:?}"
    );

    let tf = rsd::TraceFile::read(&trace).unwrap();
    // None of the functions the app calls is left unrecorded.
    let called: std::collections::BTreeSet<&str> = want.keys().map(|(_, op)| op.as_str()).collect();
    let unrecorded: Vec<&String> = tf
        .header
        .unrecorded_mpi
        .iter()
        .filter(|f| called.contains(f.as_str()))
        .collect();
    assert!(
        unrecorded.is_empty(),
        "the tracer lists these as unrecorded: {unrecorded:?}"
    );
    // The trace's calls, rank by rank and op by op, are the app's.
    let mut got: BTreeMap<(u32, String), u64> = BTreeMap::new();
    for r in 0..NP {
        for e in tf.trace.expand(r) {
            *got.entry((r, e.op.name().to_string())).or_default() += 1;
        }
    }
    let diff: Vec<String> = want
        .keys()
        .chain(got.keys())
        .collect::<std::collections::BTreeSet<_>>()
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

    // Replayed with real communication in both runtimes, with the trace's counts.
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for ((_, op), n) in &got {
        *totals.entry(op.clone()).or_default() += n;
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
}

fn replay(trace: &Path, root: &Path, json: &Path, mpi: bool) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_iotrex-replay");
    let mut c = Command::new("timeout");
    c.arg("120");
    if mpi {
        c.args(["mpirun", "-np", &NP.to_string(), bin]);
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
