//! Parallel HDF5's *collective* metadata flush (`H5Pset_coll_metadata_write`, which NetCDF 4.9
//! sets on every parallel file), a declared model.
//!
//! HDF5 deals the C dirty entries of a flush over the n ranks as in the independent form
//! ([`crate::hdf5::dealt`]: sorted by address, the first `C mod n` ranks get `C/n + 1`, the others
//! `C/n`), but each rank writes its block with ONE collective call (`H5C__collective_write`):
//!
//! - a rank with entries: `MPI_Type_create_hindexed` of its entries' heap buffers (the memory
//!   type: `MPI_BYTE` blocks, displacements relative to the first buffer), commit; the same of
//!   their file addresses (the file type), commit; `MPI_File_set_view(fh, 0, MPI_BYTE, file
//!   type)`, `MPI_File_write_at_all(fh, 0, 1, memory type)`, the view back to `MPI_BYTE`, both
//!   types freed (the full form: 9 calls);
//! - a rank without: the view set to `MPI_BYTE`, `MPI_File_write_at_all` of 0 bytes, the view
//!   set again (the empty form: 3 calls), creating no type, so the rank's later datatype ids
//!   are 2 lower than a writing rank's (the tracer numbers types in order of first sight).
//!
//! The collective write's nested calls (the aggregators' `pwrite`/`pwritev`) are the MPI
//! library's collective buffering of every rank's view: `collio`'s model derives them
//! (`crate::mpi::derive`), as for any collective write.
//!
//! The model, for the flushes of a run: a *flush* is, per rank, one part (full or empty form)
//! right after its *anchor* (the call before it, counted as in [`crate::hdf5::dealt`]), at an anchor
//! where some rank writes the full form. [`around`] checks at every input scale that every
//! rank has one part at each flush, that the entries are dealt in blocks, that each flush has
//! the same C at every scale; fits each entry's address and length against n exactly; takes
//! the flushes out of the inputs (the later datatype ids renumbered as if no flush had made a
//! type); lets the rest be extrapolated (the derivation of collective I/O reads the inputs
//! with the flushes, so their writes' call sites are derived); and puts each rank's part back
//! at the target, before the collective I/O is derived there.
//!
//! Limits: the memory type's displacements are heap addresses, which no trace predicts, except
//! where a rank writes one entry (one block at displacement 0): the target must have at least
//! C ranks (the inputs may have fewer). A flush whose C changes with n (a chunk index that
//! splits: [`crate::hdf5::meta`]) is refused. Inputs holding summaries are not modelled.

use crate::error::{ExtrapError, Quantity, Reason, Site as TraceSite};
use crate::hdf5::dealt::{Anchor, block, describe_anchor};
use crate::hdf5::meta;
use crate::hdf5::relocate::Relocator;
use crate::hdf5::space::{self, OracleRun, Remembered, RunId};
use crate::library::{Handoff, Inner, LibraryModel, Stage};
use crate::mpi::derive;
use crate::numbers::fit_number;
use crate::pipeline::PassId;
use crate::ranks::{Site, compress_ranks, rank_events};
use crate::request::Cx;
use crate::{DERIVE_LIMIT, Explain, Extrapolated, Input};
use models::ModelSet;
use rsd::mpi::{BYTE, FIRST_DERIVED_TYPE, datatype_positions};
use rsd::op::{Op, Param, args};
use rsd::trace::{Lifts, Node, NodeKind};
use rsd::{RawEvent, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The full form's calls, in order.
const FULL: [Op; 9] = [
    Op::TypeCreateHindexed,
    Op::TypeCommit,
    Op::TypeCreateHindexed,
    Op::TypeCommit,
    Op::FileSetView,
    Op::FileWriteAtAll,
    Op::FileSetView,
    Op::TypeFree,
    Op::TypeFree,
];

/// The empty form's calls, in order.
const EMPTY: [Op; 3] = [Op::FileSetView, Op::FileWriteAtAll, Op::FileSetView];

/// Index of the write in [`FULL`] and in [`EMPTY`].
const FULL_WRITE: usize = 5;
/// What the model's refusals and `--explain` line are about.
const FLUSH_SITE: TraceSite = TraceSite::Model {
    op: Some(Op::FileWriteAtAll),
    what: "HDF5's collective metadata flush",
};
const FLUSH: Quantity = Quantity::Model {
    name: "collective flush",
};
const EMPTY_WRITE: usize = 1;

/// One rank's part of one flush, found in its calls.
#[derive(Debug, Clone)]
struct Part {
    start: usize,
    fh: i64,
    /// Its entries (file address, length), by address; empty for the empty form.
    entries: Vec<(i64, i64)>,
}

impl Part {
    fn len(&self) -> usize {
        if self.entries.is_empty() {
            EMPTY.len()
        } else {
            FULL.len()
        }
    }
}

/// Array `k` of `e` (`len` values after the fixed parameters and `k` arrays of that length).
fn array(e: &RawEvent, k: usize, len: usize) -> Option<&[i64]> {
    let at = e.op.params().len() + k * len;
    e.params.get(at..at + len)
}

fn p(e: &RawEvent, param: Param) -> i64 {
    e.op.param(&e.params, param)
}

/// The full form at `ev[0..]`: its file handle and entries.
fn full_at(ev: &[RawEvent]) -> Option<(i64, Vec<(i64, i64)>)> {
    if ev.len() < FULL.len() || ev.iter().zip(FULL).any(|(e, op)| e.op != op) {
        return None;
    }
    let (mem, file) = (&ev[0], &ev[2]);
    let c = p(mem, Param::Count);
    let x = p(mem, Param::Newtype);
    let y = p(file, Param::Newtype);
    if c < 1
        || p(file, Param::Count) != c
        || p(mem, Param::Oldtype) != BYTE
        || p(file, Param::Oldtype) != BYTE
        || y != x + 1
        || x < FIRST_DERIVED_TYPE
    {
        return None;
    }
    let c = c as usize;
    let lens = array(mem, 0, c)?;
    if array(file, 0, c)? != lens || array(mem, 1, c)?.first() != Some(&0) {
        return None;
    }
    let addrs = array(file, 1, c)?;
    if addrs.windows(2).any(|w| w[0] >= w[1]) || lens.iter().any(|&l| l < 1) {
        return None;
    }
    let fh = p(&ev[4], Param::Fh);
    let view = &ev[4];
    let w = &ev[FULL_WRITE];
    let back = &ev[6];
    let ok = p(&ev[1], Param::Datatype) == x
        && p(&ev[3], Param::Datatype) == y
        && p(view, Param::Disp) == 0
        && p(view, Param::Etype) == BYTE
        && p(view, Param::Filetype) == y
        && p(w, Param::Fh) == fh
        && p(w, Param::Offset) == 0
        && p(w, Param::Count) == 1
        && p(w, Param::Datatype) == x
        && p(w, Param::Bytes) == lens.iter().sum::<i64>()
        && is_byte_view(back, fh)
        && p(&ev[7], Param::Datatype) == x
        && p(&ev[8], Param::Datatype) == y;
    ok.then(|| {
        (
            fh,
            addrs.iter().copied().zip(lens.iter().copied()).collect(),
        )
    })
}

fn is_byte_view(e: &RawEvent, fh: i64) -> bool {
    e.op == Op::FileSetView
        && p(e, Param::Fh) == fh
        && p(e, Param::Disp) == 0
        && p(e, Param::Etype) == BYTE
        && p(e, Param::Filetype) == BYTE
}

/// The empty form at `ev[0..]`: its file handle.
fn empty_at(ev: &[RawEvent]) -> Option<i64> {
    if ev.len() < EMPTY.len() || ev.iter().zip(EMPTY).any(|(e, op)| e.op != op) {
        return None;
    }
    let fh = p(&ev[0], Param::Fh);
    let w = &ev[EMPTY_WRITE];
    let ok = is_byte_view(&ev[0], fh)
        && is_byte_view(&ev[2], fh)
        && p(w, Param::Fh) == fh
        && p(w, Param::Offset) == 0
        && p(w, Param::Count) == 0
        && p(w, Param::Datatype) == BYTE
        && p(w, Param::Bytes) == 0;
    ok.then_some(fh)
}

/// Every candidate part of one rank's calls, in order (full forms, and empty forms, which are
/// parts only at a flush's anchor).
fn candidates(ev: &[RawEvent]) -> Vec<Part> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ev.len() {
        if let Some((fh, entries)) = full_at(&ev[i..]) {
            out.push(Part {
                start: i,
                fh,
                entries,
            });
            i += FULL.len();
        } else if let Some(fh) = empty_at(&ev[i..]) {
            out.push(Part {
                start: i,
                fh,
                entries: Vec::new(),
            });
            i += EMPTY.len();
        } else {
            i += 1;
        }
    }
    out
}

/// The anchor of each of `parts` (calls of the parts not counted), or why not one each.
fn anchors(ev: &[RawEvent], parts: &[Part]) -> Result<Vec<Anchor>, String> {
    let mut seen: HashMap<(Op, u64), usize> = HashMap::new();
    let mut anchor: Anchor = None;
    let mut out = Vec::with_capacity(parts.len());
    let mut next = parts.iter().peekable();
    let mut i = 0;
    while i < ev.len() {
        if let Some(part) = next.peek()
            && part.start == i
        {
            if out.last() == Some(&anchor) && !out.is_empty() {
                return Err(format!(
                    "two parts of a collective flush follow the call {}",
                    describe_anchor(&anchor)
                ));
            }
            out.push(anchor);
            i += part.len();
            next.next();
            continue;
        }
        let e = &ev[i];
        let c = seen.entry((e.op, e.sig)).or_insert(0);
        anchor = Some((e.op, e.sig, *c));
        *c += 1;
        i += 1;
    }
    Ok(out)
}

/// One rank's flush parts, by anchor, given the anchors of the flushes (`None`: every full
/// form's anchor is one).
fn parts_of(
    ev: &[RawEvent],
    flushes: Option<&BTreeSet<Anchor>>,
) -> Result<BTreeMap<Anchor, Part>, String> {
    let cands = candidates(ev);
    // The empty forms are parts where a full form is, at some rank: first everything, then
    // the empty forms at other anchors dropped and the anchors counted again.
    let first = anchors(ev, &cands)?;
    let keep: Vec<Part> = cands
        .into_iter()
        .zip(&first)
        .filter(|(part, a)| match flushes {
            Some(f) => f.contains(a),
            None => !part.entries.is_empty(),
        })
        .map(|(part, _)| part)
        .collect();
    let again = anchors(ev, &keep)?;
    let mut out = BTreeMap::new();
    for (part, a) in keep.into_iter().zip(again) {
        if flushes.is_some_and(|f| !f.contains(&a)) {
            return Err(format!(
                "a part of a collective flush moves to the call {} once the others are \
                 counted",
                describe_anchor(&a)
            ));
        }
        out.insert(a, part);
    }
    Ok(out)
}

/// One flush at one scale.
struct Observed {
    fh: i64,
    /// Every rank's entries, by address.
    entries: Vec<(i64, i64)>,
}

/// The flushes of a run of `n` ranks whose calls are `ranks`, with every rank's parts,
/// checked against the block dealing.
#[allow(clippy::type_complexity)]
fn observe(
    ranks: &[Vec<RawEvent>],
) -> Result<(BTreeMap<Anchor, Observed>, Vec<BTreeMap<Anchor, Part>>), String> {
    let n = ranks.len() as u64;
    let mut flushes = BTreeSet::new();
    for (r, ev) in ranks.iter().enumerate() {
        flushes.extend(
            parts_of(ev, None)
                .map_err(|e| format!("rank {r}: {e}"))?
                .into_keys(),
        );
    }
    let mut parts = Vec::with_capacity(ranks.len());
    for (r, ev) in ranks.iter().enumerate() {
        parts.push(parts_of(ev, Some(&flushes)).map_err(|e| format!("rank {r}: {e}"))?);
    }
    let mut out = BTreeMap::new();
    for a in &flushes {
        let mut all: Vec<((i64, i64), u32)> = Vec::new();
        let mut fhs = BTreeSet::new();
        for (r, ps) in parts.iter().enumerate() {
            let Some(part) = ps.get(a) else {
                return Err(format!(
                    "the collective flush {}: rank {r} has no part in it",
                    describe_anchor(a)
                ));
            };
            fhs.insert(part.fh);
            all.extend(part.entries.iter().map(|&x| (x, r as u32)));
        }
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0].0.0 == w[1].0.0) {
            return Err(format!(
                "the collective flush {}: two entries at address {}",
                describe_anchor(a),
                w[0].0.0
            ));
        }
        let c = all.len() as u64;
        for (r, ps) in parts.iter().enumerate() {
            let want: Vec<(i64, i64)> = block(c, n, r as u64).map(|k| all[k].0).collect();
            if ps[a].entries != want {
                return Err(format!(
                    "the collective flush {}: at {n} ranks rank {r} writes {} of its {c} \
                     entries, block dealing gives it {}",
                    describe_anchor(a),
                    ps[a].entries.len(),
                    want.len()
                ));
            }
        }
        if fhs.len() != 1 {
            return Err(format!(
                "the collective flush {}: the ranks write through other file handles",
                describe_anchor(a)
            ));
        }
        out.insert(
            *a,
            Observed {
                fh: *fhs.iter().next().expect("one"),
                entries: all.into_iter().map(|(x, _)| x).collect(),
            },
        );
    }
    Ok((out, parts))
}

/// The call sites and mean timing of one form's calls.
#[derive(Debug, Clone)]
struct Form {
    sigs: Vec<u64>,
    gap: Vec<u64>,
    dur: Vec<u64>,
}

/// Per form position: call sites seen, and gap and duration sums.
#[derive(Default)]
struct FormSeen {
    sigs: Vec<BTreeSet<u64>>,
    gap: Vec<f64>,
    dur: Vec<f64>,
    count: u64,
}

impl FormSeen {
    fn add(&mut self, calls: &[RawEvent]) {
        if self.sigs.is_empty() {
            self.sigs = vec![BTreeSet::new(); calls.len()];
            self.gap = vec![0.0; calls.len()];
            self.dur = vec![0.0; calls.len()];
        }
        for (k, e) in calls.iter().enumerate() {
            self.sigs[k].insert(e.sig);
            self.gap[k] += e.gap_ns as f64;
            self.dur[k] += e.dur_ns as f64;
        }
        self.count += 1;
    }

    /// The form, where each position has one call site.
    fn form(&self) -> Option<Form> {
        if self.count == 0 || self.sigs.iter().any(|s| s.len() != 1) {
            return None;
        }
        let mean = |v: &[f64]| -> Vec<u64> {
            v.iter()
                .map(|x| (x / self.count as f64).round() as u64)
                .collect()
        };
        Some(Form {
            sigs: self
                .sigs
                .iter()
                .map(|s| *s.iter().next().expect("one"))
                .collect(),
            gap: mean(&self.gap),
            dur: mean(&self.dur),
        })
    }
}

/// One flush, ready for the target.
#[derive(Clone)]
struct Flush {
    anchor: Anchor,
    fh: i64,
    /// The entries at the target, by address (the HDF5 oracle's, put in at the target, where
    /// the chunk index splits).
    entries: Vec<(i64, i64)>,
    /// Every rank's entries at each input scale, by address: what the HDF5 oracle's replay
    /// of each input must have written.
    observed: Vec<Vec<(i64, i64)>>,
    full: Form,
    empty: Option<Form>,
}

/// The modelled flushes.
#[derive(Clone)]
pub(crate) struct Plan {
    flushes: Vec<Flush>,
    explain: Vec<Explain>,
    /// Per empty-form write site no input shows (a flush where every input rank wrote), the
    /// one whose nested calls the derivation takes as its own (the same call of the library).
    pub(crate) aliases: Vec<(Site, Site)>,
    /// The collective writes' call sites, which the derivation must derive.
    pub(crate) sites: BTreeSet<Site>,
    /// The sites made for empty forms no input showed: (own site, container's site), as
    /// lifting would have made them.
    made: Vec<(u64, u64)>,
}

/// What [`plan`] decided.
enum Outcome {
    /// No collective flush in the inputs.
    None,
    /// Not modelled, and why (said with a refusal).
    Skip(String),
    Model(Plan),
}

/// Whether `nodes` hold an `MPI_Type_create_hindexed` at the top level
/// (loops looked into; nested calls are never the flush's): the cheap test before any rank is
/// expanded.
fn has_hindexed(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.op == Op::TypeCreateHindexed,
        NodeKind::Loop(l) => has_hindexed(&l.body),
    })
}

/// What every input scale shows of the collective flushes.
struct Seen {
    /// Each scale's flushes by anchor.
    per_scale: Vec<BTreeMap<Anchor, Observed>>,
    /// The anchors, the same at every scale.
    anchors: Vec<Anchor>,
    /// The calls of the ranks that write entries, by anchor.
    full_seen: BTreeMap<Anchor, FormSeen>,
    /// The calls of the ranks that write none, by anchor.
    empty_seen: BTreeMap<Anchor, FormSeen>,
}

/// The collective flushes of every input (`sorted`, at `scales` ranks), each rank's checked
/// against the block dealing; `None` where no input has one, the reason where the model does
/// not hold.
fn observe_scales(sorted: &[&Input], scales: &[u32]) -> Result<Option<Seen>, String> {
    let mut per_scale = Vec::with_capacity(sorted.len());
    let mut any = false;
    let mut full_seen: BTreeMap<Anchor, FormSeen> = BTreeMap::new();
    let mut empty_seen: BTreeMap<Anchor, FormSeen> = BTreeMap::new();
    for (i, &n) in sorted.iter().zip(scales) {
        let f = crate::prefix::resolved(&i.file);
        let ranks: Vec<Vec<RawEvent>> = (0..n).map(|r| rank_events(&f.trace, r)).collect();
        if !ranks.iter().any(|ev| !candidates(ev).is_empty()) {
            per_scale.push(BTreeMap::new());
            continue;
        }
        any = true;
        match observe(&ranks) {
            Ok((o, parts)) => {
                for (ev, ps) in ranks.iter().zip(&parts) {
                    for (a, part) in ps {
                        let calls = &ev[part.start..part.start + part.len()];
                        let seen = if part.entries.is_empty() {
                            &mut empty_seen
                        } else {
                            &mut full_seen
                        };
                        seen.entry(*a).or_default().add(calls);
                    }
                }
                per_scale.push(o);
            }
            Err(e) => return Err(format!("at {n} ranks {e}")),
        }
    }
    if !any || per_scale.iter().all(BTreeMap::is_empty) {
        return Ok(None);
    }
    let anchors: Vec<Anchor> = per_scale[0].keys().copied().collect();
    if let Some(n) = per_scale
        .iter()
        .zip(scales)
        .find(|(o, _)| o.keys().copied().collect::<Vec<_>>() != anchors)
        .map(|x| x.1)
    {
        return Err(format!(
            "the collective flushes are not after the same calls at {n} ranks as at {} ranks",
            scales[0]
        ));
    }
    Ok(Some(Seen {
        per_scale,
        anchors,
        full_seen,
        empty_seen,
    }))
}

/// The collective flushes of `sorted` (one run per scale, increasing rank counts) modelled
/// for `target`, or why the model is not taken. `from_oracle`: the entries at the target will
/// be the HDF5 oracle's (the chunk index splits): their count is not checked against the
/// target here, nor are they fitted.
fn plan(
    sorted: &[&Input],
    lifts: Option<&Lifts>,
    target: u32,
    models: &ModelSet,
    from_oracle: bool,
) -> Outcome {
    if !sorted.iter().any(|i| has_hindexed(&i.file.trace.nodes)) {
        return Outcome::None;
    }
    let scales: Vec<u32> = sorted.iter().map(|i| i.file.header.nranks).collect();
    if let Some(i) = sorted.iter().find(|i| i.file.header.nranks > DERIVE_LIMIT) {
        return Outcome::Skip(format!(
            "{} has over {DERIVE_LIMIT} ranks to expand",
            i.name
        ));
    }
    if let Some(i) = sorted
        .iter()
        .find(|i| rsd::approx::first(&i.file.trace).is_some())
    {
        return Outcome::Skip(format!(
            "{} holds summaries, and the model expands every rank",
            i.name
        ));
    }
    let seen = match observe_scales(sorted, &scales) {
        Ok(Some(seen)) => seen,
        Ok(None) => return Outcome::None,
        Err(why) => return Outcome::Skip(why),
    };
    let Seen {
        per_scale,
        anchors,
        full_seen,
        empty_seen,
    } = seen;
    let ns: Vec<i64> = scales.iter().map(|&n| i64::from(n)).collect();
    let mut explain = Vec::new();
    let mut flushes = Vec::new();
    let mut sites = BTreeSet::new();
    let mut aliases = Vec::new();
    let mut made = Vec::new();
    // An empty form any input shows, for a flush where no input rank had none: its calls'
    // own sites (inside the library), put in that flush's container.
    let any_empty: Option<Form> = empty_seen.values().find_map(FormSeen::form);
    for a in &anchors {
        let obs: Vec<&Observed> = per_scale.iter().map(|o| &o[a]).collect();
        let c = obs[0].entries.len();
        let what = format!("the collective metadata flush {}", describe_anchor(a));
        if obs.iter().any(|o| o.entries.len() != c) {
            let cs: Vec<String> = obs
                .iter()
                .zip(&scales)
                .map(|(o, n)| format!("{} at {n}", o.entries.len()))
                .collect();
            return Outcome::Skip(format!(
                "{what} has another number of entries at each scale: {}",
                cs.join(", ")
            ));
        }
        if c as u64 > u64::from(target) && !from_oracle {
            return Outcome::Skip(too_many(&what, c, target));
        }
        let Some(full) = full_seen.get(a).and_then(FormSeen::form) else {
            return Outcome::Skip(format!(
                "{what}: the ranks that write make their calls from other call sites"
            ));
        };
        let empty = match empty_seen.get(a) {
            Some(s) => match s.form() {
                Some(f) => Some(f),
                None => {
                    return Outcome::Skip(format!(
                        "{what}: the ranks that write nothing make their calls from other call \
                         sites"
                    ));
                }
            },
            None => None,
        };
        let empty = match (empty, c as u64 >= u64::from(target)) {
            (Some(e), _) => Some(e),
            (None, true) => None,
            (None, false) => {
                // Every input rank wrote here: the empty form's calls are the library's same
                // calls as elsewhere, in this flush's container.
                let Some((form, alias)) =
                    empty_form_like(lifts, &full, any_empty.as_ref(), &mut made)
                else {
                    return Outcome::Skip(format!(
                        "{what}: at {target} ranks some ranks write no entry, and no input \
                         shows a rank that writes none in a collective flush of the library"
                    ));
                };
                aliases.push(alias);
                Some(form)
            }
        };
        sites.insert((Op::FileWriteAtAll, full.sigs[FULL_WRITE]));
        if let Some(e) = &empty {
            sites.insert((Op::FileWriteAtAll, e.sigs[EMPTY_WRITE]));
        }
        let event = TraceSite::call(Op::FileWriteAtAll, full.sigs[FULL_WRITE]);
        let fhs: Vec<i64> = obs.iter().map(|o| o.fh).collect();
        let fh = Quantity::Param { name: "fh" };
        let fh = match fit_number(&ns, &fhs, target, models, &event, &what, fh, &mut explain) {
            Ok(v) => v,
            Err(e) => return Outcome::Skip(e.to_string()),
        };
        let mut entries = match from_oracle {
            true => Vec::new(),
            false => match fit_entries(&obs, &ns, target, models, (&event, &what), &mut explain) {
                Ok(e) => e,
                Err(why) => return Outcome::Skip(why),
            },
        };
        entries.sort_unstable();
        if entries.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Outcome::Skip(format!(
                "{what}: the entries' fitted addresses overlap at {target} ranks"
            ));
        }
        flushes.push(Flush {
            anchor: *a,
            fh,
            entries,
            observed: obs.iter().map(|o| o.entries.clone()).collect(),
            full,
            empty,
        });
    }
    explain.insert(0, explain_flushes(&flushes));
    Outcome::Model(Plan {
        flushes,
        explain,
        aliases,
        sites,
        made,
    })
}

/// Each entry's file address and length of a flush (`obs`: at each scale, at `ns` ranks)
/// fitted against n for `target`; `names`: the write's event and the flush, for `--explain`
/// and refusals.
fn fit_entries(
    obs: &[&Observed],
    ns: &[i64],
    target: u32,
    models: &ModelSet,
    (event, what): (&TraceSite, &str),
    explain: &mut Vec<Explain>,
) -> Result<Vec<(i64, i64)>, String> {
    let c = obs[0].entries.len();
    let mut entries = Vec::with_capacity(c);
    for k in 0..c {
        let mut at = [0i64; 2];
        for (j, name) in ["file address", "length"].into_iter().enumerate() {
            let name = Quantity::Model { name };
            let ys: Vec<i64> = obs
                .iter()
                .map(|o| {
                    if j == 0 {
                        o.entries[k].0
                    } else {
                        o.entries[k].1
                    }
                })
                .collect();
            let q = format!("entry {k} of {what}");
            at[j] = fit_number(ns, &ys, target, models, event, &q, name, explain)
                .map_err(|e| e.to_string())?;
        }
        entries.push((at[0], at[1]));
    }
    Ok(entries)
}

/// What `--explain` says of the modelled `flushes` as a whole.
fn explain_flushes(flushes: &[Flush]) -> Explain {
    let cs: Vec<String> = flushes
        .iter()
        .map(|f| f.entries.len().to_string())
        .collect();
    Explain {
        event: FLUSH_SITE.to_string(),
        quantity: "collective writes of dealt entries".into(),
        model: format!(
            "declared model: the C entries of each flush, sorted by address, dealt over the \
             ranks in blocks (the first C mod n ranks write C/n + 1, the others C/n; parallel \
             HDF5's H5C_apply_candidate_list), each rank writing its block as one \
             MPI_File_write_at_all through MPI_Type_create_hindexed memory and file types \
             (a rank without entries: a view of MPI_BYTE and 0 bytes; H5C__collective_write); \
             reproduced at every input scale; {} flush(es) of C = {} entries; addresses and \
             lengths fitted against n; the aggregators' calls derived by the collective-I/O \
             model; timing the inputs' mean per call",
            flushes.len(),
            cs.join(", ")
        ),
        curve: None,
    }
}

/// The empty form of a flush at which every input rank wrote: the calls of `other` (an empty
/// form another flush shows) made from their own sites inside the library, put in the
/// container of `full`'s write (`made` gets each new site and its container), and the alias
/// of its write for the derivation; `None` where the inputs were not lifted or show no empty
/// form.
fn empty_form_like(
    lifts: Option<&Lifts>,
    full: &Form,
    other: Option<&Form>,
    made: &mut Vec<(u64, u64)>,
) -> Option<(Form, (Site, Site))> {
    let l = lifts?;
    let (_, container) = l.parts(full.sigs[FULL_WRITE])?;
    let other = other?;
    let own: Vec<u64> = (other.sigs.iter())
        .map(|&s| l.parts(s).map(|x| x.0))
        .collect::<Option<_>>()?;
    made.extend(own.iter().map(|&o| (o, container)));
    let form = Form {
        sigs: (own.iter())
            .map(|&o| Lifts::lifted_site(o, container))
            .collect(),
        gap: other.gap.clone(),
        dur: other.dur.clone(),
    };
    let alias = (
        (Op::FileWriteAtAll, form.sigs[EMPTY_WRITE]),
        (Op::FileWriteAtAll, other.sigs[EMPTY_WRITE]),
    );
    Some((form, alias))
}

/// Why a flush of `c` entries is not predicted at `target` ranks (`what` names it).
fn too_many(what: &str, c: usize, target: u32) -> String {
    format!(
        "{what} deals {c} entries: at {target} ranks a rank writes several, through a memory \
         type whose displacements are heap addresses no trace predicts (at least {c} ranks, \
         each writing one entry, are predicted)"
    )
}

/// The ops of the full form, for [`space::runs`].
const FULL_OPS: [Op; 5] = [
    Op::TypeCreateHindexed,
    Op::TypeCommit,
    Op::FileSetView,
    Op::FileWriteAtAll,
    Op::TypeFree,
];

/// The HDF5 oracle's collective flushes (its one rank writes every entry in one full form):
/// each run of the forms' calls that holds exactly one full form, with its entries by address.
fn oracle_flushes(run: &OracleRun) -> Result<BTreeMap<RunId, Vec<(i64, i64)>>, String> {
    let mut out = BTreeMap::new();
    for (id, calls) in space::runs(run, &FULL_OPS)? {
        let full: Vec<Part> = candidates(&calls)
            .into_iter()
            .filter(|c| !c.entries.is_empty())
            .collect();
        if let [one] = full.as_slice() {
            out.insert(id, one.entries.clone());
        }
    }
    Ok(out)
}

/// Per flush of `p`, the run of the HDF5 oracle's collective flushes that is that flush at
/// every input scale (`sorted`, as `p` observed them): the same entries, the same run (the
/// same HDF5 call, the same ordinal) at every scale; and the oracle's replay of each input.
/// Otherwise why not.
fn oracle_ids(p: &Plan, sorted: &[&Input], o: &Remembered) -> Result<OracleIds, String> {
    let replays = space::replay_inputs(o, sorted)?;
    let mut per_scale = Vec::with_capacity(replays.len());
    for run in &replays {
        per_scale.push(oracle_flushes(run)?);
    }
    let mut ids = Vec::with_capacity(p.flushes.len());
    for f in &p.flushes {
        let mut common: Option<BTreeSet<RunId>> = None;
        for (k, (runs, i)) in per_scale.iter().zip(sorted).enumerate() {
            let here: BTreeSet<RunId> = runs
                .iter()
                .filter(|(_, e)| **e == f.observed[k])
                .map(|(id, _)| *id)
                .collect();
            if here.is_empty() {
                return Err(format!(
                    "the HDF5 oracle's collective flushes at {} ranks are not those of the flush \
                     {} ({} entries; the oracle's: {})",
                    i.file.header.nranks,
                    describe_anchor(&f.anchor),
                    f.observed[k].len(),
                    runs.values()
                        .map(|r| r.len().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            common = Some(match common {
                None => here,
                Some(c) => c.intersection(&here).copied().collect(),
            });
        }
        let common = common.unwrap_or_default();
        let [id] = common.iter().copied().collect::<Vec<_>>()[..] else {
            return Err(format!(
                "the flush {} is {} of the HDF5 oracle's collective flushes at every input scale",
                describe_anchor(&f.anchor),
                if common.is_empty() {
                    "not the same one"
                } else {
                    "more than one"
                }
            ));
        };
        ids.push(id);
    }
    Ok((ids, replays))
}

/// Per flush, the oracle's run that is it; the oracle's replay of each input scale.
type OracleIds = (Vec<RunId>, Vec<Arc<OracleRun>>);

/// Renumbers the datatype ids of `e` (children included) with `f`.
fn renumber(e: &mut RawEvent, f: &impl Fn(i64) -> i64) {
    for i in datatype_positions(e.op, &e.params) {
        let v = e.params[i];
        if v >= FIRST_DERIVED_TYPE {
            e.params[i] = f(v);
        }
    }
    for c in &mut e.children {
        renumber(c, f);
    }
}

/// `tf` without its collective flushes (every rank expanded and compressed again), each
/// rank's later datatype ids lowered by the 2 each full form made. `lifts`: the sites lifting
/// made, `tf` being in the lifted form (each rank's calls are compressed nested:
/// [`compress_ranks`]).
fn strip(tf: &TraceFile, p: &Plan, lifts: Option<&Lifts>) -> Result<TraceFile, String> {
    let flushes: BTreeSet<Anchor> = p.flushes.iter().map(|f| f.anchor).collect();
    let trace = compress_ranks(lifts, tf.header.nranks, |r| {
        take_parts(&rank_events(&tf.trace, r), &flushes).map_err(|e| format!("rank {r}: {e}"))
    })?;
    Ok(TraceFile {
        header: tf.header.clone(),
        trace,
    })
}

/// One rank's calls `ev` without its parts of the flushes at `flushes`, its later datatype
/// ids lowered by the 2 each full form made.
fn take_parts(ev: &[RawEvent], flushes: &BTreeSet<Anchor>) -> Result<Vec<RawEvent>, String> {
    let parts = parts_of(ev, Some(flushes))?;
    let mut skip: Vec<(usize, usize)> = parts.values().map(|q| (q.start, q.len())).collect();
    skip.sort_unstable();
    // The first ids of the full forms taken out, in the input's numbering.
    let made: Vec<i64> = parts
        .values()
        .filter(|q| !q.entries.is_empty())
        .map(|q| p_of_first(&ev[q.start]))
        .collect();
    let lower = |v: i64| v - 2 * made.iter().filter(|&&x| x < v).count() as i64;
    let mut out = Vec::with_capacity(ev.len());
    let mut it = skip.iter().peekable();
    let mut i = 0;
    while i < ev.len() {
        if let Some(&&(s, l)) = it.peek()
            && s == i
        {
            i += l;
            it.next();
            continue;
        }
        let mut e = ev[i].clone();
        renumber(&mut e, &lower);
        out.push(e);
        i += 1;
    }
    Ok(out)
}

fn p_of_first(mem: &RawEvent) -> i64 {
    p(mem, Param::Newtype)
}

/// Rank `r`'s part of `f` at `n` ranks, its types numbered from `x`.
fn part_calls(f: &Flush, n: u32, r: u32, x: i64) -> Vec<RawEvent> {
    let c = f.entries.len() as u64;
    let mine = block(c, u64::from(n), u64::from(r));
    let (ops, form): (&[Op], &Form) = match (&f.empty, mine.is_empty()) {
        (Some(e), true) => (&EMPTY, e),
        _ => (&FULL, &f.full),
    };
    let byte_view = args::file_set_view(f.fh, 0, BYTE, BYTE);
    let params: Vec<Vec<i64>> = if mine.is_empty() {
        vec![
            byte_view.clone(),
            args::file_write_at_all(f.fh, 0, 0, BYTE, 0),
            byte_view,
        ]
    } else {
        let es = &f.entries[mine];
        let lens: Vec<i64> = es.iter().map(|e| e.1).collect();
        let addrs: Vec<i64> = es.iter().map(|e| e.0).collect();
        // One entry: the memory type's one block is at displacement 0 (checked in `plan`).
        let heap = vec![0; es.len()];
        let hindexed = |newtype: i64, displs: &[i64]| {
            let mut v = args::type_create_hindexed(es.len() as i64, BYTE, newtype);
            v.extend(&lens);
            v.extend(displs);
            v
        };
        vec![
            hindexed(x, &heap),
            args::type_commit(x),
            hindexed(x + 1, &addrs),
            args::type_commit(x + 1),
            args::file_set_view(f.fh, 0, BYTE, x + 1),
            args::file_write_at_all(f.fh, 0, 1, x, lens.iter().sum()),
            byte_view,
            args::type_free(x),
            args::type_free(x + 1),
        ]
    };
    ops.iter()
        .zip(params)
        .enumerate()
        .map(|(k, (&op, ps))| RawEvent {
            gap_ns: form.gap[k],
            dur_ns: form.dur[k],
            ..RawEvent::new(op, form.sigs[k], ps)
        })
        .collect()
}

/// Puts every rank's parts of the flushes into `tf` (at the target) after their anchors, the
/// later datatype ids raised by 2 per full form.
fn insert(tf: &mut TraceFile, p: &Plan, lifts: Option<&Lifts>) -> Result<(), String> {
    let n = tf.header.nranks;
    if n > DERIVE_LIMIT {
        return Err(format!(
            "the collective flushes at {n} ranks are put into every rank's calls; that is \
             done up to {DERIVE_LIMIT}"
        ));
    }
    // The sites made for empty forms no input showed are lifted sites too.
    let mut more;
    let lifts = match lifts {
        Some(l) if !p.made.is_empty() => {
            more = l.clone();
            for &(own, container) in &p.made {
                more.add(own, container);
            }
            Some(&more)
        }
        l => l,
    };
    let trace = compress_ranks(lifts, n, |r| {
        put_parts(&rank_events(&tf.trace, r), &p.flushes, n, r)
    })?;
    tf.trace = trace;
    Ok(())
}

/// Rank `r`'s calls `ev` (at `n` ranks) with its parts of `flushes` after their anchors, the
/// later datatype ids raised by 2 per full form: the inverse of [`take_parts`].
fn put_parts(ev: &[RawEvent], flushes: &[Flush], n: u32, r: u32) -> Result<Vec<RawEvent>, String> {
    let mut seen: HashMap<(Op, u64), usize> = HashMap::new();
    let mut pos: HashMap<Anchor, usize> = HashMap::from([(None, 0)]);
    for (i, e) in ev.iter().enumerate() {
        let c = seen.entry((e.op, e.sig)).or_insert(0);
        pos.insert(Some((e.op, e.sig, *c)), i + 1);
        *c += 1;
    }
    let mut at: Vec<(usize, &Flush)> = Vec::new();
    for f in flushes {
        let i = *pos.get(&f.anchor).ok_or_else(|| {
            format!(
                "at {n} ranks rank {r} has no call {} to make its part of the collective \
                 metadata flush after",
                describe_anchor(&f.anchor)
            )
        })?;
        at.push((i, f));
    }
    at.sort_by_key(|(i, _)| *i);
    // Ids in the stripped numbering: a flush's types are the next ids at its place; ids
    // first seen after it are 2 higher per full form before them.
    let mut made: Vec<i64> = Vec::new();
    let raise = |made: &[i64], v: i64| v + 2 * made.iter().filter(|&&x| x <= v).count() as i64;
    let mut out = Vec::with_capacity(ev.len() + FULL.len() * at.len());
    let mut max_id = FIRST_DERIVED_TYPE - 1;
    let mut next = at.iter().peekable();
    for i in 0..=ev.len() {
        while let Some(&&(j, f)) = next.peek()
            && j == i
        {
            let x = max_id + 1;
            let calls = part_calls(f, n, r, raise(&made, x));
            if calls.len() == FULL.len() {
                made.push(x);
            }
            out.extend(calls);
            next.next();
        }
        let Some(e) = ev.get(i) else { break };
        let mut e = e.clone();
        for k in datatype_positions(e.op, &e.params) {
            max_id = max_id.max(e.params[k]);
        }
        renumber(&mut e, &|v| raise(&made, v));
        out.push(e);
    }
    Ok(out)
}

/// What the extrapolation inside [`around`] does with the collective flushes.
pub(crate) struct AtTarget<'a> {
    /// The inputs with their flushes (sorted by rank count): the derivation of collective I/O
    /// checks its model on their writes too.
    pub(crate) model_inputs: Vec<&'a Input>,
    /// The modelled flushes.
    pub(crate) plan: &'a Plan,
    /// The call sites lifting made: a flush's write is one call of HDF5's code under each
    /// flush's container, whose nested calls the derivation may take from another flush's.
    pub(crate) lifts: Option<&'a Lifts>,
    /// Where the chunk index splits at the target: the HDF5 oracle, and per flush the run of
    /// its collective flushes that is it, whose entries at the target are the flush's.
    oracle: Option<(&'a Remembered<'a>, Vec<RunId>)>,
    /// What moves the fitted data addresses to where the oracle's HDF5 stores the data at
    /// the target (with the oracle only).
    pub(crate) reloc: Option<Relocator<'a>>,
}

impl AtTarget<'_> {
    /// Puts the flushes into the extrapolated trace `tf`, before the collective I/O is derived.
    pub(crate) fn insert(&self, tf: &mut TraceFile) -> Result<(), ExtrapError> {
        let Some((o, ids)) = &self.oracle else {
            return insert(tf, self.plan, self.lifts).map_err(|why| self.refused(why));
        };
        let p = self
            .with_oracles_entries(tf, o, ids)
            .map_err(|why| self.refused(why))?;
        insert(tf, &p, self.lifts).map_err(|why| self.refused(why))
    }

    /// The plan with each flush's entries those the HDF5 oracle's replay of `tf`'s rank 0
    /// (the fitted target, its flushes not in yet) writes in the flush's run.
    fn with_oracles_entries(
        &self,
        tf: &TraceFile,
        o: &Remembered,
        ids: &[RunId],
    ) -> Result<Plan, String> {
        let n = tf.header.nranks;
        let run = space::replay(
            o,
            &rank_events(&tf.trace, 0),
            tf.header.hdf5_version().as_deref(),
        )
        .map_err(|e| format!("the HDF5 oracle could not replay the calls at {n} ranks: {e}"))?;
        let runs = oracle_flushes(&run)?;
        let mut p = self.plan.clone();
        for (f, id) in p.flushes.iter_mut().zip(ids) {
            let what = format!(
                "the collective metadata flush {}",
                describe_anchor(&f.anchor)
            );
            let entries = runs.get(id).ok_or_else(|| {
                format!(
                    "at {n} ranks the HDF5 oracle made no {} ({what})",
                    space::describe(id)
                )
            })?;
            if entries.len() as u64 > u64::from(n) {
                return Err(too_many(&what, entries.len(), n));
            }
            f.entries = entries.clone();
        }
        Ok(p)
    }

    /// A refusal of the model at the target.
    pub(crate) fn refused(&self, why: String) -> ExtrapError {
        let tried =
            "block dealing of a collective metadata flush (H5Pset_coll_metadata_write)".into();
        let how = (String::new(), tried, "trace the target scale".into());
        let why = Reason::Library {
            by: PassId::CollectiveFlushes,
            why,
        };
        ExtrapError::refused(FLUSH_SITE, FLUSH, why, how)
    }
}

/// Runs `inner` (an extrapolation to `target`) on `inputs` with HDF5's collective metadata
/// flushes modelled: when every input's are dealt in blocks and the model holds, they are
/// taken out of the inputs, `inner` extrapolates the rest with an [`AtTarget`] that puts them
/// back before the collective I/O is derived. Otherwise `inner` runs on the inputs as they
/// are, and a refusal says why the model was not used.
pub(crate) fn around(
    cx: Cx,
    inputs: &[Input],
    inner: impl FnOnce(&[Input], Option<&AtTarget>) -> Result<Extrapolated, ExtrapError>,
) -> Result<Extrapolated, ExtrapError> {
    let (lifts, target, models) = (cx.lifts, cx.target, cx.models);
    let mut sorted: Vec<&Input> = inputs.iter().collect();
    sorted.sort_by_key(|i| i.file.header.nranks);
    sorted.dedup_by_key(|i| i.file.header.nranks);
    if sorted.len() < 3 || target == 0 {
        return inner(inputs, None);
    }
    let grows = meta::chunk_index_grows(&sorted, target, models);
    // A chunk index that splits writes more entries than the inputs: HDF5 itself says which
    // (`h5space`: the oracle's, where it reproduces every input's flushes).
    let oracle = grows.as_ref().and(cx.oracle);
    let mut p = match plan(&sorted, lifts, target, models, oracle.is_some()) {
        Outcome::None => return inner(inputs, None),
        Outcome::Skip(why) => {
            let said = meta::collective_flush(&sorted, Some(&why));
            return inner(inputs, None).map_err(|e| match said {
                Some(s) => e.also_library(PassId::CollectiveFlushes, &s),
                None => e,
            });
        }
        Outcome::Model(p) => p,
    };
    // The entry counts are the inputs': a chunk index that splits writes more, which the
    // oracle says, or the split is refused.
    let refuse_split = |why: &str, more: &str| {
        meta::index_split_refusal(
            PassId::CollectiveFlushes,
            FLUSH_SITE,
            FLUSH,
            target,
            why,
            &format!(
                "; {} (that form is modelled, with the inputs' number of entries){more}",
                meta::collective_flush(&sorted, None).unwrap_or_default()
            ),
            "block dealing of a collective metadata flush",
        )
    };
    let mut from_oracle = None;
    if let Some(why) = &grows {
        let Some(o) = oracle else {
            return Err(refuse_split(
                why,
                "; no HDF5 oracle (iotrex-h5oracle) to replay the calls with",
            ));
        };
        match oracle_ids(&p, &sorted, o) {
            Ok(ids) => from_oracle = Some((o, ids)),
            Err(e) => return Err(refuse_split(why, &format!("; {e}"))),
        }
    }
    let mut stripped = Vec::with_capacity(inputs.len());
    for i in inputs {
        let mut file = i.file.clone();
        crate::prefix::keeping_model(&mut file, |f| strip(f, &p, lifts).map(|s| *f = s)).map_err(
            |why| ExtrapError::Derive {
                input: i.name.clone(),
                why,
            },
        )?;
        stripped.push(Input {
            name: i.name.clone(),
            file,
        });
    }
    if from_oracle.is_some()
        && let Some(x) = p.explain.first_mut()
    {
        x.model.push_str(
            "; where the chunk index splits at the target, each flush's entries are those rank \
             0's calls at the target make, replayed on one rank through the HDF5 library itself \
             (iotrex-h5oracle), which reproduced every input's flushes",
        );
    }
    let ns: Vec<i64> = sorted
        .iter()
        .map(|i| i64::from(i.file.header.nranks))
        .collect();
    // Where the oracle's dataset storage at the target moved, the fitted data addresses
    // follow it (`relocate`), before the flushes go back in and the collective I/O is derived.
    let reloc = from_oracle.as_ref().map(|(o, (_, replays))| Relocator {
        oracle: o,
        inputs: replays.clone(),
        ns,
        models,
    });
    let at = AtTarget {
        model_inputs: sorted,
        plan: &p,
        lifts,
        oracle: from_oracle.map(|(o, (ids, _))| (o, ids)),
        reloc,
    };
    let mut out = inner(&stripped, Some(&at)).map_err(|e| match (&grows, &at.oracle) {
        (Some(why), Some(_)) => e.also_library(PassId::CollectiveFlushes, why),
        _ => e,
    })?;
    if at.oracle.is_some() {
        space::mark_from_oracle(&mut out.file.header);
    }
    for (k, e) in p.explain.iter().cloned().enumerate() {
        out.explain.insert(k, e);
    }
    out.file.header.notes.push(
        "HDF5's collective metadata flushes (one MPI_File_write_at_all per rank through \
         hindexed types of its dealt entries) derived by iotrex's declared model; their timing \
         is the inputs' mean per call"
            .into(),
    );
    Ok(out)
}

/// HDF5's collective metadata flushes as a library model ([`around`], [`AtTarget`]).
pub(crate) struct CollectiveFlushes;

impl LibraryModel for CollectiveFlushes {
    fn id(&self) -> Option<PassId> {
        Some(PassId::CollectiveFlushes)
    }

    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        around(cx, inputs, |inputs, flushes| match flushes {
            Some(at) => {
                let mut out = stage.with(at, |stage| inner(cx, inputs, stage))?;
                out.acted(PassId::CollectiveFlushes);
                Ok(out)
            }
            None => inner(cx, inputs, stage),
        })
    }
}

impl Handoff for AtTarget<'_> {
    fn by(&self) -> PassId {
        PassId::CollectiveFlushes
    }

    fn adjust_fitted(&self, stage: Stage<'_>, tf: &mut TraceFile) -> Result<(), ExtrapError> {
        // Where it took the split index from the oracle, this model relocates the data, unless
        // the dealt writes' model did.
        if !stage.has(PassId::DealtWrites)
            && let Some(r) = &self.reloc
        {
            r.apply_or_refuse(tf)?;
        }
        // The flushes go back in before their writes' nested calls are derived.
        self.insert(tf)
    }

    fn derivation_inputs(&self) -> Option<Vec<&Input>> {
        // The flushes' writes need the derivation: the inputs with them say what it is.
        Some(self.model_inputs.clone())
    }

    fn constrain_derivation(&self, plan: &mut derive::Plan) -> Result<(), ExtrapError> {
        // The flushes' writes must be derived at the target: their nested calls are not in
        // what is fitted.
        for &(new, like) in &self.plan.aliases {
            plan.alias(new, like);
        }
        if let Some(l) = self.lifts {
            plan.same_call(|sig| l.parts(sig).map(|p| p.0));
        }
        let why = plan.skipped.clone().or_else(|| {
            self.plan
                .sites
                .iter()
                .find(|s| !plan.derived.contains(s))
                .map(|s| {
                    format!(
                        "the collective-I/O model does not reproduce the nested calls of {} (call site \
                         {:#x}) at every input scale{}",
                        s.0.name(),
                        s.1,
                        plan.failure
                            .as_ref()
                            .map_or_else(String::new, |f| format!(": {f}"))
                    )
                })
        });
        match why {
            Some(why) => Err(self.refused(why)),
            None => Ok(()),
        }
    }

    fn refuse_underived(&self, why: &str) -> Option<ExtrapError> {
        // The flushes' writes have no nested calls to fit.
        Some(self.refused(why.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARRIER: u64 = 7;

    fn barrier() -> RawEvent {
        RawEvent::new(Op::Barrier, BARRIER, args::barrier(rsd::mpi::COMM_WORLD))
    }

    /// A flush of `c` entries at addresses 100*k, 10 + k bytes long.
    fn flush(c: usize) -> Flush {
        let form = |len: usize, base: u64| Form {
            sigs: (0..len as u64).map(|k| base + k).collect(),
            gap: vec![0; len],
            dur: vec![0; len],
        };
        Flush {
            anchor: Some((Op::Barrier, BARRIER, 0)),
            fh: 0,
            entries: (0..c as i64).map(|k| (100 * k, 10 + k)).collect(),
            observed: Vec::new(),
            full: form(FULL.len(), 100),
            empty: Some(form(EMPTY.len(), 200)),
        }
    }

    /// A type made before the flush, used after it, and one made after it.
    fn around_flush(r: u32, n: u32, f: &Flush) -> Vec<RawEvent> {
        let contiguous =
            |old, new| RawEvent::new(Op::TypeContiguous, 3, args::type_contiguous(4, old, new));
        let mut ev = vec![contiguous(BYTE, 1000), barrier()];
        let base = if block(f.entries.len() as u64, u64::from(n), u64::from(r)).is_empty() {
            1001
        } else {
            1003
        };
        ev.extend(part_calls(f, n, r, 1001));
        ev.push(contiguous(1000, base));
        ev.push(RawEvent::new(Op::TypeFree, 4, args::type_free(base)));
        ev
    }

    /// Every rank's part is found, checked against the dealing, and taken out with the later
    /// ids renumbered; putting the parts back gives the calls again (a rank with entries and
    /// one without, whose later ids are 2 lower).
    /// The oracle's one rank writes every entry of a flush in one full form: found with its
    /// entries, by the HDF5 call it is in; a form whose file type is not the entries' is not
    /// one.
    #[test]
    fn the_oracles_flushes_are_its_full_forms_by_place() {
        let f = flush(5);
        let flush_call = |children: Vec<RawEvent>| RawEvent {
            children,
            ..RawEvent::new(Op::H5Fflush, 9, args::h5_fflush(0, 1))
        };
        let mut bad = part_calls(&f, 1, 0, 1001);
        // The write through the memory type alone: not the form.
        bad[4] = RawEvent::new(Op::FileSetView, 1, args::file_set_view(0, 0, BYTE, 1001));
        let events = vec![
            barrier(),
            flush_call(part_calls(&f, 1, 0, 1001)),
            flush_call(bad),
        ];
        let trace = compress_ranks(None, 1, |_| Ok(events.clone())).unwrap();
        let run = OracleRun {
            trace: TraceFile {
                header: rsd::Header::new(1),
                trace,
            },
            steps: vec![3, 4],
            storage: Vec::new(),
        };
        let found = oracle_flushes(&run).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found.get(&(3, true, 0)), Some(&f.entries));
    }

    #[test]
    fn parts_are_taken_out_and_put_back() {
        let f = flush(3);
        let n = 4;
        let ranks: Vec<Vec<RawEvent>> = (0..n).map(|r| around_flush(r, n, &f)).collect();
        let (obs, parts) = observe(&ranks).unwrap();
        let a = f.anchor;
        assert_eq!(obs[&a].entries, f.entries);
        assert!(parts[3][&a].entries.is_empty());
        assert_eq!(parts[1][&a].entries, [(100, 11)]);
        let flushes = BTreeSet::from([a]);
        for r in 0..n {
            let taken = take_parts(&ranks[r as usize], &flushes).unwrap();
            assert_eq!(taken.len(), 4, "rank {r}");
            // The type made after the flush is 1001 once its types are gone.
            assert_eq!(taken[2].op.param(&taken[2].params, Param::Newtype), 1001);
            let back = put_parts(&taken, std::slice::from_ref(&f), n, r).unwrap();
            assert_eq!(back, ranks[r as usize], "rank {r}");
        }
    }

    /// A rank writing another rank's entry is not the dealing.
    #[test]
    fn another_dealing_is_not_the_model() {
        let f = flush(3);
        let n = 4;
        let mut ranks: Vec<Vec<RawEvent>> = (0..n).map(|r| around_flush(r, n, &f)).collect();
        // Rank 1 writes nothing, the others their entries.
        ranks[1] = around_flush(3, n, &f);
        let e = observe(&ranks).err().unwrap();
        assert!(e.contains("block dealing gives it"), "{e}");
        // Two ranks writing one entry.
        let mut ranks: Vec<Vec<RawEvent>> = (0..n).map(|r| around_flush(r, n, &f)).collect();
        ranks[3] = around_flush(2, n, &f);
        let e = observe(&ranks).err().unwrap();
        assert!(e.contains("two entries at address 200"), "{e}");
    }
}
