//! The compute mode a replay chooses when `--compute` is not given
//! (`replay::compute_choice`): `work` for a trace whose ranks shared cores, `mean` for one
//! whose ranks each had a core, on real traces of `tests/apps/xstorage.c sync` (8 writes a
//! rank with about 3 ms of compute and a barrier after each) at 2 ranks, each rank run by
//! `taskset` on one CPU and on two. The replays run with `--threads` (2 ranks in this process,
//! so this node is crowded only on a machine with one CPU, where the test needs two anyway).
//! An explicit `--compute mean` is kept, and plans the gaps' wall time where `work` planned
//! their CPU time: the ranks waited for their shared core, so `work` plans less. An
//! extrapolation of traces on one CPU (2, 3 and 4 ranks to 6) holds its gaps' CPU time, fitted
//! apart from the wait for the core, and replays as `work` too.

use crate::common;
use common::{app, scratch, text, tracer_lib};
use std::path::Path;
use std::process::Command;

/// The CPUs this process may run on, from /proc/self/status (`Cpus_allowed_list`).
fn allowed_cpus() -> Vec<u32> {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = s
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_string();
    list.split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()).collect(),
            None => vec![part.parse::<u32>().unwrap()],
        })
        .collect()
}

/// Traces `xstorage sync` at 2 ranks into `trace`, each rank confined to `cpus` by taskset.
fn trace_on(cpus: &[u32], trace: &Path, data: &Path) {
    trace_ranks_on(2, cpus, trace, data)
}

/// Traces `xstorage sync` at `np` ranks into `trace`, each rank confined to `cpus` by taskset.
fn trace_ranks_on(np: u32, cpus: &[u32], trace: &Path, data: &Path) {
    std::fs::create_dir_all(data).unwrap();
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    let o = Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            "mpirun",
            "-np",
            &np.to_string(),
            "--oversubscribe",
        ])
        .args(["--mca", "btl", "self,vader"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .env("IOTREX_OUT", trace)
        .args(["-x", &format!("LD_PRELOAD={}", tracer_lib().display())])
        .args(["-x", "IOTREX_OUT"])
        // Inside the launch: mpirun binds each rank to a core of its own where they fit, over
        // its own affinity.
        .args(["taskset", "-c", &list.join(",")])
        .arg(app("xstorage"))
        .args(["sync", data.to_str().unwrap(), "8", "65536", "30"])
        .output()
        .unwrap();
    assert!(o.status.success(), "traced run failed: {}", text(&o));
    let tf = rsd::TraceFile::read(trace).unwrap();
    let rpc = tf.header.ranks_per_core().expect("ranks per core recorded");
    let want = f64::from(np) / cpus.len() as f64;
    assert!((rpc - want).abs() < 1e-9, "{cpus:?}: {rpc} ranks per core");
}

/// `iotrex replay --threads` of `trace` with `extra`: the JSON report.
fn replay(trace: &Path, root: &Path, extra: &[&str]) -> serde_json::Value {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let json = root.with_extension("json");
    let o = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("replay")
        .arg(trace)
        .arg("--root")
        .arg(root)
        .args(["--threads", "--json-out"])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        (&v["failed"], &v["comm"]),
        (&0.into(), &"real".into()),
        "{v}"
    );
    v
}

#[test]
fn a_trace_whose_ranks_shared_cores_replays_as_work_by_default_one_that_did_not_as_mean() {
    let cpus = allowed_cpus();
    assert!(cpus.len() >= 2, "needs 2 CPUs, has {cpus:?}");
    let dir = scratch();
    let (shared, own) = (
        dir.path().join("shared.iotrex"),
        dir.path().join("own.iotrex"),
    );
    trace_on(&cpus[..1], &shared, &dir.path().join("d1"));
    trace_on(&cpus[..2], &own, &dir.path().join("d2"));
    let root = dir.path().join("root");

    let auto = replay(&shared, &root, &[]);
    assert_eq!(auto["compute"], "work", "{auto}");
    let why = auto["compute_note"].as_str().unwrap_or_default();
    assert!(
        why.contains("traced ranks shared cores (2.000 a core)"),
        "{auto}"
    );

    let mean = replay(&shared, &root, &["--compute", "mean"]);
    assert_eq!(
        (&mean["compute"], &mean["compute_note"]),
        (&"mean".into(), &serde_json::Value::Null)
    );
    let (work_plan, mean_plan) = (
        auto["compute_plan_ns"].as_u64().unwrap(),
        mean["compute_plan_ns"].as_u64().unwrap(),
    );
    assert!(
        work_plan > 0 && (work_plan as f64) < 0.9 * mean_plan as f64,
        "work plans the gaps' CPU time ({work_plan} ns), mean their wall time less blocked \
         ({mean_plan} ns): the 2 ranks shared one core, so work should plan less"
    );

    let alone = replay(&own, &root, &[]);
    assert_eq!(
        (&alone["compute"], &alone["compute_note"]),
        (&"mean".into(), &serde_json::Value::Null)
    );
}

#[test]
fn an_extrapolation_of_traces_whose_ranks_shared_a_core_replays_its_cpu_time_as_work() {
    let cpus = allowed_cpus();
    let dir = scratch();
    let traces: Vec<std::path::PathBuf> = [2u32, 3, 4]
        .iter()
        .map(|&np| {
            let t = dir.path().join(format!("sync.{np}.iotrex"));
            trace_ranks_on(np, &cpus[..1], &t, &dir.path().join(format!("d{np}")));
            t
        })
        .collect();
    let out = dir.path().join("sync.6.iotrex");
    let o = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("extrap")
        .args(&traces)
        .args(["--ranks", "6", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let root = dir.path().join("root");
    let auto = replay(&out, &root, &[]);
    assert_eq!(auto["compute"], "work", "{auto}");
    // The CPU time a rank's gaps plan is the program's own work, which `xstorage sync` does
    // alike at every scale: as at 4 ranks, where the wait for the core is measured apart.
    let per_rank =
        |v: &serde_json::Value, n: f64| v["compute_plan_ns"].as_u64().unwrap() as f64 / n;
    let at4 = replay(&traces[2], &root, &[]);
    assert_eq!(at4["compute"], "work", "{at4}");
    let (work6, work4) = (per_rank(&auto, 6.0), per_rank(&at4, 4.0));
    assert!(
        (work6 / work4 - 1.0).abs() < 0.25,
        "a rank's CPU time: {work6:.0} ns at 6 ranks (extrapolated), {work4:.0} ns at 4 (traced)"
    );
}
