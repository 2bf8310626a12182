//! Helpers shared by the replay integration tests: generated traces, mini-app traces under
//! the tracer, and the checks every replay must pass.

// Each test crate uses its own subset of these.
#![allow(dead_code)]

use replay::{CommMode, Options, Report};
use rsd::trace::{RawEvent, Trace};
use rsd::{Compressor, Header, TraceFile};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn with_path(mut e: RawEvent, p: &str) -> RawEvent {
    e.path = Some(p.to_string());
    e
}

pub fn build(n: u32, per_rank: impl Fn(u32) -> Vec<RawEvent>) -> TraceFile {
    let traces: Vec<Trace> = (0..n)
        .map(|r| {
            let mut c = Compressor::new(r);
            for e in per_rank(r) {
                c.push(&e);
            }
            c.finish()
        })
        .collect();
    let mut header = Header::new(n);
    header.wall_ns = 50_000_000;
    TraceFile {
        header,
        trace: rsd::merge_tree(traces).unwrap(),
    }
}

pub fn assert_clean(r: &Report) {
    assert!(r.mismatches.is_empty(), "{}", r.render());
    assert_eq!(r.failed, 0, "{}", r.render());
}

pub fn have_mpirun() -> bool {
    Command::new("mpirun").arg("--version").output().is_ok()
}

/// The build's target directory: CARGO_TARGET_DIR when set (as `cargo test` sees it), else the
/// workspace's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The tracer's preload library of this build, if it was built (`cargo build --release -p
/// tracer`).
pub fn tracer_lib() -> Option<PathBuf> {
    let p = target_dir().join("release/libiotrex_tracer.so");
    p.exists().then_some(p)
}

/// Builds `tests/apps/<name>.c` with mpicc into `dir`.
pub fn mpicc(name: &str, dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/apps/{name}.c"));
    let bin = dir.join(name);
    let out = Command::new("mpicc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    out.is_ok_and(|o| o.status.success()).then_some(bin)
}

/// Runs `app args` on `np` ranks under the tracer, which writes `trace`.
pub fn trace_app(np: u32, tracer: &Path, app: &Path, args: &[&str], trace: &Path) {
    let out = Command::new("timeout")
        .args(["-k", "5", "60", "mpirun", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .args(["-x", &format!("LD_PRELOAD={}", tracer.display())])
        .args(["-x", &format!("IOTREX_OUT={}", trace.display())])
        .arg(app)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun runs");
    assert!(
        out.status.success() && trace.exists(),
        "traced run failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a mini-app needs: the tracer, mpirun and mpicc. Prints why a test is skipped.
pub fn app_setup(name: &str, dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (Some(tracer), true) = (tracer_lib(), have_mpirun()) else {
        eprintln!(
            "skipped: needs {}/release/libiotrex_tracer.so and mpirun",
            target_dir().display()
        );
        return None;
    };
    let Some(app) = mpicc(name, dir) else {
        eprintln!("skipped: mpicc failed on tests/apps/{name}.c");
        return None;
    };
    Some((tracer, app))
}

/// Default options with `comm`.
pub fn opts(comm: CommMode) -> Options {
    Options {
        comm,
        ..Options::default()
    }
}

/// (op, count, bytes) of every row of a JSON report.
pub fn ops_of(j: &serde_json::Value) -> Vec<(String, u64, u64)> {
    j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["op"].as_str().unwrap().to_string(),
                o["count"].as_u64().unwrap(),
                o["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

// ---- through the binaries ----

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iotrex-replay")
}

pub fn mpirun(np: u32, args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .args([
            "60",
            "mpirun",
            "--oversubscribe",
            "-np",
            &np.to_string(),
            bin(),
        ])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun runs")
}

/// Replays `trace` under `mpirun -np n` into `root` (created) with `extra` options, and checks
/// what every MPI replay must give: success, counts and bytes equal to the trace's, no failed
/// call. Returns the JSON report and stdout.
pub fn replay_mpi(
    n: u32,
    trace: &Path,
    root: &Path,
    extra: &[&str],
) -> (serde_json::Value, String) {
    std::fs::create_dir_all(root).unwrap();
    let json = root.with_extension("json");
    let mut args = vec![
        trace.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = mpirun(n, &args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("op counts and bytes equal the trace's"),
        "{stdout}"
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["mismatches"].as_array().unwrap().len(), 0, "{stdout}");
    assert_eq!(j["failed"], 0, "{stdout}");
    (j, stdout)
}

/// The bytes a replay leaves in a file the application wrote through views, derived from the
/// application's own file: each rank wrote the byte rank+1 everywhere, so a byte's value says
/// who wrote it, and zero bytes are holes. The replay fills each call's buffer with the
/// pattern from its start, and a view maps a buffer onto the file in increasing order; so the
/// k-th byte of the file a rank wrote is pattern byte k minus the start of its call, given the
/// byte sizes of each rank's write calls on the file, in order.
pub fn replayed_bytes(orig: &[u8], calls: &[usize]) -> Vec<u8> {
    let mut seen: std::collections::HashMap<u8, usize> = std::collections::HashMap::new();
    orig.iter()
        .map(|&who| {
            if who == 0 {
                return 0;
            }
            let k = seen.entry(who).or_insert(0);
            let mut at = *k;
            *k += 1;
            for c in calls {
                if at < *c {
                    break;
                }
                at -= c;
            }
            replay::engine::Pattern::byte(at)
        })
        .collect()
}
