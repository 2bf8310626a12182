//! Real programs traced on the emulated cluster ([`super::cluster`]) at growing node layouts
//! and extrapolated to a target machine's shape, for the tests of `extrap --ranks-per-node`
//! and `--nodes`: a series of runs of one program grows either the ranks per node (2 nodes x
//! 1, 2, 3, 4 ranks) or the nodes (2, 3, 4, 5 nodes x 2 ranks), and its extrapolation to the
//! series' target (2 x 8, 8 x 2) is diffed against a real run there. Each scale of a series is
//! traced once per test binary ([`super::shared`]).

use super::cluster::cluster_of;
use super::shared;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

static RUNS: shared::Series<shared::Scales<PathBuf>> = shared::Series::new();

/// Held while a run uses its program's data directory, which both series of a program share.
static DATA: Mutex<()> = Mutex::new(());

/// How a series places its scales: on 2 nodes with more ranks each, or with 2 ranks on more
/// nodes.
#[derive(Clone, Copy, Debug)]
pub enum Grow {
    RanksPerNode,
    Nodes,
}

impl Grow {
    /// (nodes, ranks per node) of the scale `k`.
    pub fn layout(self, k: u32) -> (u32, u32) {
        match self {
            Grow::RanksPerNode => (2, k),
            Grow::Nodes => (k, 2),
        }
    }
}

/// A program as a series runs it.
#[derive(Clone, Debug)]
pub struct Program<'a> {
    /// Its name, in messages and file names.
    pub name: &'a str,
    /// The executable.
    pub bin: PathBuf,
    /// Its arguments: `DATA` stands for the program's data directory (the same for both
    /// series, so that their traces name the same paths and mix), `NP` for the rank count.
    pub args: &'a [&'a str],
    /// `mpirun` arguments before the program (`--mca io romio321`: a library under test).
    pub mpirun: &'a [&'a str],
    /// `iotrex trace` options (`--pnetcdf`).
    pub trace: &'a [&'a str],
}

impl<'a> Program<'a> {
    /// `tests/apps/<name>.c`, built, with `args` and nothing else.
    pub fn app(name: &'a str, args: &'a [&'a str]) -> Self {
        Program {
            name,
            bin: super::app(name),
            args,
            mpirun: &[],
            trace: &[],
        }
    }
}

/// The trace of `p` at scale `k` of `grow`, traced on the cluster through Open MPI's launch
/// line (once per test binary: a layout both series hold, 2 x 2, is traced once for both).
pub fn trace(p: &Program, grow: Grow, k: u32) -> PathBuf {
    let (nodes, ppn) = grow.layout(k);
    // Keyed by the ranks per node, so that the rank count says the layout.
    let key = format!(
        "{} {:?} {:?} {:?} {ppn} per node",
        p.name, p.args, p.mpirun, p.trace
    );
    shared::trace(&RUNS, &key, nodes * ppn, |dir| {
        let c = cluster_of(nodes.max(2));
        let _held = DATA.lock().unwrap_or_else(|p| p.into_inner());
        let program = format!("{} {:?} {:?} {:?}", p.name, p.args, p.mpirun, p.trace);
        let data = shared::dir(&program).join("data");
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let out = dir.join(format!("{}.{nodes}x{ppn}.iotrex", p.name));
        let mut argv = super::trace_prefix(&out, p.trace);
        let mut launch = c.openmpi(nodes, ppn);
        // The program's own mpirun arguments go before `-np N` (the launch line's last two).
        let np_at = launch.len() - 2;
        launch.splice(np_at..np_at, p.mpirun.iter().map(OsString::from));
        argv.extend(launch);
        argv.push(p.bin.clone().into());
        let (data_s, np) = (data.to_str().unwrap(), (nodes * ppn).to_string());
        argv.extend(
            p.args
                .iter()
                .map(|a| a.replace("DATA", data_s).replace("NP", &np).into()),
        );
        let o = c.run(&argv, &[]);
        let name = p.name;
        assert!(
            o.status.success(),
            "{name} at {nodes} x {ppn}: {}",
            super::status_text(&o)
        );
        let tf = rsd::TraceFile::read(&out).unwrap();
        assert!(
            !tf.header.incomplete,
            "{name} at {nodes} x {ppn}: incomplete"
        );
        let mc = tf.header.mpi_config.as_ref().expect("an MPI configuration");
        assert_eq!(mc.node_ranks, [(ppn, nodes)], "{name} at {nodes} x {ppn}");
        out
    })
}

/// Extrapolates `p` from the scales `ks` of `grow` to the scale `target` (with `extra`
/// options and `--explain`), checks the output's layout and diffs it against a real run
/// there (with `diff` options: `--tolerance` where inputs hold summaries), which must say
/// identical (within the tolerance). Returns what `extrap --explain` said.
pub fn extrapolates_as_run(
    p: &Program,
    grow: Grow,
    ks: [u32; 4],
    target: u32,
    extra: &[&str],
    diff: &[&str],
) -> String {
    let inputs: Vec<PathBuf> = ks.iter().map(|&k| trace(p, grow, k)).collect();
    let (nodes, ppn) = grow.layout(target);
    let scratch = super::scratch();
    let name = p.name;
    let out = scratch
        .path()
        .join(format!("{name}.{nodes}x{ppn}.extrap.iotrex"));
    let mut x = extra.to_vec();
    x.push("--explain");
    let o = super::extrap(&inputs, nodes * ppn, &out, &x);
    assert!(
        o.status.success(),
        "{name} {grow:?} to {nodes} x {ppn}: {}",
        super::text(&o)
    );
    let tf = rsd::TraceFile::read(&out).unwrap();
    let mc = tf.header.mpi_config.as_ref().unwrap();
    assert_eq!(mc.node_ranks, [(ppn, nodes)], "the output's layout");
    let real = trace(p, grow, target);
    let d = diffed(&out, &real, diff);
    // Without a tolerance the traces must be identical; with one, `diff` succeeds only where
    // every difference is within it.
    let identical = String::from_utf8_lossy(&d.stdout).starts_with("identical");
    assert!(
        d.status.success() && (identical || !diff.is_empty()),
        "{name} to {nodes} x {ppn}: extrapolated {} and real {} differ:\n{}",
        out.display(),
        real.display(),
        super::text(&d)
    );
    super::text(&o)
}

/// Extrapolates `p` from the scales `ks` of `grow` to the scale `target` (with `extra`
/// options), which must be refused, without a real run there; returns what `extrap` said.
pub fn refused(p: &Program, grow: Grow, ks: [u32; 4], target: u32, extra: &[&str]) -> String {
    let inputs: Vec<PathBuf> = ks.iter().map(|&k| trace(p, grow, k)).collect();
    let (nodes, ppn) = grow.layout(target);
    let scratch = super::scratch();
    let out = scratch.path().join(format!("{}.refused.iotrex", p.name));
    let o = super::extrap(&inputs, nodes * ppn, &out, extra);
    let said = super::text(&o);
    assert!(
        !o.status.success() && !out.exists(),
        "{} {grow:?} to {nodes} x {ppn} was not refused:\n{said}",
        p.name
    );
    said
}

/// `iotrex diff OPTIONS EXTRAPOLATED REAL`.
fn diffed(extrapolated: &Path, real: &Path, options: &[&str]) -> Output {
    let mut a = vec!["diff"];
    a.extend(options);
    a.extend([extrapolated.to_str().unwrap(), real.to_str().unwrap()]);
    super::iotrex(&a)
}
