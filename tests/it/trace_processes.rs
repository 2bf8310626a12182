//! Forked children in their parent's trace (`docs/processes.md`): `tests/apps/fork_app.c`'s
//! process and two children each write 1 MiB; the trace holds every process's bytes, under
//! its own slot, with how each child ended, alone and under mpirun.

use crate::common;
use common::{iotrex_traced, status_text as text};
use rsd::process::End;
use rsd::{Op, TraceFile};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// Bytes slot `s` moved in the top-level calls `keep(op, bytes)` takes.
fn bytes_of(tf: &TraceFile, s: u32, keep: impl Fn(Op, u64) -> bool) -> u64 {
    let mut n = 0;
    tf.trace.expand_with(s, &mut |e| {
        let b = e.op.data_bytes(&e.params);
        if keep(e.op, b) {
            n += b;
        }
        true
    });
    n
}

/// Bytes written by each slot of the trace (top-level calls).
fn written_per_slot(tf: &TraceFile) -> Vec<(u32, u64)> {
    let slots = tf.trace.ranks().to_vec();
    slots
        .into_iter()
        .map(|s| (s, bytes_of(tf, s, |op, _| op == Op::Write)))
        .collect()
}

/// What a traced run left in `dir` besides its trace `name`: spools, or other traces.
fn left_beside(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".iotrex-procs") || (n.ends_with(".iotrex") && n != name))
        .collect()
}

/// Runs `fork_app DIR MODE1 MODE2` under `iotrex trace`, with `envs`; the trace and stdout.
fn traced(dir: &Path, modes: [&str; 2], envs: &[(&str, &str)]) -> (TraceFile, String) {
    let app = common::app("fork_app");
    let out = dir.join("fx.iotrex");
    let o = iotrex_traced(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            app.to_str().unwrap(),
            dir.to_str().unwrap(),
            modes[0],
            modes[1],
        ],
        envs,
    );
    assert!(o.status.success(), "{modes:?}: {}", text(&o));
    let tf = TraceFile::read(&out).unwrap_or_else(|e| panic!("{modes:?}: {e}\n{}", text(&o)));
    // The spool the children wrote into is gone, and no other trace was written.
    let left = left_beside(dir, "fx.iotrex");
    assert!(left.is_empty(), "{modes:?}: left behind {left:?}");
    std::fs::remove_file(&out).unwrap();
    (tf, String::from_utf8_lossy(&o.stdout).into_owned())
}

fn ends(tf: &TraceFile) -> Vec<(u64, End)> {
    let p = tf
        .header
        .processes
        .as_ref()
        .expect("the header lists processes");
    p.groups.iter().map(|g| (g.slots.len(), g.end)).collect()
}

#[test]
fn forked_children_write_into_the_parents_trace_however_they_end() {
    let dir = common::scratch();
    let d = dir.path();
    // exit and _exit: 3 MiB in 3 processes, each 1 MiB under its own slot.
    let (tf, stdout) = traced(d, ["exit", "_exit"], &[]);
    assert!(stdout.contains("CHILD 0 1 exited 3"), "{stdout}");
    assert_eq!(tf.header.nranks, 1);
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    assert_eq!(written_per_slot(&tf), vec![(0, MIB), (1, MIB), (2, MIB)]);
    assert_eq!(
        ends(&tf),
        vec![(1, End::Exit(Some(0))), (1, End::QuickExit(3))]
    );
    let p = tf.header.processes.as_ref().unwrap();
    assert_eq!((p.children(), p.missing(), p.untraced), (2, 0, 0));
    assert!(p.groups.iter().all(|g| g.parent.is_none() && g.site != 0));
    for name in ["parent.0", "child0.0", "child1.0"] {
        assert_eq!(
            std::fs::metadata(d.join(name)).unwrap().len(),
            MIB,
            "{name}"
        );
    }

    // A child that dies of SIGTERM writes its record; one killed by SIGKILL is named missing
    // and its megabyte is not in the trace.
    let (tf, stdout) = traced(d, ["term", "kill"], &[]);
    assert!(stdout.contains("CHILD 0 1 signal 9"), "{stdout}");
    assert_eq!(written_per_slot(&tf), vec![(0, MIB), (1, MIB)]);
    assert_eq!(ends(&tf), vec![(1, End::Signal(15)), (1, End::Missing)]);

    // Two children of one kind are one group; a return from main is an exit.
    let (tf, _) = traced(d, ["exit", "exit"], &[]);
    assert_eq!(ends(&tf), vec![(2, End::Exit(Some(0)))]);
    let (tf, _) = traced(d, ["return", "_exit"], &[]);
    assert_eq!(ends(&tf)[0], (1, End::Exit(None)));

    // Past IOTREX_MAX_PROCESSES the children are counted, not traced.
    let (tf, _) = traced(d, ["exit", "exit"], &[("IOTREX_MAX_PROCESSES", "1")]);
    assert_eq!(written_per_slot(&tf), vec![(0, MIB), (1, MIB)]);
    assert_eq!(tf.header.processes.as_ref().unwrap().untraced, 1);
}

#[test]
fn show_and_stats_list_the_processes() {
    let dir = common::scratch();
    let app = common::app("fork_app");
    let out = dir.path().join("fx.iotrex");
    let o = iotrex_traced(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            app.to_str().unwrap(),
            dir.path().to_str().unwrap(),
            "exit",
            "kill",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let f = out.to_str().unwrap();
    let show = common::iotrex(&["show", f]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("processes  3 processes: 1 rank's own, 2 forked children (1 missing"),
        "{show}"
    );
    assert!(show.contains("ended by exit 0"), "{show}");
    let stats = common::iotrex(&["stats", "--json", f]);
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let p = &v["processes"];
    assert_eq!(p["rank_written"], MIB, "{v}");
    assert_eq!(p["groups"][0]["written"], MIB, "{v}");
    assert_eq!(p["groups"][1]["end"], "missing", "{v}");
    let stats = common::iotrex(&["stats", f]);
    let stats = String::from_utf8_lossy(&stats.stdout);
    assert!(
        stats.contains("1 child (slots 1), forked by rank at"),
        "{stats}"
    );
    // extrap and replay say they cannot handle the children yet, naming them.
    let e = common::iotrex(&["extrap", f, f, f, "--ranks", "4", "-o", "/dev/null"]);
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("1 forked process besides its 1 rank"),
        "{}",
        text(&e)
    );
}

#[test]
fn each_rank_of_an_mpi_run_folds_its_forked_children_in() {
    let dir = common::scratch();
    let app = common::app("fork_app");
    let trace = dir.path().join("fx.2.iotrex");
    let d = dir.path().display().to_string();
    let args = [d, "exit".into(), "_exit".into(), "mpi".into()];
    let run = common::mpirun(2, &app, &args, &trace, &common::Opts::default());
    let tf = run.read();
    assert_eq!(tf.header.nranks, 2);
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    let per = written_per_slot(&tf);
    assert_eq!(per.len(), 6, "{per:?}");
    assert!(per.iter().all(|&(_, w)| w == MIB), "{per:?}");
    // Each rank's children of one kind join over the ranks: two groups of two.
    let p = tf.header.processes.as_ref().unwrap();
    assert_eq!(
        ends(&tf),
        vec![(2, End::Exit(Some(0))), (2, End::QuickExit(3))]
    );
    let stride = p.stride;
    let slots: Vec<u32> = p.groups[0].slots.to_vec();
    assert_eq!(slots, vec![2, 2 + stride], "child 0 of ranks 0 and 1");
    assert_eq!(p.owner(2, 2 + stride), Some((1, 0)));
    exports_name_ranks_and_processes(&trace, dir.path());
}

/// `iotrex export KIND TRACE -o OUT`, which must succeed.
fn export(trace: &Path, kind: &str, out: &Path) {
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    let run = common::iotrex(&["export", kind, t, "-o", o]);
    assert!(run.status.success(), "{kind}: {}", text(&run));
}

/// Parquet's calls and Perfetto's tracks of a 2-rank trace whose ranks each forked two
/// children name a call's rank and process, not the slot it is kept in.
fn exports_name_ranks_and_processes(trace: &Path, dir: &Path) {
    let pq = dir.join("pq");
    export(trace, "parquet", &pq);
    let rows = common::duckdb(&format!(
        "SELECT rank, process, sum(bytes)::BIGINT FROM '{}' WHERE depth = 0 AND op LIKE '%write%' \
         GROUP BY ALL ORDER BY rank, process NULLS FIRST",
        pq.join("calls.parquet").display()
    ));
    let m = MIB;
    let want = serde_json::json!([
        [0, null, m],
        [0, 0, m],
        [0, 1, m],
        [1, null, m],
        [1, 0, m],
        [1, 1, m]
    ]);
    assert_eq!(serde_json::Value::from(rows), want);
    let json = dir.join("fx.json");
    export(trace, "chrome", &json);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut names: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    names.sort();
    let want = [
        "rank 0",
        "rank 0 process 0",
        "rank 0 process 1",
        "rank 1",
        "rank 1 process 0",
        "rank 1 process 1",
    ];
    assert_eq!(names, want);
    // OTF2's locations, as otf2-print lists the global definitions.
    let otf = dir.join("otf2");
    export(trace, "otf2", &otf);
    let defs = std::process::Command::new("otf2-print")
        .arg("-G")
        .arg(otf.join("traces.otf2"))
        .output()
        .expect("run otf2-print (otf2-tools, installed by scripts/install-deps.sh)");
    let defs = String::from_utf8_lossy(&defs.stdout);
    for name in want {
        assert!(
            defs.contains(&format!("\"{name} thread 0\"")),
            "{name}:\n{defs}"
        );
    }
}

// ---- images `exec` starts ----

/// `iotrex trace -o DIR/NAME -- ARGS` in `dir`: the trace, after checking that it is the only
/// trace file and no spool was left behind.
fn traced_alone(dir: &Path, name: &str, args: &[&str]) -> (TraceFile, String) {
    let out = dir.join(name);
    let mut all = vec!["trace", "-o", out.to_str().unwrap(), "--"];
    all.extend_from_slice(args);
    let o = iotrex_traced(&all, &[]);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("another process"), "{}", text(&o));
    let left = left_beside(dir, name);
    assert!(left.is_empty(), "{args:?}: left behind {left:?}");
    let tf = TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    (tf, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Bytes each slot moved in calls of `op` of exactly `size` bytes.
fn sized_per_slot(tf: &TraceFile, op: Op, size: u64) -> Vec<(u32, u64)> {
    let slots = tf.trace.ranks().to_vec();
    slots
        .into_iter()
        .map(|s| (s, bytes_of(tf, s, |o, b| o == op && b == size)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// The group whose command runs `exe`: its first word, or its script's (a shebang's
/// interpreter comes first), ends in `exe`.
fn group_running<'a>(tf: &'a TraceFile, exe: &str) -> &'a rsd::process::Group {
    let p = tf
        .header
        .processes
        .as_ref()
        .expect("the header lists processes");
    p.groups
        .iter()
        .find(|g| g.command.iter().take(2).any(|c| c.ends_with(exe)))
        .unwrap_or_else(|| panic!("no group runs {exe}: {:?}", p.groups))
}

#[test]
fn a_shells_commands_are_processes_of_its_one_trace() {
    let dir = common::scratch();
    let data = dir.path().join("data.txt");
    // The shell writes data.txt through a redirection (open, dup2, printf's write) and starts
    // two cats that read it: one trace holds the three processes, the cats as images exec'd
    // under the shell. Twice: the second run finds the first one's trace in place.
    let script = "printf one > \"$0\"; cat \"$0\" > /dev/null; cat \"$0\" > /dev/null";
    for run in 0..2 {
        let (tf, _) = traced_alone(
            dir.path(),
            "sh.iotrex",
            &["/bin/sh", "-c", script, data.to_str().unwrap()],
        );
        let reads = sized_per_slot(&tf, Op::Read, 3);
        assert_eq!(
            reads.len(),
            2,
            "run {run}: both cats' reads, each in its slot: {reads:?}"
        );
        let cats = group_running(&tf, "cat");
        assert!(
            reads.iter().all(|(s, _)| cats.slots.contains(*s)),
            "{reads:?} {cats:?}"
        );
        // The shell's redirection: dup2 onto stdout, then printf's write through the copy.
        let calls = tf.trace.expand(0);
        let dup = calls
            .iter()
            .position(|c| c.op == Op::Dup)
            .expect("the shell's dup2");
        let newfd = calls[dup].params[1];
        assert!(
            calls[dup..]
                .iter()
                .any(|c| c.op == Op::Write && c.params[0] == newfd && c.params[2] == 3),
            "{calls:?}"
        );
    }
}

#[test]
fn the_image_a_shell_execs_in_its_place_is_the_trace_and_the_shell_a_process_of_it() {
    let dir = common::scratch();
    let data = dir.path().join("data.txt");
    let (tf, _) = traced_alone(
        dir.path(),
        "sh.iotrex",
        &[
            "/bin/sh",
            "-c",
            "printf one > \"$0\"; exec cat \"$0\"",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(tf.header.command.first().map(String::as_str), Some("cat"));
    let sh = group_running(&tf, "sh");
    assert_eq!((sh.end, sh.parent, sh.slots.len()), (End::Exec, None, 1));
    let slot = sh.slots.to_vec()[0];
    assert_eq!(
        sized_per_slot(&tf, Op::Write, 3),
        vec![(slot, 3)],
        "the shell wrote"
    );
    assert_eq!(
        sized_per_slot(&tf, Op::Read, 3),
        vec![(0, 3)],
        "cat, in the rank's slot, read"
    );
}

#[test]
fn a_python_pool_behind_a_shell_shim_is_one_trace_holding_every_workers_bytes() {
    let dir = common::scratch();
    let d = dir.path();
    // A shim that execs the interpreter, as pyenv's and conda's do.
    let shim = d.join("python3");
    std::fs::write(&shim, "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n").unwrap();
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let pool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/pool.py");
    let (tf, stdout) = traced_alone(
        d,
        "mp.iotrex",
        &[
            shim.to_str().unwrap(),
            pool.to_str().unwrap(),
            d.to_str().unwrap(),
            "4",
            "8",
        ],
    );
    assert!(stdout.contains("wrote 8388608 read 8388608"), "{stdout}");
    assert!(
        tf.header.command.iter().any(|a| a.ends_with("pool.py")),
        "{:?}",
        tf.header.command
    );
    // The workers' files: 8 MiB written and read back, by the workers, not the main process.
    let total = |v: Vec<(u32, u64)>| -> u64 {
        assert!(v.iter().all(|&(s, _)| s != 0), "{v:?}");
        v.iter().map(|&(_, n)| n).sum()
    };
    assert_eq!(total(sized_per_slot(&tf, Op::Write, MIB)), 8 * MIB);
    assert_eq!(total(sized_per_slot(&tf, Op::Read, MIB)), 8 * MIB);
    assert_eq!(group_running(&tf, "python3").end, End::Exec, "the shim");
}

#[test]
fn a_forked_child_that_execs_has_its_image_as_its_own_child() {
    let dir = common::scratch();
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "four").unwrap();
    // os.fork and os.execv: a traced child (its record ends by exec), and the image it starts
    // (cat) its child in the tree.
    let prog = "import os, sys\n\
        pid = os.fork()\n\
        if pid == 0:\n    os.execv('/bin/cat', ['cat', sys.argv[1]])\n\
        os.waitpid(pid, 0)\n";
    let (tf, stdout) = traced_alone(
        dir.path(),
        "fx.iotrex",
        &["/usr/bin/python3", "-c", prog, data.to_str().unwrap()],
    );
    assert_eq!(stdout, "four");
    let p = tf.header.processes.as_ref().unwrap();
    let forked = p
        .groups
        .iter()
        .find(|g| g.command.is_empty())
        .expect("the forked child");
    assert_eq!((forked.end, forked.parent), (End::Exec, None));
    let cat = group_running(&tf, "cat");
    assert!(matches!(cat.end, End::Exit(_)), "{cat:?}");
    assert_eq!(cat.parent, Some(0), "child 0, the forked one, exec'd it");
    assert_eq!(
        sized_per_slot(&tf, Op::Read, 4),
        vec![(cat.slots.to_vec()[0], 4)]
    );
}

#[test]
fn a_shell_whose_exec_fails_keeps_its_calls_once() {
    let dir = common::scratch();
    let data = dir.path().join("data.txt");
    let out = dir.path().join("sh.iotrex");
    // dash tries execve in each directory of PATH, all fail, and it exits 127: the calls it
    // made before are in the trace once, as the process that handed its place over.
    let o = iotrex_traced(
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            "printf one > \"$0\"; exec iotrex-no-such-command",
            data.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(127), "{}", text(&o));
    let tf = TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    let sh = group_running(&tf, "sh");
    assert_eq!(
        sized_per_slot(&tf, Op::Write, 3),
        vec![(sh.slots.to_vec()[0], 3)],
        "{}",
        text(&o)
    );
}

// ---- programs spawned without the fork and exec hooks ----

/// Bytes the processes of group `g` wrote (every write-like call).
fn written_by(tf: &TraceFile, g: &rsd::process::Group) -> u64 {
    g.slots
        .to_vec()
        .into_iter()
        .map(|s| bytes_of(tf, s, |op, _| op.dir() == rsd::op::Dir::Write))
        .sum()
}

#[test]
fn programs_that_system_popen_and_posix_spawn_start_are_processes_of_the_one_trace() {
    let dir = common::scratch();
    let d = dir.path();
    let app = common::app("spawn_app");
    // glibc spawns these by internal calls, past the fork and exec hooks: each started image
    // used to begin a trace of its own (a `sp.pid*.iotrex` beside this one, which
    // traced_alone finds). Now one trace holds them, as children of the program.
    let (tf, stdout) = traced_alone(
        d,
        "sp.iotrex",
        &[app.to_str().unwrap(), d.to_str().unwrap()],
    );
    assert!(stdout.contains("missing command 2"), "{stdout}");
    assert!(
        tf.header
            .command
            .first()
            .is_some_and(|c| c.ends_with("spawn_app")),
        "the program's own trace: {:?}",
        tf.header.command
    );
    let p = tf
        .header
        .processes
        .as_ref()
        .expect("the header lists processes");
    // system's and popen's shells and the dd each execs in its place, the two spawned dd: the
    // failed spawn is no process (not missing).
    assert_eq!((p.children(), p.missing(), p.untraced), (6, 0, 0), "{p:?}");
    let running = |exe: &str| -> Vec<&rsd::process::Group> {
        let first = |g: &&rsd::process::Group| g.command.first().is_some_and(|c| c == exe);
        p.groups.iter().filter(first).collect()
    };
    let shells = running("sh");
    assert_eq!(shells.len(), 2, "system's and popen's shells: {p:?}");
    assert!(shells.iter().all(|g| g.parent.is_none()), "{p:?}");
    let mut dds: Vec<_> = running("dd")
        .into_iter()
        .map(|g| (g.parent.is_some(), written_by(&tf, g)))
        .collect();
    dds.sort();
    // Two under the program (posix_spawnp, posix_spawn), two under their shells.
    assert_eq!(
        dds,
        [(false, MIB), (false, MIB), (true, MIB), (true, MIB)],
        "{p:?}"
    );
}
