//! Offsets the other ranks' calls decide (a prefix sum over the ranks, `rsd::Val::Exscan`; the
//! end of the file so far, `rsd::Val::FileEnd`) are the same in every consumer of a trace as
//! in the run itself.
//!
//! `textdump` (tests/apps/textdump.c) writes text whose length depends on the data to one
//! shared file, each rank at `MPI_Exscan` of the lengths plus the file's length so far: the
//! tracer holds those offsets as the prefix-sum model. Traced with the raw per-rank logs
//! (`IOTREX_RAW`), rank by rank, every offset must be the one the call passed in `iotrex
//! expand`, in `calls.parquet` (read by DuckDB), in the CODES export's kernels and in a replay's
//! file, and `iotrex diff` must call the trace identical to the same calls held as each rank's
//! values. A consumer that evaluated the model alone printed its start (offset 0) instead.
//!
//! The OTF2 export is not compared: its I/O records carry no offset (OTF2's
//! `IoOperationBegin` has none).

use crate::common;
use common::*;
use rsd::{FlatEvent, Param, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const NP: u32 = 4;

/// Per rank, every call with an offset parameter (nested calls too, depth first): (op, offset).
type Offsets = BTreeMap<u32, Vec<(String, i64)>>;

/// One traced run of textdump in `mode`, its raw logs beside the trace.
struct Traced {
    run: Run,
    tf: TraceFile,
    _dir: tempfile::TempDir,
}

fn traced(mode: &str) -> Traced {
    let dir = scratch();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let trace = dir.path().join(format!("textdump.{NP}.iotrex"));
    let o = Opts {
        raw: true,
        env: vec![("IOTREX_APPROX", "none".to_string())],
        ..Opts::default()
    };
    let run = mpirun(
        NP,
        &app("textdump"),
        &args(&[out.to_str().unwrap(), "3", mode]),
        &trace,
        &o,
    );
    let tf = run.read();
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    // The test is about the models: the trace must hold one.
    assert!(
        rsd::prefix::present(&tf.trace),
        "textdump {mode}: the trace holds no prefix-sum or end-of-file offset"
    );
    Traced { run, tf, _dir: dir }
}

fn flat_offsets(e: &FlatEvent, out: &mut Vec<(String, i64)>) {
    if let Some(o) = e.get(Param::Offset) {
        out.push((e.op.name().to_string(), o));
    }
    for c in &e.children {
        flat_offsets(c, out);
    }
}

/// What the run passed: the raw logs.
fn raw(t: &Traced) -> Offsets {
    (0..NP)
        .map(|r| {
            let mut v = Vec::new();
            t.run.raw(r).iter().for_each(|e| flat_offsets(e, &mut v));
            (r, v)
        })
        .collect()
}

/// What `iotrex expand --json` prints.
fn expanded(trace: &Path) -> Offsets {
    fn walk(c: &serde_json::Value, out: &mut Vec<(String, i64)>) {
        if let Some(o) = c["params"].get("offset").and_then(|o| o.as_i64()) {
            out.push((c["op"].as_str().unwrap().to_string(), o));
        }
        for k in c["children"].as_array().into_iter().flatten() {
            walk(k, out);
        }
    }
    (0..NP)
        .map(|r| {
            let o = iotrex(&[
                "expand",
                "--json",
                trace.to_str().unwrap(),
                "--rank",
                &r.to_string(),
            ]);
            assert!(o.status.success(), "{}", text(&o));
            let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let mut v = Vec::new();
            for c in j["calls"].as_array().unwrap() {
                walk(c, &mut v);
            }
            (r, v)
        })
        .collect()
}

/// What `calls.parquet` holds, read by DuckDB (as tests/it/export_parquet.rs does).
fn parquet(trace: &Path, dir: &Path) -> Offsets {
    let o = iotrex(&[
        "export",
        "parquet",
        trace.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let sql = format!(
        "SELECT rank, op, \"offset\" FROM '{}' WHERE \"offset\" IS NOT NULL ORDER BY rank, seq",
        dir.join("calls.parquet").display()
    );
    let script = format!(
        "import duckdb, json\nfor r in duckdb.sql({sql:?}).fetchall(): print(json.dumps(r))\n"
    );
    let o = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(&script)
        .env("PYTHONPATH", target_dir().join("pydeps"))
        .output()
        .expect("run /usr/bin/python3");
    assert!(o.status.success(), "{}", text(&o));
    let mut out: Offsets = (0..NP).map(|r| (r, Vec::new())).collect();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let row: (u32, String, i64) = serde_json::from_str(l).unwrap();
        out.get_mut(&row.0).unwrap().push((row.1, row.2));
    }
    out
}

/// Per rank, the (size, offset) of every explicit-offset POSIX write the run made to the
/// dump (the file of its last one: the MPI library writes its own files too), and of every
/// `writeat` of the CODES export's iolang kernels to the file of the last one.
fn posix_writes(raw: &BTreeMap<u32, Vec<FlatEvent>>) -> BTreeMap<u32, Vec<(i64, i64)>> {
    fn walk(e: &FlatEvent, out: &mut Vec<(i64, i64, i64)>) {
        if e.op == rsd::Op::Pwrite {
            out.push((e.p(Param::Fd), e.p(Param::Count), e.p(Param::Offset)));
        }
        e.children.iter().for_each(|c| walk(c, out));
    }
    raw.iter()
        .map(|(&r, es)| {
            let mut v = Vec::new();
            es.iter().for_each(|e| walk(e, &mut v));
            (r, of_last_file(v))
        })
        .collect()
}

/// The (size, offset) of the writes `(file, size, offset)` to the file of the last one.
fn of_last_file(v: Vec<(i64, i64, i64)>) -> Vec<(i64, i64)> {
    let last = v.last().map(|w| w.0);
    v.into_iter()
        .filter(|w| Some(w.0) == last)
        .map(|w| (w.1, w.2))
        .collect()
}

fn codes(trace: &Path, dir: &Path) -> BTreeMap<u32, Vec<(i64, i64)>> {
    let o = iotrex(&[
        "export",
        "codes",
        trace.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
        "--format",
        "iolang",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    (0..NP)
        .map(|r| {
            let k = std::fs::read_to_string(dir.join(format!("rank{r}.kernel"))).unwrap();
            let v = k
                .lines()
                .filter_map(|l| l.trim().strip_prefix("writeat "))
                .map(|w| {
                    let f: Vec<i128> = w
                        .trim_end_matches(';')
                        .split(',')
                        .map(|x| x.trim().parse().unwrap())
                        .collect();
                    (f[0] as i64, f[1] as i64, f[2] as i64)
                })
                .collect();
            (r, of_last_file(v))
        })
        .collect()
}

/// The trace with every model replaced by each rank's offsets (what a real run's tracer
/// writes where it does not take the model).
fn as_values(tf: &TraceFile, path: &Path) -> PathBuf {
    let mut t = tf.clone();
    rsd::prefix::resolve(&mut t.trace);
    assert!(!rsd::prefix::present(&t.trace));
    t.write(path).unwrap();
    path.to_path_buf()
}

fn check(mode: &str) {
    let t = traced(mode);
    let want = raw(&t);
    assert!(
        want.values().flatten().any(|(_, o)| *o != 0),
        "textdump {mode}: every offset is 0"
    );
    let trace = t.run.trace.clone();
    let dir = trace.parent().unwrap().to_path_buf();
    assert_eq!(expanded(&trace), want, "textdump {mode}: iotrex expand");
    assert_eq!(
        parquet(&trace, &dir.join("pq")),
        want,
        "textdump {mode}: calls.parquet"
    );
    // The library's own per-rank view.
    for r in 0..NP {
        let mut v = Vec::new();
        t.tf.trace
            .expand(r)
            .iter()
            .for_each(|e| flat_offsets(e, &mut v));
        assert_eq!(v, want[&r], "textdump {mode}: Trace::expand of rank {r}");
    }
    let raws: BTreeMap<u32, Vec<FlatEvent>> = (0..NP).map(|r| (r, t.run.raw(r))).collect();
    let pw = posix_writes(&raws);
    let kernels = codes(&trace, &dir.join("codes"));
    for r in 0..NP {
        // Each rank's own POSIX writes (the independent mode's); a collective write's are
        // its aggregators', which the export derives from the same offsets.
        if !pw[&r].is_empty() && mode == "independent" {
            assert_eq!(
                kernels[&r], pw[&r],
                "textdump {mode}: CODES kernel of rank {r}"
            );
        }
    }
    // diff: the trace against the same calls held as values, compared as the structure
    // (no expansion fallback) and through the CLI.
    let values = as_values(&t.tf, &dir.join("values.iotrex"));
    let back = TraceFile::read(&values).unwrap();
    let opts = extrap::diff::DiffOptions {
        expand_limit: 0,
        ..Default::default()
    };
    let d = extrap::diff::diff(&t.tf, &back, &opts);
    assert!(
        d.identical,
        "textdump {mode}: diff against the resolved values: {:?}",
        d.differences
    );
    let o = iotrex(&["diff", trace.to_str().unwrap(), values.to_str().unwrap()]);
    assert!(o.status.success(), "textdump {mode}: {}", text(&o));
    // replay: the replayed file ends where the run's did (the last write's end), every
    // rank's block at its own offset.
    let root = dir.join("replay");
    std::fs::create_dir_all(&root).unwrap();
    let o = iotrex(&[
        "replay",
        trace.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "textdump {mode}: replay: {}", text(&o));
    let end = raws
        .values()
        .flatten()
        .filter(|e| e.get(Param::Offset).is_some() && e.get(Param::Count).is_some())
        .map(|e| e.p(Param::Offset) + e.p(Param::Count))
        .max()
        .unwrap();
    let replayed: Vec<PathBuf> = walkdir(&root)
        .into_iter()
        .filter(|p| p.ends_with("dump.txt"))
        .collect();
    assert_eq!(replayed.len(), 1, "{replayed:?}");
    assert_eq!(
        std::fs::metadata(&replayed[0]).unwrap().len() as i64,
        end,
        "textdump {mode}: the replayed file's length"
    );
}

fn walkdir(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Collective writes at prefix-sum offsets (`MPI_File_write_at_all`).
#[test]
fn collective_dump_offsets_agree_with_the_run() {
    check("random");
}

/// Independent writes at prefix-sum offsets (`MPI_File_write_at`, each with the library's
/// `pwrite` below it).
#[test]
fn independent_dump_offsets_agree_with_the_run() {
    check("independent");
}
