//! The page: one HTML file with inline CSS and inline SVG, nothing fetched from anywhere.

use crate::analysis::{LayerIo, Limits, TraceAnalysis};
use crate::error::ReportError;
use crate::extrap::{Extrapolation, Kind, Quantity, Unit};
use crate::plot::{self, Curve, Plot};
use rsd::op::{Layer, Op};
use rsd::timing::fmt_ns;
use rsd_view::show::fmt_bytes;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Tables longer than this are collapsed into a `<details>` that says how many rows it holds.
const LONG_TABLE: usize = 12;

/// Plots drawn in the extrapolation section at most; the table lists every quantity.
const MAX_SCALING_PLOTS: usize = 30;
/// Timing quantities plotted even when others are capped ("the top timing quantities").
const TOP_TIMING: usize = 6;

const CSS: &str = "
body{font-family:sans-serif;margin:0 auto;max-width:1060px;padding:0 16px 40px;color:#222;background:#fafafa}
h1{margin:18px 0 4px}h2{border-bottom:2px solid #4e79a7;padding-bottom:3px;margin-top:34px}
h3{margin:22px 0 6px;color:#2f4b7c}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef2f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12px;background:#f0f0f0;padding:0 3px;overflow-wrap:break-word}
.plot{background:#fff;border:1px solid #ddd;margin:8px 0;padding:4px;display:inline-block;vertical-align:top}
.plot svg{display:block;max-width:100%;height:auto}
.grid{display:flex;flex-wrap:wrap;gap:8px}
.grid .plot{width:490px}
.legend{font-size:12px;margin:4px 6px}.legend span{margin-right:12px;display:inline-block;max-width:100%}
.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
.note{font-size:13px;color:#555;margin:4px 0}.warn{color:#a33;font-weight:bold}
details>summary{cursor:pointer;font-size:1.3em;font-weight:bold;margin:26px 0 6px;color:#2f4b7c}
details.t>summary{font-size:14px;font-weight:normal;margin:8px 0 4px;color:#2f4b7c}
table.w td.n,table.w th.n,td.nm,td.nm code{white-space:nowrap;word-break:normal}
nav a{margin-right:12px}
";

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One colour per op for the whole page, so an op is the same colour in every plot: ops in
/// (layer, op) order over every trace on the page, each its own palette index.
#[derive(Debug, Clone, Default)]
pub struct OpColours(BTreeMap<Op, usize>);

impl OpColours {
    /// Colours for every op of these traces.
    pub fn new<'a>(traces: impl IntoIterator<Item = &'a TraceAnalysis>) -> OpColours {
        let mut ops: Vec<(Layer, Op)> = traces
            .into_iter()
            .flat_map(|a| a.summary.ops.keys().copied())
            .collect();
        ops.sort();
        ops.dedup();
        OpColours(
            ops.into_iter()
                .enumerate()
                .map(|(i, (_, o))| (o, plot::op_colour(i)))
                .collect(),
        )
    }

    /// The op's colour index (ops not on the page share the last index past them).
    pub fn of(&self, op: Op) -> usize {
        self.0
            .get(&op)
            .copied()
            .unwrap_or_else(|| plot::op_colour(self.0.len()))
    }

    /// Ops with a colour.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no op has a colour.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A table, collapsed into a `<details>` when it has more than [`LONG_TABLE`] rows.
fn table(what: &str, head: &str, rows: &[String]) -> String {
    let t = format!("<table class=\"w\">{head}{}</table>", rows.concat());
    if rows.len() > LONG_TABLE {
        format!(
            "<details class=\"t\"><summary>{} ({} rows)</summary>{t}</details>",
            esc(what),
            rows.len()
        )
    } else {
        t
    }
}

/// `12.3 MiB/s`; `-` without time.
fn rate(bytes: u64, ns: f64) -> String {
    if bytes == 0 || ns <= 0.0 {
        return "-".into();
    }
    format!("{}/s", short_bytes(bytes as f64 / (ns / 1e9)))
}

/// A layer's colour in the per-layer charts, fixed per layer so that a layer keeps its colour
/// from page to page whatever libraries a trace holds: the I/O layers every trace has in the
/// slate shades (MPI-IO darkest, POSIX light, stdio middle), the libraries above MPI-IO and MPI
/// communication in hues from the end of the range, away from the ops' colours and from each
/// other (NetCDF -> HDF5 -> MPI-IO bars sit side by side).
fn layer_colour(l: Layer) -> usize {
    let hue = |k: usize| plot::COLOURS - 1 - k;
    match l {
        Layer::MpiIo => plot::CATEGORY[3],
        Layer::Posix => plot::CATEGORY[1],
        Layer::Stdio => plot::CATEGORY[2],
        Layer::Mpi => hue(0),
        Layer::Hdf5 => hue(1),
        Layer::Netcdf => hue(2),
        Layer::Pnetcdf => hue(3),
    }
}

/// A call site's label in a chart: its op and file name; a second site of the same op and
/// file is "#2".
fn site_label(p: &rsd_view::stack::Part, seen: &mut BTreeMap<String, usize>) -> String {
    let mut l = p.op.name().to_string();
    if let Some(path) = &p.path {
        l.push(' ');
        l.push_str(&short_label(path));
    }
    let k = seen.entry(l.clone()).or_default();
    *k += 1;
    if *k > 1 {
        let _ = write!(l, " #{k}");
    }
    l
}

/// The page being written and what went into it.
pub struct Page {
    body: String,
    /// The colour of each op.
    pub colours: OpColours,
    /// Plots drawn.
    pub plots: Vec<Plot>,
    /// Plots left out because they had nothing to draw, with the reason.
    pub omitted: Vec<String>,
}

fn fmt_unit(u: Unit, v: f64) -> String {
    match u {
        Unit::Bytes => short_bytes(v),
        Unit::Nanos => fmt_ns(v),
        Unit::Count | Unit::Plain => {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{v:.0}")
            } else {
                format!("{v:.4}")
            }
        }
    }
}

/// `2nd`, `3rd`, `6th`, `11th`, `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The file name of a trace's path, for table cells.
/// The overview's nodes cell of a trace: node count and placement, every node with its
/// ranks in the cell's title; `-` where the trace has no node layout.
fn nodes_cell(h: &rsd::Header) -> String {
    let Some(l) = &h.node_layout else {
        return "<td>-</td>".into();
    };
    let per = l
        .ranks_per_node(h.nranks)
        .map_or(String::new(), |p| format!(", {p} per node"));
    format!(
        "<td title=\"{}\">{} {}{per}</td>",
        esc(&rsd_view::show::layout_line(l, h.nranks)),
        l.nodes,
        esc(l.kind())
    )
}

fn short_label(label: &str) -> String {
    std::path::Path::new(label)
        .file_name()
        .map_or_else(|| label.to_string(), |f| f.to_string_lossy().into_owned())
}

/// `2.0 MiB`, for axes (tables give exact bytes).
fn short_bytes(v: f64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = v;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

impl Page {
    /// An empty page with these op colours.
    pub fn new(colours: OpColours) -> Page {
        Page {
            body: String::new(),
            colours,
            plots: Vec::new(),
            omitted: Vec::new(),
        }
    }

    fn push(&mut self, s: &str) {
        self.body.push_str(s);
    }

    /// Adds a plot with its legend, or a note saying why it is left out. Drawing failures other
    /// than "no data" are errors.
    fn plot(&mut self, r: Result<Plot, ReportError>) -> Result<(), ReportError> {
        match r {
            Ok(p) => {
                let mut s = String::from("<div class=\"plot\">");
                s.push_str(&p.svg);
                if !p.legend.is_empty() {
                    s.push_str("<div class=\"legend\">");
                    for (name, c) in &p.legend {
                        let _ = write!(
                            s,
                            "<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>",
                            plot::hex(*c),
                            esc(name)
                        );
                    }
                    s.push_str("</div>");
                }
                s.push_str("</div>");
                self.push(&s);
                self.plots.push(p);
                Ok(())
            }
            Err(e @ ReportError::EmptyPlot { .. }) => {
                let msg = e.to_string();
                self.push(&format!(
                    "<p class=\"note\">Plot left out: {}.</p>",
                    esc(&msg)
                ));
                self.omitted.push(msg);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The whole document.
    pub fn finish(self, title: &str, nav: &[(String, String)]) -> String {
        let mut h = String::with_capacity(self.body.len() + 4096);
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
             <p class=\"note\">Written by iotrex {}, {}. \
             Self-contained: no scripts, no network resources.</p>\n<nav>",
            esc(title),
            esc(title),
            env!("CARGO_PKG_VERSION"),
            esc(&rsd::format::formats_text())
        );
        for (id, name) in nav {
            let _ = write!(h, "<a href=\"#{}\">{}</a>", esc(id), esc(name));
        }
        h.push_str("</nav>\n");
        h.push_str(&self.body);
        h.push_str("</body>\n</html>\n");
        h
    }

    /// What `iotrex sensitivity` found (the header's `sensitivity`), when it ran.
    fn sensitivity(&mut self, a: &TraceAnalysis) {
        let Some(sens) = &a.header.sensitivity else {
            return;
        };
        let mut s = String::from("<h3>I/O dependencies and sensitivity</h3><ul class=\"sens\">");
        for l in sens.lines() {
            let _ = write!(s, "<li>{}</li>", esc(&l));
        }
        s.push_str("</ul>");
        self.push(&s);
    }

    /// The replays' predictions of the run time (`iotrex report --replay`), each beside the
    /// time of the trace it replayed.
    pub fn replays(&mut self, replays: &[crate::Replayed]) {
        if replays.is_empty() {
            return;
        }
        let mut s = String::from(
            "<h2 id=\"replays\">Replays: the predicted run time</h2><table class=\"w\"><tr>\
             <th>replay report</th><th>mode</th><th class=\"n\">ranks</th><th>layout</th>\
             <th class=\"n\">trace's own time</th><th class=\"n\">predicted on the replay's \
             storage</th><th>interval</th><th class=\"n\">difference</th></tr>",
        );
        for r in replays {
            let own = match (r.traced_wall_ns, r.extrapolated) {
                (0, _) => "-".to_string(),
                (t, false) => fmt_ns(t as f64),
                (t, true) => format!("{} (predicted by the extrapolation)", fmt_ns(t as f64)),
            };
            let (point, interval) = match &r.prediction {
                Some(p) => (
                    fmt_ns(p.value_ns),
                    format!("[{}, {}]", fmt_ns(p.lo_ns), fmt_ns(p.hi_ns)),
                ),
                None => (
                    format!("{} (one wall time)", fmt_ns(r.wall_ns as f64)),
                    "-".into(),
                ),
            };
            let point_ns = r
                .prediction
                .as_ref()
                .map_or(r.wall_ns as f64, |p| p.value_ns);
            let diff = match r.traced_wall_ns {
                0 => "-".to_string(),
                t => format!("{:+.1}%", (point_ns - t as f64) / t as f64 * 100.0),
            };
            let _ = write!(
                s,
                "<tr><td class=\"nm\"><code>{}</code></td><td>{}</td><td class=\"n\">{}</td>\
                 <td>{}</td><td class=\"n\">{own}</td><td class=\"n\">{point}</td>\
                 <td>{interval}</td><td class=\"n\">{diff}</td></tr>",
                esc(&short_label(&r.label)),
                esc(&r.mode),
                r.ranks,
                esc(r.layout.as_deref().unwrap_or("-")),
            );
        }
        s.push_str("</table>");
        for r in replays.iter().filter(|r| !r.covers.is_empty()) {
            let _ = write!(
                s,
                "<p class=\"note\"><code>{}</code>'s interval: {}.</p>",
                esc(&short_label(&r.label)),
                esc(&r.covers)
            );
        }
        s.push_str(
            "<p class=\"note\">The trace's own time is its wall time on the storage it was \
             traced on, from the end of <code>MPI_Init</code>; the prediction is the replay's \
             on the storage it ran on, its start-up left out. The difference is the \
             prediction's against the trace's own time.</p>",
        );
        self.push(&s);
    }

    /// The overview: one row per trace (command, ranks, runtime, the share of it in I/O,
    /// bytes moved by the application), then each trace's I/O per layer with rates.
    pub fn overview(&mut self, traces: &[(&TraceAnalysis, &str)]) {
        let mut s = String::from("<h2 id=\"overview\">Overview</h2>");
        // One command for all (the usual case: one program at several scales) is said once.
        let command = |a: &TraceAnalysis| a.header.command.join(" ");
        let same = traces
            .windows(2)
            .all(|w| command(w[0].0) == command(w[1].0));
        if same && let Some((a, _)) = traces.first() {
            let _ = write!(s, "<p>Command: <code>{}</code></p>", esc(&command(a)));
        }
        let _ = write!(
            s,
            "<table class=\"w\"><tr><th>trace</th><th>role</th>{}<th class=\"n\">ranks</th>\
             <th>nodes</th><th class=\"n\">runtime</th><th class=\"n\">I/O time per rank</th>\
             <th class=\"n\">I/O share of runtime</th><th class=\"n\">read</th>\
             <th class=\"n\">written</th><th>flags</th></tr>",
            if same { "" } else { "<th>command</th>" }
        );
        for (a, role) in traces {
            let n = f64::from(a.header.nranks.max(1));
            let app: Vec<&LayerIo> = a.layers.iter().filter(|l| !l.nested && l.is_io()).collect();
            let io_ns = app.iter().map(|l| l.time_ns).sum::<f64>() / n;
            let (read, written) = app
                .iter()
                .fold((0, 0), |(r, w), l| (r + l.read, w + l.written));
            let wall = a.header.wall_ns as f64;
            let _ = write!(
                s,
                "<tr><td class=\"nm\"><code>{}</code></td><td>{}</td>{}<td class=\"n\">{}</td>\
                 {}<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\" title=\"{read} bytes\">{}</td><td class=\"n\" title=\"{written} bytes\">{}</td><td>{}</td></tr>",
                esc(&short_label(&a.label)),
                esc(role),
                if same {
                    String::new()
                } else {
                    format!("<td><code>{}</code></td>", esc(&command(a)))
                },
                a.header.nranks,
                nodes_cell(&a.header),
                if wall > 0.0 { fmt_ns(wall) } else { "-".into() },
                fmt_ns(io_ns),
                if wall > 0.0 {
                    format!("{:.1}%", 100.0 * io_ns / wall)
                } else {
                    "-".into()
                },
                short_bytes(read as f64),
                short_bytes(written as f64),
                if a.header.incomplete {
                    "<span class=\"warn\">incomplete</span>"
                } else {
                    ""
                }
            );
        }
        s.push_str(
            "</table><p class=\"note\">Runtime is the job's wall time as traced (predicted, for an \
             extrapolated trace). Nodes are where the ranks ran (by slot: each node filled \
             before the next; by node: ranks dealt over the nodes in turn), as the tracer saw \
             them at <code>MPI_Init</code>; \"-\" where the trace does not say. I/O time per rank is the mean over ranks of the time in the \
             application's own file I/O calls (MPI-IO, POSIX, stdio; not MPI communication); \
             bytes are those the application's calls moved, each byte once (the POSIX calls the \
             MPI library made inside an MPI-IO call are not added again).</p>",
        );
        s.push_str("<h3>I/O per layer</h3>");
        let head = "<tr><th>trace</th><th>layer</th><th class=\"n\">calls</th><th class=\"n\">read</th>\
                    <th class=\"n\">written</th><th class=\"n\">time per rank (mean)</th>\
                    <th class=\"n\">share of runtime</th><th class=\"n\">read rate</th>\
                    <th class=\"n\">write rate</th></tr>";
        let mut rows = Vec::new();
        for (a, _) in traces {
            let n = f64::from(a.header.nranks.max(1));
            let wall = a.header.wall_ns as f64;
            // File I/O only: MPI communication is not I/O (and MPI_Init's start-up would
            // dwarf it).
            for l in a.layers.iter().filter(|l| l.is_io()) {
                rows.push(format!(
                    "<tr><td class=\"nm\"><code>{}</code></td><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    esc(&short_label(&a.label)),
                    l.layer.name(),
                    if l.nested {
                        " <span class=\"note\">inside MPI-IO calls (the library's)</span>"
                    } else {
                        ""
                    },
                    l.calls,
                    short_bytes(l.read as f64),
                    short_bytes(l.written as f64),
                    fmt_ns(l.time_ns / n),
                    if wall > 0.0 {
                        format!("{:.1}%", 100.0 * l.time_ns / n / wall)
                    } else {
                        "-".into()
                    },
                    rate(l.read, l.read_ns / n),
                    rate(l.written, l.write_ns / n),
                ));
            }
        }
        s.push_str(&table("I/O per layer of every trace", head, &rows));
        s.push_str(
            "<p class=\"note\">Rates are the bytes of all ranks over the mean time per rank in the \
             reading or writing calls: the aggregate rate when ranks do their I/O at the same time. \
             Rows \"inside MPI-IO calls\" are the POSIX calls the MPI library made for the \
             application's MPI-IO calls: their bytes and time are part of the MPI-IO row's.</p>",
        );
        self.push(&s);
    }

    /// One trace's section.
    pub fn trace(
        &mut self,
        id: &str,
        a: &TraceAnalysis,
        open: bool,
        limits: &Limits,
    ) -> Result<(), ReportError> {
        let _ = write!(
            self.body,
            "<details id=\"{}\"{}><summary>{} — {} ranks</summary>",
            esc(id),
            if open { " open" } else { "" },
            esc(&a.label),
            a.header.nranks
        );
        if a.header.incomplete || !a.header.notes.is_empty() {
            let mut s = String::new();
            if a.header.incomplete {
                s.push_str("<p class=\"warn\">This trace is flagged incomplete.</p>");
            }
            for n in &a.header.notes {
                let _ = write!(
                    s,
                    "<p class=\"note\">Note from the producer: {}</p>",
                    esc(n)
                );
            }
            self.push(&s);
        }
        self.sensitivity(a);
        self.ops_table(a)?;
        self.files(a, limits);
        self.per_rank(a)?;
        self.stack(a, limits)?;
        self.layer_times(a, limits)?;
        self.timeline(a, limits)?;
        self.mpi_config(a);
        self.push("</details>");
        Ok(())
    }

    /// The MPI library's I/O configuration the tracer recorded (what its collective
    /// buffering depends on): library, node layout, the io and fcoll components, the
    /// collective-I/O control variables and each file's hints. Nothing for traces without one.
    fn mpi_config(&mut self, a: &TraceAnalysis) {
        let Some(c) = &a.header.mpi_config else {
            return;
        };
        let mut s = String::from("<h3>MPI library configuration</h3><table>");
        let layout: Vec<String> = c
            .node_ranks
            .iter()
            .map(|(r, n)| format!("{r} on {n} node{}", if *n == 1 { "" } else { "s" }))
            .collect();
        // An empty selection: the user chose none, the library picks by priority.
        let component = |name: &str| match c.cvar(name).map(str::trim) {
            None => "not recorded".to_string(),
            Some("") => "not set (chosen by the library by priority)".to_string(),
            Some(v) => format!("<code>{}</code>", esc(v)),
        };
        let _ = write!(
            s,
            "<tr><th>library</th><td>{}</td></tr><tr><th>nodes</th><td class=\"n\">{}</td></tr>\
             <tr><th>ranks per node</th><td>{}{}</td></tr>\
             <tr><th>io component</th><td>{}</td></tr><tr><th>fcoll component</th><td>{}</td></tr>\
             </table>",
            esc(&c.library),
            c.nodes(),
            esc(&layout.join(", ")),
            if c.nodes_contiguous {
                ""
            } else {
                " (ranks not consecutive on nodes)"
            },
            component("io"),
            component("fcoll")
        );
        if !c.cvars.is_empty() {
            s.push_str(
                "<details class=\"t\"><summary>Collective-I/O control variables (MPI_T)</summary>\
                 <table><tr><th>variable</th><th>value</th></tr>",
            );
            for (k, v) in &c.cvars {
                let _ = write!(
                    s,
                    "<tr><td><code>{}</code></td><td><code>{}</code></td></tr>",
                    esc(k),
                    esc(v)
                );
            }
            s.push_str("</table></details>");
        }
        if c.file_hints.is_empty() {
            s.push_str("<p class=\"note\">No file was opened with MPI-IO on rank 0.</p>");
        } else {
            s.push_str("<table><tr><th>file (MPI-IO)</th><th>hints</th></tr>");
            for (path, hints) in &c.file_hints {
                let kv: Vec<String> = hints
                    .iter()
                    .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
                    .collect();
                let _ = write!(
                    s,
                    "<tr><td><code>{}</code></td><td>{}</td></tr>",
                    esc(path),
                    if kv.is_empty() {
                        "none".to_string()
                    } else {
                        kv.join(" ")
                    }
                );
            }
            s.push_str(
                "</table><p class=\"note\">Hints as the library reported them \
                 (MPI_File_get_info), with those the program passed to MPI_File_open and \
                 MPI_File_set_view that it did not report.</p>",
            );
        }
        self.push(&s);
    }

    fn ops_table(&mut self, a: &TraceAnalysis) -> Result<(), ReportError> {
        self.push("<h3>Operations</h3>");
        let n = f64::from(a.header.nranks.max(1));
        // Each op its own colour, the same in every plot of the page; rows in (layer, op) order.
        let mut calls = Vec::new();
        let mut time = Vec::new();
        let mut parts: Vec<(String, usize)> = Vec::new();
        for (&(layer, op), t) in &a.summary.ops {
            let name = format!("{} ({})", op.name(), layer.name());
            let c = self.colours.of(op);
            calls.push((name.clone(), vec![t.count as f64], c));
            time.push((name.clone(), vec![t.time_ns / n], c));
            parts.push((name, c));
        }
        self.push("<div class=\"grid\">");
        self.plot(plot::op_bars(
            "Calls per operation (all ranks)",
            &a.label,
            "calls",
            Unit::Count,
            &calls,
        ))?;
        self.plot(plot::op_bars(
            "Time per rank per operation (mean)",
            &a.label,
            "time per rank",
            Unit::Nanos,
            &time,
        ))?;
        self.push("</div>");
        let head = "<tr><th>layer</th><th>operation</th><th class=\"n\">calls</th><th class=\"n\">bytes</th>\
                    <th class=\"n\">time per rank (mean)</th><th class=\"n\">mean per call</th></tr>";
        let mut rows = Vec::new();
        for (&(layer, op), t) in &a.summary.ops {
            rows.push(format!(
                "<tr><td>{}</td><td><i class=\"sw\" style=\"background:{}\"></i><code>{}</code></td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                layer.name(),
                plot::hex(self.colours.of(op)),
                op.name(),
                t.count,
                esc(&fmt_bytes(t.bytes)),
                fmt_ns(t.time_ns / n),
                if t.count > 0 {
                    fmt_ns(t.time_ns / t.count as f64)
                } else {
                    "-".into()
                }
            ));
        }
        let mut s = table("Every operation: calls, bytes and time", head, &rows);
        let _ = write!(
            s,
            "<p class=\"note\">Each layer's view: the POSIX calls the MPI library made inside \
             MPI-IO calls are counted under POSIX too (the overview counts each byte once). \
             Per rank (calls the application made itself): calls {} (rank {}) … {} \
             (rank {}), mean {:.1}; bytes {} (rank {}) … {} (rank {}), mean {}.</p>",
            a.summary.rank_calls.min.0,
            a.summary.rank_calls.min.1,
            a.summary.rank_calls.max.0,
            a.summary.rank_calls.max.1,
            a.summary.rank_calls.mean,
            esc(&fmt_bytes(a.summary.rank_bytes.min.0)),
            a.summary.rank_bytes.min.1,
            esc(&fmt_bytes(a.summary.rank_bytes.max.0)),
            a.summary.rank_bytes.max.1,
            short_bytes(a.summary.rank_bytes.mean)
        );
        self.push(&s);
        Ok(())
    }

    fn per_rank(&mut self, a: &TraceAnalysis) -> Result<(), ReportError> {
        self.push("<h3>Per-rank I/O volume and time</h3>");
        let pr = &a.per_rank;
        if pr.stride > 1 {
            self.push(&format!(
                "<p class=\"note\">Capped: {} of {} ranks shown (every {} rank and the last).</p>",
                pr.rows.len(),
                pr.total,
                ordinal(pr.stride)
            ));
        }
        let ranks: Vec<u32> = pr.rows.iter().map(|r| r.rank).collect();
        let col = |f: &dyn Fn(&crate::analysis::RankIo) -> f64| -> Vec<f64> {
            pr.rows.iter().map(f).collect()
        };
        let input = a.label.as_str();
        self.plot(plot::rank_bars(
            "File bytes per rank",
            input,
            "bytes",
            Unit::Bytes,
            &ranks,
            &[
                ("written", plot::CATEGORY[0], col(&|r| r.written as f64)),
                ("read", plot::CATEGORY[1], col(&|r| r.read as f64)),
            ],
        ))?;
        // MPI time (MPI_Init above all) would dwarf the I/O, so only the I/O layers are drawn.
        let layers: Vec<(&str, usize, Vec<f64>)> = Layer::STACK
            .iter()
            .enumerate()
            .filter(|(_, l)| **l != Layer::Mpi)
            .map(|(i, l)| (l.name(), layer_colour(*l), col(&|r| r.layer_ns[i])))
            .collect();
        self.plot(plot::rank_bars(
            "Time in I/O calls per rank (application-level calls, by layer)",
            input,
            "time",
            Unit::Nanos,
            &ranks,
            &layers,
        ))?;
        self.push(
            "<p class=\"note\">Bytes are exact. A rank's time is the sum of the mean durations \
             (over all ranks) of the calls it makes: a trace keeps timing as statistics, so this \
             shows how calls are spread over ranks, not one rank's measured time.</p>",
        );
        Ok(())
    }

    fn stack(&mut self, a: &TraceAnalysis, limits: &Limits) -> Result<(), ReportError> {
        self.push("<h3>I/O stack: MPI-IO calls and the POSIX calls inside them</h3>");
        if a.stack.is_empty() {
            self.push("<p class=\"note\">No MPI-IO calls in this trace.</p>");
            return Ok(());
        }
        // Means per rank: a sum over ranks grows with the rank count whatever each rank waits.
        let n = f64::from(a.header.nranks.max(1));
        let mut by_op: BTreeMap<Op, (f64, f64)> = BTreeMap::new();
        for r in &a.stack {
            let e = by_op.entry(r.op).or_default();
            e.0 += r.mpiio_only_ns() / n;
            e.1 += r.posix_ns / n;
        }
        let rows: Vec<(String, Vec<f64>)> = by_op
            .iter()
            .map(|(op, (m, p))| (op.name().to_string(), vec![*m, *p]))
            .collect();
        self.plot(plot::hbars(
            "Time per rank in MPI-IO calls (mean over ranks)",
            &a.label,
            "time per rank",
            Unit::Nanos,
            &rows,
            &[
                ("in the MPI-IO layer", plot::CATEGORY[0]),
                ("in nested POSIX calls", plot::CATEGORY[1]),
            ],
        ))?;
        // Call sites by their op and file; a second site of the same op and file is "#2".
        let mut seen: BTreeMap<(Op, Option<&str>), usize> = BTreeMap::new();
        let head = "<tr><th>call</th><th>path</th><th class=\"n\">ranks</th><th class=\"n\">calls</th>\
                    <th class=\"n\">time per rank (mean)</th><th class=\"n\">MPI-IO layer</th>\
                    <th class=\"n\">nested POSIX</th><th class=\"n\">POSIX calls</th>\
                    <th class=\"n\">aggregators</th></tr>";
        let mut rows = Vec::new();
        for r in a.stack.iter().take(limits.stack_rows) {
            let k = seen.entry((r.op, r.path.as_deref())).or_default();
            *k += 1;
            let site = if *k > 1 {
                format!(" <span class=\"note\">#{k}</span>")
            } else {
                String::new()
            };
            let share = if r.total_ns > 0.0 {
                format!(" ({:.0}%)", 100.0 * r.posix_ns / r.total_ns)
            } else {
                String::new()
            };
            rows.push(format!(
                "<tr><td><code>{}</code>{site}</td><td>{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}{share}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                r.op.name(),
                r.path
                    .as_deref()
                    .map_or(String::new(), |p| format!("<code>{}</code>", esc(p))),
                r.ranks,
                r.calls,
                fmt_ns(r.total_ns / n),
                fmt_ns(r.mpiio_only_ns() / n),
                fmt_ns(r.posix_ns / n),
                r.posix_calls,
                if r.collective {
                    format!("{} of {}", r.ranks_with_children, r.ranks)
                } else {
                    "-".into()
                }
            ));
        }
        let mut s = table("Every MPI-IO call site", head, &rows);
        if a.stack.len() > limits.stack_rows {
            let _ = write!(
                s,
                "<p class=\"note\">Capped: {} of {} MPI-IO call sites listed.</p>",
                limits.stack_rows,
                a.stack.len()
            );
        }
        s.push_str(
            "<p class=\"note\">Aggregators: for a collective call, the ranks that issued POSIX \
             calls inside it (the ranks that touched the file system). MPI-IO layer time is the \
             call's time minus its nested POSIX time. Times are sums over ranks divided by the \
             rank count.</p>",
        );
        self.push(&s);
        Ok(())
    }

    /// Inclusive and exclusive time per layer, then each application-level call site's time
    /// split over the layers below it: two charts, a table per layer, the largest call sites as
    /// equations over their nested calls.
    fn layer_times(&mut self, a: &TraceAnalysis, limits: &Limits) -> Result<(), ReportError> {
        let st = &a.layer_times;
        self.push("<h3>Time per layer: inclusive and exclusive</h3>");
        if st.layers.is_empty() {
            self.push("<p class=\"note\">No calls in this trace.</p>");
            return Ok(());
        }
        // Means per rank, as elsewhere on the page.
        let n = f64::from(a.header.nranks.max(1));
        // MPI communication (MPI_Init above all) would dwarf the I/O layers in the chart; it
        // is in the table.
        let io = |l: Layer| l != Layer::Mpi;
        let rows: Vec<(String, Vec<f64>)> = st
            .layers
            .iter()
            .filter(|l| io(l.layer))
            .map(|l| {
                // The time in the label: a layer far below another is too thin a bar to see.
                (
                    format!("{} {}", l.layer.name(), fmt_ns(l.t.inclusive_ns / n)),
                    vec![l.t.exclusive_ns / n, l.t.nested_ns().max(0.0) / n],
                )
            })
            .collect();
        self.plot(plot::hbars(
            "Time per I/O layer (mean per rank): exclusive, then nested below",
            &a.label,
            "time per rank",
            Unit::Nanos,
            &rows,
            &[
                ("exclusive: in the layer itself", plot::CATEGORY[0]),
                ("in calls nested below it", plot::CATEGORY[1]),
            ],
        ))?;
        let shown: Vec<&rsd_view::stack::Part> = st.sites.iter().take(limits.stack_sites).collect();
        if !shown.is_empty() {
            let layers: Vec<Layer> = Layer::STACK
                .iter()
                .copied()
                .filter(|l| shown.iter().any(|s| s.by_layer().iter().any(|x| x.0 == *l)))
                .collect();
            let mut seen: BTreeMap<String, usize> = BTreeMap::new();
            let rows: Vec<(String, Vec<f64>)> = shown
                .iter()
                .map(|s| {
                    let by = s.by_layer();
                    // The shares of the layers below in the label, for the same reason.
                    let below: Vec<String> = by
                        .iter()
                        .filter(|x| x.0 != s.layer && s.t.inclusive_ns > 0.0)
                        .map(|x| {
                            let p = 100.0 * x.1 / s.t.inclusive_ns;
                            let p = if p < 0.1 {
                                "<0.1".into()
                            } else {
                                format!("{p:.1}")
                            };
                            format!("{} {p}%", x.0.name())
                        })
                        .collect();
                    let mut label = site_label(s, &mut seen);
                    if !below.is_empty() {
                        let _ = write!(label, " ({})", below.join(", "));
                    }
                    (
                        label,
                        layers
                            .iter()
                            .map(|l| by.iter().find(|x| x.0 == *l).map_or(0.0, |x| x.1 / n))
                            .collect(),
                    )
                })
                .collect();
            let parts: Vec<(&str, usize)> = layers
                .iter()
                .map(|l| (l.name(), layer_colour(*l)))
                .collect();
            self.plot(plot::hbars(
                "Application-level calls: time by layer (mean per rank)",
                &a.label,
                "time per rank",
                Unit::Nanos,
                &rows,
                &parts,
            ))?;
        }
        let head = "<tr><th>layer</th><th class=\"n\">calls</th><th class=\"n\">nested calls</th>\
                    <th class=\"n\">bytes</th><th class=\"n\">inclusive per rank</th>\
                    <th class=\"n\">exclusive per rank</th><th class=\"n\">share</th>\
                    <th class=\"n\">throughput</th></tr>";
        let share = |x: f64| {
            if st.total_ns > 0.0 {
                format!("{:.1}%", 100.0 * x / st.total_ns)
            } else {
                "-".into()
            }
        };
        let rows: Vec<String> = st
            .layers
            .iter()
            .map(|l| {
                format!(
                    "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    l.layer.name(),
                    l.t.calls,
                    l.nested_calls,
                    fmt_bytes(l.t.bytes),
                    fmt_ns(l.t.inclusive_ns / n),
                    fmt_ns(l.t.exclusive_ns / n),
                    share(l.t.exclusive_ns),
                    rate(l.t.bytes, l.t.inclusive_ns)
                )
            })
            .collect();
        let mut s = table("Every layer", head, &rows);
        let head = "<tr><th>layer</th><th>op</th><th class=\"n\">calls</th>\
                    <th class=\"n\">bytes</th><th class=\"n\">inclusive per rank</th>\
                    <th class=\"n\">exclusive per rank</th><th class=\"n\">throughput</th></tr>";
        let rows: Vec<String> = st
            .ops
            .iter()
            .map(|o| {
                format!(
                    "<tr><td>{}</td><td><i class=\"sw\" style=\"background:{}\"></i><code>{}</code>{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    o.layer.name(),
                    plot::hex(self.colours.of(o.op)),
                    o.op.name(),
                    if o.nested { " <span class=\"note\">nested</span>" } else { "" },
                    o.t.calls,
                    fmt_bytes(o.t.bytes),
                    fmt_ns(o.t.inclusive_ns / n),
                    fmt_ns(o.t.exclusive_ns / n),
                    rate(o.t.bytes, o.t.inclusive_ns)
                )
            })
            .collect();
        s.push_str(&table("Every op, by layer", head, &rows));
        if !st.sites.is_empty() {
            s.push_str(
                "<p class=\"note\">Where the time of each application-level call goes \
                        (mean per rank; \"on k of n ranks\": only those ranks made the nested \
                        calls, for a collective its aggregators):</p><ul>",
            );
            for p in st.sites.iter().take(limits.stack_rows) {
                let _ = write!(
                    s,
                    "<li><code>{}</code></li>",
                    esc(&rsd_view::stack::equation(p, n))
                );
            }
            s.push_str("</ul>");
            if st.sites.len() > limits.stack_rows {
                let _ = write!(
                    s,
                    "<p class=\"note\">Capped: {} of {} call sites listed.</p>",
                    limits.stack_rows,
                    st.sites.len()
                );
            }
        }
        s.push_str(
            "<p class=\"note\">Inclusive: time inside the calls, nested calls included. \
             Exclusive: inclusive minus the calls nested directly inside (the time in the layer \
             itself); the exclusive times of all layers add up to the application-level calls' \
             time. Throughput: bytes per second of inclusive time, the rate seen inside the \
             calls of one rank.</p>",
        );
        if st.modelled {
            s.push_str(
                "<p class=\"note\">Times are modelled: this is an extrapolated trace, whose \
                 timing is predicted by fitted models (nested calls derived from the MPI \
                 library's model carry the inputs' mean per op), not measured.</p>",
            );
        }
        for note in &st.notes {
            let _ = write!(
                s,
                "<p class=\"note\">Nested time over the call's own: {}</p>",
                esc(note)
            );
        }
        self.push(&s);
        Ok(())
    }

    fn files(&mut self, a: &TraceAnalysis, limits: &Limits) {
        let mut s = format!(
            "<h3>Files</h3><p class=\"note\">{} files in {} name patterns.</p>",
            a.summary.files.len(),
            a.files.len()
        );
        let head = "<tr><th>name or pattern</th><th class=\"n\">files</th>\
                    <th class=\"n\">ranks</th><th class=\"n\">read</th><th class=\"n\">written</th>\
                    <th class=\"n\">I/O calls</th><th>range</th></tr>";
        // Most bytes first: the files a reader looks for.
        let mut groups: Vec<_> = a.files.iter().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.read + g.written));
        let rows: Vec<String> = groups
            .iter()
            .take(limits.file_groups)
            .map(|g| {
                let range = if g.files > 1 {
                    format!(
                        "<code>{}</code> … <code>{}</code>",
                        esc(&g.first),
                        esc(&g.last)
                    )
                } else {
                    String::new()
                };
                format!(
                    "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{range}</td></tr>",
                    esc(&g.template),
                    g.files,
                    g.ranks,
                    esc(&fmt_bytes(g.read)),
                    esc(&fmt_bytes(g.written)),
                    g.accesses
                )
            })
            .collect();
        s.push_str(&table("Every file pattern", head, &rows));
        if a.files.len() > limits.file_groups {
            let _ = write!(
                s,
                "<p class=\"note\">Capped: {} of {} patterns listed (<code>iotrex stats --json</code> \
                 lists every file).</p>",
                limits.file_groups,
                a.files.len()
            );
        }
        let mut note = String::from(
            "Bytes and calls of the application's own calls, each resolved to its file through \
             the rank's open descriptors, streams and MPI file handles; ranks: the most ranks \
             that touched any one file of the pattern.",
        );
        if a.file_ranks < a.header.nranks.into() {
            let _ = write!(
                note,
                " Counted over {} evenly spaced ranks of {}.",
                a.file_ranks, a.header.nranks
            );
        }
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(&note));
        self.push(&s);
    }

    fn timeline(&mut self, a: &TraceAnalysis, limits: &Limits) -> Result<(), ReportError> {
        self.push("<h3>Timeline</h3>");
        // The page's colour of each op; the legend lists the ops drawn, in order of appearance.
        let mut colors: Vec<Op> = Vec::new();
        let mut lanes = Vec::new();
        for l in &a.timeline {
            let marks = l
                .spans
                .iter()
                .map(|s| {
                    if !colors.contains(&s.op) {
                        colors.push(s.op);
                    }
                    (s.start, s.dur, s.nested, self.colours.of(s.op))
                })
                .collect();
            lanes.push((format!("rank {}", l.rank), marks));
        }
        let legend = colors
            .iter()
            .map(|o| {
                (
                    format!("{} ({})", o.name(), o.layer().name()),
                    self.colours.of(*o),
                )
            })
            .collect();
        self.plot(plot::timeline(
            "Calls of a few ranks",
            &a.label,
            &lanes,
            legend,
        ))?;
        let mut notes = vec![format!(
            "{} of {} ranks shown (first, last, most and fewest bytes, then evenly spaced; at most {}). \
             Each call starts its mean gap after the previous one ends and lasts its mean duration. \
             POSIX calls nested in an MPI-IO call fill the lower half of the lane inside their parent.",
            a.timeline.len(),
            a.header.nranks,
            limits.timeline_ranks
        )];

        if let Some(init) = a.timeline.iter().find_map(|l| l.init_ns) {
            notes.push(format!(
                "MPI_Init ({} mean) is left out: time 0 is when it returned.",
                fmt_ns(init)
            ));
        }
        let cut: Vec<String> = a
            .timeline
            .iter()
            .filter(|l| l.truncated)
            .map(|l| l.rank.to_string())
            .collect();
        if !cut.is_empty() {
            notes.push(format!(
                "Capped at {} calls per rank: ranks {} continue beyond the plot.",
                limits.timeline_spans,
                cut.join(", ")
            ));
        }
        for n in notes {
            self.push(&format!("<p class=\"note\">{}</p>", esc(&n)));
        }
        Ok(())
    }

    /// The extrapolation section.
    pub fn extrapolation(&mut self, x: &Extrapolation) -> Result<(), ReportError> {
        let _ = write!(
            self.body,
            "<h2 id=\"extrap\">Extrapolation to {} ranks</h2><p class=\"note\">Inputs at {} ranks; \
             extrapolated trace <code>{}</code>. Model source: {}.</p>",
            x.target,
            x.scales
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            esc(&x.out),
            esc(&x.source)
        );
        if let Some(why) = &x.missing {
            self.push(&format!(
                "<p class=\"warn\">No parameter models: {}.</p>",
                esc(why)
            ));
        }
        // Plots: every varying parameter, the top timing quantities by value at the largest
        // scale, then varying totals, up to the cap.
        let last = |q: &Quantity| q.points.last().map_or(0.0, |p| p.1);
        // One plot per quantity: an op whose call time the model source plots (with its model)
        // is not plotted again as a measured time per rank without one.
        let modelled: Vec<Op> = x
            .quantities
            .iter()
            .filter(|q| q.kind == Kind::Timing && q.model.is_some())
            .filter_map(|q| q.op)
            .collect();
        let mut timing: Vec<&Quantity> = x
            .quantities
            .iter()
            .filter(|q| q.kind == Kind::Timing && q.varies())
            .filter(|q| q.model.is_some() || !q.op.is_some_and(|o| modelled.contains(&o)))
            .collect();
        timing.sort_by(|a, b| last(b).total_cmp(&last(a)));
        let mut chosen: Vec<&Quantity> = x
            .quantities
            .iter()
            .filter(|q| q.kind == Kind::Parameter && q.varies())
            .collect();
        chosen.extend(timing.iter().take(TOP_TIMING));
        chosen.extend(
            x.quantities
                .iter()
                .filter(|q| q.kind == Kind::Total && q.varies()),
        );
        let n_want = chosen.len();
        chosen.truncate(MAX_SCALING_PLOTS);
        self.push("<h3>Values at the input scales, with the model extended to the target</h3><div class=\"grid\">");
        for q in &chosen {
            let pts: Vec<(f64, f64)> = q.points.iter().map(|p| (p.0 as f64, p.1)).collect();
            let curve = q.model.as_ref().map(|m| Curve {
                formula: &m.formula,
                eval: &*m.eval,
            });
            // The axis says what is measured: the parameter's name, or the unit's.
            let what = q.name.rsplit(": ").next().unwrap_or(&q.name);
            let y_desc = match q.unit {
                Unit::Bytes => format!("{what} (bytes)"),
                Unit::Nanos if q.kind == Kind::Timing && q.name.starts_with("wall time") => {
                    "wall time".into()
                }
                Unit::Nanos => "time".into(),
                Unit::Count => "calls, all ranks".into(),
                Unit::Plain => what.to_string(),
            };
            self.plot(plot::scaling(
                &q.name,
                &x.out,
                &y_desc,
                q.unit,
                &pts,
                curve.as_ref(),
                Some((x.target as f64, q.target)),
                q.op.map_or(plot::CATEGORY[2], |o| self.colours.of(o)),
            ))?;
        }
        self.push("</div>");
        if n_want > chosen.len() {
            self.push(&format!(
                "<p class=\"note\">Capped: {} of {} plots drawn; the table lists every quantity.</p>",
                chosen.len(),
                n_want
            ));
        }
        let mut s = String::from(
            "<h3>Every parameter and its model (the extrapolation's explanation)</h3>",
        );
        match &x.explain {
            Ok(rows) if rows.is_empty() => {
                s.push_str("<p class=\"note\">Nothing varies with the rank count.</p>")
            }
            Ok(rows) => {
                let rows: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        format!(
                            "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>",
                            esc(&r.event),
                            esc(&r.quantity),
                            esc(&r.model)
                        )
                    })
                    .collect();
                s.push_str(&table(
                    "Every parameter and timing statistic with its model",
                    "<tr><th>event</th><th>parameter</th><th>model</th></tr>",
                    &rows,
                ));
                s.push_str(
                    "<p class=\"note\">As <code>iotrex extrap --explain</code> prints them: \
                     timing models are in ns, <code>n</code> is the rank count.</p>",
                );
            }
            Err(why) => {
                let _ = write!(s, "<p class=\"warn\">No explanation: {}.</p>", esc(why));
            }
        }
        s.push_str("<h3>Measured totals at each scale</h3>");
        let mut head = String::from("<tr><th>quantity</th><th>kind</th>");
        for sc in &x.scales {
            let _ = write!(head, "<th class=\"n\">{sc} ranks</th>");
        }
        let _ = write!(
            head,
            "<th>model</th><th class=\"n\">model at {0}</th><th class=\"n\">in the trace at {0}</th></tr>",
            x.target
        );
        let mut rows = Vec::new();
        for q in &x.quantities {
            let mut r = format!(
                "<tr><td>{}</td><td>{}</td>",
                esc(&q.name),
                match q.kind {
                    Kind::Parameter => "parameter",
                    Kind::Timing => "timing",
                    Kind::Total => "total",
                }
            );
            for sc in &x.scales {
                let v = q
                    .points
                    .iter()
                    .find(|p| p.0 == *sc)
                    .map(|p| fmt_unit(q.unit, p.1));
                let _ = write!(
                    r,
                    "<td class=\"n\">{}</td>",
                    v.unwrap_or_else(|| "-".into())
                );
            }
            let (formula, at) = match &q.model {
                Some(m) => (
                    format!("<code>{}</code>", esc(&m.formula)),
                    (m.eval)(x.target as f64).map_or("-".into(), |v| fmt_unit(q.unit, v)),
                ),
                None => (
                    if q.varies() {
                        "none available"
                    } else {
                        "constant"
                    }
                    .to_string(),
                    "-".into(),
                ),
            };
            let _ = write!(
                r,
                "<td>{formula}</td><td class=\"n\">{at}</td><td class=\"n\">{}</td></tr>",
                q.target.map_or("-".into(), |v| fmt_unit(q.unit, v))
            );
            rows.push(r);
        }
        s.push_str(&table("Every quantity at each scale", &head, &rows));
        self.push(&s);
        Ok(())
    }
}

impl Default for Page {
    fn default() -> Self {
        Page::new(OpColours::default())
    }
}
