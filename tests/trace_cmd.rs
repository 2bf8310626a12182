//! `iotrex trace`, the launcher: it must put the tracer into the ranks (not into mpirun), pass
//! the output path, report the trace, and keep the command's exit status.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn iotrex(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", env!("CARGO_BIN_EXE_iotrex")])
        .args(args);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD")
        .env("IOTREX_TRACER_LIB", common::tracer_lib());
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("run iotrex")
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn traces_an_mpi_run_through_mpirun() {
    let dir = common::scratch();
    let d = dir.path().display().to_string();
    let app = common::app("io_sample");
    let out = dir.path().join("io.4.iotrex");
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "mpirun",
            "-np",
            "4",
            "--mca",
            "btl",
            "self,vader",
            app.to_str().unwrap(),
            &d,
            "10",
            "8192",
            "2",
            "65536",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("trace {}", out.display())) && err.contains("4 ranks"),
        "{}",
        text(&o)
    );
    let tf = rsd::TraceFile::read(&out).unwrap();
    assert_eq!(tf.header.nranks, 4);
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    // The app's own counts equal the trace's: the library reached every rank.
    let (app_counts, ranks) = common::app_counts(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(ranks, 4, "{}", text(&o));
    let trace_counts = common::trace_counts(&tf);
    for (op, c) in &app_counts {
        assert_eq!(trace_counts.get(op), Some(c), "{op}");
    }
    // mpirun itself was not traced: only the ranks' trace exists in the output directory.
    let traces: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "iotrex"))
        .collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
}

#[test]
fn plain_program_gets_the_environment() {
    let dir = common::scratch();
    let out = dir.path().join("tee.iotrex");
    let data = dir.path().join("data.txt");
    // `tee FILE` opens and writes FILE itself (a shell redirection would dup2 onto fd 1).
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            "printf hello | exec tee \"$0\" > /dev/null",
            data.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    let calls = tf.trace.expand(0);
    let path = data.display().to_string();
    // tee opens its file with fopen; that the call is in the trace shows the library reached
    // the program. (Its data goes through fwrite_unlocked, which the tracer does not hook yet.)
    assert!(
        calls
            .iter()
            .any(|c| matches!(c.op, rsd::Op::Open | rsd::Op::Fopen)
                && c.path.as_deref() == Some(path.as_str())),
        "{calls:?}"
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "hello");
}

#[test]
fn the_commands_exit_status_is_kept() {
    let dir = common::scratch();
    let out = dir.path().join("exit.iotrex");
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            "exit 3",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}

#[test]
fn env_prints_the_variables_and_launcher_line() {
    let o = iotrex(
        &[
            "trace",
            "--env",
            "-o",
            "/tmp/x.iotrex",
            "--stack-depth",
            "2",
            "--",
            "mpirun",
            "-np",
            "2",
            "./app",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let lib = common::tracer_lib();
    assert!(
        s.contains(&format!("export LD_PRELOAD={}", lib.display())),
        "{s}"
    );
    assert!(s.contains("export IOTREX_OUT=/tmp/x.iotrex"), "{s}");
    assert!(s.contains("export IOTREX_STACK_DEPTH=2"), "{s}");
    assert!(
        s.contains(&format!("mpirun -x LD_PRELOAD={}", lib.display())),
        "{s}"
    );
}

#[test]
fn bad_inputs_are_clear_errors() {
    // Each bad input exits 1 with a message naming it.
    for (args, says) in [
        (
            &["trace", "--lib", "/nonexistent/lib.so", "--", "true"][..],
            "/nonexistent/lib.so (--lib)",
        ),
        (
            &["trace", "-o", "/tmp/iotrex-none.iotrex"][..],
            "no command to trace",
        ),
        (
            &["trace", "--", "/nonexistent-program"][..],
            "cannot run /nonexistent-program",
        ),
    ] {
        let o = iotrex(args, &[]);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o)
        );
    }
    assert!(!Path::new("/tmp/iotrex-none.iotrex").exists());
}
