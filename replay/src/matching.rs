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
use rsd::comms::{self, Made, Rebuilt};
use rsd::mpi::{Peer, decode_peer, is_any_tag};
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

/// Calls the message walk looks at: every MPI call on a communicator, and the calls that
/// start or cancel a request, which act on the communicator of the call that made it.
fn counted(op: Op) -> bool {
    op.layer() == Layer::Mpi
        && (op.params().contains(&Param::Comm)
            || matches!(op, Op::Start | Op::Startall | Op::Cancel))
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
        // A summary's values vary unless they are all one (replay refuses summaries at load).
        Val::Approx(a) => a.stats.min != a.stats.max,
        // A prefix sum of sizes (an offset; replay resolves them at load).
        Val::Exscan(_) => true,
        // At the end of the file so far (replay resolves them at load).
        Val::FileEnd(_) => true,
        // One number for the whole replay (filled at load).
        Val::Run(_) => false,
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
                        // Matching reads messages; an offset the other ranks decide is no
                        // message's, and its call is left out.
                        if let Some(f) = flatten_event(e, self.r, idx) {
                            (self.f)(&f, times);
                        }
                    }
                    NodeKind::Loop(l) => {
                        if idx.len() >= rsd::value::MAX_DEPTH {
                            continue;
                        }
                        let iters = l.iters.start_member(self.r, idx).max(0) as u64;
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

/// The tag the check gives a neighbourhood collective's messages (no application tag).
const NEIGHBOR_TAG: i64 = i64::MIN;

/// A receive's tag that matches any (a neighbourhood collective's is exact).
fn any_tag(tag: i64) -> bool {
    tag != NEIGHBOR_TAG && is_any_tag(tag)
}

/// "with tag 5", or what a neighbourhood collective's messages are.
fn with_tag(tag: i64) -> String {
    if tag == NEIGHBOR_TAG {
        "in neighbourhood collectives".to_string()
    } else {
        format!("with tag {tag}")
    }
}

/// Collective communication calls: every member of the communicator must make as many.
/// `MPI_Comm_create_group` is made by the group's members only (checked when rebuilt).
fn collective(op: Op) -> bool {
    op.is_collective() || (op.creates_comm() && op != Op::CommCreateGroup)
}

/// Rebuilds every communicator the trace creates ([`rsd::comms`]). Returns early, with the
/// world and each rank's MPI_COMM_SELF only, when the walk runs out of `budget`.
fn communicators(
    trace: &Trace,
    sums: &[Sum],
    n: u32,
    budget: &mut Budget,
) -> Result<Rebuilt, String> {
    // Each rank's creations in order.
    let mut todo: Vec<Vec<Made>> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let mut v = Vec::new();
        let walked = each(trace, sums, r, budget, |s| s.creates, false, &mut |e, _| {
            v.extend(Made::of(e.op, &e.params))
        });
        if walked.is_err() {
            return Ok(comms::initial(n));
        }
        todo.push(v);
    }
    comms::rebuild(&todo)
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
    let rebuilt = communicators(trace, &sums, n, budget)?;
    if budget.over {
        return Ok(());
    }
    let Some(t) = tally(trace, &sums, &rebuilt, n, budget)? else {
        return Ok(());
    };
    let name = |cid: usize| rebuilt.name(cid);
    let mut left = exact_receives(&t.pairs, &name)?;
    wildcard_receives(&t.wild, &mut left, &name)?;
    unreceived(&t.pairs, &left, &name)?;
    collective_counts(&t.colls, &rebuilt, &name)
}

/// What an MPI call does to the matching, on the communicator it is paired with: a send or a
/// receive (peer and tag as recorded; a receive counted negatively when a cancel takes it
/// back), or a collective call.
enum Act {
    Send(i64, i64),
    Recv(i64, i64, bool),
    Coll,
}

/// (communicator, source, destination, tag) -> counts; BTreeMap for a stable first report.
type Pairs = BTreeMap<(usize, u32, u32, i64), Count>;

/// (communicator, destination, source or any, tag or any) -> receives with a wildcard.
type Wild = BTreeMap<(usize, u32, Option<u32>, Option<i64>), u64>;

/// Every rank's messages and collective calls, counted over the whole run.
#[derive(Default)]
struct Tally {
    pairs: Pairs,
    wild: Wild,
    /// Per communicator, the collective calls of each member.
    colls: HashMap<usize, Vec<u64>>,
}

/// A communicator a call acts on: its members, its index among the rebuilt ones, and the
/// caller's position in it.
struct On<'a> {
    comm: &'a comms::Comm,
    cid: usize,
    me: usize,
}

/// One rank's persistent requests (what each start moves: communicator, send, peer, tag) and
/// posted receives (what a cancel takes back: communicator, peer, tag), by request id.
#[derive(Default)]
struct Requests {
    persist: HashMap<i64, (i64, bool, i64, i64)>,
    posted: HashMap<i64, (i64, i64, i64)>,
}

/// Walks every rank of `trace` and counts what each MPI call does. `None` when the walk runs
/// out of `budget`; an error names the first call that cannot be paired (a communicator no
/// call created, a peer outside its communicator).
fn tally(
    trace: &Trace,
    sums: &[Sum],
    rebuilt: &Rebuilt,
    n: u32,
    budget: &mut Budget,
) -> Result<Option<Tally>, String> {
    let mut t = Tally::default();
    let mut err: Option<String> = None;
    for r in 0..n {
        let l = &rebuilt.local[r as usize];
        let mut reqs = Requests::default();
        let walked = each(
            trace,
            sums,
            r,
            budget,
            |s| s.counted,
            true,
            &mut |e, times| {
                if err.is_some() || e.op.layer() != Layer::Mpi {
                    return;
                }
                let mut acts = reqs.started_or_cancelled(e);
                let Some(comm_id) = e.get(Param::Comm).or(acts.first().map(|a| a.0)) else {
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
                reqs.record(e, comm_id);
                call_acts(e, comm_id, &mut acts);
                for (c, act) in acts {
                    // Starts and cancels act on the communicator of the request's call.
                    let (cid, me) = if c == comm_id {
                        (cid, me)
                    } else {
                        match l.get(&c) {
                            Some(x) => *x,
                            None => continue,
                        }
                    };
                    let on = On {
                        comm: &rebuilt.comms[cid],
                        cid,
                        me,
                    };
                    if let Err(x) = t.count(on, r, e, times, act) {
                        err = Some(x);
                    }
                }
            },
        );
        if let Some(e) = err {
            return Err(e);
        }
        if walked.is_err() {
            return Ok(None);
        }
    }
    Ok(Some(t))
}

impl Requests {
    /// What a start of persistent requests or a cancel of a posted receive moves, each on the
    /// communicator of the call that made the request.
    fn started_or_cancelled(&self, e: &FlatEvent) -> Vec<(i64, Act)> {
        let mut acts: Vec<(i64, Act)> = Vec::new();
        let start = |q: i64, acts: &mut Vec<(i64, Act)>| {
            if let Some(&(c, send, peer, tag)) = self.persist.get(&q) {
                acts.push((
                    c,
                    if send {
                        Act::Send(peer, tag)
                    } else {
                        Act::Recv(peer, tag, false)
                    },
                ));
            }
        };
        match e.op {
            Op::Start => start(e.p(Param::Request), &mut acts),
            Op::Startall => {
                for id in e.op.list(&e.params) {
                    start(*id, &mut acts)
                }
            }
            Op::Cancel => {
                if let Some(&(c, peer, tag)) = self.posted.get(&e.p(Param::Request)) {
                    acts.push((c, Act::Recv(peer, tag, true)));
                }
            }
            _ => {}
        }
        acts
    }

    /// Keeps the persistent request or the posted receive call `e` (on `comm_id`) makes.
    fn record(&mut self, e: &FlatEvent, comm_id: i64) {
        let q = || e.p(Param::Request);
        if let Some(role) = e.op.persistent() {
            let send = matches!(role, P2p::Send { .. });
            self.persist
                .insert(q(), (comm_id, send, e.p(Param::Peer), e.p(Param::Tag)));
            // Reused ids: a persistent request is no posted receive.
            self.posted.remove(&q());
        }
        if let Some(P2p::Recv { nonblocking: true }) = e.op.p2p() {
            self.posted
                .insert(q(), (comm_id, e.p(Param::Peer), e.p(Param::Tag)));
        }
    }
}

/// What call `e` on communicator `comm_id` sends, receives and whether it is collective,
/// after `acts` (what its starts and cancels move).
fn call_acts(e: &FlatEvent, comm_id: i64, acts: &mut Vec<(i64, Act)>) {
    match e.op.p2p() {
        Some(P2p::Send { .. }) => {
            acts.push((comm_id, Act::Send(e.p(Param::Peer), e.p(Param::Tag))))
        }
        Some(P2p::Recv { .. }) => {
            acts.push((comm_id, Act::Recv(e.p(Param::Peer), e.p(Param::Tag), false)))
        }
        None => {}
    }
    match e.op {
        Op::Sendrecv | Op::SendrecvReplace => {
            acts.push((comm_id, Act::Send(e.p(Param::Dest), e.p(Param::Sendtag))));
            acts.push((
                comm_id,
                Act::Recv(e.p(Param::Source), e.p(Param::Recvtag), false),
            ));
        }
        // A matched probe that found its message took it.
        Op::Improbe if e.p(Param::Flag) == 1 => {
            acts.push((comm_id, Act::Recv(e.p(Param::Peer), e.p(Param::Tag), false)))
        }
        _ => {}
    }
    if collective(e.op) {
        acts.push((comm_id, Act::Coll));
    }
    // A neighbourhood collective's messages pair up like point-to-point ones: a destination
    // that does not list the caller as a source would wait forever.
    if let Some(nb) = e.op.neighborhood(&e.params) {
        for d in nb.destinations {
            acts.push((comm_id, Act::Send(*d, NEIGHBOR_TAG)));
        }
        for s in nb.sources {
            acts.push((comm_id, Act::Recv(*s, NEIGHBOR_TAG, false)));
        }
    }
}

impl Tally {
    /// Counts `act` of call `e` of rank `r`, made `times` times, on the communicator `on`;
    /// an error when a peer is outside the communicator.
    fn count(&mut self, on: On, r: u32, e: &FlatEvent, times: u64, act: Act) -> Result<(), String> {
        let On { comm, cid, me } = on;
        let (peers, mine) = comm.peers_of(me);
        let world = |stored: i64| -> Result<Option<u32>, String> {
            match decode_peer(stored, mine as i64) {
                Peer::Null => Ok(None),
                Peer::Any => Ok(Some(u32::MAX)),
                Peer::Rank(p) => usize::try_from(p)
                    .ok()
                    .and_then(|p| peers.get(p).copied())
                    .map(Some)
                    .ok_or_else(|| {
                        format!(
                            "rank {r}'s {} names rank {p} of a communicator of {} ranks",
                            e.op.name(),
                            peers.len()
                        )
                    }),
            }
        };
        match act {
            Act::Send(peer, tag) => {
                if let Some(dst) = world(peer)? {
                    self.pairs.entry((cid, r, dst, tag)).or_default().sends += times
                }
            }
            Act::Recv(peer, tag, cancel) => {
                let add = |v: &mut u64| {
                    *v = if cancel {
                        v.saturating_sub(times)
                    } else {
                        *v + times
                    }
                };
                match world(peer)? {
                    Some(src) if src != u32::MAX && !any_tag(tag) => {
                        add(&mut self.pairs.entry((cid, src, r, tag)).or_default().recvs)
                    }
                    Some(src) => {
                        let src = (src != u32::MAX).then_some(src);
                        let tag = (!any_tag(tag)).then_some(tag);
                        add(self.wild.entry((cid, r, src, tag)).or_default())
                    }
                    None => {}
                }
            }
            Act::Coll => {
                self.colls
                    .entry(cid)
                    .or_insert_with(|| vec![0; comm.members.len()])[me] += times
            }
        }
        Ok(())
    }
}

/// Per (communicator, destination), the (source, tag) of sends no exact receive took, and
/// how many.
type Left = BTreeMap<(usize, u32), Vec<((u32, i64), u64)>>;

/// Pairs the exact receives first: each needs a send of its own, and more receives than sends
/// is an error; what is left over may go to the wildcard receives of its destination.
fn exact_receives(pairs: &Pairs, name: &dyn Fn(usize) -> String) -> Result<Left, String> {
    let mut left = Left::new();
    for (&(cid, src, dst, tag), c) in pairs {
        if c.recvs > c.sends {
            return Err(format!(
                "rank {dst} receives {} messages from rank {src} {} on {}, and rank {src} sends it {}",
                c.recvs,
                with_tag(tag),
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
    Ok(left)
}

/// Wildcard receives take what the exact ones `left`, the most specific first (any source
/// with a tag, then a source with any tag, then both): greedy, so a contrived trace whose
/// wildcards could only all be served in another order is refused (--comm delay replays it).
fn wildcard_receives(
    wild: &Wild,
    left: &mut Left,
    name: &dyn Fn(usize) -> String,
) -> Result<(), String> {
    let mut kinds: Vec<_> = wild.iter().collect();
    kinds.sort_by_key(|((cid, dst, src, tag), _)| {
        (*cid, *dst, src.is_none() && tag.is_none(), tag.is_none())
    });
    for (&(cid, dst, src, tag), &w) in kinds {
        let mut need = w;
        if let Some(v) = left.get_mut(&(cid, dst)) {
            for ((s, t), k) in v.iter_mut() {
                let tag_ok = match tag {
                    Some(x) => x == *t,
                    None => *t != NEIGHBOR_TAG,
                };
                if src.is_none_or(|x| x == *s) && tag_ok {
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
    Ok(())
}

/// The first send no receive took, as an error.
fn unreceived(pairs: &Pairs, left: &Left, name: &dyn Fn(usize) -> String) -> Result<(), String> {
    for (&(cid, dst), v) in left {
        if let Some(&((src, tag), k)) = v.iter().find(|x| x.1 > 0) {
            let c = &pairs[&(cid, src, dst, tag)];
            return Err(format!(
                "rank {src} sends {} messages to rank {dst} {} on {}, and rank {dst} receives {} of them ({k} never received)",
                c.sends,
                with_tag(tag),
                name(cid),
                c.sends - k
            ));
        }
    }
    Ok(())
}

/// The first communicator whose members make different numbers of collective calls, as an
/// error.
fn collective_counts(
    colls: &HashMap<usize, Vec<u64>>,
    rebuilt: &Rebuilt,
    name: &dyn Fn(usize) -> String,
) -> Result<(), String> {
    let mut ids: Vec<&usize> = colls.keys().collect();
    ids.sort();
    for cid in ids {
        let c = &colls[cid];
        if let Some(i) = c.iter().position(|x| *x != c[0]) {
            let m = &rebuilt.comms[*cid].members;
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

    fn with(mut v: Vec<i64>, extra: &[i64]) -> Vec<i64> {
        v.extend_from_slice(extra);
        v
    }

    /// A ring over persistent requests: each rank makes a send to the next and a receive from
    /// the previous once, then starts both `k` times (Startall, or Start of each), waiting
    /// for both each time. `skip` leaves out one rank's send start in one round.
    fn persistent_ring(n: u32, k: usize, skip: Option<(u32, usize)>) -> Trace {
        trace(n, |r| {
            let next = if r + 1 == n { 1 - n as i64 } else { 1 };
            let prev = if r == 0 { n as i64 - 1 } else { -1 };
            let mut v = vec![
                ev(Op::SendInit, args::send_init(4, 1, next, 3, 0, 4, 0)),
                ev(Op::RecvInit, args::recv_init(4, 1, prev, 3, 0, 4, 1)),
            ];
            for i in 0..k {
                if skip == Some((r, i)) {
                    v.push(ev(Op::Start, args::start(1)));
                } else {
                    v.push(ev(Op::Startall, with(args::startall(2), &[0, 1])));
                }
                v.push(ev(Op::Waitall, args::waitall(2)));
            }
            v.push(ev(Op::RequestFree, args::request_free(0)));
            v.push(ev(Op::RequestFree, args::request_free(1)));
            v
        })
    }

    #[test]
    fn persistent_requests_move_a_message_per_start() {
        assert_eq!(
            check(&persistent_ring(4, 1000, None), 4).unwrap(),
            // The inits once, and the loop's Startall once (collapsed).
            Outcome::Matched { calls: 4 * 3 }
        );
        let e = check(&persistent_ring(4, 1000, Some((1, 500))), 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rank 2 receives 1000 messages from rank 1 with tag 3 on MPI_COMM_WORLD, and rank 1 sends it 999"),
            "{e}"
        );
    }

    #[test]
    fn probes_take_no_message_and_matched_probes_take_one() {
        let any = rsd::mpi::ANY_SOURCE;
        // Rank 1 sends twice; rank 0 probes, receives, then mprobes+mrecvs the second, and an
        // improbe that found nothing.
        let t = |improbe_flag: i64| {
            trace(2, move |r| match r {
                0 => vec![
                    ev(Op::Probe, args::probe(any, 4, 0, 1, 4, 8)),
                    ev(Op::Iprobe, args::iprobe(1, 4, 0, 1, 1, 4, 8)),
                    ev(Op::Recv, args::recv(8, 4, 1, 4, 0, 8)),
                    ev(Op::Mprobe, args::mprobe(1, 4, 0, 1, 4, 8, 0)),
                    ev(Op::Mrecv, args::mrecv(8, 4, 0, 8)),
                    ev(
                        Op::Improbe,
                        args::improbe(1, 4, 0, improbe_flag, 0, 0, 0, -1),
                    ),
                ],
                _ => vec![
                    ev(Op::Send, args::send(8, 4, -1, 4, 0, 8)),
                    ev(Op::Send, args::send(8, 4, -1, 4, 0, 8)),
                ],
            })
        };
        check(&t(0), 2).unwrap();
        // An improbe that found a message took a third one, which was never sent.
        let e = check(&t(1), 2).unwrap_err().to_string();
        assert!(
            e.contains("rank 0 receives 3 messages from rank 1 with tag 4"),
            "{e}"
        );
    }

    #[test]
    fn a_cancelled_receive_needs_no_message() {
        let t = trace(2, |r| match r {
            0 => vec![
                ev(Op::Irecv, args::irecv(1, 1, 1, 5, 0, 1, 0)),
                ev(Op::Cancel, args::cancel(0)),
                ev(Op::Wait, args::wait(0)),
            ],
            _ => vec![],
        });
        check(&t, 2).unwrap();
    }

    /// A ring topology's neighbourhood exchange on a communicator recorded as a split;
    /// `lonely` lists no destinations.
    fn neighbor_ring(n: u32, lonely: Option<u32>) -> Trace {
        trace(n, |r| {
            let next = if r + 1 == n { 1 - n as i64 } else { 1 };
            let prev = if r == 0 { n as i64 - 1 } else { -1 };
            let out: Vec<i64> = if lonely == Some(r) {
                vec![]
            } else {
                vec![prev, next]
            };
            let mut p = args::neighbor_alltoall(2, 2, out.len() as i64, 8 * out.len() as i64, 16);
            p.extend([prev, next]);
            p.extend(&out);
            p.extend(out.iter().map(|_| 8));
            p.extend([8, 8]);
            vec![
                ev(Op::CartCreate, args::cart_create(0, 0, r as i64, 2)),
                ev(Op::NeighborAlltoall, p),
            ]
        })
    }

    #[test]
    fn neighborhood_collectives_pair_their_neighbours() {
        check(&neighbor_ring(4, None), 4).unwrap();
        let e = check(&neighbor_ring(4, Some(2)), 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("from rank 2 in neighbourhood collectives on a communicator of 4 ranks, and rank 2 sends it 0"),
            "{e}"
        );
    }

    #[test]
    fn listed_groups_and_intercommunicators_map_to_their_ranks() {
        // Ranks 1 and 3 make a communicator (tag 7); its rank 0 (world 1) sends to its rank 1
        // (world 3). Evens and odds split, then an intercommunicator between them: each even
        // rank sends to the same-index odd rank (world 0 -> 1, 2 -> 3), and the
        // intercommunicator is merged (the evens first).
        let t = |wrong: bool| {
            trace(4, move |r| {
                let mut v = Vec::new();
                if r % 2 == 1 {
                    let p = with(args::comm_create_group(0, 7, 2, 2), &[1, 3]);
                    v.push(ev(Op::CommCreateGroup, p));
                    if r == 1 {
                        v.push(ev(Op::Send, args::send(1, 1, 1, 0, 2, 1)));
                    } else {
                        v.push(ev(Op::Recv, args::recv(1, 1, -1, 0, 2, 1)));
                    }
                }
                v.push(ev(Op::CommSplit, vec![0, (r % 2) as i64, r as i64, 3]));
                let remote: &[i64] = if r % 2 == 0 { &[1, 3] } else { &[0, 2] };
                let leader = if r < 2 { 0 } else { -1 };
                let p = with(
                    args::intercomm_create(3, 0, leader, leader, 9, 4, 2),
                    remote,
                );
                v.push(ev(Op::IntercommCreate, p));
                // Relative to the local rank: the same index on the other side.
                if r % 2 == 0 {
                    v.push(ev(Op::Send, args::send(1, 1, 0, 1, 4, 1)));
                } else {
                    let from = if wrong { 1 - (r as i64 / 2) * 2 } else { 0 };
                    v.push(ev(Op::Recv, args::recv(1, 1, from, 1, 4, 1)));
                }
                // The same on a copy of the intercommunicator.
                v.push(ev(Op::CommDup, vec![4, 6]));
                if r % 2 == 0 {
                    v.push(ev(Op::Send, args::send(1, 1, 0, 1, 6, 1)));
                } else {
                    v.push(ev(Op::Recv, args::recv(1, 1, 0, 1, 6, 1)));
                }
                let p = with(
                    args::intercomm_merge(4, (r % 2) as i64, 5, 4),
                    &[0, 2, 1, 3],
                );
                v.push(ev(Op::IntercommMerge, p));
                v.push(ev(Op::Barrier, vec![5]));
                v
            })
        };
        check(&t(false), 4).unwrap();
        assert!(check(&t(true), 4).is_err());
        // A listed member that never makes the call.
        let t = trace(4, |r| {
            if r == 1 {
                let p = with(args::comm_create_group(0, 7, 2, 2), &[1, 3]);
                vec![ev(Op::CommCreateGroup, p)]
            } else {
                vec![]
            }
        });
        let e = check(&t, 4).unwrap_err().to_string();
        assert!(
            e.contains("only 1 of the 2 ranks of a communicator (ranks 1, 3)"),
            "{e}"
        );
    }
}
