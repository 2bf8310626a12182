//! The `iotrex` binary end to end: `show`, `stats`, `expand` and `synth` on the v1 golden trace
//! and on generated traces, their `--json` forms, and refusals of bad input.

use rsd_view::synth::{BLOCK, COLLECTIVE_ITERS, SMALL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// Runs a command that must succeed and returns its stdout.
fn ok(args: &[&str]) -> String {
    let o = iotrex(args);
    assert!(
        o.status.success(),
        "iotrex {args:?} failed: {}\n{}",
        o.status,
        stderr(&o)
    );
    stdout(&o)
}

/// Runs a command that must fail cleanly (no panic) with `code`, and returns its stderr.
fn fails(args: &[&str], code: i32) -> String {
    let o = iotrex(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "iotrex {args:?}: {err}");
    assert!(!err.contains("panicked"), "iotrex {args:?} panicked: {err}");
    assert!(err.starts_with("error: "), "iotrex {args:?}: {err}");
    err
}

fn json(args: &[&str]) -> Value {
    let out = ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("iotrex {args:?}: bad JSON ({e}):\n{out}"))
}

fn golden() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/format/v1/spmd_4x10.iotrex")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Writes a synthetic trace with `iotrex synth` and returns its path.
fn synth(dir: &Path, ranks: u32, iters: u64) -> PathBuf {
    let p = dir.join(format!("spmd.{ranks}x{iters}.iotrex"));
    let out = ok(&[
        "synth",
        "--ranks",
        &ranks.to_string(),
        "--iters",
        &iters.to_string(),
        "-o",
        s(&p),
    ]);
    assert!(out.contains(s(&p)), "{out}");
    p
}

/// What the synthetic program moves, from its constants (see `rsd_view::synth`): per rank `iters`
/// pwrites of SMALL, COLLECTIVE_ITERS collective writes of BLOCK, and on rank 0 one aggregated
/// POSIX pwrite of `n * BLOCK` per collective write plus a 64-byte fwrite.
struct Expect {
    mpiio: u64,
    posix: u64,
    stdio: u64,
    calls_rank0: u64,
    calls_other: u64,
}

fn expect(n: u32, iters: u64) -> Expect {
    let n = n as u64;
    let (small, block) = (SMALL as u64, BLOCK as u64);
    Expect {
        mpiio: COLLECTIVE_ITERS * n * block,
        posix: n * iters * small + COLLECTIVE_ITERS * n * block,
        stdio: 64,
        // 7 fixed calls (init, open, close, file open, file close, barrier, finalize), `iters`
        // pwrites and the collective writes; rank 0 adds fopen/fwrite/fclose. Per-rank totals
        // count only the application's own calls, not the pwrites nested in its collectives.
        calls_other: 7 + iters + COLLECTIVE_ITERS,
        calls_rank0: 7 + iters + COLLECTIVE_ITERS + 3,
    }
}

#[test]
fn version_names_the_format() {
    let v = ok(&["--version"]);
    assert!(v.contains(env!("CARGO_PKG_VERSION")), "{v}");
    assert!(
        v.contains(&format!(
            "trace format {}.{} (reads formats {} to {} up to minor {})",
            rsd::format::NEWEST_VERSION,
            rsd::format::FORMAT_MINOR,
            rsd::FORMAT_VERSION,
            rsd::format::NEWEST_VERSION,
            rsd::format::FORMAT_MINOR
        )),
        "{v}"
    );
}

/// `trace --help` names the tracer's default approximation, the one the code uses.
#[test]
fn trace_help_names_the_default_approximation() {
    let h = ok(&["trace", "--help"]);
    let default = rsd::approx::DEFAULT_APPROX;
    assert!(
        h.contains(&format!(
            "`{default}` (message sizes of communication calls; the default)"
        )),
        "{h}"
    );
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in ["show", "stats", "expand", "synth"] {
        let h = ok(&[cmd, "--help"]);
        assert!(h.contains("Example:"), "{cmd} --help:\n{h}");
        assert!(h.contains(&format!("iotrex {cmd} ")), "{cmd} --help:\n{h}");
        assert!(h.contains("--json"), "{cmd} --help:\n{h}");
    }
}

#[test]
fn show_golden() {
    let out = ok(&["show", &golden()]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("iotrex trace, format version 1"),
        "{out}"
    );
    assert!(
        out.contains("command    iotrex synth --ranks 4 --iters 10"),
        "{out}"
    );
    assert!(out.contains("complete   yes"), "{out}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ranks 0-3  open out/file_%d [rank]  flags = 577")),
        "{out}"
    );
    // The file-per-process loop, its pwrites advancing by SMALL per iteration.
    let at = lines
        .iter()
        .position(|l| *l == "ranks 0-3  loop x10 {")
        .expect(&out);
    assert!(
        lines[at + 1].starts_with(&format!(
            "  pwrite  fd = 3, count = {SMALL}, offset = {SMALL}*i, ret = {SMALL}  | calls 40, dur mean "
        )),
        "{}",
        lines[at + 1]
    );
    assert_eq!(lines[at + 2], "}");
    // Ranks 1-3 write their segment of the shared file at rank*BLOCK + n*BLOCK*i.
    assert!(
        out.contains(&format!("offset = {BLOCK}*rank + {}*i", 4 * BLOCK)),
        "{out}"
    );
}

#[test]
fn show_json_is_the_stored_trace() {
    let v = json(&["show", "--json", &golden()]);
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["header"]["nranks"], 4);
    assert_eq!(v["header"]["clock"], "synthetic");
    let nodes = v["trace"]["nodes"].as_array().expect("nodes");
    // Decoding the same file in-process gives the same number of top-level nodes.
    let tf = rsd::TraceFile::read(Path::new(&golden())).unwrap();
    assert_eq!(nodes.len(), tf.trace.nodes.len());
}

#[test]
fn stats_golden_and_generated_match_the_synthetic_program() {
    let dir = tempfile::tempdir().unwrap();
    let generated = synth(dir.path(), 16, 25);
    for (file, n, iters) in [(golden(), 4u32, 10u64), (s(&generated).to_string(), 16, 25)] {
        let e = expect(n, iters);
        let v = json(&["stats", "--json", &file]);
        assert_eq!(v["ranks"], n as u64, "{file}");
        assert_eq!(
            v["file_bytes"],
            std::fs::metadata(&file).unwrap().len(),
            "{file}"
        );
        let layer = |name: &str| {
            v["layers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["layer"] == name)
                .unwrap_or_else(|| panic!("{file}: no layer {name} in {v}"))
                .clone()
        };
        assert_eq!(layer("MPIIO")["bytes"], e.mpiio, "{file}");
        assert_eq!(layer("POSIX")["bytes"], e.posix, "{file}");
        assert_eq!(layer("STDIO")["bytes"], e.stdio, "{file}");
        assert_eq!(layer("MPI")["bytes"], 0, "{file}");
        let op = |name: &str| {
            v["ops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["op"] == name)
                .unwrap_or_else(|| panic!("{file}: no op {name}"))
                .clone()
        };
        assert_eq!(
            op("MPI_File_write_at_all")["calls"],
            COLLECTIVE_ITERS * n as u64
        );
        assert_eq!(
            op("pwrite")["calls"],
            n as u64 * iters + COLLECTIVE_ITERS,
            "{file}"
        );
        assert_eq!(op("MPI_Barrier")["calls"], n as u64);
        assert_eq!(v["rank_calls"]["max"], e.calls_rank0, "{file}");
        assert_eq!(v["rank_calls"]["max_rank"], 0, "{file}");
        assert_eq!(v["rank_calls"]["min"], e.calls_other, "{file}");
        assert_eq!(v["rank_calls"]["min_rank"], 1, "{file}");
        let files: Vec<&str> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(files.len(), n as usize + 2, "{file}: {files:?}");
        assert!(files.contains(&"out/shared.dat") && files.contains(&"out/log.txt"));
        assert!(files.contains(&format!("out/file_{}", n - 1).as_str()));

        // The text form shows the same figures.
        let text = ok(&["stats", &file]);
        assert!(text.contains(&format!("{n} ranks")), "{file}: {text}");
        let mpiio_line = text
            .lines()
            .find(|l| l.starts_with("MPIIO ") && !l.contains("MPI_"))
            .expect(&text);
        assert!(
            // MPI-IO calls: open, close and the collective writes of every rank.
            mpiio_line.contains(&format!(" {} ", (2 + COLLECTIVE_ITERS) * n as u64))
                && mpiio_line.contains(&e.mpiio.to_string()),
            "{mpiio_line}"
        );
        assert!(
            text.contains(&format!("files touched: {}", n + 2)),
            "{text}"
        );
    }
}

#[test]
fn trace_size_does_not_grow_with_ranks_or_iterations() {
    // What `stats` reports as the trace size: nearly the same for 4x10 and 64x1000.
    let dir = tempfile::tempdir().unwrap();
    let small = json(&["stats", "--json", &golden()])["file_bytes"]
        .as_u64()
        .unwrap();
    let big = synth(dir.path(), 64, 1000);
    let large = json(&["stats", "--json", s(&big)])["file_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        large < small * 3 / 2,
        "4x10: {small} bytes, 64x1000: {large} bytes"
    );
}

#[test]
fn expand_golden_matches_synth_events() {
    for r in 0..4u32 {
        let out = ok(&["expand", &golden(), "--rank", &r.to_string()]);
        let want = rsd_view::synth::events(r, 4, 10);
        let top: Vec<&str> = out.lines().filter(|l| !l.starts_with(' ')).collect();
        assert_eq!(top.len(), want.len(), "rank {r}:\n{out}");
        for (line, e) in top.iter().zip(&want) {
            assert!(
                line.starts_with(e.op.name()),
                "rank {r}: {line} vs {:?}",
                e.op
            );
        }
        assert!(
            out.contains(&format!("open out/file_{r} flags=577 mode=420 fd=3")),
            "rank {r}:\n{out}"
        );
        let children = out
            .lines()
            .filter(|l| l.starts_with("  pwrite fd=4"))
            .count();
        assert_eq!(
            children,
            if r == 0 { COLLECTIVE_ITERS as usize } else { 0 },
            "rank {r}"
        );
    }
    // The 10th pwrite of rank 2 writes at 9 * SMALL.
    let out = ok(&["expand", &golden(), "-r", "2"]);
    assert!(
        out.contains(&format!(
            "pwrite fd=3 count={SMALL} offset={} ret={SMALL}",
            9 * SMALL
        )),
        "{out}"
    );
}

#[test]
fn expand_json_of_a_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let p = synth(dir.path(), 8, 5);
    let v = json(&["expand", "--json", s(&p), "--rank", "5"]);
    assert_eq!(v["rank"], 5);
    let calls = v["calls"].as_array().unwrap();
    let want = rsd_view::synth::events(5, 8, 5);
    assert_eq!(calls.len(), want.len());
    for (c, e) in calls.iter().zip(&want) {
        assert_eq!(c["op"], e.op.name());
        assert_eq!(c["sig"], e.sig);
        let params = c["params"].as_object().unwrap();
        let got: Vec<i64> =
            e.op.schema()
                .iter()
                .map(|name| params[*name].as_i64().unwrap())
                .collect();
        assert_eq!(got, e.params, "{c}");
    }
    // The collective writes of rank 5 of 8 land at (i*8 + 5) * BLOCK.
    let offs: Vec<i64> = calls
        .iter()
        .filter(|c| c["op"] == "MPI_File_write_at_all")
        .map(|c| c["params"]["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offs, vec![5 * BLOCK, 13 * BLOCK, 21 * BLOCK]);
    // Rank 0's aggregated POSIX writes are children of its collective writes.
    let v = json(&["expand", "--json", s(&p), "--rank", "0"]);
    let agg: Vec<&Value> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["op"] == "MPI_File_write_at_all")
        .collect();
    assert_eq!(agg.len(), COLLECTIVE_ITERS as usize);
    assert_eq!(agg[1]["children"][0]["params"]["offset"], 8 * BLOCK);
}

#[test]
fn synth_json_reports_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.iotrex");
    let v = json(&[
        "synth",
        "--json",
        "--ranks",
        "3",
        "--iters",
        "2",
        "-o",
        s(&p),
    ]);
    assert_eq!(v["bytes"], std::fs::metadata(&p).unwrap().len());
    assert_eq!(v["ranks"], 3);
    let tf = rsd::TraceFile::read(&p).unwrap();
    assert_eq!(tf.header.nranks, 3);
    assert_eq!(
        tf.trace.expand(2).len(),
        rsd_view::synth::events(2, 3, 2).len()
    );
}

#[test]
fn rank_out_of_range_is_a_usage_error() {
    let err = fails(&["expand", &golden(), "--rank", "4"], 2);
    assert!(err.contains("rank 4 is not in the trace"), "{err}");
    assert!(err.contains("--rank"), "{err}");
    assert!(err.contains("spmd_4x10.iotrex"), "{err}");
    assert!(err.contains("0-3"), "{err}");
    // Not a number at all: clap's own usage error, also status 2.
    let o = iotrex(&["expand", &golden(), "--rank", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn bad_files_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.iotrex");
    let bad_magic = dir.path().join("text.iotrex");
    std::fs::write(&bad_magic, "this is not a trace\n").unwrap();
    let bytes = std::fs::read(golden()).unwrap();
    let truncated = dir.path().join("cut.iotrex");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let corrupt = dir.path().join("flipped.iotrex");
    let mut c = bytes.clone();
    let mid = c.len() / 2;
    c[mid] ^= 0x40;
    std::fs::write(&corrupt, &c).unwrap();
    let empty = dir.path().join("empty.iotrex");
    std::fs::write(&empty, b"").unwrap();

    let cases = [
        (&missing, "No such file"),
        (&bad_magic, "not an iotrex trace"),
        (&truncated, "truncated"),
        (&corrupt, "checksum mismatch"),
        (&empty, "not an iotrex trace"),
    ];
    for (file, what) in cases {
        for cmd in [
            vec!["show", s(file)],
            vec!["stats", "--json", s(file)],
            vec!["expand", s(file), "--rank", "0"],
        ] {
            let err = fails(&cmd, 1);
            assert!(err.contains(s(file)), "{cmd:?}: {err}");
            assert!(err.contains(what), "{cmd:?}: {err}");
            // The OS error is said once, not repeated through the error's source chain.
            assert!(err.matches("os error").count() <= 1, "{err}");
        }
    }
    // The hint for a truncated file says what probably happened.
    let err = fails(&["show", s(&truncated)], 1);
    assert!(err.contains("hint: "), "{err}");
}

#[test]
fn output_dir_missing_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("no/such/dir/x.iotrex");
    let err = fails(&["synth", "--ranks", "2", "--iters", "1", "-o", s(&p)], 1);
    assert!(err.contains("no/such/dir/x.iotrex"), "{err}");
}

#[test]
fn closed_pipe_is_not_an_error() {
    // `iotrex expand big.iotrex --rank 0 | head -1`: the reader goes away long before the end.
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let p = synth(dir.path(), 2, 100_000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(["expand", s(&p), "--rank", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "MPI_Init\n");
    // The pipe's read end is dropped here; the rest of the ~4 MB cannot be written.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {err}", out.status);
    assert!(err.is_empty(), "{err}");
}

/// A trace with `depth` loops nested around one barrier, written through rsd (valid checksum).
fn nested_trace(dir: &Path, depth: usize) -> PathBuf {
    use rsd::trace::{Event, Loop, Node, NodeKind};
    use rsd::value::Group;
    use rsd::{Elastic, Header, Op, RankFn, RankSet, Trace, TraceFile, Val};
    let p = dir.join(format!("nested{depth}.iotrex"));
    let path = p.clone();
    // Built, encoded and dropped on a big stack: each of those recurses per level.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let two = Elastic {
                groups: vec![Group {
                    ranks: RankSet::all(1),
                    val: Val::Const(RankFn::Const(2)),
                }],
            };
            let mut node = Node {
                ranks: RankSet::all(1),
                kind: NodeKind::Event(Event {
                    op: Op::Barrier,
                    sig: 1,
                    path: None,
                    params: vec![two.clone()],
                    timing: Default::default(),
                    children: vec![],
                }),
            };
            for _ in 0..depth {
                node = Node {
                    ranks: RankSet::all(1),
                    kind: NodeKind::Loop(Loop {
                        iters: two.clone(),
                        body: vec![node],
                    }),
                };
            }
            let tf = TraceFile {
                header: Header::new(1),
                trace: Trace { nodes: vec![node] },
            };
            tf.write(&path).expect("write nested trace");
        })
        .unwrap()
        .join()
        .unwrap();
    p
}

#[test]
fn deeply_nested_files_are_refused_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    // Valid nesting still works.
    let ok_file = nested_trace(dir.path(), 5);
    let out = ok(&["expand", s(&ok_file), "--rank", "0"]);
    assert_eq!(out.lines().count(), 32, "{out}");
    // Deeper than the model allows (64): refused by validation, or by the decoder's own
    // depth limit, as a clean error rather than a stack overflow.
    for depth in [100, 2000] {
        let f = nested_trace(dir.path(), depth);
        for cmd in ["show", "stats"] {
            let err = fails(&[cmd, s(&f)], 1);
            assert!(
                err.contains(s(&f))
                    && (err.contains("nested too deeply") || err.contains("depth limit")),
                "{depth}: {err}"
            );
        }
    }
}
