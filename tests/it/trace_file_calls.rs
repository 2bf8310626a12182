//! The file calls that went unseen: `cp` copies with `copy_file_range`,
//! `cat` with it or `sendfile`; renames, links, `fstat`, directory streams, `truncate`,
//! `fallocate`, `fdopen` and shared mappings are recorded, and the trace still replays. The
//! system's files (and directories the user names) are left out and counted.

use crate::common;
use common::status_text as text;

use rsd::op::Dir;
use rsd::{FlatEvent, Op, Param};
use std::path::Path;

/// `iotrex ARGS` as a user runs `iotrex trace` ([`common::iotrex_traced`]).
fn iotrex(args: &[&str]) -> std::process::Output {
    common::iotrex_traced(args, &[])
}

/// Every call of every process of every trace the command left beside `out` (`out` and
/// `<stem>.pid*`).
fn calls_beside(out: &Path) -> Vec<FlatEvent> {
    let stem = out.file_stem().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(&stem) && n.ends_with(".iotrex")
        })
        .flat_map(|p| {
            let t = rsd::TraceFile::read(&p).unwrap().trace;
            let mut v = Vec::new();
            t.ranks().for_each(|s| v.extend(t.expand(s)));
            v
        })
        .collect()
}

fn bytes(calls: &[FlatEvent], dir: Dir, path_of: impl Fn(&FlatEvent) -> bool) -> u64 {
    calls
        .iter()
        .filter(|c| c.op.dir() == dir && path_of(c))
        .map(|c| c.op.data_bytes(&c.params))
        .sum()
}

const MIB3: u64 = 3 << 20;

#[test]
fn cp_records_the_bytes_it_copies() {
    let d = common::scratch();
    let big = d.path().join("big");
    std::fs::write(&big, vec![7u8; MIB3 as usize]).unwrap();
    let other = d.path().join("other");
    let out = d.path().join("cp.iotrex");
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        "cp",
        big.to_str().unwrap(),
        other.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap();
    let calls = tf.trace.expand(0);
    assert_eq!(bytes(&calls, Dir::Read, |_| true), MIB3, "{calls:?}");
    assert_eq!(bytes(&calls, Dir::Write, |_| true), MIB3, "{calls:?}");
    assert_eq!(std::fs::read(&other).unwrap().len() as u64, MIB3);
}

#[test]
fn cat_into_a_file_records_the_read() {
    let d = common::scratch();
    let f = d.path().join("f");
    std::fs::write(&f, vec![1u8; MIB3 as usize]).unwrap();
    let g = d.path().join("g");
    let out = d.path().join("cat.iotrex");
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/sh",
        "-c",
        "cat \"$0\" > \"$1\"",
        f.to_str().unwrap(),
        g.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // cat reads f on a descriptor it opened; its stdout is the shell's redirection, not a
    // descriptor cat opened, so its write is not cat's to record.
    let calls = calls_beside(&out);
    assert_eq!(bytes(&calls, Dir::Read, |_| true), MIB3, "{calls:?}");
}

/// The two paths of `rename`, `link` and `symlink` (in `w`, traced into `out`) read back as
/// two: `expand` gives each call one line with the second path named; `stats` counts each
/// path as a file, neither holding the other; Parquet's `path` and `path2` hold one each;
/// and the file says the format minor that holds them.
fn two_paths_read_back(out: &Path, w: &str) {
    let o = common::iotrex(&["expand", out.to_str().unwrap(), "--rank", "0"]);
    assert!(o.status.success(), "{}", text(&o));
    let lines = String::from_utf8_lossy(&o.stdout).into_owned();
    let n = rsd::TraceFile::read(out).unwrap().trace.expand(0).len();
    assert_eq!(
        lines.lines().filter(|l| !l.starts_with(' ')).count(),
        n,
        "{lines}"
    );
    for (op, a, b, name) in [
        ("rename", "a", "b", "newpath"),
        ("link", "b", "c", "newpath"),
        ("symlink", "b", "d", "linkpath"),
    ] {
        let want = format!("{op} {w}/{a} {name}={w}/{b}");
        assert!(
            lines.lines().any(|l| l.starts_with(&want)),
            "no {want:?} in:\n{lines}"
        );
    }
    let o = common::iotrex(&["stats", "--json", out.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in ["a", "b", "c", "d"] {
        assert!(
            files.contains(&format!("{w}/{f}").as_str()),
            "{f}: {files:?}"
        );
    }
    assert!(files.iter().all(|f| !f.contains(['\n', '\0'])), "{files:?}");
    let pq = out.with_extension("pq");
    let o = common::iotrex(&[
        "export",
        "parquet",
        out.to_str().unwrap(),
        "-o",
        pq.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = common::duckdb(&format!(
        "SELECT op, path, path2 FROM '{}' WHERE path2 IS NOT NULL ORDER BY op",
        pq.join("calls.parquet").display()
    ));
    let got: Vec<[String; 3]> = rows
        .iter()
        .map(|r| [0, 1, 2].map(|i| r[i].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<[String; 3]> = [
        ("link", "b", "c"),
        ("rename", "a", "b"),
        ("symlink", "b", "d"),
    ]
    .iter()
    .map(|(op, a, b)| [op.to_string(), format!("{w}/{a}"), format!("{w}/{b}")])
    .collect();
    assert_eq!(got, want);
    let bytes = std::fs::read(out).unwrap();
    let minor = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    assert!(minor >= rsd::format::PATH_PAIR_MINOR, "minor {minor}");
}

#[test]
fn the_other_file_calls_are_recorded_and_replay() {
    let d = common::scratch();
    let app = common::app("file_calls");
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = d.path().join("fc.iotrex");
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        app.to_str().unwrap(),
        work.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let entries: usize = String::from_utf8_lossy(&o.stdout)
        .trim()
        .strip_prefix("entries ")
        .unwrap()
        .parse()
        .unwrap();
    let tf = rsd::TraceFile::read(&out).unwrap();
    let calls = tf.trace.expand(0);
    let of = |op: Op| -> Vec<&FlatEvent> { calls.iter().filter(|c| c.op == op).collect() };
    let w = work.display().to_string();
    assert_eq!(of(Op::Fstat).len(), 1, "{calls:?}");
    // pwritev2 at an offset is a pwritev.
    let pv = of(Op::Pwritev);
    assert_eq!(pv.len(), 1, "{calls:?}");
    assert_eq!(pv[0].op.data_bytes(&pv[0].params), 100);
    // The asynchronous requests aio_return collected are the pwrite and the pread they did;
    // the one never collected is said in a note.
    let at = |c: &FlatEvent| [Param::Count, Param::Offset, Param::Ret].map(|p| c.p(p));
    let pw: Vec<[i64; 3]> = of(Op::Pwrite).into_iter().map(at).collect();
    assert_eq!(pw, [[10, 0, 10]], "{calls:?}");
    let pr: Vec<[i64; 3]> = of(Op::Pread).into_iter().map(at).collect();
    assert_eq!(pr, [[20, 100, 20]], "{calls:?}");
    assert!(
        tf.header
            .notes
            .iter()
            .any(|n| n.contains("1 asynchronous I/O request(s)") && n.contains("not collected")),
        "{:?}",
        tf.header.notes
    );
    assert_eq!(
        of(Op::Fstat)[0]
            .op
            .param(&of(Op::Fstat)[0].params, Param::Ret),
        0
    );
    let fa = of(Op::Fallocate);
    assert_eq!(fa.len(), 2, "fallocate and posix_fallocate: {calls:?}");
    assert!(
        fa.iter()
            .all(|c| Op::Fallocate.param(&c.params, Param::Length) == 8192)
    );
    // The cache and durability calls, each with its parameters.
    let one = |op: Op, ps: &[Param]| -> Vec<i64> {
        let cs = of(op);
        assert_eq!(cs.len(), 1, "{}: {calls:?}", op.name());
        ps.iter().map(|&p| cs[0].p(p)).collect()
    };
    use Param::{Advice, Count, Fd, Flags, Length, Offset, Ret};
    let fd = one(Op::Fadvise, &[Fd])[0];
    assert_eq!(
        one(Op::Fadvise, &[Offset, Length, Advice, Ret]),
        [0, 8192, libc::POSIX_FADV_DONTNEED as i64, 0]
    );
    assert_eq!(
        one(Op::Readahead, &[Fd, Offset, Count, Ret]),
        [fd, 0, 4096, 0]
    );
    assert_eq!(
        one(Op::SyncFileRange, &[Fd, Offset, Length, Flags, Ret]),
        [fd, 0, 4096, libc::SYNC_FILE_RANGE_WRITE as i64, 0]
    );
    assert_eq!(one(Op::Fdatasync, &[Fd]), [fd]);
    assert_eq!(one(Op::Syncfs, &[Fd, Ret]), [fd, 0]);
    assert_eq!(of(Op::Sync).len(), 1, "{calls:?}");
    // fcntl(F_SETFL) records the flags set after its fixed parameters.
    let setfl: Vec<Vec<i64>> = of(Op::Fcntl)
        .into_iter()
        .filter(|c| c.p(Param::Cmd) == libc::F_SETFL as i64)
        .map(|c| c.params.clone())
        .collect();
    let f_setfl = libc::F_SETFL as i64;
    assert_eq!(
        setfl,
        [
            vec![fd, f_setfl, 0, libc::O_APPEND as i64],
            vec![fd, f_setfl, 0, 0]
        ],
        "{calls:?}"
    );
    // madvise of the mapping's second page, at its file offset; the anonymous one is not.
    assert_eq!(
        one(Op::Madvise, &[Fd, Offset, Length, Advice, Ret]),
        [fd, 4096, 4096, libc::MADV_WILLNEED as i64, 0]
    );
    // msync records its flags after its fixed parameters.
    assert_eq!(
        Op::Msync.array_values(&of(Op::Msync)[0].params, "flags"),
        Some(&[libc::MS_SYNC as i64][..])
    );
    let mm = of(Op::Mmap);
    assert_eq!(mm.len(), 1);
    assert_eq!(Op::Mmap.param(&mm[0].params, Param::Length), 8192);
    // The mapping's bytes reach the file at msync (4096 synced); munmap adds none after it.
    assert_eq!(
        bytes(
            &of(Op::Msync).into_iter().cloned().collect::<Vec<_>>(),
            Dir::Write,
            |_| true
        ),
        4096
    );
    assert_eq!(of(Op::Munmap).len(), 1);
    assert_eq!(
        of(Op::Munmap)[0].op.data_bytes(&of(Op::Munmap)[0].params),
        0
    );
    // fdopen on the dup: the stream's 5 bytes are an fwrite on a traced stream.
    let fd = of(Op::Fdopen);
    assert_eq!(fd.len(), 1, "{calls:?}");
    let stream = Op::Fdopen.param(&fd[0].params, Param::Stream);
    assert!(stream >= 0);
    assert!(
        calls.iter().any(|c| c.op == Op::Fwrite
            && Op::Fwrite.param(&c.params, Param::Stream) == stream
            && c.op.data_bytes(&c.params) == 5),
        "{calls:?}"
    );
    let pair = |op: Op, a: &str, b: &str| {
        let cs = of(op);
        assert_eq!(cs.len(), 1, "{}: {calls:?}", op.name());
        let p = cs[0].path.as_deref().unwrap();
        assert_eq!(
            rsd::op::split_path_pair(p),
            Some((format!("{w}/{a}").as_str(), format!("{w}/{b}").as_str())),
            "{}",
            op.name()
        );
    };
    pair(Op::Rename, "a", "b");
    pair(Op::Link, "b", "c");
    pair(Op::Symlink, "b", "d");
    two_paths_read_back(&out, &w);
    let tr = of(Op::Truncate);
    assert_eq!(tr.len(), 1);
    assert_eq!(Op::Truncate.param(&tr[0].params, Param::Length), 100);
    assert_eq!(of(Op::Statx).len(), 1);
    assert!(!of(Op::Fstatat).is_empty());
    assert_eq!(of(Op::Opendir).len(), 1);
    // One readdir per entry, and the one that said the end.
    let rd = of(Op::Readdir);
    assert_eq!(rd.len(), entries + 1, "{calls:?}");
    assert_eq!(
        rd.iter()
            .filter(|c| Op::Readdir.param(&c.params, Param::Ret) == 1)
            .count(),
        entries
    );
    assert_eq!(of(Op::Closedir).len(), 1);

    // The replay handles every new op (the writes of the mapping as positioned writes, the
    // stream on the descriptor) or skips it, and moves the trace's bytes.
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let o = iotrex(&[
        "--json",
        "replay",
        out.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--compute",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let written = bytes(&calls, Dir::Write, |_| true);
    assert_eq!(written, 4096 + 100 + 10 + 4096 + 5, "{calls:?}");
    assert_eq!(v["failed"], 0, "{v}");
    let ops = v["ops"].as_array().unwrap();
    for op in ops {
        assert_eq!(op["bytes"], op["trace_bytes"], "{op}");
        assert_eq!(op["count"], op["trace_count"], "{op}");
    }
    let replayed: u64 = ops
        .iter()
        .filter(|o| {
            ["write", "pwrite", "pwritev", "msync", "munmap", "fwrite"]
                .contains(&o["op"].as_str().unwrap())
        })
        .map(|o| o["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(replayed, written, "{v}");
    // And the CODES export takes it.
    let codes = d.path().join("codes");
    let o = iotrex(&[
        "export",
        "codes",
        out.to_str().unwrap(),
        "-o",
        codes.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Debian's Python, which has mpi4py (a `python3` first on `PATH` may be a shim that runs
/// another).
const PYTHON: &str = "/usr/bin/python3";

/// `stats --json`'s files and what it says the tracer left out, as (directory, calls, bytes).
fn files_and_excluded(out: &Path) -> (Vec<String>, Vec<(String, u64, u64)>) {
    let o = common::iotrex(&["stats", "--json", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    let files = files.iter().map(|f| f.as_str().unwrap().to_string());
    let excluded = v["excluded"].as_array().unwrap().iter().map(|e| {
        let n = |k: &str| e[k].as_u64().unwrap();
        (
            e["prefix"].as_str().unwrap().to_string(),
            n("calls"),
            n("bytes"),
        )
    });
    (files.collect(), excluded.collect())
}

/// Python's modules under `/usr` are left out by default and counted in the header; the
/// program's own file is traced; no file under a default exclusion is in the trace.
#[test]
fn the_systems_files_are_counted_not_traced() {
    let d = common::scratch();
    let data = d.path().join("data");
    let out = d.path().join("py.iotrex");
    let prog = "import sys; open(sys.argv[1], 'w').write('x' * 1000)";
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        PYTHON,
        "-c",
        prog,
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (files, excluded) = files_and_excluded(&out);
    assert!(files.contains(&data.display().to_string()), "{files:?}");
    let system = |f: &str| {
        rsd::exclude::DEFAULT_EXCLUDE
            .iter()
            .any(|d| f.starts_with(&format!("{d}/")))
            && !f.starts_with("/dev/shm/")
    };
    assert!(!files.iter().any(|f| system(f)), "{files:?}");
    let usr = excluded.iter().find(|e| e.0 == "/usr");
    assert!(
        usr.is_some_and(|u| u.1 > 10 && u.2 > 10_000),
        "{excluded:?}"
    );
    let show = common::iotrex(&["show", out.to_str().unwrap()]);
    assert!(text(&show).contains("excluded   "), "{}", text(&show));
}

/// `--exclude` and `--include` add rules, the longest deciding; the bytes read under an
/// excluded directory are counted exactly, summed over the ranks of an MPI run.
#[test]
fn exclusions_count_the_bytes_of_every_rank() {
    let d = common::scratch();
    let env = d.path().join("env");
    let keep = env.join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::write(env.join("a"), vec![1u8; 12345]).unwrap();
    std::fs::write(keep.join("b"), vec![2u8; 100]).unwrap();
    let out = d.path().join("mpi.iotrex");
    let prog = "import sys; from mpi4py import MPI; [open(p, 'rb').read() for p in sys.argv[1:]]";
    let (a, b) = (env.join("a"), keep.join("b"));
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--exclude",
        env.to_str().unwrap(),
        "--include",
        keep.to_str().unwrap(),
        "--",
        "mpirun",
        "-np",
        "2",
        PYTHON,
        "-c",
        prog,
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (files, excluded) = files_and_excluded(&out);
    assert!(files.contains(&b.display().to_string()), "{files:?}");
    assert!(!files.contains(&a.display().to_string()), "{files:?}");
    let e = excluded.iter().find(|e| e.0 == env.display().to_string());
    // Each rank opens, reads (to the end) and closes: at least 3 calls and the bytes.
    assert!(
        e.is_some_and(|e| e.1 >= 6 && e.2 == 2 * 12345),
        "{excluded:?}"
    );
}

/// A rule that is not an absolute directory fails before anything runs, naming it.
#[test]
fn a_bad_exclusion_is_refused_before_the_run() {
    let d = common::scratch();
    let out = d.path().join("x.iotrex");
    let marker = d.path().join("ran");
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--exclude",
        "scratch",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("`scratch` is not an absolute directory"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("--exclude"), "{}", text(&o));
    assert!(!marker.exists() && !out.exists());
}

/// A command that only reads a system file leaves no trace and is told why; with that
/// directory included, its read is traced.
#[test]
fn a_program_of_system_files_only_is_told_why_it_left_no_trace() {
    let d = common::scratch();
    let out = d.path().join("c.iotrex");
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        "cat",
        "/etc/hostname",
    ]);
    assert!(!o.status.success() && !out.exists(), "{}", text(&o));
    assert!(text(&o).contains("--include DIR"), "{}", text(&o));
    let o = iotrex(&[
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--include",
        "/etc",
        "--",
        "cat",
        "/etc/hostname",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (files, excluded) = files_and_excluded(&out);
    assert!(files.contains(&"/etc/hostname".to_string()), "{files:?}");
    assert!(!excluded.iter().any(|e| e.0 == "/etc"), "{excluded:?}");
}
