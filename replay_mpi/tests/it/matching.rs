//! `--comm real` checks that a trace's messages match before it issues anything: a real
//! mini-app trace passes, and the same trace with one send removed is refused, in both
//! runtimes, before any file is written; `--comm delay` still replays it. A trace of every
//! send mode replays with real communication in both runtimes.

use crate::common;

use common::{app_setup, trace_app};
use rsd::Op;
use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};
use std::path::Path;
use std::process::{Command, Output};

/// Removes the first `MPI_Send` event (every rank that runs it loses that send).
fn remove_first_send(nodes: &mut Vec<Node>) -> bool {
    if let Some(i) = nodes
        .iter()
        .position(|n| matches!(&n.kind, NodeKind::Event(e) if e.op == Op::Send))
    {
        nodes.remove(i);
        return true;
    }
    nodes.iter_mut().any(|n| match &mut n.kind {
        NodeKind::Loop(l) => remove_first_send(&mut l.body),
        NodeKind::Event(_) => false,
    })
}

/// `iotrex-replay TRACE --root ROOT --comm COMM` (no `--comm` when COMM is empty), under
/// `mpirun -np 4` or `--threads`.
fn replay(trace: &Path, root: &Path, mpi: bool, comm: &str) -> Output {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let bin = env!("CARGO_BIN_EXE_iotrex-replay");
    let mut c = Command::new("timeout");
    c.arg("120");
    if mpi {
        c.args(["mpirun", "-np", "4", bin]);
    } else {
        c.arg(bin);
    }
    c.arg(trace).args(["--root", root.to_str().unwrap()]);
    if !comm.is_empty() {
        c.args(["--comm", comm]);
    }
    if !mpi {
        c.arg("--threads");
    }
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .unwrap()
}

fn files_under(root: &Path) -> usize {
    std::fs::read_dir(root).map_or(0, |d| d.count())
}

#[test]
fn a_send_removed_from_a_real_trace_is_refused_before_any_io() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("comm_mix", t.path()) else {
        return;
    };
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let trace = t.path().join("comm_mix.4.iotrex");
    trace_app(
        4,
        &tracer,
        &app,
        &[out.to_str().unwrap(), "3", "100", "8192"],
        &trace,
    );
    let root = t.path().join("root");

    // The real trace matches: a real replay runs, and writes the app's files.
    let o = replay(&trace, &root, false, "real");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(files_under(&root) > 0);

    let mut tf = TraceFile::read(&trace).unwrap();
    assert!(remove_first_send(&mut tf.trace.nodes), "comm_mix sends");
    let broken = t.path().join("broken.iotrex");
    tf.write(&broken).unwrap();
    for mpi in [false, true] {
        let o = replay(&broken, &root, mpi, "real");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "mpi={mpi}: {err}");
        assert!(err.contains("--comm real: rank "), "mpi={mpi}: {err}");
        // comm_mix sends on a duplicate of the world, which the check rebuilt.
        assert!(
            err.contains("from rank 0 with tag 7 on a communicator of 4 ranks"),
            "mpi={mpi}: {err}"
        );
        assert!(err.contains("replay with --comm delay"), "mpi={mpi}: {err}");
        // Refused before anything was issued: the root is as empty as it was made.
        assert_eq!(
            files_under(&root),
            0,
            "mpi={mpi}: the refused replay wrote files"
        );
    }
    // As delays, the same trace replays.
    let o = replay(&broken, &root, false, "delay");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Without --comm (real by default), it replays as delays too, saying why, on every rank
    // under MPI; the real trace is issued for real.
    for mpi in [false, true] {
        let o = replay(&broken, &root, mpi, "");
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "mpi={mpi}: {err}");
        assert!(
            err.contains("note: MPI calls are replayed as their traced durations (--comm delay)")
                && err.contains("from rank 0 with tag 7"),
            "mpi={mpi}: {err}"
        );
        assert!(out.contains("--comm delay)"), "mpi={mpi}: {out}");
        let o = replay(&trace, &root, mpi, "");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "mpi={mpi}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.contains("--comm real)"), "mpi={mpi}: {out}");
    }
}

#[test]
fn every_send_mode_replays_with_real_communication() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("p2p_modes", t.path()) else {
        return;
    };
    let trace = t.path().join("p2p_modes.4.iotrex");
    trace_app(4, &tracer, &app, &["2"], &trace);
    let root = t.path().join("root");
    for mpi in [false, true] {
        let o = replay(&trace, &root, mpi, "real");
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "mpi={mpi}: {out}\n{err}");
        assert!(
            out.contains("op counts and bytes equal the trace's"),
            "mpi={mpi}: {out}"
        );
        for op in [
            "MPI_Rsend",
            "MPI_Issend",
            "MPI_Waitany",
            "MPI_Exscan",
            "MPI_Comm_free",
        ] {
            assert!(out.contains(op), "mpi={mpi}: {op} not in the report\n{out}");
        }
    }
}

/// `--comm real` names the MPI functions the traced program imports that the trace does not
/// record (the header's list), in both runtimes; `--comm delay` does not.
#[test]
fn comm_real_warns_of_unrecorded_mpi_functions() {
    let d = tempfile::tempdir().unwrap();
    let mut tf = common::build(2, |_| {
        vec![
            rsd::trace::RawEvent::new(rsd::Op::Init, 1, vec![]),
            rsd::trace::RawEvent::new(rsd::Op::Finalize, 2, vec![]),
        ]
    });
    tf.header.unrecorded_mpi = vec!["MPI_Rsend".into(), "MPI_Scan".into()];
    let t = d.path().join("u.iotrex");
    tf.write(&t).unwrap();
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let want = "imports 2 MPI functions iotrex does not record, so what they did is not replayed: MPI_Rsend, MPI_Scan";
    let mut runs: Vec<Vec<String>> = vec![vec![
        env!("CARGO_BIN_EXE_iotrex-replay").into(),
        "--threads".into(),
    ]];
    if common::have_mpirun() {
        runs.push(vec![
            "mpirun".into(),
            "-np".into(),
            "2".into(),
            env!("CARGO_BIN_EXE_iotrex-replay").into(),
        ]);
    }
    for how in runs {
        for (comm, warned) in [("real", true), ("delay", false)] {
            let out = std::process::Command::new("timeout")
                .arg("100")
                .args(&how)
                .arg(&t)
                .args(["--comm", comm, "--root"])
                .arg(&root)
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{how:?} --comm {comm}: {err}");
            assert_eq!(err.contains(want), warned, "{how:?} --comm {comm}: {err}");
            // Said once, by rank 0 alone under mpirun.
            assert!(err.matches(want).count() <= 1, "{err}");
        }
    }
}
