//! Human-readable and JSON-ready views of a trace, for `iotrex show`, `stats` and `expand`.
//!
//! Text views write to any [`std::fmt::Write`] / [`std::io::Write`] so the CLI only picks the
//! destination. JSON views are plain [`Serialize`] structs: this crate does not depend on a JSON
//! library, the CLI serialises them. Values, events and nodes are written by
//! [`rsd::notation`], the one renderer.

use crate::stats::{Spread, Summary};
use rsd::format::{Header, TraceFile};
use rsd::notation::{INDENT, render_nodes};
use rsd::notes::rank_ranges;
use rsd::op::{Layer, Op};
use rsd::path::PathTemplate;
use rsd::timing::{TimeKind, fmt_ns};
use rsd::trace::{FlatEvent, Trace};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use std::fmt::Write as _;

/// The measured time per rank of each kind, compensation (the wall time not in them) last
/// when the wall time is recorded.
pub fn time_per_rank(tf: &TraceFile) -> Vec<(TimeKind, f64)> {
    let mut v = rsd::timing::time_parts(&tf.trace.nodes, tf.header.nranks);
    if tf.header.wall_ns > 0 {
        let sum: f64 = v.iter().map(|(_, t)| t).sum();
        v.push((TimeKind::Compensation, tf.header.wall_ns as f64 - sum));
    }
    v
}

/// Writes the header block of `iotrex show`, with the format version the header alone says.
pub fn render_header(h: &Header, out: &mut String) {
    render_header_as(h, &h.encoding.name_with(h), out);
}

/// [`render_header`] naming the format version `version` (a whole file's,
/// [`TraceFile::version_name`], which its run values raise).
pub fn render_header_as(h: &Header, version: &str, out: &mut String) {
    let _ = writeln!(
        out,
        "iotrex trace, format version {version}, written by iotrex {}",
        h.tool_version
    );
    let _ = writeln!(out, "{INDENT}ranks      {}", h.nranks);
    let cmd = if h.command.is_empty() {
        "(not recorded)".to_string()
    } else {
        command_line(&h.command)
    };
    let _ = writeln!(out, "{INDENT}command    {cmd}");
    if let Some(b) = &h.build_id {
        let _ = writeln!(out, "{INDENT}build id   {b}");
    }
    let layers: Vec<&str> = h.layers.iter().map(|l| l.name()).collect();
    let _ = writeln!(out, "{INDENT}layers     {}", layers.join(", "));
    let _ = writeln!(out, "{INDENT}clock      {}", h.clock);
    // 0 is what producers without a clock (synthetic traces) write.
    let wall = if h.wall_ns == 0 {
        "(not recorded)".to_string()
    } else {
        fmt_ns(h.wall_ns as f64)
    };
    match &h.prediction {
        Some(p) => {
            let _ = writeln!(
                out,
                "{INDENT}wall time  {wall} {} (predicted: the sum of the parts below)",
                p.wall.interval
            );
            let parts: Vec<String> = p
                .parts
                .iter()
                .map(|(k, v)| format!("{} {v}", k.name()))
                .collect();
            let _ = writeln!(out, "{INDENT}per rank   {}", parts.join("; "));
            let ins: Vec<String> = p
                .inputs
                .iter()
                .map(|(n, r)| {
                    if *r > 1 {
                        format!("{n} x{r}")
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "{INDENT}predicted  from runs at {} ranks",
                ins.join(", ")
            );
        }
        None => {
            let _ = writeln!(out, "{INDENT}wall time  {wall}");
        }
    }
    if let Some(p) = &h.provenance {
        let _ = writeln!(out, "{INDENT}extrap     {}", provenance(p));
    }
    let _ = writeln!(
        out,
        "{INDENT}complete   {}",
        if h.incomplete {
            "NO: this trace is incomplete"
        } else {
            "yes"
        }
    );
    for n in &h.notes {
        let _ = writeln!(out, "{INDENT}note       {n}");
    }
    if !h.unrecorded_mpi.is_empty() {
        let _ = writeln!(
            out,
            "{INDENT}unrecorded {} MPI functions the program imports are not recorded: {}",
            h.unrecorded_mpi.len(),
            h.unrecorded_mpi.join(", ")
        );
    }
    if !h.excluded.is_empty() {
        let _ = writeln!(out, "{INDENT}excluded   {}", excluded_line(&h.excluded));
    }
    if let Some(p) = &h.processes {
        let _ = writeln!(out, "{INDENT}processes  {}", processes_line(p, h.nranks));
        for g in &p.groups {
            let _ = writeln!(out, "{INDENT}           {}", group_line(g));
        }
    }
    if let Some(l) = &h.node_layout {
        let _ = writeln!(out, "{INDENT}layout     {}", layout_line(l, h.nranks));
    }
    if let Some(s) = &h.sensitivity {
        for l in s.lines() {
            let _ = writeln!(out, "{INDENT}throttle   {l}");
        }
    }
    if let Some(c) = &h.mpi_config {
        let _ = writeln!(out, "{INDENT}mpi        {}", c.library);
        let layout: Vec<String> = c
            .node_ranks
            .iter()
            .map(|(r, n)| format!("{n} x {r} ranks"))
            .collect();
        let _ = writeln!(
            out,
            "{INDENT}nodes      {} ({}{})",
            c.nodes(),
            layout.join(", "),
            if c.nodes_contiguous {
                ""
            } else {
                ", ranks not consecutive"
            }
        );
        if !h.node_cores.is_empty() {
            let cores: Vec<String> = h
                .node_cores
                .iter()
                .map(|(c, n)| format!("{n} x {c} CPUs"))
                .collect();
            let per = h.ranks_per_core().map_or(String::new(), |r| {
                format!("; at most {r:.3} ranks per core")
            });
            let _ = writeln!(out, "{INDENT}cores      {}{per}", cores.join(", "));
        }
        for m in &h.shared_machines {
            let _ = writeln!(
                out,
                "{INDENT}machine    nodes {} are one machine of {} CPUs (one kernel): their ranks share it",
                m.nodes_text(),
                m.cpus
            );
        }
        for (k, v) in &c.cvars {
            let _ = writeln!(out, "{INDENT}cvar       {k} = {v}");
        }
        for (path, hints) in &c.file_hints {
            let kv: Vec<String> = hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "{INDENT}hints      {path}: {}", kv.join(" "));
        }
    }
}

/// The ranks of the run (`0..nranks`) that an incomplete trace does not hold (a rank killed,
/// left out of the merge, or a per-rank file); empty for a complete trace.
pub fn missing_ranks(tf: &TraceFile) -> Vec<u32> {
    if !tf.header.incomplete {
        return Vec::new();
    }
    let have = tf.trace.ranks();
    if have.len() >= u64::from(tf.header.nranks) {
        return Vec::new();
    }
    (0..tf.header.nranks)
        .filter(|&r| !have.contains(r))
        .collect()
}

/// The whole text of `iotrex show`: header, a legend line, then the nodes.
pub fn render_trace_file(tf: &TraceFile) -> String {
    let mut out = String::new();
    render_header_as(&tf.header, &tf.version_name(), &mut out);
    let missing = missing_ranks(tf);
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "{INDENT}missing    {} of {} ranks are not in this trace: {}",
            missing.len(),
            tf.header.nranks,
            rank_ranges(&missing)
        );
    }
    let approx = rsd::approx::count(&tf.trace);
    if approx > 0 {
        let _ = writeln!(
            out,
            "  approx     {approx} parameters are statistical summaries, not exact (~{{...}})"
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "# values are functions of rank and the enclosing loops' indices i (outermost), j, k, ..."
    );
    render_nodes(&tf.trace.nodes, None, 0, &mut out);
    out
}

/// The header's provenance in one line: the scales and the target, then what else the
/// extrapolation says of itself.
fn provenance(p: &rsd::Provenance) -> String {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let mut parts = vec![format!("from {} ranks to {}", list(&p.scales), p.target)];
    if !p.dropped.is_empty() {
        parts.push(format!("dropped {} (another structure)", list(&p.dropped)));
    }
    if !p.set_aside.is_empty() {
        let ops: Vec<&str> = p.set_aside.iter().map(|o| o.name()).collect();
        parts.push(format!("set aside {}", ops.join(", ")));
    }
    if !p.made_up_sites.is_empty() {
        parts.push(format!("{} call sites made up", p.made_up_sites.len()));
    }
    if p.oracle_layout {
        parts.push("HDF5 file space from the oracle".into());
    }
    parts.join("; ")
}

/// What `iotrex show --json` prints.
#[derive(Debug, Serialize)]
pub struct ShowJson<'a> {
    /// The format version the file was read as.
    pub format_version: u32,
    /// Header and trace, as stored.
    #[serde(flatten)]
    pub file: &'a TraceFile,
    /// Measured (or, in an extrapolated trace, predicted) time per rank by kind, ns
    /// ([`time_per_rank`]).
    pub time_per_rank: Vec<(TimeKind, f64)>,
}

impl<'a> ShowJson<'a> {
    /// The JSON view of a trace file.
    pub fn new(file: &'a TraceFile) -> Self {
        ShowJson {
            format_version: file.header.encoding.version(),
            file,
            time_per_rank: time_per_rank(file),
        }
    }
}

/// Parameters with their names, serialised as a map that keeps schema order.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedParams(pub Vec<(String, i64)>);

impl Serialize for NamedParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One expanded call with named parameters, for `iotrex expand --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallView {
    /// The layer name (`MPIIO`, `MPI`, `POSIX`, `STDIO`).
    pub layer: &'static str,
    /// The C name of the call.
    pub op: &'static str,
    /// Call-site signature.
    pub sig: u64,
    /// The concrete path, for calls that name a file (the first of a call that names two).
    pub path: Option<String>,
    /// The second path of a call that names two (`rename`'s and `link`'s newpath,
    /// `symlink`'s linkpath).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    /// Parameters by name, in schema order.
    pub params: NamedParams,
    /// Nested POSIX calls.
    pub children: Vec<CallView>,
}

/// The parameters of a flat call with their names.
pub fn named_params(e: &FlatEvent) -> Vec<(String, i64)> {
    let n = e.params.len();
    e.params
        .iter()
        .enumerate()
        .map(|(i, &v)| (e.op.param_name(i, n, 0), v))
        .collect()
}

impl CallView {
    /// The view of one expanded call.
    pub fn new(e: &FlatEvent) -> CallView {
        CallView {
            layer: e.op.layer().name(),
            op: e.op.name(),
            sig: e.sig,
            path: e
                .path
                .as_deref()
                .and_then(|p| rsd::op::paths_of(p).next().map(String::from)),
            path2: e
                .path
                .as_deref()
                .and_then(rsd::op::split_path_pair)
                .map(|(_, b)| b.to_string()),
            params: NamedParams(named_params(e)),
            children: e.children.iter().map(CallView::new).collect(),
        }
    }
}

/// Writes one expanded call per line, `op path name=value ...`, children indented below.
pub fn write_call(
    e: &FlatEvent,
    depth: usize,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut line = INDENT.repeat(depth);
    line.push_str(e.op.name());
    if let Some(p) = &e.path {
        let _ = write!(line, " {}", rsd::op::show_path(e.op, p));
    }
    for (k, v) in named_params(e) {
        let _ = write!(line, " {k}={v}");
    }
    writeln!(out, "{line}")?;
    for c in &e.children {
        write_call(c, depth + 1, out)?;
    }
    Ok(())
}

/// Streams the text form of `iotrex expand` for `rank`; returns the number of top-level calls.
/// Stops at the first write error (a closed pipe, say) and returns it.
pub fn write_expand(
    trace: &Trace,
    rank: u32,
    out: &mut impl std::io::Write,
) -> std::io::Result<u64> {
    let mut n = 0u64;
    let mut err = None;
    trace.expand_with(rank, &mut |e| match write_call(e, 0, out) {
        Ok(()) => {
            n += 1;
            true
        }
        Err(x) => {
            err = Some(x);
            false
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// Totals of one layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerRow {
    /// Layer name.
    pub layer: &'static str,
    /// Calls over all ranks.
    pub calls: u64,
    /// File bytes over all ranks.
    pub bytes: u64,
}

/// Totals of one operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    /// Layer name.
    pub layer: &'static str,
    /// C name of the call.
    pub op: &'static str,
    /// Calls over all ranks.
    pub calls: u64,
    /// File bytes over all ranks.
    pub bytes: u64,
    /// Time inside the calls over all ranks, ns.
    pub time_ns: f64,
}

/// Min, mean and max of a per-rank quantity, with the ranks of the extremes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadRow {
    /// Smallest value.
    pub min: u64,
    /// Rank with the smallest value.
    pub min_rank: u32,
    /// Mean over ranks.
    pub mean: f64,
    /// Largest value.
    pub max: u64,
    /// Rank with the largest value.
    pub max_rank: u32,
}

impl From<&Spread> for SpreadRow {
    fn from(s: &Spread) -> Self {
        SpreadRow {
            min: s.min.0,
            min_rank: s.min.1,
            mean: s.mean,
            max: s.max.0,
            max_rank: s.max.1,
        }
    }
}

/// What `iotrex stats` reports, in a shape JSON can hold ([`Summary`] keys maps by tuples).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsView {
    /// Size of the trace file in bytes.
    pub file_bytes: u64,
    /// Nodes in the compressed trace.
    pub nodes: u64,
    /// Ranks present in the trace.
    pub ranks: u64,
    /// Totals per layer, in [`Layer::STACK`] order, layers without calls left out.
    pub layers: Vec<LayerRow>,
    /// Totals per operation, grouped by layer.
    pub ops: Vec<OpRow>,
    /// Calls per rank.
    pub rank_calls: SpreadRow,
    /// File bytes per rank.
    pub rank_bytes: SpreadRow,
    /// Paths named by any call, sorted.
    pub files: Vec<String>,
    /// Parameters kept as statistical summaries, one line each (empty for an exact trace).
    pub approximate: Vec<String>,
    /// Where the run's ranks ran (`Header::node_layout`), when recorded; `null` otherwise.
    pub node_layout: Option<NodesView>,
    /// Calls the tracer left out under excluded directories (`Header::excluded`).
    pub excluded: Vec<rsd::exclude::Excluded>,
    /// The processes beyond the ranks' own, by group (`Header::processes`); `null` when the
    /// traced processes never forked. The per-rank spreads then count every process.
    pub processes: Option<crate::stats::ProcessTotals>,
}

impl StatsView {
    /// The view with the trace's processes ([`crate::stats::processes`]).
    pub fn with_processes(mut self, tf: &TraceFile) -> StatsView {
        self.processes = crate::stats::processes(&tf.trace, &tf.header);
        self
    }

    /// The view with what `h` says of the run: its node layout ([`NodesView`]) and what the
    /// tracer left out.
    pub fn with_layout(mut self, h: &Header) -> StatsView {
        self.node_layout = h.node_layout.as_ref().map(|l| NodesView::new(l, h.nranks));
        self.excluded = h.excluded.clone();
        self
    }

    /// Builds the view from a summary and the trace file's size.
    pub fn new(s: &Summary, file_bytes: u64) -> StatsView {
        let per_layer = s.per_layer();
        StatsView {
            file_bytes,
            nodes: s.nodes,
            ranks: s.ranks,
            layers: Layer::STACK
                .iter()
                .filter_map(|l| {
                    per_layer.get(l).map(|&(calls, bytes)| LayerRow {
                        layer: l.name(),
                        calls,
                        bytes,
                    })
                })
                .collect(),
            ops: s
                .ops
                .iter()
                .map(|(&(l, op), t): (&(Layer, Op), _)| OpRow {
                    layer: l.name(),
                    op: op.name(),
                    calls: t.count,
                    bytes: t.bytes,
                    time_ns: t.time_ns,
                })
                .collect(),
            rank_calls: (&s.rank_calls).into(),
            rank_bytes: (&s.rank_bytes).into(),
            files: s.files.iter().cloned().collect(),
            approximate: s.approximate.clone(),
            node_layout: None,
            excluded: Vec::new(),
            processes: None,
        }
    }
}

/// Nodes named one by one in the text views; the JSON lists up to [`MAX_NODES_LISTED`].
const MAX_NODES_SHOWN: usize = 8;
/// Nodes listed one by one in `stats --json`: a traced run's nodes are all listed, an
/// extrapolation to many more says its layout in [`NodesView::placement`] alone.
pub const MAX_NODES_LISTED: usize = 4096;

/// The node layout in one line: nodes, placement, ranks per node, then the first nodes by
/// name with their ranks (`2 nodes by slot, 2 ranks per node: node1 0-1, node2 2-3`).
pub fn layout_line(l: &rsd::NodeLayout, nranks: u32) -> String {
    let kind = match l.placement {
        // "2 nodes other placement" would not read: say what it is not.
        rsd::Placement::Runs(_) => ", placed neither by slot nor by node",
        _ => l.kind(),
    };
    let sep = if kind.starts_with(',') { "" } else { " " };
    let mut s = format!(
        "{} node{}{sep}{kind}",
        l.nodes,
        if l.nodes == 1 { "" } else { "s" },
    );
    if let Some(p) = l.ranks_per_node(nranks) {
        let _ = write!(s, ", {p} rank{} per node", if p == 1 { "" } else { "s" });
    }
    let listed: Vec<String> = (0..l.nodes.min(MAX_NODES_SHOWN as u32))
        .filter_map(|n| Some(format!("{} {}", node_name(l, n), l.ranks_of(n, nranks)?)))
        .collect();
    if !listed.is_empty() {
        let _ = write!(s, ": {}", listed.join(", "));
    }
    if l.nodes as usize > MAX_NODES_SHOWN {
        let _ = write!(s, ", ... ({} more)", l.nodes as usize - MAX_NODES_SHOWN);
    }
    if l.names.is_empty() {
        s.push_str(" (node names not known)");
    }
    s
}

/// Node `n`'s name, or `#n` when the names are not known.
pub fn node_name(l: &rsd::NodeLayout, n: u32) -> String {
    l.name(n).map_or_else(|| format!("#{n}"), str::to_string)
}

/// The node layout in `stats --json` (`node_layout`): what `show` says in its `layout` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodesView {
    /// Nodes in all.
    pub nodes: u32,
    /// `by slot`, `by node (round robin)` or `other placement`.
    pub kind: &'static str,
    /// Ranks on every node, when all hold as many.
    pub ranks_per_node: Option<u32>,
    /// The placement as stored (`{"Block":{"per_node":2}}`, `"RoundRobin"`, `{"Runs":[[node,
    /// ranks],...]}`).
    pub placement: rsd::Placement,
    /// Each node in node order (up to [`MAX_NODES_LISTED`]): its number, name (null when not
    /// known) and ranks (`0-1`, `1-3:2`).
    pub list: Vec<NodeRow>,
}

/// One node of [`NodesView::list`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    /// Its number (node 0 holds rank 0; nodes in the order of their lowest rank).
    pub node: u32,
    /// Its host name.
    pub name: Option<String>,
    /// Its ranks.
    pub ranks: String,
}

impl NodesView {
    /// The view of `l`, the layout of a run of `nranks` ranks.
    pub fn new(l: &rsd::NodeLayout, nranks: u32) -> NodesView {
        NodesView {
            nodes: l.nodes,
            kind: l.kind(),
            ranks_per_node: l.ranks_per_node(nranks),
            placement: l.placement.clone(),
            list: (0..l.nodes.min(MAX_NODES_LISTED as u32))
                .filter_map(|n| {
                    Some(NodeRow {
                        node: n,
                        name: l.name(n).map(str::to_string),
                        ranks: l.ranks_of(n, nranks)?,
                    })
                })
                .collect(),
        }
    }
}

/// What the tracer left out: `12433 calls, 83886080 (80.0 MiB) under /usr; 310 calls, 0
/// under /proc (files under the system's directories are not traced: iotrex trace --include)`.
pub fn excluded_line(excluded: &[rsd::exclude::Excluded]) -> String {
    let dirs: Vec<String> = excluded
        .iter()
        .map(|e| {
            let s = if e.calls == 1 { "" } else { "s" };
            format!(
                "{} call{s}, {} under {}",
                e.calls,
                fmt_bytes(e.bytes),
                e.prefix
            )
        })
        .collect();
    format!(
        "{} (the system's files are not traced; iotrex trace --include DIR traces them)",
        dirs.join("; ")
    )
}

/// The processes in one line: `3 processes: 1 rank's own, 2 forked children (1 missing)`.
pub fn processes_line(p: &rsd::process::Processes, nranks: u32) -> String {
    let children = p.children();
    let mut extra = Vec::new();
    if p.missing() > 0 {
        extra.push(format!(
            "{} missing: no record, still running when the trace was written or killed",
            p.missing()
        ));
    }
    if p.untraced > 0 {
        extra.push(format!(
            "{} more not traced, beyond {} ({} per rank)",
            p.untraced,
            rsd::process::MAX_VAR,
            p.stride
        ));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" ({})", extra.join("; "))
    };
    format!(
        "{} processes: {nranks} rank{} own, {children} forked child{}{extra}",
        u64::from(nranks) + children,
        if nranks == 1 { "'s" } else { "s'" },
        if children == 1 { "" } else { "ren" },
    )
}

/// One process group in one line: `slots 1-2 (2): forked by the rank at 0x2f1c, ended by exit 0`.
pub fn group_line(g: &rsd::process::Group) -> String {
    let by = g
        .parent
        .map_or("the rank".to_string(), |k| format!("its child {k}"));
    format!(
        "slot{} {} ({}): {}, ended by {}",
        if g.slots.len() == 1 { "" } else { "s" },
        g.slots,
        g.slots.len(),
        started(&g.command, &by, &format!("{:#x}", g.site)),
        g.end
    )
}

/// How a group's processes started: `forked by BY at SITE`, or, for an image `exec` started,
/// `running \`CMD\` (exec'd under BY, site SITE)`.
fn started(command: &[String], by: &str, site: &str) -> String {
    if command.is_empty() {
        return format!("forked by {by} at {site}");
    }
    format!(
        "running `{}` (exec'd under {by}, site {site})",
        command_line(command)
    )
}

/// A command's words on one line: control characters in them (a `python3 -c` script's
/// newlines) are written as escapes, so the header keeps one line per field.
fn command_line(words: &[String]) -> String {
    let one = |w: &String| -> String {
        w.chars()
            .map(|c| match c {
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            })
            .collect()
    };
    words.iter().map(one).collect::<Vec<_>>().join(" ")
}

/// Bytes exactly, with a binary-unit approximation for large values: `3145728 (3.0 MiB)`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return b.to_string();
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{b} ({v:.1} {})", UNITS[u])
}

/// `stats`' lines on the processes: the ranks' own, then each group of children.
fn render_processes(p: &crate::stats::ProcessTotals, out: &mut String) {
    let _ = writeln!(
        out,
        "(per rank counts every process: {} ranks' own and {} forked)",
        p.rank_processes,
        p.children - p.missing
    );
    let _ = writeln!(
        out,
        "processes  {} rank process{}: read {}, written {}",
        p.rank_processes,
        if p.rank_processes == 1 { "" } else { "es" },
        fmt_bytes(p.rank_read),
        fmt_bytes(p.rank_written)
    );
    for g in &p.groups {
        let _ = writeln!(
            out,
            "           {} child{} (slots {}), {}, {}: read {}, written {}",
            g.processes,
            if g.processes == 1 { "" } else { "ren" },
            g.slots,
            started(&g.command, &g.parent, &g.site),
            g.end,
            fmt_bytes(g.read),
            fmt_bytes(g.written)
        );
    }
    if p.untraced > 0 {
        let _ = writeln!(
            out,
            "           {} more children not traced (beyond {})",
            p.untraced,
            rsd::process::MAX_VAR
        );
    }
}

/// File name patterns listed by the text form of `iotrex stats`; `--json` lists every file.
const MAX_FILES_SHOWN: usize = 20;

/// The text of `iotrex stats`.
pub fn render_stats_view(v: &StatsView) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "trace: {} bytes, {} nodes, {} ranks",
        v.file_bytes, v.nodes, v.ranks
    );
    if let Some(l) = &v.node_layout {
        let per = l
            .ranks_per_node
            .map_or(String::new(), |p| format!(", {p} ranks per node"));
        let _ = writeln!(out, "run:   {} machine nodes {}{per}", l.nodes, l.kind);
    }
    if !v.excluded.is_empty() {
        let _ = writeln!(out, "excluded: {}", excluded_line(&v.excluded));
    }
    out.push('\n');
    let _ = writeln!(out, "{:<8} {:>12}  bytes", "layer", "calls");
    for l in &v.layers {
        let _ = writeln!(
            out,
            "{:<8} {:>12}  {}",
            l.layer,
            l.calls,
            fmt_bytes(l.bytes)
        );
    }
    out.push('\n');
    let w = v.ops.iter().map(|o| o.op.len()).max().unwrap_or(2).max(2);
    let _ = writeln!(
        out,
        "{:<8} {:<w$} {:>12}  {:<24} time",
        "layer", "op", "calls", "bytes"
    );
    for o in &v.ops {
        let _ = writeln!(
            out,
            "{:<8} {:<w$} {:>12}  {:<24} {}",
            o.layer,
            o.op,
            o.calls,
            fmt_bytes(o.bytes),
            fmt_ns(o.time_ns)
        );
    }
    out.push('\n');
    let _ = writeln!(out, "per rank   min                  mean          max");
    for (name, s) in [("calls", &v.rank_calls), ("bytes", &v.rank_bytes)] {
        let _ = writeln!(
            out,
            "{name:<10} {:<20} {:<13.1} {} (rank {})",
            format!("{} (rank {})", s.min, s.min_rank),
            s.mean,
            s.max,
            s.max_rank
        );
    }
    if let Some(p) = &v.processes {
        render_processes(p, &mut out);
    }
    out.push('\n');
    if !v.approximate.is_empty() {
        let _ = writeln!(
            out,
            "approximate: {} parameters are statistical summaries (IOTREX_APPROX); byte totals \
             use their means",
            v.approximate.len()
        );
        for a in &v.approximate {
            let _ = writeln!(out, "{INDENT}{a}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "files touched: {}", v.files.len());
    // File-per-process runs name thousands of files of one pattern: list patterns, not files.
    let mut by_template: std::collections::BTreeMap<String, Vec<(Vec<i64>, &str)>> =
        Default::default();
    for f in &v.files {
        let (t, fields) = PathTemplate::parse(f);
        by_template.entry(t.0).or_default().push((fields, f));
    }
    for (i, (t, mut files)) in by_template.into_iter().enumerate() {
        if i == MAX_FILES_SHOWN {
            let _ = writeln!(out, "{INDENT}... (--json lists every file)");
            break;
        }
        files.sort();
        match files.as_slice() {
            [(_, f)] => {
                let _ = writeln!(out, "{INDENT}{f}");
            }
            [(_, first), .., (_, last)] => {
                let _ = writeln!(
                    out,
                    "{INDENT}{t}  ({} files, {first} .. {last})",
                    files.len()
                );
            }
            [] => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_synthetic_trace() {
        let tf = TraceFile {
            header: Header::new(4),
            trace: crate::synth::spmd(4, 10),
        };
        let text = render_trace_file(&tf);
        assert!(text.contains("ranks      4"), "{text}");
        assert!(text.contains("loop x10 {"), "{text}");
        assert!(text.contains("open out/file_%d [rank]"), "{text}");
        assert!(text.contains("offset = 8192*i"), "{text}");
        assert!(text.contains("offset = 1048576*rank + 4194304*i"), "{text}");
        // Rank 0 alone aggregates: the collective loop is one node of every rank, and rank 0's
        // pwrite child is indented under the collective write with its own rank set.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "ranks 0-3  loop x3 {")
            .expect(&text);
        assert!(
            lines[at + 1]
                .starts_with("  MPI_File_write_at_all  fh = 0, offset = 1048576*rank + 4194304*i")
        );
        assert!(lines[at + 2].starts_with("    ranks 0  pwrite  fd = 4, count = 4194304"));
        assert!(!text.contains("ranks 1-3  loop x3 {"), "{text}");
    }

    #[test]
    fn header_says_how_an_extrapolation_was_made() {
        let mut h = Header::new(64);
        let mut out = String::new();
        render_header(&h, &mut out);
        assert!(!out.contains("extrap "), "{out}");
        assert!(
            out.starts_with("iotrex trace, format version 2.7,"),
            "{out}"
        );
        let mut p = rsd::Provenance::new(&[4, 8, 16], 64);
        p.dropped = vec![12];
        p.set_aside = vec![Op::CommSize];
        p.made_up_sites = vec![0x8000_0000_0000_0001, 0x8000_0000_0000_0002];
        p.oracle_layout = true;
        h.provenance = Some(p);
        out.clear();
        render_header(&h, &mut out);
        assert!(
            out.starts_with("iotrex trace, format version 2.8,"),
            "{out}"
        );
        assert!(
            out.contains(
                "extrap     from 4, 8, 16 ranks to 64; dropped 12 (another structure); set aside \
                 MPI_Comm_size; 2 call sites made up; HDF5 file space from the oracle\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn header_counts_what_was_excluded() {
        let mut h = Header::new(2);
        h.excluded = vec![
            rsd::exclude::Excluded {
                prefix: "/proc".into(),
                calls: 1,
                bytes: 0,
            },
            rsd::exclude::Excluded {
                prefix: "/usr".into(),
                calls: 12,
                bytes: 3 << 20,
            },
        ];
        let mut out = String::new();
        render_header(&h, &mut out);
        assert!(
            out.contains("excluded   1 call, 0 under /proc; 12 calls, 3145728 (3.0 MiB) under /usr (the system's"),
            "{out}"
        );
    }

    #[test]
    fn header_lists_unrecorded_mpi_functions() {
        let mut h = Header::new(2);
        let mut out = String::new();
        render_header(&h, &mut out);
        assert!(!out.contains("unrecorded"), "{out}");
        h.unrecorded_mpi = vec!["MPI_Rsend".into(), "MPI_Scan".into()];
        out.clear();
        render_header(&h, &mut out);
        assert!(
            out.contains("unrecorded 2 MPI functions the program imports are not recorded: MPI_Rsend, MPI_Scan\n"),
            "{out}"
        );
    }

    #[test]
    fn header_shows_the_mpi_configuration() {
        let mut h = Header::new(16);
        h.mpi_config = Some(rsd::MpiConfig {
            library: "Open MPI v4.1.4".into(),
            node_ranks: vec![(8, 2)],
            nodes_contiguous: true,
            cvars: vec![("io_ompio_max_aggregators_ratio".into(), "8".into())],
            file_hints: vec![("/x/out.dat".into(), vec![("cb_nodes".into(), "2".into())])],
        });
        let mut out = String::new();
        render_header(&h, &mut out);
        for want in [
            "mpi        Open MPI v4.1.4\n",
            "nodes      2 (2 x 8 ranks)\n",
            "cvar       io_ompio_max_aggregators_ratio = 8\n",
            "hints      /x/out.dat: cb_nodes=2\n",
        ] {
            assert!(out.contains(want), "{want:?} in {out}");
        }
    }

    #[test]
    fn header_and_stats_show_the_node_layout() {
        let mut h = Header::new(4);
        h.node_layout = Some(rsd::NodeLayout::from_nodes(
            &[0, 1, 0, 1],
            vec!["node1".into(), "node2".into()],
        ));
        let mut out = String::new();
        render_header(&h, &mut out);
        assert!(
            out.starts_with("iotrex trace, format version 2.9,"),
            "{out}"
        );
        assert!(
            out.contains(
                "layout     2 nodes by node (round robin), 2 ranks per node: node1 0-2:2, node2 1-3:2\n"
            ),
            "{out}"
        );
        // Unnamed (an extrapolation's target), many nodes: the first few, then how many more.
        let many = rsd::NodeLayout::block(10, 4);
        assert_eq!(
            layout_line(&many, 40),
            "10 nodes by slot, 4 ranks per node: #0 0-3, #1 4-7, #2 8-11, #3 12-15, #4 16-19, \
             #5 20-23, #6 24-27, #7 28-31, ... (2 more) (node names not known)"
        );
        let other = rsd::NodeLayout::from_nodes(&[0, 0, 1, 0], Vec::new());
        assert_eq!(
            layout_line(&other, 4),
            "2 nodes, placed neither by slot nor by node: #0 0-1,3, #1 2 (node names not known)"
        );
        let v =
            StatsView::new(&crate::stats::summarize(&crate::synth::spmd(4, 1)), 10).with_layout(&h);
        let l = v.node_layout.as_ref().unwrap();
        assert_eq!(
            (l.nodes, l.kind, l.ranks_per_node),
            (2, "by node (round robin)", Some(2))
        );
        assert_eq!(l.list[1].name.as_deref(), Some("node2"));
        assert_eq!(l.list[1].ranks, "1-3:2");
        assert!(
            render_stats_view(&v)
                .contains("run:   2 machine nodes by node (round robin), 2 ranks per node\n")
        );
    }

    #[test]
    fn header_flags_incomplete_traces() {
        let mut h = Header::new(8);
        h.incomplete = true;
        h.wall_ns = 3_400_000;
        h.command = vec!["./ior".into(), "-w".into()];
        h.notes = vec!["rank 5 died before MPI_Finalize".into()];
        let mut out = String::new();
        render_header(&h, &mut out);
        assert!(out.contains("ranks      8\n"), "{out}");
        assert!(out.contains("command    ./ior -w\n"), "{out}");
        h.command = vec![
            "python3".into(),
            "-c".into(),
            "import os\nos.sync()\t".into(),
        ];
        out.clear();
        render_header(&h, &mut out);
        assert!(
            out.contains("command    python3 -c import os\\nos.sync()\\t\n"),
            "{out}"
        );
        assert!(out.contains("wall time  3.40ms\n"), "{out}");
        assert!(
            out.contains("complete   NO: this trace is incomplete\n"),
            "{out}"
        );
        assert!(
            out.contains("note       rank 5 died before MPI_Finalize\n"),
            "{out}"
        );
    }

    #[test]
    fn stats_text_groups_files_by_pattern() {
        let t = crate::synth::spmd(12, 2);
        let v = StatsView::new(&crate::stats::summarize(&t), 1234);
        assert_eq!(v.files.len(), 14);
        let text = render_stats_view(&v);
        assert!(text.contains("files touched: 14"), "{text}");
        assert!(
            text.contains("out/file_%d  (12 files, out/file_0 .. out/file_11)"),
            "{text}"
        );
        assert!(text.contains("\n  out/shared.dat\n"), "{text}");
        assert!(text.starts_with("trace: 1234 bytes, "), "{text}");
    }

    #[test]
    fn expand_lines() {
        let t = crate::synth::spmd(2, 3);
        let mut out = Vec::new();
        let n = write_expand(&t, 1, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(n as usize, crate::synth::events(1, 2, 3).len());
        assert!(
            text.lines()
                .any(|l| l == "pwrite fd=3 count=8192 offset=16384 ret=8192"),
            "{text}"
        );
        assert!(
            text.contains("open out/file_1 flags=577 mode=420 fd=3"),
            "{text}"
        );
    }
}
