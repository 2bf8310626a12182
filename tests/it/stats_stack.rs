//! `iotrex stats --stack` on real runs: `tests/apps/ior_like.c` through MPI-IO, collective and
//! independent, under the MPI library's defaults (traced under a real `mpirun`). The figures
//! it prints are checked against the trace itself, computed here without `rsd_view::stack`: calls
//! and bytes per op from expanding every rank (and against the app's own counts), inclusive
//! time per op as the sum of every node's recorded durations, exclusive time per node as its
//! durations minus those of the calls nested directly in it (never negative in a recorded
//! trace), and the exclusive times of all layers adding up to the application-level calls'.
//! Also: an extrapolated trace is said to carry modelled timing, and bad input is refused
//! naming the file.

use crate::common;
use common::*;
use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Per (op, nested): the sum of the recorded durations of its nodes, the smallest exclusive
/// time of any node (its durations minus its direct children's), and the timing's call count.
#[derive(Default, Debug)]
struct Own {
    inclusive: f64,
    min_exclusive: f64,
    timed_calls: u64,
}

fn own_totals(nodes: &[Node], nested: bool, out: &mut BTreeMap<(String, bool), Own>) -> f64 {
    let mut sum = 0.0;
    for n in nodes {
        match &n.kind {
            NodeKind::Loop(l) => sum += own_totals(&l.body, nested, out),
            NodeKind::Event(e) => {
                let incl = e.timing.dur.total();
                let kids = own_totals(&e.children, true, out);
                let o = out.entry((e.op.name().to_string(), nested)).or_default();
                o.inclusive += incl;
                o.timed_calls += e.timing.dur.count;
                o.min_exclusive = o.min_exclusive.min(incl - kids);
                sum += incl;
            }
        }
    }
    sum
}

/// Exact calls and bytes per (op, nested) and the ranks that made each nested op inside each
/// top-level op, from expanding every rank.
type Expanded = (
    BTreeMap<(String, bool), (u64, u64)>,
    BTreeMap<(String, String), BTreeSet<u32>>,
);

fn expanded(tf: &TraceFile) -> Expanded {
    fn add(e: &rsd::FlatEvent, nested: bool, out: &mut BTreeMap<(String, bool), (u64, u64)>) {
        let x = out.entry((e.op.name().to_string(), nested)).or_default();
        x.0 += 1;
        x.1 += e.op.data_bytes(&e.params);
        for c in &e.children {
            add(c, true, out);
        }
    }
    let mut counts = BTreeMap::new();
    let mut ranks: BTreeMap<(String, String), BTreeSet<u32>> = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        tf.trace.expand_with(r, &mut |e| {
            add(e, false, &mut counts);
            for c in &e.children {
                ranks
                    .entry((e.op.name().to_string(), c.op.name().to_string()))
                    .or_default()
                    .insert(r);
            }
            true
        });
    });
    (counts, ranks)
}

fn stack_json(trace: &Path) -> Value {
    let o = iotrex(&["stats", "--stack", "--json", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).expect("stats --stack --json prints JSON")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Checks every figure of `stats --stack` against the trace; returns the JSON.
fn check_against_trace(run: &Run, np: u32) -> Value {
    assert_counts_match(run, np);
    let tf = run.read();
    let j = stack_json(&run.trace);
    assert_eq!(j["ranks"], np);
    assert_eq!(
        j["modelled"], false,
        "a recorded trace's timing is measured"
    );
    assert!(
        j["notes"].as_array().unwrap().is_empty(),
        "no nested time over its call's in a recorded trace: {}",
        j["notes"]
    );

    let mut own = BTreeMap::new();
    let top_total = own_totals(&tf.trace.nodes, false, &mut own);
    let (exact, _) = expanded(&tf);
    assert!(top_total > 0.0);
    assert!(
        close(j["total_ns"].as_f64().unwrap(), top_total),
        "total {} vs the trace's {top_total}",
        j["total_ns"]
    );

    let ops = j["ops"].as_array().unwrap();
    assert_eq!(ops.len(), own.len(), "one row per op and nesting: {ops:?}");
    for o in ops {
        let k = (
            o["op"].as_str().unwrap().to_string(),
            o["nested"].as_bool().unwrap(),
        );
        let (calls, bytes) = exact[&k];
        let w = &own[&k];
        assert_eq!(o["calls"], calls, "{k:?} calls");
        assert_eq!(o["bytes"], bytes, "{k:?} bytes");
        assert_eq!(w.timed_calls, calls, "{k:?}: every call is timed once");
        let incl = o["inclusive_ns"].as_f64().unwrap();
        let excl = o["exclusive_ns"].as_f64().unwrap();
        assert!(close(incl, w.inclusive), "{k:?}: {incl} vs {}", w.inclusive);
        assert!(
            w.min_exclusive >= 0.0,
            "{k:?}: a node's nested calls take longer than it ({})",
            w.min_exclusive
        );
        assert!(
            excl >= 0.0 && excl <= incl * (1.0 + 1e-9),
            "{k:?}: {excl} of {incl}"
        );
        match o["throughput_bps"].as_f64() {
            Some(t) => assert!(close(t, bytes as f64 * 1e9 / incl), "{k:?} throughput"),
            None => assert!(bytes == 0 || incl == 0.0, "{k:?} has no throughput"),
        }
    }

    // Layers: their ops' sums, and the exclusive times add up to the application's calls.
    let layers = j["layers"].as_array().unwrap();
    let mut excl_sum = 0.0;
    for l in layers {
        let name = l["layer"].as_str().unwrap();
        let mine: Vec<&Value> = ops.iter().filter(|o| o["layer"] == name).collect();
        let sum = |f: &str| mine.iter().map(|o| o[f].as_f64().unwrap()).sum::<f64>();
        assert!(close(
            l["inclusive_ns"].as_f64().unwrap(),
            sum("inclusive_ns")
        ));
        assert!(close(
            l["exclusive_ns"].as_f64().unwrap(),
            sum("exclusive_ns")
        ));
        assert_eq!(l["calls"].as_f64().unwrap(), sum("calls"));
        excl_sum += l["exclusive_ns"].as_f64().unwrap();
    }
    assert!(
        close(excl_sum, top_total),
        "layers' exclusive times {excl_sum} vs application-level calls {top_total}"
    );

    // Each call site: its parts below and its own time add up to its inclusive time, at every
    // level, and its by-layer split does too.
    fn parts_add_up(p: &Value) {
        let below = p["below"].as_array().unwrap();
        let nested: f64 = below
            .iter()
            .map(|b| b["inclusive_ns"].as_f64().unwrap())
            .sum();
        assert!(
            close(
                p["inclusive_ns"].as_f64().unwrap(),
                nested + p["exclusive_ns"].as_f64().unwrap()
            ),
            "{p}"
        );
        below.iter().for_each(parts_add_up);
    }
    for s in j["sites"].as_array().unwrap() {
        parts_add_up(s);
    }
    j
}

fn site<'a>(j: &'a Value, op: &str) -> &'a Value {
    j["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == op)
        .unwrap_or_else(|| panic!("no call site of {op}: {}", j["sites"]))
}

/// The data-moving POSIX calls below a site (`pwrite`, `pwritev`, ... whichever the library
/// used): (calls, bytes, ranks).
fn nested_writes(s: &Value) -> Vec<(String, u64, u64, u64)> {
    s["below"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["layer"] == "POSIX" && b["bytes"].as_u64().unwrap() > 0)
        .map(|b| {
            (
                b["op"].as_str().unwrap().to_string(),
                b["calls"].as_u64().unwrap(),
                b["bytes"].as_u64().unwrap(),
                b["ranks"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn ior_args(data: &Path, collective: bool) -> Vec<String> {
    let d = data.display().to_string();
    let mut a = vec![
        "-a", "mpiio", "-t", "65536", "-b", "131072", "-s", "2", "-o", &d,
    ];
    if collective {
        a.push("-c");
    }
    args(&a)
}

/// 4 ranks x 2 segments x 128 KiB.
const WRITTEN: u64 = 4 * 2 * 131072;

#[test]
fn collective_writes_break_down_into_the_aggregators_posix_writes() {
    let dir = scratch();
    let trace = dir.path().join("ior.c.4.iotrex");
    let run = mpirun(
        4,
        &app("ior_like"),
        &ior_args(&dir.path().join("ior.dat"), true),
        &trace,
        &Opts::default(),
    );
    let j = check_against_trace(&run, 4);
    let s = site(&j, "MPI_File_write_at_all");
    assert_eq!(
        (s["ranks"].as_u64(), s["calls"].as_u64()),
        (Some(4), Some(16))
    );
    assert_eq!(s["bytes"], WRITTEN);
    // The library's POSIX writes carry the data of all ranks, made by the ranks that the
    // expanded trace shows issuing them (the aggregators).
    let w = nested_writes(s);
    assert!(!w.is_empty(), "no POSIX write below the collective: {s}");
    assert_eq!(w.iter().map(|x| x.2).sum::<u64>(), WRITTEN, "{w:?}");
    let (_, who) = expanded(&run.read());
    for (op, _, _, ranks) in &w {
        let want = who[&("MPI_File_write_at_all".to_string(), op.clone())].len() as u64;
        assert_eq!(*ranks, want, "{op}: ranks");
        assert!(*ranks >= 1 && *ranks <= 4);
    }
    let by_layer: Vec<&str> = s["below"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["layer"].as_str().unwrap())
        .collect();
    assert!(by_layer.iter().all(|l| *l == "POSIX"), "{by_layer:?}");

    // The text: the total, the equation of the collective write, and its tree.
    let o = iotrex(&["stats", "--stack", run.trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("(recorded)"), "{t}");
    assert!(t.contains("application-level calls take "), "{t}");
    let eq = t
        .lines()
        .find(|l| l.trim_start().starts_with("MPI_File_write_at_all ") && l.contains(" = "))
        .unwrap_or_else(|| panic!("no equation for the collective write:\n{t}"));
    assert!(eq.contains(&w[0].0) && eq.ends_with(" in MPIIO"), "{eq}");
    assert!(t.contains("(nested)"), "{t}");
}

#[test]
fn independent_writes_break_down_on_every_rank() {
    let dir = scratch();
    let trace = dir.path().join("ior.i.4.iotrex");
    let run = mpirun(
        4,
        &app("ior_like"),
        &ior_args(&dir.path().join("ior.dat"), false),
        &trace,
        &Opts::default(),
    );
    let j = check_against_trace(&run, 4);
    let s = site(&j, "MPI_File_write_at");
    assert_eq!(
        (s["ranks"].as_u64(), s["calls"].as_u64()),
        (Some(4), Some(16))
    );
    // Each rank's library writes that rank's own data.
    let w = nested_writes(s);
    assert_eq!(w.iter().map(|x| x.2).sum::<u64>(), WRITTEN, "{w:?}");
    assert!(
        w.iter().all(|x| x.3 == 4),
        "every rank writes its own: {w:?}"
    );
}

#[test]
fn extrapolated_trace_is_said_to_carry_modelled_timing() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let a = [
        "-a",
        "mpiio",
        "-c",
        "-t",
        "65536",
        "-b",
        "131072",
        "-s",
        "2",
        "-o",
        "{d}/ior.dat",
    ];
    let mut ins = Vec::new();
    for np in [4, 8, 12, 16] {
        let t = dir.path().join(format!("ior.{np}.iotrex"));
        trace_in(&t, &data, np, "ior_like", &a, None);
        ins.push(t.display().to_string());
    }
    let out = dir.path().join("ior.32.iotrex");
    let mut argv: Vec<&str> = vec!["extrap"];
    argv.extend(ins.iter().map(String::as_str));
    argv.extend(["--ranks", "32", "-o", out.to_str().unwrap()]);
    let o = iotrex(&argv);
    assert!(o.status.success(), "{}", text(&o));

    let j = stack_json(&out);
    assert_eq!(j["ranks"], 32);
    assert_eq!(j["modelled"], true);
    let s = site(&j, "MPI_File_write_at_all");
    assert_eq!(s["calls"], 128);
    assert_eq!(s["bytes"], 32 * 2 * 131072);
    let excl: f64 = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["exclusive_ns"].as_f64().unwrap())
        .sum();
    assert!(close(excl, j["total_ns"].as_f64().unwrap()));
    let o = iotrex(&["stats", "--stack", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("modelled: an extrapolated trace"),
        "{}",
        text(&o)
    );
}

#[test]
fn bad_input_is_refused_naming_the_file_and_help_explains_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.iotrex");
    let bad = dir.path().join("bad.iotrex");
    std::fs::write(&bad, b"not a trace").unwrap();
    for f in [&missing, &bad] {
        for json in [false, true] {
            let mut a = vec!["stats", "--stack", f.to_str().unwrap()];
            if json {
                a.insert(0, "--json");
            }
            let o = iotrex(&a);
            assert_eq!(o.status.code(), Some(1), "{}", text(&o));
            let name = f.file_name().unwrap().to_str().unwrap();
            assert!(text(&o).contains(name), "{}", text(&o));
        }
    }
    let o = iotrex(&["stats", "--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    for w in [
        "--stack",
        "inclusive",
        "exclusive",
        "throughput",
        "nested",
        "predictions",
    ] {
        assert!(h.contains(w), "--help lacks {w:?}:\n{h}");
    }
}
