//! What a refusal is about, as data: where in the trace ([`Site`]), which quantity
//! ([`Quantity`]) and why ([`Reason`]). Code that acts on a refusal matches these; text exists
//! only in their `Display`, which writes the words the messages have always had. With
//! `Serialize`, `iotrex --json extrap` gives a refusal's fields to scripts.

use rsd::Op;
use rsd::trace::{Node, NodeKind};
use serde::{Serialize, Serializer};
use std::fmt;

/// An op as scripts know it: its name as `iotrex show` prints it (`pwrite`, `MPI_Send`).
fn op_name<S: Serializer>(op: &Op, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(op.name())
}

fn op_name_opt<S: Serializer>(op: &Option<Op>, s: S) -> Result<S::Ok, S::Error> {
    match op {
        Some(op) => s.serialize_str(op.name()),
        None => s.serialize_none(),
    }
}

/// A call site as `iotrex show` prints it (`0x51570001`): a 64-bit signature is no number a
/// JSON reader keeps exact.
fn hex<S: Serializer>(sig: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{sig:#x}"))
}

/// Where in the trace a refused quantity is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Site {
    /// A traced call: its op, call site and path template.
    Event {
        /// The op.
        #[serde(serialize_with = "op_name")]
        op: Op,
        /// The call site's signature.
        #[serde(serialize_with = "hex")]
        sig: u64,
        /// The path template, for a call that names a file.
        path: Option<String>,
    },
    /// A loop, known by its first node (`None`: a loop with an empty body).
    Loop {
        /// The loop body's first node.
        first: Option<Box<Site>>,
    },
    /// What a library model writes at the target rather than a call of the inputs (HDF5's
    /// dataset storage), with the op it writes, if one.
    Model {
        /// The op the model writes.
        #[serde(serialize_with = "op_name_opt")]
        op: Option<Op>,
        /// What of the library it is.
        what: &'static str,
    },
}

impl Site {
    /// The site of `n`: an event's op, call site and path; a loop by its first node.
    pub fn of(n: &Node) -> Site {
        match &n.kind {
            NodeKind::Event(e) => Site::Event {
                op: e.op,
                sig: e.sig,
                path: e.path.as_ref().map(|p| p.0.clone()),
            },
            NodeKind::Loop(l) => Site::Loop {
                first: l.body.first().map(|b| Box::new(Site::of(b))),
            },
        }
    }

    /// A call of `op` at call site `sig`, with no path.
    pub fn call(op: Op, sig: u64) -> Site {
        Site::Event {
            op,
            sig,
            path: None,
        }
    }

    /// The op of the call this site is, or a loop's first call's.
    pub fn op(&self) -> Option<Op> {
        match self {
            Site::Event { op, .. } => Some(*op),
            Site::Loop { first } => first.as_ref().and_then(|f| f.op()),
            Site::Model { op, .. } => *op,
        }
    }

    /// The op of the call this site is itself (not a loop's).
    pub fn call_op(&self) -> Option<Op> {
        match self {
            Site::Event { op, .. } => Some(*op),
            _ => None,
        }
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Event { op, sig, path } => {
                write!(f, "{} (call site {sig:#x}", op.name())?;
                if let Some(p) = path {
                    write!(f, ", path {p}")?;
                }
                f.write_str(")")
            }
            Site::Loop { first: Some(b) } => write!(f, "loop around {b}"),
            Site::Loop { first: None } => f.write_str("empty loop"),
            Site::Model { op: Some(op), what } => write!(f, "{} ({what})", op.name()),
            Site::Model { op: None, what } => f.write_str(what),
        }
    }
}

/// Which quantity of a site was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Quantity {
    /// A fixed parameter of the op (`offset`, `ret`).
    Param {
        /// Its name in the op's table.
        name: &'static str,
    },
    /// An element of one of the op's arrays (`count[0]`).
    Element {
        /// The array ([`Op::arrays`]).
        array: &'static str,
        /// The element.
        index: usize,
    },
    /// A field of the call's path template (`path[0]`).
    PathField {
        /// The field.
        index: usize,
    },
    /// A parameter past the op's table and arrays (`extra[0]`).
    Extra {
        /// Its index past the table.
        index: usize,
    },
    /// The ranks that make the call or run the loop.
    Ranks,
    /// A loop's iteration count.
    LoopCount,
    /// A parameter of a call nested in the site's (`pwrite offset`).
    Nested {
        /// The nested call's op.
        #[serde(serialize_with = "op_name")]
        op: Op,
        /// Its parameter.
        param: Box<Quantity>,
    },
    /// What a library model fits or writes at the target (`dealt writes`, `file address`).
    Model {
        /// What it is.
        name: &'static str,
    },
}

impl Quantity {
    /// Parameter `idx` of an event of `op` with `nparams` parameters and `nfields` path
    /// fields, as [`Op::param_name`] names it.
    pub fn of_param(op: Op, idx: usize, nparams: usize, nfields: usize) -> Quantity {
        let schema = op.schema();
        if let Some(&name) = schema.get(idx) {
            return Quantity::Param { name };
        }
        if idx >= nparams.saturating_sub(nfields) {
            return Quantity::PathField {
                index: idx - (nparams - nfields),
            };
        }
        match op.array_element(idx, nparams, nfields) {
            Some((array, index)) => Quantity::Element { array, index },
            None => Quantity::Extra {
                index: idx - schema.len(),
            },
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quantity::Param { name } | Quantity::Model { name } => f.write_str(name),
            Quantity::Element { array, index } => write!(f, "{array}[{index}]"),
            Quantity::PathField { index } => write!(f, "path[{index}]"),
            Quantity::Extra { index } => write!(f, "extra[{index}]"),
            Quantity::Ranks => f.write_str("ranks"),
            Quantity::LoopCount => f.write_str("loop count"),
            Quantity::Nested { op, param } => write!(f, "{} {param}", op.name()),
        }
    }
}

/// One model's value at the target, in a disagreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guess {
    /// The model, in its readable form.
    pub model: String,
    /// What it gives at the target.
    pub value: i64,
}

impl Guess {
    /// A fitted model and its value at the target.
    pub(crate) fn of(fitted: &(models::exact::Fitted<'_>, i64)) -> Guess {
        Guess {
            model: fitted.0.describe(),
            value: fitted.1,
        }
    }
}

/// What of a quantity's form differs, so that its values are not fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A rank set's number of PRSD runs, between the scales.
    PrsdRuns,
    /// The number of dimensions of one PRSD run.
    RunDims {
        /// The run.
        run: usize,
    },
    /// The form of a rank function (constant, affine, block, ...), between the scales.
    RankFnForm,
    /// A value's number of rank groups, between the scales.
    Groups,
    /// A value's shape over the loop iterations, between the scales.
    IterationsAcrossScales,
    /// A value's shape over the loop iterations, between the ranks.
    IterationsAcrossRanks,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::PrsdRuns => f.write_str("the number of PRSD runs differs between scales"),
            Shape::RunDims { run } => write!(f, "run {run} has a different number of dimensions"),
            Shape::RankFnForm => {
                f.write_str("the form of the rank function differs between scales")
            }
            Shape::Groups => f.write_str("the number of rank groups differs between scales"),
            Shape::IterationsAcrossScales => {
                f.write_str("the value's shape over the loop iterations differs between scales")
            }
            Shape::IterationsAcrossRanks => {
                f.write_str("the value's shape over the loop iterations differs between ranks")
            }
        }
    }
}

/// A fitted rank set or rank function that means nothing at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unusable {
    /// A run's count or stride is out of range.
    RunCountStride {
        /// The run.
        run: usize,
        /// Its fitted count.
        count: i64,
        /// Its fitted stride.
        stride: i64,
        /// The target rank count.
        target: i64,
    },
    /// A run has no ranks.
    RunEmpty {
        /// The run.
        run: usize,
        /// The target rank count.
        target: i64,
    },
    /// A run starts at no rank.
    RunStart {
        /// The run.
        run: usize,
        /// Its fitted first rank.
        start: i64,
        /// The target rank count.
        target: i64,
    },
    /// The rank set names ranks past the last.
    Beyond {
        /// The last rank at the target.
        last: i64,
    },
    /// The fitted runs name some rank twice.
    Overlap {
        /// The target rank count.
        target: i64,
    },
    /// A cyclic shift outside its period.
    Shift {
        /// The fitted shift.
        shift: i64,
        /// The fitted phase.
        phase: i64,
        /// The fitted period.
        period: i64,
        /// The target rank count.
        target: i64,
    },
    /// A block or period of no ranks.
    Period {
        /// The fitted period.
        period: i64,
        /// The target rank count.
        target: i64,
    },
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Unusable::RunCountStride {
                run,
                count,
                stride,
                target,
            } => write!(
                f,
                "run {run} evaluates to count {count}, stride {stride} at {target} ranks"
            ),
            Unusable::RunEmpty { run, target } => {
                write!(f, "run {run} would be empty at {target} ranks")
            }
            Unusable::RunStart { run, start, target } => {
                write!(f, "run {run} starts at rank {start} at {target} ranks")
            }
            Unusable::Beyond { last } => {
                write!(f, "the fitted rank set reaches beyond rank {last}")
            }
            Unusable::Overlap { target } => {
                write!(f, "the fitted runs overlap at {target} ranks")
            }
            Unusable::Shift {
                shift,
                phase,
                period,
                target,
            } => write!(
                f,
                "the cyclic shift evaluates to {shift} with phase {phase} in a period of \
                 {period} at {target} ranks"
            ),
            Unusable::Period { period, target } => {
                write!(f, "the period evaluates to {period} at {target} ranks")
            }
        }
    }
}

/// A parameter whose values follow no pattern (explicit value lists) in some inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Irregular {
    /// The op.
    #[serde(serialize_with = "op_name")]
    pub op: Op,
    /// The parameter.
    pub param: Quantity,
    /// The inputs' rank counts where it has no pattern.
    pub ranks: Vec<u32>,
}

impl fmt::Display for Irregular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns: Vec<String> = self.ranks.iter().map(u32::to_string).collect();
        write!(
            f,
            "{} {} (at {} ranks)",
            self.op.name(),
            self.param,
            ns.join(", ")
        )
    }
}

/// Why a quantity was refused. `part` names the number inside the quantity that failed (a
/// rank group's, a run's), as the messages say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// No exact model of n reproduces the values.
    FitsNoModel {
        /// The number.
        part: String,
    },
    /// Two exact models of n reproduce the values and differ at the target.
    ModelsDisagree {
        /// The number.
        part: String,
        /// The target rank count.
        target: i64,
        /// One model and its value there.
        first: Guess,
        /// Another.
        second: Guess,
    },
    /// No model of (n, rank) reproduces the values.
    PerRankFitsNoModel,
    /// Two models of (n, rank) reproduce the values and differ at the target.
    PerRankModelsDisagree {
        /// The target rank count.
        target: i64,
        /// One model.
        first: String,
        /// Another.
        second: String,
    },
    /// Why the per-rank fit failed too, after why the fit by groups did.
    PerRank {
        /// Its reason.
        reason: Box<Reason>,
    },
    /// The quantity's form differs, so its values are not fitted.
    ShapeDiffers {
        /// The number whose form differs, when not the whole quantity.
        part: Option<String>,
        /// What differs.
        shape: Shape,
    },
    /// The fit gives something meaningless at the target.
    Unusable {
        /// The number.
        part: String,
        /// What is wrong with it.
        unusable: Unusable,
    },
    /// A rank function with a jump (which only the derivation of a library's nested calls
    /// writes) is in the inputs.
    Jump {
        /// The number.
        part: String,
    },
    /// An input group has too many ranks to fit per rank.
    TooManyRanks {
        /// Its ranks.
        ranks: u64,
    },
    /// A per-rank model would list too many ranks at the target.
    TooManyTargetRanks {
        /// The ranks at the target.
        ranks: u64,
    },
    /// No rank holds a value.
    NoValue,
    /// Some scales hold a summary and others exact values.
    MixedSummaries,
    /// HDF5's chunk index splits between the inputs and the target, so the number of metadata
    /// entries is not the inputs'.
    IndexSplits {
        /// The target rank count.
        target: u32,
        /// Which dataset's chunks, and how many.
        why: String,
    },
    /// The nested calls of collective MPI-IO calls were fitted, not derived by the model of
    /// the library's collective buffering.
    NotDerived {
        /// Why not.
        why: String,
    },
    /// Parallel HDF5's dealt metadata writes were not modelled.
    NotDealt {
        /// Why not.
        why: String,
    },
    /// Parameters whose values follow no pattern: the likely reason the rest differs.
    Irregular {
        /// Them, at most a few.
        params: Vec<Irregular>,
    },
    /// A library model's reason, in its words.
    Library {
        /// The model that gave it.
        by: crate::pipeline::PassId,
        /// The model's words.
        why: String,
    },
}

impl Reason {
    /// Whether this reason, or one inside it, satisfies `f`.
    pub fn any(&self, f: &impl Fn(&Reason) -> bool) -> bool {
        f(self) || matches!(self, Reason::PerRank { reason } if reason.any(f))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::FitsNoModel { part } => write!(f, "{part} fits no exact model of n"),
            Reason::ModelsDisagree {
                part,
                target,
                first,
                second,
            } => write!(
                f,
                "{part}: models disagree at {target} ranks: {} gives {}, {} gives {}",
                first.model, first.value, second.model, second.value
            ),
            Reason::PerRankFitsNoModel => f.write_str("no per-rank model fits"),
            Reason::PerRankModelsDisagree {
                target,
                first,
                second,
            } => write!(
                f,
                "per-rank models disagree at {target} ranks: {first} and {second}"
            ),
            Reason::PerRank { reason } => write!(f, "per rank: {reason}"),
            Reason::ShapeDiffers {
                part: Some(part),
                shape,
            } => write!(f, "{part}: {shape}"),
            Reason::ShapeDiffers { part: None, shape } => write!(f, "{shape}"),
            Reason::Unusable { part, unusable } => write!(f, "{part}: {unusable}"),
            Reason::Jump { part } => write!(
                f,
                "{part}: a rank function with a jump is not fitted between scales"
            ),
            Reason::TooManyRanks { ranks } => {
                write!(f, "too many ranks to fit per rank ({ranks})")
            }
            Reason::TooManyTargetRanks { ranks } => {
                write!(f, "a per-rank model would have to list {ranks} ranks")
            }
            Reason::NoValue => f.write_str("no rank holds a value"),
            Reason::MixedSummaries => {
                f.write_str("summarised at some scales and exact (or partly exact) at others")
            }
            Reason::IndexSplits { target, why } => {
                write!(f, "the number of metadata entries at {target} ranks: {why}")
            }
            Reason::NotDerived { why } => write!(
                f,
                "the nested calls of collective MPI-IO calls are not derived: {why}"
            ),
            Reason::NotDealt { why } => write!(
                f,
                "the independent writes dealt over the ranks (HDF5's metadata flush) are not \
                 modelled: {why}"
            ),
            Reason::Irregular { params } => {
                f.write_str("parameters with no regular pattern: ")?;
                for (k, p) in params.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                Ok(())
            }
            Reason::Library { why, .. } => f.write_str(why),
        }
    }
}

/// The reasons of one refusal, the first the fit's own and then what models around it add;
/// written one after the other, `; ` between.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Reasons(pub Vec<Reason>);

impl Reasons {
    /// One reason.
    pub fn one(r: Reason) -> Reasons {
        Reasons(vec![r])
    }

    /// Whether some reason, or one inside it, satisfies `f`.
    pub fn any(&self, f: impl Fn(&Reason) -> bool) -> bool {
        self.0.iter().any(|r| r.any(&f))
    }

    /// Adds `r` unless it is there already: the library models are tried around the
    /// grouping by structure and again around the fit, and a reason is said once.
    pub fn add(&mut self, r: Reason) {
        if !self.0.contains(&r) {
            self.0.push(r);
        }
    }

    /// The reasons as they follow another sentence: each after `; `.
    pub fn after(&self) -> impl fmt::Display + '_ {
        After(self)
    }
}

impl fmt::Display for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, r) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

struct After<'a>(&'a Reasons);

impl fmt::Display for After<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.0.iter().try_for_each(|r| write!(f, "; {r}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guess(model: &str, value: i64) -> Guess {
        Guess {
            model: model.into(),
            value,
        }
    }

    /// Each reason writes the words its refusal had when it was text.
    #[test]
    fn reasons_write_the_old_text() {
        let part = || "group 0 ranks: count of run 0 dim 0".to_string();
        let cases: Vec<(Reason, String)> = vec![
            (
                Reason::FitsNoModel { part: part() },
                format!("{} fits no exact model of n", part()),
            ),
            (
                Reason::ModelsDisagree {
                    part: part(),
                    target: 7,
                    first: guess("960/n", 137),
                    second: guess("floor(960/n)", 138),
                },
                format!(
                    "{}: models disagree at 7 ranks: 960/n gives 137, floor(960/n) gives 138",
                    part()
                ),
            ),
            (Reason::PerRankFitsNoModel, "no per-rank model fits".into()),
            (
                Reason::PerRankModelsDisagree {
                    target: 64,
                    first: "rank*4".into(),
                    second: "rank%8".into(),
                },
                "per-rank models disagree at 64 ranks: rank*4 and rank%8".into(),
            ),
            (
                Reason::PerRank {
                    reason: Box::new(Reason::NoValue),
                },
                "per rank: no rank holds a value".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: Some("ranks".into()),
                    shape: Shape::PrsdRuns,
                },
                "ranks: the number of PRSD runs differs between scales".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: Some("ranks".into()),
                    shape: Shape::RunDims { run: 2 },
                },
                "ranks: run 2 has a different number of dimensions".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: Some("group 1".into()),
                    shape: Shape::RankFnForm,
                },
                "group 1: the form of the rank function differs between scales".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: None,
                    shape: Shape::Groups,
                },
                "the number of rank groups differs between scales".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: Some("group 0".into()),
                    shape: Shape::IterationsAcrossScales,
                },
                "group 0: the value's shape over the loop iterations differs between scales".into(),
            ),
            (
                Reason::ShapeDiffers {
                    part: None,
                    shape: Shape::IterationsAcrossRanks,
                },
                "the value's shape over the loop iterations differs between ranks".into(),
            ),
            (
                Reason::Jump {
                    part: "group 0".into(),
                },
                "group 0: a rank function with a jump is not fitted between scales".into(),
            ),
            (
                Reason::TooManyRanks { ranks: 70000 },
                "too many ranks to fit per rank (70000)".into(),
            ),
            (
                Reason::TooManyTargetRanks { ranks: 1 << 25 },
                "a per-rank model would have to list 33554432 ranks".into(),
            ),
            (Reason::NoValue, "no rank holds a value".into()),
            (
                Reason::MixedSummaries,
                "summarised at some scales and exact (or partly exact) at others".into(),
            ),
            (
                Reason::IndexSplits {
                    target: 64,
                    why: "d has 80 chunks".into(),
                },
                "the number of metadata entries at 64 ranks: d has 80 chunks".into(),
            ),
            (
                Reason::NotDerived {
                    why: "no config".into(),
                },
                "the nested calls of collective MPI-IO calls are not derived: no config".into(),
            ),
            (
                Reason::NotDealt {
                    why: "one entry".into(),
                },
                "the independent writes dealt over the ranks (HDF5's metadata flush) are not \
                 modelled: one entry"
                    .into(),
            ),
            (
                Reason::Library {
                    by: crate::pipeline::PassId::DealtWrites,
                    why: "said so".into(),
                },
                "said so".into(),
            ),
        ];
        for (r, text) in cases {
            assert_eq!(r.to_string(), text, "{r:?}");
        }
    }

    /// A fitted rank set or function unusable at the target, as the refusals wrote it.
    #[test]
    fn unusable_fits_write_the_old_text() {
        let cases = [
            (
                Unusable::RunCountStride {
                    run: 1,
                    count: -2,
                    stride: 3,
                    target: 64,
                },
                "run 1 evaluates to count -2, stride 3 at 64 ranks",
            ),
            (
                Unusable::RunEmpty { run: 0, target: 64 },
                "run 0 would be empty at 64 ranks",
            ),
            (
                Unusable::RunStart {
                    run: 0,
                    start: -1,
                    target: 64,
                },
                "run 0 starts at rank -1 at 64 ranks",
            ),
            (
                Unusable::Beyond { last: 63 },
                "the fitted rank set reaches beyond rank 63",
            ),
            (
                Unusable::Overlap { target: 64 },
                "the fitted runs overlap at 64 ranks",
            ),
            (
                Unusable::Shift {
                    shift: 9,
                    phase: 1,
                    period: 8,
                    target: 64,
                },
                "the cyclic shift evaluates to 9 with phase 1 in a period of 8 at 64 ranks",
            ),
            (
                Unusable::Period {
                    period: 0,
                    target: 64,
                },
                "the period evaluates to 0 at 64 ranks",
            ),
        ];
        for (u, text) in cases {
            let r = Reason::Unusable {
                part: "ranks".into(),
                unusable: u,
            };
            assert_eq!(r.to_string(), format!("ranks: {text}"));
        }
    }

    #[test]
    fn sites_write_as_describe_node_did() {
        let call = Site::call(Op::Pwrite, 0x51570001);
        assert_eq!(call.to_string(), "pwrite (call site 0x51570001)");
        let with_path = Site::Event {
            op: Op::Open,
            sig: 0x2,
            path: Some("out/file.%08d".into()),
        };
        assert_eq!(
            with_path.to_string(),
            "open (call site 0x2, path out/file.%08d)"
        );
        let nested = Site::Loop {
            first: Some(Box::new(Site::Loop {
                first: Some(Box::new(call.clone())),
            })),
        };
        assert_eq!(
            nested.to_string(),
            "loop around loop around pwrite (call site 0x51570001)"
        );
        assert_eq!(nested.op(), Some(Op::Pwrite));
        assert_eq!(nested.call_op(), None);
        assert_eq!(Site::Loop { first: None }.to_string(), "empty loop");
        let flush = Site::Model {
            op: Some(Op::FileWriteAtAll),
            what: "HDF5's collective metadata flush",
        };
        assert_eq!(
            flush.to_string(),
            "MPI_File_write_at_all (HDF5's collective metadata flush)"
        );
    }

    /// Every parameter of every op is named as `Op::param_name` names it.
    #[test]
    fn quantities_name_parameters_as_the_op_does() {
        for &op in Op::ALL {
            let fixed = op.schema().len();
            for extra in [0, 2, 6] {
                for nfields in [0, 1, 2] {
                    let np = fixed + extra + nfields;
                    for k in 0..np {
                        assert_eq!(
                            Quantity::of_param(op, k, np, nfields).to_string(),
                            op.param_name(k, np, nfields),
                            "{} parameter {k} of {np} ({nfields} path fields)",
                            op.name()
                        );
                    }
                }
            }
        }
        assert_eq!(Quantity::LoopCount.to_string(), "loop count");
        assert_eq!(Quantity::Ranks.to_string(), "ranks");
        let nested = Quantity::Nested {
            op: Op::Pwrite,
            param: Box::new(Quantity::Param { name: "offset" }),
        };
        assert_eq!(nested.to_string(), "pwrite offset");
    }

    #[test]
    fn reasons_join_and_are_said_once() {
        let mut rs = Reasons::one(Reason::FitsNoModel {
            part: "offset".into(),
        });
        rs.add(Reason::PerRank {
            reason: Box::new(Reason::PerRankFitsNoModel),
        });
        rs.add(Reason::Library {
            by: crate::pipeline::PassId::FileSpace,
            why: "x".into(),
        });
        rs.add(Reason::Library {
            by: crate::pipeline::PassId::FileSpace,
            why: "x".into(),
        });
        assert_eq!(
            rs.to_string(),
            "offset fits no exact model of n; per rank: no per-rank model fits; x"
        );
        assert_eq!(
            rs.after().to_string(),
            "; offset fits no exact model of n; per rank: no per-rank model fits; x"
        );
        assert!(rs.any(|r| matches!(r, Reason::PerRankFitsNoModel)));
        assert!(!rs.any(|r| matches!(r, Reason::NoValue)));
        assert_eq!(Reasons::default().after().to_string(), "");
    }
}
