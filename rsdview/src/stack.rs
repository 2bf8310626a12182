//! Where the time goes across the I/O stack: per layer and per op, calls, bytes, inclusive and
//! exclusive time and throughput, and for each application-level call site the breakdown of
//! its time over the calls nested below it (an MPI-IO collective and the POSIX calls its
//! library made; an HDF5 call, the MPI-IO calls it made and their POSIX calls).
//!
//! Inclusive time is a call's own duration; exclusive time is that minus the inclusive time of
//! the calls recorded directly inside it. Each traced call is timed once, at its own layer, so
//! the exclusive times of every layer add up to the inclusive time of the application-level
//! calls. Nothing here names a layer: the layers come from [`Layer::STACK`] and the nesting is
//! followed to any depth.
//!
//! Counts and bytes are exact (one rank of each class of ranks that agree is expanded). Time comes from each event's timing
//! statistics, merged over ranks and iterations: a node's inclusive time is its mean duration
//! times its exact call count, which for a recorded trace is the sum of the recorded durations.
//! In an extrapolated trace the means are fitted by the timing models (and nested calls derived
//! from a model of the MPI library carry the inputs' mean per nested op), so the times are
//! predictions: [`StackAnalysis::modelled`] says so.

use rsd::op::{Layer, Op};
use rsd::ranks::RankSet;
use rsd::timing::fmt_ns;
use rsd::trace::{Event, Node, NodeKind, Trace, visit};
use serde::{Serialize, Serializer};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

fn ser_layer<S: Serializer>(l: &Layer, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(l.name())
}

fn ser_op<S: Serializer>(o: &Op, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(o.name())
}

/// The position of a layer in [`Layer::STACK`] (display order).
fn layer_rank(l: Layer) -> usize {
    Layer::STACK
        .iter()
        .position(|x| *x == l)
        .unwrap_or(Layer::STACK.len())
}

/// Calls, bytes and time of a set of calls; times are summed over every rank and call, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Times {
    /// Calls over all ranks and iterations.
    pub calls: u64,
    /// File bytes moved by these calls (0 for calls that move none).
    pub bytes: u64,
    /// Time inside the calls, nested calls included, ns.
    pub inclusive_ns: f64,
    /// Inclusive time minus the inclusive time of the calls recorded directly inside them, ns.
    pub exclusive_ns: f64,
}

impl Times {
    fn add(&mut self, o: &Times) {
        self.calls += o.calls;
        self.bytes += o.bytes;
        self.inclusive_ns += o.inclusive_ns;
        self.exclusive_ns += o.exclusive_ns;
    }

    /// Time in the calls nested inside these, ns.
    pub fn nested_ns(&self) -> f64 {
        self.inclusive_ns - self.exclusive_ns
    }

    /// Bytes per second of inclusive time: the rate seen from inside the calls. Times are summed
    /// over ranks, so this is a per-rank rate, not the file system's aggregate bandwidth.
    /// `None` for calls that move no bytes or took no time.
    pub fn throughput(&self) -> Option<f64> {
        (self.bytes > 0 && self.inclusive_ns > 0.0)
            .then(|| self.bytes as f64 * 1e9 / self.inclusive_ns)
    }
}

/// The totals of one layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerTimes {
    /// The layer.
    #[serde(serialize_with = "ser_layer")]
    pub layer: Layer,
    /// Every call of the layer, nested ones included.
    #[serde(flatten)]
    pub t: Times,
    /// Of those, the calls made inside another traced call (by a library, not the application).
    pub nested_calls: u64,
    /// Bytes per second of inclusive time ([`Times::throughput`]).
    pub throughput_bps: Option<f64>,
}

/// The totals of one op, split by whether the application made the call or a library did
/// inside another traced call (an application's `pwrite` and OMPIO's are different rows).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpTimes {
    /// The op's layer.
    #[serde(serialize_with = "ser_layer")]
    pub layer: Layer,
    /// The op.
    #[serde(serialize_with = "ser_op")]
    pub op: Op,
    /// Made inside another traced call.
    pub nested: bool,
    /// Calls, bytes and time.
    #[serde(flatten)]
    pub t: Times,
    /// Bytes per second of inclusive time ([`Times::throughput`]).
    pub throughput_bps: Option<f64>,
}

/// Calls of one op at one place of the nesting: an application-level call site (op, call-site
/// signature, path template), or below one the calls of one op nested at that level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    /// The op.
    #[serde(serialize_with = "ser_op")]
    pub op: Op,
    /// Its layer.
    #[serde(serialize_with = "ser_layer")]
    pub layer: Layer,
    /// The path template, for an application-level call site that names a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The call-site signature of an application-level call site (nested calls are grouped by
    /// op whatever their site inside the library).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sig: Option<u64>,
    /// Ranks that make these calls (for the calls of a collective, its aggregators).
    pub ranks: u64,
    /// Calls, bytes and time.
    #[serde(flatten)]
    pub t: Times,
    /// The calls nested directly inside these, by op, largest inclusive time first. Their
    /// inclusive times and this part's exclusive time add up to its inclusive time.
    pub below: Vec<Part>,
}

impl Part {
    /// Exclusive time per layer over this part and everything below it, in [`Layer::STACK`]
    /// order, layers without time left out: the whole inclusive time, split by layer.
    pub fn by_layer(&self) -> Vec<(Layer, f64)> {
        fn add(p: &Part, m: &mut BTreeMap<usize, (Layer, f64)>) {
            m.entry(layer_rank(p.layer)).or_insert((p.layer, 0.0)).1 += p.t.exclusive_ns;
            for b in &p.below {
                add(b, m);
            }
        }
        let mut m = BTreeMap::new();
        add(self, &mut m);
        m.into_values().collect()
    }

    /// The call site's name: the op, and its path template when it names a file.
    pub fn label(&self) -> String {
        match &self.path {
            Some(p) => format!("{} {}", self.op.name(), rsd::op::show_path(self.op, p)),
            None => self.op.name().to_string(),
        }
    }
}

/// Where the time goes across the I/O stack of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackAnalysis {
    /// Ranks in the trace.
    pub ranks: u64,
    /// Times are predictions of an extrapolated trace's timing models, not measurements.
    pub modelled: bool,
    /// Inclusive time of the application-level calls, ns: every layer's exclusive time adds
    /// up to this.
    pub total_ns: f64,
    /// Per layer, in [`Layer::STACK`] order, layers without calls left out.
    pub layers: Vec<LayerTimes>,
    /// Per op, by layer, application calls before nested ones, largest inclusive time first.
    pub ops: Vec<OpTimes>,
    /// Application-level call sites with calls nested below them, largest inclusive time
    /// first, each with the breakdown of its time over the layers below.
    pub sites: Vec<Part>,
    /// Events whose nested calls take longer than the event itself (only possible where the
    /// timing is modelled, or a clock misbehaved), one line each; their exclusive time is
    /// negative as computed, not clamped.
    pub notes: Vec<String>,
}

/// Exact calls and bytes of every event node, keyed by the event's address in the trace.
type Counts = HashMap<usize, (u64, u64)>;

fn key(e: &Event) -> usize {
    e as *const Event as usize
}

/// Adds the calls and bytes of `rank`'s events, `weight` times (the ranks of its class).
fn count(nodes: &[Node], rank: u32, weight: u64, idx: &mut Vec<u64>, out: &mut Counts) {
    visit(nodes, rank, idx, &mut |e, idx| {
        let n = e.params.len() - e.nfields();
        let params: Vec<i64> = e.params[..n]
            .iter()
            .map(|p| p.eval(rank, idx).unwrap_or(0))
            .collect();
        let c = out.entry(key(e)).or_default();
        c.0 += weight;
        c.1 += e.op.data_bytes(&params) * weight;
        if !e.children.is_empty() {
            count(&e.children, rank, weight, idx, out);
        }
        true
    });
}

/// A [`Part`] while it is built: its rank set still a set.
struct Group {
    op: Op,
    path: Option<String>,
    sig: Option<u64>,
    ranks: RankSet,
    t: Times,
    below: Vec<Group>,
}

impl Group {
    fn merge_into(self, groups: &mut Vec<Group>) {
        match groups
            .iter_mut()
            .find(|g| g.op == self.op && g.sig == self.sig && g.path == self.path)
        {
            Some(g) => {
                g.ranks.union_with(&self.ranks);
                g.t.add(&self.t);
                for b in self.below {
                    b.merge_into(&mut g.below);
                }
            }
            None => groups.push(self),
        }
    }

    fn finish(self) -> Part {
        let mut below: Vec<Part> = self.below.into_iter().map(Group::finish).collect();
        below.sort_by(|a, b| b.t.inclusive_ns.total_cmp(&a.t.inclusive_ns));
        Part {
            op: self.op,
            layer: self.op.layer(),
            path: self.path,
            sig: self.sig,
            ranks: self.ranks.len(),
            t: self.t,
            below,
        }
    }
}

struct Walk<'a> {
    counts: &'a Counts,
    ops: BTreeMap<(usize, bool, Op), Times>,
    modelled: bool,
    notes: Vec<String>,
}

impl Walk<'_> {
    /// Groups the events under `nodes` (loops flattened), accumulating the per-op totals.
    /// `depth` 0 is the application's own calls.
    fn walk(&mut self, nodes: &[Node], depth: usize, out: &mut Vec<Group>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Loop(l) => self.walk(&l.body, depth, out),
                NodeKind::Event(e) => {
                    let (calls, bytes) = self.counts.get(&key(e)).copied().unwrap_or((0, 0));
                    self.modelled |= e.timing.interval.is_some();
                    let inclusive_ns = e.timing.dur.mean * calls as f64;
                    let mut below = Vec::new();
                    self.walk(&e.children, depth + 1, &mut below);
                    let nested: f64 = below.iter().map(|g| g.t.inclusive_ns).sum();
                    let t = Times {
                        calls,
                        bytes,
                        inclusive_ns,
                        exclusive_ns: inclusive_ns - nested,
                    };
                    if t.exclusive_ns < 0.0 {
                        self.notes.push(format!(
                            "{} (ranks {}): the calls nested in it take {} and it takes {}",
                            e.op.name(),
                            n.ranks,
                            fmt_ns(nested),
                            fmt_ns(inclusive_ns)
                        ));
                    }
                    self.ops
                        .entry((layer_rank(e.op.layer()), depth > 0, e.op))
                        .or_default()
                        .add(&t);
                    let top = depth == 0;
                    Group {
                        op: e.op,
                        path: if top {
                            e.path.as_ref().map(|p| p.0.clone())
                        } else {
                            None
                        },
                        sig: top.then_some(e.sig),
                        ranks: n.ranks.clone(),
                        t,
                        below,
                    }
                    .merge_into(out);
                }
            }
        }
    }
}

/// Every event node's calls and bytes over the ranks, from one rank of each class.
fn counts_of(trace: &Trace) -> Counts {
    let mut counts = Counts::new();
    let mut idx = Vec::new();
    for c in rsd::classes::classes(trace, &rsd::classes::data_size) {
        count(&trace.nodes, c.first, c.size, &mut idx, &mut counts);
    }
    counts
}

/// Computes the stack analysis of a trace. Expands one rank of each class of ranks that agree
/// in their calls and sizes ([`rsd::classes`]), for exact counts and bytes.
pub fn analyze(trace: &Trace) -> StackAnalysis {
    let counts = counts_of(trace);
    let mut w = Walk {
        counts: &counts,
        ops: BTreeMap::new(),
        modelled: false,
        notes: Vec::new(),
    };
    let mut top = Vec::new();
    w.walk(&trace.nodes, 0, &mut top);
    let total_ns = top.iter().map(|g| g.t.inclusive_ns).sum();
    let mut layers: BTreeMap<usize, LayerTimes> = BTreeMap::new();
    for (&(lr, nested, op), t) in &w.ops {
        let l = layers.entry(lr).or_insert(LayerTimes {
            layer: op.layer(),
            t: Times::default(),
            nested_calls: 0,
            throughput_bps: None,
        });
        l.t.add(t);
        if nested {
            l.nested_calls += t.calls;
        }
    }
    let layers = layers
        .into_values()
        .map(|mut l| {
            l.throughput_bps = l.t.throughput();
            l
        })
        .collect();
    let mut ops: Vec<OpTimes> = w
        .ops
        .iter()
        .map(|(&(_, nested, op), t)| OpTimes {
            layer: op.layer(),
            op,
            nested,
            t: *t,
            throughput_bps: t.throughput(),
        })
        .collect();
    ops.sort_by(|a, b| {
        (layer_rank(a.layer), a.nested)
            .cmp(&(layer_rank(b.layer), b.nested))
            .then(b.t.inclusive_ns.total_cmp(&a.t.inclusive_ns))
            .then(a.op.name().cmp(b.op.name()))
    });
    let mut sites: Vec<Part> = top
        .into_iter()
        .filter(|g| !g.below.is_empty())
        .map(Group::finish)
        .collect();
    sites.sort_by(|a, b| b.t.inclusive_ns.total_cmp(&a.t.inclusive_ns));
    StackAnalysis {
        ranks: trace.ranks().len(),
        modelled: w.modelled,
        total_ns,
        layers,
        ops,
        sites,
        notes: w.notes,
    }
}

/// Bytes per second with a decimal unit: `812 MB/s`.
pub fn fmt_rate(bps: f64) -> String {
    const UNITS: [&str; 5] = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut v = bps;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if v >= 100.0 || u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn ranks_text(p: &Part, of: u64) -> String {
    if p.ranks == of {
        String::new()
    } else {
        format!(" on {} of {of} ranks", p.ranks)
    }
}

/// One part as an equation over the parts below it:
/// `MPI_File_write_at_all 11.40ms = pwritev 3.00ms on 1 of 4 ranks + 8.40ms in MPIIO`. Deeper
/// parts are bracketed: `H5Dwrite 12.1ms = MPI_File_write_at_all 11.4ms (pwritev 3.0ms + 8.4ms
/// in MPIIO) + 0.7ms in HDF5`. Times are divided by `per`: 1 for sums over ranks, the rank count for means per rank.
pub fn equation(p: &Part, per: f64) -> String {
    let per_ns = |ns: f64| fmt_ns(ns / per);
    fn terms(p: &Part, of: u64, fmt_ns: &dyn Fn(f64) -> String) -> String {
        let mut s = String::new();
        for b in &p.below {
            let _ = write!(
                s,
                "{} {}{}",
                b.op.name(),
                fmt_ns(b.t.inclusive_ns),
                ranks_text(b, of)
            );
            if !b.below.is_empty() {
                let _ = write!(s, " ({})", terms(b, of, fmt_ns));
            }
            s.push_str(" + ");
        }
        let _ = write!(s, "{} in {}", fmt_ns(p.t.exclusive_ns), p.layer.name());
        s
    }
    format!(
        "{} {} = {}",
        p.op.name(),
        per_ns(p.t.inclusive_ns),
        terms(p, p.ranks, &per_ns)
    )
}

/// Call sites listed by the text form; `--json` lists every one.
const MAX_SITES_SHOWN: usize = 20;

fn pct(x: f64, of: f64) -> String {
    if of > 0.0 {
        let p = 100.0 * x / of;
        if p > 0.0 && p < 0.5 {
            "<1%".into()
        } else {
            format!("{p:.0}%")
        }
    } else {
        "-".into()
    }
}

fn rate(t: Option<f64>) -> String {
    t.map_or_else(|| "-".into(), fmt_rate)
}

/// The text of `iotrex stats --stack`.
pub fn render(a: &StackAnalysis, file: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{file}: {} ranks; times summed over all ranks and calls ({})",
        a.ranks,
        if a.modelled {
            "modelled: an extrapolated trace's timing models, not measurements"
        } else {
            "recorded"
        }
    );
    let _ = writeln!(
        out,
        "application-level calls take {}; the exclusive times below add up to it\n",
        fmt_ns(a.total_ns)
    );
    let _ = writeln!(
        out,
        "{:<8} {:>10} {:>10} {:>13} {:>11} {:>11} {:>5}  throughput",
        "layer", "calls", "nested", "bytes", "inclusive", "exclusive", "excl"
    );
    for l in &a.layers {
        let _ = writeln!(
            out,
            "{:<8} {:>10} {:>10} {:>13} {:>11} {:>11} {:>5}  {}",
            l.layer.name(),
            l.t.calls,
            l.nested_calls,
            l.t.bytes,
            fmt_ns(l.t.inclusive_ns),
            fmt_ns(l.t.exclusive_ns),
            pct(l.t.exclusive_ns, a.total_ns),
            rate(l.throughput_bps)
        );
    }
    out.push('\n');
    let w = a
        .ops
        .iter()
        .map(|o| o.op.name().len() + if o.nested { 9 } else { 0 })
        .max()
        .unwrap_or(2)
        .max(2);
    let _ = writeln!(
        out,
        "{:<8} {:<w$} {:>10} {:>13} {:>11} {:>11}  throughput",
        "layer", "op", "calls", "bytes", "inclusive", "exclusive"
    );
    for o in &a.ops {
        let name = if o.nested {
            format!("{} (nested)", o.op.name())
        } else {
            o.op.name().to_string()
        };
        let _ = writeln!(
            out,
            "{:<8} {:<w$} {:>10} {:>13} {:>11} {:>11}  {}",
            o.layer.name(),
            name,
            o.t.calls,
            o.t.bytes,
            fmt_ns(o.t.inclusive_ns),
            fmt_ns(o.t.exclusive_ns),
            rate(o.throughput_bps)
        );
    }
    out.push('\n');
    if a.sites.is_empty() {
        out.push_str("no application-level call has calls nested in it\n");
    } else {
        out.push_str("application-level calls with nested calls, largest first:\n");
        for s in a.sites.iter().take(MAX_SITES_SHOWN) {
            let _ = writeln!(
                out,
                "\n{} ({} ranks, {} calls, call site {:#x})",
                s.label(),
                s.ranks,
                s.t.calls,
                s.sig.unwrap_or(0)
            );
            let _ = writeln!(out, "  {}", equation(s, 1.0));
            tree(s, s.t.inclusive_ns, s.ranks, 1, &mut out);
            let layers: Vec<String> = s
                .by_layer()
                .iter()
                .map(|(l, ns)| {
                    format!(
                        "{} {} ({})",
                        l.name(),
                        fmt_ns(*ns),
                        pct(*ns, s.t.inclusive_ns)
                    )
                })
                .collect();
            let _ = writeln!(out, "  by layer: {}", layers.join(", "));
        }
        if a.sites.len() > MAX_SITES_SHOWN {
            let _ = writeln!(
                out,
                "\n{} of {} call sites shown (--json lists every one)",
                MAX_SITES_SHOWN,
                a.sites.len()
            );
        }
    }
    if !a.notes.is_empty() {
        out.push_str("\nnested time over the call's own (exclusive time negative):\n");
        for n in &a.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

/// The indented tree of a call site: each part's inclusive time, share of the site, ranks,
/// calls and bytes, then the time in its own layer.
fn tree(p: &Part, site_ns: f64, of: u64, depth: usize, out: &mut String) {
    let ind = "  ".repeat(depth);
    for b in &p.below {
        let _ = writeln!(
            out,
            "{ind}  {:<24} {:<6} {:>11} {:>5}  {} calls, {} bytes{}",
            b.op.name(),
            b.layer.name(),
            fmt_ns(b.t.inclusive_ns),
            pct(b.t.inclusive_ns, site_ns),
            b.t.calls,
            b.t.bytes,
            ranks_text(b, of)
        );
        if !b.below.is_empty() {
            tree(b, site_ns, of, depth + 1, out);
        }
    }
    let _ = writeln!(
        out,
        "{ind}  {:<24} {:<6} {:>11} {:>5}",
        format!("(in {})", p.layer.name()),
        p.layer.name(),
        fmt_ns(p.t.exclusive_ns),
        pct(p.t.exclusive_ns, site_ns)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::{Compressor, RawEvent};

    fn ev(op: Op, params: Vec<i64>, dur: u64, children: Vec<RawEvent>) -> RawEvent {
        let mut e = RawEvent::new(op, 7, params);
        e.dur_ns = dur;
        e.children = children;
        e
    }

    /// Two ranks: each writes collectively twice (1000 ns each); rank 0 aggregates, with a
    /// 300 ns pwrite of 8192 bytes nested in each of its writes.
    fn trace() -> Trace {
        let mut traces = Vec::new();
        for rank in 0..2u32 {
            let mut c = Compressor::new(rank);
            for _ in 0..2 {
                let kids = if rank == 0 {
                    vec![ev(Op::Pwrite, vec![3, 8192, 0, 8192], 300, vec![])]
                } else {
                    vec![]
                };
                c.push(&ev(Op::FileWriteAtAll, vec![0, 0, 1, 1, 4096], 1000, kids));
            }
            c.push(&ev(Op::Barrier, vec![0], 50, vec![]));
            traces.push(c.finish());
        }
        rsd::merge_tree(traces).unwrap()
    }

    #[test]
    fn counts_by_class_are_every_ranks_counts() {
        for n in [1, 2, 7, 33] {
            for t in [crate::synth::uneven(n), crate::synth::spmd(n, 3)] {
                let mut each = Counts::new();
                t.ranks()
                    .for_each(|r| count(&t.nodes, r, 1, &mut Vec::new(), &mut each));
                assert_eq!(counts_of(&t), each, "at {n} ranks");
            }
        }
    }

    #[test]
    fn inclusive_exclusive_and_breakdown() {
        let a = analyze(&trace());
        assert!(!a.modelled);
        assert_eq!(a.ranks, 2);
        assert!((a.total_ns - (4.0 * 1000.0 + 2.0 * 50.0)).abs() < 1e-6);
        let excl: f64 = a.layers.iter().map(|l| l.t.exclusive_ns).sum();
        assert!((excl - a.total_ns).abs() < 1e-6);
        let posix = a.layers.iter().find(|l| l.layer == Layer::Posix).unwrap();
        assert_eq!(
            (posix.t.calls, posix.nested_calls, posix.t.bytes),
            (2, 2, 16384)
        );
        let mpiio = a.layers.iter().find(|l| l.layer == Layer::MpiIo).unwrap();
        assert!((mpiio.t.inclusive_ns - 4000.0).abs() < 1e-6);
        assert!((mpiio.t.exclusive_ns - 3400.0).abs() < 1e-6);
        assert_eq!(a.sites.len(), 1, "{:?}", a.sites);
        let s = &a.sites[0];
        assert_eq!((s.op, s.ranks, s.t.calls), (Op::FileWriteAtAll, 2, 4));
        assert_eq!(s.below.len(), 1);
        assert_eq!((s.below[0].op, s.below[0].ranks), (Op::Pwrite, 1));
        assert_eq!(
            equation(s, 1.0),
            "MPI_File_write_at_all 4.0us = pwrite 600ns on 1 of 2 ranks + 3.4us in MPIIO"
        );
        let text = render(&a, "t.iotrex");
        assert!(text.contains("pwrite (nested)"), "{text}");
    }

    /// Three levels, as an HDF5 call over MPI-IO over POSIX will be: nothing here knows which
    /// layer sits above which (an `fwrite` stands in for the top call).
    #[test]
    fn any_depth_and_any_layer_on_top() {
        let mut c = Compressor::new(0);
        let pw = ev(Op::Pwrite, vec![3, 100, 0, 100], 200, vec![]);
        let mpi = ev(Op::FileWriteAtAll, vec![0, 0, 1, 1, 100], 700, vec![pw]);
        c.push(&ev(Op::Fwrite, vec![0, 1, 100, 100], 1000, vec![mpi]));
        let a = analyze(&c.finish());
        let s = &a.sites[0];
        assert_eq!(
            equation(s, 1.0),
            "fwrite 1.0us = MPI_File_write_at_all 700ns (pwrite 200ns + 500ns in MPIIO) + 300ns in STDIO"
        );
        let by: Vec<(Layer, f64)> = s.by_layer();
        assert_eq!(
            by,
            vec![
                (Layer::MpiIo, 500.0),
                (Layer::Posix, 200.0),
                (Layer::Stdio, 300.0)
            ]
        );
        let excl: f64 = a.layers.iter().map(|l| l.t.exclusive_ns).sum();
        assert_eq!((excl, a.total_ns), (1000.0, 1000.0));
        let nested: Vec<(Op, bool)> = a.ops.iter().map(|o| (o.op, o.nested)).collect();
        assert!(nested.contains(&(Op::FileWriteAtAll, true)), "{nested:?}");
    }
}
