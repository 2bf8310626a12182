//! Extrapolation to a target machine's shape under MPICH (hydra through the emulated
//! cluster's agent, MPICH's defaults): the metadata-heavy `md_like` traced at 2, 3, 4, 5 nodes
//! x 2 ranks and extrapolated to 8 x 2, and the IOR-like app's collective MPI-IO traced at 2
//! nodes x 1, 2, 3, 4 ranks and extrapolated to 2 x 8; `diff` against a real run at the target
//! must say identical. MPICH's node queries and its ROMIO differ from Open MPI's, so these are
//! their own runs.

use crate::common;
use common::cluster::cluster_of;
use std::path::{Path, PathBuf};

/// Traces MPICH's build of `app` with `args` (`DATA` stands for `data`) at `nodes` x `ppn`
/// into `dir`.
fn trace(app: &str, args: &[&str], nodes: u32, ppn: u32, dir: &Path) -> PathBuf {
    let c = cluster_of(nodes.max(2));
    let data = dir.join("data");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let out = dir.join(format!("{app}.{nodes}x{ppn}.iotrex"));
    let mut argv = common::trace_prefix(&out, &[]);
    argv.extend(c.mpich(nodes, ppn));
    argv.push(common::mpich::app(app).into());
    let data_s = data.to_str().unwrap();
    argv.extend(args.iter().map(|a| a.replace("DATA", data_s).into()));
    let o = c.run_mpich(&argv);
    assert!(
        o.status.success(),
        "{app} at {nodes} x {ppn}: {}",
        common::status_text(&o)
    );
    let tf = rsd::TraceFile::read(&out).unwrap();
    let mc = tf.header.mpi_config.as_ref().expect("an MPI configuration");
    assert_eq!(mc.node_ranks, [(ppn, nodes)], "{app} at {nodes} x {ppn}");
    out
}

/// Traces `app` at the `inputs` layouts and at `target`, extrapolates the inputs to the
/// target's layout and diffs the result against the real run.
fn extrapolates_as_run(app: &str, args: &[&str], inputs: &[(u32, u32)], target: (u32, u32)) {
    let dir = common::scratch();
    let traced: Vec<PathBuf> = inputs
        .iter()
        .map(|&(n, p)| trace(app, args, n, p, dir.path()))
        .collect();
    let real = trace(app, args, target.0, target.1, dir.path());
    let out = dir.path().join(format!("{app}.extrap.iotrex"));
    let ppn = target.1.to_string();
    let o = common::extrap(
        &traced,
        target.0 * target.1,
        &out,
        &["--ranks-per-node", &ppn],
    );
    assert!(o.status.success(), "{app}: {}", common::text(&o));
    common::assert_identical(&format!("{app} under MPICH"), &out, &real);
}

#[test]
fn metadata_program_to_more_nodes() {
    extrapolates_as_run(
        "md_like",
        &["-n", "4", "-d", "DATA/md"],
        &[(2, 2), (3, 2), (4, 2), (5, 2)],
        (8, 2),
    );
}

#[test]
fn collective_mpiio_to_more_ranks_per_node() {
    extrapolates_as_run(
        "ior_like",
        &[
            "-a", "mpiio", "-c", "-t", "65536", "-b", "131072", "-s", "2", "-o", "DATA/f",
        ],
        &[(2, 1), (2, 2), (2, 3), (2, 4)],
        (2, 8),
    );
}
