//! Comparing two traces: structure and every recorded parameter, timing apart.
//!
//! The comparison walks both node trees in step, which is fast and independent of the rank
//! count. Two traces can encode the same calls differently (a rank set split into other runs,
//! a value written as two groups on one side and one on the other), so when the walk finds
//! differences and both traces have at most [`DiffOptions::expand_limit`] ranks, every rank is
//! expanded on both sides and the call sequences compared: equal sequences mean the traces are
//! identical (the report says the representations differ). Larger traces are judged on the
//! walk alone, which can only err towards "different".
//!
//! Approximate parts (parameters held as statistical summaries) are compared by their
//! statistics, not their values: where either side holds a summary, the same parameter of
//! the other side is summarised too, and the two agree when their means and totals (mean
//! times count) are within the tolerance ([`DiffOptions::tolerance`], [`DEFAULT_TOLERANCE`]
//! when either side has summaries). Exact parts must be identical as before. The report says
//! how many exact values were compared and, for every approximate part, both sides'
//! statistics and how far apart they are ([`ApproxReport`]).

use crate::describe_node;
use rsd::TraceFile;
use rsd::approx::Summary;
use rsd::timing::Interval;
use rsd::trace::{FlatEvent, Node, NodeKind};
use rsd::value::{Elastic, Group, RankFn, Val};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The tolerance on the means and totals of approximate parts when either trace holds
/// summaries and the user gives none (`--tolerance`): 10%.
pub const DEFAULT_TOLERANCE: f64 = 0.10;

/// Options for [`diff`].
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Also compare timing.
    pub timing: bool,
    /// Keep at most this many differences in the report (all are counted).
    pub max_shown: usize,
    /// Expand and compare per rank when structures differ and both traces have at most this
    /// many ranks.
    pub expand_limit: u32,
    /// Compare the calls without their call sites (`--ignore-call-sites`): two builds of a
    /// program, or runs with different `IOTREX_STACK_DEPTH`, agree where their calls do.
    pub ignore_call_sites: bool,
    /// The largest relative difference (a fraction: 0.1 is 10%) between the means, and
    /// between the totals, of two summaries that still agree; `None`: [`DEFAULT_TOLERANCE`].
    /// Used only when either trace holds summaries; exact parts must be identical.
    pub tolerance: Option<f64>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            timing: false,
            max_shown: 10,
            expand_limit: 4096,
            ignore_call_sites: false,
            tolerance: None,
        }
    }
}

/// One approximate part compared: a parameter that is a summary on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApproxPart {
    /// The event (op, call site, path).
    pub event: String,
    /// Its ranks in the first trace.
    pub ranks: String,
    /// The parameter.
    pub param: String,
    /// Mean on each side.
    pub mean: (f64, f64),
    /// `(right - left) / left` of the means, in %.
    pub mean_diff_pct: f64,
    /// Total (mean times count) on each side.
    pub total: (f64, f64),
    /// `(right - left) / left` of the totals, in %.
    pub total_diff_pct: f64,
    /// Number of calls on each side.
    pub count: (u64, u64),
    /// Whether both differences are within the tolerance.
    pub within: bool,
}

/// How the approximate parts compared, when either trace holds summaries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApproxReport {
    /// The tolerance on means and totals, in %.
    pub tolerance_pct: f64,
    /// Exact parameter values compared (they must be identical), over the aligned events.
    pub exact_compared: usize,
    /// Every approximate part compared, in program order.
    pub parts: Vec<ApproxPart>,
    /// Approximate parts outside the tolerance (or a summary facing exact values).
    pub outside: usize,
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The event (op, call site, path) or `header`.
    pub event: String,
    /// The ranks concerned.
    pub ranks: String,
    /// The parameter, `ranks`, `loop count`, `structure` or a header field.
    pub param: String,
    /// The value in the first trace.
    pub left: String,
    /// The value in the second trace.
    pub right: String,
}

/// Mean-time comparison of one event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventTiming {
    /// The event.
    pub event: String,
    /// Its ranks in the first trace.
    pub ranks: String,
    /// Mean duration in the first trace, ns.
    pub left_mean_ns: f64,
    /// Mean duration in the second trace, ns.
    pub right_mean_ns: f64,
    /// `(right - left) / left`, in %.
    pub dur_diff_pct: f64,
    /// Same for the mean compute gap before the call.
    pub gap_diff_pct: f64,
    /// The prediction interval of the mean duration on each side that is extrapolated.
    pub dur_interval: (Option<Interval>, Option<Interval>),
}

/// The timing part of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingReport {
    /// Per aligned event.
    pub events: Vec<EventTiming>,
    /// Wall time of each side from the headers, ns (0 when not recorded).
    pub wall_ns: (u64, u64),
    /// Difference in wall time, %, when both are recorded.
    pub wall_diff_pct: Option<f64>,
    /// The prediction interval of each side's wall time, where it is extrapolated.
    pub wall_interval: (Option<Interval>, Option<Interval>),
    /// Sum of compute gaps and durations of all top-level calls of all ranks, ns.
    pub total_ns: (f64, f64),
    /// Difference in that total, %.
    pub total_diff_pct: f64,
}

/// The outcome of [`diff`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffReport {
    /// Whether the traces record the same calls with the same parameters.
    pub identical: bool,
    /// `structure` (the tree walk decided) or `expansion` (per-rank call lists decided).
    pub method: &'static str,
    /// The number of differences found by the walk.
    pub count: usize,
    /// The first differences.
    pub differences: Vec<Difference>,
    /// Anything the reader should know about how the answer was reached.
    pub note: Option<String>,
    /// Timing comparison, with `--timing`.
    pub timing: Option<TimingReport>,
    /// When the headers say the traces are of different programs or builds (whose call sites
    /// differ where their calls are the same), what they say.
    pub origin: Option<String>,
    /// Whether call sites were left out of the comparison.
    pub ignore_call_sites: bool,
    /// With summaries on either side: which parts were exact and which approximate, and by how
    /// much the approximate ones differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approx: Option<ApproxReport>,
    /// The local queries an extrapolation set aside (its notes say which: `local`), left out
    /// on both sides, with the calls each side had of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<SetAside>,
    /// The run values on each side (numbers that belong to the run, [`rsd::runvalue`]),
    /// compared as run values: equal as such, not by their numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_values: Option<(usize, usize)>,
}

/// Ops left out of a comparison on both sides, and how many calls of them each side had.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetAside {
    /// The ops' names.
    pub ops: Vec<&'static str>,
    /// The calls of them (over every rank) on the left and on the right.
    pub calls: (u64, u64),
    /// Those of `ops` no extrapolation set aside: local queries whose counts differ between
    /// the sides, which the diff set aside itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpredicted: Vec<&'static str>,
}

/// Sets every call site of `nodes` to 0.
fn erase_call_sites(nodes: &mut [Node]) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                e.sig = 0;
                erase_call_sites(&mut e.children);
            }
            NodeKind::Loop(l) => erase_call_sites(&mut l.body),
        }
    }
}

/// `t` without call sites.
pub fn without_call_sites(t: &TraceFile) -> TraceFile {
    let mut t = t.clone();
    erase_call_sites(&mut t.trace.nodes);
    t
}

struct Walk {
    count: usize,
    max: usize,
    out: Vec<Difference>,
    /// The tolerance on summaries (a fraction), when either side has them.
    tol: Option<f64>,
    /// Exact parameter values compared.
    exact: usize,
    /// Approximate parts compared.
    approx: Vec<ApproxPart>,
    /// Differences that are approximate parts (outside the tolerance), of `count`.
    approx_outside: usize,
    /// The first of them.
    approx_diffs: Vec<Difference>,
}

/// A summary's statistics as a difference shows them.
fn summary_text(e: &Elastic) -> String {
    match one_summary(e) {
        Some(s) => format!(
            "~mean {:.1}, total {:.0}, {} calls",
            s.stats.mean,
            s.total(),
            s.stats.count
        ),
        None => e.to_string(),
    }
}

/// The summary of a value that is one summary over its ranks.
fn one_summary(e: &Elastic) -> Option<&Summary> {
    match e.groups.as_slice() {
        [
            Group {
                val: Val::Approx(s),
                ..
            },
        ] => Some(s),
        _ => None,
    }
}

impl Walk {
    /// Records a difference of an approximate part.
    fn push_approx(&mut self, d: Difference) {
        self.approx_outside += 1;
        if self.approx_diffs.len() < self.max {
            self.approx_diffs.push(d.clone());
        }
        self.push(d);
    }

    fn push(&mut self, d: Difference) {
        self.count += 1;
        if self.out.len() < self.max {
            self.out.push(d);
        }
    }

    /// Compares one parameter that is a summary on either side by its statistics.
    fn approx_part(
        &mut self,
        ev: &str,
        ranks: &rsd::RankSet,
        param: String,
        p: &Elastic,
        q: &Elastic,
        tol: f64,
    ) {
        let (Some(s), Some(t)) = (one_summary(p), one_summary(q)) else {
            // A summary facing exact values (that `complete` could not summarise).
            self.push_approx(Difference {
                event: ev.to_string(),
                ranks: ranks.to_string(),
                param,
                left: summary_text(p),
                right: summary_text(q),
            });
            return;
        };
        let (dm, dt) = (pct(s.stats.mean, t.stats.mean), pct(s.total(), t.total()));
        let limit = tol * 100.0 + 1e-9;
        let within = dm.abs() <= limit && dt.abs() <= limit;
        self.approx.push(ApproxPart {
            event: ev.to_string(),
            ranks: ranks.to_string(),
            param: param.clone(),
            mean: (s.stats.mean, t.stats.mean),
            mean_diff_pct: dm,
            total: (s.total(), t.total()),
            total_diff_pct: dt,
            count: (s.stats.count, t.stats.count),
            within,
        });
        if !within {
            self.push_approx(Difference {
                event: ev.to_string(),
                ranks: ranks.to_string(),
                param,
                left: summary_text(p),
                right: format!(
                    "{} (mean {dm:+.1}%, total {dt:+.1}%, beyond {:.0}%)",
                    summary_text(q),
                    tol * 100.0
                ),
            });
        }
    }

    fn nodes(&mut self, a: &[Node], b: &[Node]) {
        for i in 0..a.len().max(b.len()) {
            let (x, y) = (a.get(i), b.get(i));
            let (Some(x), Some(y)) = (x, y) else {
                let d = |n: Option<&Node>| n.map_or("(nothing)".into(), describe_node);
                self.push(Difference {
                    event: d(x.or(y)),
                    ranks: x.or(y).map_or(String::new(), |n| n.ranks.to_string()),
                    param: "structure".into(),
                    left: d(x),
                    right: d(y),
                });
                return;
            };
            if x.skey() != y.skey() {
                self.push(Difference {
                    event: describe_node(x),
                    ranks: x.ranks.to_string(),
                    param: "structure".into(),
                    left: describe_node(x),
                    right: describe_node(y),
                });
                // Alignment is lost after a structural difference.
                return;
            }
            let ev = describe_node(x);
            if x.ranks != y.ranks {
                self.push(Difference {
                    event: ev.clone(),
                    ranks: format!("{} / {}", x.ranks, y.ranks),
                    param: "ranks".into(),
                    left: x.ranks.to_string(),
                    right: y.ranks.to_string(),
                });
            }
            match (&x.kind, &y.kind) {
                (NodeKind::Event(e), NodeKind::Event(f)) => {
                    let (np, nf) = (e.params.len(), e.nfields());
                    for (k, (p, q)) in e.params.iter().zip(&f.params).enumerate() {
                        if let Some(tol) = self.tol
                            && (p.is_approx() || q.is_approx())
                        {
                            self.approx_part(&ev, &x.ranks, e.op.param_name(k, np, nf), p, q, tol);
                            continue;
                        }
                        self.exact += 1;
                        // A single group whose ranks differ only as the node's do is
                        // reported once, as the node's ranks.
                        let same_value = matches!((p.groups.as_slice(), q.groups.as_slice()),
                            ([g], [h]) if g.val == h.val && x.ranks != y.ranks);
                        if p != q && !same_value {
                            self.push(Difference {
                                event: ev.clone(),
                                ranks: x.ranks.to_string(),
                                param: e.op.param_name(k, np, nf),
                                left: p.to_string(),
                                right: q.to_string(),
                            });
                        }
                    }
                    self.nodes(&e.children, &f.children);
                }
                (NodeKind::Loop(l), NodeKind::Loop(m)) => {
                    if l.iters != m.iters {
                        self.push(Difference {
                            event: ev.clone(),
                            ranks: x.ranks.to_string(),
                            param: "loop count".into(),
                            left: l.iters.to_string(),
                            right: m.iters.to_string(),
                        });
                    }
                    self.nodes(&l.body, &m.body);
                }
                _ => unreachable!("equal structural keys imply equal kinds"),
            }
        }
    }
}

fn flat_difference(r: u32, i: usize, x: Option<&FlatEvent>, y: Option<&FlatEvent>) -> Difference {
    let name =
        |e: Option<&FlatEvent>| e.map_or("(no call)".to_string(), |e| e.op.name().to_string());
    let base = |param: &str, left: String, right: String| Difference {
        event: format!("call #{i} ({})", name(x.or(y))),
        ranks: r.to_string(),
        param: param.into(),
        left,
        right,
    };
    match (x, y) {
        (Some(x), Some(y)) => {
            if x.op != y.op || x.sig != y.sig {
                return base(
                    "call",
                    format!("{} (call site {:#x})", x.op.name(), x.sig),
                    format!("{} (call site {:#x})", y.op.name(), y.sig),
                );
            }
            if x.path != y.path {
                return base("path", format!("{:?}", x.path), format!("{:?}", y.path));
            }
            let n = x.params.len();
            for k in 0..n.max(y.params.len()) {
                let (p, q) = (x.params.get(k), y.params.get(k));
                if p != q {
                    let show = |v: Option<&i64>| v.map_or("-".into(), i64::to_string);
                    return base(&x.op.param_name(k, n, 0), show(p), show(q));
                }
            }
            base(
                "nested calls",
                format!("{:?}", x.children.len()),
                format!("{:?}", y.children.len()),
            )
        }
        _ => base("call", name(x), name(y)),
    }
}

/// Whether `x` and `y` are the same call with the same calls beneath, their call sites
/// aside where one is in `made` (a site an extrapolation made up for a call on a path of the
/// library no input took: an identity no trace predicts). Counts those in `standins`.
fn same_call(x: &FlatEvent, y: &FlatEvent, made: &HashSet<u64>, standins: &mut usize) -> bool {
    let sites = x.sig == y.sig || made.contains(&x.sig) || made.contains(&y.sig);
    let same = x.op == y.op
        && sites
        && x.path == y.path
        && x.params == y.params
        && x.children.len() == y.children.len()
        && x.children
            .iter()
            .zip(&y.children)
            .all(|(c, d)| same_call(c, d, made, standins));
    if same && x.sig != y.sig {
        *standins += 1;
    }
    same
}

/// Compares per rank; the first difference of each differing rank, up to `max`; and how many
/// calls differ in a made-up call site alone (`made`).
fn expansion(
    a: &TraceFile,
    b: &TraceFile,
    max: usize,
    made: &HashSet<u64>,
) -> (usize, Vec<Difference>, usize) {
    let mut count = 0;
    let mut out = Vec::new();
    let mut standins = 0;
    for r in 0..a.header.nranks {
        let (x, y) = (a.trace.expand(r), b.trace.expand(r));
        if x == y {
            continue;
        }
        let mut here = 0;
        if x.len() == y.len()
            && x.iter()
                .zip(&y)
                .all(|(p, q)| same_call(p, q, made, &mut here))
        {
            standins += here;
            continue;
        }
        count += 1;
        if out.len() < max {
            let i = (0..x.len().max(y.len()))
                .find(|&i| x.get(i) != y.get(i))
                .unwrap_or(0);
            out.push(flat_difference(r, i, x.get(i), y.get(i)));
        }
    }
    (count, out, standins)
}

fn pct(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (b - a) / a * 100.0
    }
}

fn timing_walk(
    a: &[Node],
    b: &[Node],
    out: &mut Vec<EventTiming>,
    totals: &mut (f64, f64),
    top: bool,
) {
    for (x, y) in a.iter().zip(b) {
        if x.skey() != y.skey() {
            return;
        }
        match (&x.kind, &y.kind) {
            (NodeKind::Event(e), NodeKind::Event(f)) => {
                if top {
                    totals.0 += e.timing.gap.total() + e.timing.dur.total();
                    totals.1 += f.timing.gap.total() + f.timing.dur.total();
                }
                out.push(EventTiming {
                    event: describe_node(x),
                    ranks: x.ranks.to_string(),
                    left_mean_ns: e.timing.dur.mean,
                    right_mean_ns: f.timing.dur.mean,
                    dur_diff_pct: pct(e.timing.dur.mean, f.timing.dur.mean),
                    gap_diff_pct: pct(e.timing.gap.mean, f.timing.gap.mean),
                    dur_interval: (
                        e.timing.interval.map(|i| i.dur),
                        f.timing.interval.map(|i| i.dur),
                    ),
                });
                // Nested calls are inside their parent's duration: not added to the total.
                timing_walk(&e.children, &f.children, out, totals, false);
            }
            (NodeKind::Loop(l), NodeKind::Loop(m)) => {
                timing_walk(&l.body, &m.body, out, totals, top)
            }
            _ => return,
        }
    }
}

/// A parameter by call: op, call site, parameter index.
type ParamKey = (rsd::Op, u64, usize);

/// Calls and the sum of their values, per parameter.
type Totals = BTreeMap<ParamKey, (u64, f64)>;

/// The summarised parameters of `nodes`, with their calls and sum (mean times count).
fn summarised(nodes: &[Node], out: &mut Totals) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                for (i, p) in e.params.iter().enumerate() {
                    for g in &p.groups {
                        if let Val::Approx(s) = &g.val {
                            let t = out.entry((e.op, e.sig, i)).or_insert((0, 0.0));
                            t.0 += s.stats.count;
                            t.1 += s.total();
                        }
                    }
                }
                summarised(&e.children, out);
            }
            NodeKind::Loop(l) => summarised(&l.body, out),
        }
    }
}

/// Every parameter of `keys` in `nodes` replaced by 0 over its ranks: the per-rank
/// expansion compares exact values only (the summarised parameters, on either side, are
/// compared by their statistics).
fn erase_params(nodes: &mut [Node], keys: &Totals) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                for (i, p) in e.params.iter_mut().enumerate() {
                    if keys.contains_key(&(e.op, e.sig, i)) {
                        for g in &mut p.groups {
                            g.val = Val::Const(RankFn::Const(0));
                        }
                    }
                }
                erase_params(&mut e.children, keys);
            }
            NodeKind::Loop(l) => erase_params(&mut l.body, keys),
        }
    }
}

/// The calls and sum of every parameter of `keys` in the exact calls of every rank of `t`.
fn exact_totals(t: &TraceFile, keys: &Totals) -> Totals {
    fn add(events: &[FlatEvent], keys: &Totals, out: &mut Totals) {
        for e in events {
            for (i, v) in e.params.iter().enumerate() {
                if keys.contains_key(&(e.op, e.sig, i)) {
                    let x = out.entry((e.op, e.sig, i)).or_insert((0, 0.0));
                    x.0 += 1;
                    x.1 += *v as f64;
                }
            }
            add(&e.children, keys, out);
        }
    }
    let mut out = Totals::new();
    for r in 0..t.header.nranks {
        add(&t.trace.expand(r), keys, &mut out);
    }
    out
}

/// The summarised parameters of either side compared by their statistics over every rank
/// (their calls, means and totals), where the two traces encode their calls differently
/// and the walk could not align them: a summary on one side, the exact values on the
/// other, or summaries on both.
fn approx_by_param(a: &TraceFile, b: &TraceFile, keys: &Totals, tol: f64) -> Vec<ApproxPart> {
    let side = |t: &TraceFile| {
        let mut s = Totals::new();
        summarised(&t.trace.nodes, &mut s);
        let rest: Totals = keys
            .iter()
            .filter(|(k, _)| !s.contains_key(k))
            .map(|(k, v)| (*k, *v))
            .collect();
        s.extend(exact_totals(t, &rest));
        s
    };
    let (sa, sb) = (side(a), side(b));
    let limit = tol * 100.0 + 1e-9;
    keys.keys()
        .map(|k| {
            let (ca, ta) = sa.get(k).copied().unwrap_or((0, 0.0));
            let (cb, tb) = sb.get(k).copied().unwrap_or((0, 0.0));
            let mean = |c: u64, t: f64| if c == 0 { 0.0 } else { t / c as f64 };
            let (ma, mb) = (mean(ca, ta), mean(cb, tb));
            let (dm, dt) = (pct(ma, mb), pct(ta, tb));
            ApproxPart {
                event: format!("{} (call site {:#x})", k.0.name(), k.1),
                ranks: "all".into(),
                param: k.0.param_name(k.2, k.2 + 1, 0),
                mean: (ma, mb),
                mean_diff_pct: dm,
                total: (ta, tb),
                total_diff_pct: dt,
                count: (ca, cb),
                within: ca == cb && dm.abs() <= limit && dt.abs() <= limit,
            }
        })
        .collect()
}

/// The (op, call site) of every call in `nodes` (nested calls too) with a value the other
/// ranks' calls decide ([`rsd::Val::Exscan`], [`rsd::Val::FileEnd`]).
fn model_sites(nodes: &[Node]) -> BTreeSet<(rsd::Op, u64)> {
    fn walk(nodes: &[Node], out: &mut BTreeSet<(rsd::Op, u64)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    if e.params.iter().any(|p| p.is_exscan() || p.is_file_end()) {
                        out.insert((e.op, e.sig));
                    }
                    walk(&e.children, out);
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(nodes, &mut out);
    out
}

/// `v` without loop depth `d` (a loop that runs once: its index is always 0).
fn without_depth(v: &Val<RankFn>, d: usize) -> Val<RankFn> {
    match v {
        Val::Lin { base, strides } => {
            let mut strides = strides.clone();
            if d < strides.len() {
                strides.remove(d);
            }
            Val::Lin {
                base: *base,
                strides,
            }
        }
        Val::Seq(xs) | Val::Cycle(xs) if d == 0 => {
            xs.first().cloned().unwrap_or(Val::Const(RankFn::Const(0)))
        }
        Val::Seq(xs) => Val::Seq(xs.iter().map(|x| without_depth(x, d - 1)).collect()),
        Val::Cycle(xs) => Val::Cycle(xs.iter().map(|x| without_depth(x, d - 1)).collect()),
        Val::Exscan(x) => {
            let mut x = x.clone();
            x.start = without_depth(&x.start, d);
            Val::Exscan(x)
        }
        Val::FileEnd(x) => {
            let mut x = x.clone();
            x.start = without_depth(&x.start, d);
            Val::FileEnd(x)
        }
        Val::Const(_) | Val::Approx(_) | Val::Run(_) => v.clone(),
    }
}

/// Every value in `nodes` (nested calls and inner loops included) without loop depth `d`.
fn drop_depth(nodes: &mut [Node], d: usize) {
    let drop = |e: &mut Elastic| {
        for g in &mut e.groups {
            g.val = without_depth(&g.val, d);
        }
    };
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                e.params.iter_mut().for_each(drop);
                drop_depth(&mut e.children, d);
            }
            NodeKind::Loop(l) => {
                drop(&mut l.iters);
                drop_depth(&mut l.body, d);
            }
        }
    }
}

/// `nodes` (at loop depth `depth`) with every loop that runs once on each of its ranks
/// replaced by its body: the same calls. An extrapolation's derived nested calls of a
/// collective call come out as `loop x1 { pwrite }` where a real run records the `pwrite`,
/// and the loops around them would no longer line up.
fn splice_unit_loops(nodes: &mut Vec<Node>, depth: usize) {
    let once = |l: &rsd::trace::Loop| {
        l.iters
            .groups
            .iter()
            .all(|g| g.val == Val::Const(RankFn::Const(1)))
    };
    let mut out = Vec::with_capacity(nodes.len());
    for mut n in std::mem::take(nodes) {
        match &mut n.kind {
            NodeKind::Loop(l) if once(l) => {
                let mut body = std::mem::take(&mut l.body);
                drop_depth(&mut body, depth);
                splice_unit_loops(&mut body, depth);
                out.extend(body);
            }
            NodeKind::Loop(l) => {
                splice_unit_loops(&mut l.body, depth + 1);
                out.push(n);
            }
            NodeKind::Event(e) => {
                splice_unit_loops(&mut e.children, depth);
                out.push(n);
            }
        }
    }
    *nodes = out;
}

/// The two sides of a comparison, each as given or as a step made it comparable.
type Pair<'t> = (Cow<'t, TraceFile>, Cow<'t, TraceFile>);

/// `f` applied to both sides, where it changes them: `f` changes a copy and says whether it
/// changed anything (the sides are kept as they were where neither changed).
fn both<'t>(p: Pair<'t>, f: impl Fn(&mut TraceFile) -> bool) -> Pair<'t> {
    let (mut x, mut y) = (p.0.as_ref().clone(), p.1.as_ref().clone());
    if f(&mut x) | f(&mut y) {
        (Cow::Owned(x), Cow::Owned(y))
    } else {
        p
    }
}

/// Containers (HDF5 calls) on either side compared lifted, as extrapolation writes them:
/// each followed by the calls it made.
fn lifted<'t>(p: Pair<'t>) -> Pair<'t> {
    if !p.0.trace.has_containers() && !p.1.trace.has_containers() {
        return p;
    }
    (
        Cow::Owned(crate::containers::lifted_file(&p.0)),
        Cow::Owned(crate::containers::lifted_file(&p.1)),
    )
}

/// Local queries an extrapolation set aside (`aside`, from either side's provenance) left out
/// on both sides: the real run's calls of them follow its data. Where re-compressing fails,
/// the sides are compared whole, where the calls set aside show.
fn without_set_aside<'t>(p: Pair<'t>, aside: &BTreeSet<rsd::Op>) -> (Pair<'t>, Option<SetAside>) {
    if aside.is_empty() {
        return (p, None);
    }
    let in_place = crate::ranks::any_summary([p.0.as_ref(), p.1.as_ref()]);
    let left = crate::local::without(None, &p.0, aside, in_place);
    let right = crate::local::without(None, &p.1, aside, in_place);
    match (left, right) {
        (Ok((x, ca)), Ok((y, cb))) => {
            let said = SetAside {
                ops: aside.iter().map(|o| o.name()).collect(),
                calls: (ca, cb),
                unpredicted: Vec::new(),
            };
            ((Cow::Owned(x), Cow::Owned(y)), Some(said))
        }
        _ => (p, None),
    }
}

/// Numbers that belong to the run (OMPIO's lock-file name, or what an extrapolation holds as
/// run values) compared as run values: equal as such, whatever each run drew; how many each
/// side holds, where either holds any.
fn run_values_alike<'t>(p: Pair<'t>) -> (Pair<'t>, Option<(usize, usize)>) {
    let (mut x, mut y) = (p.0.as_ref().clone(), p.1.as_ref().clone());
    let n = crate::runvalues::alike(&mut x, &mut y);
    if n == (0, 0) {
        (p, None)
    } else {
        ((Cow::Owned(x), Cow::Owned(y)), Some(n))
    }
}

/// The sizes set ahead of a dump ([`rsd::layout`]: `MPI_File_set_size` before writes at the
/// end of the file) recognised on both sides where the writes hold the model: an
/// extrapolation's inputs get them in extrap where the tracer left a value (a trace of an
/// earlier tracer, or a call the tracer's search did not take), and a model facing a value
/// would resolve both sides, comparing sizes from summaries as exact values.
fn sizes_at_the_end<'t>(p: Pair<'t>) -> Pair<'t> {
    let (mut x, mut y) = (p.0.as_ref().clone(), p.1.as_ref().clone());
    let a = rsd::prefix::recognise(&mut x.trace)
        .iter()
        .any(|r| rsd::layout::sets_size(r.op));
    let b = rsd::prefix::recognise(&mut y.trace)
        .iter()
        .any(|r| rsd::layout::sets_size(r.op));
    if a || b {
        (Cow::Owned(x), Cow::Owned(y))
    } else {
        p
    }
}

/// Values that are the prefix sum of another call's size (h5py's hyperslab displacements: an
/// extrapolation holds the model, a real run each rank's values) compared as that model where
/// both sides hold it: the sizes it sums are compared on their own (as summaries when they
/// are approximate).
fn other_call_sums<'t>(p: Pair<'t>) -> Pair<'t> {
    let (mut x, mut y) = (p.0.as_ref().clone(), p.1.as_ref().clone());
    let n = crate::prefix::other_calls_alike(&mut [&mut x.trace, &mut y.trace]);
    if n.iter().any(|&k| k > 0) {
        (Cow::Owned(x), Cow::Owned(y))
    } else {
        p
    }
}

/// An offset one side holds as a model the other ranks' calls decide (a prefix sum over the
/// ranks, the end of the file so far) and the other as each rank's values (an extrapolation
/// keeps the model where the real run's tracer did not take it, or the reverse) is the same
/// offset: both sides resolved. Where both hold the same models, they are compared as models
/// (their starts, and the sizes they sum on their own).
fn resolved_where_models_differ<'t>(p: Pair<'t>) -> Pair<'t> {
    if p.0.header.nranks != p.1.header.nranks
        || model_sites(&p.0.trace.nodes) == model_sites(&p.1.trace.nodes)
    {
        return p;
    }
    let resolve = |t: &TraceFile| TraceFile {
        header: t.header.clone(),
        trace: t.trace.resolved().into_trace(),
    };
    (Cow::Owned(resolve(&p.0)), Cow::Owned(resolve(&p.1)))
}

/// A parameter summarised on one side summarised on the other; with summaries on either side
/// (`approx`), loops that run once are their bodies on both sides first (the nested calls
/// derived from summarised sizes at an extrapolation's target), and the nested calls of
/// summarised calls are approximate on both after.
fn summaries_alike<'t>(p: Pair<'t>, approx: bool) -> Pair<'t> {
    let p = if approx {
        both(p, |t| {
            splice_unit_loops(&mut t.trace.nodes, 0);
            true
        })
    } else {
        p
    };
    let p = match crate::approx::complete(&[&p.0.trace, &p.1.trace]) {
        Some(mut t) => {
            let tb = t.pop().expect("two traces");
            let ta = t.pop().expect("two traces");
            let with = |f: &TraceFile, trace| TraceFile {
                header: f.header.clone(),
                trace,
            };
            (Cow::Owned(with(&p.0, ta)), Cow::Owned(with(&p.1, tb)))
        }
        None => p,
    };
    if !approx {
        return p;
    }
    both(p, |t| {
        !crate::approx::nested_of_summaries(&mut t.trace).is_empty()
    })
}

/// What [`comparable`] found on the way: the local queries set aside, the run values each
/// side holds, whether either side holds summaries.
struct Found {
    set_aside: Option<SetAside>,
    run_values: Option<(usize, usize)>,
    approx: bool,
}

/// `a` and `b` made comparable call by call, as `opts` asks, with the local queries `aside`
/// left out.
fn comparable<'t>(
    a: &'t TraceFile,
    b: &'t TraceFile,
    opts: &DiffOptions,
    aside: &BTreeSet<rsd::Op>,
) -> (Pair<'t>, Found) {
    let p = lifted((Cow::Borrowed(a), Cow::Borrowed(b)));
    let (mut p, set_aside) = without_set_aside(p, aside);
    if opts.ignore_call_sites {
        p = (
            Cow::Owned(without_call_sites(&p.0)),
            Cow::Owned(without_call_sites(&p.1)),
        );
    }
    let (p, run_values) = run_values_alike(p);
    let p = resolved_where_models_differ(other_call_sums(sizes_at_the_end(p)));
    let approx = rsd::approx::count(&p.0.trace) + rsd::approx::count(&p.1.trace) > 0;
    let found = Found {
        set_aside,
        run_values,
        approx,
    };
    (summaries_alike(p, approx), found)
}

/// Compares `a` and `b`.
///
/// Where either side is an extrapolation and the sides still differ, the local queries whose
/// counts differ between them are set aside too, if that leaves fewer differences: an
/// extrapolation cannot predict a query the clock decides (Meep's progress line asks
/// `MPI_Comm_rank` once four seconds have passed), and a local query sends nothing and
/// touches no file. The report names them apart from those the extrapolation set aside.
pub fn diff(a: &TraceFile, b: &TraceFile, opts: &DiffOptions) -> DiffReport {
    let (pa, pb) = (
        crate::provenance::of(&a.header),
        crate::provenance::of(&b.header),
    );
    let extrapolated = pa.is_some() || pb.is_some();
    let (pa, pb) = (pa.unwrap_or_default(), pb.unwrap_or_default());
    let aside: BTreeSet<rsd::Op> = (pa.set_aside.iter().chain(&pb.set_aside))
        .copied()
        .collect();
    let made: HashSet<u64> = (pa.made_up_sites.iter().chain(&pb.made_up_sites))
        .copied()
        .collect();
    let report = diff_without(a, b, opts, &aside, &made);
    if report.identical || !extrapolated {
        return report;
    }
    let unpredicted: BTreeSet<rsd::Op> = local_counts_differing(a, b)
        .difference(&aside)
        .copied()
        .collect();
    if unpredicted.is_empty() {
        return report;
    }
    let all = aside.union(&unpredicted).copied().collect();
    let mut fewer = diff_without(a, b, opts, &all, &made);
    if fewer.count >= report.count && !fewer.identical {
        return report;
    }
    if let Some(s) = fewer.set_aside.as_mut() {
        s.unpredicted = unpredicted.iter().map(|o| o.name()).collect();
    }
    fewer
}

/// The local queries whose calls (over every rank) differ in number between `a` and `b`.
fn local_counts_differing(a: &TraceFile, b: &TraceFile) -> BTreeSet<rsd::Op> {
    let mut ops = BTreeSet::new();
    for n in a.trace.nodes.iter().chain(&b.trace.nodes) {
        crate::consistent::ops_in(n, &rsd::Op::is_local_query, &mut ops);
    }
    let calls = |t: &TraceFile, op: rsd::Op| {
        crate::local::without(None, t, &BTreeSet::from([op]), true).map(|(_, n)| n)
    };
    ops.retain(|&op| calls(a, op) != calls(b, op));
    ops
}

/// [`diff`] with the local queries `aside` left out on both sides; `made`: the call sites an
/// extrapolation made up.
fn diff_without(
    a: &TraceFile,
    b: &TraceFile,
    opts: &DiffOptions,
    aside: &BTreeSet<rsd::Op>,
    made: &HashSet<u64>,
) -> DiffReport {
    let ((a, b), found) = comparable(a, b, opts, aside);
    let (a, b) = (a.as_ref(), b.as_ref());
    let tol = found
        .approx
        .then(|| opts.tolerance.unwrap_or(DEFAULT_TOLERANCE));
    let (mut report, approx_diffs) = by_structure(a, b, opts, tol, found);
    let small = a.header.nranks <= opts.expand_limit && b.header.nranks <= opts.expand_limit;
    // Only exact differences can be encodings of the same calls.
    let outside = report.approx.as_ref().map_or(0, |r| r.outside);
    if report.count > outside && small && a.header.nranks == b.header.nranks {
        by_expansion(&mut report, (a, b), opts, tol, made, approx_diffs);
    }
    if opts.timing {
        report.timing = Some(timing_report(a, b));
    }
    report
}

/// The walk of both sides' compressed structure: the report, and the differences of
/// summarised parameters beyond the tolerance `tol`.
fn by_structure(
    a: &TraceFile,
    b: &TraceFile,
    opts: &DiffOptions,
    tol: Option<f64>,
    found: Found,
) -> (DiffReport, Vec<Difference>) {
    let mut w = Walk {
        count: 0,
        max: opts.max_shown,
        out: Vec::new(),
        tol,
        exact: 0,
        approx: Vec::new(),
        approx_outside: 0,
        approx_diffs: Vec::new(),
    };
    if a.header.nranks != b.header.nranks {
        w.push(Difference {
            event: "header".into(),
            ranks: String::new(),
            param: "nranks".into(),
            left: a.header.nranks.to_string(),
            right: b.header.nranks.to_string(),
        });
    }
    w.nodes(&a.trace.nodes, &b.trace.nodes);
    let outside = w.approx_outside;
    let approx_diffs = std::mem::take(&mut w.approx_diffs);
    let report = DiffReport {
        identical: w.count == 0,
        method: "structure",
        count: w.count,
        differences: w.out,
        note: None,
        timing: None,
        origin: a.header.origin_differs(&b.header),
        ignore_call_sites: opts.ignore_call_sites,
        approx: tol.map(|t| ApproxReport {
            tolerance_pct: t * 100.0,
            exact_compared: w.exact,
            parts: w.approx,
            outside,
        }),
        set_aside: found.set_aside,
        run_values: found.run_values,
    };
    (report, approx_diffs)
}

/// Where the structure differs, each rank's calls compared (summaries erased, as compared
/// above; offsets held as prefix sums of sizes computed; the call sites an extrapolation made
/// up, `made`, left out): the same calls encoded differently are identical.
fn by_expansion(
    report: &mut DiffReport,
    (a, b): (&TraceFile, &TraceFile),
    opts: &DiffOptions,
    tol: Option<f64>,
    made: &HashSet<u64>,
    mut approx_diffs: Vec<Difference>,
) {
    let mut keys = Totals::new();
    summarised(&a.trace.nodes, &mut keys);
    summarised(&b.trace.nodes, &mut keys);
    let sides = (Cow::Borrowed(a), Cow::Borrowed(b));
    let erased = if tol.is_some() {
        both(sides, |t| {
            erase_params(&mut t.trace.nodes, &keys);
            true
        })
    } else {
        sides
    };
    let (ea, eb) = (
        crate::prefix::resolved(&erased.0),
        crate::prefix::resolved(&erased.1),
    );
    let (n, first, standins) = expansion(&ea, &eb, opts.max_shown, made);
    let mut outside = report.approx.as_ref().map_or(0, |r| r.outside);
    let places = report.count - outside;
    if n > 0 {
        report.note = Some(format!("{n} of {} ranks call differently", a.header.nranks));
        // The walk's differences name the parameter across a rank set, which reads
        // better; the per-rank ones confirm them. Half the room for each.
        let keep = opts.max_shown - first.len().min(opts.max_shown / 2);
        report.differences.truncate(keep);
        report.differences.extend(first);
        report.differences.truncate(opts.max_shown);
        return;
    }
    // The summarised parameters the walk lost with the alignment, compared over every rank
    // instead.
    if let (Some(t), Some(r)) = (tol, report.approx.as_mut())
        && r.parts.is_empty()
        && !keys.is_empty()
    {
        r.parts = approx_by_param(a, b, &keys, t);
        for p in r.parts.iter().filter(|p| !p.within) {
            outside += 1;
            approx_diffs.push(outside_tolerance(p, t));
        }
        r.outside = outside;
    }
    let made_up = if standins > 0 {
        format!(
            "; {standins} nested calls have a call site the extrapolation made up (a path of \
             the library no input took, said in its notes), compared without it"
        )
    } else {
        String::new()
    };
    report.note = Some(format!(
        "the traces encode their calls differently ({places} places) but every rank's calls \
         and {}parameters are identical{made_up}",
        if tol.is_some() { "exact " } else { "" }
    ));
    report.identical = outside == 0;
    report.method = "expansion";
    report.count = outside;
    // What is left are the approximate parts outside the tolerance.
    report.differences = approx_diffs;
}

/// A summarised parameter whose statistics differ beyond the tolerance `t`, as a difference.
fn outside_tolerance(p: &ApproxPart, t: f64) -> Difference {
    Difference {
        event: p.event.clone(),
        ranks: p.ranks.clone(),
        param: p.param.clone(),
        left: format!("mean {:.1} over {} calls", p.mean.0, p.count.0),
        right: format!(
            "mean {:.1} over {} calls (mean {:+.1}%, total {:+.1}%, beyond {:.0}%)",
            p.mean.1,
            p.count.1,
            p.mean_diff_pct,
            p.total_diff_pct,
            t * 100.0
        ),
    }
}

/// Both sides' times, call by call and in all.
fn timing_report(a: &TraceFile, b: &TraceFile) -> TimingReport {
    let mut events = Vec::new();
    let mut totals = (0.0, 0.0);
    timing_walk(
        &a.trace.nodes,
        &b.trace.nodes,
        &mut events,
        &mut totals,
        true,
    );
    let (wa, wb) = (a.header.wall_ns, b.header.wall_ns);
    TimingReport {
        events,
        wall_ns: (wa, wb),
        wall_diff_pct: (wa > 0 && wb > 0).then(|| pct(wa as f64, wb as f64)),
        wall_interval: (
            a.header.prediction.as_ref().map(|p| p.wall.interval),
            b.header.prediction.as_ref().map(|p| p.wall.interval),
        ),
        total_ns: totals,
        total_diff_pct: pct(totals.0, totals.1),
    }
}

/// The report as text, as `iotrex diff` prints it.
pub fn render(r: &DiffReport, left: &str, right: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if let (true, Some(a)) = (r.identical, &r.approx) {
        let _ = writeln!(
            s,
            "identical within tolerance: {left} and {right} record the same calls; exact parts \
             identical ({} exact values), {} approximate parts within {:.0}% (means and totals)",
            a.exact_compared,
            a.parts.len(),
            a.tolerance_pct
        );
    } else if r.identical {
        let _ = writeln!(
            s,
            "identical: {left} and {right} record the same calls and parameters"
        );
    } else {
        let _ = writeln!(
            s,
            "different: {} difference(s) between {left} and {right}",
            r.count.max(r.differences.len())
        );
        for d in &r.differences {
            let _ = writeln!(s, "  {}  ranks {}  {}:", d.event, d.ranks, d.param);
            let _ = writeln!(s, "    < {}", d.left);
            let _ = writeln!(s, "    > {}", d.right);
        }
    }
    if let Some((x, y)) = r.run_values {
        let _ = writeln!(
            s,
            "run values: {x} and {y} compared as run values (numbers that belong to the run, \
             equal as such)"
        );
    }
    if let Some(a) = &r.approx {
        if !r.identical {
            let _ = writeln!(
                s,
                "exact parts: {} values compared; approximate parts: {} compared, {} outside \
                 {:.0}%",
                a.exact_compared,
                a.parts.len(),
                a.outside,
                a.tolerance_pct
            );
        }
        const SHOWN: usize = 20;
        for p in a.parts.iter().take(SHOWN) {
            let _ = writeln!(
                s,
                "  ~ {}  ranks {}  {}: mean {:.1} -> {:.1} ({:+.1}%), total {:.0} -> {:.0} \
                 ({:+.1}%), {} -> {} calls  {}",
                p.event,
                p.ranks,
                p.param,
                p.mean.0,
                p.mean.1,
                p.mean_diff_pct,
                p.total.0,
                p.total.1,
                p.total_diff_pct,
                p.count.0,
                p.count.1,
                if p.within { "within" } else { "OUTSIDE" }
            );
        }
        if a.parts.len() > SHOWN {
            let _ = writeln!(
                s,
                "  ... and {} more approximate parts (--json lists every one)",
                a.parts.len() - SHOWN
            );
        }
    }
    if let Some(n) = &r.note {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(a) = &r.set_aside {
        let _ = writeln!(
            s,
            "set aside on both sides (an extrapolation's notes say their counts follow the \
             data or what a directory held): {} ({} calls in {left}, {} in {right})",
            a.ops.join(", "),
            a.calls.0,
            a.calls.1
        );
        if !a.unpredicted.is_empty() {
            let _ = writeln!(
                s,
                "  of which no extrapolation set aside {}: local queries (they send nothing and \
                 touch no file) whose counts differ between the sides, as where the clock \
                 decides them, which an extrapolation cannot predict",
                a.unpredicted.join(", ")
            );
        }
    }
    if let Some(o) = &r.origin {
        if r.ignore_call_sites {
            let _ = writeln!(s, "note: {o} (call sites were not compared)");
        } else if r.identical {
            let _ = writeln!(s, "note: {o}; their call sites agree");
        } else {
            let _ = writeln!(
                s,
                "note: {o}: their call sites differ where their calls do not; compare the calls \
                 alone with --ignore-call-sites"
            );
        }
    }
    if let Some(t) = &r.timing {
        let _ = writeln!(s, "timing (mean duration left -> right, difference):");
        for e in &t.events {
            let _ = writeln!(
                s,
                "  {:<60} {:>10} -> {:>10}  {:+.1}%  (gap {:+.1}%){}",
                format!("{} [{}]", e.event, e.ranks),
                rsd::timing::fmt_ns(e.left_mean_ns),
                rsd::timing::fmt_ns(e.right_mean_ns),
                e.dur_diff_pct,
                e.gap_diff_pct,
                interval_text(e.dur_interval, e.left_mean_ns, e.right_mean_ns)
            );
        }
        let _ = writeln!(
            s,
            "  total call+gap time: {} -> {}  {:+.1}%",
            rsd::timing::fmt_ns(t.total_ns.0),
            rsd::timing::fmt_ns(t.total_ns.1),
            t.total_diff_pct
        );
        match t.wall_diff_pct {
            Some(p) => {
                let _ = writeln!(
                    s,
                    "  wall time: {} -> {}  {p:+.1}%{}",
                    rsd::timing::fmt_ns(t.wall_ns.0 as f64),
                    rsd::timing::fmt_ns(t.wall_ns.1 as f64),
                    interval_text(t.wall_interval, t.wall_ns.0 as f64, t.wall_ns.1 as f64)
                );
            }
            None => {
                let _ = writeln!(s, "  wall time: not recorded in both traces");
            }
        }
    }
    s
}

/// `  predicted [lo, hi], the other side inside` for a side that is extrapolated.
fn interval_text(iv: (Option<Interval>, Option<Interval>), left: f64, right: f64) -> String {
    let one = |i: Interval, other: f64, side: &str| {
        format!(
            "  {side} predicted {i}, the other {}",
            if i.contains(other) {
                "inside"
            } else {
                "OUTSIDE"
            }
        )
    };
    match iv {
        (Some(i), _) => one(i, right, "left"),
        (None, Some(i)) => one(i, left, "right"),
        (None, None) => String::new(),
    }
}
