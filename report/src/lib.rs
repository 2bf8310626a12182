//! `iotrex report`: one self-contained HTML page about a set of traces and, optionally, the
//! extrapolation made from them.
//!
//! The page has, per trace, the calls and bytes per layer and op, per-rank I/O volume and time,
//! the files touched (grouped by path template), the I/O-stack breakdown (MPI-IO layer time
//! against the POSIX calls nested in it, and the aggregator ranks of each collective call) and
//! a timeline of a few ranks; and, for an extrapolation, each quantity's values at the input
//! scales with the chosen model drawn through them to the target. Plots are inline SVG drawn
//! with plotters; the CSS is inline; nothing is loaded from the network, so the file can be
//! mailed or archived as is.
//!
//! Plots with no data are left out with a note rather than drawn empty ([`Report::omitted`]).
//! Models come from a [`ModelSource`]; the report never fits one itself.
//!
//! ```no_run
//! let inputs = report::read_inputs(&["app.8.iotrex".into()])?;
//! let r = report::render(&inputs, None, &report::NoModels, &report::Limits::default(), &mut |_| {})?;
//! std::fs::write("report.html", &r.html).unwrap();
//! # Ok::<(), report::ReportError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
pub mod axis;
pub mod error;
pub mod extrap;
pub mod html;
pub mod plot;

pub use analysis::{Limits, TraceAnalysis, analyze};
pub use error::ReportError;
pub use extrap::{
    ExplainRow, ExtrapModels, Extrapolation, Kind, Model, ModelSource, NoModels, Quantity, Unit,
};

use rsd::TraceFile;
use std::path::{Path, PathBuf};

/// A trace and the name the page gives it (the path as the user wrote it).
#[derive(Debug, Clone)]
pub struct Input {
    /// The name shown on the page.
    pub label: String,
    /// The trace.
    pub file: TraceFile,
}

/// Reads every path as a trace; the error names the file at fault.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, ReportError> {
    paths
        .iter()
        .map(|p| {
            Ok(Input {
                label: p.display().to_string(),
                file: TraceFile::read(p)?,
            })
        })
        .collect()
}

/// Where rendering is: `done` of `total` steps, and what the next step is.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// Steps finished.
    pub done: u64,
    /// Steps in all.
    pub total: u64,
    /// What is being done now.
    pub what: &'a str,
}

/// A rendered report.
#[derive(Debug, Clone)]
pub struct Report {
    /// The HTML document.
    pub html: String,
    /// Plots on the page.
    pub plots: usize,
    /// Data marks over all plots (bars, spans, points, curves).
    pub marks: usize,
    /// Plots left out because they had nothing to draw, with the reason.
    pub omitted: Vec<String>,
}

/// A replay's prediction of the application's run time (`iotrex-replay --json-out`), shown
/// beside the trace's own time. The CLI reads it from the replay's report
/// (`replay::report::ReportHead`); this crate only shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replayed {
    /// The name shown (the replay report's path).
    pub label: String,
    /// `mpi` or `threads`.
    pub mode: String,
    /// Ranks replayed.
    pub ranks: u32,
    /// Where the ranks ran against the trace's layout, as the replay said it.
    pub layout: Option<String>,
    /// The wall time of the replay the report is of, ns.
    pub wall_ns: u64,
    /// The trace's own wall time, ns (0 when it does not say).
    pub traced_wall_ns: u64,
    /// Whether that time was predicted by an extrapolation rather than traced.
    pub extrapolated: bool,
    /// The prediction, when the replay made one.
    pub prediction: Option<ReplayPrediction>,
    /// What its interval covers, in words.
    pub covers: String,
}

/// A predicted run time and its interval, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayPrediction {
    /// The prediction.
    pub value_ns: f64,
    /// The interval's lower end.
    pub lo_ns: f64,
    /// Its upper end.
    pub hi_ns: f64,
}

/// Renders the page for `inputs` and, with `extrap`, the extrapolated trace made from them.
pub fn render(
    inputs: &[Input],
    extrap: Option<&Input>,
    models: &dyn ModelSource,
    limits: &Limits,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report, ReportError> {
    render_with_replays(inputs, extrap, models, limits, &[], progress)
}

/// [`render`], with the predictions of replays of these traces after the overview.
pub fn render_with_replays(
    inputs: &[Input],
    extrap: Option<&Input>,
    models: &dyn ModelSource,
    limits: &Limits,
    replays: &[Replayed],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report, ReportError> {
    if inputs.is_empty() {
        return Err(ReportError::NoInputs);
    }
    let total = inputs.len() as u64 + u64::from(extrap.is_some()) * 2 + 1;
    let mut done = 0;
    let mut step = |what: &str, progress: &mut dyn FnMut(Progress<'_>)| {
        progress(Progress { done, total, what });
        done += 1;
    };
    let mut analyses = Vec::with_capacity(inputs.len());
    for i in inputs {
        step(&format!("analysing {}", i.label), progress);
        analyses.push(analyze(&i.label, &i.file, limits));
    }
    let out = match extrap {
        Some(x) => {
            step(&format!("analysing {}", x.label), progress);
            Some(analyze(&x.label, &x.file, limits))
        }
        None => None,
    };
    let all: Vec<&TraceAnalysis> = analyses.iter().chain(out.as_ref()).collect();
    // One colour per op over the whole page.
    let mut page = html::Page::new(html::OpColours::new(all.iter().copied()));
    let mut overview: Vec<(&TraceAnalysis, &str)> = analyses.iter().map(|a| (a, "input")).collect();
    if let Some(o) = &out {
        overview.push((o, "extrapolated"));
    }
    // As PyDarshan's job summary: the overview, then per-file and per-rank views of each
    // trace, then the extrapolation.
    page.overview(&overview);
    page.replays(replays);
    let mut nav = vec![("overview".to_string(), "overview".to_string())];
    if !replays.is_empty() {
        nav.push(("replays".into(), "replays".into()));
    }
    step("trace plots", progress);
    for (k, a) in all.iter().enumerate() {
        let id = format!("trace-{k}");
        page.trace(&id, a, k == 0, limits)?;
        nav.push((id, short_name(&a.label)));
    }
    if let Some(o) = &out {
        step("extrapolation plots", progress);
        let refs: Vec<&TraceAnalysis> = analyses.iter().collect();
        let x = extrap::build(&refs, o, models)?;
        page.extrapolation(&x)?;
        nav.push(("extrap".into(), format!("extrapolation to {}", x.target)));
    }
    let plots = page.plots.len();
    let marks = page.plots.iter().map(|p| p.marks).sum();
    let omitted = std::mem::take(&mut page.omitted);
    // The program's name and the scales, as a reader would title the page.
    let program = all
        .first()
        .and_then(|a| {
            // The first word that is not a launcher or an option names the program.
            a.header.command.iter().find(|w| {
                let base = short_name(w);
                !matches!(base.as_str(), "mpirun" | "mpiexec" | "srun" | "timeout")
                    && !w.starts_with('-')
                    && !w.chars().all(|c| c.is_ascii_digit())
            })
        })
        .map(|w| short_name(w));
    let scales: Vec<String> = all.iter().map(|a| a.header.nranks.to_string()).collect();
    let title = match program {
        Some(p) => format!("iotrex report: {p} at {} ranks", scales.join(", ")),
        None => "iotrex report".to_string(),
    };
    let html = page.finish(&title, &nav);
    progress(Progress {
        done: total,
        total,
        what: "done",
    });
    Ok(Report {
        html,
        plots,
        marks,
        omitted,
    })
}

fn short_name(label: &str) -> String {
    Path::new(label)
        .file_name()
        .map_or_else(|| label.to_string(), |f| f.to_string_lossy().into_owned())
}

/// Writes the page to `path`; the error names the file.
pub fn write(report: &Report, path: &Path) -> Result<(), ReportError> {
    rsd::atomic::write(path, report.html.as_bytes()).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// What [`check`] found on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// `<svg>` elements.
    pub svgs: usize,
    /// Data marks (bars, spans, points, curves) in the least-marked plot.
    pub min_marks: usize,
}

/// Checks a rendered page the way a reader would want it: a complete HTML document, nothing
/// loaded from the network (no `http://` or `https://` in any `src` or `href`, no scripts), and
/// every plot with at least one data mark drawn in a palette colour (axes, grid and background
/// are black, grey or white, so an empty frame has none). Tests and `scripts/check-report.sh`
/// use it; the error says what is wrong.
pub fn check(html: &str) -> Result<Checked, String> {
    let lower = html.to_ascii_lowercase();
    if !lower.starts_with("<!doctype html>") || !lower.trim_end().ends_with("</html>") {
        return Err("not a complete HTML document".into());
    }
    for attr in ["src=", "href="] {
        for (i, _) in lower.match_indices(attr) {
            let v = lower[i + attr.len()..].trim_start_matches(['"', '\'']);
            if v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//") {
                return Err(format!(
                    "network resource at byte {i}: {}",
                    &html[i..(i + 60).min(html.len())]
                ));
            }
        }
    }
    if lower.contains("<script") || lower.contains("<link") || lower.contains("@import") {
        return Err("page loads scripts or stylesheets".into());
    }
    let colours: Vec<String> = (0..plot::COLOURS).map(plot::hex).collect();
    let mut svgs = 0;
    let mut min_marks = usize::MAX;
    let mut rest = lower.as_str();
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..]
            .find("</svg>")
            .ok_or("an <svg> element is not closed")?;
        let svg = &rest[start..start + end];
        svgs += 1;
        let marks = svg
            .split('<')
            .filter(|el| {
                ["rect ", "circle ", "polygon ", "polyline ", "path "]
                    .iter()
                    .any(|t| el.starts_with(t))
                    && colours.iter().any(|c| el.contains(c.as_str()))
            })
            .count();
        if marks == 0 {
            return Err(format!("plot {svgs} has no data marks"));
        }
        min_marks = min_marks.min(marks);
        rest = &rest[start + end..];
    }
    Ok(Checked {
        svgs,
        min_marks: if svgs == 0 { 0 } else { min_marks },
    })
}
