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
//! An extrapolated trace is no exception where its gaps hold their CPU time: `extrap` fits a
//! gap's CPU time and blocked time per call over the scales (the program's work, whatever the
//! contention) and leaves the wait for a core what is left of the predicted gap. `xstorage
//! fitness` and `pseudo` traced at 4-16 ranks on 2 CPUs, extrapolated to 32 and replayed on a
//! throttled rig (medians of 3, against the application's own 6.59 s and 7.24 s there): `work`
//! -0.9% and +7.0%, `mean` +9.1% and +11.7% (docs/xstorage.md). Where the inputs recorded no
//! CPU time of their gaps (traces of an older tracer), the predicted gap is all there is, and
//! it holds the target's contention: burning it overshot by 8-26%, so such a trace keeps
//! `mean`.

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
/// [`CommMode::Real`], [`ComputeMode::Work`] (or [`ComputeMode::Mean`] for an extrapolated
/// trace whose gaps hold no CPU time), with the reason in [`Options::compute_note`];
/// [`ComputeMode::Mean`] otherwise.
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
        if tf.header.prediction.is_some() && !holds_cpu_time(&tf.trace.nodes) {
            o.compute_note = Some(format!(
                "{why}, but the trace is extrapolated from inputs that recorded no CPU time of their gaps: a predicted gap holds the wait for a core"
            ));
        } else {
            o.compute = ComputeMode::Work;
            o.compute_note = Some(why);
        }
    }
    o
}

/// Whether any call of `nodes` keeps its gaps' off-CPU time apart ([`rsd::timing::GapWaits`]),
/// so that a gap's CPU time is known.
fn holds_cpu_time(nodes: &[rsd::trace::Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        rsd::trace::NodeKind::Event(e) => e.timing.waits.is_some() || holds_cpu_time(&e.children),
        rsd::trace::NodeKind::Loop(l) => holds_cpu_time(&l.body),
    })
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

    /// Every call of `nodes` with 1 ms of its gaps blocked.
    fn set_waits(nodes: &mut [rsd::trace::Node]) {
        for n in nodes {
            match &mut n.kind {
                rsd::trace::NodeKind::Event(e) => {
                    e.timing.waits = Some(rsd::timing::GapWaits {
                        runq_ns: 0,
                        blocked_ns: 1_000_000,
                    })
                }
                rsd::trace::NodeKind::Loop(l) => set_waits(&mut l.body),
            }
        }
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
        // An extrapolated trace whose gaps hold no CPU time keeps mean, saying why; one whose
        // gaps hold it burns it, as a traced one.
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
        let mut call = rsd::trace::RawEvent::new(rsd::Op::Pwrite, 1, vec![3, 8, 0, 8]);
        call.gap_ns = 5_000_000;
        let mut c = rsd::Compressor::new(0);
        c.push(&call);
        extrapolated.trace = c.finish();
        let o = choose(&extrapolated, &auto, 1);
        assert_eq!(o.compute, ComputeMode::Mean);
        assert!(o.compute_note.unwrap().contains("recorded no CPU time"));
        set_waits(&mut extrapolated.trace.nodes);
        let o = choose(&extrapolated, &auto, 1);
        assert_eq!(o.compute, ComputeMode::Work);
        assert!(o.compute_note.unwrap().contains("4.000 a core"));
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
