//! Collective MPI-IO with hints the program passes to `MPI_File_open` (`cb_nodes` 2 and 3):
//! the tracer records them in the header (Open MPI 4.1.4's `MPI_File_get_info` gives them back
//! as passed), `iotrex extrap` derives the nested calls with the hinted aggregator count, and
//! `iotrex diff` against real runs says identical. Hints that differ between the input scales
//! refuse, naming the hint, its values and the scales.
//!
//! Under ROMIO (`--mca io romio321`) `cb_nodes` alone is capped by the default
//! `cb_config_list` `*:1` to one aggregator per node (one here), so the programs also pass
//! `cb_config_list=*:*` to get 2 and 3 aggregators; the checkpoints' third file passes
//! `cb_nodes` alone and gets ROMIO's cap.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// The hints recorded for the file named `name` (in the data directory).
fn hints_of(trace: &Path, name: &str) -> Vec<(String, String)> {
    let tf = rsd::TraceFile::read(trace).unwrap();
    let cfg = tf.header.mpi_config.expect("an MPI configuration");
    cfg.file_hints
        .into_iter()
        .find(|(p, _)| p.ends_with(&format!("/{name}")))
        .map(|(_, h)| h)
        .unwrap_or_default()
}

/// One program's runs: the inputs at 4, 8, 12 and 16 ranks, in `dir`, with data in `data`.
struct Runs {
    dir: tempfile::TempDir,
    data: PathBuf,
    inputs: Vec<PathBuf>,
}

/// Traces `app args` at 4, 8, 12 and 16 ranks, extrapolates to 32 and 64 and checks that
/// every collective call site is derived with `aggs` aggregators from the cb_nodes hint
/// `cb` (`--explain`), and that each extrapolation is identical to a real run.
fn check(name: &str, app_name: &str, args: &[&str], io: Option<&str>, cb: u32, aggs: &str) -> Runs {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let at = |np: u32| dir.path().join(format!("{np}.iotrex"));
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| {
            trace_in(&at(np), &data, np, app_name, args, io);
            at(np)
        })
        .collect();
    let lib = if io.is_some() { "ROMIO" } else { "OMPIO" };
    for target in [32u32, 64] {
        let real = dir.path().join(format!("{target}.real.iotrex"));
        trace_in(&real, &data, target, app_name, args, io);
        let out = dir.path().join(format!("{target}.extrap.iotrex"));
        let (all, derived) = extrap_explained(name, &inputs, target, &out);
        let hint = format!("the file's cb_nodes hint {cb}");
        assert!(
            !derived.is_empty()
                && derived
                    .iter()
                    .all(|l| l.contains("derived by the model") && l.contains(lib))
                && derived
                    .iter()
                    .any(|l| l.contains(aggs) && l.contains(&hint)),
            "{name}: at {target} every collective call site must be derived, with {aggs} \
             from {hint}:\n{all}"
        );
        assert_identical(name, &out, &real);
    }
    Runs { dir, data, inputs }
}

/// ior_like collective with read-back, segmented (contiguous per rank) or strided, with the
/// hints `hints` (KEY=VALUE).
fn ior(strided: bool, hints: &[&'static str]) -> Vec<&'static str> {
    let mut a = vec!["-a", "mpiio", "-c", "-R"];
    if strided {
        a.extend(["-L", "strided", "-t", "4096", "-b", "8192", "-s", "2"]);
        a.extend(["-o", "{d}/str.dat"]);
    } else {
        a.extend([
            "-t",
            "65536",
            "-b",
            "131072",
            "-s",
            "2",
            "-o",
            "{d}/seg.dat",
        ]);
    }
    for h in hints {
        a.extend(["-H", h]);
    }
    a
}

#[test]
fn romio_ior_contiguous_and_strided_with_cb_nodes_2_and_3() {
    for (cb, hint, aggs) in [
        (2, "cb_nodes=2", "2 aggregators (ranks 0-1)"),
        (3, "cb_nodes=3", "3 aggregators (ranks 0-2)"),
    ] {
        for strided in [false, true] {
            let args = ior(strided, &["cb_config_list=*:*", hint]);
            let name = format!("ROMIO ior strided={strided} {hint}");
            let runs = check(&name, "ior_like", &args, Some("romio321"), cb, aggs);
            let file = if strided { "str.dat" } else { "seg.dat" };
            let recorded = hints_of(&runs.inputs[0], file);
            assert!(
                recorded.contains(&("cb_nodes".into(), cb.to_string()))
                    && recorded.contains(&("cb_config_list".into(), "*:*".into())),
                "{name}: hints recorded {recorded:?}"
            );
        }
    }
}

/// Three checkpoints in one run through one call site, each its own file opened with its own
/// hints: 2 and 3 aggregators with collective buffering forced for the writes
/// (`romio_cb_write=enable`: two-phase), and `cb_nodes` 2 without a `cb_config_list` (which
/// ROMIO caps at one aggregator per node) left automatic, so that its writes, which do not
/// interleave, go independently. The one call site's nested calls then come from two of the
/// library's paths, each with its own call sites inside the library.
#[test]
fn romio_checkpoints_with_cb_nodes_2_and_3() {
    let cb = |n: &'static str| ["-H", "romio_cb_write=enable", "-H", n];
    let mut args = vec!["{d}/ck2.dat", "1000003", "-R", "-H", "cb_config_list=*:*"];
    args.extend(cb("cb_nodes=2"));
    args.extend([
        "+",
        "{d}/ck3.dat",
        "1000003",
        "-R",
        "-H",
        "cb_config_list=*:*",
    ]);
    args.extend(cb("cb_nodes=3"));
    args.extend(["+", "{d}/cu.dat", "1000003", "-R", "-H", "cb_nodes=2"]);
    // --explain names one file's choice per call site (ck2.dat, the first by path); diff
    // checks all three.
    let runs = check(
        "ROMIO checkpoints",
        "ckpt_strong",
        &args,
        Some("romio321"),
        2,
        "2 aggregators (ranks 0-1)",
    );
    let input = &runs.inputs[0];
    assert!(hints_of(input, "ck3.dat").contains(&("cb_nodes".into(), "3".into())));
    assert!(
        !hints_of(input, "cu.dat")
            .iter()
            .any(|(k, _)| k == "cb_config_list")
    );
}

/// OMPIO (Open MPI's default) honours `cb_nodes` too. The same program with other hints at
/// one scale refuses, naming the hint, its values and the scales.
#[test]
fn ompio_cb_nodes_and_hints_that_differ_between_scales() {
    let args = ior(true, &["cb_nodes=3"]);
    let runs = check(
        "OMPIO ior strided cb_nodes=3",
        "ior_like",
        &args,
        None,
        3,
        "3 aggregators",
    );
    // At 4 ranks: cb_nodes 2 instead of 3, then no hint at all (same file, same program).
    let at4 = |hints: &[&'static str], file: &str| {
        let p = runs.dir.path().join(file);
        trace_in(&p, &runs.data, 4, "ior_like", &ior(true, hints), None);
        p
    };
    let two = at4(&["cb_nodes=2"], "4.cb2.iotrex");
    let none = at4(&[], "4.none.iotrex");
    for (first, want) in [
        (
            &two,
            r#"hint cb_nodes is "2" at 4 ranks, "3" at 8, 12, 16 ranks"#,
        ),
        (
            &none,
            r#"hint cb_nodes is not given at 4 ranks, "3" at 8, 12, 16 ranks"#,
        ),
    ] {
        let out = runs.dir.path().join("refused.iotrex");
        let mut a: Vec<&str> = vec!["extrap", first.to_str().unwrap()];
        a.extend(runs.inputs[1..].iter().map(|p| p.to_str().unwrap()));
        a.extend(["--ranks", "32", "-o", out.to_str().unwrap()]);
        let o = iotrex(&a);
        let t = text(&o);
        assert!(
            !o.status.success(),
            "hints differ, extrap must refuse:\n{t}"
        );
        assert!(
            t.contains(want) && t.contains("str.dat") && t.contains("same MPI-IO hints"),
            "the refusal must name the file, the hint, its values and the scales:\n{t}"
        );
        assert!(!out.exists(), "a refused extrapolation writes nothing");
    }
}

/// Hints given to `MPI_File_set_view` are recorded for the keys the open did not give
/// (Open MPI's `MPI_File_get_info` reports only the open's): OMPIO's default aggregator count
/// at 8 ranks is 1, and the view's `cb_nodes` 3 makes it 3.
#[test]
fn hints_of_a_view_are_recorded() {
    let dir = scratch();
    let file = dir.path().join("v.dat").display().to_string();
    let trace = dir.path().join("v.8.iotrex");
    let run = mpirun(
        8,
        &app("view_hints"),
        std::slice::from_ref(&file),
        &trace,
        &Opts::default(),
    );
    assert_counts_match(&run, 8);
    let hints = hints_of(&trace, "v.dat");
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert!(
        hints.contains(&pair("cb_config_list", "*:*")) && hints.contains(&pair("cb_nodes", "3")),
        "the open's cb_config_list wins, the view's cb_nodes is added: {hints:?}"
    );
    // The ranks whose write_all has nested writes: the library's aggregators.
    let aggregators: Vec<u32> = (0..8)
        .filter(|r| {
            let o = iotrex(&["expand", trace.to_str().unwrap(), "--rank", &r.to_string()]);
            let t = String::from_utf8_lossy(&o.stdout).to_string();
            let after = t.split("MPI_File_write_all").nth(1).unwrap_or("");
            after
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .any(|l| l.trim_start().starts_with("pwrite"))
        })
        .collect();
    assert_eq!(
        aggregators.len(),
        3,
        "OMPIO took the view's cb_nodes 3 (its default at 8 ranks is 1): {aggregators:?}"
    );
}
