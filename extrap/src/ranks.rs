//! Expanding a compressed trace rank by rank and compressing ranks again, as the tracer does:
//! what every model that changes calls per rank (the collective buffering's nested calls,
//! HDF5's dealt writes, the structure checks) does around its change.

use rsd::trace::{Node, NodeKind};
use rsd::{Compressor, RawEvent, Trace, TraceFile};
use std::collections::BTreeSet;

/// A call by its op and call site.
pub(crate) type Site = (rsd::Op, u64);

/// Every call of `rank` of `trace`, nested calls included, each with its node's mean timing
/// ([`Trace::rank_events`]).
pub(crate) fn rank_events(trace: &Trace, rank: u32) -> Vec<RawEvent> {
    trace.rank_events(rank)
}

/// Ranks re-compressed and merged at a time: a power of two, so merging the chunks' traces
/// pairs ranks exactly as one merge tree over all ranks does (the tracer's order), while only
/// one chunk's expanded calls are in memory.
const CHUNK: u32 = 256;

/// Whether `events` (one rank's calls) are in the lifted form: no container holds calls.
fn flat(events: &[RawEvent]) -> bool {
    !events
        .iter()
        .any(|e| e.op.layer().is_container() && !e.children.is_empty())
}

/// Compresses every rank's calls, as `calls(rank)` gives them (one compressor per rank, as
/// the tracer does), and merges the ranks as the tracer merges them at `MPI_Finalize`.
/// `lifts`: the call sites lifting the containers made, where the extrapolation lifted them:
/// containers are then compressed whole.
pub(crate) fn compress_ranks(
    lifts: Option<&rsd::trace::Lifts>,
    np: u32,
    mut calls: impl FnMut(u32) -> Result<Vec<RawEvent>, String>,
) -> Result<Trace, String> {
    let merge = |t: Vec<Trace>| {
        rsd::merge_tree(t).map_err(|e| format!("merging the re-compressed ranks: {e}"))
    };
    let mut nested = false;
    let mut chunks = Vec::new();
    for lo in (0..np).step_by(CHUNK as usize) {
        let mut traces = Vec::with_capacity(CHUNK as usize);
        for r in lo..np.min(lo + CHUNK) {
            let mut c = Compressor::new(r);
            let mut events = calls(r)?;
            // Calls in the lifted form are compressed nested, then lifted again (below):
            // compressed flat, the calls of a loop of containers may fold into a loop that
            // starts inside a container, which would not nest again after the extrapolation.
            if let Some(l) = lifts
                && flat(&events)
            {
                events = l.nest_events(events);
                nested = true;
            }
            for e in &events {
                c.push(e);
            }
            traces.push(c.finish());
        }
        chunks.push(merge(traces)?);
    }
    let mut trace = merge(chunks)?;
    if nested {
        trace.lift_containers();
    }
    Ok(trace)
}

/// `tf` with the nested calls of the derived call sites removed. Exact traces are expanded
/// per rank and compressed again: without the library's calls, which differ between the
/// iterations of a loop on an aggregator, the application's calls fold into the loops they
/// make at every scale. Where an input holds summaries (a real code's message sizes over the
/// value budget), expanding would keep only each summary's mean: with `in_place` (decided over
/// all the inputs, so that they are stripped alike) the nested calls are cleared in the
/// compressed trace itself, whose loops stay as the tracer folded them.
pub(crate) fn strip(
    lifts: Option<&rsd::trace::Lifts>,
    tf: &TraceFile,
    derived: &BTreeSet<Site>,
    in_place: bool,
) -> Result<TraceFile, String> {
    if in_place {
        fn walk(nodes: &mut [Node], derived: &BTreeSet<Site>) {
            for n in nodes {
                match &mut n.kind {
                    NodeKind::Event(e) if derived.contains(&(e.op, e.sig)) => e.children.clear(),
                    NodeKind::Event(_) => {}
                    NodeKind::Loop(l) => walk(&mut l.body, derived),
                }
            }
        }
        let mut out = tf.clone();
        walk(&mut out.trace.nodes, derived);
        return Ok(out);
    }
    let trace = compress_ranks(lifts, tf.header.nranks, |r| {
        let mut events = rank_events(&tf.trace, r);
        for e in &mut events {
            if derived.contains(&(e.op, e.sig)) {
                e.children.clear();
            }
        }
        Ok(events)
    })?;
    Ok(TraceFile {
        header: tf.header.clone(),
        trace,
    })
}

/// Whether some of `files` holds a summary: then [`strip`] and the dealt writes' removal
/// work on the compressed traces, for every input alike.
pub(crate) fn any_summary<'a>(files: impl IntoIterator<Item = &'a TraceFile>) -> bool {
    files.into_iter().any(|f| any_summary_in(&f.trace))
}

/// Whether a value of `trace` is a summary.
pub(crate) fn any_summary_in(trace: &rsd::Trace) -> bool {
    rsd::approx::first(trace).is_some()
}
