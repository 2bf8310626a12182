//! Inputs that disagree in structure.
//!
//! A real code can take another path at one scale: a process grid whose shape changes, a
//! decomposition chosen by factorising the rank count, a step only some scales reach. The
//! fitting refuses such inputs at the first differing node, which names two scales but not
//! which of the others agree. This module partitions the inputs into groups of identical
//! structure, says which scales agree with each other and where the odd ones differ, and with
//! `--drop-inconsistent` extrapolates from the largest group of at least three scales.
//!
//! Structure here is what the fitter aligns: the sequence of nodes, each an event (op, call
//! site, path, parameter count, nested calls) or a loop with its body, recursively. The
//! nested calls of collective MPI-IO calls are left out: they are the MPI library's, derived
//! by the collective-buffering model when it reproduces them (see `derive`), and their shape
//! changes with the aggregator count by design.

use crate::PassId;
use crate::error::ExtrapError;
use crate::error::{Reason, Reasons, Site};
use crate::library::{Inner, Stage};
use crate::request::{Cx, Inconsistent};
use crate::{Extrapolated, Input};
use rsd::trace::Lifts;
use rsd::trace::{Node, NodeKind};
use rsd::{Op, TraceFile};
use std::collections::BTreeSet;

/// Where two node lists first differ in structure: the node's index in its list, the node
/// whose list it is (`None`: the top level), and the two nodes (`None`: the end of a list).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Differing {
    /// The index in the list.
    pub index: usize,
    /// Whose list it is.
    pub parent: Option<Site>,
    /// The node in the first list.
    pub left: Option<Site>,
    /// The node in the second.
    pub right: Option<Site>,
}

impl Differing {
    /// Whether one of the nodes it names (the parent, the two that differ, a loop's first
    /// call) is a call of `op`.
    pub fn names(&self, op: Op) -> bool {
        [&self.parent, &self.left, &self.right]
            .into_iter()
            .flatten()
            .any(|s| s.op() == Some(op))
    }

    /// Whether one of the two nodes that differ is (or, for a loop, starts with) a call
    /// `is` holds for.
    pub fn either_is(&self, is: impl Fn(Op) -> bool) -> bool {
        [&self.left, &self.right]
            .into_iter()
            .flatten()
            .any(|s| s.op().is_some_and(&is))
    }

    /// Where: `node 3 of the top level`, `node 0 of <the parent's site>`.
    pub fn place(&self) -> String {
        match &self.parent {
            Some(p) => format!("node {} of {p}", self.index),
            None => format!("node {} of the top level", self.index),
        }
    }

    /// One side's node as text (`the end of the list` where that list ended).
    pub fn side(n: &Option<Site>) -> String {
        n.as_ref()
            .map_or("the end of the list".into(), Site::to_string)
    }
}

impl std::fmt::Display for Differing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (l, r) = (Self::side(&self.left), Self::side(&self.right));
        write!(f, "{}: {l} vs {r}", self.place())
    }
}

/// Where two node lists (of `parent`, `None` at the top level) first differ in structure, and
/// the two nodes that differ (`None` for the end of a list); `None` when they agree.
pub(crate) fn first_differing<'a>(
    a: &'a [Node],
    b: &'a [Node],
    parent: Option<&Node>,
) -> Option<(Differing, Option<&'a Node>, Option<&'a Node>)> {
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        let here = || {
            let d = Differing {
                index: i,
                parent: parent.map(Site::of),
                left: x.map(Site::of),
                right: y.map(Site::of),
            };
            Some((d, x, y))
        };
        let (Some(x), Some(y)) = (x, y) else {
            return here();
        };
        match (&x.kind, &y.kind) {
            (NodeKind::Event(e), NodeKind::Event(f)) => {
                if (e.op, e.sig, &e.path, e.params.len()) != (f.op, f.sig, &f.path, f.params.len())
                {
                    return here();
                }
                // The library's calls inside a collective call: derived or fitted, not
                // structure of the application.
                if collio::traced::collective_dir(e.op).is_none()
                    && let Some(d) = first_differing(&e.children, &f.children, Some(x))
                {
                    return Some(d);
                }
            }
            (NodeKind::Loop(l), NodeKind::Loop(m)) => {
                if let Some(d) = first_differing(&l.body, &m.body, Some(x)) {
                    return Some(d);
                }
            }
            _ => return here(),
        }
    }
    None
}

/// The call sites of collective MPI-IO calls with nested calls in `nodes`.
fn collective_sites(nodes: &[Node], out: &mut BTreeSet<crate::ranks::Site>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                if collio::traced::collective_dir(e.op).is_some() && !e.children.is_empty() {
                    out.insert((e.op, e.sig));
                }
                collective_sites(&e.children, out);
            }
            NodeKind::Loop(l) => collective_sites(&l.body, out),
        }
    }
}

/// `tf` without the nested calls of its collective MPI-IO calls, re-compressed. The library's
/// calls inside a collective call differ from rank to rank (aggregators), so the merge of the
/// ranks splits the application's nodes along them: at 16 ranks under OMPIO's defaults (two
/// aggregators) the top level no longer lines up with 8 ranks' (one). Without them, the
/// structure compared is the application's. `in_place`: as extrapolation strips them
/// (`derive::strip`).
fn without_collective_children(
    lifts: Option<&Lifts>,
    tf: &TraceFile,
    in_place: bool,
) -> Option<TraceFile> {
    let mut sites = BTreeSet::new();
    collective_sites(&tf.trace.nodes, &mut sites);
    if sites.is_empty() {
        return None;
    }
    crate::ranks::strip(lifts, tf, &sites, in_place).ok()
}

/// How the note of an extrapolation that dropped inconsistent scales starts.
pub const DROPPED_NOTE: &str = "scales used: ";

/// What follows the scales used in that note, before the scales dropped.
const DROPPED_MIDDLE: &str = "; dropped (another structure): ";

/// Says in `h` that the scales `dropped` were left out, their structure differing from the
/// scales `kept` (`text` says how): the typed provenance and the note.
pub(crate) fn mark_dropped(h: &mut rsd::Header, kept: &[u32], dropped: &[u32], text: &str) {
    crate::provenance::of_mut(h).dropped = dropped.to_vec();
    h.notes.push(format!(
        "{DROPPED_NOTE}{}{DROPPED_MIDDLE}{} ({text})",
        list(kept),
        list(dropped)
    ));
}

/// The scales dropped that a note written by [`mark_dropped`] names, for traces written
/// before the header's provenance (`provenance::of`).
pub(crate) fn dropped_in_note(n: &str) -> Option<Vec<u32>> {
    let rest = n.strip_prefix(DROPPED_NOTE)?.split_once(DROPPED_MIDDLE)?.1;
    let names = rest.split_once(" (").map_or(rest, |(l, _)| l);
    names
        .split(", ")
        .flat_map(|s| s.split(" and "))
        .map(|s| s.trim().parse().ok())
        .collect()
}

/// One group of inputs with the same structure.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Indices into the inputs, by increasing rank count.
    pub members: Vec<usize>,
    /// Where this group differs from the first (largest) group; `None` for that one.
    pub differs: Option<Differing>,
}

/// The inputs' rank counts of a group, distinct and increasing.
fn scales(inputs: &[Input], members: &[usize]) -> Vec<u32> {
    let mut s: Vec<u32> = members
        .iter()
        .map(|&i| inputs[i].file.header.nranks)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Partitions `inputs` by structure. The groups are ordered by their count of distinct
/// scales, then by their largest scale (both decreasing): the first is the one
/// `--drop-inconsistent` keeps.
pub fn groups(inputs: &[Input]) -> Vec<Group> {
    grouped(None, inputs, |_, _| {})
}

/// The ops of `n` and of everything under it for which `wanted` holds, added to `out`.
pub(crate) fn ops_in(n: &Node, wanted: &dyn Fn(Op) -> bool, out: &mut BTreeSet<Op>) {
    match &n.kind {
        NodeKind::Event(e) => {
            if wanted(e.op) {
                out.insert(e.op);
            }
            e.children.iter().for_each(|c| ops_in(c, wanted, out));
        }
        NodeKind::Loop(l) => l.body.iter().for_each(|c| ops_in(c, wanted, out)),
    }
}

/// [`groups`], and the ops `wanted` picks among the nodes where the groups first differ from
/// the first (loop bodies and nested calls included).
pub(crate) fn groups_and_ops(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    wanted: impl Fn(Op) -> bool,
) -> (Vec<Group>, BTreeSet<Op>) {
    let mut ops = BTreeSet::new();
    let gs = grouped(lifts, inputs, |x, y| {
        for n in [x, y].into_iter().flatten() {
            ops_in(n, &wanted, &mut ops);
        }
    });
    (gs, ops)
}

/// [`groups`], calling `seen` with the two nodes where each group first differs from the
/// first.
fn grouped(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    mut seen: impl FnMut(Option<&Node>, Option<&Node>),
) -> Vec<Group> {
    let in_place = crate::ranks::any_summary(inputs.iter().map(|i| &i.file));
    let stripped: Vec<Option<TraceFile>> = inputs
        .iter()
        .map(|i| without_collective_children(lifts, &i.file, in_place))
        .collect();
    let nodes_of = |i: usize| -> &[Node] {
        match &stripped[i] {
            Some(t) => &t.trace.nodes,
            None => &inputs[i].file.trace.nodes,
        }
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in 0..inputs.len() {
        let nodes = nodes_of(i);
        match out
            .iter_mut()
            .find(|g| first_differing(nodes_of(g[0]), nodes, None).is_none())
        {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    for g in &mut out {
        g.sort_by_key(|&i| inputs[i].file.header.nranks);
    }
    out.sort_by_key(|g| {
        let s = scales(inputs, g);
        std::cmp::Reverse((s.len(), s.last().copied().unwrap_or(0)))
    });
    let first = out.first().cloned().unwrap_or_default();
    out.into_iter()
        .enumerate()
        .map(|(k, members)| Group {
            differs: (k > 0)
                .then(|| first_differing(nodes_of(first[0]), nodes_of(members[0]), None))
                .flatten()
                .map(|(d, x, y)| {
                    seen(x, y);
                    d
                }),
            members,
        })
        .collect()
}

/// `1, 2 and 3 ranks` style list.
fn list(s: &[u32]) -> String {
    let v: Vec<String> = s.iter().map(u32::to_string).collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

/// Where only scales below every scale of the largest agreeing group took another path, which
/// scales to trace in their place: as many more beyond the largest, grown as the inputs grow.
/// A program can call differently with few ranks for good (LAMMPS exchanges once on a line of
/// two ranks, where the neighbours on both sides are one rank, and twice on longer lines:
/// fewer calls, which no rank function holds), so the advice is to trace where it does not.
fn smallest_differ(inputs: &[Input], gs: &[Group]) -> Option<String> {
    let (first, rest) = gs.split_first()?;
    let low = scales(inputs, &first.members).first().copied()?;
    let odd: Vec<usize> = rest.iter().flat_map(|g| g.members.clone()).collect();
    let odd_scales = scales(inputs, &odd);
    if odd_scales.is_empty() || odd_scales.iter().any(|&s| s >= low) {
        return None;
    }
    let layouts: Option<Vec<(u32, u32)>> = (first.members.iter())
        .map(
            |&i| match inputs[i].file.header.mpi_config.as_ref()?.node_ranks[..] {
                [(ppn, nodes)] => Some((nodes, ppn)),
                _ => None,
            },
        )
        .collect();
    let want = layouts
        .and_then(|l| grown_layouts(&l, odd_scales.len()))
        .unwrap_or_else(|| {
            let more = grown(&scales(inputs, &first.members), odd_scales.len());
            format!("{} ranks", list(&more))
        });
    Some(format!(
        "{} ranks, the smallest, took another path than the larger scales (a program that calls \
         differently with few ranks: with two ranks on a line both neighbours are one rank): \
         trace {want} in their place, ",
        list(&odd_scales)
    ))
}

/// `count` more values beyond the largest of `xs` (distinct, increasing), with the step of the
/// last two (1 for one value).
fn grown(xs: &[u32], count: usize) -> Vec<u32> {
    let last = xs.last().copied().unwrap_or(1);
    let step = match xs {
        [.., a, b] => b - a,
        _ => 1,
    };
    (1..=count as u32).map(|k| last + k * step.max(1)).collect()
}

/// `count` more layouts (nodes, ranks per node) beyond `layouts`, as `2 x 5`, where one of
/// the two is the same in all of them and the other grows; `None` otherwise.
fn grown_layouts(layouts: &[(u32, u32)], count: usize) -> Option<String> {
    let distinct = |f: fn(&(u32, u32)) -> u32| -> Vec<u32> {
        let mut v: Vec<u32> = layouts.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (nodes, ppn) = (distinct(|l| l.0), distinct(|l| l.1));
    let names: Vec<String> = match (&nodes[..], &ppn[..]) {
        ([k], p) if p.len() > 1 => grown(p, count)
            .iter()
            .map(|p| format!("{k} x {p}"))
            .collect(),
        (k, [p]) if k.len() > 1 => grown(k, count)
            .iter()
            .map(|k| format!("{k} x {p}"))
            .collect(),
        _ => return None,
    };
    let v: Vec<&str> = names.iter().map(String::as_str).collect();
    Some(match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => v.join(""),
    })
}

/// The groups as one sentence per group, for refusals and notes.
fn describe(inputs: &[Input], gs: &[Group]) -> ScaleGroups {
    ScaleGroups(
        (gs.iter())
            .map(|g| ScaleGroup {
                scales: scales(inputs, &g.members),
                differs: g.differs.clone(),
            })
            .collect(),
    )
}

/// The scales of one structure, as a refusal names them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScaleGroup {
    /// Their rank counts, distinct and increasing.
    pub scales: Vec<u32>,
    /// Where they differ from the first group's structure; `None` for that one.
    pub differs: Option<Differing>,
}

/// The inputs' groups of one structure each, the largest first.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct ScaleGroups(pub Vec<ScaleGroup>);

impl std::fmt::Display for ScaleGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = self.0.first().map(|g| list(&g.scales)).unwrap_or_default();
        for (k, g) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{} ranks", list(&g.scales))?;
            if g.scales.len() > 1 {
                f.write_str(" agree with each other")?;
            }
            if let Some(d) = &g.differs {
                write!(f, " but differ from {first} ranks at {d}")?;
            }
        }
        Ok(())
    }
}

/// The consistency pass: extrapolates `inputs` as `cx` asks, first checking that they agree in
/// structure. When they do not: refuses, saying which scales agree and where the others
/// differ, or, with [`Inconsistent::Drop`], extrapolates from the largest agreeing group of
/// at least three scales and lists the scales used and dropped in the output's header notes.
/// Inside the library models (`library`): writes a library deals over the ranks change the
/// structure below their count (HDF5's metadata flush), so they are taken out before the
/// grouping; the models that found nothing to take out in all the inputs try again on the
/// group kept. [`Inconsistent::AsGiven`] passes the inputs on as they are.
pub(crate) struct Grouping;

impl crate::pipeline::Pass for Grouping {
    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        if cx.inconsistent == Inconsistent::AsGiven {
            return inner(cx, inputs, stage);
        }
        consistent_or_grouped(cx, inputs, stage, inner)
    }
}

/// [`Grouping`] on inputs whose library calls, if any, the models took out (`stage`).
fn consistent_or_grouped(
    cx: Cx,
    inputs: &[Input],
    stage: Stage<'_>,
    inner: Inner<'_>,
) -> Result<Extrapolated, ExtrapError> {
    let drop = cx.inconsistent == Inconsistent::Drop;
    let (gs, local) = groups_and_ops(cx.lifts, inputs, Op::is_local_query);
    if gs.len() <= 1 {
        // The models further out saw these very inputs: nothing to narrow, nothing to plan
        // again.
        return inner(cx, inputs, stage);
    }
    // A narrowed set of inputs (queries set aside, scales dropped) is planned afresh by the
    // models that found nothing to hand on in the whole set.
    let mut run = |inputs: &[Input]| crate::library::around_all(cx, inputs, stage, &mut *inner);
    // Local queries whose counts follow the data are all that differs (`local`).
    if let Some((kept, ops)) = crate::local::set_aside(cx.lifts, inputs, local) {
        let mut out = run(&kept)?;
        out.explain.insert(
            0,
            crate::Explain {
                event: "local queries".into(),
                quantity: "calls".into(),
                model: format!(
                    "set aside: {} (their counts differ between scales without a pattern of \
                     the rank count; no message or I/O is lost)",
                    ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(", ")
                ),
                curve: None,
            },
        );
        crate::local::mark_set_aside(&mut out.file.header, &ops);
        out.acted(PassId::LocalQueries);
        return Ok(out);
    }
    let text = describe(inputs, &gs);
    let keep = &gs[0];
    let kept = scales(inputs, &keep.members);
    if !drop || kept.len() < 3 {
        // Values with no exact pattern (random offsets, say) make the loop structure differ
        // from scale to scale: they are the real reason, so they are named.
        let irregular = crate::irregular_params(&inputs.iter().collect::<Vec<_>>());
        // A drain of MPI_Waitsome calls splits its completions into calls by timing
        // (`rsd::approx::ORDER`): recorded as it happened, no two scales agree.
        let differs = gs.iter().filter_map(|g| g.differs.as_ref());
        let waitsome = (differs.into_iter().any(|d| d.names(Op::Waitsome))
            || irregular.iter().any(|p| p.op == Op::Waitsome))
            && !inputs.iter().any(|i| {
                i.file
                    .header
                    .notes
                    .iter()
                    .any(|n| n == rsd::approx::ORDER_NOTE)
            });
        let order = if waitsome {
            "MPI_Waitsome calls differ (a loop `while (pending) MPI_Waitsome(...)` completes its \
             requests in calls that timing decides): trace with `iotrex trace --approx \
             comm,order` to record each such drain as one call; "
        } else {
            ""
        };
        let (also, advice) = if irregular.is_empty() {
            (Reasons::default(), "")
        } else {
            (
                Reasons::one(Reason::Irregular { params: irregular }),
                "values with no exact pattern (such as random offsets) cannot be extrapolated \
                 exactly; ",
            )
        };
        let smallest = smallest_differ(inputs, &gs).unwrap_or_default();
        let or = if smallest.is_empty() { "" } else { "or " };
        return Err(ExtrapError::Inconsistent {
            groups: text,
            also,
            hint: order.to_string()
                + advice
                + &smallest
                + &if kept.len() >= 3 {
                    format!(
                        "{or}pass --drop-inconsistent to extrapolate from {} ranks only",
                        list(&kept)
                    )
                } else {
                    "no group of at least 3 scales agrees: trace more scales on the same path \
                 (process grids of the same shape, say)"
                        .into()
                },
        });
    }
    let mut dropped: Vec<u32> = gs[1..]
        .iter()
        .flat_map(|g| g.members.iter().map(|&i| inputs[i].file.header.nranks))
        .collect();
    dropped.sort_unstable();
    dropped.dedup();
    let used: Vec<Input> = keep
        .members
        .iter()
        .map(|&i| Input {
            name: inputs[i].name.clone(),
            file: inputs[i].file.clone(),
        })
        .collect();
    let mut out = run(&used)?;
    mark_dropped(&mut out.file.header, &kept, &dropped, &text.to_string());
    out.acted(PassId::Dropped);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{grown, grown_layouts};

    #[test]
    fn scales_to_trace_grow_as_the_inputs_grow() {
        assert_eq!(grown(&[4, 6, 8], 1), [10]);
        assert_eq!(grown(&[8], 2), [9, 10]);
        // 2 x 1 took another path: 2 x 2, 2 x 3 and 2 x 4 agree, one more ranks per node.
        assert_eq!(
            grown_layouts(&[(2, 2), (2, 3), (2, 4)], 1).unwrap(),
            "2 x 5"
        );
        assert_eq!(
            grown_layouts(&[(2, 2), (4, 2), (6, 2)], 2).unwrap(),
            "8 x 2 and 10 x 2"
        );
        // Both grow: no layout to name (the refusal names rank counts instead).
        assert_eq!(grown_layouts(&[(2, 2), (3, 3), (4, 4)], 1), None);
    }
}
