//! End-to-end invariants of the tracer under a real `mpirun`:
//! - two runs of the same program give identical traces apart from timing, under OMPIO and
//!   under ROMIO (the MPI library's own files, in its session directory, are normalised);
//! - the trace size does not grow with the rank count (4 -> 16) or the iteration count
//!   (10 -> 1000), within 10%;
//! - a serial (non-MPI) program writes its trace at exit;
//! - a rank that exits without `MPI_Finalize`, or is killed by SIGTERM, leaves its own file.
//!
//! Needs `cargo build --release -p tracer` first.

use crate::common;
use common::*;
use rsd::TraceFile;
use std::path::Path;

/// Every rank's expansion (all parameters, paths, children, call sites; no timing).
fn flat(tf: &TraceFile) -> Vec<Vec<rsd::FlatEvent>> {
    (0..tf.header.nranks).map(|r| tf.trace.expand(r)).collect()
}

fn run_in(dir: &Path, np: u32, name: &str, a: &[&str], io: Option<&str>) -> Run {
    // The same directory for both runs: the application's paths are part of the trace.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("create run dir");
    let d = dir.to_string_lossy().to_string();
    let a: Vec<String> = a.iter().map(|s| s.replace("{d}", &d)).collect();
    let trace = dir.with_extension("iotrex");
    mpirun(
        np,
        &app(name),
        &a,
        &trace,
        &Opts {
            io,
            ..Opts::default()
        },
    )
}

fn deterministic(io: &str) {
    let dir = Path::new("/dev/shm").join(format!("iotrex-det-{io}-{}", std::process::id()));
    let a = ["{d}", "10", "4096", "3", "65536"];
    let r1 = run_in(&dir, 4, "io_sample", &a, Some(io));
    let t1 = r1.read();
    let r2 = run_in(&dir, 4, "io_sample", &a, Some(io));
    let t2 = r2.read();
    assert!(!t1.header.incomplete && !t2.header.incomplete);
    // MPI-IO calls made POSIX children, so the comparison covers the library's own files.
    let children: usize = flat(&t1).iter().flatten().map(|e| e.children.len()).sum();
    assert!(children > 0, "{io}: MPI-IO calls have POSIX children");
    let (f1, f2) = (flat(&t1), flat(&t2));
    for r in 0..4 {
        assert_eq!(f1[r].len(), f2[r].len(), "{io}: rank {r} event count");
        for (i, (a, b)) in f1[r].iter().zip(&f2[r]).enumerate() {
            assert_eq!(a, b, "{io}: rank {r} event {i} differs between two runs");
        }
    }
    let (s1, s2) = (
        rsd_view::stats::summarize(&t1.trace),
        rsd_view::stats::summarize(&t2.trace),
    );
    assert_eq!(s1.nodes, s2.nodes, "{io}: compressed structure differs");
    assert_eq!(s1.files, s2.files, "{io}: files differ");
    assert!(
        s1.files.iter().all(|f| !f.contains("pid.")),
        "{io}: session paths normalised: {:?}",
        s1.files
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("iotrex"));
}

#[test]
fn two_runs_identical_under_ompio() {
    deterministic("ompio");
}

#[test]
fn two_runs_identical_under_romio() {
    deterministic("romio321");
}

fn size_of(np: u32, name: &str, a: &[&str], tag: &str) -> u64 {
    let dir = Path::new("/dev/shm").join(format!("iotrex-size-{tag}-{}", std::process::id()));
    let run = run_in(&dir, np, name, a, None);
    let tf = run.read();
    assert!(!tf.header.incomplete);
    assert_eq!(tf.header.nranks, np);
    let size = std::fs::metadata(&run.trace).expect("trace").len();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&run.trace);
    size
}

fn within(a: u64, b: u64, what: &str) {
    let ratio = b as f64 / a as f64;
    eprintln!("{what}: {a} -> {b} bytes (x{ratio:.3})");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: trace size {a} -> {b} bytes (x{ratio:.3}), not within 10%"
    );
}

#[test]
fn size_constant_in_ranks() {
    let posix = [
        "-a", "posix", "-t", "4096", "-b", "16384", "-s", "4", "-R", "-o", "{d}/f",
    ];
    within(
        size_of(4, "ior_like", &posix, "p4"),
        size_of(16, "ior_like", &posix, "p16"),
        "ior_like POSIX shared, 4 -> 16 ranks",
    );
    let fpp = [
        "-a", "posix", "-F", "-t", "4096", "-b", "16384", "-s", "4", "-R", "-o", "{d}/f",
    ];
    within(
        size_of(4, "ior_like", &fpp, "f4"),
        size_of(16, "ior_like", &fpp, "f16"),
        "ior_like POSIX file per process, 4 -> 16 ranks",
    );
}

#[test]
fn size_constant_in_iterations() {
    let a10 = ["{d}", "10", "4096", "2", "4096"];
    let a1000 = ["{d}", "1000", "4096", "2", "4096"];
    within(
        size_of(4, "io_sample", &a10, "i10"),
        size_of(4, "io_sample", &a1000, "i1000"),
        "io_sample, 10 -> 1000 iterations",
    );
}

#[test]
fn serial_program_writes_at_exit() {
    // A program with no MPI at all, run without mpirun: the trace is written at exit.
    let dir = scratch();
    let src = dir.path().join("serial.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[512] = {0};
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 50; i++) pwrite(fd, buf, sizeof buf, (off_t)i * 512);
    close(fd);
    /* A forked child's I/O is traced as a process of its own in the parent's trace
       (docs/processes.md), and the child writes no trace of its own at exit. */
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(argv[1], O_WRONLY);
        for (int i = 0; i < 7; i++) pwrite(cfd, buf, sizeof buf, 0);
        close(cfd);
        exit(0);
    }
    waitpid(pid, NULL, 0);
    FILE *f = fopen(argv[2], "w");
    for (int i = 0; i < 20; i++) fprintf(f, "line %d\n", i);
    fclose(f);
    return 0;
}
"#,
    )
    .unwrap();
    let bin = dir.path().join("serial");
    let st = std::process::Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(st.success());
    let trace = dir.path().join("serial.iotrex");
    // Only the program is preloaded (through `env`), not `timeout`; the tracer also refuses
    // to overwrite a trace from a process that recorded nothing, such as a wrapper.
    let out = std::process::Command::new("timeout")
        .arg("30")
        .arg("env")
        .arg(format!("LD_PRELOAD={}", tracer_lib().display()))
        .arg(&bin)
        .arg(dir.path().join("data"))
        .arg(dir.path().join("log.txt"))
        .env("IOTREX_OUT", &trace)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .output()
        .expect("run serial program");
    assert!(out.status.success(), "{out:?}");
    let tf = TraceFile::read(&trace).expect("serial trace");
    assert_eq!(tf.header.nranks, 1);
    assert!(!tf.header.incomplete);
    let c = trace_counts(&tf);
    assert_eq!(
        c["pwrite"],
        (57, 57 * 512),
        "the program's 50 and its child's 7"
    );
    assert_eq!(c["open"].0, 2);
    assert_eq!(c["close"].0, 2);
    let p = tf.header.processes.as_ref().expect("the child is listed");
    assert_eq!(p.children(), 1);
    assert_eq!(p.groups[0].end, rsd::process::End::Exit(Some(0)));
    let own = tf.trace.expand(0);
    assert_eq!(own.iter().filter(|e| e.op == rsd::Op::Pwrite).count(), 50);
    assert_eq!(c["fopen"].0, 1);
    assert_eq!(c["fprintf"].0, 20);
    assert_eq!(c["fclose"].0, 1);
    let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
    assert_eq!(
        log.lines().count(),
        20,
        "the program's own output is intact"
    );
    // 50 pwrites fold into one loop: the trace stays small.
    assert!(rsd_view::stats::summarize(&tf.trace).nodes < 16);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        files.len(),
        5,
        "no trace of the child's, no spool left: {files:?}"
    );
}

#[test]
fn exit_without_finalize_leaves_per_rank_files() {
    let dir = scratch();
    let trace = dir.path().join("early.4.iotrex");
    let run = mpirun_any(
        4,
        &app("early_exit"),
        &args(&[&dir.path().to_string_lossy(), "10"]),
        &trace,
        &Opts::default(),
    );
    // Open MPI reports the missing MPI_Finalize with a failure status; what matters is that
    // it did not hang (the timeout would give 124) and that every rank left its calls.
    assert_ne!(run.out.status.code(), Some(124), "mpirun hung");
    assert!(!trace.exists(), "no merged trace without MPI_Finalize");
    // mpirun kills the other ranks (SIGTERM) once one exits without MPI_Finalize; a rank
    // killed then writes from the tracer's signal handler, unless the signal came while its
    // trace state was busy (it then says so and writes nothing rather than block). The first
    // rank to exit is never killed, so at least one file must exist, and every file that
    // exists must be a complete record of its rank.
    let mut found = 0;
    for r in 0..4 {
        let p = dir.path().join(format!("early.4.rank{r}.iotrex"));
        if !p.exists() {
            continue;
        }
        found += 1;
        let tf = TraceFile::read(&p).unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(tf.header.incomplete, "rank {r}: flagged incomplete");
        assert!(
            tf.header
                .notes
                .iter()
                .any(|n| n.contains("without MPI_Finalize")),
            "{:?}",
            tf.header.notes
        );
        assert_eq!(tf.trace.ranks().to_vec(), vec![r]);
        let c = trace_counts(&tf);
        assert_eq!(c["pwrite"], (10, 10 * 1024), "rank {r}");
        // A rank killed while still inside the barrier (the others left it first) has that
        // call in flight, which is not recorded; one that exited has it.
        let barriers = c.get("MPI_Barrier").map_or(0, |x| x.0);
        if tf
            .header
            .notes
            .iter()
            .any(|n| n.contains("killed by signal"))
        {
            assert!(barriers <= 1, "rank {r}: {barriers} barriers");
        } else {
            assert_eq!(barriers, 1, "rank {r}");
        }
    }
    assert!(found >= 1, "no rank left its calls: {}", run.stdout());
}

#[test]
fn rank_killed_by_sigterm_leaves_its_calls() {
    let dir = scratch();
    let trace = dir.path().join("killed.4.iotrex");
    let run = mpirun_any(
        4,
        &app("early_exit"),
        &args(&[&dir.path().to_string_lossy(), "10", "term"]),
        &trace,
        &Opts {
            // mpirun follows its SIGTERM with SIGKILL after odls_base_sigkill_timeout (1 s).
            // With 4 ranks busy-polling a barrier on this 2-core machine, a rank is sometimes
            // not even scheduled into its handler within that second, and SIGKILL cannot be
            // handled. 5 s keeps the test about the handler, not the scheduler.
            env: vec![("OMPI_MCA_odls_base_sigkill_timeout", "5".to_string())],
            ..Opts::default()
        },
    );
    let err = String::from_utf8_lossy(&run.out.stderr).into_owned();
    assert_ne!(run.out.status.code(), Some(124), "mpirun hung");
    // The signal still kills the rank: the handler re-raises it with the default action.
    assert!(
        err.contains("exited on signal 15"),
        "mpirun should report rank 3 killed by SIGTERM: {err}"
    );
    assert!(!run.stdout().contains("still alive"), "{}", run.stdout());
    assert!(!trace.exists(), "no merged trace without MPI_Finalize");
    // Rank 3 raised SIGTERM itself; mpirun then sent SIGTERM to the others, blocked in a
    // barrier that rank 3 never reached. Every rank must have left its calls.
    for r in 0..4u32 {
        let p = dir.path().join(format!("killed.4.rank{r}.iotrex"));
        let tf = TraceFile::read(&p).unwrap_or_else(|e| panic!("rank {r}: {e}\n{err}"));
        assert!(tf.header.incomplete, "rank {r}: flagged incomplete");
        assert!(
            tf.header
                .notes
                .iter()
                .any(|n| n.contains("killed by signal 15 (SIGTERM) without MPI_Finalize")),
            "rank {r}: {:?}",
            tf.header.notes
        );
        assert_eq!(tf.trace.ranks().to_vec(), vec![r]);
        let c = trace_counts(&tf);
        assert_eq!(c["pwrite"], (10, 10 * 1024), "rank {r}");
        assert_eq!(c["MPI_Barrier"].0, 1, "rank {r}");
        assert_eq!(c["open"].0, 1, "rank {r}");
    }
    // The CLI reads the per-rank file.
    let p = dir.path().join("killed.4.rank3.iotrex");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("stats")
        .arg(&p)
        .output()
        .expect("run iotrex stats");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "iotrex stats: {text}");
    assert!(text.contains("pwrite") && text.contains("10240"), "{text}");
}

#[test]
fn call_sites_recognised_from_stack_slots_equal_unwound_ones() {
    // The tracer reuses a call site's signature when the return-address slots of a stack seen
    // before still hold the same addresses; IOTREX_NO_SLOT_CACHE=1 unwinds every call. Both
    // must give the same call sites for every call of every rank (comm_mix: MPI, MPI-IO and
    // POSIX calls from several functions and loops).
    let dir = Path::new("/dev/shm").join(format!("iotrex-slots-{}", std::process::id()));
    let a = ["{d}", "4", "1000", "4096"];
    let mut flats = Vec::new();
    for env in [vec![], vec![("IOTREX_NO_SLOT_CACHE", "1".to_string())]] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.to_string_lossy().to_string();
        let args: Vec<String> = a.iter().map(|s| s.replace("{d}", &d)).collect();
        let run = mpirun(
            4,
            &app("comm_mix"),
            &args,
            &dir.with_extension("iotrex"),
            &Opts {
                env,
                ..Opts::default()
            },
        );
        flats.push(flat(&run.read()));
    }
    let sigs = |f: &Vec<Vec<rsd::FlatEvent>>| -> Vec<Vec<u64>> {
        f.iter()
            .map(|r| r.iter().map(|e| e.sig).collect())
            .collect()
    };
    assert!(sigs(&flats[0]).iter().flatten().any(|&s| s != 0));
    assert_eq!(sigs(&flats[0]), sigs(&flats[1]), "call sites differ");
    assert_eq!(flats[0], flats[1]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(dir.with_extension("iotrex"));
}
