//! `iotrex trace`, the launcher: it must put the tracer into the ranks (not into mpirun), pass
//! the output path, report the trace, and keep the command's exit status.

use crate::common;
use common::{iotrex_traced as iotrex, status_text as text};

use std::path::Path;

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
    // tee runs in a process of the shell's trace (the pipeline's forked side, which execs it).
    let calls = every_call(&tf);
    let path = data.display().to_string();
    // tee opens its file with fopen; that the call is in the trace shows the library reached
    // the program.
    assert!(
        calls
            .iter()
            .any(|c| matches!(c.op, rsd::Op::Open | rsd::Op::Fopen)
                && c.path.as_deref() == Some(path.as_str())),
        "{calls:?}"
    );
    // Its data goes through fwrite_unlocked (or write): the five bytes are in the trace.
    let written: u64 = calls
        .iter()
        .filter(|c| matches!(c.op, rsd::Op::Fwrite | rsd::Op::Write))
        .map(|c| c.op.data_bytes(&c.params))
        .sum();
    assert_eq!(written, 5, "{calls:?}");
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

/// The trace files of a plain command traced to `out`: `out` first, then any
/// `<stem>.pid<PID>.iotrex` files other processes wrote (processes that started apart from
/// the traced command's tree).
fn traces_of(out: &Path) -> Vec<(String, rsd::TraceFile)> {
    let stem = out.file_stem().unwrap().to_string_lossy().into_owned();
    let mut names: Vec<String> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{stem}.")) && n.ends_with(".iotrex"))
        .collect();
    names.sort_by_key(|n| (n != &format!("{stem}.iotrex"), n.clone()));
    names
        .into_iter()
        .map(|n| {
            let tf = rsd::TraceFile::read(&out.with_file_name(&n))
                .unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, tf)
        })
        .collect()
}

/// Every call of a trace, over all its processes' slots.
fn every_call(tf: &rsd::TraceFile) -> Vec<rsd::FlatEvent> {
    let mut v = Vec::new();
    tf.trace.ranks().for_each(|s| v.extend(tf.trace.expand(s)));
    v
}

#[test]
fn a_killed_plain_program_leaves_an_incomplete_trace_and_its_status() {
    let dir = common::scratch();
    let out = dir.path().join("killed.iotrex");
    let data = dir.path().join("data.txt");
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            "printf abc > \"$0\"; kill -TERM $$; printf late > \"$0\"",
            data.to_str().unwrap(),
        ],
        &[],
    );
    // Killed by SIGTERM: 128 + 15, as a shell reports it.
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "abc");
    let tf = rsd::TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    assert!(tf.header.incomplete);
    assert!(
        tf.header
            .notes
            .iter()
            .any(|n| n.contains("killed by signal 15 (SIGTERM)")),
        "{:?}",
        tf.header.notes
    );
    let written: u64 = tf
        .trace
        .expand(0)
        .iter()
        .map(|c| c.op.data_bytes(&c.params))
        .sum();
    assert_eq!(written, 3);
    assert!(String::from_utf8_lossy(&o.stderr).contains("INCOMPLETE"));
}

#[test]
fn the_applications_signal_handler_still_runs() {
    let dir = common::scratch();
    let out = dir.path().join("trapped.iotrex");
    let data = dir.path().join("data.txt");
    // The shell's trap is installed after the tracer's handler: it must be chained, and the
    // shell then goes on to exit 3 by itself, writing its whole trace.
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            "trap 'printf trapped > \"$0\".trap; exit 3' TERM; printf abc > \"$0\"; kill -TERM $$",
            data.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let trap = dir.path().join("data.txt.trap");
    assert_eq!(std::fs::read_to_string(&trap).unwrap(), "trapped");
    let tf = rsd::TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    // Written again at exit over the snapshot taken in the handler: the trap's own write is
    // in it, and only the one file exists.
    let written: u64 = tf
        .trace
        .expand(0)
        .iter()
        .map(|c| c.op.data_bytes(&c.params))
        .sum();
    assert_eq!(written, 3 + 7, "{}", text(&o));
    assert_eq!(traces_of(&out).len(), 1);
}

#[test]
fn a_vfork_child_does_not_touch_the_parents_trace() {
    let dir = common::scratch();
    let out = dir.path().join("vfork.iotrex");
    let data = dir.path().join("data.txt");
    let app = common::app("vfork_app");
    let o = common::trace_command(&out, &[app.to_str().unwrap(), data.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "data");
    let tf = rsd::TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    let ops: Vec<rsd::Op> = tf.trace.expand(0).iter().map(|c| c.op).collect();
    // The child's close is not the parent's; the parent's write and close are kept.
    assert_eq!(
        ops,
        vec![rsd::Op::Open, rsd::Op::Write, rsd::Op::Close],
        "{}",
        text(&o)
    );
    assert_eq!(traces_of(&out).len(), 1, "the child wrote no trace");
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

#[test]
fn the_variadic_exec_forms_write_the_trace_before_the_image_goes() {
    let app = common::app("exec_app");
    for mode in ["execl", "execlp", "execle"] {
        let dir = common::scratch();
        let out = dir.path().join("exec.iotrex");
        let data = dir.path().join("data.txt");
        let o = iotrex(
            &[
                "trace",
                "-o",
                out.to_str().unwrap(),
                "--",
                app.to_str().unwrap(),
                data.to_str().unwrap(),
                mode,
            ],
            &[],
        );
        assert!(o.status.success(), "{mode}: {}", text(&o));
        assert_eq!(std::fs::read_to_string(&data).unwrap(), "data");
        // The write happened before the exec: the trace holds it, under the process the
        // image that exec'd became, and no other file was written.
        let traces = traces_of(&out);
        assert_eq!(traces.len(), 1, "{mode}: {}", text(&o));
        let written: u64 = every_call(&traces[0].1)
            .iter()
            .filter(|c| c.op == rsd::Op::Write)
            .map(|c| c.op.data_bytes(&c.params))
            .sum();
        assert_eq!(written, 4, "{mode}: {}", text(&o));
    }
}

/// When the output's directory refuses the trace, the tracer writes it to `$TMPDIR`;
/// `iotrex trace` says where with a warning and exits with the program's status (0), not 1.
#[test]
fn a_trace_moved_to_the_fallback_directory_keeps_the_programs_status() {
    let dir = common::scratch();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let src = dir.path().join("src");
    std::fs::write(&src, b"some bytes").unwrap();
    let out = dir.path().join("no-such-dir").join("cp.iotrex");
    let o = iotrex(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "cp",
            src.to_str().unwrap(),
            dir.path().join("dst").to_str().unwrap(),
        ],
        &[("TMPDIR", tmp.to_str().unwrap())],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let moved: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            rsd::job::is_fallback_of(&p.file_name().unwrap().to_string_lossy(), "cp.iotrex")
        })
        .collect();
    assert_eq!(moved.len(), 1, "{}", text(&o));
    assert!(
        err.contains(&format!(
            "iotrex: warning: {} refused the trace; it was written to {} instead",
            out.display(),
            moved[0].display()
        )),
        "{err}"
    );
    assert!(!err.contains("no trace was written"), "{err}");
    // The moved trace is the program's: cp read and wrote the 10 bytes.
    let tf = rsd::TraceFile::read(&moved[0]).unwrap();
    let written: u64 = tf
        .trace
        .expand(0)
        .iter()
        .filter(|c| c.op.dir() == rsd::op::Dir::Write)
        .map(|c| c.op.data_bytes(&c.params))
        .sum();
    assert_eq!(written, 10);
}
