//! What the report shows about one trace, computed from the compressed trace: op totals, per-rank
//! I/O, files by template, the MPI-IO/POSIX stack breakdown and a timeline of a few ranks.
//!
//! Counts and bytes are exact (they come from expanding ranks). Time is not: a trace keeps each
//! event's timing as statistics merged over ranks and iterations, so per-rank time and the
//! timeline are rebuilt from mean gaps and durations, as `rsd_view::chrome` does. The page says so.

use filetable::{Effect, FileTable, Offline};
use rsd::op::{Dir, Layer, Op};
use rsd::path::PathTemplate;
use rsd::ranks::RankSet;
use rsd::trace::{Event, FlatEvent, Node, NodeKind, Trace, visit};
use rsd::{Header, TraceFile};
use rsd_view::stats::Summary;
use std::collections::{BTreeMap, BTreeSet};

/// Caps that keep the page small and fast whatever the rank or call count.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Ranks expanded for the per-rank charts; above this, every k-th rank is shown.
    pub rank_bars: usize,
    /// Ranks drawn in the timeline.
    pub timeline_ranks: usize,
    /// Spans per timeline rank (nested calls included); the rest is cut and the page says so.
    pub timeline_spans: usize,
    /// File templates listed.
    pub file_groups: usize,
    /// MPI-IO call sites listed in the I/O-stack table.
    pub stack_rows: usize,
    /// Application-level call sites drawn in the per-layer breakdown chart (the table below it
    /// lists up to `stack_rows`).
    pub stack_sites: usize,
    /// Ranks whose calls are resolved to files for the per-file table; above this, evenly
    /// spaced ranks are (the page says so).
    pub file_ranks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rank_bars: 512,
            timeline_ranks: 6,
            timeline_spans: 3000,
            file_groups: 40,
            stack_rows: 40,
            stack_sites: 10,
            file_ranks: 4096,
        }
    }
}

/// I/O of one rank: the calls the application made itself (nested POSIX calls are inside
/// their MPI-IO call's time and bytes already).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankIo {
    /// The rank.
    pub rank: u32,
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
    /// Time in calls per layer, ns, in [`Layer::STACK`] order (the sum of each call's mean
    /// duration: a trace keeps timing as statistics over all ranks).
    pub layer_ns: [f64; Layer::STACK.len()],
}

/// The per-rank rows, possibly a sample.
#[derive(Debug, Clone, Default)]
pub struct PerRank {
    /// One row per shown rank, in rank order.
    pub rows: Vec<RankIo>,
    /// Ranks in the trace.
    pub total: u64,
    /// 1 when every rank is shown, else every `stride`-th rank is.
    pub stride: usize,
}

/// Files that share a path template.
#[derive(Debug, Clone, PartialEq)]
pub struct FileGroup {
    /// The template (`out/file.%08d`), or the path itself for a single file.
    pub template: String,
    /// Number of distinct files.
    pub files: usize,
    /// First and last file in field order.
    pub first: String,
    /// Last file in field order.
    pub last: String,
    /// Bytes read from these files by the application's own calls (all ranks).
    pub read: u64,
    /// Bytes written to them by the application's own calls (all ranks).
    pub written: u64,
    /// The application's calls that moved data to or from them.
    pub accesses: u64,
    /// Ranks that moved data to or from them.
    pub ranks: u64,
}

/// The I/O of one layer over all ranks, split into the application's own calls and the calls
/// made inside another layer's call (the POSIX calls of an MPI-IO call), so that bytes moved
/// once are not counted twice.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerIo {
    /// The layer.
    pub layer: Layer,
    /// Calls made inside another call (by the MPI library), not by the application.
    pub nested: bool,
    /// Calls over all ranks and iterations.
    pub calls: u64,
    /// Bytes read over all ranks.
    pub read: u64,
    /// Bytes written over all ranks.
    pub written: u64,
    /// Time in these calls summed over ranks, ns.
    pub time_ns: f64,
    /// Time in the reading calls summed over ranks, ns.
    pub read_ns: f64,
    /// Time in the writing calls summed over ranks, ns.
    pub write_ns: f64,
}

impl LayerIo {
    /// Whether this is file I/O (not MPI communication).
    pub fn is_io(&self) -> bool {
        self.layer != Layer::Mpi
    }
}

/// One MPI-IO call site and what it cost at each layer.
#[derive(Debug, Clone, PartialEq)]
pub struct StackRow {
    /// The call.
    pub op: Op,
    /// Its path template, if it names a file.
    pub path: Option<String>,
    /// Call-site signature.
    pub sig: u64,
    /// Ranks that make the call.
    pub ranks: u64,
    /// Calls over all ranks and iterations.
    pub calls: u64,
    /// Total time inside the MPI-IO calls, nested POSIX time included, ns.
    pub total_ns: f64,
    /// Total time of the POSIX calls nested in them, ns.
    pub posix_ns: f64,
    /// Nested POSIX calls.
    pub posix_calls: u64,
    /// Nested POSIX bytes are not known without expansion; the ranks with nested calls are:
    /// for a collective call these are its aggregators (ranks that touched the file system).
    pub ranks_with_children: u64,
    /// Whether the call is collective.
    pub collective: bool,
}

impl StackRow {
    /// Time spent in the MPI-IO layer itself (not in nested POSIX calls), ns.
    pub fn mpiio_only_ns(&self) -> f64 {
        (self.total_ns - self.posix_ns).max(0.0)
    }
}

/// One call drawn in the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The call.
    pub op: Op,
    /// Start, ns from the lane's origin.
    pub start: f64,
    /// Mean duration, ns.
    pub dur: f64,
    /// A POSIX call nested in an MPI-IO call.
    pub nested: bool,
}

/// The spans of one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lane {
    /// The rank.
    pub rank: u32,
    /// Its calls in order.
    pub spans: Vec<Span>,
    /// The span cap cut this lane short.
    pub truncated: bool,
    /// The MPI_Init left out at the start (its mean duration), if any.
    pub init_ns: Option<f64>,
}

/// Everything the page shows about one trace.
#[derive(Debug, Clone)]
pub struct TraceAnalysis {
    /// The input's name as given.
    pub label: String,
    /// The header.
    pub header: Header,
    /// Op totals and per-rank spreads (exact counts and bytes).
    pub summary: Summary,
    /// Per-rank I/O.
    pub per_rank: PerRank,
    /// Files touched, by template.
    pub files: Vec<FileGroup>,
    /// Ranks whose file accesses `files` counts (all of them unless capped).
    pub file_ranks: u64,
    /// Per layer, application calls first, then calls nested in another layer's calls.
    pub layers: Vec<LayerIo>,
    /// MPI-IO call sites.
    pub stack: Vec<StackRow>,
    /// Inclusive and exclusive time per layer and op, and each application-level call site's
    /// time over the layers below it.
    pub layer_times: rsd_view::stack::StackAnalysis,
    /// Timeline lanes.
    pub timeline: Vec<Lane>,
}

/// Computes the analysis of one trace.
pub fn analyze(label: &str, tf: &TraceFile, limits: &Limits) -> TraceAnalysis {
    let summary = rsd_view::stats::summarize(&tf.trace);
    let ranks = tf.trace.ranks();
    let (files, file_ranks) = file_groups(&tf.trace, &summary, limits.file_ranks);
    TraceAnalysis {
        label: label.to_string(),
        header: tf.header.clone(),
        per_rank: per_rank(&tf.trace.nodes, &ranks, limits.rank_bars),
        files,
        file_ranks,
        layers: layers(&tf.trace),
        stack: stack_rows(&tf.trace.nodes),
        layer_times: rsd_view::stack::analyze(&tf.trace),
        timeline: timeline(&tf.trace.nodes, &ranks, &summary, limits),
        summary,
    }
}

/// Evenly spaced picks of at most `cap` ranks, always including the first and last.
fn sample(all: &[u32], cap: usize) -> (Vec<u32>, usize) {
    let cap = cap.max(1);
    if all.len() <= cap {
        return (all.to_vec(), 1);
    }
    let stride = all.len().div_ceil(cap);
    let mut v: Vec<u32> = all.iter().copied().step_by(stride).collect();
    if v.last() != all.last() {
        v.push(*all.last().expect("non-empty"));
    }
    (v, stride)
}

/// The event's own parameters at `rank` and `idx` (path fields excluded), without expanding its
/// children or rendering its path: enough for `Op::data_bytes`.
fn params(e: &Event, rank: u32, idx: &[u64]) -> Vec<i64> {
    let n = e.params.len() - e.nfields();
    e.params[..n]
        .iter()
        .map(|p| p.eval(rank, idx).unwrap_or(0))
        .collect()
}

fn per_rank(nodes: &[Node], ranks: &RankSet, cap: usize) -> PerRank {
    let all = ranks.to_vec();
    let (shown, stride) = sample(&all, cap);
    let rows = shown
        .into_iter()
        .map(|rank| {
            let mut io = RankIo {
                rank,
                ..RankIo::default()
            };
            let mut idx = Vec::new();
            visit(nodes, rank, &mut idx, &mut |e, idx| {
                let b = e.op.data_bytes(&params(e, rank, idx));
                match e.op.dir() {
                    Dir::Read => io.read += b,
                    Dir::Write => io.written += b,
                    Dir::None => {}
                }
                let l = Layer::STACK.iter().position(|l| *l == e.op.layer());
                io.layer_ns[l.unwrap_or(0)] += e.timing.dur.mean;
                true
            });
            io
        })
        .collect();
    PerRank {
        rows,
        total: all.len() as u64,
        stride,
    }
}

/// Bytes per file: each shown rank's own calls resolved to files through its open-file table
/// (`filetable`: descriptors, streams and MPI file handles to paths), grouped by template.
fn file_groups(trace: &Trace, s: &Summary, cap: usize) -> (Vec<FileGroup>, u64) {
    #[derive(Default)]
    struct Acc {
        read: u64,
        written: u64,
        accesses: u64,
        ranks: u64,
        last_rank: Option<u32>,
    }
    let mut by_path: BTreeMap<String, Acc> = BTreeMap::new();
    let all = trace.ranks().to_vec();
    let (shown, _) = sample(&all, cap);
    for &rank in &shown {
        let mut table = FileTable::new();
        trace.expand_with(rank, &mut |top| {
            // A library layer's call (HDF5, PnetCDF, NetCDF) accesses no file itself: the
            // calls it made do, and count as the application's.
            for e in filetable::file_calls(top) {
                let (effect, _) =
                    table.apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
                if let Effect::Access(a) = effect {
                    let path = table
                        .file(a.file)
                        .and_then(|f| f.path.clone())
                        .unwrap_or_else(|| "(no traced open)".into());
                    let acc = by_path.entry(path).or_default();
                    match a.dir {
                        Dir::Read => acc.read += a.bytes,
                        Dir::Write => acc.written += a.bytes,
                        Dir::None => {}
                    }
                    acc.accesses += 1;
                    if acc.last_rank != Some(rank) {
                        acc.last_rank = Some(rank);
                        acc.ranks += 1;
                    }
                }
            }
            true
        });
    }
    let mut by: BTreeMap<String, Vec<(Vec<i64>, &str)>> = BTreeMap::new();
    let names: BTreeSet<&str> = s
        .files
        .iter()
        .map(String::as_str)
        .chain(by_path.keys().map(String::as_str))
        .collect();
    for f in names {
        let (t, fields) = PathTemplate::parse(f);
        by.entry(t.0).or_default().push((fields, f));
    }
    let groups = by
        .into_iter()
        .map(|(t, mut files)| {
            files.sort();
            let first = files.first().map_or("", |f| f.1).to_string();
            let last = files.last().map_or("", |f| f.1).to_string();
            // Fields equal in every file (digits in a directory name) are shown as they are;
            // only the ones that vary stay `%d`.
            let shown: Vec<Option<i64>> = (0..files[0].0.len())
                .map(|k| {
                    let v = files[0].0[k];
                    files.iter().all(|f| f.0.get(k) == Some(&v)).then_some(v)
                })
                .collect();
            let mut g = FileGroup {
                // One file: its real name reads better than a template of it.
                template: if files.len() == 1 {
                    first.clone()
                } else {
                    partial_render(&t, &shown)
                },
                files: files.len(),
                first,
                last,
                read: 0,
                written: 0,
                accesses: 0,
                ranks: 0,
            };
            // Ranks of a group: the most of any of its files (N files of one rank each: 1;
            // a shared file: all its ranks). Counting distinct ranks over files would need a
            // set per group, which 2^20-rank traces cannot afford.
            for (_, f) in &files {
                if let Some(a) = by_path.get(*f) {
                    g.read += a.read;
                    g.written += a.written;
                    g.accesses += a.accesses;
                    g.ranks = g.ranks.max(a.ranks);
                }
            }
            g
        })
        .collect();
    (groups, shown.len() as u64)
}

/// A path template with the fields that are `Some` filled in and the others left as their
/// placeholder (`%d`, `%04d`).
fn partial_render(t: &str, fields: &[Option<i64>]) -> String {
    let mut out = String::with_capacity(t.len());
    let mut k = 0;
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = String::from("%");
        let mut width = 0usize;
        while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            width = (width * 10 + d as usize).min(64);
            spec.push(chars.next().unwrap_or('0'));
        }
        if chars.peek() == Some(&'d') {
            spec.push(chars.next().unwrap_or('d'));
        }
        match fields.get(k).copied().flatten() {
            Some(v) => out.push_str(&format!("{v:0width$}")),
            None => out.push_str(&spec),
        }
        k += 1;
    }
    out
}

/// Calls, bytes and time per layer, application calls and nested calls apart.
fn layers(trace: &Trace) -> Vec<LayerIo> {
    let mut m: BTreeMap<(bool, usize), LayerIo> = BTreeMap::new();
    let key = |op: Op, nested: bool| {
        let l = Layer::STACK
            .iter()
            .position(|l| *l == op.layer())
            .unwrap_or(0);
        (nested, l)
    };
    let new = |op: Op, nested: bool| LayerIo {
        layer: op.layer(),
        nested,
        calls: 0,
        read: 0,
        written: 0,
        time_ns: 0.0,
        read_ns: 0.0,
        write_ns: 0.0,
    };
    // Time and calls from the timing statistics (merged over ranks and iterations).
    fn walk(nodes: &[Node], nested: bool, f: &mut dyn FnMut(&Event, bool)) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    f(e, nested);
                    walk(&e.children, true, f);
                }
                NodeKind::Loop(l) => walk(&l.body, nested, f),
            }
        }
    }
    walk(&trace.nodes, false, &mut |e, nested| {
        let l = m
            .entry(key(e.op, nested))
            .or_insert_with(|| new(e.op, nested));
        let t = e.timing.dur.total();
        l.calls += e.timing.dur.count;
        l.time_ns += t;
        match e.op.dir() {
            Dir::Read => l.read_ns += t,
            Dir::Write => l.write_ns += t,
            Dir::None => {}
        }
    });
    // Bytes by expanding every rank (exact).
    fn bytes(e: &FlatEvent, nested: bool, m: &mut dyn FnMut(&FlatEvent, bool)) {
        m(e, nested);
        for c in &e.children {
            bytes(c, true, m);
        }
    }
    trace.ranks().for_each(|r| {
        trace.expand_with(r, &mut |e| {
            bytes(e, false, &mut |e, nested| {
                let b = e.op.data_bytes(&e.params);
                if b == 0 {
                    return;
                }
                let l = m
                    .entry(key(e.op, nested))
                    .or_insert_with(|| new(e.op, nested));
                match e.op.dir() {
                    Dir::Read => l.read += b,
                    Dir::Write => l.written += b,
                    Dir::None => {}
                }
            });
            true
        });
    });
    m.into_values().collect()
}

fn is_collective(op: Op) -> bool {
    matches!(
        op,
        Op::FileOpen
            | Op::FileClose
            | Op::FileSetSize
            | Op::FileSetView
            | Op::FileSync
            | Op::FileReadAll
            | Op::FileReadAtAll
            | Op::FileReadOrdered
            | Op::FileIreadAll
            | Op::FileWriteAll
            | Op::FileWriteAtAll
            | Op::FileWriteOrdered
            | Op::FileIwriteAll
            | Op::FileSeekShared
    ) || op.split_collective().is_some()
        || op.is_split_end()
}

/// Time and calls of every event under `nodes`, loops and deeper nesting included.
fn nested_totals(nodes: &[Node]) -> (f64, u64) {
    let mut t = (0.0, 0);
    for n in nodes {
        let (a, b) = match &n.kind {
            NodeKind::Event(e) => {
                let (a, b) = nested_totals(&e.children);
                // The children's time is inside this event's own duration: count it once.
                (e.timing.dur.total().max(a), e.timing.dur.count + b)
            }
            NodeKind::Loop(l) => nested_totals(&l.body),
        };
        t.0 += a;
        t.1 += b;
    }
    t
}

/// One row per MPI-IO call site, those inside library layers' calls included. Ranks that do different things inside the same call (an
/// aggregator issues POSIX calls, the others do not) are different nodes of the trace, so nodes
/// are grouped by call site (op, signature, path template) and their rank sets joined.
fn stack_rows(nodes: &[Node]) -> Vec<StackRow> {
    struct Acc {
        row: StackRow,
        ranks: RankSet,
        with_children: RankSet,
    }
    fn walk(nodes: &[Node], out: &mut Vec<Acc>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Loop(l) => walk(&l.body, out),
                NodeKind::Event(e) if e.op.layer() == Layer::MpiIo => {
                    let (posix_ns, posix_calls) = nested_totals(&e.children);
                    let with_children = e
                        .children
                        .iter()
                        .fold(RankSet::default(), |acc, c| acc.union(&c.ranks));
                    let path = e.path.as_ref().map(|p| p.0.clone());
                    let i = match out
                        .iter()
                        .position(|a| a.row.op == e.op && a.row.sig == e.sig && a.row.path == path)
                    {
                        Some(i) => i,
                        None => {
                            out.push(Acc {
                                row: StackRow {
                                    op: e.op,
                                    path,
                                    sig: e.sig,
                                    ranks: 0,
                                    calls: 0,
                                    total_ns: 0.0,
                                    posix_ns: 0.0,
                                    posix_calls: 0,
                                    ranks_with_children: 0,
                                    collective: is_collective(e.op),
                                },
                                ranks: RankSet::default(),
                                with_children: RankSet::default(),
                            });
                            out.len() - 1
                        }
                    };
                    let a = &mut out[i];
                    a.row.calls += e.timing.dur.count;
                    a.row.total_ns += e.timing.dur.total();
                    a.row.posix_ns += posix_ns;
                    a.row.posix_calls += posix_calls;
                    a.ranks.union_with(&n.ranks);
                    a.with_children.union_with(&with_children);
                }
                // A library layer's call (HDF5, PnetCDF, NetCDF): its MPI-IO calls are rows
                // as the application's own are.
                NodeKind::Event(e) if e.op.layer().is_container() => walk(&e.children, out),
                NodeKind::Event(_) => {}
            }
        }
    }
    let mut acc = Vec::new();
    walk(nodes, &mut acc);
    acc.into_iter()
        .map(|mut a| {
            a.row.ranks = a.ranks.len();
            a.row.ranks_with_children = a.with_children.len();
            a.row
        })
        .collect()
}

/// The ranks drawn in the timeline: first, last, the ranks moving the most and the fewest
/// bytes, then evenly spaced ones, up to the cap.
fn timeline_ranks(all: &[u32], s: &Summary, cap: usize) -> Vec<u32> {
    let cap = cap.max(1);
    let mut want = Vec::new();
    let push = |r: u32, v: &mut Vec<u32>| {
        if v.len() < cap && !v.contains(&r) && all.binary_search(&r).is_ok() {
            v.push(r);
        }
    };
    if let (Some(&f), Some(&l)) = (all.first(), all.last()) {
        push(f, &mut want);
        push(s.rank_bytes.max.1, &mut want);
        push(s.rank_bytes.min.1, &mut want);
        push(l, &mut want);
    }
    let (even, _) = sample(all, cap);
    for r in even {
        push(r, &mut want);
    }
    want.sort_unstable();
    want
}

fn timeline(nodes: &[Node], ranks: &RankSet, s: &Summary, limits: &Limits) -> Vec<Lane> {
    let all = ranks.to_vec();
    timeline_ranks(&all, s, limits.timeline_ranks)
        .into_iter()
        .map(|rank| lane(nodes, rank, limits.timeline_spans))
        .collect()
}

fn lane(nodes: &[Node], rank: u32, cap: usize) -> Lane {
    let mut lane = Lane {
        rank,
        ..Lane::default()
    };
    let mut t = 0.0f64;
    let mut idx = Vec::new();
    visit(nodes, rank, &mut idx, &mut |e, idx| {
        if lane.spans.len() >= cap {
            lane.truncated = true;
            return false;
        }
        let start = t + e.timing.gap.mean;
        let dur = e.timing.dur.mean;
        lane.spans.push(Span {
            op: e.op,
            start,
            dur,
            nested: false,
        });
        // Nested calls one after another from the parent's start, clipped to its span.
        let mut c = start;
        visit(&e.children, rank, idx, &mut |ce, _| {
            if lane.spans.len() >= cap {
                lane.truncated = true;
                return false;
            }
            let cs = (c + ce.timing.gap.mean).min(start + dur);
            let cd = ce.timing.dur.mean.min(start + dur - cs).max(0.0);
            lane.spans.push(Span {
                op: ce.op,
                start: cs,
                dur: cd,
                nested: true,
            });
            c = cs + cd;
            true
        });
        t = start + dur;
        !lane.truncated
    });
    // MPI_Init mostly measures job start-up and dwarfs the I/O: start the lane when it returns.
    if let Some(first) = lane.spans.first()
        && first.op == Op::Init
    {
        let end = first.start + first.dur;
        lane.init_ns = Some(first.dur);
        lane.spans.remove(0);
        for s in &mut lane.spans {
            s.start -= end;
        }
    }
    lane
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_spmd_counts() {
        let tf = TraceFile {
            header: Header::new(8),
            trace: rsd_view::synth::spmd(8, 10),
        };
        let a = analyze("s", &tf, &Limits::default());
        assert_eq!(a.per_rank.rows.len(), 8);
        assert_eq!(a.per_rank.stride, 1);
        // Per-rank written bytes equal what stats says per rank.
        let total: u64 = a.per_rank.rows.iter().map(|r| r.written + r.read).sum();
        let mean = a.summary.rank_bytes.mean * 8.0;
        assert_eq!(total as f64, mean);
        // The collective write is aggregated by rank 0 only.
        let coll: Vec<_> = a
            .stack
            .iter()
            .filter(|r| r.collective && r.op.dir() == Dir::Write)
            .collect();
        assert!(!coll.is_empty());
        assert!(
            coll.iter()
                .all(|r| r.ranks_with_children == 1 && r.ranks == 8)
        );
        assert!(coll.iter().all(|r| r.posix_ns <= r.total_ns));
        assert!(!a.timeline.is_empty() && a.timeline.iter().all(|l| !l.spans.is_empty()));
        assert!(a.files.iter().any(|f| f.files == 8));
    }

    #[test]
    fn templates_keep_constant_digits() {
        assert_eq!(
            partial_render("/tmp/x-%dab/f.%04d.%d", &[Some(6), None, Some(2)]),
            "/tmp/x-6ab/f.%04d.2"
        );
    }

    #[test]
    fn caps_are_reported() {
        let tf = TraceFile {
            header: Header::new(100),
            trace: rsd_view::synth::spmd(100, 50),
        };
        let limits = Limits {
            rank_bars: 10,
            timeline_ranks: 3,
            timeline_spans: 20,
            ..Limits::default()
        };
        let a = analyze("s", &tf, &limits);
        assert_eq!(a.per_rank.stride, 10);
        assert_eq!(a.per_rank.rows.len(), 11, "every 10th rank plus the last");
        assert_eq!(a.per_rank.rows.last().unwrap().rank, 99);
        assert_eq!(a.timeline.len(), 3);
        assert!(
            a.timeline
                .iter()
                .all(|l| l.truncated && l.spans.len() <= 20)
        );
    }
}
