//! Run values recognised in the inputs ([`rsd::runvalue`]): numbers in a path or parameter
//! that belong to the run, not the program, so that they are carried as run values instead of
//! being fitted (they have no law in the rank count, and fitting them refused).
//!
//! Two ways find them, before any other pass:
//! - **a library's named rule**: OMPIO's `lockedfile` names its lock file `f-JOBID-PID.lock`
//!   ([`collio::sharedfp`]); each of those fields in every input is a run value of its kind;
//! - **repeated runs at one scale**: where two runs of one rank count have the same calls and
//!   a value differs between them, that value (by call site, op, path and position, at every
//!   scale) is a run value ([`RunKind::Varies`]).
//!
//! `diff` recognises them in both its traces ([`alike`]), so a run value compares equal to a
//! run value of the same kind whatever numbers each run saw.
//!
//! The tracer itself records a number in a path that is one of the run's own ids (its pid,
//! rank 0's pid, the job id, the start time: [`rsd::runvalue::RunIds`]) as a run value; what
//! it cannot match (a number the program drew, a pid it was handed) is found here or fitted
//! (and refused).

use crate::Input;
use rsd::runvalue::{self, RunKind};
use rsd::trace::{Event, Node, NodeKind};
use rsd::{Elastic, Op, RankSet, TraceFile};
use std::collections::BTreeSet;

/// Where a value sits, the same at every scale: the call sites of the events it is nested in
/// and its own, its op, its path template, and its position among the event's parameters.
type Key = (Vec<u64>, Op, Option<String>, usize);

/// The elastic `e` as the run value `kind` over the ranks it covered.
fn as_run(e: &Elastic, kind: RunKind) -> Elastic {
    let mut ranks = RankSet::default();
    for g in &e.groups {
        ranks.union_with(&g.ranks);
    }
    runvalue::elastic(kind, ranks)
}

/// The path templates `MPI_File_open` was given anywhere in `nodes`.
fn opened(nodes: &[Node], out: &mut BTreeSet<String>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                if e.op == Op::FileOpen
                    && let Some(p) = &e.path
                {
                    out.insert(p.0.clone());
                }
                opened(&e.children, out);
            }
            NodeKind::Loop(l) => opened(&l.body, out),
        }
    }
}

/// Applies `f` to every event of `nodes`, nested calls included, with its [`Key`]'s site chain.
fn each_event(nodes: &mut [Node], sites: &mut Vec<u64>, f: &mut dyn FnMut(&mut Event, &[u64])) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                sites.push(e.sig);
                f(e, sites);
                each_event(&mut e.children, sites, f);
                sites.pop();
            }
            NodeKind::Loop(l) => each_event(&mut l.body, sites, f),
        }
    }
}

/// Calls `f` on every event of `nodes`, nested calls included, with its [`Key`]'s site chain.
fn visit(nodes: &[Node], sites: &mut Vec<u64>, f: &mut dyn FnMut(&Event, &[u64])) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                sites.push(e.sig);
                f(e, sites);
                visit(&e.children, sites, f);
                sites.pop();
            }
            NodeKind::Loop(l) => visit(&l.body, sites, f),
        }
    }
}

/// The path templates `MPI_File_open` was given in `tf`, which the named rules match against.
fn opened_files(tf: &TraceFile) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    opened(&tf.trace.nodes, &mut files);
    files
}

/// Where a named rule says `e` ends in run values: the index of the first, and their kinds.
fn rule_for(e: &Event, files: &[&str]) -> Option<(usize, [RunKind; 2])> {
    let kinds = e
        .path
        .as_ref()
        .and_then(|p| collio::sharedfp::lockedfile_fields(&p.0, files))?;
    let at = e.params.len().checked_sub(kinds.len())?;
    Some((at, kinds))
}

/// Whether a named rule finds a value in `tf` that is not a run value yet.
fn rule_finds(tf: &TraceFile) -> bool {
    let files = opened_files(tf);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let mut found = false;
    visit(&tf.trace.nodes, &mut Vec::new(), &mut |e, _| {
        if let Some((at, kinds)) = rule_for(e, &files) {
            found |= e.params[at..]
                .iter()
                .zip(kinds)
                .any(|(p, k)| runvalue::kind_of(p) != Some(k));
        }
    });
    found
}

/// The run values the libraries' named rules say in `tf`, made run values; how many values.
pub fn recognise(tf: &mut TraceFile) -> usize {
    let files = opened_files(tf);
    if files.is_empty() {
        return 0;
    }
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let mut count = 0;
    each_event(&mut tf.trace.nodes, &mut Vec::new(), &mut |e, _| {
        let Some((at, kinds)) = rule_for(e, &files) else {
            return;
        };
        for (p, k) in e.params[at..].iter_mut().zip(kinds) {
            if runvalue::kind_of(p) != Some(k) {
                *p = as_run(p, k);
                count += 1;
            }
        }
    });
    count
}

/// The [`Key`]s of the values that differ between `a` and `b`, two runs at one scale, where
/// their calls are the same; `None` where the calls differ (that is said elsewhere).
fn differing(a: &[Node], b: &[Node], sites: &mut Vec<u64>, out: &mut Vec<Key>) -> Option<()> {
    if a.len() != b.len() {
        return None;
    }
    for (x, y) in a.iter().zip(b) {
        match (&x.kind, &y.kind) {
            (NodeKind::Event(e), NodeKind::Event(f)) => {
                if (e.op, e.sig, &e.path, e.params.len()) != (f.op, f.sig, &f.path, f.params.len())
                    || x.ranks != y.ranks
                {
                    return None;
                }
                sites.push(e.sig);
                for (i, (p, q)) in e.params.iter().zip(&f.params).enumerate() {
                    if p != q && !p.is_approx() && !q.is_approx() {
                        let path = e.path.as_ref().map(|t| t.0.clone());
                        out.push((sites.clone(), e.op, path, i));
                    }
                }
                differing(&e.children, &f.children, sites, out)?;
                sites.pop();
            }
            (NodeKind::Loop(l), NodeKind::Loop(m)) => {
                if l.iters != m.iters || x.ranks != y.ranks {
                    return None;
                }
                differing(&l.body, &m.body, sites, out)?;
            }
            _ => return None,
        }
    }
    Some(())
}

/// Marks the values at `keys` as run values of kind [`RunKind::Varies`] in `tf` (those a
/// named rule made run values already keep their kind); how many values.
fn mark(tf: &mut TraceFile, keys: &BTreeSet<Key>) -> usize {
    if keys.is_empty() {
        return 0;
    }
    let mut count = 0;
    each_event(&mut tf.trace.nodes, &mut Vec::new(), &mut |e, sites| {
        let path = e.path.as_ref().map(|t| t.0.clone());
        for (i, p) in e.params.iter_mut().enumerate() {
            let key = (sites.to_vec(), e.op, path.clone(), i);
            if runvalue::kind_of(p).is_none() && keys.contains(&key) {
                *p = as_run(p, RunKind::Varies);
                count += 1;
            }
        }
    });
    count
}

/// The [`Key`]s of the run values of `tf`, with their kinds.
fn run_keys(tf: &TraceFile) -> Vec<(Key, RunKind)> {
    let mut out = Vec::new();
    visit(&tf.trace.nodes, &mut Vec::new(), &mut |e, sites| {
        let path = e.path.as_ref().map(|t| t.0.clone());
        for (i, p) in e.params.iter().enumerate() {
            if let Some(k) = runvalue::kind_of(p) {
                out.push(((sites.to_vec(), e.op, path.clone(), i), k));
            }
        }
    });
    out
}

/// Makes the values at `keys` run values of their kinds in `tf`; how many it changed.
fn mark_as(tf: &mut TraceFile, keys: &[(Key, RunKind)]) -> usize {
    let mut count = 0;
    each_event(&mut tf.trace.nodes, &mut Vec::new(), &mut |e, sites| {
        let path = e.path.as_ref().map(|t| t.0.clone());
        for (i, p) in e.params.iter_mut().enumerate() {
            let key = (sites.to_vec(), e.op, path.clone(), i);
            let Some((_, k)) = keys.iter().find(|(q, _)| *q == key) else {
                continue;
            };
            if runvalue::kind_of(p).is_none() && !p.is_approx() {
                *p = as_run(p, *k);
                count += 1;
            }
        }
    });
    count
}

/// Two traces made comparable as `diff` compares them: the named rules' run values
/// recognised in both, and a value that is a run value on one side (an extrapolation's, or
/// one found between repeated runs) a run value at the same place on the other. The number
/// of run values on each side afterwards.
pub fn alike(a: &mut TraceFile, b: &mut TraceFile) -> (usize, usize) {
    recognise(a);
    recognise(b);
    let (ka, kb) = (run_keys(a), run_keys(b));
    if ka.is_empty() && kb.is_empty() {
        return (0, 0);
    }
    mark_as(b, &ka);
    mark_as(a, &kb);
    (run_keys(a).len(), run_keys(b).len())
}

/// The [`Key`]s of the values that differ between two runs at one scale (the same rank count,
/// ranks per node and command line) among `inputs`.
fn repeated_run_keys(inputs: &[Input]) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for (k, a) in inputs.iter().enumerate() {
        for b in &inputs[k + 1..] {
            if crate::nodes::scale(&a.file.header) == crate::nodes::scale(&b.file.header)
                && a.file.header.command == b.file.header.command
            {
                let mut found = Vec::new();
                let (x, y) = (&a.file.trace.nodes, &b.file.trace.nodes);
                if differing(x, y, &mut Vec::new(), &mut found).is_some() {
                    keys.extend(found);
                }
            }
        }
    }
    keys
}

/// The inputs with their run values recognised (named rules, then the values that differ
/// between repeated runs at one scale), or `None` when none holds any. The inputs are only
/// copied once something is found: most extrapolations hold no run value.
pub(crate) fn recognised(inputs: &[Input]) -> Option<Vec<Input>> {
    // A value a named rule marks differs between repeated runs as well; `mark` leaves it
    // with the rule's kind, so finding the keys before the rules mark changes nothing.
    let keys = repeated_run_keys(inputs);
    if keys.is_empty() && !inputs.iter().any(|i| rule_finds(&i.file)) {
        return None;
    }
    let mut out: Vec<Input> = inputs.to_vec();
    let count: usize = out
        .iter_mut()
        .map(|i| recognise(&mut i.file) + mark(&mut i.file, &keys))
        .sum();
    (count > 0).then_some(out)
}

/// The pass: run values recognised in every input before anything else sees them.
pub(crate) struct Recognising;

impl crate::pipeline::Pass for Recognising {
    fn around(
        &self,
        cx: crate::request::Cx,
        inputs: &[Input],
        stage: crate::library::Stage<'_>,
        inner: crate::library::Inner<'_>,
    ) -> Result<crate::Extrapolated, crate::ExtrapError> {
        let Some(marked) = recognised(inputs) else {
            return inner(cx, inputs, stage);
        };
        let mut out = inner(cx, &marked, stage)?;
        // The models that expand the target's ranks and compress them again (the collective
        // buffering's derivation) carry run values as their markers.
        rsd::runvalue::restore(&mut out.file.trace.nodes);
        out.acted(crate::PassId::RunValues);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::path::PathTemplate;
    use rsd::trace::{Node, NodeKind};
    use rsd::value::{Group, RankFn, Val};
    use rsd::{Header, Trace};

    fn konst(x: i64, ranks: RankSet) -> Elastic {
        Elastic {
            groups: vec![Group {
                ranks,
                val: Val::Const(RankFn::Const(x)),
            }],
        }
    }

    /// An event of `op` on `path` over `ranks` whose params are `params` then the path's.
    fn event(op: Op, path: &str, params: &[i64], ranks: &RankSet) -> Node {
        let (t, fields) = PathTemplate::parse(path);
        let e = Event {
            op,
            sig: 0x10 + op as u64,
            path: Some(t),
            params: params
                .iter()
                .chain(&fields)
                .map(|&x| konst(x, ranks.clone()))
                .collect(),
            timing: Default::default(),
            children: Vec::new(),
        };
        Node {
            ranks: ranks.clone(),
            kind: NodeKind::Event(e),
        }
    }

    /// MPI_File_open of `/d/f` on `n` ranks with OMPIO's lock file named by `job` and `pid`
    /// nested in it, and a file per process named with `tag`.
    fn trace(n: u32, job: i64, pid: i64, tag: i64) -> TraceFile {
        let all = RankSet::all(n);
        let mut open = event(Op::FileOpen, "/d/f", &[0, 5, 0], &all);
        if let NodeKind::Event(e) = &mut open.kind {
            let lock = format!("/d/f-{job}-{pid}.lock");
            e.children = vec![
                event(Op::Open, &lock, &[66, 420, 1], &RankSet::single(0)),
                event(Op::Open, &lock, &[2, 0, 1], &all),
            ];
        }
        let fpp = event(Op::Open, &format!("/d/out.{tag}.x"), &[66, 420, 3], &all);
        TraceFile {
            header: {
                let mut h = Header::new(n);
                h.command = vec!["app".into()];
                h
            },
            trace: Trace {
                nodes: vec![open, fpp],
            },
        }
    }

    fn kinds(tf: &TraceFile) -> Vec<Option<RunKind>> {
        let mut v = Vec::new();
        each_event(&mut tf.trace.nodes.clone(), &mut Vec::new(), &mut |e, _| {
            v.extend(e.params.iter().map(runvalue::kind_of));
        });
        v
    }

    #[test]
    fn ompio_lock_file_names_are_run_values_by_their_rule() {
        let mut tf = trace(4, 2125201409, 13772, 7);
        assert_eq!(recognise(&mut tf), 4);
        let (j, p) = (Some(RunKind::JobId), Some(RunKind::Pid));
        let want = [
            [None; 3].as_slice(),
            &[None, None, None, j, p],
            &[None, None, None, j, p],
            &[None; 4],
        ]
        .concat();
        assert_eq!(kinds(&tf), want);
        // Twice is once.
        assert_eq!(recognise(&mut tf), 0);
    }

    #[test]
    fn values_that_differ_between_repeated_runs_are_run_values_at_every_scale() {
        let ins: Vec<Input> = [(4, 1), (4, 2), (6, 3), (8, 4)]
            .iter()
            .map(|&(n, tag)| Input {
                name: format!("{n}.{tag}"),
                file: trace(n, 100 + tag, 200 + tag, 1000 + tag),
            })
            .collect();
        let out = recognised(&ins).expect("run values found");
        for i in &out {
            let k = kinds(&i.file);
            assert_eq!(k.last(), Some(&Some(RunKind::Varies)), "{}: {k:?}", i.name);
            assert_eq!(k[..3], [None; 3]);
            assert_eq!(k[13..16], [None; 3]);
        }
        // Runs of one scale that do not differ name nothing but the rule's values.
        let same: Vec<Input> = [4, 6, 8]
            .iter()
            .map(|&n| Input {
                name: n.to_string(),
                file: trace(n, 1, 2, 3),
            })
            .collect();
        let out = recognised(&same).unwrap();
        assert!(out.iter().all(|i| kinds(&i.file).last() == Some(&None)));
    }
}
