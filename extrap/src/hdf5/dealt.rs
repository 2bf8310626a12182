//! Independent writes a library deals over the ranks in blocks: a declared model of parallel
//! HDF5's distributed metadata flush.
//!
//! At a sync point, parallel HDF5 (1.10 and later, `H5AC_METADATA_WRITE_STRATEGY__DISTRIBUTED`,
//! its default) sorts the C dirty metadata entries of its cache by address and deals them over
//! the n ranks in contiguous blocks (`H5C_apply_candidate_list`'s candidate assignment table):
//! the first `C mod n` ranks get `C/n + 1` entries, the others `C/n` (none when `C < n`). Each
//! rank writes each of its entries with one independent `MPI_File_write_at`, in the order of
//! the cache's LRU list, ring by ring (the superblock last), which is the same on every rank.
//! C is the number of dirty entries, a property of the program's metadata, not of n. Below C
//! ranks how many entries a rank writes, and which, changes with n, so the trace's structure
//! changes with the scale and no per-event model of n fits it.
//!
//! The model, for one call site of an independent explicit-offset write ([`DEALT_OPS`]):
//! - A *flush* is, on each rank, a maximal run of consecutive calls at that site, placed by its
//!   *anchor*: the call just before it (op, call site, and how many calls of that op at that
//!   site the rank made before it). The runs of all ranks at one anchor are the flush's
//!   entries, sorted by offset.
//! - [`around`] checks at every input scale that every flush's entries are dealt by the rule
//!   above, that each flush has the same C at every scale, and that the ranks write their
//!   entries in one order of the entries; then fits each entry's numbers (offset, count, its
//!   nested calls) against n exactly, as every other quantity is fitted; removes the site's
//!   calls from the inputs, which are extrapolated as usual; and deals the entries at the
//!   target, putting each rank's after its anchor (up to [`DERIVE_LIMIT`] ranks).
//! - Exact traces are expanded per rank and compressed again for both steps, so the loops
//!   around what is left fold as the tracer would have folded them. Traces that hold
//!   summaries (a real code's message sizes over the value budget) would keep only their
//!   means that way: there the calls are removed from the compressed form, and the entries
//!   at the target, compressed and merged over the ranks, are spliced in after their anchor,
//!   a top-level call. The model then needs only the flush's own calls exact.
//!
//! The model is used only where it is needed (some input has a flush with more entries than
//! ranks, so the structure changes with the scale) and where it reproduces every input;
//! otherwise the calls are fitted as before and a refusal stands as it was.

use crate::error::{ExtrapError, Quantity, Reason};
use crate::hdf5::meta;
use crate::hdf5::relocate::Relocator;
use crate::hdf5::space::{self, Remembered, RunId};
use crate::library::{Handoff, Inner, LibraryModel, Stage};
use crate::numbers::fit_number;
use crate::pipeline::PassId;
use crate::ranks::{compress_ranks, rank_events};
use crate::request::Cx;
use crate::{DERIVE_LIMIT, Explain, Extrapolated, Input};
use models::ModelSet;
use rsd::op::{Op, Param};
use rsd::trace::Lifts;
use rsd::trace::{Node, NodeKind, visit};
use rsd::{RawEvent, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The independent, explicit-offset write ops a library may deal over the ranks (HDF5's MPI-IO
/// driver writes metadata with `MPI_File_write_at`).
pub(crate) const DEALT_OPS: &[Op] = &[Op::FileWriteAt];

/// A call site of a dealt op.
type Site = (Op, u64);

/// Where a flush sits on a rank: right after the call numbered `.2` (from 0) of op `.0` at call
/// site `.1` among that rank's calls, or at the start (`None`). Calls of [`DEALT_OPS`] are not
/// counted: they are what is dealt.
pub(crate) type Anchor = Option<(Op, u64, usize)>;

/// The first entry of `rank` when `c` entries are dealt over `n` ranks in blocks: the first
/// `c mod n` ranks get `c/n + 1` entries, the others `c/n`. Rank `rank` writes entries
/// `block_start(c, n, rank)..block_start(c, n, rank + 1)`.
pub(crate) fn block_start(c: u64, n: u64, rank: u64) -> u64 {
    let (q, m) = (c / n, c % n);
    rank * q + rank.min(m)
}

/// Rank `rank`'s entries when `c` are dealt over `n` ranks.
pub(crate) fn block(c: u64, n: u64, rank: u64) -> std::ops::Range<usize> {
    block_start(c, n, rank) as usize..block_start(c, n, rank + 1) as usize
}

pub(crate) fn describe_anchor(a: &Anchor) -> String {
    match a {
        None => "at the start".into(),
        Some((op, sig, k)) => format!("after call {} of {} (call site {sig:#x})", k + 1, op.name()),
    }
}

/// One rank's runs of calls at `site`, each with its anchor and its range in `events`.
fn runs(events: &[RawEvent], site: Site) -> Result<Vec<(Anchor, std::ops::Range<usize>)>, String> {
    let mut seen: HashMap<(Op, u64), usize> = HashMap::new();
    let mut anchor: Anchor = None;
    // Whether the last call was the anchor itself (a run must follow it directly).
    let mut at_anchor = true;
    let mut out: Vec<(Anchor, std::ops::Range<usize>)> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let e = &events[i];
        if (e.op, e.sig) == site {
            let start = i;
            while i < events.len() && (events[i].op, events[i].sig) == site {
                i += 1;
            }
            if !at_anchor || out.last().is_some_and(|(a, _)| *a == anchor) {
                return Err(format!(
                    "a run of its calls does not follow the call {} directly",
                    describe_anchor(&anchor)
                ));
            }
            out.push((anchor, start..i));
            at_anchor = false;
        } else if DEALT_OPS.contains(&e.op) {
            at_anchor = false;
            i += 1;
        } else {
            let c = seen.entry((e.op, e.sig)).or_insert(0);
            anchor = Some((e.op, e.sig, *c));
            *c += 1;
            at_anchor = true;
            i += 1;
        }
    }
    Ok(out)
}

/// One flush at one scale.
struct Observed {
    /// Every rank's entries, by offset.
    entries: Vec<RawEvent>,
    /// Per writing rank, its entries' indices in the order it wrote them.
    orders: Vec<Vec<usize>>,
}

/// The flushes of `site` in a run of `n` ranks whose calls are `ranks`, checked against the
/// block dealing.
fn observe(ranks: &[Vec<RawEvent>], site: Site) -> Result<BTreeMap<Anchor, Observed>, String> {
    let n = ranks.len() as u64;
    let mut at: BTreeMap<Anchor, Vec<(u32, Vec<RawEvent>)>> = BTreeMap::new();
    for (r, events) in ranks.iter().enumerate() {
        for (a, range) in runs(events, site).map_err(|e| format!("rank {r}: {e}"))? {
            at.entry(a)
                .or_default()
                .push((r as u32, events[range].to_vec()));
        }
    }
    let offset = |e: &RawEvent| e.op.param(&e.params, Param::Offset);
    let mut out = BTreeMap::new();
    for (a, parts) in at {
        let mut all: Vec<(i64, u32, usize)> = Vec::new();
        for (r, evs) in &parts {
            for (j, e) in evs.iter().enumerate() {
                all.push((offset(e), *r, j));
            }
        }
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!(
                "{}: two writes at offset {}",
                describe_anchor(&a),
                w[0].0
            ));
        }
        let c = all.len() as u64;
        let index: HashMap<(u32, usize), usize> = all
            .iter()
            .enumerate()
            .map(|(k, &(_, r, j))| ((r, j), k))
            .collect();
        let mut orders = Vec::new();
        let mut writers = BTreeSet::new();
        for (r, evs) in &parts {
            let ks: Vec<usize> = (0..evs.len()).map(|j| index[&(*r, j)]).collect();
            let mut sorted = ks.clone();
            sorted.sort_unstable();
            let want: Vec<usize> = block(c, n, u64::from(*r)).collect();
            if sorted != want {
                return Err(format!(
                    "{}: at {n} ranks rank {r} writes entries {sorted:?} of {c}, block dealing \
                     gives it {want:?}",
                    describe_anchor(&a)
                ));
            }
            writers.insert(*r);
            orders.push(ks);
        }
        if let Some(r) =
            (0..n).find(|&r| !block(c, n, r).is_empty() && !writers.contains(&(r as u32)))
        {
            return Err(format!(
                "{}: at {n} ranks rank {r} writes nothing, block dealing of {c} entries gives it {:?}",
                describe_anchor(&a),
                block(c, n, r)
            ));
        }
        let entries = all
            .iter()
            .map(|&(_, r, j)| {
                parts
                    .iter()
                    .find(|(pr, _)| *pr == r)
                    .expect("rank of an entry")
                    .1[j]
                    .clone()
            })
            .collect();
        out.insert(a, Observed { entries, orders });
    }
    Ok(out)
}

/// One call's identity: op, call site, path and parameter count.
type CallShape = (Op, u64, Option<String>, usize);

fn call_shape(e: &RawEvent) -> CallShape {
    (e.op, e.sig, e.path.clone(), e.params.len())
}

/// What must be equal across scales for an entry to be the same entry: its identity and its
/// nested calls'.
fn shape(e: &RawEvent) -> (CallShape, Vec<CallShape>) {
    (call_shape(e), e.children.iter().map(call_shape).collect())
}

/// An entry's numbers: its parameters, then each nested call's.
fn numbers(e: &RawEvent) -> Vec<i64> {
    let mut v = e.params.clone();
    for c in &e.children {
        v.extend(&c.params);
    }
    v
}

/// `template` with `numbers` put back in [`numbers`]' order.
fn with_numbers(template: &RawEvent, numbers: &[i64]) -> RawEvent {
    let mut e = template.clone();
    let mut it = numbers.iter().copied();
    for p in e.params.iter_mut() {
        *p = it.next().expect("as many numbers as parameters");
    }
    for c in e.children.iter_mut() {
        for p in c.params.iter_mut() {
            *p = it.next().expect("as many numbers as parameters");
        }
    }
    e
}

/// A flush at one input scale: its rank count, its entries' extents (offset, count) by
/// offset, and the orders the ranks wrote them in (indices in those extents).
type ObservedAt = (u32, Vec<(i64, i64)>, Vec<Vec<usize>>);

/// One flush of a modelled site, ready for the target.
struct Flush {
    anchor: Anchor,
    /// The entries at the target, by offset.
    entries: Vec<RawEvent>,
    /// `before[a]`: the entries some rank at some scale wrote after entry `a`.
    before: Vec<BTreeSet<usize>>,
    /// The orders the ranks wrote their entries in, per input scale, for messages.
    seen: String,
    /// Per input scale, the entries' extents (offset, count) by offset and the orders the
    /// ranks wrote them in (indices in those extents): what the HDF5 oracle must reproduce
    /// ([`crate::hdf5::space`]).
    observed: Vec<ObservedAt>,
    /// Per handle number and writing rank, the handles the inputs wrote entries with.
    by_writer: BTreeMap<(usize, u32), BTreeSet<i64>>,
    /// An entry as the inputs wrote it, whose numbers the oracle's entries take.
    template: RawEvent,
}

/// A modelled call site.
struct SitePlan {
    site: Site,
    flushes: Vec<Flush>,
}

/// How a skip that is no failure of the model starts: the structure does not change.
const NOT_NEEDED: &str = "not needed";

/// Why a site is not modelled, or the fitted flushes.
enum Outcome {
    /// The site's calls are left to the fitting: the model is not needed or does not hold,
    /// and why (said with a refusal of the fitting).
    Skip(String),
    Model(SitePlan, Vec<Explain>),
}

/// What a refusal of the model at the target is about.
const DEALT: Quantity = Quantity::Model {
    name: "dealt writes",
};

/// The first modelled site of `p`, which its refusals name (its `--explain` line is first).
fn first_site(p: &Plan) -> crate::error::Site {
    match p.sites.first() {
        Some(s) => crate::error::Site::call(s.site.0, s.site.1),
        None => crate::error::Site::Model {
            op: None,
            what: "HDF5's dealt metadata writes",
        },
    }
}

/// The parameters of `e`'s numbers, for messages.
fn number_name(e: &RawEvent, i: usize) -> Quantity {
    let n = e.params.len();
    if i < n {
        return Quantity::of_param(e.op, i, n, 0);
    }
    let mut i = i - n;
    for c in &e.children {
        if i < c.params.len() {
            return Quantity::Nested {
                op: c.op,
                param: Box::new(Quantity::of_param(c.op, i, c.params.len(), 0)),
            };
        }
        i -= c.params.len();
    }
    Quantity::Model { name: "?" }
}

/// The rank that writes entry `k` of `c` dealt over `n` ranks.
fn writer(c: u64, n: u64, k: usize) -> u32 {
    (0..n).find(|&r| block(c, n, r).contains(&k)).unwrap_or(0) as u32
}

/// Whether number `i` of `e` ([`numbers`]' order) is a file descriptor or MPI file handle:
/// an index in the writing rank's open-file table.
fn is_handle(e: &RawEvent, i: usize) -> bool {
    let mut i = i;
    for c in std::iter::once(e).chain(&e.children) {
        if i < c.params.len() {
            return matches!(c.op.params().get(i), Some(Param::Fd | Param::Fh));
        }
        i -= c.params.len();
    }
    false
}

/// The handle number `i` of an entry written by `rank` at the target: the one that rank
/// wrote its entries with at the inputs, or, for a rank no input saw write one, the one every
/// rank but 0 wrote with. `None` where the inputs do not say one value.
fn handle_of(
    by_writer: &BTreeMap<(usize, u32), BTreeSet<i64>>,
    i: usize,
    rank: u32,
) -> Option<i64> {
    let one = |vs: &BTreeSet<i64>| (vs.len() == 1).then(|| *vs.iter().next().expect("one"));
    if let Some(vs) = by_writer.get(&(i, rank)) {
        return one(vs);
    }
    let others: BTreeSet<i64> = by_writer
        .iter()
        .filter(|((j, r), _)| *j == i && *r > 0)
        .flat_map(|(_, vs)| vs.iter().copied())
        .collect();
    one(&others)
}

/// Each input scale's flushes at `site` (`expanded`: every rank's calls at each of `scales`),
/// checked against the block dealing, where the model is needed (some flush has more entries
/// than ranks) and the flushes are at the same calls at every scale; otherwise why not.
fn observe_scales(
    site: Site,
    scales: &[u32],
    expanded: &[Vec<Vec<RawEvent>>],
) -> Result<Vec<BTreeMap<Anchor, Observed>>, String> {
    let mut per_scale = Vec::with_capacity(scales.len());
    for (ranks, n) in expanded.iter().zip(scales) {
        match observe(ranks, site) {
            Ok(o) => per_scale.push(o),
            Err(e) => return Err(format!("at {n} ranks {e}")),
        }
    }
    // Needed: some flush has more entries than its run has ranks.
    let needed = per_scale
        .iter()
        .zip(scales)
        .any(|(o, &n)| o.values().any(|f| f.entries.len() as u64 > u64::from(n)));
    if !needed {
        return Err(format!(
            "{NOT_NEEDED}: no flush has more entries than its run has ranks"
        ));
    }
    let anchors: Vec<Anchor> = per_scale[0].keys().copied().collect();
    if let Some((o, n)) = per_scale
        .iter()
        .zip(scales)
        .find(|(o, _)| o.keys().copied().collect::<Vec<_>>() != anchors)
    {
        let other = o.keys().find(|a| !anchors.contains(a));
        let missing = anchors.iter().find(|a| !o.contains_key(a));
        return Err(format!(
            "the flushes are not at the same calls at every scale: at {n} ranks {}, at {} ranks \
             {}",
            other.map_or_else(
                || "none".to_string(),
                |a| format!("one {}", describe_anchor(a))
            ),
            scales[0],
            missing.map_or_else(
                || "none".to_string(),
                |a| format!("one {}", describe_anchor(a))
            ),
        ));
    }
    Ok(per_scale)
}

/// Handles (a nested pwrite's descriptor) are the writing rank's, not the entry's: rank 0
/// has the log open before the HDF5 file, the others not. Per handle number and writer, the
/// values each rank wrote its entries with, over every entry and scale of `obs`.
fn handles_by_writer(obs: &[&Observed], scales: &[u32]) -> BTreeMap<(usize, u32), BTreeSet<i64>> {
    let mut by_writer: BTreeMap<(usize, u32), BTreeSet<i64>> = BTreeMap::new();
    for (o, &n) in obs.iter().zip(scales) {
        let c = o.entries.len() as u64;
        for (k, e) in o.entries.iter().enumerate() {
            let w = writer(c, u64::from(n), k);
            for (i, &v) in numbers(e).iter().enumerate() {
                if is_handle(e, i) {
                    by_writer.entry((i, w)).or_default().insert(v);
                }
            }
        }
    }
    by_writer
}

/// The entries of `c` each entry must precede (`before[p]`: written after entry `p` at some
/// rank of some scale of `obs`), or two entries written in both orders.
fn one_order(obs: &[&Observed], c: usize) -> Result<Vec<BTreeSet<usize>>, (usize, usize)> {
    let mut before = vec![BTreeSet::new(); c];
    for o in obs {
        for ks in &o.orders {
            for (x, &p) in ks.iter().enumerate() {
                for &q in &ks[x + 1..] {
                    before[p].insert(q);
                }
            }
        }
    }
    // One order of the entries: never a before b at one rank or scale and b before a at
    // another.
    match (0..c)
        .flat_map(|p| before[p].iter().map(move |&q| (p, q)))
        .find(|&(p, q)| before[q].contains(&p))
    {
        Some(pq) => Err(pq),
        None => Ok(before),
    }
}

/// What `--explain` says of a site whose `flushes` flushes of `cs` entries are dealt.
fn explain_site(site_name: String, flushes: usize, cs: &[usize]) -> Explain {
    let cs: Vec<String> = cs.iter().map(usize::to_string).collect();
    Explain {
        event: site_name,
        quantity: "independent writes dealt over the ranks".into(),
        model: format!(
            "declared model: the C entries of each flush, sorted by offset, dealt over the \
             ranks in blocks (the first C mod n ranks write C/n + 1, the others C/n, each \
             rank in one order of the entries; parallel HDF5's distributed metadata flush, \
             H5C_apply_candidate_list); reproduced at every input scale; {} flush(es) of C \
             = {} entries; each entry's numbers fitted against n, its timing the inputs' \
             mean",
            flushes,
            cs.join(", ")
        ),
        curve: None,
    }
}

/// The dealt writes at `site` modelled for `target` from every rank's calls at each input
/// scale (`expanded`), or why the model is not taken. `from_oracle`: the entries at the
/// target will be the HDF5 oracle's ([`crate::hdf5::space`]), so their count may differ
/// between the scales and nothing of them is fitted here.
fn model_site(
    site: Site,
    scales: &[u32],
    expanded: &[Vec<Vec<RawEvent>>],
    target: u32,
    models: &ModelSet,
    from_oracle: bool,
) -> Result<Outcome, ExtrapError> {
    let per_scale = match observe_scales(site, scales, expanded) {
        Ok(p) => p,
        Err(why) => return Ok(Outcome::Skip(why)),
    };
    let anchors: Vec<Anchor> = per_scale[0].keys().copied().collect();
    let at = crate::error::Site::call(site.0, site.1);
    let ns: Vec<i64> = scales.iter().map(|&n| i64::from(n)).collect();
    let mut explain = Vec::new();
    let mut flushes = Vec::new();
    let mut cs = Vec::new();
    for a in &anchors {
        let obs: Vec<&Observed> = per_scale.iter().map(|o| &o[a]).collect();
        let observed: Vec<ObservedAt> = obs
            .iter()
            .zip(scales)
            .map(|(o, &n)| {
                let ext = o.entries.iter().map(crate::hdf5::space::extent).collect();
                (n, ext, o.orders.clone())
            })
            .collect();
        let seen = obs
            .iter()
            .zip(scales)
            .map(|(o, n)| {
                let ks: Vec<String> = o.orders.iter().map(|ks| format!("{ks:?}")).collect();
                format!("{} at {n}", ks.join(" "))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let by_writer = handles_by_writer(&obs, scales);
        if from_oracle {
            // Every entry one call of one shape, which the oracle's entries fill in.
            let template = obs[obs.len() - 1].entries[0].clone();
            if let Some((_, n)) = obs
                .iter()
                .zip(scales)
                .find(|(o, _)| o.entries.iter().any(|e| shape(e) != shape(&template)))
            {
                return Ok(Outcome::Skip(format!(
                    "the flush {}: its entries are calls of more than one shape at {n} ranks",
                    describe_anchor(a)
                )));
            }
            cs.push(obs[obs.len() - 1].entries.len());
            flushes.push(Flush {
                anchor: *a,
                entries: Vec::new(),
                before: Vec::new(),
                seen,
                observed,
                by_writer,
                template,
            });
            continue;
        }
        let c = obs[0].entries.len();
        if obs.iter().any(|o| o.entries.len() != c) {
            let cs: Vec<String> = obs
                .iter()
                .zip(scales)
                .map(|(o, n)| format!("{} at {n}", o.entries.len()))
                .collect();
            return Ok(Outcome::Skip(format!(
                "the flush {} has another number of entries at each scale: {}",
                describe_anchor(a),
                cs.join(", ")
            )));
        }
        cs.push(c);
        let before = match one_order(&obs, c) {
            Ok(b) => b,
            Err((p, q)) => {
                return Ok(Outcome::Skip(format!(
                    "the flush {}: entry {p} is written before entry {q} somewhere and after it \
                     elsewhere (no one order of the entries)",
                    describe_anchor(a)
                )));
            }
        };
        let mut entries = Vec::with_capacity(c);
        for k in 0..c {
            let first = &obs[obs.len() - 1].entries[k];
            if let Some(n) = obs
                .iter()
                .zip(scales)
                .find(|(o, _)| shape(&o.entries[k]) != shape(first))
                .map(|x| x.1)
            {
                return Ok(Outcome::Skip(format!(
                    "the flush {}: entry {k} is another call (op, call site or nested calls) at \
                     {n} ranks than at {} ranks",
                    describe_anchor(a),
                    scales[scales.len() - 1]
                )));
            }
            let cols: Vec<Vec<i64>> = obs.iter().map(|o| numbers(&o.entries[k])).collect();
            let mut at_target = Vec::with_capacity(cols[0].len());
            for i in 0..cols[0].len() {
                if is_handle(first, i)
                    && let Some(v) =
                        handle_of(&by_writer, i, writer(c as u64, u64::from(target), k))
                {
                    at_target.push(v);
                    continue;
                }
                let ys: Vec<i64> = cols.iter().map(|v| v[i]).collect();
                let what = format!("entry {k} of the dealt writes {}", describe_anchor(a));
                let param = number_name(first, i);
                at_target.push(fit_number(
                    &ns,
                    &ys,
                    target,
                    models,
                    &at,
                    &what,
                    param,
                    &mut explain,
                )?);
            }
            let mut e = with_numbers(first, &at_target);
            let mean = |f: &dyn Fn(&RawEvent) -> u64| {
                (obs.iter().map(|o| f(&o.entries[k]) as f64).sum::<f64>() / obs.len() as f64)
                    .round() as u64
            };
            e.gap_ns = mean(&|e| e.gap_ns);
            e.dur_ns = mean(&|e| e.dur_ns);
            entries.push(e);
        }
        let template = entries[0].clone();
        flushes.push(Flush {
            anchor: *a,
            entries,
            before,
            seen,
            observed,
            by_writer,
            template,
        });
    }
    explain.insert(0, explain_site(at.to_string(), flushes.len(), &cs));
    Ok(Outcome::Model(SitePlan { site, flushes }, explain))
}

/// Whether `nodes` hold a call of a dealt op at the top level (nested calls are the MPI
/// library's, never an application's independent write).
fn has_dealt_op(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => DEALT_OPS.contains(&e.op),
        NodeKind::Loop(l) => has_dealt_op(&l.body),
    })
}

/// The modelled sites and what `--explain` says of them.
struct Plan {
    sites: Vec<SitePlan>,
    explain: Vec<Explain>,
    /// The sites where some input writes more entries than ranks but the model was not taken,
    /// and why: said with a refusal of the fitting, which they then likely caused.
    skipped: Vec<String>,
}

/// The sites whose calls are dealt writes in every input (`sorted`: one run per scale,
/// increasing rank counts), fitted for `target`; `None` when no input has a dealt op.
fn plan(
    sorted: &[&Input],
    target: u32,
    models: &ModelSet,
    from_oracle: bool,
) -> Result<Option<Plan>, ExtrapError> {
    if !sorted.iter().any(|i| has_dealt_op(&i.file.trace.nodes)) {
        return Ok(None);
    }
    let mut out = Plan {
        sites: Vec::new(),
        explain: Vec::new(),
        skipped: Vec::new(),
    };
    // Each rank's calls are expanded, and compressed again without the dealt writes.
    let unusable = |i: &Input| {
        if i.file.header.nranks > DERIVE_LIMIT {
            Some(format!(
                "{} has over {DERIVE_LIMIT} ranks to expand",
                i.name
            ))
        } else if i.file.header.incomplete {
            Some(format!("{} is flagged incomplete", i.name))
        } else {
            None
        }
    };
    if let Some(why) = sorted.iter().find_map(|i| unusable(i)) {
        // The reason names the input.
        out.skipped.push(why);
        return Ok(Some(out));
    }
    let scales: Vec<u32> = sorted.iter().map(|i| i.file.header.nranks).collect();
    // Offsets the tracer held as models (a prefix sum, the end of the file so far: a flush's
    // last entry appends) are each rank's exact offsets here.
    let expanded: Vec<Vec<Vec<RawEvent>>> = sorted
        .iter()
        .map(|i| {
            let f = crate::prefix::resolved(&i.file);
            (0..i.file.header.nranks)
                .map(|r| rank_events(&f.trace, r))
                .collect()
        })
        .collect();
    let mut sites = BTreeSet::new();
    for ranks in &expanded {
        for e in ranks.iter().flatten() {
            if DEALT_OPS.contains(&e.op) {
                sites.insert((e.op, e.sig));
            }
        }
    }
    for site in sites {
        // The flush is observed on expanded calls, where a summary is its mean: its own calls
        // must be exact (summaries elsewhere are kept as they are by `strip` and `insert`).
        if let Some((i, why)) = sorted
            .iter()
            .find_map(|i| approx_at_site(&i.file.trace.nodes, site).map(|w| (i, w)))
        {
            out.skipped.push(format!(
                "{} (call site {:#x}): {} summarises {why}, and the model needs the flush's \
                 calls exact",
                site.0.name(),
                site.1,
                i.name
            ));
            continue;
        }
        match model_site(site, &scales, &expanded, target, models, from_oracle)? {
            Outcome::Model(p, ex) => {
                out.sites.push(p);
                out.explain.extend(ex);
            }
            Outcome::Skip(why) if why.starts_with(NOT_NEEDED) => {}
            Outcome::Skip(why) => out.skipped.push(format!(
                "{} (call site {:#x}): {why}",
                site.0.name(),
                site.1
            )),
        }
    }
    Ok(Some(out))
}

/// `tf` without the calls of the modelled sites. Traces without summaries are expanded and
/// compressed again, as the tracer would have compressed them without those calls (the loops
/// around what is left fold the same way at every scale); where some input holds summaries,
/// which expanding would turn into their means, every input has the calls removed from its
/// compressed form instead. `in_place` is decided over all the inputs, so that they are
/// stripped alike.
fn strip(
    lifts: Option<&Lifts>,
    tf: &TraceFile,
    p: &Plan,
    in_place: bool,
) -> Result<TraceFile, String> {
    if in_place {
        Ok(strip_in_place(tf, p))
    } else {
        let mut out = tf.clone();
        crate::prefix::keeping_model(&mut out, |f| {
            strip_recompressed(lifts, f, p).map(|s| *f = s)
        })?;
        Ok(out)
    }
}

/// Deals the modelled sites' entries at the target into `tf`: compressed again from every
/// rank's calls where the extrapolated trace is exact, spliced into the compressed form where
/// it holds summaries (see [`strip`]).
fn insert(lifts: Option<&Lifts>, tf: &mut TraceFile, p: &Plan) -> Result<(), (String, String)> {
    if rsd::approx::first(&tf.trace).is_some() {
        insert_in_place(lifts, tf, p)
    } else {
        insert_recompressed(lifts, tf, p)
    }
}

/// `tf` without the calls of the modelled sites: every rank expanded and compressed again
/// (summaries would keep their mean only; see [`strip`]).
fn strip_recompressed(
    lifts: Option<&Lifts>,
    tf: &TraceFile,
    p: &Plan,
) -> Result<TraceFile, String> {
    let sites: BTreeSet<Site> = p.sites.iter().map(|s| s.site).collect();
    let trace = compress_ranks(lifts, tf.header.nranks, |r| {
        let mut events = rank_events(&tf.trace, r);
        events.retain(|e| !sites.contains(&(e.op, e.sig)));
        Ok(events)
    })?;
    Ok(TraceFile {
        header: tf.header.clone(),
        trace,
    })
}

/// `tf` without the calls of the modelled sites, removed from the compressed trace itself
/// (loops left empty go with them): the rest of the trace, its summaries included, stays as
/// it was. Nested calls are the MPI library's, never a dealt write, and are kept.
fn strip_in_place(tf: &TraceFile, p: &Plan) -> TraceFile {
    fn walk(nodes: &mut Vec<Node>, sites: &BTreeSet<Site>) {
        nodes.retain_mut(|n| match &mut n.kind {
            NodeKind::Event(e) => !sites.contains(&(e.op, e.sig)),
            NodeKind::Loop(l) => {
                walk(&mut l.body, sites);
                !l.body.is_empty()
            }
        });
    }
    let sites: BTreeSet<Site> = p.sites.iter().map(|s| s.site).collect();
    let mut out = tf.clone();
    walk(&mut out.trace.nodes, &sites);
    out
}

/// The first summarised quantity of a call at `site` in `nodes` (its parameters, its nested
/// calls', or the iteration count of a loop around it), for the precondition of the model:
/// the flush's own calls are exact (summaries elsewhere are not its business).
fn approx_at_site(nodes: &[Node], site: Site) -> Option<String> {
    fn holds_site(nodes: &[Node], site: Site) -> bool {
        nodes.iter().any(|n| match &n.kind {
            NodeKind::Event(e) => (e.op, e.sig) == site,
            NodeKind::Loop(l) => holds_site(&l.body, site),
        })
    }
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) if (e.op, e.sig) == site => {
                if let Some(k) = e.params.iter().position(|v| v.is_approx()) {
                    return Some(format!(
                        "its {} (ranks {})",
                        e.op.param_name(k, e.params.len(), 0),
                        n.ranks
                    ));
                }
                if let Some(c) = rsd::approx::first(&rsd::trace::Trace {
                    nodes: e.children.clone(),
                }) {
                    return Some(format!(
                        "the {} of its nested {} (ranks {})",
                        c.param,
                        c.op.name(),
                        c.ranks
                    ));
                }
            }
            NodeKind::Event(_) => {}
            NodeKind::Loop(l) => {
                if l.iters.is_approx() && holds_site(&l.body, site) {
                    return Some(format!(
                        "the iteration count of a loop around it (ranks {})",
                        n.ranks
                    ));
                }
                if let Some(why) = approx_at_site(&l.body, site) {
                    return Some(why);
                }
            }
        }
    }
    None
}

/// The entries of `chunk` in the order the inputs wrote them, or why that order is not known.
fn ordered(f: &Flush, chunk: std::ops::Range<usize>) -> Result<Vec<usize>, String> {
    let reach = |from: usize| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(p) = todo.pop() {
            for &q in &f.before[p] {
                if seen.insert(q) {
                    todo.push(q);
                }
            }
        }
        seen
    };
    let reaches: Vec<(usize, BTreeSet<usize>)> = chunk.clone().map(|k| (k, reach(k))).collect();
    for (x, (a, ra)) in reaches.iter().enumerate() {
        for (b, rb) in &reaches[x + 1..] {
            if ra.contains(b) == rb.contains(a) {
                return Err(format!(
                    "no input says in which order one rank writes entries {a} and {b}"
                ));
            }
        }
    }
    let mut ks: Vec<usize> = chunk.collect();
    // Entries written after more others come first.
    ks.sort_by_key(|k| {
        std::cmp::Reverse(
            reaches
                .iter()
                .find(|(a, _)| a == k)
                .map_or(0, |(_, r)| r.len()),
        )
    });
    Ok(ks)
}

/// Where each anchor of `rank` is among the top-level nodes of `nodes`: the index of the
/// node after which a flush at that anchor goes (`0` for the start). Anchors inside loops
/// are counted but have no place (a dealt entry cannot go into one iteration of a loop).
fn anchor_places(nodes: &[Node], rank: u32) -> HashMap<Anchor, Option<usize>> {
    let mut seen: HashMap<(Op, u64), usize> = HashMap::new();
    let mut at: HashMap<Anchor, Option<usize>> = HashMap::from([(None, Some(0))]);
    let mut idx = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let top = matches!(n.kind, NodeKind::Event(_));
        visit(std::slice::from_ref(n), rank, &mut idx, &mut |e, _| {
            if !DEALT_OPS.contains(&e.op) {
                let c = seen.entry((e.op, e.sig)).or_insert(0);
                at.insert(Some((e.op, e.sig, *c)), top.then_some(i + 1));
                *c += 1;
            }
            true
        });
    }
    at
}

/// Deals the modelled sites' entries over the ranks of `tf` (at the target) and puts each
/// rank's after its anchor, a top-level call: the entries after one node are compressed and
/// merged over the ranks as the tracer does, and spliced in after it; the rest of the trace
/// is not touched (its summaries stay summaries).
fn insert_in_place(
    lifts: Option<&Lifts>,
    tf: &mut TraceFile,
    p: &Plan,
) -> Result<(), (String, String)> {
    let n = tf.header.nranks;
    if n > DERIVE_LIMIT {
        return Err((
            format!(
                "dealing the writes at {n} ranks places every rank's entries; it is done up to \
                 {DERIVE_LIMIT}"
            ),
            String::new(),
        ));
    }
    // Per top-level place, per rank, the entries that go there.
    let mut at: BTreeMap<usize, BTreeMap<u32, Vec<RawEvent>>> = BTreeMap::new();
    for r in 0..n {
        let mut places: Option<HashMap<Anchor, Option<usize>>> = None;
        for s in &p.sites {
            for f in &s.flushes {
                let chunk = block(f.entries.len() as u64, u64::from(n), u64::from(r));
                if chunk.is_empty() {
                    continue;
                }
                let places = places.get_or_insert_with(|| anchor_places(&tf.trace.nodes, r));
                let place = match places.get(&f.anchor) {
                    Some(Some(i)) => *i,
                    Some(None) => {
                        return Err((
                            format!(
                                "at {n} ranks rank {r}'s call {} is inside a loop: its dealt \
                                 entries have no one place",
                                describe_anchor(&f.anchor)
                            ),
                            String::new(),
                        ));
                    }
                    None => {
                        return Err((
                            format!(
                                "at {n} ranks rank {r} has no call {} to write its dealt \
                                 entries after",
                                describe_anchor(&f.anchor)
                            ),
                            String::new(),
                        ));
                    }
                };
                let ks = ordered(f, chunk).map_err(|e| {
                    (
                        format!("at {n} ranks, rank {r}: {e}"),
                        format!("entries written per rank {}", f.seen),
                    )
                })?;
                at.entry(place)
                    .or_default()
                    .entry(r)
                    .or_default()
                    .extend(ks.iter().map(|&k| f.entries[k].clone()));
            }
        }
    }
    // From the last place back, so the earlier places' indices hold.
    for (place, per_rank) in at.into_iter().rev() {
        let nodes = compress_ranks(lifts, n, |r| {
            Ok(per_rank.get(&r).cloned().unwrap_or_default())
        })
        .map_err(|e| (e, String::new()))?
        .nodes;
        tf.trace.nodes.splice(place..place, nodes);
    }
    Ok(())
}

/// Deals the modelled sites' entries over the ranks of `tf` (at the target) and puts each
/// rank's after its anchor: every rank expanded, the entries spliced in, compressed again
/// (summaries would keep their mean only; see [`insert`]).
fn insert_recompressed(
    lifts: Option<&Lifts>,
    tf: &mut TraceFile,
    p: &Plan,
) -> Result<(), (String, String)> {
    let n = tf.header.nranks;
    if n > DERIVE_LIMIT {
        return Err((
            format!(
                "dealing the writes at {n} ranks expands every rank; it is done up to \
                 {DERIVE_LIMIT}"
            ),
            String::new(),
        ));
    }
    // The orders the inputs saw, for a refusal.
    let mut orders_seen = String::new();
    let trace = compress_ranks(lifts, n, |r| {
        let events = rank_events(&tf.trace, r);
        // Where each anchor is in this rank's calls.
        let mut seen: HashMap<(Op, u64), usize> = HashMap::new();
        let mut pos: HashMap<Anchor, usize> = HashMap::from([(None, 0)]);
        for (i, e) in events.iter().enumerate() {
            if !DEALT_OPS.contains(&e.op) {
                let c = seen.entry((e.op, e.sig)).or_insert(0);
                pos.insert(Some((e.op, e.sig, *c)), i + 1);
                *c += 1;
            }
        }
        let mut inserts: Vec<(usize, Vec<RawEvent>)> = Vec::new();
        for s in &p.sites {
            for f in &s.flushes {
                let chunk = block(f.entries.len() as u64, u64::from(n), u64::from(r));
                if chunk.is_empty() {
                    continue;
                }
                let at = *pos.get(&f.anchor).ok_or_else(|| {
                    format!(
                        "at {n} ranks rank {r} has no call {} to write its dealt entries after",
                        describe_anchor(&f.anchor)
                    )
                })?;
                let ks = match ordered(f, chunk) {
                    Ok(ks) => ks,
                    Err(e) => {
                        orders_seen = format!("entries written per rank {}", f.seen);
                        return Err(format!("at {n} ranks, rank {r}: {e}"));
                    }
                };
                inserts.push((at, ks.iter().map(|&k| f.entries[k].clone()).collect()));
            }
        }
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        let mut events = events;
        for (at, es) in inserts {
            events.splice(at..at, es);
        }
        Ok(events)
    })
    .map_err(|e| (e, std::mem::take(&mut orders_seen)))?;
    tf.trace = trace;
    Ok(())
}

/// Per modelled site, per flush, the oracle's run that is that flush; and the oracle's
/// replay of each input scale.
type OracleIds = (Vec<Vec<RunId>>, Vec<std::sync::Arc<space::OracleRun>>);

/// Per modelled flush (site by site, flush by flush), the run of the HDF5 oracle's metadata
/// writes that is that flush at every input scale ([`h5space`]): the run whose extents are
/// the flush's at each scale, the same run everywhere, and each rank's order of its entries
/// the oracle's order. Otherwise why not.
fn h5space_ids(p: &Plan, sorted: &[&Input], o: &Remembered) -> Result<OracleIds, String> {
    let replays = space::replay_inputs(o, sorted)?;
    let mut per_scale = Vec::with_capacity(replays.len());
    for run in &replays {
        per_scale.push(space::runs(run, DEALT_OPS)?);
    }
    let mut out = Vec::new();
    for s in &p.sites {
        let mut ids = Vec::new();
        for f in &s.flushes {
            let mut common: Option<BTreeSet<RunId>> = None;
            for (k, (n, ext, orders)) in f.observed.iter().enumerate() {
                let runs = &per_scale[k];
                let here: BTreeSet<RunId> = runs
                    .iter()
                    .filter(|(_, evs)| {
                        let mut e: Vec<(i64, i64)> = evs.iter().map(space::extent).collect();
                        e.sort_unstable();
                        &e == ext
                    })
                    .map(|(id, _)| *id)
                    .collect();
                if here.is_empty() {
                    return Err(format!(
                        "the HDF5 oracle's metadata writes at {n} ranks are not those of the \
                         flush {} ({} entries at {}; the oracle wrote runs of {})",
                        describe_anchor(&f.anchor),
                        ext.len(),
                        ext.iter()
                            .take(4)
                            .map(|(o, c)| format!("{c} B at {o}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        runs.values()
                            .map(|r| r.len().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                // The ranks' orders are the oracle's (its one rank writes them all).
                for id in &here {
                    let lru: Vec<(i64, i64)> = runs[id].iter().map(space::extent).collect();
                    for ks in orders {
                        let pos: Vec<usize> = ks
                            .iter()
                            .filter_map(|&k| lru.iter().position(|x| *x == ext[k]))
                            .collect();
                        if pos.windows(2).any(|w| w[0] > w[1]) {
                            return Err(format!(
                                "at {n} ranks a rank writes entries {ks:?} of the flush {} in \
                                 another order than the HDF5 oracle",
                                describe_anchor(&f.anchor)
                            ));
                        }
                    }
                }
                common = Some(match common {
                    None => here,
                    Some(c) => c.intersection(&here).copied().collect(),
                });
            }
            let common = common.unwrap_or_default();
            match common.len() {
                1 => ids.push(*common.iter().next().expect("one")),
                0 => {
                    return Err(format!(
                        "the flush {} is not the same run of the HDF5 oracle's metadata writes \
                         at every input scale",
                        describe_anchor(&f.anchor)
                    ));
                }
                _ => {
                    return Err(format!(
                        "the flush {} is any of {} runs of the HDF5 oracle's metadata writes",
                        describe_anchor(&f.anchor),
                        common
                            .iter()
                            .map(space::describe)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
        out.push(ids);
    }
    Ok((out, replays))
}

/// Fills `p`'s flushes with the HDF5 oracle's entries at the target, whose trace without the
/// dealt writes is `at_target`: each flush the run `ids` names (sorted by offset, written in
/// the oracle's order), with the handles the inputs' writing ranks used. Returns what
/// `--explain` says of the model.
fn from_oracle(
    p: &mut Plan,
    at_target: &TraceFile,
    o: &Remembered,
    ids: &[Vec<RunId>],
) -> Result<String, String> {
    let n = at_target.header.nranks;
    let run = space::replay(
        o,
        &rank_events(&at_target.trace, 0),
        at_target.header.hdf5_version().as_deref(),
    )
    .map_err(|e| format!("the HDF5 oracle could not replay the calls at {n} ranks: {e}"))?;
    // The data is where the oracle stores it: the relocator, which `inner` applied right
    // after the fit, refused a layout the inputs do not predict.
    let runs = space::runs(&run, DEALT_OPS)?;
    let mut counts = Vec::new();
    for (s, ids) in p.sites.iter_mut().zip(ids) {
        for (f, id) in s.flushes.iter_mut().zip(ids) {
            let lru = runs.get(id).ok_or_else(|| {
                format!(
                    "at {n} ranks the HDF5 oracle wrote no {} (the flush {})",
                    space::describe(id),
                    describe_anchor(&f.anchor)
                )
            })?;
            let mut sorted: Vec<&RawEvent> = lru.iter().collect();
            sorted.sort_by_key(|e| space::extent(e));
            let c = sorted.len() as u64;
            let mut entries = Vec::with_capacity(sorted.len());
            for (k, e) in sorted.iter().enumerate() {
                let like =
                    |a: &RawEvent, b: &RawEvent| a.op == b.op && a.params.len() == b.params.len();
                if !like(e, &f.template)
                    || e.children.len() != f.template.children.len()
                    || e.children
                        .iter()
                        .zip(&f.template.children)
                        .any(|(a, b)| !like(a, b))
                {
                    return Err(format!(
                        "at {n} ranks the HDF5 oracle's entry at {} is another call than the \
                         inputs' entries",
                        space::extent(e).0
                    ));
                }
                let w = writer(c, u64::from(n), k);
                let mut nums = numbers(e);
                for (i, v) in nums.iter_mut().enumerate() {
                    if is_handle(&f.template, i) {
                        *v = handle_of(&f.by_writer, i, w)
                            .unwrap_or_else(|| numbers(&f.template)[i]);
                    }
                }
                let mut x = with_numbers(&f.template, &nums);
                x.gap_ns = f.template.gap_ns;
                x.dur_ns = f.template.dur_ns;
                entries.push(x);
            }
            // `before[a]`: the entries written after `a`, in the oracle's one order.
            let at_of: Vec<usize> = sorted
                .iter()
                .map(|e| {
                    lru.iter()
                        .position(|x| std::ptr::eq(x, *e))
                        .expect("in the run")
                })
                .collect();
            f.before = (0..sorted.len())
                .map(|a| (0..sorted.len()).filter(|&b| at_of[b] > at_of[a]).collect())
                .collect();
            counts.push(format!(
                "{} at {n} ranks ({})",
                entries.len(),
                space::describe(id)
            ));
            f.entries = entries;
        }
    }
    Ok(format!(
        "declared model: the C entries of each flush, sorted by offset, dealt over the ranks in \
         blocks (the first C mod n ranks write C/n + 1, the others C/n; parallel HDF5's \
         distributed metadata flush, H5C_apply_candidate_list); the entries (count, offsets, \
         sizes, the order each rank writes its own in) are those rank 0's HDF5 calls at the \
         target make when replayed on one rank through the HDF5 library itself \
         (iotrex-h5oracle), which reproduced every input's flushes: C = {}",
        counts.join(", ")
    ))
}

/// Runs `inner` (an extrapolation to `target`) on `inputs` with the dealt writes modelled:
/// when some call site's independent writes are dealt over the ranks in blocks at every input
/// scale and the structure changes with the scale because of it, they are removed from the
/// inputs, `inner` extrapolates the rest, and they are dealt at the target. Otherwise `inner`
/// runs on the inputs as they are.
pub(crate) fn around(
    cx: Cx,
    inputs: &[Input],
    inner: impl FnOnce(&[Input], Option<&Relocator>) -> Result<Extrapolated, ExtrapError>,
) -> Result<Extrapolated, ExtrapError> {
    let (target, models) = (cx.target, cx.models);
    let mut sorted: Vec<&Input> = inputs.iter().collect();
    sorted.sort_by_key(|i| i.file.header.nranks);
    sorted.dedup_by_key(|i| i.file.header.nranks);
    if sorted.len() < 3 || target == 0 {
        return inner(inputs, None);
    }
    // The model takes each flush's entry count from the inputs: a chunk index that splits
    // between the inputs and the target writes more, which only HDF5 itself can say
    // (`h5space`: the oracle's entries, where it reproduces every input's).
    let grows = meta::chunk_index_grows(&sorted, target, models);
    // A refusal of the fitting says what of HDF5's metadata the model does not follow
    // (`hdf5_meta`): the collective form of the flush, a chunk index that splits.
    // (The collective flush is said by `collflush`, which runs around this.)
    let hdf5_why = |e: ExtrapError| match &grows {
        Some(why) => e.also_library(PassId::DealtWrites, why),
        None => e,
    };
    let oracle = grows.as_ref().and(cx.oracle);
    let Some(mut p) = plan(&sorted, target, models, oracle.is_some())? else {
        return inner(inputs, None).map_err(hdf5_why);
    };
    if p.sites.is_empty() {
        let why = p.skipped.join("; ");
        return inner(inputs, None).map_err(|e| {
            // The model is HDF5's: its reason is said only where the trace shows HDF5 (an
            // MPI-IO program's many writes per rank are not a metadata flush).
            hdf5_why(if why.is_empty() || !super::shows_hdf5(inputs) {
                e
            } else {
                e.not_dealt(&why)
            })
        });
    }
    let refuse_split = |p: &Plan, why: &str, more: &str| {
        meta::index_split_refusal(
            PassId::DealtWrites,
            first_site(p),
            DEALT,
            target,
            why,
            more,
            "block dealing (parallel HDF5's distributed metadata flush)",
        )
    };
    let oracle_ids = match (&grows, oracle) {
        (Some(why), None) => {
            return Err(refuse_split(
                &p,
                why,
                "; no HDF5 oracle (iotrex-h5oracle) to replay the calls with",
            ));
        }
        (Some(why), Some(o)) => match h5space_ids(&p, &sorted, o) {
            Ok(ids) => Some((why, o, ids)),
            Err(e) => return Err(refuse_split(&p, why, &format!("; {e}"))),
        },
        (None, _) => None,
    };
    let in_place = crate::ranks::any_summary(inputs.iter().map(|i| &i.file));
    let mut stripped = Vec::with_capacity(inputs.len());
    for i in inputs {
        stripped.push(Input {
            name: i.name.clone(),
            file: strip(cx.lifts, &i.file, &p, in_place).map_err(|why| ExtrapError::Derive {
                input: i.name.clone(),
                why,
            })?,
        });
    }
    // Where the oracle's dataset storage at the target moved, the fitted data addresses
    // follow it (`relocate`), before the collective I/O below them is derived.
    let reloc = oracle_ids.as_ref().map(|(_, o, (_, replays))| Relocator {
        oracle: o,
        inputs: replays.clone(),
        ns: sorted
            .iter()
            .map(|i| i64::from(i.file.header.nranks))
            .collect(),
        models,
    });
    let mut out = inner(&stripped, reloc.as_ref())?;
    if let Some((why, o, ids)) = oracle_ids {
        let said = from_oracle(&mut p, &out.file, o, &ids.0)
            .map_err(|e| refuse_split(&p, why, &format!("; {e}")))?;
        if let Some(x) = p.explain.first_mut() {
            x.model = said;
        }
        space::mark_from_oracle(&mut out.file.header);
    }
    let most = p
        .sites
        .iter()
        .flat_map(|s| s.flushes.iter().map(|f| f.entries.len()))
        .max()
        .unwrap_or(0);
    // The offsets held as models (the end of the file so far) are resolved for it and
    // recognised again after, as around stripping.
    crate::prefix::keeping_model(&mut out.file, |f| insert(cx.lifts, f, &p)).map_err(
        |(why, values)| {
            let tried = "block dealing (parallel HDF5's distributed metadata flush)".into();
            let hint = format!(
                "trace a scale at which one rank writes both entries, or pick a target of at \
                 least {most} ranks (each rank then writes one entry at most)"
            );
            let why = Reason::Library {
                by: PassId::DealtWrites,
                why,
            };
            ExtrapError::refused(first_site(&p), DEALT, why, (values, tried, hint))
        },
    )?;
    for (k, e) in p.explain.into_iter().enumerate() {
        out.explain.insert(k, e);
    }
    out.file.header.notes.push(
        "independent writes dealt over the ranks in blocks (parallel HDF5's distributed \
         metadata flush) derived by iotrex's declared model; their timing is the inputs' mean \
         per entry"
            .into(),
    );
    out.acted(PassId::DealtWrites);
    Ok(out)
}

/// Parallel HDF5's independent metadata writes dealt over the ranks, as a library model
/// ([`around`]).
pub(crate) struct DealtWrites;

impl LibraryModel for DealtWrites {
    fn id(&self) -> Option<PassId> {
        Some(PassId::DealtWrites)
    }

    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        around(cx, inputs, |inputs, reloc| match reloc {
            Some(r) => stage.with(r, |stage| inner(cx, inputs, stage)),
            None => inner(cx, inputs, stage),
        })
    }
}

/// The dealt writes' model hands on what relocates the fitted data addresses.
impl Handoff for Relocator<'_> {
    fn by(&self) -> PassId {
        PassId::DealtWrites
    }

    fn adjust_fitted(&self, _stage: Stage<'_>, tf: &mut TraceFile) -> Result<(), ExtrapError> {
        self.apply_or_refuse(tf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HDF5's candidate assignment table: 9 entries over 4 ranks are 3, 2, 2, 2; over 16,
    /// one each on ranks 0-8 and none on the rest.
    #[test]
    fn block_dealing_is_hdf5s_candidate_assignment() {
        let sizes = |c, n| (0..n).map(|r| block(c, n, r).len()).collect::<Vec<_>>();
        assert_eq!(sizes(9, 4), [3, 2, 2, 2]);
        assert_eq!(sizes(9, 8), [2, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(sizes(9, 9), [1; 9]);
        let s16 = sizes(9, 16);
        assert_eq!(&s16[..9], &[1; 9]);
        assert!(s16[9..].iter().all(|&s| s == 0));
        assert_eq!(sizes(8, 4), [2, 2, 2, 2]);
        assert_eq!(block(9, 4, 1), 3..5);
        assert_eq!(block(9, 16, 12), 9..9);
    }

    /// A barrier, then rank `r`'s writes of the 9 entries at offsets 100*k (entry `k`).
    fn rank(entries: &[usize]) -> Vec<RawEvent> {
        let mut v = vec![RawEvent::new(
            Op::Barrier,
            7,
            rsd::op::args::barrier(rsd::mpi::COMM_WORLD),
        )];
        for &k in entries {
            let off = 100 * k as i64;
            v.push(RawEvent::new(
                Op::FileWriteAt,
                9,
                rsd::op::args::file_write_at(0, off, 8, 1, 8),
            ));
        }
        v.push(v[0].clone());
        v
    }

    /// Nine entries over 4 ranks, each rank in its own order: dealt in blocks, one flush after
    /// the first barrier, each rank's order kept; rank 1 writing an entry of rank 2's block
    /// is not the dealing.
    #[test]
    fn a_flush_is_checked_against_the_block_dealing() {
        let site = (Op::FileWriteAt, 9);
        let ranks = vec![
            rank(&[1, 2, 0]),
            rank(&[4, 3]),
            rank(&[6, 5]),
            rank(&[7, 8]),
        ];
        let got = observe(&ranks, site).unwrap();
        let a = Some((Op::Barrier, 7, 0));
        assert_eq!(got.keys().copied().collect::<Vec<_>>(), [a]);
        let f = &got[&a];
        assert_eq!(f.entries.len(), 9);
        assert_eq!(
            f.orders,
            [vec![1, 2, 0], vec![4, 3], vec![6, 5], vec![7, 8]]
        );
        let wrong = vec![
            rank(&[1, 2, 0]),
            rank(&[4, 5]),
            rank(&[6, 3]),
            rank(&[7, 8]),
        ];
        let e = observe(&wrong, site).err().unwrap();
        assert!(e.contains("rank 1 writes entries [4, 5] of 9"), "{e}");
        // A rank whose block is not empty but writes nothing.
        let missing = vec![
            rank(&[0, 1, 2]),
            rank(&[3, 4]),
            rank(&[5, 6, 7, 8]),
            rank(&[]),
        ];
        assert!(observe(&missing, site).is_err());
    }

    /// A site the model does not take says why: here a flush of 9 entries at 4 and 8 ranks
    /// but 8 at 12 (C is the program's, the same at every scale).
    #[test]
    fn a_site_left_to_the_fitting_says_why() {
        let site = (Op::FileWriteAt, 9);
        let dealt = |c: u64, n: u64| -> Vec<Vec<RawEvent>> {
            (0..n)
                .map(|r| rank(&block(c, n, r).collect::<Vec<_>>()))
                .collect()
        };
        let expanded = vec![dealt(9, 4), dealt(9, 8), dealt(8, 12)];
        let ms = ModelSet::builtin();
        match model_site(site, &[4, 8, 12], &expanded, 32, &ms, false).unwrap() {
            Outcome::Skip(why) => assert!(
                why.contains("another number of entries at each scale: 9 at 4, 9 at 8, 8 at 12"),
                "{why}"
            ),
            Outcome::Model(..) => panic!("modelled a flush whose C changes"),
        }
        let expanded = vec![dealt(9, 4), dealt(9, 8), dealt(9, 12)];
        assert!(matches!(
            model_site(site, &[4, 8, 12], &expanded, 32, &ms, false).unwrap(),
            Outcome::Model(..)
        ));
    }
}
