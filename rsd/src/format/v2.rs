//! The body of format version 2 (see `docs/format-v2.md`): what repeats is stored once.
//!
//! ```text
//! body     := blob(header) strings sigs ranksets nodes
//! blob     := varint length, MessagePack bytes (rmp-serde, struct-as-array, as in version 1)
//! strings  := varint n, n x (varint length, UTF-8)    op names and path templates
//! sigs     := varint n, n x u64 little-endian          call sites
//! ranksets := varint n, n x rankset
//! rankset  := varint runs, runs x (varint start, varint dims, dims x (varint count, varint stride))
//! nodes    := varint n, n x node
//! node     := varint (rankset index << 1 | is_loop)
//!             event: varint op (string index), varint sig index, varint path (0: none, else
//!                    string index + 1), varint params, params x elastic, timing, nodes
//!             loop:  elastic (iterations), nodes
//! elastic  := varint groups, groups x (varint rankset index, val)
//! val      := tag byte, then (zz: zigzag varint)
//!             0 Const(Const(x)): zz x        1 Const(f): rankfn
//!             2 Lin: rankfn base, varint n, n x rankfn
//!             3 Seq: varint n, n x val       4 Cycle: varint n, n x val
//!             5 Seq of constants: varint n, zz first, (n-1) x zz difference to the previous
//!             6 Approx, 7 Exscan, 8 FileEnd: blob (as in version 1)
//! rankfn   := tag byte (0 Const, 1 Affine, 2 Div, 3 Mod, 4 Shift, 5 Step), zz fields in
//!             declaration order (Step's `t` as varint)
//! timing   := flags byte (1: the duration has its own count, 2: prediction intervals follow),
//!             varint count (the gap's), [varint duration count], stats(gap), stats(dur),
//!             [4 x f64: gap lo, hi, dur lo, hi]
//! stats    := varint min, varint (max - min, wrapping), varint min_rank, varint max_rank,
//!             float mean, float m2, bins
//! float    := tag byte 0: +0.0 | 1: varint integer | 2: varint sum, the value is
//!             sum / count | 3: f64 little-endian
//! bins     := varint mask (bit b: bin b not empty; bit 16: every count stored), the counts of
//!             the non-empty bins in order, the last one left out unless bit 16 is set (it is
//!             the count minus the others)
//! ```
//!
//! Every integer is a LEB128 varint, so a counter takes as many bytes as its value needs and a
//! table index one byte for the first 128 entries. The decoder checks every length against the
//! bytes left, every index against its table, and the nesting depth, before it allocates.

use crate::approx::Summary;
use crate::format::{Header, TraceFile};
use crate::layout::FileEnd;
use crate::op::Op;
use crate::path::PathTemplate;
use crate::prefix::Exscan;
use crate::ranks::{Prsd, RankSet};
use crate::timing::{BINS, GapWaits, Interval, Intervals, Stats, Timing};
use crate::trace::{Event, Loop, Node, NodeKind, Trace};
use crate::value::{Elastic, Group, MAX_DEPTH, RankFn, Val};
use std::collections::HashMap;

/// Where a body's bytes go: each byte the encoder writes is counted under one part, split
/// between the application's calls and the calls nested inside them (an MPI library's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// The header (command, notes, MPI configuration...).
    Header,
    /// The string table: operation names and path templates.
    Strings,
    /// The call-site table.
    CallSites,
    /// The rank-set table.
    RankSets,
    /// Node tags, counts and lengths, rank-set references.
    Structure,
    /// An event's operation, call site and path references.
    Identity,
    /// Parameters (elastic values).
    Params,
    /// Loop iteration counts.
    Iterations,
    /// Timing records.
    Timing,
}

impl Part {
    /// Every part, in the order they are printed.
    pub const ALL: [Part; 9] = [
        Part::Header,
        Part::Strings,
        Part::CallSites,
        Part::RankSets,
        Part::Structure,
        Part::Identity,
        Part::Params,
        Part::Iterations,
        Part::Timing,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Part::Header => "header",
            Part::Strings => "string table (ops, paths)",
            Part::CallSites => "call-site table",
            Part::RankSets => "rank-set table",
            Part::Structure => "structure (tags, lengths, rank refs)",
            Part::Identity => "op, call site, path refs",
            Part::Params => "parameters",
            Part::Iterations => "loop iteration counts",
            Part::Timing => "timing records",
        }
    }
}

/// Bytes per (part, nested) of one encoded body; `nested` is true for the calls inside other
/// calls (and the loops among them).
pub type Breakdown = std::collections::BTreeMap<(Part, bool), u64>;

struct Writer {
    out: Vec<u8>,
    part: Part,
    nested: bool,
    sizes: Breakdown,
    strings: Vec<String>,
    string_ix: HashMap<String, u64>,
    sigs: Vec<u64>,
    sig_ix: HashMap<u64, u64>,
    ranksets: Vec<RankSet>,
    rankset_ix: HashMap<RankSet, u64>,
    /// How timing records are laid out (minor version 7 changed it).
    layout: TimingLayout,
    /// Each rank set's positions, computed once per set the timing records use.
    positions: HashMap<u64, Option<Positions>>,
}

impl Writer {
    fn byte(&mut self, b: u8) {
        self.out.push(b);
        *self.sizes.entry((self.part, self.nested)).or_default() += 1;
    }

    fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
        *self.sizes.entry((self.part, self.nested)).or_default() += b.len() as u64;
    }

    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.byte(b);
                return;
            }
            self.byte(b | 0x80);
        }
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn blob<T: serde::Serialize>(&mut self, v: &T) -> Result<(), crate::RsdError> {
        let b = rmp_serde::to_vec(v).map_err(|e| crate::RsdError::Encode(e.to_string()))?;
        self.varint(b.len() as u64);
        self.bytes(&b);
        Ok(())
    }

    fn string(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.string_ix.get(s) {
            return i;
        }
        let i = self.strings.len() as u64;
        self.strings.push(s.to_string());
        self.string_ix.insert(s.to_string(), i);
        i
    }

    fn sig(&mut self, s: u64) -> u64 {
        let n = self.sigs.len() as u64;
        *self.sig_ix.entry(s).or_insert_with(|| {
            self.sigs.push(s);
            n
        })
    }

    fn rankset(&mut self, r: &RankSet) -> u64 {
        if let Some(&i) = self.rankset_ix.get(r) {
            return i;
        }
        let i = self.ranksets.len() as u64;
        self.ranksets.push(r.clone());
        self.rankset_ix.insert(r.clone(), i);
        i
    }

    /// Fills the tables in the order the nodes will use them (first use, depth first), so
    /// the most used entries (the first nodes' rank set, ops) get one-byte indices.
    fn collect(&mut self, nodes: &[Node]) {
        for n in nodes {
            self.rankset(&n.ranks);
            match &n.kind {
                NodeKind::Event(e) => {
                    self.string(op_name(e.op));
                    self.sig(e.sig);
                    if let Some(p) = &e.path {
                        self.string(&p.0);
                    }
                    for p in &e.params {
                        p.groups.iter().for_each(|g| {
                            self.rankset(&g.ranks);
                        });
                    }
                    self.collect(&e.children);
                }
                NodeKind::Loop(l) => {
                    l.iters.groups.iter().for_each(|g| {
                        self.rankset(&g.ranks);
                    });
                    self.collect(&l.body);
                }
            }
        }
    }

    /// Writes a node list; its length counts with the enclosing node (`self.nested` as the
    /// caller left it), its nodes as `nested`.
    fn nodes(&mut self, nodes: &[Node], nested: bool) {
        self.part = Part::Structure;
        self.varint(nodes.len() as u64);
        for n in nodes {
            self.nested = nested;
            self.part = Part::Structure;
            let rs = self.rankset_ix[&n.ranks];
            match &n.kind {
                NodeKind::Event(e) => {
                    self.varint(rs << 1);
                    self.part = Part::Identity;
                    let op = self.string_ix[op_name(e.op)];
                    self.varint(op);
                    let sig = self.sig_ix[&e.sig];
                    self.varint(sig);
                    let path = e.path.as_ref().map_or(0, |p| self.string_ix[&p.0] + 1);
                    self.varint(path);
                    self.part = Part::Params;
                    self.varint(e.params.len() as u64);
                    for p in &e.params {
                        self.elastic(p);
                    }
                    self.part = Part::Timing;
                    match self.layout {
                        TimingLayout::Plain => self.timing(&e.timing),
                        TimingLayout::Sized => self.timing_sized(&e.timing, rs, &n.ranks),
                    }
                    self.nodes(&e.children, true);
                    self.nested = nested;
                }
                NodeKind::Loop(l) => {
                    self.varint(rs << 1 | 1);
                    self.part = Part::Iterations;
                    self.elastic(&l.iters);
                    self.nodes(&l.body, nested);
                }
            }
        }
    }

    fn elastic(&mut self, e: &Elastic) {
        self.varint(e.groups.len() as u64);
        for g in &e.groups {
            let i = self.rankset_ix[&g.ranks];
            self.varint(i);
            self.val(&g.val);
        }
    }

    fn val(&mut self, v: &Val<RankFn>) {
        match v {
            Val::Const(RankFn::Const(x)) => {
                self.byte(0);
                self.zigzag(*x);
            }
            Val::Const(f) => {
                self.byte(1);
                self.rankfn(f);
            }
            Val::Lin { base, strides } => {
                self.byte(2);
                self.rankfn(base);
                self.varint(strides.len() as u64);
                strides.iter().for_each(|s| self.rankfn(s));
            }
            Val::Seq(items) => {
                let consts: Option<Vec<i64>> = items
                    .iter()
                    .map(|i| match i {
                        Val::Const(RankFn::Const(x)) => Some(*x),
                        _ => None,
                    })
                    .collect();
                match consts {
                    // Explicit vectors are mostly offsets or sizes in order: their
                    // differences are small where the values are not.
                    Some(xs) if !xs.is_empty() => {
                        self.byte(5);
                        self.varint(xs.len() as u64);
                        let mut prev = 0i64;
                        for x in xs {
                            self.zigzag(x.wrapping_sub(prev));
                            prev = x;
                        }
                    }
                    _ => {
                        self.byte(3);
                        self.varint(items.len() as u64);
                        items.iter().for_each(|i| self.val(i));
                    }
                }
            }
            Val::Cycle(items) => {
                self.byte(4);
                self.varint(items.len() as u64);
                items.iter().for_each(|i| self.val(i));
            }
            // Rare (declared approximations, shared-file dump models): as in version 1.
            Val::Approx(s) => {
                self.byte(6);
                self.blob_infallible(s.as_ref());
            }
            Val::Exscan(x) => {
                self.byte(7);
                self.blob_infallible(x.as_ref());
            }
            Val::FileEnd(x) => {
                self.byte(8);
                self.blob_infallible(x.as_ref());
            }
            // Minor version 10: the kind's code, no number (a run's number is not kept).
            Val::Run(k) => {
                self.byte(9);
                self.byte(k.code());
            }
        }
    }

    /// The rare parts' MessagePack cannot fail (plain data, no maps with non-string keys);
    /// an empty blob would be refused by the reader, never silently accepted.
    fn blob_infallible<T: serde::Serialize>(&mut self, v: &T) {
        if self.blob(v).is_err() {
            self.varint(0);
        }
    }

    fn rankfn(&mut self, f: &RankFn) {
        match *f {
            RankFn::Const(c) => {
                self.byte(0);
                self.zigzag(c);
            }
            RankFn::Affine { a, b } => {
                self.byte(1);
                self.zigzag(a);
                self.zigzag(b);
            }
            RankFn::Div { a, k, b } => {
                self.byte(2);
                self.zigzag(a);
                self.zigzag(k);
                self.zigzag(b);
            }
            RankFn::Mod { a, k, b } => {
                self.byte(3);
                self.zigzag(a);
                self.zigzag(k);
                self.zigzag(b);
            }
            RankFn::Shift { w, p, o } => {
                self.byte(4);
                self.zigzag(w);
                self.zigzag(p);
                self.zigzag(o);
            }
            RankFn::Step { a, k, b, t, d } => {
                self.byte(5);
                self.zigzag(a);
                self.zigzag(k);
                self.zigzag(b);
                self.varint(u64::from(t));
                self.zigzag(d);
            }
        }
    }

    fn timing(&mut self, t: &Timing) {
        let own_count = t.gap.count != t.dur.count;
        self.byte(u8::from(own_count) | u8::from(t.interval.is_some()) << 1);
        self.varint(t.gap.count);
        if own_count {
            self.varint(t.dur.count);
        }
        self.stats(&t.gap);
        self.stats(&t.dur);
        if let Some(iv) = &t.interval {
            self.intervals(iv);
        }
    }

    /// A timing record's prediction intervals: four floats, exact.
    fn intervals(&mut self, iv: &Intervals) {
        for x in [iv.gap.lo, iv.gap.hi, iv.dur.lo, iv.dur.hi] {
            self.bytes(&x.to_le_bytes());
        }
    }

    fn stats(&mut self, s: &Stats) {
        self.varint(s.min);
        self.varint(s.max.wrapping_sub(s.min));
        self.varint(u64::from(s.min_rank));
        self.varint(u64::from(s.max_rank));
        self.float(s.mean, Some(s.count));
        self.float(s.m2, None);
        // The last non-empty bin's count follows from the count where the bins sum to it.
        let (mut mask, derive) = bin_mask(s);
        if !derive {
            mask |= 1 << BINS;
        }
        self.varint(mask);
        let last = (0..BINS).rev().find(|&b| s.bins[b] != 0);
        for (b, &c) in s.bins.iter().enumerate() {
            if c != 0 && !(derive && Some(b) == last) {
                self.varint(c);
            }
        }
    }

    /// A timing record in the layout of minor version 7 (see the module's text): the count
    /// per rank of the node's rank set where it divides, the extreme ranks as positions in
    /// that set, and each statistic's number tags in one byte.
    fn timing_sized(&mut self, t: &Timing, rs: u64, ranks: &RankSet) {
        let own_count = t.gap.count != t.dur.count;
        let size = set_len(ranks);
        let per_rank = size > 0 && t.gap.count.is_multiple_of(size);
        let pos = self
            .positions
            .entry(rs)
            .or_insert_with(|| Positions::of(ranks))
            .clone();
        // Positions only where every extreme rank is in the set (a merged or extrapolated
        // trace may name another rank): otherwise the ranks themselves.
        let at = |r: u32| pos.as_ref().and_then(|p| p.index(r));
        let positions: Option<Vec<u64>> = [
            t.gap.min_rank,
            t.gap.max_rank,
            t.dur.min_rank,
            t.dur.max_rank,
        ]
        .into_iter()
        .map(at)
        .collect();
        let flags = u8::from(own_count)
            | u8::from(t.interval.is_some()) << 1
            | u8::from(per_rank) << 2
            | u8::from(positions.is_some()) << 3
            | u8::from(t.waits.is_some()) << 4;
        self.byte(flags);
        self.varint(if per_rank {
            t.gap.count / size
        } else {
            t.gap.count
        });
        if own_count {
            self.varint(t.dur.count);
        }
        // One rank in the set: its position is 0 four times, stored as nothing.
        let ranks_of = |k: usize| match &positions {
            Some(_) if size == 1 => None,
            Some(p) => Some([p[k], p[k + 1]]),
            None => None,
        };
        let (gr, dr) = (ranks_of(0), ranks_of(2));
        self.stats_sized(&t.gap, positions.is_some(), gr);
        self.stats_sized(&t.dur, positions.is_some(), dr);
        if let Some(iv) = &t.interval {
            self.intervals(iv);
        }
        if let Some(w) = &t.waits {
            self.varint(w.runq_ns);
            self.varint(w.blocked_ns);
        }
    }

    /// One statistic in the layout of minor version 7: `positions` says the extreme ranks are
    /// positions (`pos`, or nothing for a one-rank set), else they are stored as ranks.
    fn stats_sized(&mut self, s: &Stats, positions: bool, pos: Option<[u64; 2]>) {
        self.varint(s.min);
        self.varint(s.max.wrapping_sub(s.min));
        match (positions, pos) {
            (true, Some([a, b])) => {
                self.varint(a);
                self.varint(b);
            }
            (true, None) => {}
            (false, _) => {
                self.varint(u64::from(s.min_rank));
                self.varint(u64::from(s.max_rank));
            }
        }
        let (mask, derive) = bin_mask(s);
        // Bins below the minimum's are empty in every recorded statistic: the mask starts at
        // the minimum's bin where that holds.
        let first = crate::timing::bin_of(s.min);
        let shifted = mask & ((1u64 << first) - 1) == 0;
        let pred = predicted_sum(&s.bins, s.min, s.max);
        let (mt, mp) = float_code(s.mean, Some(s.count), Some(pred));
        let (vt, vp) = float_code(s.m2, Some(s.count), None);
        // The derived bin is the larger of the first and the last non-empty ones: the one
        // whose count is widest (the fast calls' bin, in a long-tailed distribution).
        let last = (0..BINS).rev().find(|&b| s.bins[b] != 0);
        let lowest = (0..BINS).find(|&b| s.bins[b] != 0);
        let from_first = match (lowest, last) {
            (Some(f), Some(l)) => derive && s.bins[f] > s.bins[l],
            _ => false,
        };
        let derived = if from_first { lowest } else { last };
        self.byte(
            mt | vt << 3
                | u8::from(shifted) << 5
                | u8::from(!derive) << 6
                | u8::from(from_first) << 7,
        );
        self.varint(if shifted { mask >> first } else { mask });
        for (b, &c) in s.bins.iter().enumerate() {
            if c != 0 && !(derive && Some(b) == derived) {
                self.varint(c);
            }
        }
        self.bytes(&mp);
        self.bytes(&vp);
    }

    /// A float as its shortest exact form: zero, an integer, a sum over `count` (a mean taken
    /// from integer sums), or its 8 bytes. Exact to the bit (`-0.0` keeps its sign).
    fn float(&mut self, x: f64, count: Option<u64>) {
        if x.to_bits() == 0 {
            self.byte(0);
            return;
        }
        if (1.0..1.8e19).contains(&x) && x.fract() == 0.0 {
            self.byte(1);
            self.varint(x as u64);
            return;
        }
        if let Some(n) = count.filter(|&n| n > 1) {
            let sum = (x * n as f64).round();
            if (0.0..1.8e19).contains(&sum)
                && ((sum as u64) as f64 / n as f64).to_bits() == x.to_bits()
            {
                self.byte(2);
                self.varint(sum as u64);
                return;
            }
        }
        self.byte(3);
        self.bytes(&x.to_le_bytes());
    }
}

/// How a version-2 body lays out its timing records: as minor versions 0 to 6 wrote them, or
/// as minor version 7 does (counts per rank, extreme ranks as positions in the node's rank
/// set, the mean as a residual from the histogram's prediction, number tags in one byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingLayout {
    /// Minor versions 0 to 6.
    Plain,
    /// Minor version 7 and later.
    Sized,
}

/// The minor version that introduced [`TimingLayout::Sized`].
pub const SIZED_TIMING_MINOR: u32 = 7;

/// Ranks in a set, saturating (a damaged file's runs may claim more than 2^64).
fn set_len(r: &RankSet) -> u64 {
    r.runs.iter().fold(0u64, |a, p| a.saturating_add(p.len()))
}

/// The positions of a rank set's members, in the order of its runs: where every run is one
/// dimension (a start, a count and a stride: all ranks, every k-th rank, lists of ranges),
/// position `i` is found by a binary search over the runs. Sets with runs of more dimensions
/// (rare: the interior of a process grid) store ranks as they are.
#[derive(Debug, Clone)]
struct Positions {
    /// (start, stride, count) per run.
    runs: Vec<(u64, u64, u64)>,
    /// The position of each run's first member.
    before: Vec<u64>,
    len: u64,
}

impl Positions {
    fn of(r: &RankSet) -> Option<Positions> {
        let mut runs = Vec::with_capacity(r.runs.len());
        let mut before = Vec::with_capacity(r.runs.len());
        let mut len = 0u64;
        for p in &r.runs {
            let [(c, st)] = p.dims.as_slice() else {
                return None;
            };
            before.push(len);
            runs.push((u64::from(p.start), u64::from(*st), u64::from(*c)));
            len = len.checked_add(u64::from(*c))?;
        }
        Some(Positions { runs, before, len })
    }

    /// The position of rank `r` (in its first run that holds it), if the set holds it.
    fn index(&self, r: u32) -> Option<u64> {
        let r = u64::from(r);
        self.runs
            .iter()
            .zip(&self.before)
            .find_map(|(&(start, stride, count), &b)| {
                let off = r.checked_sub(start)?;
                let k = match stride {
                    0 => (off == 0 && count > 0).then_some(0)?,
                    s => (off.is_multiple_of(s) && off / s < count).then_some(off / s)?,
                };
                Some(b + k)
            })
    }

    /// The rank at position `i`.
    fn rank(&self, i: u64) -> Option<u32> {
        if i >= self.len {
            return None;
        }
        let k = self.before.partition_point(|&b| b <= i).checked_sub(1)?;
        let (start, stride, _) = self.runs[k];
        u32::try_from(start + (i - self.before[k]) * stride).ok()
    }
}

/// The mask of a statistic's non-empty bins, and whether they sum exactly to its count (then
/// one non-empty bin's count is derived from the count rather than stored).
fn bin_mask(s: &Stats) -> (u64, bool) {
    let mut mask = 0u64;
    let mut sum = 0u64;
    let mut exact = true;
    for (b, &c) in s.bins.iter().enumerate() {
        if c != 0 {
            mask |= 1 << b;
            sum = match sum.checked_add(c) {
                Some(x) => x,
                None => {
                    exact = false;
                    sum
                }
            };
        }
    }
    (mask, exact && sum == s.count && mask != 0)
}

/// What a histogram says the sum of its samples is: each non-empty bin's count times the
/// middle of the bin cut to `[min, max]`. The mean is stored as the exact sum's difference
/// from this, which is small where samples spread evenly within their bins; the decoder
/// computes the same number from the same stored fields.
fn predicted_sum(bins: &[u64; BINS], min: u64, max: u64) -> u128 {
    let mut sum = 0u128;
    for (b, &c) in bins.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let lo = if b == 0 { 0 } else { 1u64 << (2 * b) };
        let hi = if b == BINS - 1 {
            u64::MAX
        } else {
            (1u64 << (2 * b + 2)) - 1
        };
        let (lo, hi) = (lo.max(min), hi.min(max));
        let mid = if lo <= hi {
            (u128::from(lo) + u128::from(hi)) / 2
        } else {
            u128::from(min)
        };
        sum = sum.saturating_add(u128::from(c).saturating_mul(mid));
    }
    sum
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A float's tag and payload in the layout of minor version 7: 0 +0.0, 1 an integer, 2 a sum
/// over `count`, 3 its 8 bytes, 4 (with a prediction) the sum's difference from `pred`,
/// zigzag; the shortest exact one. Tags 0 to 3 are the plain layout's.
fn float_code(x: f64, count: Option<u64>, pred: Option<u128>) -> (u8, Vec<u8>) {
    let (tag, out) = float_code_varint(x, count, pred);
    if out.len() > 8 {
        return (3, x.to_le_bytes().to_vec());
    }
    (tag, out)
}

fn float_code_varint(x: f64, count: Option<u64>, pred: Option<u128>) -> (u8, Vec<u8>) {
    let mut out = Vec::new();
    if x.to_bits() == 0 {
        return (0, out);
    }
    if (1.0..1.8e19).contains(&x) && x.fract() == 0.0 {
        put_varint(&mut out, x as u64);
        return (1, out);
    }
    if let Some(n) = count.filter(|&n| n > 1) {
        let sum = (x * n as f64).round();
        if (0.0..1.8e19).contains(&sum) && ((sum as u64) as f64 / n as f64).to_bits() == x.to_bits()
        {
            let sum = sum as u64;
            put_varint(&mut out, sum);
            if let Some(d) = pred.and_then(|p| i64::try_from(i128::from(sum) - p as i128).ok()) {
                let mut r = Vec::new();
                put_varint(&mut r, ((d << 1) ^ (d >> 63)) as u64);
                if r.len() < out.len() {
                    return (4, r);
                }
            }
            return (2, out);
        }
    }
    out.extend_from_slice(&x.to_le_bytes());
    (3, out)
}

/// The name an operation is stored under: its serde variant name, as version 1 stores it
/// (so a newer writer's operation is named, not mistaken for damage).
fn op_name(op: Op) -> &'static str {
    use std::sync::OnceLock;
    static NAMES: OnceLock<HashMap<Op, &'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        Op::ALL
            .iter()
            .map(|&op| {
                let name = match serde_json::to_value(op) {
                    Ok(serde_json::Value::String(s)) => s,
                    _ => format!("{op:?}"),
                };
                (op, &*Box::leak(name.into_boxed_str()))
            })
            .collect()
    })[&op]
}

fn op_by_name(name: &str) -> Option<Op> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

/// Encodes a body with its timing records in `layout`, and says where its bytes went.
pub fn encode(
    tf: &TraceFile,
    layout: TimingLayout,
) -> Result<(Vec<u8>, Breakdown), crate::RsdError> {
    let mut w = Writer {
        layout,
        positions: HashMap::new(),
        out: Vec::new(),
        part: Part::Header,
        nested: false,
        sizes: Breakdown::new(),
        strings: Vec::new(),
        string_ix: HashMap::new(),
        sigs: Vec::new(),
        sig_ix: HashMap::new(),
        ranksets: Vec::new(),
        rankset_ix: HashMap::new(),
    };
    w.blob(&tf.header)?;
    w.collect(&tf.trace.nodes);
    w.part = Part::Strings;
    w.varint(w.strings.len() as u64);
    for s in std::mem::take(&mut w.strings) {
        w.varint(s.len() as u64);
        w.bytes(s.as_bytes());
    }
    w.part = Part::CallSites;
    w.varint(w.sigs.len() as u64);
    for s in std::mem::take(&mut w.sigs) {
        w.bytes(&s.to_le_bytes());
    }
    w.part = Part::RankSets;
    w.varint(w.ranksets.len() as u64);
    for r in std::mem::take(&mut w.ranksets) {
        w.varint(r.runs.len() as u64);
        for p in &r.runs {
            w.varint(u64::from(p.start));
            w.varint(p.dims.len() as u64);
            for &(c, s) in &p.dims {
                w.varint(u64::from(c));
                w.varint(u64::from(s));
            }
        }
    }
    w.nested = false;
    w.nodes(&tf.trace.nodes, false);
    Ok((w.out, w.sizes))
}

/// Why a body does not decode (the caller names the file).
pub enum DecodeError {
    /// Damage, in words.
    Corrupt(String),
    /// An operation name this build does not know: a newer writer's.
    UnknownOp(String),
}

type R<T> = Result<T, DecodeError>;

fn bad<T>(what: impl Into<String>) -> R<T> {
    Err(DecodeError::Corrupt(what.into()))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    strings: Vec<String>,
    ops: Vec<Option<Op>>,
    sigs: Vec<u64>,
    ranksets: Vec<RankSet>,
    layout: TimingLayout,
    /// Each rank set's positions, computed once per set the timing records use.
    positions: HashMap<usize, Option<Positions>>,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> R<u8> {
        let b = *self
            .b
            .get(self.at)
            .ok_or_else(|| DecodeError::Corrupt(format!("body ends early at byte {}", self.at)))?;
        self.at += 1;
        Ok(b)
    }

    fn take(&mut self, n: u64) -> R<&'a [u8]> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            return bad(format!(
                "a length of {n} at byte {} runs past the body's end ({left} bytes left)",
                self.at
            ));
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn varint(&mut self) -> R<u64> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bad(format!("integer at byte {start} is longer than 64 bits"))
    }

    fn u32(&mut self, what: &str) -> R<u32> {
        let at = self.at;
        u32::try_from(self.varint()?)
            .or_else(|_| bad(format!("{what} at byte {at} does not fit 32 bits")))
    }

    fn zigzag(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A count of items each at least one byte long: more than the bytes left is damage, and
    /// checking it first keeps a hostile count from allocating.
    fn len(&mut self, what: &str) -> R<usize> {
        let at = self.at;
        let n = self.varint()?;
        if n > (self.b.len() - self.at) as u64 {
            return bad(format!(
                "{what} count {n} at byte {at} exceeds the bytes left"
            ));
        }
        Ok(n as usize)
    }

    fn index(&mut self, len: usize, what: &str) -> R<usize> {
        let at = self.at;
        let i = self.varint()?;
        if i >= len as u64 {
            return bad(format!(
                "{what} index {i} at byte {at} is past its table ({len} entries)"
            ));
        }
        Ok(i as usize)
    }

    fn blob<T: serde::de::DeserializeOwned>(&mut self, what: &str) -> R<T> {
        let n = self.varint()?;
        let bytes = self.take(n)?;
        let mut rest = bytes;
        let mut de = rmp_serde::Deserializer::new(&mut rest);
        de.set_max_depth(4 * MAX_DEPTH + 32);
        let v = serde::Deserialize::deserialize(&mut de)
            .map_err(|e| DecodeError::Corrupt(format!("{what}: {e}")))?;
        drop(de);
        if !rest.is_empty() {
            return bad(format!("{what}: {} bytes left over", rest.len()));
        }
        Ok(v)
    }

    fn rankset(&mut self) -> R<RankSet> {
        let i = self.index(self.ranksets.len(), "rank set")?;
        Ok(self.ranksets[i].clone())
    }

    fn nodes(&mut self, depth: usize) -> R<Vec<Node>> {
        if depth > MAX_DEPTH {
            return bad("loops nested too deeply");
        }
        let n = self.len("node")?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.at;
            let tag = self.varint()?;
            let rs = (tag >> 1) as usize;
            let ranks = match self.ranksets.get(rs) {
                Some(r) => r.clone(),
                None => {
                    return bad(format!(
                        "rank set of the node at byte {at} is past its table"
                    ));
                }
            };
            let kind = if tag & 1 == 0 {
                let oi = self.index(self.strings.len(), "operation")?;
                let op = match self.ops[oi] {
                    Some(op) => op,
                    None => return Err(DecodeError::UnknownOp(self.strings[oi].clone())),
                };
                let si = self.index(self.sigs.len(), "call site")?;
                let path = match self.varint()? {
                    0 => None,
                    p => match self.strings.get(p as usize - 1) {
                        Some(s) => Some(PathTemplate(s.clone())),
                        None => return bad(format!("path index {} past its table", p - 1)),
                    },
                };
                let np = self.len("parameter")?;
                let params = (0..np)
                    .map(|_| self.elastic(depth))
                    .collect::<R<Vec<_>>>()?;
                let timing = match self.layout {
                    TimingLayout::Plain => self.timing()?,
                    TimingLayout::Sized => self.timing_sized(rs)?,
                };
                let children = self.nodes(depth + 1)?;
                NodeKind::Event(Event {
                    op,
                    sig: self.sigs[si],
                    path,
                    params,
                    timing,
                    children,
                })
            } else {
                let iters = self.elastic(depth)?;
                let body = self.nodes(depth + 1)?;
                NodeKind::Loop(Loop { iters, body })
            };
            out.push(Node { ranks, kind });
        }
        Ok(out)
    }

    fn elastic(&mut self, depth: usize) -> R<Elastic> {
        let n = self.len("group")?;
        let groups = (0..n)
            .map(|_| {
                Ok(Group {
                    ranks: self.rankset()?,
                    val: self.val(depth)?,
                })
            })
            .collect::<R<Vec<_>>>()?;
        Ok(Elastic { groups })
    }

    fn val(&mut self, depth: usize) -> R<Val<RankFn>> {
        if depth > MAX_DEPTH {
            return bad("values nested too deeply");
        }
        let at = self.at;
        Ok(match self.byte()? {
            0 => Val::Const(RankFn::Const(self.zigzag()?)),
            1 => Val::Const(self.rankfn()?),
            2 => {
                let base = self.rankfn()?;
                let n = self.len("stride")?;
                let strides = (0..n).map(|_| self.rankfn()).collect::<R<Vec<_>>>()?;
                Val::Lin { base, strides }
            }
            t @ (3 | 4) => {
                let n = self.len("value")?;
                let items = (0..n).map(|_| self.val(depth + 1)).collect::<R<Vec<_>>>()?;
                if t == 3 {
                    Val::Seq(items)
                } else {
                    Val::Cycle(items)
                }
            }
            5 => {
                let n = self.len("value")?;
                let mut prev = 0i64;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    prev = prev.wrapping_add(self.zigzag()?);
                    items.push(Val::Const(RankFn::Const(prev)));
                }
                Val::Seq(items)
            }
            6 => Val::Approx(Box::new(self.blob::<Summary>("summary")?)),
            7 => Val::Exscan(Box::new(self.blob::<Exscan<RankFn>>("prefix-sum model")?)),
            8 => Val::FileEnd(Box::new(self.blob::<FileEnd<RankFn>>("end-of-file model")?)),
            9 => {
                let at = self.at;
                let c = self.byte()?;
                match crate::runvalue::RunKind::from_code(c) {
                    Some(k) => Val::Run(k),
                    None => return bad(format!("unknown run value kind {c} at byte {at}")),
                }
            }
            t => return bad(format!("unknown value tag {t} at byte {at}")),
        })
    }

    fn rankfn(&mut self) -> R<RankFn> {
        let at = self.at;
        Ok(match self.byte()? {
            0 => RankFn::Const(self.zigzag()?),
            1 => RankFn::Affine {
                a: self.zigzag()?,
                b: self.zigzag()?,
            },
            2 => RankFn::Div {
                a: self.zigzag()?,
                k: self.zigzag()?,
                b: self.zigzag()?,
            },
            3 => RankFn::Mod {
                a: self.zigzag()?,
                k: self.zigzag()?,
                b: self.zigzag()?,
            },
            4 => RankFn::Shift {
                w: self.zigzag()?,
                p: self.zigzag()?,
                o: self.zigzag()?,
            },
            5 => RankFn::Step {
                a: self.zigzag()?,
                k: self.zigzag()?,
                b: self.zigzag()?,
                t: self.u32("jump rank")?,
                d: self.zigzag()?,
            },
            t => return bad(format!("unknown rank function tag {t} at byte {at}")),
        })
    }

    fn timing(&mut self) -> R<Timing> {
        let at = self.at;
        let flags = self.byte()?;
        if flags > 3 {
            return bad(format!("unknown timing flags {flags:#x} at byte {at}"));
        }
        let gap_count = self.varint()?;
        let dur_count = if flags & 1 != 0 {
            self.varint()?
        } else {
            gap_count
        };
        let gap = self.stats(gap_count)?;
        let dur = self.stats(dur_count)?;
        let interval = if flags & 2 != 0 {
            Some(self.intervals()?)
        } else {
            None
        };
        Ok(Timing {
            gap,
            dur,
            interval,
            waits: None,
        })
    }

    /// A timing record's prediction intervals ([`Writer::intervals`]).
    fn intervals(&mut self) -> R<Intervals> {
        let mut f = || -> R<f64> {
            Ok(f64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            ))
        };
        Ok(Intervals {
            gap: Interval { lo: f()?, hi: f()? },
            dur: Interval { lo: f()?, hi: f()? },
        })
    }

    /// The histogram's bins named by `mask`, each stored but the derived one: `derived` is
    /// `Some(bin)` where its count follows from the statistic's `count` (None inside: the
    /// mask is empty, which cannot be), `None` where every bin is stored. `at`: the mask's
    /// byte, for errors.
    fn bins(
        &mut self,
        mask: u64,
        derived: Option<Option<usize>>,
        count: u64,
        at: usize,
    ) -> R<[u64; BINS]> {
        let mut bins = [0u64; BINS];
        let mut sum = 0u64;
        for (b, bin) in bins.iter_mut().enumerate() {
            if mask & (1 << b) != 0 && derived != Some(Some(b)) {
                *bin = self.varint()?;
                sum = sum.saturating_add(*bin);
            }
        }
        match derived {
            None => {}
            Some(Some(b)) => {
                bins[b] = match count.checked_sub(sum) {
                    Some(c) if c > 0 => c,
                    _ => return bad(format!("histogram at byte {at} holds more than its count")),
                };
            }
            Some(None) => {
                return bad(format!(
                    "histogram at byte {at} is empty but says its count is derived"
                ));
            }
        }
        Ok(bins)
    }

    fn stats(&mut self, count: u64) -> R<Stats> {
        let min = self.varint()?;
        let max = min.wrapping_add(self.varint()?);
        let min_rank = self.u32("rank")?;
        let max_rank = self.u32("rank")?;
        let mean = self.float(count)?;
        let m2 = self.float(count)?;
        let at = self.at;
        let mask = self.varint()?;
        if mask >> (BINS + 1) != 0 {
            return bad(format!(
                "histogram mask {mask:#x} at byte {at} names bins past {BINS}"
            ));
        }
        let all = mask & (1 << BINS) != 0;
        let mask = mask & !(1 << BINS);
        let last = (0..BINS).rev().find(|&b| mask & (1 << b) != 0);
        let bins = self.bins(mask, (!all).then_some(last), count, at)?;
        Ok(Stats {
            count,
            min,
            max,
            min_rank,
            max_rank,
            mean,
            m2,
            bins,
        })
    }

    fn timing_sized(&mut self, rs: usize) -> R<Timing> {
        let at = self.at;
        let flags = self.byte()?;
        if flags > 31 {
            return bad(format!("unknown timing flags {flags:#x} at byte {at}"));
        }
        let size = set_len(&self.ranksets[rs]);
        let count_at = self.at;
        let mut gap_count = self.varint()?;
        if flags & 4 != 0 {
            gap_count = match gap_count.checked_mul(size) {
                Some(c) => c,
                None => {
                    return bad(format!(
                        "count per rank at byte {count_at} times {size} ranks overflows"
                    ));
                }
            };
        }
        let dur_count = if flags & 1 != 0 {
            self.varint()?
        } else {
            gap_count
        };
        let pos = if flags & 8 != 0 {
            let p = self
                .positions
                .entry(rs)
                .or_insert_with(|| Positions::of(&self.ranksets[rs]))
                .clone();
            match p {
                Some(p) => Some(p),
                None => {
                    return bad(format!(
                        "timing at byte {at} names ranks by position in a set of more dimensions"
                    ));
                }
            }
        } else {
            None
        };
        let gap = self.stats_sized(gap_count, pos.as_ref())?;
        let dur = self.stats_sized(dur_count, pos.as_ref())?;
        let interval = if flags & 2 != 0 {
            Some(self.intervals()?)
        } else {
            None
        };
        let waits = if flags & 16 != 0 {
            let runq_ns = self.varint()?;
            let blocked_ns = self.varint()?;
            Some(GapWaits {
                runq_ns,
                blocked_ns,
            })
        } else {
            None
        };
        Ok(Timing {
            gap,
            dur,
            interval,
            waits,
        })
    }

    fn stats_sized(&mut self, count: u64, pos: Option<&Positions>) -> R<Stats> {
        let min = self.varint()?;
        let max = min.wrapping_add(self.varint()?);
        let (min_rank, max_rank) = match pos {
            None => (self.u32("rank")?, self.u32("rank")?),
            Some(p) if p.len == 1 => {
                let r = p.rank(0).ok_or_else(|| {
                    DecodeError::Corrupt(format!("one-rank set past 2^32 at byte {}", self.at))
                })?;
                (r, r)
            }
            Some(p) => {
                let mut rank = || -> R<u32> {
                    let at = self.at;
                    let i = self.varint()?;
                    p.rank(i).ok_or_else(|| {
                        DecodeError::Corrupt(format!(
                            "rank position {i} at byte {at} is past its set of {} ranks",
                            p.len
                        ))
                    })
                };
                (rank()?, rank()?)
            }
        };
        let at = self.at;
        let tags = self.byte()?;
        let (mt, vt) = (tags & 7, tags >> 3 & 3);
        let shifted = tags & 0x20 != 0;
        let all = tags & 0x40 != 0;
        let from_first = tags & 0x80 != 0;
        if mt > 4 || (all && from_first) {
            return bad(format!("unknown number tags {tags:#x} at byte {at}"));
        }
        let mask_at = self.at;
        let mut mask = self.varint()?;
        if shifted {
            let first = crate::timing::bin_of(min);
            mask = match mask.checked_shl(first as u32) {
                Some(m) if m >> first == mask => m,
                _ => return bad(format!("histogram mask at byte {mask_at} overflows")),
            };
        }
        if mask >> BINS != 0 {
            return bad(format!(
                "histogram mask {mask:#x} at byte {mask_at} names bins past {BINS}"
            ));
        }
        let derived = if from_first {
            (0..BINS).find(|&b| mask & (1 << b) != 0)
        } else {
            (0..BINS).rev().find(|&b| mask & (1 << b) != 0)
        };
        let bins = self.bins(mask, (!all).then_some(derived), count, mask_at)?;
        let mean = if mt == 4 {
            let at = self.at;
            let v = self.varint()?;
            let d = (v >> 1) as i64 ^ -((v & 1) as i64);
            let sum = predicted_sum(&bins, min, max) as i128 + i128::from(d);
            match u64::try_from(sum) {
                Ok(s) => s as f64 / count as f64,
                Err(_) => return bad(format!("mean's sum at byte {at} is out of range")),
            }
        } else {
            self.float_payload(mt, count)?
        };
        let m2 = self.float_payload(vt, count)?;
        Ok(Stats {
            count,
            min,
            max,
            min_rank,
            max_rank,
            mean,
            m2,
            bins,
        })
    }

    fn float_payload(&mut self, tag: u8, count: u64) -> R<f64> {
        Ok(match tag {
            0 => 0.0,
            1 => self.varint()? as f64,
            2 => self.varint()? as f64 / count as f64,
            _ => f64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")),
        })
    }

    fn float(&mut self, count: u64) -> R<f64> {
        let at = self.at;
        Ok(match self.byte()? {
            0 => 0.0,
            1 => self.varint()? as f64,
            2 => self.varint()? as f64 / count as f64,
            3 => f64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")),
            t => return bad(format!("unknown number tag {t} at byte {at}")),
        })
    }
}

/// Decodes a body whose timing records are in `layout` (the caller has checked the prefix
/// and the checksum, and validates after).
pub fn decode(body: &[u8], layout: TimingLayout) -> R<TraceFile> {
    let mut r = Reader {
        layout,
        positions: HashMap::new(),
        b: body,
        at: 0,
        strings: Vec::new(),
        ops: Vec::new(),
        sigs: Vec::new(),
        ranksets: Vec::new(),
    };
    let mut header: Header = r.blob("header")?;
    header.encoding = match layout {
        TimingLayout::Plain => crate::format::Encoding::V2,
        TimingLayout::Sized => crate::format::Encoding::V2_7,
    };
    let n = r.len("string")?;
    for _ in 0..n {
        let len = r.varint()?;
        let at = r.at;
        let s = std::str::from_utf8(r.take(len)?)
            .map_err(|_| DecodeError::Corrupt(format!("string at byte {at} is not UTF-8")))?;
        r.ops.push(op_by_name(s));
        r.strings.push(s.to_string());
    }
    let n = r.varint()?;
    if n > (body.len() - r.at) as u64 / 8 {
        return bad(format!("call-site count {n} exceeds the bytes left"));
    }
    for _ in 0..n {
        let s = r.take(8)?;
        r.sigs
            .push(u64::from_le_bytes(s.try_into().expect("8 bytes")));
    }
    let n = r.len("rank set")?;
    for _ in 0..n {
        let runs = r.len("rank run")?;
        let mut set = RankSet { runs: Vec::new() };
        for _ in 0..runs {
            let start = r.u32("rank")?;
            let d = r.len("dimension")?;
            let dims = (0..d)
                .map(|_| Ok((r.u32("rank count")?, r.u32("rank stride")?)))
                .collect::<R<Vec<_>>>()?;
            set.runs.push(Prsd { start, dims });
        }
        r.ranksets.push(set);
    }
    let nodes = r.nodes(0)?;
    if r.at != body.len() {
        return bad(format!(
            "{} bytes left over after the trace body",
            body.len() - r.at
        ));
    }
    Ok(TraceFile {
        header,
        trace: Trace { nodes },
    })
}
