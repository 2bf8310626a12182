//! `iotrex report`: the CLI glue around the `report` crate (arguments, progress on a TTY,
//! writing the file, the one-line result).

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(
    about = "Write one self-contained HTML page with plots about traces and an extrapolation",
    long_about = "Write one self-contained HTML file (inline SVG plots and CSS, no scripts, \
                  nothing loaded from the network). Per trace: calls and bytes per layer and \
                  op, per-rank I/O volume and time, the files touched by name pattern, the \
                  I/O stack (time in the MPI-IO layer against the POSIX calls nested in it, \
                  aggregator ranks per collective call) and a timeline of a few ranks. With \
                  --extrap, each quantity's values at the input scales with the chosen model \
                  drawn through them to the target, and a table of every quantity and its \
                  model. With --replay, a replay's predicted run time on its storage, with \
                  its interval, beside the trace's own time. Plots with no data are left out \
                  with a note.",
    after_help = "Example:\n  iotrex report app.{4,8,12,16}.iotrex --extrap app.1024.iotrex -o report.html\n  iotrex report app.64.iotrex -o app.html\n  iotrex report app.8.iotrex --replay replay.json -o app.html"
)]
pub struct ReportArgs {
    /// The traces (.iotrex) to report on; for an extrapolation, the traces it was made from.
    #[arg(required = true, value_name = "IN")]
    pub inputs: Vec<PathBuf>,
    /// The trace `iotrex extrap` wrote from the inputs: adds the extrapolation section.
    #[arg(long, value_name = "OUT")]
    pub extrap: Option<PathBuf>,
    /// Where to write the HTML page.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Ranks drawn in each trace's timeline.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub timeline_ranks: u32,
    /// A model plugin the extrapolation was made with (`iotrex extrap --plugin`), so that the
    /// report explains the same models; repeatable.
    #[arg(long, value_name = "LIB")]
    pub plugin: Vec<PathBuf>,
    /// A replay's JSON report (`iotrex replay --json-out FILE`, `iotrex-replay --json-out
    /// FILE`): the page shows its predicted run time on the replay's storage, with its
    /// interval, beside the trace's own time; repeatable.
    #[arg(long, value_name = "JSON")]
    pub replay: Vec<PathBuf>,
    /// Ranks expanded for the per-rank charts; above this, every k-th rank is shown.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_ranks: u32,
}

#[derive(Serialize)]
struct Written<'a> {
    file: &'a Path,
    bytes: usize,
    plots: usize,
    marks: usize,
    omitted: &'a [String],
    replays: Vec<ReplayRow<'a>>,
}

/// A replay's numbers as the page shows them, for `--json`.
#[derive(Serialize)]
struct ReplayRow<'a> {
    file: &'a str,
    traced_wall_ns: u64,
    predicted_ns: Option<f64>,
    lo_ns: Option<f64>,
    hi_ns: Option<f64>,
}

/// Reads a replay's JSON report; the error names the file.
fn read_replay(path: &Path) -> Result<report::Replayed> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("--replay {}: {e}", path.display()))?;
    let h: replay::report::ReportHead = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "--replay {}: not a replay's JSON report (iotrex replay --json-out FILE): {e}",
            path.display()
        )
    })?;
    if h.mode.is_empty() {
        anyhow::bail!(
            "--replay {}: not a replay's JSON report (no \"mode\"; write one with iotrex replay --json-out FILE)",
            path.display()
        );
    }
    Ok(report::Replayed {
        label: path.display().to_string(),
        mode: h.mode,
        ranks: h.ranks,
        layout: h.layout.map(|l| l.text),
        wall_ns: h.wall_ns,
        traced_wall_ns: h.traced_wall_ns,
        extrapolated: h.predicted.is_some(),
        covers: h
            .prediction
            .as_ref()
            .map(|p| p.covers.clone())
            .unwrap_or_default(),
        prediction: h.prediction.map(|p| report::ReplayPrediction {
            value_ns: p.value_ns,
            lo_ns: p.lo_ns,
            hi_ns: p.hi_ns,
        }),
    })
}

pub fn run(a: &ReportArgs, json: bool) -> Result<()> {
    // Read here rather than with report::read_inputs so rsd's errors reach main's hints.
    let read = |p: &PathBuf| -> Result<report::Input> {
        Ok(report::Input {
            label: p.display().to_string(),
            file: rsd::TraceFile::read(p)?,
        })
    };
    let inputs = a.inputs.iter().map(read).collect::<Result<Vec<_>>>()?;
    let out = a.extrap.as_ref().map(read).transpose()?;
    let replays = a
        .replay
        .iter()
        .map(|p| read_replay(p))
        .collect::<Result<Vec<_>>>()?;
    // The extrapolation section draws the inputs' models through to the output: an output
    // that was not extrapolated from these inputs would be drawn as if it were.
    if let Some(o) = &out {
        let named: Vec<(&str, &rsd::TraceFile)> =
            inputs.iter().map(|i| (i.label.as_str(), &i.file)).collect();
        extrap::provenance::check_made_from((&o.label, &o.file), &named)?;
    }
    // The extrapolation's models, recomputed from the inputs (extrap is deterministic).
    let models = report::ExtrapModels::new(
        inputs
            .iter()
            .map(|i| (i.label.clone(), i.file.clone()))
            .collect(),
    )
    .with_plugins(a.plugin.clone())
    .with_request(report_request(out.as_ref()));
    let limits = report::Limits {
        rank_bars: a.max_ranks as usize,
        timeline_ranks: a.timeline_ranks as usize,
        ..report::Limits::default()
    };
    // A bar on a terminal only: pipes, logs and CI get just the result line.
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let r = report::render_with_replays(
        &inputs,
        out.as_ref(),
        &models,
        &limits,
        &replays,
        &mut |p| {
            bar.set_length(p.total);
            bar.set_position(p.done);
            bar.set_message(p.what.to_string());
        },
    );
    bar.finish_and_clear();
    let r = r?;
    report::write(&r, &a.output)?;
    if json {
        crate::output::print_json(&Written {
            file: &a.output,
            bytes: r.html.len(),
            plots: r.plots,
            marks: r.marks,
            omitted: &r.omitted,
            replays: replays
                .iter()
                .map(|x| ReplayRow {
                    file: &x.label,
                    traced_wall_ns: x.traced_wall_ns,
                    predicted_ns: x.prediction.map(|p| p.value_ns),
                    lo_ns: x.prediction.map(|p| p.lo_ns),
                    hi_ns: x.prediction.map(|p| p.hi_ns),
                })
                .collect(),
        })
    } else {
        let mut s = format!(
            "wrote {}: {} bytes, {} plots\n",
            a.output.display(),
            r.html.len(),
            r.plots
        );
        for o in &r.omitted {
            s.push_str(&format!("note: left out {o}\n"));
        }
        crate::output::print_text(&s)
    }
}

/// The options of the extrapolation that wrote `out`, as far as its trace says them: the
/// report explains that extrapolation, not another. `--approx-unfit` is on: it changes only
/// what would be refused, and `out` exists, so extrap did not refuse it. Scales dropped by
/// `--drop-inconsistent` are in its provenance; the target's shape (`--ranks-per-node`) in
/// its node layout.
fn report_request(out: Option<&report::Input>) -> extrap::Request {
    let dropped = out
        .and_then(|o| extrap::provenance::of(&o.file.header))
        .is_some_and(|p| !p.dropped.is_empty());
    let shape = out
        .and_then(|o| extrap::nodes::of_header(&o.file.header))
        .map(|l| extrap::TargetShape::RanksPerNode(l.ranks_per_node));
    extrap::Request::new(1)
        .shape(shape)
        .approx_unfit(out.is_some())
        .inconsistent(if dropped {
            extrap::Inconsistent::Drop
        } else {
            extrap::Inconsistent::Refuse
        })
        .oracle(crate::oracle::next_to_this_binary())
}
