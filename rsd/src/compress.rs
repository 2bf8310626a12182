//! Online intra-rank compression: folds one rank's calls into nested loops as they arrive.
//!
//! After each call the compressor looks at the tail of its node list (at most
//! [`Compressor::window`] nodes back) for two things, greedily, as ScalaTrace's online loop
//! detection does: the tail completing one more iteration of a loop just before it, and the tail
//! repeating the nodes just before it (which becomes a new loop of two iterations). Folding can
//! cascade, which is how nested loops (PRSDs) form. Values that differ between iterations
//! become elastic [`Val`]s; nothing is dropped, so memory is bounded by the compressed size and
//! irregular streams simply stay long.

use crate::op::{Layer, Op, Param};
use crate::path::PathTemplate;
use crate::ranks::RankSet;
use crate::timing::{BINS, GapWaits, Stats, Timing, bin_of};
use crate::trace::{Event, Loop, Node, NodeKind, RawEvent, Trace, event_skey, loop_skey};
use crate::value::{Elastic, Val};

mod cursor;

/// Default look-back window, in nodes: the largest loop body (after inner folding) detected.
pub const DEFAULT_WINDOW: usize = 64;

#[derive(Debug, Clone)]
struct CEvent {
    op: Op,
    sig: u64,
    path: Option<PathTemplate>,
    params: Vec<Val<i64>>,
    timing: Acc,
    /// Off-CPU time measured in the gaps of the calls folded in (zero where none was).
    waits: GapWaits,
    children: Vec<CNode>,
}

/// Timing of a node under construction. A fresh call has one sample and stays 16 bytes, so
/// pushing it and moving it around is cheap; the sums are allocated only once the node absorbs
/// a second sample.
#[derive(Debug, Clone)]
enum Acc {
    One { gap: u64, dur: u64 },
    Many(Box<[Sums; 2]>),
}

/// One timed quantity's samples on one rank, kept as exact integer sums: adding a sample is a
/// few additions (no division, unlike Welford's update, which was a third of a traced call's
/// cost), and merging is exact and associative, so the statistics do not depend on the order
/// in which the compressor folds iterations together (a call absorbed by the fast path and the
/// same call folded in with its loop give the same bits). Turned into [`Stats`] (mean and
/// squared deviations) once, when the trace is taken.
#[derive(Debug, Clone)]
struct Sums {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Sum of squares, saturated: 2^128 ns^2 is 2^64 samples of 2^32 ns, or 2^28 of 13 days.
    squares: u128,
    bins: [u64; BINS],
}

impl Sums {
    fn one(ns: u64) -> Sums {
        let mut s = Sums {
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            squares: 0,
            bins: [0; BINS],
        };
        s.add(ns);
        s
    }

    #[inline(always)]
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let x = ns as u128;
        self.sum += x;
        self.squares = self.squares.saturating_add(x * x);
        self.bins[bin_of(ns)] += 1;
    }

    fn merge(&mut self, o: &Sums) {
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.squares = self.squares.saturating_add(o.squares);
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            *a += b;
        }
    }

    /// The statistics of the samples, every one of them seen on `rank`.
    fn stats(&self, rank: u32) -> Stats {
        let n = self.count as u128;
        // m2 = squares - sum^2 / n, with sum = q*n + r: squares - sum*q - sum*r/n, the first
        // difference exact in integers (it is m2 rounded down, so never negative).
        let q = self.sum / n;
        let r = self.sum % n;
        let m2 = match (self.sum.checked_mul(q), self.sum.checked_mul(r)) {
            (Some(sq), Some(sr)) if sq <= self.squares => {
                (self.squares - sq) as f64 - sr as f64 / n as f64
            }
            // Beyond 128 bits (or a saturated sum of squares): in floating point.
            _ => {
                let mean = self.sum as f64 / n as f64;
                (self.squares as f64 - self.sum as f64 * mean).max(0.0)
            }
        };
        Stats {
            count: self.count,
            min: self.min,
            max: self.max,
            min_rank: rank,
            max_rank: rank,
            mean: self.sum as f64 / n as f64,
            m2: m2.max(0.0),
            bins: self.bins,
        }
    }
}

impl Acc {
    fn make_many(&mut self) -> &mut [Sums; 2] {
        if let Acc::One { gap, dur } = *self {
            *self = Acc::Many(Box::new([Sums::one(gap), Sums::one(dur)]));
        }
        match self {
            Acc::Many(t) => t,
            Acc::One { .. } => unreachable!("converted above"),
        }
    }

    /// Adds one call's gap and duration.
    #[inline(always)]
    fn add(&mut self, gap: u64, dur: u64) {
        let t = match self {
            Acc::Many(t) => t,
            one => one.make_many(),
        };
        t[0].add(gap);
        t[1].add(dur);
    }

    fn absorb(&mut self, other: Acc) {
        match other {
            Acc::One { gap, dur } => self.add(gap, dur),
            Acc::Many(o) => {
                let t = self.make_many();
                t[0].merge(&o[0]);
                t[1].merge(&o[1]);
            }
        }
    }

    fn timing(&self, rank: u32) -> Timing {
        match self {
            Acc::One { gap, dur } => Timing {
                gap: Stats::one(*gap, rank),
                dur: Stats::one(*dur, rank),
                interval: None,
                waits: None,
            },
            Acc::Many(t) => Timing {
                gap: t[0].stats(rank),
                dur: t[1].stats(rank),
                interval: None,
                waits: None,
            },
        }
    }
}

#[derive(Debug, Clone)]
struct CLoop {
    iters: Val<i64>,
    body: Vec<CNode>,
}

#[derive(Debug, Clone)]
enum CKind {
    Event(CEvent),
    Loop(CLoop),
}

#[derive(Debug, Clone)]
struct CNode {
    skey: u64,
    kind: CKind,
}

impl CNode {
    /// An empty node that owns no allocation, left behind while a node is moved out of a list.
    const PLACEHOLDER: CNode = CNode {
        skey: 0,
        kind: CKind::Loop(CLoop {
            iters: Val::Const(0),
            body: Vec::new(),
        }),
    };
}

/// How many emptied parameter vectors a compressor keeps for reuse.
const SPARE_MAX: usize = 256;

/// Compresses one rank's calls online.
#[derive(Debug, Clone)]
pub struct Compressor {
    rank: u32,
    window: usize,
    items: Vec<CNode>,
    /// Per item: structural key and, for loops, the body length (0 for events). Kept apart from
    /// `items` so the tail scans touch a few cache lines.
    meta: Vec<(u64, usize)>,
    events: u64,
    /// Emptied parameter vectors, reused by the next calls.
    spare: Vec<Vec<Val<i64>>>,
    /// The call that continues the innermost loop ending the list, if predictable: worked out
    /// for the list as it is now ([`Next::valid`]; every change to the list but the fast
    /// path's clears it).
    next: Next,
    /// Whether the list ends with a loop that the next call with children may extend in
    /// place ([`Compressor::push_nested_fast`]): worked out for the list as it is now, and
    /// cleared by every change to the list but that fast path's.
    nested: bool,
    /// The count of that loop at which the general folding may fold it into an earlier
    /// node (an outer loop, or an earlier loop of the same calls): the fast path stops short
    /// of it ([`Compressor::fold_count`]).
    nested_stop: i64,
    /// The prediction through the body of a loop with a longer body ([`cursor`]).
    cursor: cursor::Cursor,
    /// Whether drains of `MPI_Waitsome` calls become one call ([`Drain`]).
    coalesce: bool,
    /// The `MPI_Waitsome` calls held back while they may still complete a drain.
    drain: Option<Drain>,
    /// Drains coalesced so far.
    drains: u64,
    /// The off-CPU time in the gap of the call being pushed by [`Compressor::push_waited`],
    /// taken by the event it lands in.
    pending: GapWaits,
    /// The run's own ids: a path field equal to one is recorded as that run value's marker
    /// ([`crate::runvalue::RunIds::kind`]); `None` matches nothing.
    run_ids: Option<crate::runvalue::RunIds>,
}

/// The next iteration of a loop whose body is a single call, predicted: the tracer's steady
/// state (a loop around one I/O call) is then confirmed with one comparison per parameter
/// and advanced with one addition per parameter, instead of asking each elastic value.
/// Calls with more parameters than this are not predicted (the per-value check applies).
const NEXT_MAX: usize = 8;

#[derive(Debug, Clone)]
struct Next {
    /// Whether the rest describes the list's last loop, worked out for the list as it is now
    /// (the one flag the fast path checks: cleared by every other change to the list).
    valid: bool,
    op: Op,
    sig: u64,
    /// How many parameters the call has (at most [`NEXT_MAX`]).
    len: usize,
    /// The values the next iteration has.
    params: [i64; NEXT_MAX],
    /// What each value advances by per iteration (0 for a constant).
    strides: [i64; NEXT_MAX],
    /// The last iteration the prediction holds for: beyond it a stride times the iteration
    /// could overflow, and the general check decides.
    upto: u64,
}

/// A drain: consecutive `MPI_Waitsome` calls of one call site on one request array (same
/// `count`), each completing requests none of the others did, until every one of the `count`
/// requests has completed (`while (pending) MPI_Waitsome(...)`, Meep's halo exchange). How the
/// completions fall into calls (one call of four, or four of one, in any order) is timing,
/// not the program: recorded as it happened it gives two runs, or two ranks, different
/// structures. With `IOTREX_APPROX` including `order` ([`crate::approx::ORDER`]) a drain is
/// recorded as one `MPI_Waitsome` that completes the whole array, its ids in ascending
/// order, its gap the first call's and its duration from the first call's start to the
/// last one's end. Calls that turn out not to be a drain (another call comes first, an id
/// completes twice) are recorded one by one as they were. Off-CPU time measured in a held
/// call's gap ([`GapWaits`], more often under load) does not interrupt the drain: the first
/// call's is the whole call's gap's, the later ones' lie within its duration.
#[derive(Debug, Clone)]
struct Drain {
    sig: u64,
    count: i64,
    ids: Vec<i64>,
    /// Each held call: parameters, gap, duration, off-CPU time in its gap.
    calls: Vec<(Vec<i64>, u64, u64, GapWaits)>,
}

impl Compressor {
    /// A compressor for `rank` with the default window.
    pub fn new(rank: u32) -> Compressor {
        Compressor::with_window(rank, DEFAULT_WINDOW)
    }

    /// Matches the numbers in the paths of the calls pushed from now on against the run's
    /// own ids, recording a match as that run value ([`crate::runvalue::RunIds::kind`]); the
    /// trace holds its marker until [`crate::runvalue::restore`] makes it a run value.
    pub fn set_run_ids(&mut self, ids: crate::runvalue::RunIds) {
        self.run_ids = Some(ids);
    }

    /// A compressor that looks back at most `window` nodes.
    pub fn with_window(rank: u32, window: usize) -> Compressor {
        Compressor {
            rank,
            window: window.max(1),
            items: Vec::new(),
            meta: Vec::new(),
            events: 0,
            spare: Vec::new(),
            next: Next {
                valid: false,
                op: Op::Init,
                sig: 0,
                len: 0,
                params: [0; NEXT_MAX],
                strides: [0; NEXT_MAX],
                upto: 0,
            },
            nested: false,
            nested_stop: 0,
            cursor: cursor::Cursor::default(),
            coalesce: false,
            drain: None,
            drains: 0,
            pending: GapWaits::default(),
            run_ids: None,
        }
    }

    /// Records each drain of `MPI_Waitsome` calls as one call ([`Drain`]; off by default).
    pub fn coalesce_drains(&mut self, on: bool) {
        self.coalesce = on;
    }

    /// How many drains of `MPI_Waitsome` calls were recorded as one call each.
    pub fn drains(&self) -> u64 {
        self.drains
    }

    /// Number of calls pushed so far (children included).
    pub fn events(&self) -> u64 {
        self.events + self.cursor.pending() as u64
    }

    /// Number of top-level nodes held now: the compressed size (counting the calls the
    /// [`cursor`] keeps aside as the nodes the general folding would hold for them).
    pub fn len(&self) -> usize {
        self.items.len() + self.cursor.pending_nodes()
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.cursor.pending() == 0
    }

    /// Adds one call.
    pub fn push(&mut self, ev: &RawEvent) {
        if self.coalesce {
            if ev.path.is_none() && ev.children.is_empty() {
                let zero = GapWaits::default();
                if self.hold(ev.op, ev.sig, &ev.params, (ev.gap_ns, ev.dur_ns), zero) {
                    return;
                }
            } else {
                self.release_drain();
            }
        }
        if ev.path.is_none() && ev.children.is_empty() {
            return self.push_plain(ev.op, ev.sig, &ev.params, ev.gap_ns, ev.dur_ns);
        }
        if self.push_nested_fast(ev) {
            return;
        }
        self.settle();
        let node = self.convert(ev);
        self.push_node(node);
        self.predict_nested();
    }

    /// The steady state of a loop around a call with children (an MPI-IO call and the
    /// POSIX calls the library makes in it): the list ends with a loop whose body is one such
    /// call, and this call has the same op, call site and number of parameters, and children
    /// of the same ops, call sites and numbers of parameters in the same order. Then its
    /// values are appended to the loop's body in place, as the general folding would append
    /// them, without building and compressing the call's children as a node first (about
    /// 4,800 instructions per call). Taken only where the general folding is known to do
    /// exactly that and nothing else ([`Compressor::predict_nested`] says why), so the
    /// result is the general folding's.
    fn push_nested_fast(&mut self, ev: &RawEvent) -> bool {
        if !self.nested || ev.path.is_some() || !self.pending.is_zero() || self.cursor.active {
            return false;
        }
        let Some(CNode {
            kind: CKind::Loop(l),
            ..
        }) = self.items.last_mut()
        else {
            unreachable!("`nested` is set for a loop ending the list")
        };
        let (Val::Const(cnt), [body]) = (&mut l.iters, l.body.as_mut_slice()) else {
            unreachable!("`nested` is set for a loop of constant count around one call")
        };
        let CKind::Event(e) = &mut body.kind else {
            unreachable!("`nested` is set for a loop around one call")
        };
        // At `nested_stop` the general folding may fold the loop further: it decides.
        if *cnt + 1 >= self.nested_stop {
            return false;
        }
        let n = *cnt as u64;
        let same_shape = e.op == ev.op
            && e.sig == ev.sig
            && e.params.len() == ev.params.len()
            && e.children.len() == ev.children.len()
            && e.children.iter().zip(&ev.children).all(|(c, r)| {
                matches!(&c.kind, CKind::Event(c) if c.op == r.op && c.sig == r.sig
                    && c.params.len() == r.params.len())
                    && r.path.is_none()
                    && r.children.is_empty()
            });
        // The structural values must stay regular (`keeps_regular`), else the general folding
        // starts a new loop.
        if !same_shape
            || !e
                .params
                .iter()
                .zip(&ev.params)
                .enumerate()
                .all(|(k, (v, &x))| !structural(e, k) || !v.is_regular() || v.continues_const(n, x))
        {
            return false;
        }
        // What `extend_node` does with the node `convert` would make of the call.
        extend_consts(&mut e.params, n, &ev.params);
        e.timing.add(ev.gap_ns, ev.dur_ns);
        for (c, r) in e.children.iter_mut().zip(&ev.children) {
            let CKind::Event(c) = &mut c.kind else {
                unreachable!("checked above")
            };
            extend_consts(&mut c.params, n, &r.params);
            c.timing.add(r.gap_ns, r.dur_ns);
        }
        *cnt += 1;
        self.events += 1 + ev.children.len() as u64;
        true
    }

    /// Works out whether the next call with children may take
    /// [`Compressor::push_nested_fast`]: the list ends with a loop of constant count whose
    /// body is one call without path whose children are calls without path or children of
    /// pairwise different structural keys, and the count at which the general folding could
    /// fold that loop further is known ([`Compressor::fold_count`]).
    ///
    /// Then a call of the same shape (see `push_nested_fast`) is what the general folding
    /// appends to the loop and nothing else, below that count: its children compress to one
    /// node each (no two keys repeat, so nothing folds, and constants hold no vector, so
    /// `children` keeps the greedy result), which gives the call the body's structural key;
    /// the loop is not closed (`closes_last`) while its structural values stay regular, so
    /// `try_extend` takes the call into the loop at once; and after that nothing folds
    /// further before the loop reaches that count.
    fn predict_nested(&mut self) {
        self.nested = false;
        let Some(CNode {
            skey,
            kind: CKind::Loop(l),
        }) = self.items.last()
        else {
            return;
        };
        let (Val::Const(cnt), [body]) = (&l.iters, l.body.as_slice()) else {
            return;
        };
        let CKind::Event(e) = &body.kind else {
            return;
        };
        if e.path.is_some() || e.children.is_empty() {
            return;
        }
        let flat = e.children.iter().enumerate().all(|(i, c)| {
            matches!(&c.kind, CKind::Event(c) if c.path.is_none() && c.children.is_empty())
                && !e.children[i + 1..].iter().any(|d| d.skey == c.skey)
        });
        if !flat {
            return;
        }
        if let Some(stop) = self.fold_count(*skey, *cnt) {
            self.nested_stop = stop;
            self.nested = true;
        }
    }

    /// The least count above `cnt` at which the loop ending the list (structural key `key`,
    /// `cnt` iterations now) may fold with an earlier node once one more iteration of the
    /// same calls is appended to it (`i64::MAX` if none), or `None` if that cannot be told.
    ///
    /// After the tail loop grows, the strict folding (`reduce(true)`) tries the same places
    /// as before, whose structural keys have not changed: `try_extend`, an outer loop whose
    /// body ends with a node of `key` that the tail completes, and `try_fold`, an earlier
    /// node of `key` whose following nodes the tail repeats. Neither folded at `cnt` (the
    /// list is the general folding's fixpoint, or was extended only below this count), and
    /// what differs at the next count is `open_mismatch`: such a node (a loop, since it has
    /// the tail's key) matches only where its count continues to the tail's, which is one
    /// number for a constant, affine or cyclic count ([`Val::next_const`]) and none for an
    /// explicit one. Only there can the values (`keeps_regular`) let it fold.
    fn fold_count(&self, key: u64, cnt: i64) -> Option<i64> {
        let (items, meta) = (&self.items, &self.meta);
        let n = items.len();
        let mut stop = i64::MAX;
        // One place where a fold may happen: at the count `other`'s continues to.
        let mut at = |other: &CNode, i: u64| match &other.kind {
            CKind::Loop(o) => {
                if let Some(c) = o.iters.next_const(i).filter(|&c| c > cnt) {
                    stop = stop.min(c);
                }
                true
            }
            CKind::Event(_) => false,
        };
        for b in 1..=self.window.min(n.saturating_sub(1)) {
            let p = n - 1 - b;
            let CKind::Loop(l) = &items[p].kind else {
                continue;
            };
            if meta[p].1 != b
                || !l
                    .body
                    .iter()
                    .zip(&meta[p + 1..])
                    .all(|(x, m)| x.skey == m.0)
            {
                continue;
            }
            let Val::Const(lc) = l.iters else {
                return None;
            };
            if !at(&l.body[b - 1], lc as u64) {
                return None;
            }
        }
        for w in 1..=self.window.min(n / 2) {
            if meta[n - 1 - w].0 == key
                && (0..w).all(|k| meta[n - 2 * w + k].0 == meta[n - w + k].0)
                && !at(&items[n - 1 - w], 1)
            {
                return None;
            }
        }
        Some(stop)
    }

    /// Adds one call whose gap held `waits` of off-CPU time ([`GapWaits`]): [`Self::push`]
    /// of `ev`, through the general path (the fast paths carry no waits). Rare by design: the
    /// tracer measures waits only in gaps long enough for the measurement to cost nothing.
    #[cold]
    #[inline(never)]
    pub fn push_waited(&mut self, ev: &RawEvent, waits: GapWaits) {
        if waits.is_zero() {
            return self.push(ev);
        }
        let times = (ev.gap_ns, ev.dur_ns);
        if ev.path.is_none() && ev.children.is_empty() {
            if self.coalesce && self.hold(ev.op, ev.sig, &ev.params, times, waits) {
                return;
            }
            self.release_drain();
            return self.push_with_waits(ev.op, ev.sig, &ev.params, times, waits);
        }
        self.release_drain();
        // The cursor's calls go in first, so that this one lands after them.
        self.settle();
        self.pending = waits;
        let node = self.convert(ev);
        self.push_node(node);
        self.pending = GapWaits::default();
    }

    /// Adds one call that names no path and has no children, from borrowed parts: the same as
    /// [`Compressor::push`] of the equivalent [`RawEvent`], without building one when the call
    /// continues the innermost loop (the tracer's hot path then allocates nothing).
    ///
    /// Inlined into the caller (the tracer's record path) down to the prediction's check; the
    /// rest is out of line.
    #[inline(always)]
    pub fn push_call(&mut self, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
        if self.coalesce && self.hold(op, sig, params, (gap_ns, dur_ns), GapWaits::default()) {
            return;
        }
        self.push_plain(op, sig, params, gap_ns, dur_ns);
    }

    /// Whether this call is held back as part of a drain ([`Drain`]): it continues the one
    /// held (and may complete it, which records it), or starts one. Any other call first
    /// records the held calls one by one. `waits`: the off-CPU time in the call's gap.
    fn hold(
        &mut self,
        op: Op,
        sig: u64,
        params: &[i64],
        (gap, dur): (u64, u64),
        waits: GapWaits,
    ) -> bool {
        let waitsome = op == Op::Waitsome && params.len() >= 2;
        if let Some(d) = &mut self.drain {
            let ids = op.list(params);
            let fits = waitsome
                && d.sig == sig
                && d.count == params[0]
                && params[1] > 0
                && d.ids.len() + ids.len() <= d.count as usize
                && ids.iter().all(|i| !d.ids.contains(i));
            if fits {
                self.events += 1;
                d.ids.extend_from_slice(ids);
                d.calls.push((params.to_vec(), gap, dur, waits));
                if d.ids.len() == d.count as usize {
                    self.complete_drain();
                }
                return true;
            }
            self.release_drain();
        }
        if !waitsome {
            return false;
        }
        let (count, out) = (params[0], params[1]);
        let ids = op.list(params);
        // One call that completes everything is already a drain of one.
        if out <= 0 || out >= count || ids.len() != out as usize {
            return false;
        }
        let mut seen = ids.to_vec();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != ids.len() {
            return false;
        }
        self.events += 1;
        self.drain = Some(Drain {
            sig,
            count,
            ids: ids.to_vec(),
            calls: vec![(params.to_vec(), gap, dur, waits)],
        });
        true
    }

    /// Records the held drain as one call completing every request.
    fn complete_drain(&mut self) {
        let Some(mut d) = self.drain.take() else {
            return;
        };
        d.ids.sort_unstable();
        let mut params = vec![d.count, d.count];
        params.extend_from_slice(&d.ids);
        let (gap, waits) = (d.calls[0].1, d.calls[0].3);
        // From the first call's start to the last one's end: the time the program waited.
        let dur = d.calls.iter().map(|c| c.2).sum::<u64>()
            + d.calls[1..].iter().map(|c| c.1).sum::<u64>();
        // Counted as they were held: the one call pushed counts itself (now, or when the
        // cursor applies its iteration), the held calls count the rest.
        let held = d.calls.len() as u64;
        self.events -= held;
        self.push_with_waits(Op::Waitsome, d.sig, &params, (gap, dur), waits);
        self.events += held - 1;
        self.drains += 1;
    }

    /// Records the held calls one by one, as they were.
    fn release_drain(&mut self) {
        if let Some(d) = self.drain.take() {
            // Counted as they were held; each counts itself again as it is pushed.
            self.events -= d.calls.len() as u64;
            for (p, gap, dur, waits) in &d.calls {
                self.push_with_waits(Op::Waitsome, d.sig, p, (*gap, *dur), *waits);
            }
        }
    }

    /// A call without path or children pushed as it came: through the general path when its
    /// gap held off-CPU time, the cursor's calls settled first so that it lands after them
    /// (the fast paths carry no waits).
    fn push_with_waits(
        &mut self,
        op: Op,
        sig: u64,
        params: &[i64],
        (gap, dur): (u64, u64),
        waits: GapWaits,
    ) {
        if waits.is_zero() {
            return self.push_plain(op, sig, params, gap, dur);
        }
        self.settle();
        self.pending = waits;
        self.push_call_slow(op, sig, params, gap, dur);
        self.pending = GapWaits::default();
    }

    /// [`Compressor::push_call`] past the drain check.
    #[inline(always)]
    fn push_plain(&mut self, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
        if self.cursor.active {
            return self.push_cursor(op, sig, params, gap_ns, dur_ns);
        }
        if self.push_fast(op, sig, params, gap_ns, dur_ns) {
            return;
        }
        self.push_call_slow(op, sig, params, gap_ns, dur_ns);
    }

    /// [`Compressor::push_plain`] while the [`cursor`] walks a loop's body: out of line, so
    /// that the loop around one call keeps its short inlined path.
    #[inline(never)]
    fn push_cursor(&mut self, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
        if let cursor::Taken::No = self.cursor_push(op, sig, params, gap_ns, dur_ns) {
            self.push_call_slow(op, sig, params, gap_ns, dur_ns);
        }
    }

    #[inline(never)]
    fn push_call_slow(&mut self, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
        if self.push_checked(op, sig, params, gap_ns, dur_ns) {
            return;
        }
        let ev = RawEvent {
            op,
            sig,
            path: None,
            params: params.to_vec(),
            gap_ns,
            dur_ns,
            children: Vec::new(),
        };
        let node = self.convert(&ev);
        self.push_node(node);
        // The list may now end with a loop whose next iteration the cursor can predict, or
        // with such a loop and the first call of that iteration (a loop whose body ends with
        // an inner loop is extended only when the next call closes that inner loop).
        match self.meta.as_slice() {
            [.., (_, b)] if *b >= 1 => self.speculate(),
            [.., (_, b), (_, 0)] if *b >= 1 => self.speculate_after_first(),
            _ => {}
        }
    }

    /// The steady state of an innermost loop: the list ends with a loop whose body is this
    /// very call, and every parameter continues its pattern. Then only the count and the
    /// timing change, with no allocation; anything else takes the general path. The call has
    /// no path and no children (the caller checks).
    ///
    /// First against the prediction ([`Next`]): the call's parameters equal the values the
    /// loop expects next, one comparison each. Where no prediction is made (a periodic value,
    /// a count near overflow), [`Compressor::push_checked`] asks each value. Both accept the
    /// same calls.
    #[inline(always)]
    fn push_fast(&mut self, op: Op, sig: u64, params: &[i64], gap: u64, dur: u64) -> bool {
        let nx = &mut self.next;
        let n = params.len();
        if !nx.valid || nx.op != op || nx.sig != sig || nx.len != n {
            return false;
        }
        let Some(CNode {
            kind: CKind::Loop(l),
            ..
        }) = self.items.last_mut()
        else {
            unreachable!("a prediction is made for a loop ending the list")
        };
        let (Val::Const(cnt), [body]) = (&mut l.iters, l.body.as_mut_slice()) else {
            unreachable!("a prediction is made for a loop around one call")
        };
        let CKind::Event(e) = &mut body.kind else {
            unreachable!("a prediction is made for a loop around one call")
        };
        // Compared and advanced in one pass without branches; a mismatch drops the prediction
        // (the general path then decides and predicts again). The advance may wrap only past
        // `upto`, where the prediction is not used.
        let mut same = true;
        for ((x, want), s) in params
            .iter()
            .zip(&mut nx.params[..n.min(NEXT_MAX)])
            .zip(&nx.strides)
        {
            same &= *x == *want;
            *want = x.wrapping_add(*s);
        }
        // From `upto` on a value of the iteration, or a stride times the count, could
        // overflow: the values decide.
        if !same || (*cnt as u64) >= nx.upto {
            self.next.valid = false;
            return false;
        }
        e.timing.add(gap, dur);
        // In place: assigning a new `Val` would run the old one's destructor on every call.
        *cnt += 1;
        self.events += 1;
        true
    }

    /// [`Compressor::push_fast`] asking each elastic value whether the call continues it.
    fn push_checked(&mut self, op: Op, sig: u64, params: &[i64], gap: u64, dur: u64) -> bool {
        let Some(last) = self.items.last_mut() else {
            return false;
        };
        let CKind::Loop(l) = &mut last.kind else {
            return false;
        };
        let (Val::Const(cnt), [body]) = (&mut l.iters, l.body.as_mut_slice()) else {
            return false;
        };
        let CKind::Event(e) = &mut body.kind else {
            return false;
        };
        if e.op != op || e.sig != sig || e.path.is_some() || !e.children.is_empty() {
            return false;
        }
        let n = *cnt as u64;
        if e.params.len() != params.len()
            || !e
                .params
                .iter()
                .zip(params)
                .all(|(v, &x)| v.continues_const(n, x))
        {
            return false;
        }
        e.timing.add(gap, dur);
        e.waits.add(std::mem::take(&mut self.pending));
        *cnt += 1;
        self.events += 1;
        self.predict();
        true
    }

    /// Works out [`Next`] for the list as it is: when it ends with a loop whose body is one
    /// call without path or children, and every parameter of that call is a constant or
    /// affine in the iteration, the values of the next iteration.
    fn predict(&mut self) {
        let nx = &mut self.next;
        nx.valid = false;
        let Some(CNode {
            kind: CKind::Loop(l),
            ..
        }) = self.items.last()
        else {
            return;
        };
        let (Val::Const(cnt), [body]) = (&l.iters, l.body.as_slice()) else {
            return;
        };
        let CKind::Event(e) = &body.kind else {
            return;
        };
        if e.path.is_some() || !e.children.is_empty() || e.params.len() > NEXT_MAX {
            return;
        }
        let mut upto = u64::MAX;
        for (k, v) in e.params.iter().enumerate() {
            let (x, s) = match v {
                Val::Const(c) => (*c, 0),
                Val::Lin { base, strides } if strides.len() == 1 => {
                    let s = strides[0];
                    // `Val::continues_const` computes `base + s*n` with checked arithmetic:
                    // the running value equals it while neither `s*n` nor `base + s*n`
                    // overflows, which holds for every `n` below `upto` (so the fast path
                    // needs no overflow check of its own).
                    if s != 0 {
                        let room = if s > 0 {
                            (i64::MAX as i128 - *base as i128) / s as i128
                        } else {
                            (*base as i128 - i64::MIN as i128) / -(s as i128)
                        };
                        upto = upto
                            .min(i64::MAX as u64 / s.unsigned_abs())
                            .min(room.max(0) as u64);
                    }
                    match s.checked_mul(*cnt).and_then(|d| base.checked_add(d)) {
                        Some(x) => (x, s),
                        None => return,
                    }
                }
                _ => return,
            };
            nx.params[k] = x;
            nx.strides[k] = s;
        }
        nx.len = e.params.len();
        nx.op = e.op;
        nx.sig = e.sig;
        nx.upto = upto;
        nx.valid = true;
    }

    fn convert(&mut self, ev: &RawEvent) -> CNode {
        self.events += 1;
        let mut params = self.spare.pop().unwrap_or_default();
        params.extend(ev.params.iter().map(|&v| Val::Const(v)));
        let path = ev.path.as_ref().map(|p| {
            let ids = self.run_ids.as_ref();
            let (t, fields) = PathTemplate::parse_fields_on(p, ids.and_then(|i| i.host.as_deref()));
            params.extend(fields.into_iter().map(|f| {
                match ids.filter(|_| !f.in_word).and_then(|i| i.kind(f.value)) {
                    Some(k) => Val::Const(crate::runvalue::marker(k)),
                    None => Val::Const(f.value),
                }
            }));
            t
        });
        let children = if ev.children.is_empty() {
            Vec::new()
        } else {
            let (items, events) = self.children(&ev.children);
            self.events += events;
            items
        };
        let skey = event_skey(
            ev.op,
            ev.sig,
            path.as_ref().map(|p| p.0.as_str()),
            params.len(),
            children.iter().map(|c| c.skey),
        );
        CNode {
            skey,
            kind: CKind::Event(CEvent {
                op: ev.op,
                sig: ev.sig,
                path,
                params,
                timing: Acc::One {
                    gap: ev.gap_ns,
                    dur: ev.dur_ns,
                },
                waits: std::mem::take(&mut self.pending),
                children,
            }),
        }
    }

    /// A compressor for one call's nested calls: this one's rank, window and run ids.
    fn nested(&self) -> Compressor {
        let mut c = Compressor::with_window(self.rank, self.window);
        c.run_ids.clone_from(&self.run_ids);
        c
    }

    /// The nested calls of one call, compressed, and how many calls they are. They are all
    /// known at once, so alternatives are weighed too: the first call, the last call, or both
    /// kept apart from the rest. An MPI library's collective buffering often starts and ends a
    /// regular run with one irregular call (partial blocks at a file domain's ends): folded
    /// greedily, the first two calls pair up and every later pair repeats the mismatch, and a
    /// last call that continues the run's offsets with a shorter length makes the run's
    /// lengths explicit, either way vectors as long as the run. The smallest (in values kept)
    /// wins, the greedy one on a tie.
    fn children(&self, calls: &[RawEvent]) -> (Vec<CNode>, u64) {
        let compress = |calls: &[RawEvent]| {
            let mut sub = self.nested();
            for c in calls {
                sub.push(c);
            }
            sub.settle();
            sub.reduce(false);
            (sub.items, sub.events)
        };
        let greedy = compress(calls);
        let n = calls.len();
        if n < 3 || !greedy.0.iter().any(has_vector) {
            return greedy;
        }
        let mut best = greedy;
        let mut best_size: usize = best.0.iter().map(size).sum();
        let runs = self.affine_runs(calls);
        let runs_size: usize = runs.0.iter().map(size).sum();
        if runs_size < best_size {
            best_size = runs_size;
            best = runs;
        }
        for (head, tail) in [(1, 0), (0, 1), (1, 1)] {
            let mut apart = self.nested();
            let mut items: Vec<CNode> = calls[..head].iter().map(|c| apart.convert(c)).collect();
            let (mid, events) = compress(&calls[head..n - tail]);
            items.extend(mid);
            items.extend(calls[n - tail..].iter().map(|c| apart.convert(c)));
            let s = items.iter().map(size).sum();
            if s < best_size {
                best_size = s;
                best = (items, events + apart.events);
            }
        }
        best
    }

    /// The calls cut into maximal runs of the same call whose every parameter (not only the
    /// structural ones) is affine in the position, each run one loop, nothing folded further:
    /// a library's nested calls are often a few such runs (a domain's full blocks, split at a
    /// cycle's end) that the greedy folding would nest into loops of unequal trip counts with
    /// explicit vectors. A run of two that the third call breaks is not started: its first
    /// call stands alone (a partial block before a regular run).
    fn affine_runs(&self, calls: &[RawEvent]) -> (Vec<CNode>, u64) {
        let mut c = self.nested();
        let mut out = Vec::new();
        let mut pending: Option<CNode> = None;
        let mut i = 0;
        while i < calls.len() {
            let mut body = match pending.take() {
                Some(n) => n,
                None => c.convert(&calls[i]),
            };
            let mut cnt = 1u64;
            let mut j = i + 1;
            while j < calls.len() {
                let mut next = c.convert(&calls[j]);
                let fits = next.skey == body.skey
                    && matches!((&body.kind, &next.kind), (CKind::Event(a), CKind::Event(b))
                        if a.children.is_empty() && b.children.is_empty()
                            && (cnt == 1 || a.params.iter().zip(&b.params)
                                .all(|(x, y)| x.continues(cnt, y, 0))));
                if !fits {
                    pending = Some(next);
                    break;
                }
                if cnt == 1 {
                    body = wrap_node(body, next, 0);
                } else {
                    extend_node(&mut body, cnt, &mut next, 0);
                }
                cnt += 1;
                j += 1;
            }
            if cnt == 2 && j < calls.len() {
                // Broken by the third call: the first stands alone, the second starts over.
                out.push(c.convert(&calls[i]));
                pending = None;
                i += 1;
                continue;
            }
            out.push(if cnt == 1 {
                body
            } else {
                CNode {
                    skey: loop_skey(std::iter::once(body.skey)),
                    kind: CKind::Loop(CLoop {
                        iters: Val::Const(cnt as i64),
                        body: vec![body],
                    }),
                }
            });
            i = j;
        }
        (
            out,
            calls.len() as u64 + calls.iter().map(nested).sum::<u64>(),
        )
    }

    fn push_node(&mut self, node: CNode) {
        self.next.valid = false;
        self.nested = false;
        // A new call that cannot continue the last loop closes it: only now may that loop
        // fold with loops of other trip counts (see `reduce`).
        if self.closes_last(&node) {
            self.reduce(false);
        }
        self.push_node_raw(node);
        self.reduce(true);
    }

    /// Folds the tail as far as it goes. `strict` holds back folds whose tail ends in a loop
    /// that may still be growing: such a loop only matches one with the same trip count, so a
    /// loop of 2 iterations that is on its way to 16 does not fold with a finished loop of 16
    /// (which would nest loops wrongly). Once the loop is closed, any trip counts fold.
    fn reduce(&mut self, strict: bool) {
        self.next.valid = false;
        self.nested = false;
        while self.try_extend(strict) || self.try_fold(strict) {}
    }

    /// Whether `node` cannot be the next iteration of the loop that ends the list.
    fn closes_last(&self, node: &CNode) -> bool {
        let Some(CNode {
            kind: CKind::Loop(l),
            ..
        }) = self.items.last()
        else {
            return false;
        };
        let Val::Const(cnt) = l.iters else {
            return true;
        };
        !(l.body.len() == 1
            && l.body[0].skey == node.skey
            && keeps_regular(&l.body[0], cnt as u64, node, 0))
    }

    /// In strict mode, whether the list's last item is a loop whose trip count `other` does
    /// not match; `n` is the iteration `other` belongs to (for a loop body's elastic count).
    fn open_mismatch(&self, strict: bool, other: &CNode, n: u64) -> bool {
        if !strict {
            return false;
        }
        match (self.items.last().map(|c| &c.kind), &other.kind) {
            (Some(CKind::Loop(last)), CKind::Loop(o)) => !o.iters.continues(n, &last.iters, 0),
            _ => false,
        }
    }

    /// The tail is one more iteration of the loop just before it.
    fn try_extend(&mut self, strict: bool) -> bool {
        let n = self.items.len();
        for b in 1..=self.window.min(n.saturating_sub(1)) {
            let p = n - 1 - b;
            if self.meta[p].1 != b {
                continue;
            }
            let CKind::Loop(l) = &self.items[p].kind else {
                continue;
            };
            if !l
                .body
                .iter()
                .zip(&self.meta[p + 1..])
                .all(|(x, m)| x.skey == m.0)
            {
                continue;
            }
            let Val::Const(cnt) = l.iters else {
                unreachable!("a top-level loop's count is a constant")
            };
            if self.open_mismatch(strict, &l.body[b - 1], cnt as u64) {
                continue;
            }
            // A loop whose values are all affine so far is not extended by an iteration that
            // breaks them: the tail starts a new loop instead, and the two loops then fold into
            // an outer one. That is how `for s { for i { write(s*S + i*I) } }` becomes two
            // nested loops with affine offsets instead of one loop with an explicit vector.
            if !l
                .body
                .iter()
                .zip(&self.items[p + 1..])
                .all(|(x, c)| keeps_regular(x, cnt as u64, c, 0))
            {
                continue;
            }
            self.meta.truncate(p + 1);
            // Move the tail into the loop in place: draining into a new Vec would allocate
            // and copy once per completed iteration.
            let (head, tail) = self.items.split_at_mut(p + 1);
            let CKind::Loop(l) = &mut head[p].kind else {
                unreachable!()
            };
            for (x, c) in l.body.iter_mut().zip(tail.iter_mut()) {
                extend_node(x, cnt as u64, c, 0);
            }
            l.iters = Val::Const(cnt + 1);
            // Keep the emptied parameter vectors: the next calls reuse them instead of
            // allocating, which is most of the per-call cost otherwise.
            for node in self.items.drain(p + 1..) {
                if let CKind::Event(e) = node.kind
                    && self.spare.len() < SPARE_MAX
                    && e.params.capacity() > 0
                {
                    self.spare.push(e.params);
                }
            }
            return true;
        }
        false
    }

    /// The tail repeats the nodes just before it: fold both into a loop of two iterations.
    fn try_fold(&mut self, strict: bool) -> bool {
        let n = self.items.len();
        let last = match self.meta.last() {
            Some(m) => m.0,
            None => return false,
        };
        for w in 1..=self.window.min(n / 2) {
            if self.meta[n - 1 - w].0 != last {
                continue;
            }
            if !(0..w).all(|k| self.meta[n - 2 * w + k].0 == self.meta[n - w + k].0) {
                continue;
            }
            if self.open_mismatch(strict, &self.items[n - 1 - w], 1) {
                continue;
            }
            // The first copy becomes the body and the second is wrapped into it in place: one
            // allocation per fold instead of three (this runs once per outer iteration of every
            // nested loop, when the inner loop forms again).
            let mut body: Vec<CNode> = self.items.drain(n - 2 * w..n - w).collect();
            for (x, b) in body.iter_mut().zip(self.items.drain(n - 2 * w..)) {
                let a = std::mem::replace(x, CNode::PLACEHOLDER);
                *x = wrap_node(a, b, 0);
            }
            self.meta.truncate(n - 2 * w);
            let skey = loop_skey(body.iter().map(|c| c.skey));
            self.push_node_raw(CNode {
                skey,
                kind: CKind::Loop(CLoop {
                    iters: Val::Const(2),
                    body,
                }),
            });
            return true;
        }
        false
    }

    fn push_node_raw(&mut self, node: CNode) {
        self.nested = false;
        let body_len = match &node.kind {
            CKind::Loop(l) => l.body.len(),
            CKind::Event(_) => 0,
        };
        self.meta.push((node.skey, body_len));
        self.items.push(node);
    }

    /// The compressed trace of this rank's calls as another rank's (a process that handed
    /// its rank's place to the image it exec'd keeps its calls under a slot of its own).
    pub fn finish_as(&self, rank: u32) -> Trace {
        if rank == self.rank {
            return self.finish();
        }
        let mut c = self.clone();
        c.rank = rank;
        c.finish()
    }

    /// The compressed trace of this rank.
    pub fn finish(&self) -> Trace {
        if self.cursor.pending() > 0 {
            // Calls kept aside by the cursor: into the list first, as they came.
            let mut c = self.clone();
            c.settle();
            return c.finish();
        }
        if self.drain.is_some() {
            // The run ended inside what looked like a drain: its calls as they were.
            let mut c = self.clone();
            c.release_drain();
            return c.finish();
        }
        // The run is over, so the last loop is closed: fold what only waited for that.
        let closed;
        let items = if matches!(self.items.last().map(|c| &c.kind), Some(CKind::Loop(_))) {
            let mut c = self.clone();
            c.reduce(false);
            closed = c;
            &closed.items
        } else {
            &self.items
        };
        Trace {
            nodes: items.iter().map(|c| to_node(c, self.rank)).collect(),
        }
    }
}

/// Whether appending `c` as iteration `n` leaves every *structural* value of `a` that is regular
/// now (constant or affine) regular. Values that are already explicit or periodic do not count,
/// nor do nested children.
///
/// Loops fold on the sequence of calls (op, call site, nesting), and only two kinds of value
/// may refine that ([`structural`]): where a call sits in a file, and a test's completion flag.
/// A single call site that writes `s*S + i*I` is a nested loop in the program, and its affine
/// offsets are the only evidence of it; `while (!flag) MPI_Test(..., &flag)` is a loop that the
/// flag ends. Every other value (message sizes and peers, byte counts, return values) depends on the
/// data or the process grid: letting it split loops would give two runs of one program
/// different structures (with two ranks in a dimension both neighbours are the same rank and
/// the peers look affine; with three they do not). Such values become per-iteration vectors.
fn keeps_regular(a: &CNode, n: u64, c: &CNode, inner: usize) -> bool {
    let ok = |v: &Val<i64>, w: &Val<i64>, inner| !v.is_regular() || v.continues(n, w, inner);
    match (&a.kind, &c.kind) {
        // Children (the library's calls inside an MPI-IO call) do not count: the application's
        // own parameters decide its loop structure, and collective buffering makes the nested
        // calls irregular in ways that say nothing about the application's loops.
        (CKind::Event(ea), CKind::Event(ec)) => ea
            .params
            .iter()
            .zip(&ec.params)
            .enumerate()
            .all(|(k, (v, w))| !structural(ea, k) || ok(v, w, inner)),
        (CKind::Loop(la), CKind::Loop(lc)) => {
            ok(&la.iters, &lc.iters, inner)
                && la
                    .body
                    .iter()
                    .zip(&lc.body)
                    .all(|(x, y)| keeps_regular(x, n, y, inner + 1))
        }
        _ => false,
    }
}

/// Whether parameter `k` of `e` may split a loop: for I/O calls, which file (a handle, a path
/// field) or where in it (an offset, a view's displacement), which follow the program's loops
/// over files and blocks; for MPI calls only a test's `flag`, the control flow of a polling
/// loop. Sizes, peers and everything else follow the data or the process grid.
fn structural(e: &CEvent, k: usize) -> bool {
    let p = e.op.params().get(k);
    if e.op.layer() == Layer::Mpi {
        return p == Some(&Param::Flag);
    }
    match p {
        Some(p) => matches!(
            p,
            Param::Offset | Param::Disp | Param::Fd | Param::Fh | Param::Stream
        ),
        // Past the fixed parameters: the path's fields (the I/O ops have no array parameters).
        None => e.path.is_some(),
    }
}

/// Merges `b` into `a` as the second iteration of a new outer loop; values range over `inner`
/// loops below it.
fn wrap_node(a: CNode, b: CNode, inner: usize) -> CNode {
    let kind = match (a.kind, b.kind) {
        (CKind::Event(mut ea), CKind::Event(eb)) => {
            ea.params = ea
                .params
                .into_iter()
                .zip(eb.params)
                .map(|(x, y)| Val::wrap2(x, y, inner))
                .collect();
            ea.timing.absorb(eb.timing);
            ea.waits.add(eb.waits);
            ea.children = ea
                .children
                .into_iter()
                .zip(eb.children)
                .map(|(x, y)| wrap_node(x, y, inner))
                .collect();
            CKind::Event(ea)
        }
        (CKind::Loop(la), CKind::Loop(lb)) => CKind::Loop(CLoop {
            iters: Val::wrap2(la.iters, lb.iters, inner),
            body: la
                .body
                .into_iter()
                .zip(lb.body)
                .map(|(x, y)| wrap_node(x, y, inner + 1))
                .collect(),
        }),
        _ => unreachable!("equal structural keys imply equal kinds"),
    };
    CNode { skey: a.skey, kind }
}

/// Appends the plain numbers `xs` as iteration `n` of `vals` (values over no inner loop):
/// `Val::extend` of each, which leaves a value the number continues as it is; that check is
/// made first without building a value (the steady state of a loop).
fn extend_consts(vals: &mut [Val<i64>], n: u64, xs: &[i64]) {
    for (v, &x) in vals.iter_mut().zip(xs) {
        if !v.continues_const(n, x) {
            v.extend(n, Val::Const(x), 0);
        }
    }
}

/// Appends `c` as iteration `n` of the outer loop that `a` is already folded into. `c`'s
/// values are moved out, leaving its allocations for the caller to reuse.
fn extend_node(a: &mut CNode, n: u64, c: &mut CNode, inner: usize) {
    match (&mut a.kind, &mut c.kind) {
        (CKind::Event(ea), CKind::Event(ec)) => {
            for (x, y) in ea.params.iter_mut().zip(ec.params.drain(..)) {
                x.extend(n, y, inner);
            }
            let t = std::mem::replace(&mut ec.timing, Acc::One { gap: 0, dur: 0 });
            ea.timing.absorb(t);
            ea.waits.add(std::mem::take(&mut ec.waits));
            for (x, y) in ea.children.iter_mut().zip(ec.children.iter_mut()) {
                extend_node(x, n, y, inner);
            }
        }
        (CKind::Loop(la), CKind::Loop(lc)) => {
            la.iters
                .extend(n, std::mem::replace(&mut lc.iters, Val::Const(0)), inner);
            for (x, y) in la.body.iter_mut().zip(lc.body.iter_mut()) {
                extend_node(x, n, y, inner + 1);
            }
        }
        _ => unreachable!("equal structural keys imply equal kinds"),
    }
}

fn to_node(c: &CNode, rank: u32) -> Node {
    let kind = match &c.kind {
        CKind::Event(e) => NodeKind::Event(Event {
            op: e.op,
            sig: e.sig,
            path: e.path.clone(),
            params: e.params.iter().map(|v| Elastic::single(rank, v)).collect(),
            timing: Timing {
                waits: (!e.waits.is_zero()).then_some(e.waits),
                ..e.timing.timing(rank)
            },
            children: e.children.iter().map(|x| to_node(x, rank)).collect(),
        }),
        CKind::Loop(l) => NodeKind::Loop(Loop {
            iters: Elastic::single(rank, &l.iters),
            body: l.body.iter().map(|x| to_node(x, rank)).collect(),
        }),
    };
    Node {
        ranks: RankSet::single(rank),
        kind,
    }
}

/// The calls nested in `e`, at any depth.
fn nested(e: &RawEvent) -> u64 {
    e.children.len() as u64 + e.children.iter().map(nested).sum::<u64>()
}

/// Whether a node holds an explicit or periodic vector of values.
fn has_vector(c: &CNode) -> bool {
    match &c.kind {
        CKind::Event(e) => {
            e.params.iter().any(|v| !v.is_regular()) || e.children.iter().any(has_vector)
        }
        CKind::Loop(l) => !l.iters.is_regular() || l.body.iter().any(has_vector),
    }
}

/// The size of a node in values kept: one per node and one per numeric leaf.
fn size(c: &CNode) -> usize {
    let leaves = |v: &Val<i64>| {
        let mut l = Vec::new();
        v.leaves(&mut l);
        l.len()
    };
    1 + match &c.kind {
        CKind::Event(e) => {
            e.params.iter().map(leaves).sum::<usize>() + e.children.iter().map(size).sum::<usize>()
        }
        CKind::Loop(l) => leaves(&l.iters) + l.body.iter().map(size).sum::<usize>(),
    }
}

/// Compresses a whole call list of one rank.
pub fn compress(rank: u32, events: &[RawEvent]) -> Trace {
    let mut c = Compressor::new(rank);
    for e in events {
        c.push(e);
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Without the prediction: each value asked whether the call continues it, as before
    /// the prediction existed.
    fn checked(rank: u32, evs: &[RawEvent]) -> Trace {
        let mut c = Compressor::new(rank);
        for e in evs {
            if e.path.is_some()
                || !e.children.is_empty()
                || !c.push_checked(e.op, e.sig, &e.params, e.gap_ns, e.dur_ns)
            {
                let n = c.convert(e);
                c.push_node(n);
            }
        }
        c.finish()
    }

    /// Loops of loops of calls whose values are constant, affine in the iteration, periodic or
    /// arbitrary, with timings.
    fn stream() -> impl Strategy<Value = Vec<RawEvent>> {
        let call = (0usize..3, 0u8..4, -3i64..4, any::<u16>());
        let block = (prop::collection::vec(call, 1..4), 1i64..40, 1i64..4);
        prop::collection::vec(block, 1..4).prop_map(|blocks| {
            let mut out = Vec::new();
            let mut t = 7u64;
            for (s, (calls, inner, outer)) in blocks.iter().enumerate() {
                for o in 0..*outer {
                    for i in 0..*inner {
                        for (k, &(op, kind, stride, noise)) in calls.iter().enumerate() {
                            let off = match kind {
                                0 => 4096,
                                1 => o * 1_000_000 + i * stride * 8,
                                2 => [0, 64, 8][(i % 3) as usize],
                                _ => (noise as i64 * (i + 1)) % 997,
                            };
                            let op = [Op::Pwrite, Op::Pread, Op::Lseek][op];
                            let e = RawEvent::new(op, (s * 10 + k) as u64, vec![3, 8, off, 8]);
                            out.push(random_timing(&mut t, e));
                        }
                    }
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// The prediction accepts the calls the per-value check accepts: the same trace,
        /// timing included to the bit.
        #[test]
        fn fast_path_equals_general_folding(evs in stream()) {
            let mut c = Compressor::new(3);
            for e in &evs {
                c.push(e);
            }
            prop_assert_eq!(c.finish(), checked(3, &evs));
        }
    }

    /// `e` with a gap and a duration drawn from the generator state `t`, which it advances
    /// (the strategies' events get random timings, the same for the same stream).
    fn random_timing(t: &mut u64, mut e: RawEvent) -> RawEvent {
        *t = t
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        e.gap_ns = (*t >> 40) % 5000;
        e.dur_ns = (*t >> 20) % 300;
        e
    }

    /// Timestep loops whose bodies hold calls and inner loops around one call (the cursor's
    /// case), with constant, affine (in the step, the inner loop or both), periodic and
    /// arbitrary values, inner counts that sometimes change, call sites shared between
    /// blocks, and calls that break a step in the middle.
    fn timesteps() -> impl Strategy<Value = Vec<RawEvent>> {
        // (op, call site, inner count, value kind, stride)
        let item = (0usize..3, 0u64..3, 1i64..5, 0u8..8, -2i64..3);
        let block = (
            prop::collection::vec(item, 1..5),
            1i64..12,
            any::<u32>(),
            prop::collection::vec(0usize..3, 0..3),
        );
        prop::collection::vec(block, 1..4).prop_map(|blocks| {
            let mut out = Vec::new();
            let mut t = 11u64;
            let mut push = |out: &mut Vec<RawEvent>, op: usize, sig: u64, off: i64| {
                let op = [Op::Pwrite, Op::Pread, Op::Lseek][op];
                out.push(random_timing(
                    &mut t,
                    RawEvent::new(op, sig, vec![3, 8, off, 8]),
                ));
            };
            for (items, steps, noise, pre) in &blocks {
                for &op in pre {
                    push(&mut out, op, op as u64, 17);
                }
                for s in 0..*steps {
                    for (k, &(op, site, inner, kind, stride)) in items.iter().enumerate() {
                        // Now and then a step whose inner loop runs once more, or stops.
                        let bump = (noise >> (s % 16)) & 15;
                        let inner = match bump {
                            0 if k == 0 => inner + 1,
                            1 if k == items.len() - 1 => 1,
                            3 if k == items.len() - 1 => inner + 1,
                            _ => inner,
                        };
                        for i in 0..inner {
                            let off = match kind {
                                0 | 1 => 4096,
                                2 | 3 => s * 1_000_000 + i * stride * 8,
                                4 | 5 => i * stride * 8,
                                6 => [0, 64, 8][(s % 3) as usize] + i,
                                _ => (*noise as i64 * (i + s + 1)) % 997,
                            };
                            // Mostly one call site per position; site 0 is shared.
                            let sig = if site == 0 { 0 } else { k as u64 * 10 + site };
                            push(&mut out, op, sig, off);
                        }
                        if bump == 2 && k == 0 && s > 2 {
                            // A step broken in the middle by another call.
                            push(&mut out, 2, 9, s);
                        }
                    }
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// The cursor through a loop's body accepts exactly what the general folding
        /// folds the same way: the same trace, timing included to the bit, and the same
        /// compressed size and call count at every step.
        #[test]
        fn cursor_equals_general_folding(evs in timesteps()) {
            let mut c = Compressor::new(3);
            let mut g = Compressor::new(3);
            for e in &evs {
                c.push(e);
                if !g.push_checked(e.op, e.sig, &e.params, e.gap_ns, e.dur_ns) {
                    let n = g.convert(e);
                    g.push_node(n);
                }
                prop_assert_eq!(c.len(), g.len());
                prop_assert_eq!(c.events(), g.events());
            }
            prop_assert_eq!(c.finish(), g.finish());
        }
    }

    /// Loops of MPI-IO calls with children (the POSIX calls the library makes inside), mixed
    /// with plain calls: children of the same or repeated call sites, constant, affine,
    /// periodic or arbitrary values, a child with a path or its own child now and then, some
    /// calls without children, a parent with a path, with random timings.
    fn nested_stream() -> impl Strategy<Value = Vec<RawEvent>> {
        // (op, value kind, stride, noise, whether it carries a path or a grandchild)
        let child = (0usize..3, 0u8..5, -2i64..3, any::<u16>(), 0u8..12);
        // (parent op, offset kind, children, plain call after it, parent path)
        let call = (
            0usize..3,
            0u8..4,
            prop::collection::vec(child, 0..4),
            0u8..6,
            0u8..10,
        );
        let block = (prop::collection::vec(call, 1..3), 1i64..30, 1i64..4);
        prop::collection::vec(block, 1..4).prop_map(|blocks| {
            let mut out = Vec::new();
            let mut t = 5u64;
            let mut timed = |e: RawEvent| random_timing(&mut t, e);
            for (b, (calls, inner, outer)) in blocks.iter().enumerate() {
                for o in 0..*outer {
                    for i in 0..*inner {
                        for (k, (op, kind, children, plain, ppath)) in calls.iter().enumerate() {
                            let off = match kind {
                                0 => 4096,
                                1 => o * 1_000_000 + i * 64,
                                2 => [0, 64, 8][(i % 3) as usize],
                                _ => (i * 7919) % 613,
                            };
                            let op = [Op::FileWriteAt, Op::FileWriteAtAll, Op::FileReadAt][*op];
                            let mut e =
                                RawEvent::new(op, (b * 10 + k) as u64, vec![5, off, 8, 1, 8]);
                            if *ppath == 0 {
                                e.path = Some(format!("/d/f.{}", i % 2));
                            }
                            for (j, &(cop, ckind, stride, noise, extra)) in
                                children.iter().enumerate()
                            {
                                let v = match ckind {
                                    0 => 77,
                                    1 => off + j as i64 * 8,
                                    2 => i * stride * 8,
                                    3 => [0, 64][(i % 2) as usize],
                                    _ => (noise as i64 * (i + 1)) % 997,
                                };
                                let cop = [Op::Pwrite, Op::Pread, Op::Lseek][cop];
                                // Call sites 100 and 101 repeat within one parent now and then.
                                let sig = 100 + (j as u64 % 2) * (cop as u64 % 2);
                                let mut c = timed(RawEvent::new(cop, sig, vec![3, 8, v, 8]));
                                if extra == 0 {
                                    c.path = Some(format!("/d/g.{}", i % 3));
                                } else if extra == 1 {
                                    c.children.push(timed(RawEvent::new(
                                        Op::Pwrite,
                                        300,
                                        vec![3, 8, v, 8],
                                    )));
                                }
                                e.children.push(c);
                            }
                            out.push(timed(e));
                            if *plain == 0 {
                                out.push(timed(RawEvent::new(Op::Lseek, 200, vec![3, 0, 1, i])));
                            }
                        }
                    }
                }
            }
            out
        })
    }

    /// Pushes `evs` through the compressor and, calls with a path or children by
    /// `convert`/`push_node` (never the fast path), through the general folding: their sizes
    /// and call counts equal after every call, and their traces at the end or, with
    /// `every_call`, after every call.
    fn against_general_folding(
        evs: &[RawEvent],
        every_call: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut c = Compressor::new(3);
        let mut g = Compressor::new(3);
        for e in evs {
            c.push(e);
            if e.path.is_none() && e.children.is_empty() {
                g.push(e);
            } else {
                g.settle();
                let n = g.convert(e);
                g.push_node(n);
            }
            prop_assert_eq!(c.len(), g.len());
            prop_assert_eq!(c.events(), g.events());
            if every_call {
                prop_assert_eq!(c.finish(), g.finish());
            }
        }
        prop_assert_eq!(c.finish(), g.finish());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// A loop around a call with children extended in place gives what the general
        /// folding gives: the same trace, timing included to the bit, and the same compressed
        /// size and call count after every call.
        #[test]
        fn nested_fast_path_equals_general_folding(evs in nested_stream()) {
            against_general_folding(&evs, false)?;
        }
    }

    /// Loop nests around MPI-IO calls with children: `for a { for o { for i in 0..m(o) {
    /// call } } }` with inner counts constant, affine, periodic or arbitrary in the outer
    /// iteration, offsets that restart, advance or stay with each outer iteration, children
    /// whose values follow the offset or not, a plain call now and then between inner loops,
    /// random timings.
    fn nest_stream() -> impl Strategy<Value = Vec<RawEvent>> {
        // (inner count kind, base count, offset kind, children kinds, plain call kind, outer, outermost)
        let nest = (
            0u8..5,
            1i64..6,
            0u8..4,
            prop::collection::vec(0u8..4, 0..3),
            0u8..4,
            1i64..6,
            1i64..3,
        );
        prop::collection::vec(nest, 1..3).prop_map(|nests| {
            let mut out = Vec::new();
            let mut t = 11u64;
            let mut timed = |e: RawEvent| random_timing(&mut t, e);
            for (k, &(mkind, m, okind, ref children, plain, outer, outermost)) in
                nests.iter().enumerate()
            {
                for a in 0..outermost {
                    for o in 0..outer {
                        let inner = match mkind {
                            0 => m,
                            1 => m + o,
                            2 => [m, m + 2][(o % 2) as usize],
                            3 => (o * 7 + a * 3) % 5 + 1,
                            _ => m + a,
                        };
                        for i in 0..inner {
                            let off = match okind {
                                0 => i * 8,
                                1 => (a * outer + o) * 1000 + i * 8,
                                2 => 4096,
                                _ => [0, 16][(i % 2) as usize] + o * 64,
                            };
                            let mut e = RawEvent::new(
                                [Op::FileWriteAt, Op::FileWriteAtAll][k % 2],
                                k as u64,
                                vec![5, off, 8, 1, 8],
                            );
                            for (j, &ck) in children.iter().enumerate() {
                                let v = match ck {
                                    0 => off,
                                    1 => 77,
                                    2 => (i * 31 + o) % 7,
                                    _ => off + i * 8,
                                };
                                let op = [Op::Pwrite, Op::Lseek][j % 2];
                                e.children.push(timed(RawEvent::new(
                                    op,
                                    100 + j as u64,
                                    vec![3, 8, v, 8],
                                )));
                            }
                            out.push(timed(e));
                        }
                        if plain == 0 || (plain == 1 && o % 2 == 1) {
                            out.push(timed(RawEvent::new(Op::Lseek, 200, vec![3, 0, 1, o])));
                        }
                    }
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// In loop nests, the innermost loop around a call with children extended in place
        /// gives what the general folding gives, after every call.
        #[test]
        fn nested_fast_path_in_loop_nests_equals_general_folding(evs in nest_stream()) {
            against_general_folding(&evs, true)?;
        }
    }

    #[test]
    fn nested_fast_path_takes_the_inner_loop_of_a_nest() {
        // `for i { MPI_File_write_at(fh, (i % 64) * 8) }` with the library's pwrite: from the
        // second inner loop on, every call but the ones where the inner loop completes an
        // outer iteration (and the two that start the next) is extended in place.
        let mut c = Compressor::new(0);
        let mut g = Compressor::new(0);
        let mut general = 0;
        for i in 0..64 * 6i64 {
            let off = (i % 64) * 8;
            let mut e = RawEvent::new(Op::FileWriteAt, 1, vec![5, off, 8, 1, 8]);
            e.children
                .push(RawEvent::new(Op::Pwrite, 2, vec![3, 8, off, 8]));
            e.gap_ns = 10 + i as u64 % 7;
            e.dur_ns = 100 + i as u64 % 5;
            let before = (c.items.len(), c.nested);
            c.push(&e);
            if i >= 64 && !(before.1 && c.items.len() == before.0) {
                general += 1;
            }
            g.settle();
            let n = g.convert(&e);
            g.push_node(n);
        }
        assert_eq!(c.finish(), g.finish());
        // Per later inner loop: its first two calls (a call, then a loop of two) and its last.
        assert_eq!(general, 5 * 3);
    }

    #[test]
    fn nested_fast_path_takes_a_steady_mpiio_loop() {
        // `for i { MPI_File_write_at(fh, i*64) }`, each with the library's pwrite and lseek.
        let mut evs = Vec::new();
        for i in 0..100i64 {
            let mut e = RawEvent::new(Op::FileWriteAt, 1, vec![5, i * 64, 8, 1, 8]);
            e.children
                .push(RawEvent::new(Op::Lseek, 3, vec![3, i * 64, 0, i * 64]));
            e.children
                .push(RawEvent::new(Op::Pwrite, 2, vec![3, 8, i * 64, 8]));
            e.gap_ns = 10 + i as u64 % 7;
            e.dur_ns = 100 + i as u64 % 5;
            evs.push(e);
        }
        let mut c = Compressor::new(0);
        let mut g = Compressor::new(0);
        for (i, e) in evs.iter().enumerate() {
            let before = c.items.len();
            c.push(e);
            if i >= 2 {
                // Taken: the list did not change but for the loop's count.
                assert!(c.nested, "call {i}");
                assert_eq!(c.items.len(), before, "call {i}");
            }
            g.settle();
            let n = g.convert(e);
            g.push_node(n);
        }
        assert_eq!(c.finish(), g.finish());
        assert_eq!(c.len(), 1);
        assert_eq!(c.events(), 300);
    }

    #[test]
    fn cursor_walks_a_timestep_loop() {
        // `for s { for b in 0..4 { pwrite } lseek; fsync }`: after two steps, the cursor
        // takes every call of the later steps.
        let mut evs = Vec::new();
        for s in 0..50i64 {
            for b in 0..4 {
                evs.push(RawEvent::new(Op::Pwrite, 1, vec![3, 8, (s * 4 + b) * 8, 8]));
            }
            evs.push(RawEvent::new(Op::Lseek, 2, vec![3, 0, 1, (s + 1) * 32]));
            evs.push(RawEvent::new(Op::Fsync, 3, vec![3]));
        }
        let mut c = Compressor::new(0);
        for (i, e) in evs.iter().enumerate() {
            c.push(e);
            if i >= 3 * 6 {
                assert!(c.cursor.active, "call {i}");
            }
        }
        assert_eq!(c.finish(), checked(0, &evs));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn cursor_waits_for_a_last_inner_loop_to_close() {
        // The body ends with an inner loop of 3; one step runs it 4 times, another 2 times
        // and one is cut short: what the general folding makes of each.
        for (odd, inner) in [(6, 4), (6, 2), (6, 1), (7, 5)] {
            let mut evs = Vec::new();
            for s in 0..12i64 {
                evs.push(RawEvent::new(Op::Lseek, 2, vec![3, 0, 1, s * 64]));
                let n = if s == odd { inner } else { 3 };
                for b in 0..n {
                    evs.push(RawEvent::new(Op::Pwrite, 1, vec![3, 8, s * 64 + b * 8, 8]));
                }
            }
            let mut c = Compressor::new(0);
            for e in &evs {
                c.push(e);
            }
            assert_eq!(c.finish(), checked(0, &evs), "step {odd} with {inner}");
        }
    }

    /// A number equal to the process's pid is its run value where the program set it off
    /// (`log.4711`), never inside a random word (`b4711bs`, a temporary directory's suffix).
    #[test]
    fn a_pid_inside_a_word_stays_a_number() {
        let mut c = Compressor::new(0);
        c.set_run_ids(crate::runvalue::RunIds {
            own_pid: 4711,
            root_pid: None,
            jobs: Vec::new(),
            start_secs: 0,
            host: None,
        });
        let mut e = RawEvent::new(Op::Open, 1, vec![0]);
        e.path = Some("/dev/shm/t-b4711bs/log.4711".into());
        c.push(&e);
        let t = c.finish();
        let NodeKind::Event(ev) = &t.nodes[0].kind else {
            panic!("one open: {:?}", t.nodes)
        };
        let own = crate::runvalue::marker(crate::runvalue::RunKind::OwnPid);
        let fields: Vec<_> = ev.params[1..].iter().map(|p| p.eval(0, &[])).collect();
        assert_eq!(fields, [Some(4711), Some(own)]);
    }

    #[test]
    fn prediction_stops_short_of_overflow() {
        // Offsets near i64::MAX: the prediction must stop where `base + stride * n` overflows,
        // as the per-value check does.
        let step = i64::MAX / 4;
        let evs: Vec<RawEvent> = (0..6)
            .map(|i| RawEvent::new(Op::Pwrite, 1, vec![3, 8, (i as i64).wrapping_mul(step), 8]))
            .collect();
        let mut c = Compressor::new(0);
        for e in &evs {
            c.push(e);
        }
        assert_eq!(c.finish(), checked(0, &evs));
    }

    #[test]
    fn exact_sums_give_welford_statistics() {
        let xs = [5u64, 1_000, 17, 1 << 40, 3, 3, 0];
        let mut s = Sums::one(xs[0]);
        let mut w = Stats::one(xs[0], 2);
        for &x in &xs[1..] {
            s.add(x);
            w.add(x, 2);
        }
        let e = s.stats(2);
        assert_eq!(
            (e.count, e.min, e.max, e.bins),
            (w.count, w.min, w.max, w.bins)
        );
        assert!((e.mean - w.mean).abs() <= w.mean * 1e-12);
        assert!((e.m2 - w.m2).abs() <= w.m2 * 1e-9, "{} vs {}", e.m2, w.m2);
        // One value many times: no deviation at all.
        let mut s = Sums::one(123_456_789);
        for _ in 0..1000 {
            s.add(123_456_789);
        }
        assert_eq!(s.stats(0).m2, 0.0);
        assert_eq!(s.stats(0).mean, 123_456_789.0);
    }
}
