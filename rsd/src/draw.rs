//! Exact values drawn from summaries, for the consumers that must issue
//! real calls: replay (both runtimes) and the CODES export. Offsets held as prefix sums of
//! sizes ([`crate::prefix`]) are computed last, from the drawn sizes.
//!
//! [`realize`] replaces every [`Val::Approx`] of a trace by exact per-rank values, drawn
//! deterministically (a seed, [`DEFAULT_SEED`] unless the user gives one) from the recorded
//! distribution: stratified over the log-4 histogram (each bin's share of the draws, uniform
//! inside the bin, clipped to the recorded min and max), shuffled, then the last draws
//! corrected so that the sum is exactly the mean times the number of calls. The consumers then
//! read the trace as an exact one, so they need no change.
//!
//! What keeps a drawn trace runnable under `--comm real`:
//! - **receives take the largest recorded size** (a receive's count is an upper bound in MPI),
//!   so whatever a sender drew fits; `MPI_Sendrecv_replace`, whose one count is both the
//!   message sent and the buffer received into, takes it too;
//! - **collectives draw per call, not per rank**: the k-th call of a collective event has the
//!   same size on every rank (a broadcast's or reduction's count must agree); their total
//!   matches the mean times the count only up to the rounding of one call's value per rank;
//! - **sizes of one call stay proportional**: a call's second summarised size of the same kind
//!   (`bytes` next to `count`, a gather's `recvcount` next to its `sendcount`) is the first
//!   one's draw times the ratio of their means (the datatype's size), not a draw of its own.

use crate::approx::Summary;
use crate::error::RsdError;
use crate::op::{Op, P2p, Param};
use crate::prefix::insert;
use crate::ranks::RankSet;
use crate::timing::{BINS, Stats};
use crate::trace::{Event, Node, NodeKind, Trace, visit};
use crate::value::{Elastic, Group, RankFn, Val};
use std::collections::HashMap;

/// The seed of draws when the user gives none (`--seed`): fixed, so that two replays or
/// exports of one trace issue the same calls.
pub const DEFAULT_SEED: u64 = 0x1075_ea11_5eed_0014;

/// The most calls of one summarised parameter [`realize`] draws values for: the drawn trace
/// holds them explicitly, as the exact trace did.
pub const DRAW_LIMIT: u64 = 1 << 26;

/// How a summarised parameter of a call is given an exact value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The summary's max: the size of a receive buffer.
    Max,
    /// One draw per call ordinal, shared by every rank (collectives).
    PerCall,
    /// One draw per call of each rank (sends).
    PerRank,
}

fn role(op: Op, p: Param) -> Role {
    let recv = matches!(op.p2p(), Some(P2p::Recv { .. }))
        || matches!(op.persistent(), Some(P2p::Recv { .. }))
        || matches!(op, Op::Mrecv | Op::Imrecv | Op::SendrecvReplace)
        || (op == Op::Sendrecv && matches!(p, Param::Recvcount | Param::Recvbytes));
    if recv {
        Role::Max
    } else if op.is_collective() {
        Role::PerCall
    } else {
        Role::PerRank
    }
}

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The bounds of log-4 bin `b` ([`crate::timing::bin_of`]), clipped to the samples' range.
fn bin_range(s: &Stats, b: usize) -> (f64, f64) {
    let lo = if b == 0 { 0 } else { 1u64 << (2 * b) };
    let hi = if b + 1 >= BINS {
        u64::MAX
    } else {
        (1u64 << (2 * (b + 1))) - 1
    };
    (lo.max(s.min) as f64, hi.min(s.max) as f64)
}

/// `n` values drawn from `s`'s distribution, in a seeded order, summing to exactly
/// `round(mean * n)` and each within `[min, max]`.
pub fn draws(s: &Summary, n: u64, seed: u64) -> Vec<i64> {
    let st = &s.stats;
    let mut rng = Rng(seed);
    let n_us = n as usize;
    let mut out = Vec::with_capacity(n_us);
    let hist: u64 = st.bins.iter().sum();
    if st.count == 0 || hist == 0 {
        out.resize(n_us, s.typical().max(0));
        return out;
    }
    // Stratified inverse CDF: draw i sits at quantile (i + u) / n.
    let mut cum = Vec::with_capacity(BINS);
    let mut acc = 0u64;
    for &c in &st.bins {
        acc += c;
        cum.push(acc);
    }
    let mut b = 0;
    for i in 0..n {
        let q = (i as f64 + rng.unit()) / n as f64 * hist as f64;
        while b + 1 < BINS && (cum[b] as f64) <= q {
            b += 1;
        }
        let before = if b == 0 { 0 } else { cum[b - 1] };
        let inside = if st.bins[b] == 0 {
            0.5
        } else {
            (q - before as f64) / st.bins[b] as f64
        };
        let (lo, hi) = bin_range(st, b);
        let v = if hi <= lo {
            lo
        } else {
            lo + inside * (hi - lo)
        };
        out.push(v.round().clamp(st.min as f64, st.max as f64) as i64);
    }
    // Seeded shuffle (Fisher-Yates): the stratified order would put the small values first.
    for i in (1..n_us).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    // Correct the total from the last draw backwards, each within [min, max]: the mean lies
    // between them, so the exact total is always reachable.
    let want = (st.mean * n as f64).round() as i128;
    let mut gap = want - out.iter().map(|&v| i128::from(v)).sum::<i128>();
    let (lo, hi) = (st.min as i128, st.max as i128);
    for v in out.iter_mut().rev() {
        if gap == 0 {
            break;
        }
        let x = i128::from(*v);
        let y = (x + gap).clamp(lo, hi);
        gap -= y - x;
        *v = y as i64;
    }
    out
}

/// What [`realize`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Realized {
    /// Summarised parameters given exact values.
    pub params: usize,
    /// Values drawn, over all of them.
    pub values: u64,
    /// Events whose offsets were computed from the sizes ([`crate::prefix::resolve`]).
    pub offsets: usize,
}

/// Each summarised (event, parameter)'s per-rank values, in rank order.
type Built = HashMap<(usize, usize), Vec<(u32, Val<i64>)>>;

fn key(e: &Event) -> usize {
    e as *const Event as usize
}

/// One summarised parameter's calls per rank, then its drawn values.
struct Slot {
    summary: Summary,
    role: Role,
    /// The first summarised parameter of the same call and role, and the ratio of means.
    tie: Option<(usize, f64)>,
    /// Calls per rank, in rank order.
    calls: Vec<(u32, u64)>,
    seed: u64,
    /// The call and parameter, for a refusal.
    name: String,
}

/// Replaces every summary in `trace` by exact per-rank values drawn with `seed` (see the
/// module's documentation). A trace without summaries is left as it was. Refuses a parameter
/// with more than [`DRAW_LIMIT`] calls, naming it.
pub fn realize(trace: &mut Trace, seed: u64) -> Result<Realized, RsdError> {
    // (event, param) -> slot, and the event order in which they were found (for the seeds).
    let mut slots: HashMap<(usize, usize), Slot> = HashMap::new();
    let mut ordinal = 0u64;
    fn find(
        nodes: &[Node],
        seed: u64,
        ordinal: &mut u64,
        slots: &mut HashMap<(usize, usize), Slot>,
    ) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    *ordinal += 1;
                    let names = e.op.params();
                    let mut leads: Vec<(Role, usize, f64)> = Vec::new();
                    for (k, v) in e.params.iter().enumerate() {
                        let Some(Group {
                            val: Val::Approx(s),
                            ..
                        }) = v.groups.first()
                        else {
                            continue;
                        };
                        let p = names.get(k).copied().unwrap_or(Param::Count);
                        let r = role(e.op, p);
                        let tie = leads
                            .iter()
                            .find(|l| l.0 == r)
                            .filter(|l| l.2 > 0.0)
                            .map(|l| (l.1, s.stats.mean / l.2));
                        if tie.is_none() {
                            leads.push((r, k, s.stats.mean));
                        }
                        slots.insert(
                            (key(e), k),
                            Slot {
                                summary: (**s).clone(),
                                role: r,
                                tie,
                                calls: Vec::new(),
                                seed: seed
                                    ^ ordinal.wrapping_mul(0x2545_f491_4f6c_dd1d)
                                    ^ (k as u64) << 56,
                                name: format!("{} {}", e.op.name(), p.name()),
                            },
                        );
                    }
                    find(&e.children, seed, ordinal, slots);
                }
                NodeKind::Loop(l) => find(&l.body, seed, ordinal, slots),
            }
        }
    }
    find(&trace.nodes, seed, &mut ordinal, &mut slots);
    if slots.is_empty() {
        return Ok(Realized {
            offsets: crate::prefix::resolve_all(trace),
            ..Realized::default()
        });
    }
    // A receive may match a send of another event (another call site, loop or rank group),
    // whose summary reaches higher than its own: every receive-side size takes the largest
    // recorded size of that parameter over every summarised call.
    let mut top: HashMap<String, u64> = HashMap::new();
    for s in slots.values() {
        let p = s.name.rsplit(' ').next().unwrap_or("").to_string();
        let t = top.entry(p).or_default();
        *t = (*t).max(s.summary.stats.max);
    }
    for s in slots.values_mut() {
        if s.role == Role::Max {
            let p = s.name.rsplit(' ').next().unwrap_or("");
            s.summary.stats.max = top[p];
        }
    }
    // Pass 1: how many calls each rank makes of each summarised event.
    let ranks = trace.ranks();
    ranks.for_each(|rank| {
        let mut idx = Vec::new();
        count(&trace.nodes, rank, &mut idx, &mut slots);
    });
    // The draws: per rank in rank order (PerRank), or per call ordinal (PerCall).
    let mut values: HashMap<(usize, usize), Vec<i64>> = HashMap::new();
    let mut done = Realized::default();
    for (&(ev, k), s) in &slots {
        let total: u64 = s.calls.iter().map(|c| c.1).sum();
        if total > DRAW_LIMIT {
            return Err(RsdError::TooManyDraws {
                param: s.name.clone(),
                calls: total,
                limit: DRAW_LIMIT,
            });
        }
        done.params += 1;
        done.values += total;
        let v = match s.role {
            Role::Max => Vec::new(),
            Role::PerRank => draws(&s.summary, total, s.seed),
            Role::PerCall => {
                let most = s.calls.iter().map(|c| c.1).max().unwrap_or(0);
                draws(&s.summary, most, s.seed)
            }
        };
        values.insert((ev, k), v);
    }
    // Pass 2: each rank's values in call order, as a per-rank explicit value.
    let mut built: Built = HashMap::new();
    ranks.for_each(|rank| {
        let mut idx = Vec::new();
        // Where this rank's draws start: after those of the ranks before it (per-rank
        // draws), or at the first call (per-call draws).
        let mut at: HashMap<(usize, usize), u64> = slots
            .iter()
            .map(|(&id, s)| {
                let before = match s.role {
                    Role::PerRank => s.calls.iter().take_while(|c| c.0 < rank).map(|c| c.1).sum(),
                    _ => 0,
                };
                (id, before)
            })
            .collect();
        assign(
            &trace.nodes,
            rank,
            &mut idx,
            &slots,
            &values,
            &mut at,
            &mut built,
        );
    });
    replace(&mut trace.nodes, &mut built);
    // An exact receive may match a summarised send too (a loop's last iterations under budget,
    // another call site): its constant sizes are raised to the largest drawn send.
    raise_receives(trace, &mut top);
    // Offsets that are prefix sums of sizes follow the drawn sizes: the dump stays
    // contiguous and non-overlapping.
    done.offsets = crate::prefix::resolve_all(trace);
    Ok(done)
}

fn count(nodes: &[Node], rank: u32, idx: &mut Vec<u64>, slots: &mut HashMap<(usize, usize), Slot>) {
    visit(nodes, rank, idx, &mut |e, idx| {
        for k in 0..e.params.len() {
            if let Some(s) = slots.get_mut(&(key(e), k)) {
                match s.calls.last_mut() {
                    Some(c) if c.0 == rank => c.1 += 1,
                    _ => s.calls.push((rank, 1)),
                }
            }
        }
        if !e.children.is_empty() {
            count(&e.children, rank, idx, slots);
        }
        true
    });
}

#[allow(clippy::too_many_arguments)]
fn assign(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    slots: &HashMap<(usize, usize), Slot>,
    values: &HashMap<(usize, usize), Vec<i64>>,
    at: &mut HashMap<(usize, usize), u64>,
    built: &mut Built,
) {
    visit(nodes, rank, idx, &mut |e, idx| {
        let ev = key(e);
        // The lead values of this call, for the parameters tied to them.
        let mut mine: Vec<(usize, i64)> = Vec::new();
        for k in 0..e.params.len() {
            let Some(s) = slots.get(&(ev, k)) else {
                continue;
            };
            let st = &s.summary.stats;
            let i = at.entry((ev, k)).or_insert(0);
            let x = match (s.role, s.tie) {
                (Role::Max, _) => st.max as i64,
                (_, Some((lead, ratio))) => {
                    let l = mine.iter().find(|m| m.0 == lead).map_or(0, |m| m.1);
                    ((l as f64 * ratio).round() as i64).clamp(st.min as i64, st.max as i64)
                }
                (_, None) => values[&(ev, k)].get(*i as usize).copied().unwrap_or(0),
            };
            *i += 1;
            mine.push((k, x));
            let per = built.entry((ev, k)).or_default();
            if per.last().is_none_or(|p| p.0 != rank) {
                per.push((rank, Val::Seq(Vec::new())));
            }
            let v = &mut per.last_mut().expect("pushed").1;
            insert(v, idx, x);
        }
        if !e.children.is_empty() {
            assign(&e.children, rank, idx, slots, values, at, built);
        }
        true
    });
}

fn replace(nodes: &mut [Node], built: &mut Built) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                let ev = key(e);
                for (k, p) in e.params.iter_mut().enumerate() {
                    let Some(per) = built.remove(&(ev, k)) else {
                        if p.is_approx() {
                            // A summary no rank reaches: its typical value.
                            *p = typical(p);
                        }
                        continue;
                    };
                    *p = Elastic {
                        groups: per
                            .into_iter()
                            .map(|(r, v)| Group {
                                ranks: RankSet::single(r),
                                val: v.map(&mut |&x| RankFn::Const(x)),
                            })
                            .collect(),
                    };
                }
                replace(&mut e.children, built);
            }
            NodeKind::Loop(l) => replace(&mut l.body, built),
        }
    }
}

fn is_receive_size(op: Op, k: usize) -> bool {
    let comm = crate::approx::Policy {
        comm: true,
        io: false,
        budget: 1,
    };
    op.params()
        .get(k)
        .is_some_and(|&p| role(op, p) == Role::Max && comm.allows(op, k))
}

/// Every receive-side size becomes one constant per parameter name: the largest size any
/// call of the trace may send or receive under it, so that whichever send a receive matches
/// fits.
fn raise_receives(trace: &mut Trace, top: &mut HashMap<String, u64>) {
    let ranks = trace.ranks();
    ranks.for_each(|rank| {
        let mut idx = Vec::new();
        fn scan(nodes: &[Node], rank: u32, idx: &mut Vec<u64>, top: &mut HashMap<String, u64>) {
            visit(nodes, rank, idx, &mut |e, idx| {
                for (k, v) in e.params.iter().enumerate() {
                    if is_receive_size(e.op, k) {
                        let x = v.start_member(rank, idx).max(0) as u64;
                        let t = top.entry(e.op.params()[k].name().to_string()).or_default();
                        *t = (*t).max(x);
                    }
                }
                if !e.children.is_empty() {
                    scan(&e.children, rank, idx, top);
                }
                true
            });
        }
        scan(&trace.nodes, rank, &mut idx, top);
    });
    fn set(nodes: &mut [Node], top: &HashMap<String, u64>) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    let op = e.op;
                    for (k, v) in e.params.iter_mut().enumerate() {
                        if is_receive_size(op, k)
                            && let Some(&t) = top.get(op.params()[k].name())
                        {
                            *v = Elastic {
                                groups: vec![Group {
                                    ranks: v
                                        .groups
                                        .iter()
                                        .fold(RankSet::default(), |a, g| a.union(&g.ranks)),
                                    val: Val::Const(RankFn::Const(t as i64)),
                                }],
                            };
                        }
                    }
                    set(&mut e.children, top);
                }
                NodeKind::Loop(l) => set(&mut l.body, top),
            }
        }
    }
    set(&mut trace.nodes, top);
}

fn typical(p: &Elastic) -> Elastic {
    Elastic {
        groups: p
            .groups
            .iter()
            .map(|g| Group {
                ranks: g.ranks.clone(),
                val: match &g.val {
                    Val::Approx(s) => Val::Const(RankFn::Const(s.typical())),
                    v => v.clone(),
                },
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approx::{Policy, bound};
    use crate::compress::compress;
    use crate::trace::RawEvent;

    /// One rank's halo-like stream: 30 sends and 30 receives whose counts follow no pattern.
    fn rank_trace(rank: u32) -> Trace {
        let evs: Vec<RawEvent> = (0..30u32)
            .flat_map(|i| {
                let c = i64::from((rank * 7919 + i * 131) % 97 + 3);
                let d = i64::from((rank * 31 + i * 17) % 89 + 5);
                [
                    RawEvent::new(Op::Send, 1, crate::op::args::send(c, 7, 1, 0, 0, 4 * c)),
                    RawEvent::new(Op::Recv, 2, crate::op::args::recv(d, 7, -1, 0, 0, 4 * d)),
                ]
            })
            .collect();
        compress(rank, &evs)
    }

    fn summarised() -> Trace {
        let p = Policy {
            comm: true,
            io: false,
            budget: 8,
        };
        let ts: Vec<Trace> = (0..4)
            .map(|r| {
                let mut t = rank_trace(r);
                bound(&mut t, &p);
                t
            })
            .collect();
        let mut m = crate::merge::merge_tree(ts).unwrap();
        bound(&mut m, &p);
        assert!(crate::approx::count(&m) >= 2, "{m:?}");
        m
    }

    #[test]
    fn draws_keep_the_range_and_the_exact_total() {
        let mut st = Stats::default();
        for i in 0..1000u64 {
            st.add(3 + (i * i) % 5000, 0);
        }
        let s = Summary { stats: st.clone() };
        for n in [1u64, 7, 1000, 4321] {
            let v = draws(&s, n, 9);
            assert_eq!(v.len() as u64, n);
            assert!(v.iter().all(|&x| x >= st.min as i64 && x <= st.max as i64));
            let sum: i64 = v.iter().sum();
            assert_eq!(sum, (st.mean * n as f64).round() as i64, "n {n}");
        }
        // The spread follows the histogram: the drawn variance is near the recorded one.
        let v = draws(&s, 1000, 9);
        let m = v.iter().sum::<i64>() as f64 / 1000.0;
        let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / 1000.0;
        let rel = (var.sqrt() - st.variance().sqrt()).abs() / st.variance().sqrt();
        assert!(
            rel < 0.25,
            "sd drawn {} recorded {}",
            var.sqrt(),
            st.variance().sqrt()
        );
        assert_eq!(draws(&s, 500, 1), draws(&s, 500, 1));
        assert_ne!(draws(&s, 500, 1), draws(&s, 500, 2));
    }

    #[test]
    fn realize_gives_exact_values_sends_drawn_receives_at_the_largest_size() {
        let m = summarised();
        let mut a = m.clone();
        let r = realize(&mut a, DEFAULT_SEED).unwrap();
        assert!(r.params >= 2 && r.values >= 240, "{r:?}");
        assert_eq!(crate::approx::count(&a), 0);
        let mut b = m.clone();
        realize(&mut b, DEFAULT_SEED).unwrap();
        assert_eq!(a, b, "deterministic");
        let mut c = m.clone();
        realize(&mut c, 5).unwrap();
        assert_ne!(a, c, "the seed matters");
        // Send counts: every rank's calls, summing to the recorded mean times the count;
        // bytes tied to them (4 per element); receives at the recorded max.
        let mut sent = 0i64;
        let (mut want_send, mut recv_max) = (0.0, 0);
        fn find(nodes: &[Node], op: Op) -> Option<&Event> {
            nodes.iter().find_map(|n| match &n.kind {
                NodeKind::Event(e) if e.op == op => Some(e),
                NodeKind::Loop(l) => find(&l.body, op),
                _ => None,
            })
        }
        if let Val::Approx(s) = &find(&m.nodes, Op::Send).unwrap().params[0].groups[0].val {
            want_send = s.total();
        }
        if let Val::Approx(s) = &find(&m.nodes, Op::Recv).unwrap().params[0].groups[0].val {
            recv_max = s.stats.max as i64;
        }
        for rank in 0..4 {
            for e in a.expand(rank) {
                match e.op {
                    Op::Send => {
                        sent += e.params[0];
                        assert_eq!(e.params[5], 4 * e.params[0], "{e:?}");
                    }
                    // At least the largest size any send may carry.
                    Op::Recv => assert!(e.params[0] >= recv_max.max(99), "{e:?}"),
                    _ => {}
                }
            }
        }
        assert_eq!(sent, want_send.round() as i64);
    }
}
