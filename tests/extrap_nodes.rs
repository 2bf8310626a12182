//! Extrapolation to a target machine's shape, on real runs on the emulated cluster
//! (`scripts/cluster.sh`, Open MPI's defaults): the IOR-like mini-app writing a file per
//! process with IOR's node queries (`ior_like -N -F`) and a metadata-heavy program after
//! mdtest (`md_like`), traced at 2 nodes x 1, 2, 3, 4 ranks and extrapolated to 2 nodes x 8
//! (more ranks per node), and at 2, 3, 4, 5 nodes x 2 ranks and extrapolated to 8 nodes x 2
//! (more nodes); each extrapolation is compared with a real run at the target, which `diff`
//! must call identical. The node queries are where the layout shows: the shared-memory
//! split's color is the node leader `ppn*(rank/ppn)`, the rank on the node `rank%ppn`, and
//! the gather's receive count exists on the root alone.

mod common;
use common::cluster::cluster_of;
use common::shared;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Mutex;

static RUNS: shared::Series<shared::Scales<PathBuf>> = shared::Series::new();

/// How a series places its scales: on 2 nodes with more ranks each, or with 2 ranks on more
/// nodes.
#[derive(Clone, Copy, Debug)]
enum Grow {
    RanksPerNode,
    Nodes,
}

impl Grow {
    /// (nodes, ranks per node) of the scale `k`.
    fn layout(self, k: u32) -> (u32, u32) {
        match self {
            Grow::RanksPerNode => (2, k),
            Grow::Nodes => (k, 2),
        }
    }
}

/// Held while a run uses its program's data directory, which both series of a program share.
static DATA: Mutex<()> = Mutex::new(());

/// The trace of `app` (with `args`; `DATA` stands for the program's data directory, the same
/// for both series, so that their traces name the same paths and mix) at scale `k` of `grow`,
/// traced on the cluster through Open MPI's launch line.
fn trace(app: &str, args: &[&str], grow: Grow, k: u32) -> PathBuf {
    let key = format!("{app} {args:?} {grow:?}");
    let (nodes, ppn) = grow.layout(k);
    shared::trace(&RUNS, &key, nodes * ppn, |dir| {
        let c = cluster_of(nodes.max(2));
        let _held = DATA.lock().unwrap_or_else(|p| p.into_inner());
        let data = shared::dir(&format!("{app} {args:?}")).join("data");
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let out = dir.join(format!("{app}.{nodes}x{ppn}.iotrex"));
        let mut argv: Vec<OsString> = vec![
            env!("CARGO_BIN_EXE_iotrex").into(),
            "trace".into(),
            "--lib".into(),
            common::tracer_lib().into(),
            "-o".into(),
            out.clone().into(),
            "--".into(),
        ];
        argv.extend(c.openmpi(nodes, ppn));
        argv.push(common::app(app).into());
        let data_s = data.to_str().unwrap();
        argv.extend(args.iter().map(|a| a.replace("DATA", data_s).into()));
        let o = c.run(&argv, &[]);
        assert!(
            o.status.success(),
            "{app} at {nodes} x {ppn}: {}",
            common::status_text(&o)
        );
        let tf = rsd::TraceFile::read(&out).unwrap();
        assert!(
            !tf.header.incomplete,
            "{app} at {nodes} x {ppn}: incomplete"
        );
        let mc = tf.header.mpi_config.as_ref().expect("an MPI configuration");
        assert_eq!(mc.node_ranks, [(ppn, nodes)], "{app} at {nodes} x {ppn}");
        out
    })
}

/// Extrapolates `app` from the scales `ks` of `grow` to the scale `target` and diffs the
/// result against a real run there.
fn extrapolates_as_run(
    app: &str,
    args: &[&str],
    grow: Grow,
    ks: [u32; 4],
    target: u32,
    extra: &[&str],
) {
    let inputs: Vec<PathBuf> = ks.iter().map(|&k| trace(app, args, grow, k)).collect();
    let (nodes, ppn) = grow.layout(target);
    let scratch = common::scratch();
    let out = scratch
        .path()
        .join(format!("{app}.{nodes}x{ppn}.extrap.iotrex"));
    let o = common::extrap(&inputs, nodes * ppn, &out, extra);
    assert!(
        o.status.success(),
        "{app} {grow:?} to {nodes} x {ppn}: {}",
        common::text(&o)
    );
    let tf = rsd::TraceFile::read(&out).unwrap();
    let mc = tf.header.mpi_config.as_ref().unwrap();
    assert_eq!(mc.node_ranks, [(ppn, nodes)], "the output's layout");
    let real = trace(app, args, grow, target);
    common::assert_identical(&format!("{app} to {nodes} x {ppn}"), &out, real.as_path());
}

const IOR: &[&str] = &[
    "-N", "-F", "-t", "4096", "-b", "8192", "-s", "2", "-o", "DATA/f",
];
const MD: &[&str] = &["-n", "4", "-d", "DATA/md"];

#[test]
fn ior_file_per_process_to_more_ranks_per_node() {
    // The inputs' ranks per node differ: the target's is said.
    extrapolates_as_run(
        "ior_like",
        IOR,
        Grow::RanksPerNode,
        [1, 2, 3, 4],
        8,
        &["--ranks-per-node", "8"],
    );
}

#[test]
fn ior_file_per_process_to_more_nodes() {
    // Every input has 2 ranks per node: the target keeps them.
    extrapolates_as_run("ior_like", IOR, Grow::Nodes, [2, 3, 4, 5], 8, &[]);
}

#[test]
fn metadata_program_to_more_ranks_per_node() {
    extrapolates_as_run(
        "md_like",
        MD,
        Grow::RanksPerNode,
        [1, 2, 3, 4],
        8,
        &["--nodes", "2"],
    );
}

#[test]
fn metadata_program_to_more_nodes() {
    extrapolates_as_run("md_like", MD, Grow::Nodes, [2, 3, 4, 5], 8, &[]);
}

/// 6 ranks as 2 nodes x 3 and as 3 nodes x 2 are two scales, not two runs of one: mixed with
/// 2 x 2, 4 x 2 and 2 x 4, the inputs fit the node models through both kinds of growth, and
/// extrapolate to 2 x 8 and to 8 x 2 as real runs there, with no value taken for one that
/// belongs to the run.
#[test]
fn metadata_program_from_two_layouts_of_one_rank_count() {
    let inputs: Vec<PathBuf> = [(Grow::RanksPerNode, 2), (Grow::RanksPerNode, 3)]
        .into_iter()
        .chain([(Grow::RanksPerNode, 4), (Grow::Nodes, 3), (Grow::Nodes, 4)])
        .map(|(g, k)| trace("md_like", MD, g, k))
        .collect();
    for (grow, extra) in [(Grow::RanksPerNode, "8"), (Grow::Nodes, "2")] {
        let real = trace("md_like", MD, grow, 8);
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
