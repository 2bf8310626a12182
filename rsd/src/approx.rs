//! Declared approximation: bounded traces for data-dependent parameters.
//!
//! A parameter whose exact form (the numbers of its [`Elastic`] value) exceeds a budget is
//! kept as a [`Summary`] instead: count, min and max with their ranks, mean, variance and a
//! log-4 histogram of its values over every call on every rank of the node (the same
//! statistics as timing, [`Stats`]). Which parameters may be summarised is the user's choice
//! ([`Policy`]): `comm`, the message sizes of communication calls; I/O sizes and offsets only
//! when allowed (`io`); `comm` by default ([`DEFAULT_APPROX`]). Everything else stays exact, and a trace in which nothing is
//! over budget keeps its bytes.
//!
//! A summary is marked in the format (a [`Val::Approx`] value), in `show`, `stats` and
//! `--json`. Consumers that need exact values (extrapolation, replay, the CODES export,
//! `diff`) call [`first`] and refuse with [`RsdError::Approximate`], which names the event and
//! the parameter.

use crate::error::RsdError;
use crate::op::{Layer, Op, Param};
use crate::ranks::RankSet;
use crate::timing::Stats;
use crate::trace::{Event, Node, NodeKind, Trace, visit};
use crate::value::{Elastic, Group, Val};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// The environment variable that chooses what may be summarised: `none`, `comm`, `io`,
/// `comm,io`; [`DEFAULT_APPROX`] when unset.
pub const APPROX_ENV: &str = "IOTREX_APPROX";
/// What is summarised when `IOTREX_APPROX` is unset: the message sizes of communication calls
///. Replay and the CODES export draw exact values from the summaries
/// ([`crate::draw`]); I/O parameters stay exact unless the user allows `io`.
pub const DEFAULT_APPROX: &str = "comm";
/// The word of `IOTREX_APPROX` that allows recording a drain of `MPI_Waitsome` calls (calls
/// of one site that together complete every request of their array) as one call completing
/// them all: which request completes in which call is timing, and recorded as it happened
/// it gives each rank and run its own structure (Meep's halo exchange). Not in
/// [`DEFAULT_APPROX`]: the number of `MPI_Waitsome` calls then differs from the program's.
/// See `rsd::compress`.
pub const ORDER: &str = "order";
/// The header note of a trace recorded with [`ORDER`] (the tracer writes it; extrap reads it
/// before advising `order` for inputs whose `MPI_Waitsome` calls disagree).
pub const ORDER_NOTE: &str = "approximate: IOTREX_APPROX has `order`: each drain of \
    MPI_Waitsome calls (one call site, one request array, until every request completed) is \
    recorded as one call completing them all, ids in ascending order";
/// The environment variable that sets [`Policy::budget`].
pub const BUDGET_ENV: &str = "IOTREX_VALUE_BUDGET";
/// Default budget: the numbers one parameter's exact form may take (its leaves and rank-set
/// runs over all groups). Regular values take a handful (a constant, `a*rank+b`, a loop's
/// stride); 64 leaves room for short explicit vectors (a few iterations of a few groups) and
/// cuts the per-rank, per-step vectors of data-dependent sizes that grow with ranks and steps.
pub const DEFAULT_BUDGET: usize = 64;

/// A statistical summary of a parameter's values. Values are non-negative (sizes, offsets):
/// a parameter with a negative value is never summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The samples: one per call, over every iteration and every rank of the group.
    pub stats: Stats,
}

// Summaries are compared and hashed by their bits, so that values holding them stay `Eq`
// and `Hash` (two summaries are equal when they are the same samples' statistics).
impl Eq for Summary {}

impl Hash for Summary {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let s = &self.stats;
        (s.count, s.min, s.max, s.min_rank, s.max_rank).hash(h);
        (s.mean.to_bits(), s.m2.to_bits()).hash(h);
        s.bins.hash(h);
    }
}

impl Summary {
    /// The value a consumer that only needs a typical value gets: the rounded mean.
    pub fn typical(&self) -> i64 {
        self.stats.mean.round() as i64
    }

    /// Folds another summary's samples in.
    pub fn merge(&mut self, o: &Summary) {
        self.stats.merge(&o.stats);
    }

    /// Sum of all samples (mean times count).
    pub fn total(&self) -> f64 {
        self.stats.total()
    }
}

/// What may be summarised, and from what size on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Message sizes of communication calls (`count`, `bytes`, `sendcount`, ... of
    /// point-to-point and collective calls).
    pub comm: bool,
    /// Sizes and offsets of I/O calls (MPI-IO, POSIX, stdio).
    pub io: bool,
    /// The numbers a parameter's exact form may take before it is summarised.
    pub budget: usize,
}

impl Default for Policy {
    fn default() -> Policy {
        let (comm, io) = Policy::parse_layers(DEFAULT_APPROX).expect("a valid default");
        Policy {
            comm,
            io,
            budget: DEFAULT_BUDGET,
        }
    }
}

impl Policy {
    /// Nothing is summarised: the exact trace.
    pub const EXACT: Policy = Policy {
        comm: false,
        io: false,
        budget: DEFAULT_BUDGET,
    };

    /// Parses `IOTREX_APPROX`'s syntax: `none`, or a comma-separated list of `comm`, `io` and
    /// [`ORDER`] (which [`Policy::orders`] reads; it summarises no parameter).
    pub fn parse_layers(s: &str) -> Result<(bool, bool), RsdError> {
        let (mut comm, mut io) = (false, false);
        for w in s.split(',').map(str::trim) {
            match w {
                "none" | "" => {}
                "comm" => comm = true,
                "io" => io = true,
                ORDER => {}
                _ => {
                    return Err(RsdError::BadSetting {
                        name: APPROX_ENV,
                        value: s.to_string(),
                        expected: "none, or a list of comm, io and order (e.g. comm,io)",
                    });
                }
            }
        }
        Ok((comm, io))
    }

    /// Whether an `IOTREX_APPROX` value allows [`ORDER`] (the default does not).
    pub fn orders(approx: Option<&str>) -> bool {
        approx.is_some_and(|s| s.split(',').any(|w| w.trim() == ORDER))
    }

    /// The policy given by `IOTREX_APPROX` and `IOTREX_VALUE_BUDGET` (each defaulting when
    /// unset), or the setting at fault.
    pub fn from_env() -> Result<Policy, RsdError> {
        Policy::from_vars(
            std::env::var(APPROX_ENV).ok().as_deref(),
            std::env::var(BUDGET_ENV).ok().as_deref(),
        )
    }

    /// [`Policy::from_env`] from given values.
    pub fn from_vars(approx: Option<&str>, budget: Option<&str>) -> Result<Policy, RsdError> {
        let mut p = Policy::default();
        if let Some(a) = approx {
            (p.comm, p.io) = Policy::parse_layers(a)?;
        }
        if let Some(b) = budget {
            p.budget = b
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| RsdError::BadSetting {
                    name: BUDGET_ENV,
                    value: b.to_string(),
                    expected: "a positive number of values",
                })?;
        }
        Ok(p)
    }

    /// Whether parameter `k` of `op` may be summarised under this policy.
    pub fn allows(&self, op: Op, k: usize) -> bool {
        let Some(&p) = op.params().get(k) else {
            // Array parameters and path fields: datatype layouts, member lists, file names.
            return false;
        };
        if op.layer() == Layer::Mpi {
            self.comm && communicates(op) && is_message_size(p)
        } else {
            self.io
                && matches!(
                    p,
                    Param::Count
                        | Param::Bytes
                        | Param::Offset
                        | Param::Ret
                        | Param::Size
                        | Param::Nmemb
                        | Param::Length
                )
        }
    }
}

/// The MPI calls that move messages: point-to-point (sends, receives, `MPI_Sendrecv*`, matched
/// receives, persistent inits) and collectives; not datatype or communicator calls.
fn communicates(op: Op) -> bool {
    op.p2p().is_some()
        || op.persistent().is_some()
        || op.is_collective()
        || op.params().iter().any(|p| {
            matches!(
                p,
                Param::Peer | Param::Dest | Param::Source | Param::Message
            )
        })
}

/// The parameters that say how much a message carries.
fn is_message_size(p: Param) -> bool {
    matches!(
        p,
        Param::Count
            | Param::Bytes
            | Param::Sendcount
            | Param::Recvcount
            | Param::Sendbytes
            | Param::Recvbytes
    )
}

/// The numbers a value's exact form takes: its leaves and rank-set runs, over all groups.
pub fn size(e: &Elastic) -> usize {
    e.groups
        .iter()
        .map(|g| {
            let mut leaves = Vec::new();
            g.val.leaves(&mut leaves);
            leaves.len() + g.ranks.runs.len()
        })
        .sum()
}

/// One parameter that [`bound`] summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct Summarised {
    /// The event's operation.
    pub op: Op,
    /// The parameter's name.
    pub param: &'static str,
    /// The parameter's name as `iotrex show` prints it (an array's element: `count[0]`).
    pub name: String,
    /// The numbers its exact form took.
    pub exact_size: usize,
    /// Its statistics.
    pub summary: Summary,
}

/// Identifies an event node while the trace is walked: its address, stable while the trace
/// is only read.
fn key(e: &Event) -> usize {
    e as *const Event as usize
}

/// Summarises, in place, every parameter that the policy allows and whose exact form exceeds
/// the budget, and completes any parameter that already holds a summary for some ranks (its
/// exact groups join the summary). Returns what it summarised; a trace with nothing over
/// budget is left untouched.
pub fn bound(trace: &mut Trace, policy: &Policy) -> Vec<Summarised> {
    summarise_where(trace, &mut |_, e, k| {
        let v = &e.params[k];
        policy.allows(e.op, k) && (v.is_approx() || size(v) > policy.budget)
    })
}

/// Summarises, in place, every parameter `k` of every event for which `select(path, event, k)`
/// holds, whatever its layer and size: a consumer that fits or compares summaries (`extrap`,
/// `diff`) makes the same parameter a summary in every trace it aligns, and the user's
/// `extrap --ignore op.param` names parameters to summarise. `path` is the event's position:
/// the index of each node from the top level down, through loop bodies and nested calls.
/// Parameters with a negative value on some call stay exact (a summary holds non-negative
/// values). Returns what it summarised.
pub fn summarise_where(
    trace: &mut Trace,
    select: &mut dyn FnMut(&[usize], &Event, usize) -> bool,
) -> Vec<Summarised> {
    // (event, parameter) -> statistics of its exact values so far; None when it cannot be
    // summarised (a negative value).
    let mut marked: HashMap<(usize, usize), Option<Stats>> = HashMap::new();
    fn mark(
        nodes: &[Node],
        path: &mut Vec<usize>,
        select: &mut dyn FnMut(&[usize], &Event, usize) -> bool,
        out: &mut HashMap<(usize, usize), Option<Stats>>,
    ) {
        for (i, n) in nodes.iter().enumerate() {
            path.push(i);
            match &n.kind {
                NodeKind::Event(e) => {
                    for k in 0..e.params.len() {
                        if select(path, e, k) {
                            out.insert((key(e), k), Some(Stats::default()));
                        }
                    }
                    mark(&e.children, path, select, out);
                }
                NodeKind::Loop(l) => mark(&l.body, path, select, out),
            }
            path.pop();
        }
    }
    mark(&trace.nodes, &mut Vec::new(), select, &mut marked);
    if marked.is_empty() {
        return Vec::new();
    }
    // Every call of every rank adds its exact value; a rank whose group is already a summary
    // adds nothing here (its summary is merged below).
    let ranks = trace.ranks();
    ranks.for_each(|rank| {
        let mut idx = Vec::new();
        sample(&trace.nodes, rank, &mut idx, &mut marked);
    });
    let mut done = Vec::new();
    replace(&mut trace.nodes, &marked, &mut done);
    done
}

fn sample(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    marked: &mut HashMap<(usize, usize), Option<Stats>>,
) {
    visit(nodes, rank, idx, &mut |e, idx| {
        for (k, v) in e.params.iter().enumerate() {
            let Some(slot) = marked.get_mut(&(key(e), k)) else {
                continue;
            };
            let Some(g) = v.groups.iter().find(|g| g.ranks.contains(rank)) else {
                continue;
            };
            if matches!(g.val, Val::Approx(_)) {
                continue;
            }
            let x = v.start_member(rank, idx);
            match (slot.as_mut(), u64::try_from(x)) {
                (Some(s), Ok(x)) => s.add(x, rank),
                _ => *slot = None,
            }
        }
        if !e.children.is_empty() {
            sample(&e.children, rank, idx, marked);
        }
        true
    });
}

fn replace(
    nodes: &mut [Node],
    marked: &HashMap<(usize, usize), Option<Stats>>,
    done: &mut Vec<Summarised>,
) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                let id = key(e);
                let names = e.op.params();
                let (np, nf) = (e.params.len(), e.nfields());
                for (k, v) in e.params.iter_mut().enumerate() {
                    let Some(Some(stats)) = marked.get(&(id, k)) else {
                        continue;
                    };
                    let mut summary = Summary {
                        stats: stats.clone(),
                    };
                    let mut ranks = RankSet::default();
                    for g in &v.groups {
                        ranks.union_with(&g.ranks);
                        if let Val::Approx(s) = &g.val {
                            summary.merge(s);
                        }
                    }
                    done.push(Summarised {
                        op: e.op,
                        param: names.get(k).map_or("(array or path field)", |p| p.name()),
                        name: e.op.param_name(k, np, nf),
                        exact_size: size(v),
                        summary: summary.clone(),
                    });
                    *v = Elastic {
                        groups: vec![Group {
                            ranks,
                            val: Val::Approx(Box::new(summary)),
                        }],
                    };
                }
                replace(&mut e.children, marked, done);
            }
            NodeKind::Loop(l) => replace(&mut l.body, marked, done),
        }
    }
}

/// A summarised parameter, as [`first`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproxSite {
    /// The event's operation.
    pub op: Op,
    /// The parameter's name.
    pub param: String,
    /// The ranks of the event's node.
    pub ranks: RankSet,
}

/// The first event (in program order, nested calls included) with a summarised parameter, or
/// with a summarised loop count.
pub fn first(trace: &Trace) -> Option<ApproxSite> {
    fn walk(nodes: &[Node]) -> Option<ApproxSite> {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    if let Some(k) = e.params.iter().position(Elastic::is_approx) {
                        return Some(ApproxSite {
                            op: e.op,
                            param: e
                                .op
                                .params()
                                .get(k)
                                .map_or_else(|| format!("#{k}"), |p| p.name().to_string()),
                            ranks: n.ranks.clone(),
                        });
                    }
                    if let Some(s) = walk(&e.children) {
                        return Some(s);
                    }
                }
                NodeKind::Loop(l) => {
                    if let Some(s) = walk(&l.body) {
                        return Some(s);
                    }
                }
            }
        }
        None
    }
    walk(&trace.nodes)
}

/// Refuses a trace with a summarised parameter: `what` needs exact values (it names the
/// consumer, e.g. "extrapolation"), `file` names the input.
pub fn require_exact(trace: &Trace, file: &str, what: &'static str) -> Result<(), RsdError> {
    match first(trace) {
        None => Ok(()),
        Some(s) => Err(RsdError::Approximate {
            file: file.to_string(),
            op: s.op.name(),
            param: s.param,
            ranks: s.ranks.to_string(),
            what,
        }),
    }
}

/// Number of summarised parameters in a trace (nested calls included).
pub fn count(trace: &Trace) -> usize {
    fn walk(nodes: &[Node]) -> usize {
        nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Event(e) => {
                    e.params.iter().filter(|p| p.is_approx()).count() + walk(&e.children)
                }
                NodeKind::Loop(l) => walk(&l.body),
            })
            .sum()
    }
    walk(&trace.nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::compress;
    use crate::format::{Header, TraceFile};
    use crate::trace::RawEvent;
    use std::path::Path;

    /// One rank's halo-like stream: 30 sends whose counts follow no pattern.
    fn rank_trace(rank: u32) -> Trace {
        let evs: Vec<RawEvent> = (0..30u32)
            .map(|i| {
                let c = i64::from((rank * 7919 + i * 131) % 97 + 3);
                RawEvent::new(Op::Send, 1, crate::op::args::send(c, 7, 1, 0, 0, 4 * c))
            })
            .collect();
        compress(rank, &evs)
    }

    #[test]
    fn over_budget_sizes_become_one_summary_with_every_sample() {
        let p = Policy {
            comm: true,
            io: false,
            budget: 8,
        };
        let mut ts: Vec<Trace> = (0..4).map(rank_trace).collect();
        for t in &mut ts {
            let done = bound(t, &p);
            assert_eq!(done.len(), 2, "count and bytes of one rank");
        }
        let mut m = crate::merge::merge_tree(ts).unwrap();
        assert!(bound(&mut m, &p).len() <= 2);
        let NodeKind::Loop(l) = &m.nodes[0].kind else {
            panic!("{m:?}")
        };
        let NodeKind::Event(e) = &l.body[0].kind else {
            panic!()
        };
        let count = &e.params[0];
        assert_eq!(count.groups.len(), 1, "{count}");
        let Val::Approx(s) = &count.groups[0].val else {
            panic!("{count}")
        };
        let mut want = Stats::default();
        for r in 0..4u32 {
            for i in 0..30u32 {
                want.add(u64::from((r * 7919 + i * 131) % 97 + 3), r);
            }
        }
        assert_eq!(s.stats.count, 120);
        assert_eq!((s.stats.min, s.stats.max), (want.min, want.max));
        assert!((s.stats.mean - want.mean).abs() < 1e-9);
        // The peer is not a size: exact.
        assert!(!e.params[2].is_approx());
        assert_eq!(first(&m).unwrap().param, "count");
        // The summary survives the format, and the refusal names it.
        let tf = TraceFile {
            header: Header::new(4),
            trace: m,
        };
        let back = TraceFile::from_bytes(&tf.to_bytes().unwrap(), Path::new("x")).unwrap();
        assert_eq!(back, tf);
        let e = require_exact(&back.trace, "x", "replay").unwrap_err();
        assert!(e.to_string().contains("MPI_Send"), "{e}");
    }

    #[test]
    fn none_and_under_budget_leave_the_trace_as_it_was() {
        let t = rank_trace(0);
        let mut a = t.clone();
        assert!(bound(&mut a, &Policy::EXACT).is_empty());
        assert_eq!(a, t);
        let mut b = t.clone();
        let big = Policy {
            comm: true,
            io: false,
            budget: 1000,
        };
        assert!(bound(&mut b, &big).is_empty());
        assert_eq!(b, t);
    }

    #[test]
    fn settings_parse_or_name_the_variable() {
        assert_eq!(Policy::from_vars(None, None).unwrap(), Policy::default());
        let p = Policy::from_vars(Some("comm,io"), Some("10")).unwrap();
        assert!(p.comm && p.io && p.budget == 10);
        let p = Policy::from_vars(Some("none"), None).unwrap();
        assert!(!p.comm && !p.io);
        let e = Policy::from_vars(Some("coms"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("IOTREX_APPROX=coms"), "{e}");
        let e = Policy::from_vars(None, Some("0")).unwrap_err().to_string();
        assert!(e.contains("IOTREX_VALUE_BUDGET=0"), "{e}");
    }
}
