//! Extrapolation to a target machine's shape, on real runs on the emulated cluster
//! (`scripts/cluster.sh`, Open MPI's defaults): the IOR-like mini-app writing a file per
//! process with IOR's node queries (`ior_like -N -F`) and a metadata-heavy program after
//! mdtest (`md_like`), traced at 2 nodes x 1, 2, 3, 4 ranks and extrapolated to 2 nodes x 8
//! (more ranks per node), and at 2, 3, 4, 5 nodes x 2 ranks and extrapolated to 8 nodes x 2
//! (more nodes); each extrapolation is compared with a real run at the target, which `diff`
//! must call identical. The node queries are where the layout shows: the shared-memory
//! split's color is the node leader `ppn*(rank/ppn)`, the rank on the node `rank%ppn`, and
//! the gather's receive count exists on the root alone.

use crate::common;
use common::nodes::{Grow, Program, extrapolates_as_run, trace};
use std::path::PathBuf;

const IOR: &[&str] = &[
    "-N", "-F", "-t", "4096", "-b", "8192", "-s", "2", "-o", "DATA/f",
];
const MD: &[&str] = &["-n", "4", "-d", "DATA/md"];

#[test]
fn ior_file_per_process_to_more_ranks_per_node() {
    // The inputs' ranks per node differ: the target's is said.
    extrapolates_as_run(
        &Program::app("ior_like", IOR),
        Grow::RanksPerNode,
        [1, 2, 3, 4],
        8,
        &["--ranks-per-node", "8"],
        &[],
    );
}

#[test]
fn ior_file_per_process_to_more_nodes() {
    // Every input has 2 ranks per node: the target keeps them.
    let p = Program::app("ior_like", IOR);
    extrapolates_as_run(&p, Grow::Nodes, [2, 3, 4, 5], 8, &[], &[]);
}

#[test]
fn metadata_program_to_more_ranks_per_node() {
    extrapolates_as_run(
        &Program::app("md_like", MD),
        Grow::RanksPerNode,
        [1, 2, 3, 4],
        8,
        &["--nodes", "2"],
        &[],
    );
}

#[test]
fn metadata_program_to_more_nodes() {
    let p = Program::app("md_like", MD);
    extrapolates_as_run(&p, Grow::Nodes, [2, 3, 4, 5], 8, &[], &[]);
}

/// 6 ranks as 2 nodes x 3 and as 3 nodes x 2 are two scales, not two runs of one: mixed with
/// 2 x 2, 4 x 2 and 2 x 4, the inputs fit the node models through both kinds of growth, and
/// extrapolate to 2 x 8 and to 8 x 2 as real runs there, with no value taken for one that
/// belongs to the run.
#[test]
fn metadata_program_from_two_layouts_of_one_rank_count() {
    let p = Program::app("md_like", MD);
    let inputs: Vec<PathBuf> = [(Grow::RanksPerNode, 2), (Grow::RanksPerNode, 3)]
        .into_iter()
        .chain([(Grow::RanksPerNode, 4), (Grow::Nodes, 3), (Grow::Nodes, 4)])
        .map(|(g, k)| trace(&p, g, k))
        .collect();
    for (grow, extra) in [(Grow::RanksPerNode, "8"), (Grow::Nodes, "2")] {
        let real = trace(&p, grow, 8);
        let (nodes, ppn) = grow.layout(8);
        let scratch = common::scratch();
        let out = scratch.path().join(format!("md.{nodes}x{ppn}.iotrex"));
        let o = common::extrap(&inputs, 16, &out, &["--ranks-per-node", extra]);
        assert!(
            o.status.success(),
            "to {nodes} x {ppn}: {}",
            common::text(&o)
        );
        let tf = rsd::TraceFile::read(&out).unwrap();
        assert!(
            !rsd::runvalue::present(&tf.trace.nodes),
            "to {nodes} x {ppn}: a layout's values taken for run values"
        );
        common::assert_identical(&format!("md_like to {nodes} x {ppn}"), &out, &real);
    }
}
