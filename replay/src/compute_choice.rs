//! The compute mode of a replay given no `--compute`: chosen from the trace and this node.
//!
//! A traced gap is wall time. Where the traced ranks outnumbered their cores it holds the time
//! a rank waited for one, and the application's ranks kept the cores busy (compute, and the
//! MPI library polling inside every waiting call). Where this replay's ranks outnumber this
//! node's cores, the same holds of the application run here. In both cases a replay that
//! sleeps its gaps (`--compute mean`) leaves the cores idle, so its real MPI calls complete
//! at once: LAMMPS at 4 ranks on 2 cores replayed 15-40% short, within 1.5% with `--compute
//! work`, which burns each gap's CPU time so that the ranks meet the contention for cores for
//! real (docs/xstorage.md). Where every rank had a core, traced and here, a gap's wall time
//! is its CPU time up to the blocked time the trace keeps apart, and sleeping it is as right
//! and costs no CPU: `mean`.
//!
//! `--compute work` is chosen only with `--comm real` (the mode replayed, after the default's
//! own check): under `--comm delay` the traced MPI waits are slept, already holding the traced
//! run's contention, and nothing in the replay waits on a rank's burnt CPU.
//!
//! Nor for an extrapolated trace: its gaps' off-CPU time is the largest input's share of the
//! predicted gap (`extrap`'s `waits_like`), so its CPU time grows with the predicted gap, which
//! holds the target's contention: `xstorage pseudo` traced at 4-16 ranks on 2 CPUs and
//! extrapolated to 32 plans 11.7 ms of CPU for a gap that computes 4.4 ms (5.2 ms at 16), and
//! the 32-rank replays on slow storage were 8-26% long under `work` in three runs, within 3.5%
//! under `mean` (docs/xstorage.md).

use crate::clock;
use crate::options::{CommMode, ComputeMode, Options};
use rsd::TraceFile;

/// Why the trace or this node says the ranks share cores, or `None` when neither does:
/// the traced run's most ranks per core ([`rsd::Header::ranks_per_core`], above 1), or
/// `ranks_here` ranks of this process times the launcher's ranks on this node against its
/// online CPUs ([`clock::node_load`]).
pub fn crowded(tf: &TraceFile, ranks_here: usize) -> Option<String> {
    let (ranks, cores) = clock::node_load(ranks_here);
    let traced = tf.header.ranks_per_core().filter(|&r| r > 1.0);
    match (traced, ranks > cores) {
        (Some(r), true) => Some(format!(
            "the traced ranks shared cores ({r:.3} a core) and {ranks} ranks share {cores} cores here"
        )),
        (Some(r), false) => Some(format!("the traced ranks shared cores ({r:.3} a core)")),
        (None, true) => Some(format!("{ranks} ranks share {cores} cores here")),
        (None, false) => None,
    }
}

/// The options with the compute mode resolved: unchanged when `--compute` was given
/// ([`Options::compute_auto`] false); else, when [`crowded`] says so and the comm mode is
/// [`CommMode::Real`], [`ComputeMode::Work`], or [`ComputeMode::Mean`] for an extrapolated
/// trace, with the reason in [`Options::compute_note`]; [`ComputeMode::Mean`] otherwise.
pub fn choose(tf: &TraceFile, opts: &Options, ranks_here: usize) -> Options {
    let mut o = opts.clone();
    if !opts.compute_auto {
        return o;
    }
    o.compute = ComputeMode::Mean;
    o.compute_note = None;
    if opts.comm != CommMode::Real {
        return o;
    }
    if let Some(why) = crowded(tf, ranks_here) {
        if tf.header.prediction.is_some() {
            o.compute_note = Some(format!(
                "{why}, but the trace is extrapolated: its gaps' CPU time is a share of the predicted gaps, not measured"
            ));
        } else {
            o.compute = ComputeMode::Work;
            o.compute_note = Some(why);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::MpiConfig;

    /// A trace of `ranks` ranks on one node of `cpus` CPUs.
    fn trace(ranks: u32, cpus: u32) -> TraceFile {
        let mut tf = TraceFile {
            header: rsd::Header::new(ranks),
            trace: rsd::trace::Trace::default(),
        };
        tf.header.mpi_config = Some(MpiConfig {
            node_ranks: vec![(ranks, 1)],
            ..MpiConfig::default()
        });
        tf.header.node_cores = vec![(cpus, 1)];
        tf
    }

    #[test]
    fn work_only_by_default_with_real_comm_where_ranks_shared_cores() {
        let auto = Options {
            compute_auto: true,
            ..Options::default()
        };
        // One rank here: this node is not crowded on any machine.
        let o = choose(&trace(8, 2), &auto, 1);
        assert_eq!(o.compute, ComputeMode::Work);
        assert!(o.compute_note.as_deref().unwrap().contains("4.000 a core"));
        let o = choose(&trace(2, 2), &auto, 1);
        assert_eq!((o.compute, o.compute_note), (ComputeMode::Mean, None));
        // No CPUs recorded: only this node counts.
        let mut bare = trace(8, 2);
        bare.header.node_cores.clear();
        assert_eq!(choose(&bare, &auto, 1).compute, ComputeMode::Mean);
        // Far more ranks here than any machine has cores.
        let o = choose(&trace(2, 2), &auto, 1 << 20);
        assert_eq!(o.compute, ComputeMode::Work);
        assert!(o.compute_note.unwrap().contains("cores here"));
        // An extrapolated trace keeps mean, saying why.
        let mut extrapolated = trace(8, 2);
        let p = rsd::timing::Predicted {
            value: 1.0,
            interval: rsd::timing::Interval { lo: 1.0, hi: 1.0 },
        };
        extrapolated.header.prediction = Some(rsd::timing::Prediction {
            inputs: vec![(4, 1), (8, 1)],
            wall: p,
            parts: Vec::new(),
        });
        let o = choose(&extrapolated, &auto, 1);
        assert_eq!(o.compute, ComputeMode::Mean);
        assert!(o.compute_note.unwrap().contains("extrapolated"));
        // --comm delay, or an explicit --compute, is kept.
        let delay = Options {
            comm: CommMode::Delay,
            ..auto.clone()
        };
        assert_eq!(choose(&trace(8, 2), &delay, 1).compute, ComputeMode::Mean);
        for c in [ComputeMode::Mean, ComputeMode::Sample, ComputeMode::None] {
            let given = Options {
                compute: c,
                compute_auto: false,
                ..Options::default()
            };
            assert_eq!(choose(&trace(8, 2), &given, 1 << 20).compute, c);
        }
    }
}
