//! The extrapolation section's data: for each quantity, its values at the input scales, the
//! model the extrapolation chose (formula and evaluator) and the value the extrapolated trace
//! holds at the target.
//!
//! The models come from a [`ModelSource`], so the page does not depend on how `extrap` exposes
//! them; the report never fits a model itself (a curve drawn through the points must be the one
//! the extrapolation used, or none). What the report computes on its own are the measured
//! totals of each trace (calls, bytes and time per op, wall time): real values at every scale
//! and at the target, drawn as points without a curve unless a source supplies one.

use crate::analysis::TraceAnalysis;
use crate::error::ReportError;
use rsd::op::{Layer, Op};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// How to print a quantity's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unit {
    /// A count (calls, iterations).
    Count,
    /// Bytes.
    Bytes,
    /// Nanoseconds.
    Nanos,
    /// A plain integer parameter (offsets, sizes as the call gave them).
    Plain,
}

/// What a quantity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A recorded parameter or an iteration count of one event (exact model or refusal).
    Parameter,
    /// A timing statistic (fitted model).
    Timing,
    /// A total over the whole trace, measured by the report.
    Total,
}

/// The model an extrapolation chose for a quantity.
pub struct Model {
    /// The formula in the rank count `n`, as the extrapolation prints it.
    pub formula: String,
    /// The model's value at a rank count; `None` where it is undefined.
    pub eval: Box<dyn Fn(f64) -> Option<f64>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("formula", &self.formula)
            .finish_non_exhaustive()
    }
}

/// One quantity across scales.
#[derive(Debug)]
pub struct Quantity {
    /// What it is, e.g. `MPI_File_write_at_all calls` or `offset of MPI_File_write_at (site 3)`.
    pub name: String,
    /// Parameter, timing or total.
    pub kind: Kind,
    /// How to print it.
    pub unit: Unit,
    /// (rank count, value) at each input scale, in scale order.
    pub points: Vec<(u32, f64)>,
    /// The chosen model, when the source supplies one.
    pub model: Option<Model>,
    /// The op it belongs to, if any: its plot is drawn in the op's colour.
    pub op: Option<Op>,
    /// The value in the extrapolated trace at the target.
    pub target: Option<f64>,
}

impl Quantity {
    /// Whether the value changes between input scales.
    pub fn varies(&self) -> bool {
        self.points.windows(2).any(|w| w[0].1 != w[1].1)
    }
}

/// One line of the extrapolation's own explanation (`iotrex extrap --explain`): a varying
/// quantity and its model as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainRow {
    /// The event (op, call site, path).
    pub event: String,
    /// The parameter or quantity.
    pub quantity: String,
    /// The model in readable form.
    pub model: String,
}

/// Supplies per-parameter and timing quantities with their models.
pub trait ModelSource {
    /// Every varying quantity and its model as the extrapolation explains it, or why there is
    /// no explanation.
    fn explain(&self, _out: &TraceAnalysis) -> Result<Vec<ExplainRow>, String> {
        Err("no model source".into())
    }

    /// A short name for the page ("extrap 0.1.0").
    fn name(&self) -> String;
    /// The quantities with their models, or why there are none.
    fn quantities(
        &self,
        inputs: &[&TraceAnalysis],
        out: &TraceAnalysis,
    ) -> Result<Vec<Quantity>, String>;
}

/// The source to use while the `extrap` crate exposes no model API: no models, and says so.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModels;

impl ModelSource for NoModels {
    fn name(&self) -> String {
        "none".into()
    }

    fn quantities(&self, _: &[&TraceAnalysis], _: &TraceAnalysis) -> Result<Vec<Quantity>, String> {
        Err(
            "the extrap crate does not expose its per-parameter models yet (values at each \
             scale and the chosen formula), so this report shows no parameter models and draws \
             no model curves; the totals below are measured from the traces"
                .into(),
        )
    }
}

/// Models from the `extrap` crate: it re-runs the extrapolation of the inputs to the output's
/// rank count with the built-in models (deterministic, so it chooses what `iotrex extrap`
/// chose without plugins) and lists its explanation; for timing and wall time, extrap also
/// gives the values at each scale and its model sampled up to the target, drawn as curves.
pub struct ExtrapModels {
    inputs: Vec<extrap::Input>,
    /// Model plugins the extrapolation was made with (`iotrex extrap --plugin`): without them
    /// extrap would refuse, or explain, what only a plugin's model fits.
    plugins: Vec<std::path::PathBuf>,
    /// The extrapolation's explanation and the target it was made for: `quantities` and
    /// `explain` both read it, and extrapolating twice was two thirds of a report's time.
    explained: std::cell::OnceCell<(u32, Result<Vec<extrap::Explain>, String>)>,
    /// The request `iotrex extrap` was given (its options; the target is the output's), so
    /// the report explains the extrapolation it made, not another one.
    request: extrap::Request,
}

impl ExtrapModels {
    /// A source for these inputs (name and trace).
    pub fn new(inputs: Vec<(String, rsd::TraceFile)>) -> ExtrapModels {
        ExtrapModels {
            inputs: inputs
                .into_iter()
                .map(|(name, file)| extrap::Input { name, file })
                .collect(),
            plugins: Vec::new(),
            explained: std::cell::OnceCell::new(),
            request: extrap::Request::new(1),
        }
    }

    /// Extrapolates with the options of `request` (its target and models are replaced by
    /// the output's rank count and this source's models).
    pub fn with_request(mut self, request: extrap::Request) -> ExtrapModels {
        self.request = request;
        self
    }

    /// The explanation of the extrapolation to `target` (made once per source), or why there
    /// is none.
    fn explained(&self, target: u32) -> Result<Vec<extrap::Explain>, String> {
        if let Some((t, x)) = self.explained.get()
            && *t == target
        {
            return x.clone();
        }
        let x = self.model_set().and_then(|ms| {
            let req = extrap::Request {
                target,
                ..self.request.clone().models(ms)
            };
            extrap::run(&req, &self.inputs)
                .map(|x| x.explain)
                .map_err(|e| format!("extrap refuses these inputs: {e}"))
        });
        let _ = self.explained.set((target, x.clone()));
        x
    }

    /// The built-in models and the plugins, as `iotrex extrap` had them.
    fn model_set(&self) -> Result<extrap::ModelSet, String> {
        let mut ms = extrap::ModelSet::builtin();
        for p in &self.plugins {
            let plugin = extrap::Plugin::load(p)
                .map_err(|e| format!("cannot load model plugin {} (--plugin): {e}", p.display()))?;
            ms.add_plugin(plugin);
        }
        Ok(ms)
    }

    /// Also loads these model plugins, as `iotrex extrap --plugin` did.
    pub fn with_plugins(mut self, plugins: Vec<std::path::PathBuf>) -> ExtrapModels {
        self.plugins = plugins;
        self
    }
}

impl ModelSource for ExtrapModels {
    fn name(&self) -> String {
        if self.plugins.is_empty() {
            "extrap (built-in models)".into()
        } else {
            let names: Vec<String> = self
                .plugins
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            format!("extrap (built-in models and plugins {})", names.join(", "))
        }
    }

    /// Every explained quantity that extrap supplies a curve for (timing statistics and wall
    /// time): its values at the input scales and the model extrap fitted, sampled by extrap
    /// itself up to the target. The report draws those samples; it fits nothing.
    fn quantities(
        &self,
        _: &[&TraceAnalysis],
        out: &TraceAnalysis,
    ) -> Result<Vec<Quantity>, String> {
        let mut names = EventNames::default();
        let mut qs = Vec::new();
        for e in self.explained(out.header.nranks)? {
            let Some(c) = e.curve else { continue };
            let timing = e.quantity.contains("mean")
                || e.quantity.contains("min")
                || e.quantity.contains("max")
                || e.quantity.contains("std")
                || e.quantity == "wall time"
                || e.quantity.starts_with("time per rank");
            let samples = c.samples;
            let target = samples.last().map(|s| s.1);
            let (op, event) = names.human(&e.event, &e.quantity);
            // A parameter's curve is of the one number of its model that varies, which may be
            // a rank group's size rather than the value: the name says which.
            let part = if timing { None } else { plotted(&e.model) };
            let quantity = match part {
                Some(p) => format!("{}, {p}", e.quantity),
                None => e.quantity.clone(),
            };
            // POSIX and stdio sizes and offsets are bytes; MPI-IO's count in datatypes.
            let bytes = matches!(e.quantity.as_str(), "count" | "offset" | "ret")
                && part.is_none_or(|p| p.ends_with("value"))
                && op.is_some_and(|o| matches!(o.layer(), Layer::Posix | Layer::Stdio));
            qs.push(Quantity {
                name: if event.is_empty() {
                    quantity.clone()
                } else {
                    format!("{event}: {quantity}")
                },
                kind: if timing {
                    Kind::Timing
                } else {
                    Kind::Parameter
                },
                unit: if timing {
                    Unit::Nanos
                } else if bytes {
                    Unit::Bytes
                } else {
                    Unit::Plain
                },
                op,
                points: c
                    .points
                    .iter()
                    .filter_map(|&(n, y)| u32::try_from(n).ok().map(|n| (n, y)))
                    .collect(),
                model: Some(Model {
                    formula: formula(&e.model, timing),
                    eval: Box::new(move |n| sampled(&samples, n)),
                }),
                target,
            });
        }
        if qs.is_empty() {
            return Err("extrap supplied no quantity with a model curve".into());
        }
        Ok(qs)
    }

    fn explain(&self, out: &TraceAnalysis) -> Result<Vec<ExplainRow>, String> {
        Ok(self
            .explained(out.header.nranks)?
            .into_iter()
            .map(|e| ExplainRow {
                event: e.event,
                quantity: e.quantity,
                model: e.model,
            })
            .collect())
    }
}

/// Events named as a reader knows them: the op and its file, not the call-site hash; a second
/// call site of the same op and file is `#2`.
#[derive(Default)]
struct EventNames {
    sites: Vec<(String, String)>,
    /// Quantities seen per (event, quantity): the same call site's ranks can split into
    /// groups that do different things (rank 0 and the others), each its own event.
    seen: BTreeMap<(String, String), usize>,
}

impl EventNames {
    /// `MPI_File_open (call site 0x51570005, path out/shared.dat)` -> `MPI_File_open
    /// out/shared.dat`; `run` (the whole job) -> empty.
    fn human(&mut self, event: &str, quantity: &str) -> (Option<Op>, String) {
        if event == "run" {
            return (None, String::new());
        }
        let group = {
            let k = self
                .seen
                .entry((event.to_string(), quantity.to_string()))
                .or_default();
            *k += 1;
            *k
        };
        let (head, site, path) = match event.find(" (call site ") {
            Some(i) => {
                let inner = event[i + 12..].trim_end_matches(')');
                let (site, path) = match inner.find(", path ") {
                    Some(j) => (&inner[..j], Some(&inner[j + 7..])),
                    None => (inner, None),
                };
                (&event[..i], site, path)
            }
            None => (event, "", None),
        };
        let op_name = head.rsplit(' ').next().unwrap_or(head);
        let op = Op::ALL.iter().copied().find(|o| o.name() == op_name);
        let mut name = head.to_string();
        if let Some(p) = path {
            name = format!("{name} {p}");
        }
        // The n-th distinct call site of this name.
        let same: Vec<String> = self
            .sites
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, s)| s.clone())
            .collect();
        let k = match same.iter().position(|s| *s == site) {
            Some(k) => k + 1,
            None => {
                self.sites.push((name.clone(), site.to_string()));
                same.len() + 1
            }
        };
        if k > 1 {
            name = format!("{name} #{k}");
        }
        if group > 1 {
            name = format!("{name} (rank group {group})");
        }
        (op, name)
    }
}

/// A model as a legend shows it: `3.3409e0*n*log2(n) + 1.0914e3 (n log n, held-out error
/// 1.5%); at target ...` -> `3.34ns*n*log2(n) + 1.09us (n log n, held-out error 1.5%)` for
/// timing (each coefficient a time with its unit); the value's formula of an exact model
/// (`[group 0 value = 1048576*n]` -> `1048576*n`).
fn formula(model: &str, timing: bool) -> String {
    if timing {
        let (f, rest) = match model.find(" (") {
            Some(i) => (&model[..i], &model[i..]),
            None => (model, ""),
        };
        let how = rest
            .split(')')
            .next()
            .unwrap_or("")
            .trim_start_matches(" (");
        let f: Vec<String> = f.split(' ').map(time_coefficients).collect();
        if how.is_empty() {
            f.join(" ")
        } else {
            format!("{} ({how})", f.join(" "))
        }
    } else {
        match (model.rfind("= "), model.rfind(']')) {
            (Some(i), Some(j)) if j > i => model[i + 2..j].trim().to_string(),
            _ => model.to_string(),
        }
    }
}

/// Which number of a parameter's model its curve follows, as extrap names it
/// (`134217728*i  [group 0 leaf 1 value = 1048576*n]` -> `group 0 leaf 1 value`; a rank
/// group's size, `group 1 ranks: count of run 0`, is not the parameter's value); `None` where
/// the model names none.
fn plotted(model: &str) -> Option<&str> {
    let inner = model.get(model.rfind('[')? + 1..model.rfind(']')?)?;
    let last = inner.rsplit("; ").next()?;
    last.rfind(" = ").map(|i| last[..i].trim())
}

/// The nanosecond coefficients of a timing term (`1.0914e3`, `-2.6575e2*log2(n)`) as times
/// with units, three significant digits (`1.09us`, `-266ns*log2(n)`).
fn time_coefficients(term: &str) -> String {
    term.split('*')
        .map(|t| match t.parse::<f64>() {
            Ok(v) if t.contains('e') => {
                let sign = if v < 0.0 { "-" } else { "" };
                let a = v.abs();
                let (x, u) = if a >= 1e9 {
                    (a / 1e9, "s")
                } else if a >= 1e6 {
                    (a / 1e6, "ms")
                } else if a >= 1e3 {
                    (a / 1e3, "us")
                } else {
                    (a, "ns")
                };
                let d = if x >= 100.0 {
                    0
                } else if x >= 10.0 {
                    1
                } else {
                    2
                };
                format!("{sign}{x:.d$}{u}")
            }
            _ => t.to_string(),
        })
        .collect::<Vec<_>>()
        .join("*")
}

/// A model sampled by extrap at increasing rank counts, read at `n` by linear interpolation
/// between neighbouring samples (the samples are dense: every rank count up to 64 points).
fn sampled(samples: &[(i64, f64)], n: f64) -> Option<f64> {
    let i = samples.partition_point(|s| (s.0 as f64) < n);
    match (samples.get(i.wrapping_sub(1)), samples.get(i)) {
        (_, Some(b)) if b.0 as f64 == n => Some(b.1),
        (Some(a), Some(b)) => {
            let t = (n - a.0 as f64) / (b.0 - a.0) as f64;
            Some(a.1 + t * (b.1 - a.1))
        }
        _ => None,
    }
}

/// Everything the extrapolation section shows.
#[derive(Debug)]
pub struct Extrapolation {
    /// The rank count of the extrapolated trace.
    pub target: u32,
    /// The extrapolated trace's label.
    pub out: String,
    /// The input scales, ascending.
    pub scales: Vec<u32>,
    /// Quantities from the model source, then the measured totals.
    pub quantities: Vec<Quantity>,
    /// Why the model source gave nothing, if it did not.
    pub missing: Option<String>,
    /// The source's name.
    pub source: String,
    /// The extrapolation's explanation, or why there is none.
    pub explain: Result<Vec<ExplainRow>, String>,
}

/// Builds the section from the analyses of the inputs and of the extrapolated trace.
pub fn build(
    inputs: &[&TraceAnalysis],
    out: &TraceAnalysis,
    source: &dyn ModelSource,
) -> Result<Extrapolation, ReportError> {
    let mut sorted: Vec<&TraceAnalysis> = inputs.to_vec();
    sorted.sort_by_key(|a| a.header.nranks);
    for w in sorted.windows(2) {
        if w[0].header.nranks == w[1].header.nranks {
            return Err(ReportError::SameScale {
                first: PathBuf::from(&w[0].label),
                second: PathBuf::from(&w[1].label),
                ranks: w[0].header.nranks,
            });
        }
    }
    let (mut quantities, missing) = match source.quantities(&sorted, out) {
        Ok(q) => (q, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    // The source's wall time carries its model: the measured one would be the same points
    // drawn a second time.
    let has_wall = quantities.iter().any(|q| q.name.starts_with("wall time"));
    quantities.extend(
        totals(&sorted, out)
            .into_iter()
            .filter(|q| !(has_wall && q.name.starts_with("wall time"))),
    );
    Ok(Extrapolation {
        target: out.header.nranks,
        out: out.label.clone(),
        scales: sorted.iter().map(|a| a.header.nranks).collect(),
        quantities,
        missing,
        source: source.name(),
        explain: source.explain(out),
    })
}

/// Calls, bytes and time per op, and wall time, of every trace.
fn totals(inputs: &[&TraceAnalysis], out: &TraceAnalysis) -> Vec<Quantity> {
    let keys: BTreeSet<_> = inputs
        .iter()
        .chain(std::iter::once(&out))
        .flat_map(|a| a.summary.ops.keys().copied())
        .collect();
    let mut q = Vec::new();
    let point = |a: &TraceAnalysis, f: &dyn Fn(&TraceAnalysis) -> f64| (a.header.nranks, f(a));
    // Wall time is only known for traced runs (0 means the producer did not record it).
    if inputs.iter().all(|a| a.header.wall_ns > 0) {
        q.push(Quantity {
            // "wall time 1.9 s [1.6, 2.3]": an extrapolated trace's wall time is predicted.
            name: match &out.header.prediction {
                Some(p) => format!("wall time, predicted {}", p.wall),
                None => "wall time".into(),
            },
            kind: Kind::Timing,
            unit: Unit::Nanos,
            points: inputs
                .iter()
                .map(|a| point(a, &|a| a.header.wall_ns as f64))
                .collect(),
            model: None,
            op: None,
            target: (out.header.wall_ns > 0).then_some(out.header.wall_ns as f64),
        });
    }
    let mut by_kind: BTreeMap<u8, Vec<Quantity>> = BTreeMap::new();
    for key in keys {
        let get = |a: &TraceAnalysis| a.summary.ops.get(&key).cloned().unwrap_or_default();
        let name = key.1.name();
        by_kind.entry(0).or_default().push(Quantity {
            name: format!("{name} calls"),
            kind: Kind::Total,
            unit: Unit::Count,
            points: inputs
                .iter()
                .map(|a| point(a, &|a| get(a).count as f64))
                .collect(),
            model: None,
            op: Some(key.1),
            target: Some(get(out).count as f64),
        });
        if inputs
            .iter()
            .chain(std::iter::once(&out))
            .any(|a| get(a).bytes > 0)
        {
            by_kind.entry(1).or_default().push(Quantity {
                name: format!("{name} bytes"),
                kind: Kind::Total,
                unit: Unit::Bytes,
                points: inputs
                    .iter()
                    .map(|a| point(a, &|a| get(a).bytes as f64))
                    .collect(),
                model: None,
                op: Some(key.1),
                target: Some(get(out).bytes as f64),
            });
        }
        // A time summed over ranks grows with the rank count whatever the program does: the
        // mean per rank is what a rank waits.
        let per_rank = |a: &TraceAnalysis| get(a).time_ns / f64::from(a.header.nranks.max(1));
        by_kind.entry(2).or_default().push(Quantity {
            name: format!("{name} time per rank (mean)"),
            kind: Kind::Timing,
            unit: Unit::Nanos,
            points: inputs.iter().map(|a| point(a, &per_rank)).collect(),
            model: None,
            op: Some(key.1),
            target: Some(per_rank(out)),
        });
    }
    q.extend(by_kind.into_values().flatten());
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Limits, analyze};
    use rsd::{Header, TraceFile};

    fn trace(n: u32) -> TraceAnalysis {
        let tf = TraceFile {
            header: Header::new(n),
            trace: rsd_view::synth::spmd(n, 4),
        };
        analyze(&format!("s{n}"), &tf, &Limits::default())
    }

    #[test]
    fn totals_are_measured_and_vary_with_scale() {
        let (a, b, c, out) = (trace(4), trace(8), trace(2), trace(16));
        let x = build(&[&a, &b, &c], &out, &NoModels).unwrap();
        assert_eq!(x.scales, vec![2, 4, 8]);
        assert_eq!(x.target, 16);
        assert!(x.missing.is_some());
        let pw = x
            .quantities
            .iter()
            .find(|q| q.name == "pwrite calls")
            .unwrap();
        // 4 pwrites per rank in the file-per-process loop, and the 3 that rank 0 makes inside
        // the collective writes it aggregates.
        assert_eq!(pw.points, vec![(2, 11.0), (4, 19.0), (8, 35.0)]);
        assert_eq!(pw.target, Some(67.0));
        assert!(pw.varies() && pw.model.is_none());
    }

    #[test]
    fn models_and_events_read_as_people_write_them() {
        assert_eq!(
            formula(
                "3.3409e0*n*log2(n) + 1.0914e3 (n log n, held-out error 1.5%); at target 4.1us",
                true
            ),
            "3.34ns*n*log2(n) + 1.09us (n log n, held-out error 1.5%)"
        );
        assert_eq!(
            formula("134217728*i  [group 0 leaf 1 value = 1048576*n]", false),
            "1048576*n"
        );
        assert_eq!(
            plotted("134217728*i  [group 0 leaf 1 value = 1048576*n]"),
            Some("group 0 leaf 1 value")
        );
        assert_eq!(
            plotted("[0: 1; 1..: 0]  [group 1 ranks: count of run 0 = n-1]"),
            Some("group 1 ranks: count of run 0")
        );
        assert_eq!(plotted("1048576*rank"), None);
        let mut n = EventNames::default();
        assert_eq!(
            n.human(
                "MPI_File_open (call site 0x51570005, path out/shared.dat)",
                "gap mean"
            ),
            (
                Some(Op::FileOpen),
                "MPI_File_open out/shared.dat".to_string()
            )
        );
        assert_eq!(n.human("pwrite (call site 0x3)", "gap mean").1, "pwrite");
        assert_eq!(n.human("pwrite (call site 0x7)", "gap mean").1, "pwrite #2");
        assert_eq!(n.human("pwrite (call site 0x3)", "count").1, "pwrite");
        assert_eq!(
            n.human("pwrite (call site 0x3)", "gap mean").1,
            "pwrite (rank group 2)"
        );
        assert_eq!(n.human("run", "wall time"), (None, String::new()));
    }

    #[test]
    fn same_scale_twice_is_refused() {
        let (a, b, out) = (trace(4), trace(4), trace(16));
        let e = build(&[&a, &b], &out, &NoModels).unwrap_err();
        assert!(e.to_string().contains("both have 4 ranks"), "{e}");
    }
}
