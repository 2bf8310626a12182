//! `iotrex extrap`: the CLI side of `extrap::extrapolate`.

use anyhow::Result;
use clap::Args;
use extrap::{ExtrapError, Input, ModelSet, Plugin};
use rsd::TraceFile;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex extrap`.
#[derive(Debug, Args)]
#[command(
    about = "Extrapolate traces at three or more rank counts to another rank count",
    long_about = "Align traces of the same program at three or more rank counts and write the \
                  trace at --ranks. Every rank set, parameter and loop count is fitted exactly \
                  (zero residual, rational arithmetic) as a function of the rank count n: \
                  constant, a*n+b, k/n, k/n+c, floor/ceil(K/n), largest power of two <= n and \
                  its remainder, log2 n, and per rank ((rank+a) % n)*b, rank/k, rank%k, plus \
                  any --plugin models; last, for the sizes of data only (the length of a log \
                  line that prints n or the rank), a + b*digits(n), digits(n - 1) and \
                  digits(rank) + digits(n), the decimal widths. When the structure differs between scales (the error says \
                  which scales agree with each other; --drop-inconsistent extrapolates from the \
                  largest agreeing group of 3 or more), a value fits no model, or two models \
                  disagree at the target, nothing is written and the error names the event, \
                  parameter, values and models tried. Timing is chosen \
                  out of sample (leave-one-scale-out among constant, inverse, inverse+constant, \
                  log, linear, power law, n log n, quadratic), refused where implausible up to \
                  the target, and stored with a prediction interval; the wall time is the sum \
                  of per-rank parts (I/O, communication, collective, compute gaps, \
                  compensation). Several traces of one rank count are repeated runs: their \
                  spread is the timing noise. --explain prints every varying quantity's model.",
    after_help = "Examples:\n  iotrex extrap app.4.iotrex app.8.iotrex app.12.iotrex app.16.iotrex --ranks 1024 -o app.1024.iotrex\n  iotrex extrap app.{4,8,12,16}.iotrex --ranks 64 -o app.64.iotrex --explain --plugin libmymodel.so"
)]
pub struct ExtrapArgs {
    /// Traces of the same program at three or more different rank counts (several runs of
    /// one rank count are repeated runs of the same command).
    #[arg(required = true, num_args = 3.., value_name = "IN")]
    pub inputs: Vec<PathBuf>,
    /// Rank count to extrapolate to.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub ranks: u32,
    /// Where to write the extrapolated trace (nothing is written on a refusal).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Load a model plugin (a shared library implementing models/include/iotrex_model.h);
    /// may be repeated.
    #[arg(long, value_name = "LIB")]
    pub plugin: Vec<PathBuf>,
    /// Print the model chosen for every quantity that varies with the rank count.
    #[arg(long)]
    pub explain: bool,
    /// When the inputs disagree in structure (a scale took another path), extrapolate from
    /// the largest group of at least 3 scales that agree with each other instead of refusing;
    /// the output's header notes list the scales used and dropped.
    #[arg(long)]
    pub drop_inconsistent: bool,
    /// Fit the calls without their call sites, for inputs traced from different builds of the
    /// program (the output then has no call sites).
    #[arg(long)]
    pub ignore_call_sites: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    output: &'a Path,
    bytes: u64,
    ranks: u32,
    from: &'a [u32],
    dropped: &'a [u32],
    explain: &'a [extrap::Explain],
}

/// Runs `iotrex extrap`.
pub fn run(a: &ExtrapArgs, json: bool) -> Result<()> {
    let mut models = ModelSet::builtin();
    for p in &a.plugin {
        models.add_plugin(Plugin::load(p)?);
    }
    let inputs = a
        .inputs
        .iter()
        .map(|p| {
            Ok(Input {
                name: p.display().to_string(),
                file: TraceFile::read(p)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Inputs of different programs or builds have different call sites where their calls are
    // the same, which reads as "another path at another scale": say so first.
    if let Some(first) = inputs.first() {
        for i in &inputs[1..] {
            if let Some(o) = first.file.header.origin_differs(&i.file.header) {
                eprintln!(
                    "note: {} and {}: {o}{}",
                    first.name,
                    i.name,
                    if a.ignore_call_sites {
                        " (call sites are left out, --ignore-call-sites)"
                    } else {
                        "; if their call sites differ, fit with --ignore-call-sites"
                    }
                );
            }
        }
    }
    let inputs: Vec<Input> = if a.ignore_call_sites {
        inputs
            .into_iter()
            .map(|i| Input {
                file: extrap::diff::without_call_sites(&i.file),
                ..i
            })
            .collect()
    } else {
        inputs
    };
    let x = extrap::extrapolate_consistent(&inputs, a.ranks, &models, a.drop_inconsistent)?;
    // Inputs left out by --drop-inconsistent.
    let mut dropped: Vec<u32> = inputs
        .iter()
        .map(|i| i.file.header.nranks)
        .filter(|n| !x.scales.contains(n))
        .collect();
    dropped.sort_unstable();
    let bytes = x.file.write(&a.output)?;
    if json {
        return crate::output::print_json(&Report {
            output: &a.output,
            bytes,
            ranks: a.ranks,
            from: &x.scales,
            dropped: &dropped,
            explain: if a.explain { &x.explain } else { &[] },
        });
    }
    let from: Vec<String> = x.scales.iter().map(u32::to_string).collect();
    let mut text = format!(
        "wrote {}: {bytes} bytes, {} ranks, extrapolated from {} ranks\n",
        a.output.display(),
        a.ranks,
        from.join(", ")
    );
    if !dropped.is_empty() {
        let d: Vec<String> = dropped.iter().map(u32::to_string).collect();
        text.push_str(&format!(
            "dropped {} ranks (another structure, --drop-inconsistent)\n",
            d.join(", ")
        ));
    }
    if a.explain {
        for e in &x.explain {
            text.push_str(&format!("{}  {}: {}\n", e.event, e.quantity, e.model));
        }
    }
    crate::output::print_text(&text)
}

/// What to do about an extrapolation or plugin error.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    if let Some(x) = e.downcast_ref::<ExtrapError>() {
        return x.hint().map(str::to_string);
    }
    match e.downcast_ref::<extrap::models::ModelError>()? {
        extrap::models::ModelError::AbiVersion { .. } => {
            Some("rebuild the plugin against this iotrex's models/include/iotrex_model.h".into())
        }
        extrap::models::ModelError::MissingSymbol { .. }
        | extrap::models::ModelError::BadDescriptor { .. } => {
            Some("a model plugin exports `iotrex_model_plugin`; see plugins/even_odd".into())
        }
        _ => Some("check the --plugin path".into()),
    }
}
