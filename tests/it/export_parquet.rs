//! `iotrex export parquet` on real traces, read back by DuckDB (from PyPI, installed by
//! scripts/install-deps.sh into target/pydeps): calls and bytes per op equal `iotrex stats`,
//! nested POSIX calls point at their MPI-IO parent and keep their durations when those overrun
//! the parent's, and the README's query (bytes written per rank and file) answers from the
//! table.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn export(trace: &Path, dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "export",
        "parquet",
        trace.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
        "--json",
    ];
    a.extend(extra);
    let o = iotrex(&a);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A collective MPI-IO run under Open MPI's defaults (aggregators' nested POSIX calls) and its
/// Parquet export.
fn collective_run(dir: &Path) -> (PathBuf, PathBuf) {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let t = dir.join("coll.4.iotrex");
    trace_in(
        &t,
        &data,
        4,
        "ior_like",
        &[
            "-a", "mpiio", "-c", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f",
        ],
        None,
    );
    let pq = dir.join("pq");
    // Small row groups, so the reader crosses group boundaries.
    export(&t, &pq, &["--row-group", "16"]);
    (t, pq)
}

#[test]
fn duckdb_counts_calls_and_bytes_per_op_as_stats_does() {
    let dir = scratch();
    let (t, pq) = collective_run(dir.path());
    let stats: serde_json::Value =
        serde_json::from_slice(&iotrex(&["stats", "--json", t.to_str().unwrap()]).stdout).unwrap();
    let calls = pq.join("calls.parquet");
    let rows = duckdb(&format!(
        "SELECT op, count(*), sum(bytes) FROM '{}' GROUP BY op ORDER BY op",
        calls.display()
    ));
    let mut want: Vec<(String, u64, u64)> = stats["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["op"].as_str().unwrap().to_string(),
                o["calls"].as_u64().unwrap(),
                o["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    want.sort();
    let got: Vec<(String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_u64().unwrap(),
                r[2].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert!(
        got.iter()
            .any(|(op, n, _)| op == "MPI_File_write_at_all" && *n == 16),
        "{got:?}"
    );
    // Each call keeps the duration it was given: the time per op adds up to what `stats`
    // says, the aggregators' nested POSIX writes included (their means need not fit in their
    // parent's placed span, and used to be clamped to it, down to 0).
    let times = duckdb(&format!(
        "SELECT op, sum(dur_ns), min(dur_ns) FROM '{}' GROUP BY op ORDER BY op",
        calls.display()
    ));
    for o in stats["ops"].as_array().unwrap() {
        let op = o["op"].as_str().unwrap();
        let want = o["time_ns"].as_f64().unwrap();
        let row = times.iter().find(|r| r[0] == op).unwrap();
        let got = row[1].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-6 * want.max(1.0),
            "{op}: Parquet's dur_ns sums to {got} ns, stats says {want} ns"
        );
        // A call that moved data took time.
        if o["bytes"].as_u64().unwrap() > 0 {
            assert!(
                row[2].as_f64().unwrap() > 0.0,
                "{op}: a call of 0 ns: {times:?}"
            );
        }
    }
    // MPI_Finalize has a time (the wait for the last rank to reach it), in both.
    let fin = times.iter().find(|r| r[0] == "MPI_Finalize").unwrap();
    assert!(
        fin[2].as_f64().unwrap() > 0.0,
        "MPI_Finalize at 0 ns: {times:?}"
    );
    // Every nested call has a parent of its rank one level up, made before it; the
    // aggregators' POSIX writes sit under the collective writes.
    let orphans = duckdb(&format!(
        "SELECT count(*) FROM '{c}' AS k WHERE depth > 0 AND NOT EXISTS \
         (SELECT 1 FROM '{c}' AS p WHERE p.rank = k.rank AND p.seq = k.parent_seq \
          AND p.depth = k.depth - 1 AND p.seq < k.seq)",
        c = calls.display()
    ));
    assert_eq!(orphans[0][0], 0);
    let nested = duckdb(&format!(
        "SELECT p.op, sum(k.bytes) FROM '{c}' AS k JOIN '{c}' AS p \
         ON p.rank = k.rank AND p.seq = k.parent_seq WHERE k.layer = 'POSIX' GROUP BY p.op",
        c = calls.display()
    ));
    let written = nested
        .iter()
        .find(|r| r[0] == "MPI_File_write_at_all")
        .unwrap_or_else(|| panic!("no POSIX call under the collective writes: {nested:?}"));
    assert!(written[1].as_u64().unwrap() >= 4 * 2 * 8192, "{nested:?}");
    // The events table: one row per node, and its call counts add up to the calls table.
    let ev = duckdb(&format!(
        "SELECT count(*), sum(calls) FILTER (WHERE kind = 'event') FROM '{}'",
        pq.join("events.parquet").display()
    ));
    assert_eq!(ev[0][0], stats["nodes"]);
    let total: u64 = want.iter().map(|w| w.1).sum();
    assert_eq!(ev[0][1].as_u64().unwrap(), total);
}

/// The README's query: bytes written per rank and file, by the application's own calls.
#[test]
fn readme_query_bytes_written_per_rank_and_file() {
    let dir = scratch();
    let (t, pq) = collective_run(dir.path());
    let rows = duckdb(&format!(
        "SELECT rank, path, sum(bytes) AS written FROM '{}' WHERE depth = 0 AND bytes > 0 \
         AND op LIKE '%write%' GROUP BY ALL ORDER BY rank, path",
        pq.join("calls.parquet").display()
    ));
    // ior_like -b 8192 -s 2: each rank writes 2 blocks of 8 KiB to the shared file.
    let data_file = dir.path().join("data/f").display().to_string();
    let ours: Vec<_> = rows.iter().filter(|r| r[1] == data_file.as_str()).collect();
    assert_eq!(ours.len(), 4, "{rows:?}");
    for (rank, r) in ours.iter().enumerate() {
        assert_eq!(r[0], rank as u64);
        assert_eq!(r[2], 2 * 8192, "{rows:?}");
    }
    let _ = t;
}

/// An extrapolated trace exports with predicted times, flagged as such.
#[test]
fn an_extrapolated_trace_exports_with_model_times() {
    let dir = scratch();
    let d = dir.path();
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let args = [
        "-a", "posix", "-F", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f",
    ];
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16]
        .iter()
        .map(|&n| {
            let t = d.join(format!("fpp.{n}.iotrex"));
            trace_in(&t, &data, n, "ior_like", &args, None);
            t
        })
        .collect();
    let x = d.join("fpp.40.iotrex");
    extrap_explained("fpp", &inputs, 40, &x);
    let rep = export(&x, &d.join("pq"), &[]);
    assert_eq!(rep["ranks"], 40);
    assert_eq!(rep["predicted"], true);
    let rows = duckdb(&format!(
        "SELECT DISTINCT time_source FROM '{}'",
        d.join("pq/calls.parquet").display()
    ));
    assert_eq!(rows, vec![serde_json::json!(["model"])]);
    let per_rank = duckdb(&format!(
        "SELECT count(DISTINCT rank), sum(bytes) FILTER (WHERE depth = 0 AND op LIKE '%write%') \
         FROM '{}'",
        d.join("pq/calls.parquet").display()
    ));
    assert_eq!(per_rank[0][0], 40);
    assert_eq!(per_rank[0][1], 40 * 2 * 8192);
}

#[test]
fn a_missing_trace_and_an_unwritable_output_are_named() {
    let dir = scratch();
    let o = iotrex(&[
        "export",
        "parquet",
        "/nonexistent/x.iotrex",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("/nonexistent/x.iotrex"), "{}", text(&o));
    let (t, _) = collective_run(dir.path());
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let o = iotrex(&[
        "export",
        "parquet",
        t.to_str().unwrap(),
        "-o",
        blocker.join("sub").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("file/sub"), "{}", text(&o));
}

/// The events table renders a parameter's model as `show` does: textdump's offsets, the
/// exclusive prefix sum of the ranks' data-dependent lengths, read `exscan(count, ...)`, not a
/// list of numbers.
#[test]
fn events_name_the_prefix_sum_model_as_show_does() {
    let dir = scratch();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let t = dir.path().join("textdump.4.iotrex");
    mpirun(
        4,
        &app("textdump"),
        &args(&[out.to_str().unwrap(), "3", "random"]),
        &t,
        &Opts::default(),
    );
    let pq = dir.path().join("pq");
    export(&t, &pq, &[]);
    let rows = duckdb(&format!(
        "SELECT json_extract_string(params, '$.offset') FROM '{}' \
         WHERE op = 'MPI_File_write_at_all'",
        pq.join("events.parquet").display()
    ));
    assert!(!rows.is_empty(), "no MPI_File_write_at_all event");
    for r in &rows {
        let off = r[0].as_str().unwrap_or_default();
        assert!(
            off.starts_with("exscan(count"),
            "offset rendered as {off:?}"
        );
    }
}

/// A nested call whose time overruns its parent's keeps it in `dur_ns`: a compressed event's
/// means come from different calls and ranks, so nested calls' means need not fit in their
/// parent's (here they overrun it outright, which no single call does). The column's sum per
/// op is still what `iotrex stats` says, and each nested call keeps its time; placing them on
/// the parent's span clamped the first and set the second to 0 ns.
#[test]
fn nested_calls_longer_than_their_parent_keep_their_duration() {
    let dir = scratch();
    let n = 2;
    let per_rank = (0..n)
        .map(|r| {
            let mut c = rsd::Compressor::new(r);
            for mut e in rsd_view::synth::events(r, n, 3) {
                if !e.children.is_empty() {
                    e.dur_ns = 1_000;
                    for k in &mut e.children {
                        k.gap_ns = 100;
                        k.dur_ns = 5_000;
                    }
                }
                c.push(&e);
            }
            c.finish()
        })
        .collect();
    let tf = rsd::TraceFile {
        header: rsd::Header::new(n),
        trace: rsd::merge_tree(per_rank).unwrap(),
    };
    let t = dir.path().join("nested.2.iotrex");
    tf.write(&t).unwrap();
    let pq = dir.path().join("pq");
    export(&t, &pq, &[]);
    let stats: serde_json::Value =
        serde_json::from_slice(&iotrex(&["stats", "--json", t.to_str().unwrap()]).stdout).unwrap();
    let calls = pq.join("calls.parquet");
    let times = duckdb(&format!(
        "SELECT op, sum(dur_ns) FROM '{}' GROUP BY op ORDER BY op",
        calls.display()
    ));
    for o in stats["ops"].as_array().unwrap() {
        let op = o["op"].as_str().unwrap();
        let want = o["time_ns"].as_f64().unwrap();
        let row = times.iter().find(|r| r[0] == op).unwrap();
        let got = row[1].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-6 * want.max(1.0),
            "{op}: Parquet's dur_ns sums to {got} ns, stats says {want} ns"
        );
    }
    // Every nested call keeps its 5 us, the second of each parent included.
    let nested = duckdb(&format!(
        "SELECT op, count(*), min(dur_ns), max(dur_ns) FROM '{}' WHERE depth > 0 GROUP BY op",
        calls.display()
    ));
    assert!(!nested.is_empty(), "no nested call: {times:?}");
    for r in &nested {
        assert!(r[1].as_u64().unwrap() >= 2, "{nested:?}");
        assert_eq!(r[2].as_f64(), Some(5_000.0), "{nested:?}");
        assert_eq!(r[3].as_f64(), Some(5_000.0), "{nested:?}");
    }
}
