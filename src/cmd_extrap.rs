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
                  its remainder, log2 n, and per rank ((rank+a) % n)*b, rank/k, rank%k, a value \
                  on the root alone, the node terms rank/ppn, rank%ppn and the node leader \
                  ppn*(rank/ppn) (each input with its own ranks per node, the output with \
                  the target's: --ranks-per-node, --nodes), plus any --plugin models; last, for the sizes of data only (the length of a log \
                  line that prints n or the rank), a + b*digits(n), digits(n - 1) and \
                  digits(rank) + digits(n), the decimal widths. When the structure differs between scales (the error says \
                  which scales agree with each other; --drop-inconsistent extrapolates from the \
                  largest agreeing group of 3 or more), a value fits no model, or two models \
                  disagree at the target, nothing is written and the error names the event, \
                  parameter, values and models tried; with --json it is also printed on \
                  stdout, as {\"error\": ..., \"hint\": ..., \"refusal\": {...}} with the \
                  refusal's fields (\"kind\": \"refused\", the call as \"event\" with its op, \
                  call site and path, the quantity as \"param\", the reasons as \"detail\", \
                  \"values\", \"tried\", \"hint\"), and the exit status is 1. Timing is chosen \
                  out of sample (leave-one-scale-out among constant, inverse, inverse+constant, \
                  log, linear, power law, n log n, quadratic), refused where implausible up to \
                  the target, and stored with a prediction interval; the wall time is the sum \
                  of per-rank parts (I/O, communication, collective, compute gaps, \
                  compensation). Several traces of one rank count are repeated runs: their \
                  spread is the timing noise. Parameters the inputs hold as statistical \
                  summaries (IOTREX_APPROX), or that --ignore declares irrelevant, are fitted \
                  by their statistics (mean, spread, min, max; count exactly where it follows \
                  the structure) with the timing models and written as summaries marked \
                  approximate; --exact refuses them instead. --explain prints every varying \
                  quantity's model, approximate ones with their held-out error, and the passes of the \
                  pipeline that acted (containers lifted, process grids, library models, \
                  consistency, prefix sums, summaries, collective buffering, fit).",
    after_help = "Examples:\n  iotrex extrap app.4.iotrex app.8.iotrex app.12.iotrex app.16.iotrex --ranks 1024 -o app.1024.iotrex\n  iotrex extrap app.{4,8,12,16}.iotrex --ranks 64 -o app.64.iotrex --explain --plugin libmymodel.so\n  iotrex extrap app.{4,8,12,16}.iotrex --ranks 32 -o app.32.iotrex --ignore fprintf.ret\n  iotrex extrap app.2x{1,2,3,4}.iotrex --ranks 16 --ranks-per-node 8 -o app.2x8.iotrex"
)]
pub struct ExtrapArgs {
    /// Traces of the same program at three or more different rank counts (several runs of
    /// one rank count are repeated runs of the same command).
    #[arg(required = true, num_args = 3.., value_name = "IN")]
    pub inputs: Vec<PathBuf>,
    /// Rank count to extrapolate to.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub ranks: u32,
    /// Ranks on each node of the target (a divisor of --ranks; ranks placed by block, as
    /// mpirun places them by default). Default: the inputs' ranks per node where every input
    /// has the same, one node where every input ran on one node; inputs of different ranks
    /// per node on several nodes need it (or --nodes).
    #[arg(long, value_name = "P", conflicts_with = "nodes")]
    pub ranks_per_node: Option<u32>,
    /// Nodes of the target (a divisor of --ranks): --ranks-per-node is --ranks / K.
    #[arg(long, value_name = "K")]
    pub nodes: Option<u32>,
    /// Where to write the extrapolated trace (nothing is written on a refusal).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Load a model plugin (a shared library implementing models/include/iotrex_model.h);
    /// may be repeated.
    #[arg(long, value_name = "LIB")]
    pub plugin: Vec<PathBuf>,
    /// Print the model chosen for every quantity that varies with the rank count, then the
    /// passes of the extrapolation that acted, in the order they ran (`passes` in --json).
    /// The timing fits of calls and gaps that take under 1 us at every input scale are left
    /// out of the text (and counted): `--explain=all` prints them too. --json lists every
    /// model either way.
    #[arg(
        long,
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "default",
        value_name = "WHAT"
    )]
    pub explain: Option<ExplainLevel>,
    /// The most memory the parts of the extrapolation that do not stay compressed may take
    /// (bytes, or with K, M, G, T: KiB to TiB), such as a layer of collective buffering whose
    /// nested calls are one per rank's request: past it extrap refuses before it starts them,
    /// naming the part and the memory it would take. Default: half the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// When the inputs disagree in structure (a scale took another path), extrapolate from
    /// the largest group of at least 3 scales that agree with each other instead of refusing;
    /// the output's header (its provenance, and a note) lists the scales used and dropped.
    #[arg(long)]
    pub drop_inconsistent: bool,
    /// Fit the calls without their call sites, for inputs traced from different builds of the
    /// program (the output then has no call sites).
    #[arg(long)]
    pub ignore_call_sites: bool,
    /// Refuse inputs that hold approximate values (statistical summaries), as extrap did before
    /// it fitted them: the error names the first summarised event and parameter.
    #[arg(long, conflicts_with = "ignore")]
    pub exact: bool,
    /// Declare a parameter irrelevant: OP.PARAM as `iotrex show` names them (e.g.
    /// fprintf.ret). It becomes a statistical summary in every input before fitting, so a
    /// value no exact model explains (a log line's length, a time printed) extrapolates
    /// approximately instead of refusing. May be repeated.
    #[arg(long, value_name = "OP.PARAM")]
    pub ignore: Vec<String>,
    /// Summarise, instead of refusing, every quantity (a size, a count, a returned length, a
    /// datatype's block length) that fits no exact model: as if each were named with
    /// --ignore, and each is said on stderr and in the output's notes. Offsets, peers,
    /// handles and the loop structure stay exact or refuse. For real codes whose message and
    /// block sizes follow their data.
    #[arg(long, conflicts_with = "exact")]
    pub approx_unfit: bool,
    /// The CPUs every node of the input runs had, for inputs traced before the tracer
    /// recorded them (a trace that records its CPUs keeps its own). Whether the ranks shared
    /// cores decides which timing families describe the wall time's parts (`--explain`'s
    /// "cores" line).
    #[arg(long, value_name = "CPUS")]
    pub cores_per_node: Option<u32>,
}

#[derive(Serialize)]
struct Report<'a> {
    output: &'a Path,
    bytes: u64,
    ranks: u32,
    from: &'a [u32],
    dropped: &'a [u32],
    explain: &'a [extrap::Explain],
    /// The pipeline's passes that acted, in the order they ran (with --explain).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    passes: &'a [extrap::PassId],
}

/// Runs `iotrex extrap`.
pub fn run(a: &ExtrapArgs, json: bool) -> Result<()> {
    // A misspelt --ignore is a bad argument (status 2), found before any input is read.
    let ignored = a
        .ignore
        .iter()
        .map(|s| {
            extrap::approx::Ignore::parse(s)
                .map_err(|e| crate::exit::Usage(format!("{e} ({})", e.hint().unwrap_or_default())))
        })
        .collect::<Result<Vec<_>, _>>()?;
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
                file: {
                    let tf = TraceFile::read(p)?;
                    if let Some(why) = rsd::process::unsupported(&tf.header, "extrapolation") {
                        return Err(anyhow::anyhow!("{}: {why}", p.display()));
                    }
                    tf
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut inputs = inputs;
    if let Some(c) = a.cores_per_node.filter(|&c| c > 0) {
        for i in &mut inputs {
            let h = &mut i.file.header;
            if h.node_cores.is_empty()
                && let Some(nodes) = h.mpi_config.as_ref().map(|m| m.nodes())
            {
                h.node_cores = vec![(c, nodes as u32)];
            }
        }
    }
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
    // Approximate values: refused with --exact; parameters named by --ignore summarised.
    if a.exact {
        extrap::approx::require_exact(&inputs)?;
    }
    note_ignored_unused(&inputs, &ignored);
    let shape = match (a.ranks_per_node, a.nodes) {
        (Some(p), _) => Some(extrap::TargetShape::RanksPerNode(p)),
        (None, Some(k)) => Some(extrap::TargetShape::Nodes(k)),
        (None, None) => None,
    };
    let req = extrap::Request::new(a.ranks)
        .shape(shape)
        .models(models)
        .ignore(ignored)
        .approx_unfit(a.approx_unfit)
        .inconsistent(if a.drop_inconsistent {
            extrap::Inconsistent::Drop
        } else {
            extrap::Inconsistent::Refuse
        })
        .oracle(crate::oracle::next_to_this_binary())
        .max_memory(a.max_memory);
    let x = extrap::run(&req, &inputs)?;
    for g in &x.summarised {
        eprintln!("note: --approx-unfit: {g} fits no exact model; summarised");
    }
    for n in &x.file.header.notes {
        if n.starts_with(extrap::FITTED_NOT_DERIVED) {
            eprintln!("note: {n}");
        }
    }
    // Inputs left out by --drop-inconsistent.
    let mut dropped: Vec<u32> = inputs
        .iter()
        .map(|i| i.file.header.nranks)
        .filter(|n| !x.scales.contains(n))
        .collect();
    dropped.sort_unstable();
    let bytes = crate::output::write_trace(&x.file, &a.output, "-o")?;
    if json {
        return crate::output::print_json(&Report {
            output: &a.output,
            bytes,
            ranks: a.ranks,
            from: &x.scales,
            dropped: &dropped,
            explain: if a.explain.is_some() { &x.explain } else { &[] },
            passes: if a.explain.is_some() { &x.passes } else { &[] },
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
    if let Some(level) = a.explain {
        let mut hidden = 0;
        for e in &x.explain {
            if level == ExplainLevel::Default && negligible_timing(e) {
                hidden += 1;
                continue;
            }
            text.push_str(&format!("{}  {}: {}\n", e.event, e.quantity, e.model));
        }
        if hidden > 0 {
            text.push_str(&format!(
                "({hidden} timing fit{} of calls and gaps under {} ns at every scale not shown; \
                 --explain=all shows them)\n",
                if hidden == 1 { "" } else { "s" },
                NEGLIGIBLE_NS
            ));
        }
        let passes: Vec<String> = x.passes.iter().map(|p| p.to_string()).collect();
        text.push_str(&format!("passes that acted: {}\n", passes.join(", ")));
    }
    crate::output::print_text(&text)
}

/// How much `--explain` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainLevel {
    /// The structural models and the timing fits of what takes time.
    Default,
    /// Every model, the timing fits of sub-microsecond calls too.
    All,
}

/// A mean duration or gap below this at every input scale is not worth a line of
/// `--explain` by default: a quadratic fitted to `MPI_Comm_rank`'s 200 ns says nothing.
const NEGLIGIBLE_NS: f64 = 1000.0;

/// Whether `e` is the timing fit (`gap mean`, `duration mean`) of a quantity under
/// [`NEGLIGIBLE_NS`] at every input scale.
fn negligible_timing(e: &extrap::Explain) -> bool {
    matches!(e.quantity.as_str(), "gap mean" | "duration mean")
        && e.curve
            .as_ref()
            .is_some_and(|c| c.points.iter().all(|&(_, y)| y.abs() < NEGLIGIBLE_NS))
}

/// Says which parameters named with --ignore no input summarised: extrap summarises them
/// itself, after checking its models of the MPI library against the exact values, so what
/// the user named is looked for here once, for the notes.
/// `--max-memory`'s size: a byte count, or a number with K, M, G or T (KiB to TiB).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("{s:?}: the unit must be K, M, G or T")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (bytes, or a number with K, M, G or T)"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s:?}: the size must be more than 0"));
    }
    Ok((n * (1u64 << shift) as f64).min(u64::MAX as f64) as u64)
}

fn note_ignored_unused(inputs: &[Input], ignored: &[extrap::approx::Ignore]) {
    if ignored.is_empty() {
        return;
    }
    let (_, found) = extrap::approx::ignore(inputs.to_vec(), ignored);
    for (g, _) in found.iter().filter(|(_, n)| *n == 0) {
        eprintln!(
            "note: --ignore {g}: no input summarised it (the inputs do not call {}, or its \
             values are negative somewhere)",
            g.op.name()
        );
    }
}

/// An extrapolation's refusal, field by field (`ExtrapError`'s serialization), for `--json`.
pub fn refusal_json(e: &anyhow::Error) -> Option<serde_json::Value> {
    serde_json::to_value(e.downcast_ref::<ExtrapError>()?).ok()
}

/// What to do about an extrapolation or plugin error.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    if let Some(x) = e.downcast_ref::<ExtrapError>() {
        // A value that fits no model and does not matter can be declared irrelevant.
        if let Some(g) = x.refused_param() {
            return Some(format!(
                "{}; if this value does not matter to the I/O (a log line's length, a time \
                 printed), extrapolate it approximately with --ignore {g}",
                x.hint().unwrap_or_default()
            ));
        }
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
