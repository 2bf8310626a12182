//! The extrapolation acceptance on real traces: every mini-app mode is traced at 4, 8, 12 and
//! 16 ranks under the preload tracer, extrapolated to 32 and 64 ranks with `iotrex extrap`, and
//! the result must be identical under `iotrex diff` to a real trace at 32 and 64 ranks.
//!
//! Everything runs under Open MPI's defaults (no MCA parameter pinned): OMPIO takes one
//! collective-buffering aggregator per 8 ranks, so the nested calls of the collective modes
//! change shape between 4 and 16 ranks; extrap derives them with its model of the library,
//! at 32 and 64 ranks and at 2^20.
//!
//! A program's runs with the same arguments are made once and shared by the tests that need
//! them (`common::shared`): the codes export reads ior_mpiio_collective_segmented's, the
//! stdio checkpoints' second set of inputs the first one's.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// The runs by program and arguments.
static RUNS: shared::Series<shared::Scales<PathBuf>> = shared::Series::new();

/// Traces `app args` at `np` ranks, unless another test of this binary did, into
/// `<its series' directory>/<np>.iotrex`. All scales share the series' `data` as the
/// application's data directory, so paths are the same template at every scale.
fn trace(np: u32, app_name: &str, args: &[&str]) -> PathBuf {
    let key = format!("{app_name} {args:?}");
    shared::trace(&RUNS, &key, np, |dir| {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let d = data.display().to_string();
        let a: Vec<String> = args.iter().map(|s| s.replace("{d}", &d)).collect();
        let out = dir.join(format!("{np}.iotrex"));
        let run = mpirun(np, &app(app_name), &a, &out, &Opts::default());
        let tf = run.read();
        assert!(
            !tf.header.incomplete,
            "{app_name} at {np}: {:?}",
            tf.header.notes
        );
        out
    })
}

fn check_mode(name: &str, app_name: &str, args: &[&str]) {
    let (inputs, dir) = check_mode_at(name, app_name, args, &[4, 8, 12, 16]);
    // The same inputs reach a million ranks, in a file at most twice the largest input.
    let out = dir.path().join("1M.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "1048576", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    if name.contains("strong") {
        // 192 KiB shared by 2^20 ranks is not a whole number of 1 KiB transfers.
        assert!(
            !o.status.success(),
            "{name}: strong scaling to 2^20 ranks must refuse"
        );
        return;
    }
    assert!(
        o.status.success(),
        "{name}: extrap to 2^20 refused:\n{}",
        text(&o)
    );
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let largest = inputs.iter().map(|p| size(p)).max().unwrap();
    // Near the inputs' size. The segmented collective writes of 8 KiB
    // blocks, whose OMPIO file domains cut the blocks at another place on every aggregator,
    // were 125 KB from 11.4 KB inputs (60.7 MB before that), then 19.0 KB (1.7x). Since ranks
    // merge without splitting on the aggregators' nested calls (`Node::merge_key`) the inputs
    // are 7.5 KB and the output 16.5 KB (2.2x): the bound is 2.5x, the output only shrank.
    assert!(
        size(&out) * 2 <= 5 * largest,
        "{name}: {} B at 2^20 ranks vs {largest} B input",
        size(&out)
    );
    assert_eq!(rsd::TraceFile::read(&out).unwrap().header.nranks, 1 << 20);
}

/// Traces at `scales`, extrapolates to 32 and 64 (into `<dir>/<target>.extrap.iotrex`) and
/// diffs with real runs; returns the input traces and the directory.
fn check_mode_at(
    name: &str,
    app_name: &str,
    args: &[&str],
    scales: &[u32],
) -> (Vec<PathBuf>, tempfile::TempDir) {
    let dir = scratch();
    let inputs: Vec<PathBuf> = scales.iter().map(|&np| trace(np, app_name, args)).collect();
    for target in [32u32, 64] {
        let real = trace(target, app_name, args);
        let out = dir.path().join(format!("{target}.extrap.iotrex"));
        let mut a: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
        let t = target.to_string();
        a.splice(0..0, ["extrap"]);
        a.extend(["--ranks", &t, "-o", out.to_str().unwrap()]);
        let o = iotrex(&a);
        assert!(
            o.status.success(),
            "{name}: extrap to {target} refused:\n{}",
            text(&o)
        );
        let o = iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{name}: extrapolated and real {target}-rank traces differ:\n{}",
            text(&o)
        );
    }
    (inputs, dir)
}

macro_rules! mode {
    ($test:ident, $app:literal, [$($arg:literal),* $(,)?]) => {
        #[test]
        fn $test() {
            check_mode(stringify!($test), $app, &[$($arg),*]);
        }
    };
}

// ior_like: weak scaling unless -S; -t transfer, -b block, -s segments.
mode!(
    ior_posix_file_per_process,
    "ior_like",
    [
        "-a", "posix", "-F", "-t", "4096", "-b", "16384", "-s", "2", "-o", "{d}/f"
    ]
);
mode!(
    ior_posix_shared_segmented,
    "ior_like",
    [
        "-a", "posix", "-L", "seg", "-t", "4096", "-b", "16384", "-s", "2", "-o", "{d}/f"
    ]
);
mode!(
    ior_posix_shared_strided,
    "ior_like",
    [
        "-a", "posix", "-L", "strided", "-t", "4096", "-b", "16384", "-s", "2", "-o", "{d}/f"
    ]
);
// Strong scaling: 192 KiB per segment shared by all ranks, so each rank's share is 192/n KiB.
mode!(
    ior_posix_strong_scaling,
    "ior_like",
    [
        "-a", "posix", "-F", "-S", "-t", "1024", "-b", "196608", "-s", "1", "-o", "{d}/f"
    ]
);
mode!(
    ior_posix_neighbour_readback,
    "ior_like",
    [
        "-a", "posix", "-F", "-R", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f"
    ]
);
mode!(
    ior_mpiio_independent_segmented,
    "ior_like",
    [
        "-a", "mpiio", "-t", "4096", "-b", "16384", "-s", "2", "-o", "{d}/f"
    ]
);
mode!(
    ior_mpiio_collective_segmented,
    "ior_like",
    [
        "-a", "mpiio", "-c", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f"
    ]
);
mode!(
    ior_mpiio_collective_strided_readback,
    "ior_like",
    [
        "-a", "mpiio", "-c", "-L", "strided", "-R", "-t", "4096", "-b", "8192", "-s", "2", "-o",
        "{d}/f"
    ]
);
mode!(
    io_sample_weak,
    "io_sample",
    ["{d}", "10", "4096", "2", "8192"]
);
mode!(groups_of_four, "groups", ["{d}", "4", "3", "4096"]);
mode!(comm_mix_phases, "comm_mix", ["{d}", "3", "100", "4096"]);

// stdio_app's per-rank logs print the rank, so each fprintf returns one byte more for every
// decimal digit of the rank. Below 20 ranks that is indistinguishable from `rank/10` blocks:
// extrap must refuse rather than pick one, and with a scale past rank 20 it is exact.
#[test]
fn stdio_logs_refused_below_twenty_ranks_exact_beyond() {
    let dir = scratch();
    let args = ["{d}", "3", "4096", "5"];
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(np, "stdio_app", &args))
        .collect();
    let out = dir.path().join("refused.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "32", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    let msg = text(&o);
    assert!(
        !o.status.success(),
        "extrap guessed instead of refusing:\n{msg}"
    );
    assert!(
        msg.contains("fprintf") && msg.contains("ret") && msg.contains("disagree"),
        "{msg}"
    );
    assert!(!out.exists(), "a refusal writes nothing");
    check_mode_at("stdio_checkpoints", "stdio_app", &args, &[4, 8, 16, 24]);
}

#[test]
fn random_offsets_are_refused_naming_the_offset() {
    let dir = scratch();
    let args = [
        "-a", "posix", "-F", "-r", "-t", "4096", "-b", "32768", "-s", "2", "-o", "{d}/f",
    ];
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(np, "ior_like", &args))
        .collect();
    let out = dir.path().join("x.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "64", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    assert!(msg.contains("pwrite") && msg.contains("offset"), "{msg}");
    assert!(msg.contains("hint:"), "{msg}");
    assert!(!out.exists());
}

/// codes-stats of an export, without TOTAL_DELAY: delays come from timing, which extrapolation
/// fits rather than reproduces.
fn codes_counts(trace: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "export",
        "codes",
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "iolang",
    ];
    a.extend_from_slice(extra);
    let o = iotrex(&a);
    assert!(o.status.success(), "{}", text(&o));
    let o = iotrex(&[
        "--json",
        "codes-stats",
        "--format",
        "iolang",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_object_mut().unwrap().remove("TOTAL_DELAY");
    v
}

#[test]
fn codes_export_of_extrapolated_and_real_64_ranks_agree() {
    let args = [
        "-a", "mpiio", "-c", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f",
    ];
    // The same program as ior_mpiio_collective_segmented: its runs serve both.
    let (_, dir) = check_mode_at("codes", "ior_like", &args, &[4, 8, 12, 16]);
    let extrap = dir.path().join("64.extrap.iotrex");
    let real = trace(64, "ior_like", &args);
    for extra in [&[][..], &["--max-blocksize", "4KiB"][..]] {
        let a = codes_counts(
            &extrap,
            &dir.path().join(format!("ce{}", extra.len())),
            extra,
        );
        let b = codes_counts(&real, &dir.path().join(format!("cr{}", extra.len())), extra);
        assert_eq!(a, b, "{extra:?}");
        assert!(a["NUM_WRITES"].as_u64().unwrap() > 0);
    }
}
