//! Pacing of an MPI replay whose MPI calls are issued for real (`--comm real`, the default):
//! the compute it waits out is the compute its trace plans, however late its ranks wake.
//!
//! `tests/apps/halo3d.c` (an MD code's halo exchange: 12 `MPI_Sendrecv` and an `MPI_Allreduce`
//! a step, microseconds of work between them, no dump) traced at 4 ranks on this machine's 2
//! cores, then replayed with `iotrex-replay --comm real --compute mean` (slept gaps; the
//! default on such a trace burns them). (The same for MPI-IO calls, 1000 collective writes of
//! `ior_like -a mpiio -c`, is not tested: their trace plans 1-15 ms of compute a rank, less
//! than one late wake-up under CI's load, so a bound on it failed with the fix in place.)
//! On an oversubscribed node a rank that sleeps out a gap wakes late (the other ranks poll in
//! their MPI calls on the cores it needs); the replay planned what followed a real MPI or
//! MPI-IO call from the call's late start, so every wake-up's lateness was added to the rank's
//! time: the report's `compute_ns` (what waiting out the gaps took) came to 1.4-1.5 times
//! `compute_plan_ns` (what the trace asked for) for halo3d, 1.4-2 times for the collective
//! writes, and LAMMPS replayed 15-57% more compute than planned. Such a call now moves the plan
//! on by its length from where the plan was, as a POSIX call does, so the gaps after a late
//! wake-up shrink until the rank is back on plan: the waits sum to the plan plus the last
//! wake-up's lateness.

use crate::common;
use common::{Opts, app, mpirun, scratch};
use std::process::Command;

const NP: u32 = 4;

/// Traces `name` with the arguments `argv` (`DATA` stands for a directory of its own) at
/// [`NP`] ranks, replays it with `--comm real --compute mean`; returns the report's compute
/// waited out and planned, in ns.
fn compute_waited_and_planned(name: &str, argv: &[&str]) -> (u64, u64) {
    let dir = scratch();
    let data = dir.path().join("data");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    let trace = dir.path().join(format!("{name}.4.iotrex"));
    let d = data.to_str().unwrap();
    let a: Vec<String> = argv.iter().map(|x| x.replace("DATA", d)).collect();
    mpirun(NP, &app(name), &a, &trace, &Opts::default());

    let bin = common::target_dir().join("release/iotrex-replay");
    assert!(bin.exists(), "{} is not built", bin.display());
    let json = dir.path().join("replay.json");
    let _alone = common::alone();
    let o = Command::new("timeout")
        .args(["-k", "5", "120", "mpirun", "-np", &NP.to_string()])
        .args(["--oversubscribe", "--mca", "btl", "self,vader"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .arg(&bin)
        .arg(&trace)
        .arg("--root")
        .arg(&root)
        // Slept gaps, whose wake-ups are late: the default on this trace (ranks sharing
        // cores) would burn them instead.
        .args(["--comm", "real", "--compute", "mean", "--json-out"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["comm"], "real", "{v}");
    let plan = v["compute_plan_ns"].as_u64().unwrap();
    assert!(plan > 0, "the trace plans no compute: {v}");
    (v["compute_ns"].as_u64().unwrap(), plan)
}

/// Up to the last wake-up's lateness per rank on top of the plan; before, every wake-up's.
fn assert_on_plan(waited: u64, plan: u64, what: &str) {
    assert!(
        (waited as f64) <= plan as f64 * 1.15,
        "{what}: the replay waited out {waited} ns of compute for {plan} ns planned (summed \
         over {NP} ranks): the ranks' lateness accumulates"
    );
}

#[test]
fn real_mpi_calls_do_not_add_the_ranks_wake_up_lateness_to_their_compute() {
    // 400 steps, a dump every 100000 (none): only MPI calls and the work between them.
    let a = ["DATA", "2", "2", "1", "400", "100000"];
    let (waited, plan) = compute_waited_and_planned("halo3d", &a);
    assert_on_plan(waited, plan, "halo3d");
}
