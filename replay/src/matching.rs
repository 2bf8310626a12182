//! Point-to-point matching over a whole trace, checked before `--comm real` issues anything.
//!
//! A trace whose sends and receives do not pair up (a receive whose send went unrecorded, a
//! communicator some ranks never create, a collective some members skip) would make a real
//! replay wait forever. Walking every rank's calls once is enough to see it: communicators
//! are rebuilt from the recorded creations the way MPI builds them (the k-th creation on a
//! communicator by each member forms the new ones by color, ordered by key, then by parent
//! rank), then for every (communicator, source, destination, tag) the sends and the receives
//! are counted. Receives from any source or with any tag take what the exact ones leave.
//!
//! Cost: two walks of every rank's calls (creations first, then messages), on the compressed
//! structure: a walk enters only the subtrees that hold what it looks for, and the message walk
//! goes through a loop once, multiplying its counts by the iteration count, when nothing it
//! counts in the loop changes with the iteration (peers, tags, communicators, inner loop
//! counts) and the loop creates no communicator. So a ring exchanged N times costs one
//! iteration per rank; a loop whose peers change with the iteration is expanded, and after
//! [`BUDGET`] evaluated calls the check stops and says it could not conclude ([`Outcome`]).
//! Memory is proportional to the distinct (communicator, source, destination, tag)
//! quadruples, not to the messages.

use crate::error::ReplayError;
use rsd::mpi::{COMM_SELF, COMM_WORLD, Peer, UNDEFINED, decode_peer, is_any_tag};
use rsd::op::{Layer, Op, P2p, Param};
use rsd::trace::{FlatEvent, Node, NodeKind, Trace, flatten_event};
use rsd::value::{Elastic, RankFn, Val};
use std::collections::{BTreeMap, HashMap};

/// Calls the check evaluates at most (both walks, all ranks) before it gives up: about 15 s.
pub const BUDGET: u64 = 100_000_000;

/// What [`check`] concluded when it found nothing wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything matches; `calls` calls were evaluated (loops multiplied, not expanded).
    Matched {
        /// Calls evaluated.
        calls: u64,
    },
    /// The walks passed [`BUDGET`] calls: nothing was concluded.
    TooLarge {
        /// Calls evaluated before stopping.
        calls: u64,
    },
}

/// A communicator as the check rebuilds it: its members (world ranks, in communicator order).
struct Comm {
    members: Vec<u32>,
}

/// Where a rank's local communicator id leads: the communicator and the rank's place in it.
type Local = HashMap<i64, (usize, usize)>;

/// One recorded creation: parent id, color, key, new id (all as the creating rank recorded);
/// a dup's key (the rank's place in its parent) is None, known once the parent is rebuilt.
type Todo = (i64, i64, Option<i64>, i64);
/// Each member's (color, key, new local id) of one creation on one communicator.
type Slot = Vec<Option<(i64, i64, i64)>>;

/// Calls the message walk looks at: every MPI call on a communicator.
fn counted(op: Op) -> bool {
    op.layer() == Layer::Mpi && op.params().contains(&Param::Comm)
}

/// What a node's subtree holds, computed once for the whole trace.
#[derive(Default)]
struct Sum {
    /// Any [`counted`] call.
    counted: bool,
    /// Any communicator creation.
    creates: bool,
    /// A loop whose counted calls are the same in every iteration: walked once, multiplied.
    collapse: bool,
    body: Vec<Sum>,
}

fn summarize(nodes: &[Node], depth: usize) -> Vec<Sum> {
    nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Event(e) => Sum {
                counted: counted(e.op),
                creates: e.op.creates_comm(),
                ..Sum::default()
            },
            NodeKind::Loop(l) => {
                let body = summarize(&l.body, depth + 1);
                let counted = body.iter().any(|s| s.counted);
                let creates = body.iter().any(|s| s.creates);
                Sum {
                    counted,
                    creates,
                    collapse: counted && !creates && !varies(&l.body, &body, depth),
                    body,
                }
            }
        })
        .collect()
}

/// Whether the counted calls of `nodes` change with the index of loop level `d`.
fn varies(nodes: &[Node], sums: &[Sum], d: usize) -> bool {
    nodes.iter().zip(sums).any(|(n, s)| {
        s.counted
            && match &n.kind {
                NodeKind::Event(e) => e.params.iter().any(|p| elastic_varies(p, d)),
                NodeKind::Loop(l) => elastic_varies(&l.iters, d) || varies(&l.body, &s.body, d),
            }
    })
}

fn elastic_varies(e: &Elastic, d: usize) -> bool {
    e.groups.iter().any(|g| val_varies(&g.val, d))
}

/// Whether `v` changes with the index of loop level `d` (0 = the outermost of its loops).
fn val_varies(v: &Val<RankFn>, d: usize) -> bool {
    match v {
        Val::Const(_) => false,
        Val::Lin { strides, .. } => strides.get(d).is_some_and(|s| *s != RankFn::Const(0)),
        Val::Seq(v) | Val::Cycle(v) if d == 0 => v.windows(2).any(|w| w[0] != w[1]),
        Val::Seq(v) | Val::Cycle(v) => v.iter().any(|e| val_varies(e, d - 1)),
    }
}

/// The walks' shared allowance of evaluated calls.
struct Budget {
    used: u64,
    limit: u64,
    /// A walk went past [`BUDGET`]: the check concludes nothing.
    over: bool,
}

/// The walks went past [`BUDGET`].
struct OverBudget;

/// Calls `f` with each of rank `r`'s calls that `want` selects, and how many times it stands
/// for (a collapsed loop's iterations, when `collapse`).
fn each(
    trace: &Trace,
    sums: &[Sum],
    r: u32,
    budget: &mut Budget,
    want: fn(&Sum) -> bool,
    collapse: bool,
    f: &mut dyn FnMut(&FlatEvent, u64),
) -> Result<(), OverBudget> {
    struct W<'a> {
        r: u32,
        budget: &'a mut Budget,
        want: fn(&Sum) -> bool,
        collapse: bool,
        f: &'a mut dyn FnMut(&FlatEvent, u64),
    }
    impl W<'_> {
        fn walk(
            &mut self,
            nodes: &[Node],
            sums: &[Sum],
            idx: &mut Vec<u64>,
            times: u64,
        ) -> Result<(), OverBudget> {
            for (n, s) in nodes.iter().zip(sums) {
                if !(self.want)(s) || !n.ranks.contains(self.r) {
                    continue;
                }
                match &n.kind {
                    NodeKind::Event(e) => {
                        self.budget.used += 1;
                        if self.budget.used > self.budget.limit {
                            self.budget.over = true;
                            return Err(OverBudget);
                        }
                        (self.f)(&flatten_event(e, self.r, idx), times);
                    }
                    NodeKind::Loop(l) => {
                        if idx.len() >= rsd::value::MAX_DEPTH {
                            continue;
                        }
                        let iters = l.iters.eval_member(self.r, idx).max(0) as u64;
                        idx.push(0);
                        let done = if self.collapse && s.collapse {
                            match iters {
                                0 => Ok(()),
                                k => self.walk(&l.body, &s.body, idx, times.saturating_mul(k)),
                            }
                        } else {
                            (0..iters).try_for_each(|i| {
                                *idx.last_mut().expect("pushed") = i;
                                self.walk(&l.body, &s.body, idx, times)
                            })
                        };
                        idx.pop();
                        done?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut w = W {
        r,
        budget,
        want,
        collapse,
        f,
    };
    w.walk(&trace.nodes, sums, &mut Vec::new(), 1)
}

fn creation(e: &FlatEvent) -> Option<Todo> {
    match e.op {
        // A dup is the split with one color that keeps the parent's order.
        Op::CommDup => Some((e.p(Param::Comm), 0, None, e.p(Param::Newcomm))),
        Op::CommSplit | Op::CommCreate | Op::CommSplitType | Op::CartCreate => Some((
            e.p(Param::Comm),
            e.p(Param::Color),
            Some(e.p(Param::Key)),
            e.p(Param::Newcomm),
        )),
        _ => None,
    }
}

/// Collective communication calls: every member of the communicator must make as many.
fn collective(op: Op) -> bool {
    op.is_collective() || op.creates_comm()
}

/// Rebuilds every communicator the trace creates. Returns the communicators (0 is the world)
/// and each rank's map from its local ids to them.
/// Returns early, with what it rebuilt so far, when the walk runs out of `budget`.
fn communicators(
    trace: &Trace,
    sums: &[Sum],
    n: u32,
    budget: &mut Budget,
) -> Result<(Vec<Comm>, Vec<Local>), String> {
    let mut comms = vec![Comm {
        members: (0..n).collect(),
    }];
    let mut local: Vec<Local> = (0..n)
        .map(|r| {
            let mut m = Local::new();
            m.insert(COMM_WORLD, (0, r as usize));
            m
        })
        .collect();
    for (r, l) in local.iter_mut().enumerate() {
        comms.push(Comm {
            members: vec![r as u32],
        });
        l.insert(COMM_SELF, (comms.len() - 1, 0));
    }
    // Each rank's creations in order.
    let mut todo: Vec<Vec<Todo>> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let mut v = Vec::new();
        let walked = each(trace, sums, r, budget, |s| s.creates, false, &mut |e, _| {
            v.extend(creation(e))
        });
        if walked.is_err() {
            return Ok((comms, local));
        }
        todo.push(v);
    }
    let mut next = vec![0usize; n as usize];
    // (communicator, creation number) -> each member's (color, key, new local id).
    let mut pending: HashMap<(usize, usize), Slot> = HashMap::new();
    let mut made: HashMap<(u32, usize), usize> = HashMap::new();
    loop {
        let mut progress = false;
        for r in 0..n as usize {
            while let Some(&(parent, color, key, new)) = todo[r].get(next[r]) {
                let Some(&(cid, me)) = local[r].get(&parent) else {
                    break;
                };
                let seq = made.entry((r as u32, cid)).or_insert(0);
                let slot = pending
                    .entry((cid, *seq))
                    .or_insert_with(|| vec![None; comms[cid].members.len()]);
                *seq += 1;
                slot[me] = Some((color, key.unwrap_or(me as i64), new));
                next[r] += 1;
                progress = true;
                if slot.iter().all(Option::is_some) {
                    let entries: Vec<(i64, i64, i64)> = slot.iter().flatten().copied().collect();
                    let parent_members = comms[cid].members.clone();
                    let mut by_color: BTreeMap<i64, Vec<(i64, usize)>> = BTreeMap::new();
                    for (i, (c, k, _)) in entries.iter().enumerate() {
                        if *c != UNDEFINED {
                            by_color.entry(*c).or_default().push((*k, i));
                        }
                    }
                    for (_, mut group) in by_color {
                        group.sort();
                        let id = comms.len();
                        comms.push(Comm {
                            members: group.iter().map(|(_, i)| parent_members[*i]).collect(),
                        });
                        for (pos, (_, i)) in group.iter().enumerate() {
                            let newid = entries[*i].2;
                            if newid >= 0 {
                                local[parent_members[*i] as usize].insert(newid, (id, pos));
                            }
                        }
                    }
                }
            }
        }
        if !progress {
            break;
        }
    }
    // A creation some members never made: MPI would wait in it forever.
    let mut incomplete: Vec<(&(usize, usize), &Slot)> = pending
        .iter()
        .filter(|(_, slot)| !slot.iter().all(Option::is_some))
        .collect();
    incomplete.sort_by_key(|(k, _)| **k);
    if let Some(&(&(cid, _), slot)) = incomplete.first() {
        let members = &comms[cid].members;
        let who = slot.iter().position(Option::is_some).unwrap_or(0);
        let missing: Vec<String> = slot
            .iter()
            .zip(members)
            .filter(|(s, _)| s.is_none())
            .take(8)
            .map(|(_, m)| m.to_string())
            .collect();
        return Err(format!(
            "rank {} creates a communicator from {}, which ranks {} never join",
            members[who],
            comm_name(cid, members.len()),
            missing.join(", ")
        ));
    }
    // A creation on a communicator that was never created for that rank.
    if let Some(r) = (0..n as usize).find(|&r| next[r] < todo[r].len()) {
        return Err(format!(
            "rank {r} creates a communicator from its communicator {}, which no recorded call created",
            todo[r][next[r]].0
        ));
    }
    Ok((comms, local))
}

/// How a report names a rebuilt communicator.
fn comm_name(cid: usize, size: usize) -> String {
    if cid == 0 {
        "MPI_COMM_WORLD".to_string()
    } else {
        format!("a communicator of {size} ranks")
    }
}

#[derive(Default)]
struct Count {
    sends: u64,
    recvs: u64,
}

/// Checks that every point-to-point message of `trace` (of `n` ranks) has a receive and every
/// receive a message, and that the members of each communicator make as many collective
/// calls. The error names the first pair that does not match.
pub fn check(trace: &Trace, n: u32) -> Result<Outcome, ReplayError> {
    check_within(trace, n, BUDGET)
}

/// [`check`], evaluating at most `limit` calls.
fn check_within(trace: &Trace, n: u32, limit: u64) -> Result<Outcome, ReplayError> {
    let mut budget = Budget {
        used: 0,
        limit,
        over: false,
    };
    check_text(trace, n, &mut budget).map_err(|detail| ReplayError::Unmatched { detail })?;
    Ok(if budget.over {
        Outcome::TooLarge { calls: budget.used }
    } else {
        Outcome::Matched { calls: budget.used }
    })
}

/// Stops with `Ok` when the walks run out of `budget` (which says so).
fn check_text(trace: &Trace, n: u32, budget: &mut Budget) -> Result<(), String> {
    let sums = summarize(&trace.nodes, 0);
    let (comms, local) = communicators(trace, &sums, n, budget)?;
    if budget.over {
        return Ok(());
    }
    // (communicator, source, destination, tag) -> counts; BTreeMap for a stable first report.
    let mut pairs: BTreeMap<(usize, u32, u32, i64), Count> = BTreeMap::new();
    // (communicator, destination) -> receives from any source or with any tag.
    // (communicator, destination, source or any, tag or any) -> receives with a wildcard.
    let mut wild: BTreeMap<(usize, u32, Option<u32>, Option<i64>), u64> = BTreeMap::new();
    let mut colls: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut err: Option<String> = None;
    for r in 0..n {
        let l = &local[r as usize];
        let walked = each(
            trace,
            &sums,
            r,
            budget,
            |s| s.counted,
            true,
            &mut |e, times| {
                if err.is_some() || e.op.layer() != Layer::Mpi {
                    return;
                }
                let Some(comm_id) = e.get(Param::Comm) else {
                    return;
                };
                let Some(&(cid, me)) = l.get(&comm_id) else {
                    if comm_id >= 0 {
                        err = Some(format!(
                            "rank {r} calls {} on communicator {comm_id}, which no recorded call created",
                            e.op.name()
                        ));
                    }
                    return;
                };
                let members = &comms[cid].members;
                let world = |stored: i64| -> Result<Option<u32>, String> {
                    match decode_peer(stored, me as i64) {
                        Peer::Null => Ok(None),
                        Peer::Any => Ok(Some(u32::MAX)),
                        Peer::Rank(p) => usize::try_from(p)
                            .ok()
                            .and_then(|p| members.get(p).copied())
                            .map(Some)
                            .ok_or_else(|| {
                                format!(
                                    "rank {r}'s {} names rank {p} of a communicator of {} ranks",
                                    e.op.name(),
                                    members.len()
                                )
                            }),
                    }
                };
                let mut send = |peer: i64, tag: i64| match world(peer) {
                    Ok(Some(dst)) => pairs.entry((cid, r, dst, tag)).or_default().sends += times,
                    Ok(None) => {}
                    Err(e) => err = Some(e),
                };
                match e.op.p2p() {
                    Some(P2p::Send { .. }) => send(e.p(Param::Peer), e.p(Param::Tag)),
                    _ if e.op == Op::Sendrecv => send(e.p(Param::Dest), e.p(Param::Sendtag)),
                    _ => {}
                }
                let mut recv = |peer: i64, tag: i64| match world(peer) {
                    Ok(Some(src)) if src != u32::MAX && !is_any_tag(tag) => {
                        pairs.entry((cid, src, r, tag)).or_default().recvs += times
                    }
                    Ok(Some(src)) => {
                        let src = (src != u32::MAX).then_some(src);
                        let tag = (!is_any_tag(tag)).then_some(tag);
                        *wild.entry((cid, r, src, tag)).or_default() += times
                    }
                    Ok(None) => {}
                    Err(e) => err = Some(e),
                };
                match e.op.p2p() {
                    Some(P2p::Recv { .. }) => recv(e.p(Param::Peer), e.p(Param::Tag)),
                    _ if e.op == Op::Sendrecv => recv(e.p(Param::Source), e.p(Param::Recvtag)),
                    _ => {}
                }
                if collective(e.op) {
                    colls.entry(cid).or_insert_with(|| vec![0; members.len()])[me] += times;
                }
            },
        );
        if let Some(e) = err {
            return Err(e);
        }
        if walked.is_err() {
            return Ok(());
        }
    }
    let name = |cid: usize| comm_name(cid, comms[cid].members.len());
    // Exact receives first: each needs a send of its own; what is left over may go to the
    // wildcard receives of its destination.
    // (communicator, destination) -> ((source, tag), sends no exact receive took).
    type Left = Vec<((u32, i64), u64)>;
    let mut left: BTreeMap<(usize, u32), Left> = BTreeMap::new();
    for (&(cid, src, dst, tag), c) in &pairs {
        if c.recvs > c.sends {
            return Err(format!(
                "rank {dst} receives {} messages from rank {src} with tag {tag} on {}, and rank {src} sends it {}",
                c.recvs,
                name(cid),
                c.sends
            ));
        }
        if c.sends > c.recvs {
            left.entry((cid, dst))
                .or_default()
                .push(((src, tag), c.sends - c.recvs));
        }
    }
    // Wildcard receives take what the exact ones left, the most specific first (any source
    // with a tag, then a source with any tag, then both): greedy, so a contrived trace whose
    // wildcards could only all be served in another order is refused (--comm delay replays
    // it).
    let mut kinds: Vec<_> = wild.iter().collect();
    kinds.sort_by_key(|((cid, dst, src, tag), _)| {
        (*cid, *dst, src.is_none() && tag.is_none(), tag.is_none())
    });
    for (&(cid, dst, src, tag), &w) in kinds {
        let mut need = w;
        if let Some(v) = left.get_mut(&(cid, dst)) {
            for ((s, t), k) in v.iter_mut() {
                if src.is_none_or(|x| x == *s) && tag.is_none_or(|x| x == *t) {
                    let take = need.min(*k);
                    *k -= take;
                    need -= take;
                }
            }
        }
        if need > 0 {
            let from = src.map_or("any source".to_string(), |s| format!("rank {s}"));
            let with = tag.map_or("any tag".to_string(), |t| format!("tag {t}"));
            return Err(format!(
                "rank {dst} posts {w} receives from {from} with {with} on {}, and only {} matching messages are left for them",
                name(cid),
                w - need
            ));
        }
    }
    for (&(cid, dst), v) in &left {
        if let Some(&((src, tag), k)) = v.iter().find(|x| x.1 > 0) {
            let c = &pairs[&(cid, src, dst, tag)];
            return Err(format!(
                "rank {src} sends {} messages to rank {dst} with tag {tag} on {}, and rank {dst} receives {} of them ({k} never received)",
                c.sends,
                name(cid),
                c.sends - k
            ));
        }
    }
    let mut ids: Vec<&usize> = colls.keys().collect();
    ids.sort();
    for cid in ids {
        let c = &colls[cid];
        if let Some(i) = c.iter().position(|x| *x != c[0]) {
            let m = &comms[*cid].members;
            return Err(format!(
                "on {}, rank {} makes {} collective calls and rank {} makes {}",
                name(*cid),
                m[0],
                c[0],
                m[i],
                c[i]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::op::args;
    use rsd::trace::RawEvent;
    use rsd::{Compressor, merge_tree};

    fn trace(n: u32, per_rank: impl Fn(u32) -> Vec<RawEvent>) -> Trace {
        let ts = (0..n)
            .map(|r| {
                let mut c = Compressor::new(r);
                for e in per_rank(r) {
                    c.push(&e);
                }
                c.finish()
            })
            .collect();
        merge_tree(ts).unwrap()
    }

    fn ev(op: Op, p: Vec<i64>) -> RawEvent {
        RawEvent::new(op, op as u64, p)
    }

    /// A ring: each rank sends to the next and receives from the previous, `k` times.
    fn ring(n: u32, k: usize, drop_send_of: Option<u32>) -> Trace {
        trace(n, |r| {
            let mut v = Vec::new();
            for _ in 0..k {
                if drop_send_of != Some(r) {
                    v.push(ev(
                        Op::Send,
                        args::send(4, 1, 1 - if r + 1 == n { n as i64 } else { 0 }, 3, 0, 4),
                    ));
                }
                let prev = if r == 0 { n as i64 - 1 } else { -1 };
                v.push(ev(Op::Recv, args::recv(4, 1, prev, 3, 0, 4)));
            }
            v
        })
    }

    #[test]
    fn a_ring_matches() {
        check(&ring(5, 3, None), 5).unwrap();
    }

    #[test]
    fn a_missing_send_is_named() {
        let e = check(&ring(4, 2, Some(2)), 4).unwrap_err().to_string();
        assert!(
            e.contains("rank 3 receives 2 messages from rank 2 with tag 3 on MPI_COMM_WORLD, and rank 2 sends it 0"),
            "{e}"
        );
        assert!(e.contains("--comm delay"), "{e}");
    }

    #[test]
    fn an_unreceived_send_is_named() {
        let t = trace(2, |r| {
            if r == 0 {
                vec![ev(Op::Send, args::send(1, 1, 1, 9, 0, 1))]
            } else {
                vec![]
            }
        });
        let e = check(&t, 2).unwrap_err().to_string();
        assert!(
            e.contains("rank 0 sends 1 messages to rank 1 with tag 9"),
            "{e}"
        );
    }

    #[test]
    fn wildcards_take_what_is_left() {
        let any = rsd::mpi::ANY_SOURCE;
        let t = trace(3, |r| match r {
            0 => vec![
                ev(Op::Recv, args::recv(1, 1, any, 1, 0, 1)),
                ev(Op::Recv, args::recv(1, 1, 2, 2, 0, 1)),
                ev(Op::Recv, args::recv(1, 1, 2, rsd::mpi::ANY_TAG, 0, 1)),
            ],
            1 => vec![ev(Op::Send, args::send(1, 1, -1, 1, 0, 1))],
            _ => vec![
                ev(Op::Send, args::send(1, 1, -2, 2, 0, 1)),
                ev(Op::Send, args::send(1, 1, -2, 7, 0, 1)),
            ],
        });
        check(&t, 3).unwrap();
        // One wildcard too many.
        let t = trace(2, |r| match r {
            0 => vec![ev(Op::Recv, args::recv(1, 1, any, 1, 0, 1))],
            _ => vec![],
        });
        let e = check(&t, 2).unwrap_err().to_string();
        assert!(
            e.contains("rank 0 posts 1 receives from any source with tag 1"),
            "{e}"
        );
        // A wildcard counts only messages it can take: an any-source receive of tag 5 when
        // the one message left has tag 6 (matching totals alone passed this).
        let t = trace(2, |r| match r {
            0 => vec![ev(Op::Recv, args::recv(1, 1, any, 5, 0, 1))],
            _ => vec![ev(Op::Send, args::send(1, 1, -1, 6, 0, 1))],
        });
        let e = check(&t, 2).unwrap_err().to_string();
        assert!(
            e.contains("from any source with tag 5 on MPI_COMM_WORLD, and only 0 matching"),
            "{e}"
        );
        // A source's any-tag receive cannot take another source's message.
        let t = trace(3, |r| match r {
            0 => vec![ev(Op::Recv, args::recv(1, 1, 1, rsd::mpi::ANY_TAG, 0, 1))],
            2 => vec![ev(Op::Send, args::send(1, 1, -2, 3, 0, 1))],
            _ => vec![],
        });
        let e = check(&t, 3).unwrap_err().to_string();
        assert!(e.contains("from rank 1 with any tag"), "{e}");
    }

    #[test]
    fn messages_on_a_split_map_to_world_ranks() {
        // Split 4 ranks into evens and odds (key = rank), then in each half rank 0 sends to 1:
        // world 0 -> 2 and 1 -> 3.
        let t = trace(4, |r| {
            let mut v = vec![ev(Op::CommSplit, vec![0, (r % 2) as i64, r as i64, 2])];
            if r < 2 {
                v.push(ev(Op::Send, args::send(1, 1, 1, 0, 2, 1)));
            } else {
                v.push(ev(Op::Recv, args::recv(1, 1, -1, 0, 2, 1)));
            }
            v
        });
        check(&t, 4).unwrap();
        // The same sends read on the world would pair 0 -> 1, which nobody receives.
        let t = trace(4, |r| {
            let mut v = vec![ev(Op::CommSplit, vec![0, (r % 2) as i64, r as i64, 2])];
            if r < 2 {
                v.push(ev(Op::Send, args::send(1, 1, 1, 0, 2, 1)));
            } else {
                v.push(ev(Op::Recv, args::recv(1, 1, -2, 0, 2, 1)));
            }
            v
        });
        assert!(check(&t, 4).is_err());
    }

    /// `k` rounds in which each rank sends to the rank `shift(i)` ahead and receives from the
    /// one as far behind, then an allreduce.
    fn rounds(n: u32, k: usize, shift: impl Fn(usize) -> i64, drop: Option<(u32, usize)>) -> Trace {
        trace(n, |r| {
            let (ri, ni) = (r as i64, n as i64);
            let mut v = Vec::new();
            for i in 0..k {
                let d = shift(i);
                if drop != Some((r, i)) {
                    let to = (ri + d).rem_euclid(ni) - ri;
                    v.push(ev(Op::Isend, args::isend(4, 1, to, 3, 0, 4, 9)));
                }
                let from = (ri - d).rem_euclid(ni) - ri;
                v.push(ev(Op::Recv, args::recv(4, 1, from, 3, 0, 4)));
                v.push(ev(Op::Wait, args::wait(9)));
                v.push(ev(Op::Allreduce, args::allreduce(1, 1, 1, 0, 8)));
            }
            v
        })
    }

    #[test]
    fn a_loop_with_the_same_peers_is_walked_once() {
        // 8 ranks x 10,000 rounds: the Isend, Recv and Allreduce of one round per rank.
        let t = rounds(8, 10_000, |_| 1, None);
        assert_eq!(check(&t, 8).unwrap(), Outcome::Matched { calls: 8 * 3 });
        // The counts are the loop's: one round's send missing is seen.
        let t = rounds(8, 10_000, |_| 1, Some((5, 4_321)));
        let e = check(&t, 8).unwrap_err().to_string();
        assert!(
            e.contains("rank 6 receives 10000 messages from rank 5 with tag 3 on MPI_COMM_WORLD, and rank 5 sends it 9999"),
            "{e}"
        );
    }

    #[test]
    fn a_loop_whose_peers_change_is_expanded() {
        // Distances 1, 2, 4, 1, 2, 4, ...: each round is evaluated.
        let t = rounds(8, 30, |i| 1 << (i % 3), None);
        assert_eq!(
            check(&t, 8).unwrap(),
            Outcome::Matched { calls: 8 * 30 * 3 }
        );
        let t = rounds(8, 30, |i| 1 << (i % 3), Some((0, 7)));
        let e = check(&t, 8).unwrap_err().to_string();
        // Round 7 has distance 2: rank 2 misses one of the 10 messages from rank 0.
        assert!(
            e.contains("rank 2 receives 10 messages from rank 0 with tag 3 on MPI_COMM_WORLD, and rank 0 sends it 9"),
            "{e}"
        );
        // Past its budget the check concludes nothing, rather than a verdict on part of it.
        assert_eq!(
            check_within(&t, 8, 100).unwrap(),
            Outcome::TooLarge { calls: 101 }
        );
    }

    #[test]
    fn a_skipped_collective_is_named() {
        let t = trace(3, |r| {
            let mut v = vec![ev(Op::Barrier, vec![0])];
            if r != 1 {
                v.push(ev(Op::Barrier, vec![0]));
            }
            v
        });
        let e = check(&t, 3).unwrap_err().to_string();
        assert!(
            e.contains("rank 0 makes 2 collective calls and rank 1 makes 1"),
            "{e}"
        );
    }

    #[test]
    fn a_communicator_only_some_ranks_create_is_named() {
        let t = trace(2, |r| {
            if r == 0 {
                vec![ev(Op::CommDup, vec![0, 2])]
            } else {
                vec![]
            }
        });
        let e = check(&t, 2).unwrap_err().to_string();
        assert!(
            e.contains(
                "rank 0 creates a communicator from MPI_COMM_WORLD, which ranks 1 never join"
            ),
            "{e}"
        );
    }
}
