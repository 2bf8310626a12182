//! The same preload library under MPICH: the mini-apps are built against a private MPICH
//! (unpacked by `scripts/install-mpich.sh`, which `make test` runs) and launched with its
//! Hydra `mpiexec`. The trace must be complete, its counts must equal the apps' own, and
//! expanding a rank must give back its IOTREX_RAW log, exactly as under Open MPI. This is what
//! proves the tracer's MPICH ABI (integer handles, 4-byte request arrays, `MPI_IN_PLACE` = -1).

use crate::common;
use common::mpich::{app as mpich_app, ld_library_path, libdir};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());
static RUN: Mutex<()> = Mutex::new(());

/// Runs `app args` on `np` ranks under MPICH's Hydra with the tracer preloaded (`-genv`, as
/// `iotrex trace` does for MPICH) and the raw logs on.
fn hydra(np: u32, app: &Path, args: &[String], trace: &Path) -> Run {
    let _g = RUN.lock().unwrap_or_else(|p| p.into_inner());
    let bin = common::mpich::hydra();
    let _ = std::fs::remove_file(trace);
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(&bin)
        // No ssh/slurm here: start the ranks as local processes.
        .args(["-launcher", "fork", "-np", &np.to_string()])
        .args(["-genv", "LD_PRELOAD"])
        .arg(tracer_lib())
        .args(["-genv", "IOTREX_OUT"])
        .arg(trace)
        .args(["-genv", "IOTREX_RAW", "1"])
        .arg(app)
        .args(args)
        .env("LD_PRELOAD", "")
        .env("LD_LIBRARY_PATH", ld_library_path())
        .output()
        .expect("run timeout/mpiexec.hydra");
    assert!(
        out.status.success(),
        "mpiexec.hydra -np {np} {} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        app.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        out,
        trace: trace.to_path_buf(),
    }
}

fn check(np: u32, name: &str, a: &[&str], ranks: &[u32]) {
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let a: Vec<String> = a.iter().map(|s| s.replace("{d}", &d)).collect();
    let run = hydra(
        np,
        &mpich_app(name),
        &a,
        &dir.path().join(format!("{name}.iotrex")),
    );
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        !err.contains("tracer disabled"),
        "the tracer refused MPICH:\n{err}"
    );
    assert_counts_match(&run, np);
    for &r in ranks {
        assert_expand_matches_raw(&run, r);
    }
}

#[test]
fn io_sample_under_mpich() {
    check(
        4,
        "io_sample",
        &["{d}", "20", "8192", "3", "131072"],
        &[0, 3],
    );
}

#[test]
fn comm_mix_under_mpich() {
    // Collectives (with MPI_IN_PLACE), a ring, nonblocking exchanges and MPI_Waitall: the
    // calls whose handles and arrays differ most between the two ABIs.
    check(4, "comm_mix", &["{d}", "3", "1000", "4096"], &[0, 1, 3]);
}

#[test]
fn ior_like_collective_under_mpich() {
    check(
        4,
        "ior_like",
        &[
            "-a",
            "mpiio",
            "-c",
            "-t",
            "4096",
            "-b",
            "16384",
            "-s",
            "2",
            "-o",
            "{d}/ior.dat",
        ],
        &[0, 2],
    );
}

#[test]
fn mpi_more_under_mpich() {
    // The rest of the communication API through MPICH's ABI: its status layout (probes), its
    // message and request handles, its topology constants (neighbourhood collectives on a
    // ring, a graph and a distributed graph) and its group translation (member lists), and
    // ROMIO's split collectives and shared pointer seek.
    check(4, "mpi_more", &["3", "{d}"], &[0, 1]);
}

#[test]
fn local_queries_under_mpich() {
    // MPI's local queries through MPICH's ABI: its MPI_PROC_NULL (-1, Open MPI's is -2) at
    // the grid's edge, its error handler constants, its Cartesian queries.
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = hydra(
        4,
        &mpich_app("local_queries"),
        &["2".into(), d],
        &dir.path().join("local_queries.iotrex"),
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 1);
    use rsd::op::Param;
    let tf = run.read();
    let p = |e: &rsd::FlatEvent, q: Param| e.op.param(&e.params, q);
    // A 2x2 grid, periodic in its first dimension only: rank 0 is at (0, 0), its neighbours
    // along the first dimension are rank 2 both ways, along the second none before it and
    // rank 1 after.
    let ev = tf.trace.expand(0);
    let get = ev.iter().find(|e| e.op == rsd::Op::CartGet).unwrap();
    assert_eq!(get.params[3..], [2, 2, 1, 0, 0, 0]);
    let shifts: Vec<(i64, i64)> = ev
        .iter()
        .filter(|e| e.op == rsd::Op::CartShift)
        .map(|e| (p(e, Param::Source), p(e, Param::Dest)))
        .take(2)
        .collect();
    assert_eq!(shifts, [(2, 2), (rsd::mpi::PROC_NULL, 1)]);
    let set = ev
        .iter()
        .find(|e| e.op == rsd::Op::CommSetErrhandler)
        .unwrap();
    assert_eq!(
        p(set, Param::Errhandler),
        rsd::mpi::errhandler::ERRORS_RETURN
    );
}

#[test]
fn groups_under_mpich() {
    check(8, "groups", &["{d}", "4", "3", "8192"], &[0, 4]);
}

#[test]
fn two_runs_identical_under_mpich() {
    // ROMIO inside MPICH: its own files (hints, shared file pointer) must not make two runs of
    // the same program differ. The same directory for both runs: paths are part of the trace.
    let dir = Path::new("/dev/shm").join(format!("iotrex-det-mpich-{}", std::process::id()));
    let d = dir.to_string_lossy().to_string();
    let a: Vec<String> = ["10", "4096", "3", "65536"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let a = [vec![d], a].concat();
    let app = mpich_app("io_sample");
    let flat = |run: &Run| {
        let tf = run.read();
        assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
        (0..tf.header.nranks)
            .map(|r| tf.trace.expand(r))
            .collect::<Vec<_>>()
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create run dir");
        let run = hydra(4, &app, &a, &dir.with_extension("iotrex"));
        runs.push(flat(&run));
    }
    let children: usize = runs[0].iter().flatten().map(|e| e.children.len()).sum();
    assert!(children > 0, "MPI-IO calls have POSIX children under MPICH");
    assert_eq!(runs[0], runs[1], "two runs under MPICH differ");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("iotrex"));
    // IOTREX_RAW's logs beside the trace.
    for r in 0..4 {
        let _ = std::fs::remove_file(dir.with_extension(format!("rank{r}.jsonl")));
    }
}

#[test]
fn large_count_calls_under_mpich() {
    // MPI_File_write_at_all_c, MPI_File_read_at_c, MPI_File_iwrite_at_c: MPI-4 calls with an
    // MPI_Count count, which IOR uses under MPICH 4; missing hooks lose every data call.
    check(4, "large_count", &["{d}", "4", "8192"], &[0, 3]);
}

#[test]
fn comm_create_under_mpich() {
    // Groups and MPICH's integer communicator handles: MPI_Comm_create's split equivalent.
    check(4, "comm_create", &["{d}", "3", "4096"], &[0, 1]);
}

/// Builds `tests/apps/<name>.f90` against MPICH's Fortran bindings (`use mpi` and `use mpi_f08`
/// from its gfortran module directory).
fn mpich_fortran_app(name: &str) -> PathBuf {
    let _g = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fdir = libdir().join("fortran");
    let moddir = std::fs::read_dir(&fdir)
        .unwrap_or_else(|e| panic!("{}: {e}", fdir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path().join("mpich"))
        .find(|p| p.join("mpi.mod").exists() && p.join("mpi_f08.mod").exists())
        .expect("MPICH's Fortran mpi.mod and mpi_f08.mod");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("iotrex-apps-mpich");
    std::fs::create_dir_all(&dir).expect("create target/iotrex-apps-mpich");
    let bin = dir.join(name);
    let tmp = scratch();
    let out = Command::new("gfortran")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(root.join("tests/apps").join(format!("{name}.f90")))
        .arg(format!("-I{}", moddir.display()))
        .arg(format!("-L{}", libdir().display()))
        .arg(format!("-Wl,-rpath,{}", libdir().display()))
        .args(["-lmpichfort", "-lmpich"])
        .current_dir(tmp.path())
        .output()
        .expect("run gfortran");
    assert!(
        out.status.success(),
        "building {name} against MPICH failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

#[test]
fn fortran_under_mpich() {
    // MPICH's Fortran MPI_IN_PLACE and MPI_STATUS_IGNORE are addresses its Fortran MPI_Init
    // publishes; a wrong conversion breaks the program (it checks its reduction), not just
    // the trace.
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = hydra(
        4,
        &mpich_fortran_app("fortran_io"),
        &[d.clone(), "3".into()],
        &dir.path().join("fortran.iotrex"),
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 2);
    // MPICH's Fortran MPI_DISTRIBUTE_* and MPI_ORDER_FORTRAN, recorded as Open MPI's.
    assert_fortran_darray(&run.read(), 4, 2);
}

/// darray.c under MPICH, whose distribution constants differ from Open MPI's (121, 122, 123,
/// -49767): recorded in rsd::mpi's encoding, the file table places every rank's bytes where
/// MPICH's ROMIO put them.
#[test]
fn darray_under_mpich() {
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = hydra(
        4,
        &mpich_app("darray"),
        &[d],
        &dir.path().join("darray.iotrex"),
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 1);
    common::darray::assert_placement_matches_files(&run, dir.path());
}

/// The type maps iotrex derives from recorded darrays are those MPICH builds (its true extent
/// may be wider than the data, see `TrueExtent::Covers`).
#[test]
fn darray_type_maps_are_mpichs() {
    let cases = common::darray::cases();
    let dir = scratch();
    let input = dir.path().join("cases.txt");
    std::fs::write(&input, common::darray::typemap_input(&cases)).unwrap();
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(common::mpich::hydra())
        .args(["-launcher", "fork", "-np", "1"])
        .arg(mpich_app("darray_typemap"))
        .arg(&input)
        .env("LD_PRELOAD", "")
        .env("LD_LIBRARY_PATH", ld_library_path())
        .output()
        .expect("run timeout/mpiexec.hydra");
    assert!(out.status.success(), "{}", status_text(&out));
    let n = common::darray::assert_typemaps_agree(
        &String::from_utf8_lossy(&out.stdout),
        &cases,
        "MPICH",
        common::darray::TrueExtent::Covers,
    );
    assert!(n > 1000, "{n}");
}

#[test]
fn fortran_f08_under_mpich() {
    // `use mpi_f08` under MPICH: its procedures call PMPI_* themselves, so only the f08 hooks
    // see them (before them such a program left no trace). Choice buffers arrive as gfortran
    // descriptors; MPI_IN_PLACE, MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are MPICH's f08
    // objects; the strided sections go through MPICH's own procedures (a datatype built for
    // them). The program checks its reduction, its exchanges and what it reads back.
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = hydra(
        4,
        &mpich_fortran_app("fortran_f08"),
        &[d.clone(), "3".into()],
        &dir.path().join("fortran_f08.iotrex"),
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 1);
    assert_expand_matches_raw(&run, 3);
    let tf = run.read();
    assert_fortran_darray(&tf, 4, 3);
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
    let of = |op: rsd::Op| ev.iter().filter(move |e| e.op == op);
    let p = |e: &rsd::FlatEvent, q: rsd::op::Param| e.op.param(&e.params, q);
    // The strided write (MPICH's procedure, MPI_STATUS_IGNORE) is recorded as the program
    // called it: half the elements, the type of the contiguous writes, the bytes it moved.
    let whole = of(rsd::Op::FileWriteAtAll).next().expect("write_at_all");
    let strided = of(rsd::Op::FileWriteAt).next().expect("strided write_at");
    assert_eq!(p(strided, rsd::op::Param::Count), 512);
    assert_eq!(
        p(strided, rsd::op::Param::Datatype),
        p(whole, rsd::op::Param::Datatype)
    );
    assert_eq!(strided.op.data_bytes(&strided.params), 4096);
    // The strided exchange is the contiguous one with another tag.
    let sr: Vec<_> = of(rsd::Op::Sendrecv).collect();
    assert_eq!(sr.len(), 2);
    for q in [
        rsd::op::Param::Sendcount,
        rsd::op::Param::Sendtype,
        rsd::op::Param::Dest,
        rsd::op::Param::Recvcount,
        rsd::op::Param::Recvtype,
        rsd::op::Param::Source,
    ] {
        assert_eq!(p(sr[0], q), p(sr[1], q), "{q:?}");
    }
    // The f08 procedures the program imports meet their recorded calls; the local queries it
    // also imports are listed as not recorded, in the program's spelling.
    let u = &tf.header.unrecorded_mpi;
    assert!(
        u.iter().any(|n| n == "mpi_get_count_f08_"),
        "unrecorded: {u:?}"
    );
    for recorded in [
        "mpi_comm_rank",
        "mpi_comm_size",
        "mpi_isend",
        "mpi_sendrecv",
        "mpi_file_write_at",
        "mpi_barrier",
        "mpi_wait",
    ] {
        assert!(
            !u.iter().any(|n| n.starts_with(&format!("{recorded}_f08"))),
            "{recorded}'s f08 procedure listed as unrecorded: {u:?}"
        );
    }
}

#[test]
fn fortran_more_f08_under_mpich() {
    // The rest of the f08 hooks under MPICH: status arrays and MPI_STATUSES_IGNORE, LOGICAL
    // flags, 1-based indices, persistent requests, probes, Alltoallw's type array, topologies,
    // intercommunicators. The program checks every result.
    let dir = scratch();
    let run = hydra(
        4,
        &mpich_fortran_app("fortran_more_f08"),
        &[],
        &dir.path().join("fortran_more_f08.iotrex"),
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 0);
    assert_expand_matches_raw(&run, 1);
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
