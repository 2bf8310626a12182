//! Offsets held as prefix sums of sizes ([`rsd::prefix`]) where extrapolation needs every
//! rank's values: the model of the MPI library's collective buffering reads each rank's byte
//! regions, and `diff` compares each rank's calls. Fitting itself keeps the model: its start is
//! fitted like any value, and at the target the offsets are the prefix sums of the target's
//! sizes.

use rsd::RankSet;
use rsd::TraceFile;
use rsd::prefix::SumSlot;
use rsd::trace::{Node, NodeKind};
use rsd::value::Elastic;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

/// `tf` with every prefix-sum offset replaced by each rank's exact offsets (borrowed as it is
/// when it holds none).
pub(crate) fn resolved(tf: &TraceFile) -> Cow<'_, TraceFile> {
    if !rsd::prefix::present(&tf.trace) {
        return Cow::Borrowed(tf);
    }
    let mut t = tf.clone();
    rsd::prefix::resolve(&mut t.trace);
    Cow::Owned(t)
}

/// Runs `f` on `tf` with its prefix-sum offsets resolved, then recognises them again (`f`
/// re-compresses every rank, which turns them back into per-rank values), when `tf` held any.
pub(crate) fn keeping_model<T>(tf: &mut TraceFile, f: impl FnOnce(&mut TraceFile) -> T) -> T {
    let had = rsd::prefix::present(&tf.trace);
    // The values that sum another call's size: put back as they were (at a target their
    // sizes are summaries, whose typical values recognition would see as a line in the
    // rank), or recognised again where the nodes changed.
    let other = rsd::prefix::other_call_slots(&tf.trace);
    let mut saved = HashMap::new();
    if !other.is_empty() {
        sums_of_other_calls(&tf.trace.nodes, &other, &mut saved);
    }
    // The files whose offsets are at the end of the file so far: at a target their sizes may
    // be summaries, which recognition on the inputs' exact values would not take.
    let at_end = rsd::layout::files(&tf.trace);
    if had {
        rsd::prefix::resolve(&mut tf.trace);
    }
    let out = f(tf);
    if had {
        rsd::prefix::recognise(&mut tf.trace);
        if !other.is_empty() {
            put_back(&mut tf.trace.nodes, &saved);
            rsd::prefix::recognise_other_calls(&mut tf.trace, &|s| other.contains(&s));
        }
        if !at_end.is_empty() {
            rsd::layout::recognise_again(&mut tf.trace, &at_end);
        }
    }
    out
}

/// The pass that recognises, in the inputs, the offsets that are prefix sums over the ranks
/// ([`recognised`]), so that the fit keeps them as models; it passes the inputs on as they
/// are where it recognises none.
pub(crate) struct PrefixSums;

impl crate::pipeline::Pass for PrefixSums {
    fn around(
        &self,
        cx: crate::request::Cx,
        inputs: &[crate::Input],
        stage: crate::library::Stage<'_>,
        inner: crate::library::Inner<'_>,
    ) -> Result<crate::Extrapolated, crate::ExtrapError> {
        let found = recognised(&crate::by_rank_count(inputs));
        if found.iter().all(|c| matches!(c, Cow::Borrowed(_))) {
            return inner(cx, inputs, stage);
        }
        let found: Vec<crate::Input> = found.into_iter().map(Cow::into_owned).collect();
        let mut out = inner(cx, &found, stage)?;
        out.acted(crate::pipeline::PassId::PrefixSums);
        Ok(out)
    }
}

/// The inputs with their values that are prefix sums over the ranks recognised
/// ([`rsd::prefix::recognise`]), where the tracer did not (traces of an older tracer, or
/// models it does not look for): a value the ranks compute from the data (an `MPI_Exscan` of
/// particle counts) has no model of n, its prefix-sum model does; borrowed as they are when
/// nothing is recognised.
///
/// Values that are the prefix sum of another call's size (h5py's hyperslab displacements,
/// the byte offsets of the counts each rank then writes) are recognised only where every
/// input holds them ([`other_calls_alike`]): a model at some scales and rank functions at
/// others would not fit.
pub(crate) fn recognised<'a>(inputs: &[&'a crate::Input]) -> Vec<Cow<'a, crate::Input>> {
    let mut traces: Vec<rsd::trace::Trace> = inputs.iter().map(|i| i.file.trace.clone()).collect();
    // Only where some input holds summaries (as the compressed-form strip, `derive::any_summary`):
    // exact inputs fit such offsets as rank functions, and with the model h5_coll under ROMIO
    // came out at 0 at the target where the real run has 125000*rank.
    let alike = if crate::ranks::any_summary(inputs.iter().map(|i| &i.file)) {
        other_calls_alike(&mut traces.iter_mut().collect::<Vec<_>>())
    } else {
        vec![0; traces.len()]
    };
    let found: Vec<bool> = traces
        .iter_mut()
        .map(|t| !rsd::prefix::recognise(t).is_empty())
        .collect();
    let unlike = file_end_alike(&mut traces.iter_mut().collect::<Vec<_>>());
    inputs
        .iter()
        .zip(traces)
        .zip(found.into_iter().zip(alike.into_iter().zip(unlike)))
        .map(|((i, t), (found, (other, unlike)))| {
            if !found && other == 0 && unlike == 0 {
                Cow::Borrowed(*i)
            } else {
                Cow::Owned(crate::Input {
                    name: i.name.clone(),
                    file: TraceFile {
                        header: i.file.header.clone(),
                        trace: t,
                    },
                })
            }
        })
        .collect()
}

/// Recognises, in each of `traces`, the values that are the prefix sum of another call's size
/// at the slots where every trace holds such a value (or already held one); returns how many
/// were recognised in each.
pub(crate) fn other_calls_alike(traces: &mut [&mut rsd::trace::Trace]) -> Vec<usize> {
    let slots: Vec<BTreeSet<rsd::prefix::SumSlot>> = traces
        .iter()
        .map(|t| {
            let mut c = (**t).clone();
            rsd::prefix::recognise_other_calls(&mut c, &|_| true);
            rsd::prefix::other_call_slots(&c)
        })
        .collect();
    if slots.is_empty() {
        return Vec::new();
    }
    let every = held_by_every(&slots);
    traces
        .iter_mut()
        .map(|t| {
            if every.is_empty() {
                0
            } else {
                rsd::prefix::recognise_other_calls(t, &|s| every.contains(&s)).len()
            }
        })
        .collect()
}

/// Resolves, in each of `traces`, the end-of-file offsets ([`rsd::layout`]) of the events
/// (op and call site) that do not hold the model in every trace: a header written at offset 0
/// of an empty file fits `end of file` by chance at a scale where the file's other writes
/// started the tracer's search (IOR's PnetCDF header at 16 ranks, 0 at 4, 8 and 12), and a
/// model at some scales and values at others fits nothing. Returns how many events were
/// resolved in each.
pub(crate) fn file_end_alike(traces: &mut [&mut rsd::trace::Trace]) -> Vec<usize> {
    let sites: Vec<BTreeSet<(rsd::op::Op, u64)>> =
        traces.iter().map(|t| rsd::layout::sites(t)).collect();
    if sites.is_empty() {
        return Vec::new();
    }
    let every = held_by_every(&sites);
    traces
        .iter_mut()
        .zip(&sites)
        .map(|(t, held)| {
            if held.is_subset(&every) {
                0
            } else {
                rsd::layout::resolve_where(t, &|e| !every.contains(&(e.op, e.sig)))
            }
        })
        .collect()
}

/// What every one of `sets` holds (a model's slots or sites, per trace): a model is kept only
/// where every input holds it.
fn held_by_every<T: Ord + Copy>(sets: &[BTreeSet<T>]) -> BTreeSet<T> {
    let Some((first, rest)) = sets.split_first() else {
        return BTreeSet::new();
    };
    first
        .iter()
        .filter(|s| rest.iter().all(|o| o.contains(s)))
        .copied()
        .collect()
}

/// A value that sums another call's size, by its slot and its ranks.
type SavedSums = HashMap<(SumSlot, RankSet), Elastic>;

fn ranks_of(v: &Elastic) -> RankSet {
    v.groups
        .iter()
        .fold(RankSet::default(), |a, g| a.union(&g.ranks))
}

/// The values of `nodes` at `slots` that hold the prefix sum of another call's size.
fn sums_of_other_calls(nodes: &[Node], slots: &BTreeSet<SumSlot>, out: &mut SavedSums) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                for (k, v) in e.params.iter().enumerate() {
                    if v.is_exscan() && slots.contains(&(e.op, e.sig, k)) {
                        out.insert(((e.op, e.sig, k), ranks_of(v)), v.clone());
                    }
                }
            }
            NodeKind::Loop(l) => sums_of_other_calls(&l.body, slots, out),
        }
    }
}

/// Puts `saved` back at the values of the same slot over the same ranks.
fn put_back(nodes: &mut [Node], saved: &SavedSums) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                let (op, sig) = (e.op, e.sig);
                for (k, v) in e.params.iter_mut().enumerate() {
                    if let Some(m) = saved.get(&((op, sig, k), ranks_of(v))) {
                        *v = m.clone();
                    }
                }
            }
            NodeKind::Loop(l) => put_back(&mut l.body, saved),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::PassId;
    use crate::{Input, Request, run};
    use rsd::op::{Param, args};
    use rsd::trace::RawEvent;
    use rsd::{Op, TraceFile};

    /// A shared-file dump: rank r writes `100 * (r % 3 + 1)` bytes right after the lower
    /// ranks' bytes, an offset no rank function gives.
    fn dump(n: u32) -> Input {
        let len = |r: u32| i64::from(100 * (r % 3 + 1));
        let ranks = (0..n)
            .map(|r| {
                let off = (0..r).map(len).sum::<i64>();
                let e = RawEvent::new(Op::Pwrite, 7, args::pwrite(3, len(r), off, len(r)));
                rsd::compress::compress(r, &[e])
            })
            .collect();
        Input {
            name: format!("dump.{n}.iotrex"),
            file: TraceFile {
                header: rsd::Header::new(n),
                trace: rsd::merge_tree(ranks).unwrap(),
            },
        }
    }

    fn offsets(tf: &TraceFile) -> Vec<i64> {
        let t = tf.trace.resolved();
        (0..tf.header.nranks)
            .flat_map(|r| t.expand(r).into_iter().map(|e| e.p(Param::Offset)))
            .collect()
    }

    /// The dump's offsets are recognised as prefix sums in the inputs, and at the target they
    /// are the prefix sums of the target's sizes, as a real run there would write them.
    #[test]
    fn a_dump_extrapolates_as_prefix_sums() {
        let ins: Vec<Input> = [4, 8, 12, 16].into_iter().map(dump).collect();
        let x = run(&Request::new(40), &ins).unwrap_or_else(|e| panic!("{e}"));
        assert!(x.passes.contains(&PassId::PrefixSums), "{:?}", x.passes);
        assert_eq!(offsets(&x.file), offsets(&dump(40).file));
    }
}
