//! A Fortran MPI program under the tracer. Open MPI's Fortran bindings call `PMPI_*`
//! directly, so without the tracer's Fortran hooks such a program's trace had no MPI events
//! and no merged file. The trace must be complete, its counts must equal the program's own,
//! and expanding a rank must give back its IOTREX_RAW log.

use crate::common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

/// Builds `tests/apps/<name>.f90` with mpif90 next to the C mini-apps.
fn fortran_app(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("iotrex-apps");
    std::fs::create_dir_all(&dir).expect("create target/iotrex-apps");
    let bin = dir.join(name);
    // Build in a scratch directory: gfortran writes no .mod files for a lone program, but
    // keep the source tree clean whatever the compiler does.
    let tmp = scratch();
    let out = Command::new("mpif90")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(root.join(format!("tests/apps/{name}.f90")))
        .current_dir(tmp.path())
        .output()
        .expect("run mpif90 (Open MPI's Fortran wrapper; gfortran comes with libopenmpi-dev)");
    assert!(
        out.status.success(),
        "mpif90 failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

#[test]
fn fortran_program_is_traced_like_c() {
    let bin = fortran_app("fortran_io");
    for np in [4, 6] {
        let dir = scratch();
        let d = dir.path().to_string_lossy().to_string();
        let run = mpirun(
            np,
            &bin,
            &args(&[&d, "3"]),
            &dir.path().join("fortran.iotrex"),
            &Opts {
                raw: true,
                ..Opts::default()
            },
        );
        assert_counts_match(&run, np);
        for r in [0, np - 1] {
            assert_expand_matches_raw(&run, r);
        }
        // The vector view and the predefined Fortran type are recorded by their constructors'
        // parameters and fixed ids, as from C.
        let tf = run.read();
        let ev = tf.trace.expand(1);
        let vector = ev
            .iter()
            .find(|e| e.op == rsd::Op::TypeVector)
            .expect("MPI_Type_vector recorded");
        assert_eq!(&vector.params[..3], &[1024 / 8, 8, 8 * np as i64]);
        let read = ev
            .iter()
            .find(|e| e.op == rsd::Op::FileReadAt)
            .expect("MPI_File_read_at recorded");
        assert_eq!(read.op.data_bytes(&read.params), 4096, "{:?}", read.params);
        assert_fortran_darray(&tf, np, 1);
    }
}

#[test]
fn newer_calls_from_fortran_are_traced() {
    // Persistent requests, the completion calls (1-based indices back to Fortran), probes,
    // Sendrecv_replace, nonblocking collectives, Alltoallw's type array, a Cartesian
    // sub-communicator's neighbourhood exchange, Comm_create_group and an intercommunicator:
    // their Fortran hooks convert the arguments (the program checks its results) and record
    // each call as the program counts it.
    let bin = fortran_app("fortran_more");
    let np = 4;
    let dir = scratch();
    let run = mpirun(
        np,
        &bin,
        &[],
        &dir.path().join("fortran_more.iotrex"),
        &Opts {
            raw: true,
            ..Opts::default()
        },
    );
    assert_counts_match(&run, np);
    assert_expand_matches_raw(&run, 0);
    // Waitsome records the ids it completed, read from the C indices (0-based), whatever
    // Fortran got back.
    let ev = run.read().trace.expand(1);
    let some = ev
        .iter()
        .filter(|e| e.op == rsd::Op::Waitsome)
        .map(|e| rsd::Op::Waitsome.list(&e.params).len())
        .sum::<usize>();
    assert_eq!(some, 2, "the two persistent requests completed by Waitsome");
}

#[test]
fn mpi_f08_program_is_traced_like_c() {
    // `use mpi_f08`: derived-type handles, optional ierror, strings through Open MPI's
    // `ompi_*_f` functions. Before their hooks, such a program left no trace at all.
    let bin = fortran_app("fortran_f08");
    let np = 4;
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = mpirun(
        np,
        &bin,
        &args(&[&d, "3"]),
        &dir.path().join("fortran_f08.iotrex"),
        &Opts {
            raw: true,
            ..Opts::default()
        },
    );
    assert_counts_match(&run, np);
    assert_expand_matches_raw(&run, np - 1);
    let tf = run.read();
    assert_fortran_darray(&tf, np, 2);
    let ev = tf.trace.expand(1);
    let open = ev
        .iter()
        .find(|e| e.op == rsd::Op::FileOpen)
        .expect("MPI_File_open recorded");
    assert!(
        open.path
            .as_deref()
            .is_some_and(|p| p.ends_with("/fortran_f08.dat")),
        "the file name passed with its hidden length: {:?}",
        open.path
    );
    // The collective writes carry the POSIX calls of the library below them, as from C.
    let w = ev
        .iter()
        .find(|e| e.op == rsd::Op::FileWriteAtAll)
        .expect("MPI_File_write_at_all recorded");
    assert_eq!(w.op.data_bytes(&w.params), 8192);
}

#[test]
fn newer_calls_from_mpi_f08_are_traced() {
    // fortran_more's calls through `use mpi_f08`: Open MPI's f08 procedures reach the hooks of
    // the functions behind its mpif.h binding; the f08 hooks of MPICH's procedures that share
    // their names (`mpi_waitsome_f08_`, ...) must pass them on untouched.
    let bin = fortran_app("fortran_more_f08");
    let np = 4;
    let dir = scratch();
    let run = mpirun(
        np,
        &bin,
        &[],
        &dir.path().join("fortran_more_f08.iotrex"),
        &Opts {
            raw: true,
            ..Opts::default()
        },
    );
    assert_counts_match(&run, np);
    assert_expand_matches_raw(&run, 0);
}

/// fortran_io traced at 4, 8, 12 and 16 ranks extrapolates to 32 identical to a real run, its
/// `MPI_Allgatherv`'s received bytes included: rank r sends 4(r+1) bytes, so every rank
/// receives 2n(n+1), a sum over the ranks that only the quadratic model reproduces (before
/// it, extrap refused it and the user had to `--ignore MPI_Allgatherv.recvbytes`).
#[test]
fn fortran_io_extrapolates_with_its_sum_over_ranks() {
    let bin = fortran_app("fortran_io");
    let dir = scratch();
    let mut traces = Vec::new();
    for np in [4u32, 8, 12, 16, 32] {
        let data = dir.path().join(format!("d{np}"));
        std::fs::create_dir_all(&data).unwrap();
        let trace = dir.path().join(format!("fo.{np}.iotrex"));
        let run = mpirun(
            np,
            &bin,
            &args(&[&data.to_string_lossy(), "3"]),
            &trace,
            &Opts::default(),
        );
        assert!(!run.read().header.incomplete, "{np} ranks");
        traces.push(trace);
    }
    let real = traces.pop().unwrap();
    let x = dir.path().join("fo.x32.iotrex");
    let (t, _) = extrap_explained("fortran_io", &traces, 32, &x);
    assert!(
        t.contains("recvbytes: 2112  [group 0 value = 2*n^2 + 2*n]"),
        "{t}"
    );
    assert_identical("fortran_io", &x, &real);
}
