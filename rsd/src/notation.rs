//! How the model's values, timing, events and nodes are written as text: the one renderer,
//! which `Display` of [`Elastic`] and [`RankFn`] (`extrap --explain`, error messages), the
//! prefix-sum and end-of-file models' own text and every view of a trace call.
//!
//! Values are printed as functions of `rank` and of the enclosing loops' indices, named `i`
//! (outermost), `j`, `k`, ... as in [`crate::value::INDEX_NAMES`]: `offset = 1048576*rank +
//! 65536*i`, the constant term last, a rank term never parenthesised inside a sum.

use crate::timing::{Stats, Timing, fmt_ns};
use crate::trace::{Event, Node, NodeKind};
use crate::value::{Elastic, RankFn, Val, index_name};
use std::fmt::Write as _;

/// Indentation per nesting level.
pub const INDENT: &str = "  ";
/// Explicit value vectors longer than this print their first few elements only; `--json` has
/// them all.
const MAX_ITEMS: usize = 8;

/// `a*x`, with `x` and `-x` for unit coefficients; `None` for a zero coefficient.
fn coef(a: i64, x: &str) -> Option<String> {
    match a {
        0 => None,
        1 => Some(x.to_string()),
        -1 => Some(format!("-{x}")),
        _ => Some(format!("{a}*{x}")),
    }
}

/// The rank-dependent term of a rank function and its constant.
fn rank_term(f: &RankFn) -> (Option<String>, i64) {
    match *f {
        RankFn::Const(c) => (None, c),
        RankFn::Affine { a, b } => (coef(a, "rank"), b),
        RankFn::Div { a, k, b } => (coef(a, &format!("(rank/{k})")), b),
        RankFn::Mod { a, k, b } => (coef(a, &format!("(rank%{k})")), b),
        RankFn::Shift { w, p, o: 0 } => (Some(format!("((rank%{p}+{w})%{p} - rank%{p})")), 0),
        RankFn::Shift { w, p, o } => (
            Some(format!("(((rank+{o})%{p}+{w})%{p} - (rank+{o})%{p})")),
            0,
        ),
        RankFn::Step { a, k, b, t, d } => {
            let index = if k == 1 {
                "rank".to_string()
            } else {
                format!("(rank/{k})")
            };
            let jump = coef(d, &format!("[rank>={t}]"));
            let term = match (coef(a, &index), jump) {
                (Some(x), Some(j)) if j.starts_with('-') => Some(format!("{x} - {}", &j[1..])),
                (Some(x), Some(j)) => Some(format!("{x} + {j}")),
                (x, j) => x.or(j),
            };
            (term, b)
        }
    }
}

/// Joins terms with ` + ` / ` - ` and appends the constant last (alone if there is no term).
fn join_terms(terms: &[String], constant: i64) -> String {
    let mut s = String::new();
    for t in terms {
        if s.is_empty() {
            s.push_str(t);
        } else if let Some(rest) = t.strip_prefix('-') {
            let _ = write!(s, " - {rest}");
        } else {
            let _ = write!(s, " + {t}");
        }
    }
    if s.is_empty() {
        return constant.to_string();
    }
    match constant {
        0 => {}
        c if c > 0 => {
            let _ = write!(s, " + {c}");
        }
        c => {
            let _ = write!(s, " - {}", c.unsigned_abs());
        }
    }
    s
}

/// Renders a value over ranks and loop indices; `depth0` is the index of the first loop it
/// ranges over (Seq/Cycle elements range over the loops inside).
pub fn render_val(v: &Val<RankFn>, depth0: usize) -> String {
    match v {
        Val::Const(f) => {
            let (t, c) = rank_term(f);
            join_terms(&t.into_iter().collect::<Vec<_>>(), c)
        }
        Val::Lin { base, strides } => {
            let (bt, c) = rank_term(base);
            let mut terms: Vec<String> = bt.into_iter().collect();
            for (d, st) in strides.iter().enumerate() {
                let name = index_name(depth0 + d);
                match rank_term(st) {
                    (None, k) => terms.extend(coef(k, &name)),
                    // A stride that depends on the rank: the whole stride times the index.
                    (Some(_), _) => terms.push(format!("({})*{name}", render_rankfn(st))),
                }
            }
            join_terms(&terms, c)
        }
        Val::Seq(items) | Val::Cycle(items) => {
            let kind = if matches!(v, Val::Cycle(_)) {
                "cycle"
            } else {
                ""
            };
            let shown: Vec<String> = items
                .iter()
                .take(if items.len() > MAX_ITEMS {
                    4
                } else {
                    MAX_ITEMS
                })
                .map(|e| render_val(e, depth0 + 1))
                .collect();
            let name = index_name(depth0);
            if items.len() > MAX_ITEMS {
                format!(
                    "{kind}[{}, ... {} values][{name}]",
                    shown.join(", "),
                    items.len()
                )
            } else {
                format!("{kind}[{}][{name}]", shown.join(", "))
            }
        }
        Val::Approx(a) => render_summary(a),
        // Without its event the summed parameter has no name here; `render_event` names it.
        Val::Exscan(x) => crate::prefix::render(x, &format!("#{}", x.of), depth0),
        Val::FileEnd(x) => {
            crate::layout::render(x, x.of.map(|k| format!("#{k}")).as_deref(), false, depth0)
        }
        Val::Run(k) => format!("run({})", k.name()),
    }
}

/// A summarised value, marked approximate by its leading `~`: `~{n 3600, mean 812.4, sd 210.3,
/// min 12 (rank 3), max 1400 (rank 7), log4 bins 2:10 3:900 ...}`.
pub fn render_summary(a: &crate::approx::Summary) -> String {
    let s = &a.stats;
    let bins: Vec<String> = s
        .bins
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, c)| format!("{b}:{c}"))
        .collect();
    format!(
        "~{{approx n {}, mean {:.1}, sd {:.1}, min {} (rank {}), max {} (rank {}), log4 bins {}}}",
        s.count,
        s.mean,
        s.variance().sqrt(),
        s.min,
        s.min_rank,
        s.max,
        s.max_rank,
        bins.join(" ")
    )
}

/// Renders a rank function: `2*rank + 3`, `(rank/4) - 1`, `7`.
pub fn render_rankfn(f: &RankFn) -> String {
    let (t, c) = rank_term(f);
    join_terms(&t.into_iter().collect::<Vec<_>>(), c)
}

/// Renders an elastic value: one expression when all ranks share it, else
/// `{0: 3; 1-7: 4}` (rank set, then the value of those ranks).
pub fn render_elastic(e: &Elastic) -> String {
    match e.groups.as_slice() {
        [] => "none".to_string(),
        [g] => render_val(&g.val, 0),
        gs => {
            let parts: Vec<String> = gs
                .iter()
                .map(|g| format!("{}: {}", g.ranks, render_val(&g.val, 0)))
                .collect();
            format!("{{{}}}", parts.join("; "))
        }
    }
}

/// `mean 12.1us [min 10.0 max 40.2]`: min and max in the unit [`fmt_ns`] picked for the mean.
pub fn render_stats(s: &Stats) -> String {
    if s.count == 0 {
        return "no samples".to_string();
    }
    let mean = fmt_ns(s.mean);
    let unit_start = mean
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(mean.len());
    let (num, unit) = mean.split_at(unit_start);
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    let div = match unit {
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => 1.0,
    };
    format!(
        "mean {mean} [min {:.decimals$} max {:.decimals$}]",
        s.min as f64 / div,
        s.max as f64 / div
    )
}

/// Timing of an event: call count, duration and the compute gap before it; in an
/// extrapolated trace each mean's prediction interval follows it.
pub fn render_timing(t: &Timing) -> String {
    let mut s = render_timing_stats(t);
    // Off-CPU time measured in the gaps (format minor 11), as means per call.
    if let Some(w) = t.waits
        && t.gap.count > 0
    {
        let n = t.gap.count as f64;
        s += &format!(
            " (off CPU: blocked {}, waiting for a core {})",
            crate::timing::fmt_ns(w.blocked_ns as f64 / n),
            crate::timing::fmt_ns(w.runq_ns as f64 / n)
        );
    }
    s
}

fn render_timing_stats(t: &Timing) -> String {
    match &t.interval {
        None => format!(
            "calls {}, dur {}, gap {}",
            t.dur.count,
            render_stats(&t.dur),
            render_stats(&t.gap)
        ),
        Some(i) => format!(
            "calls {}, dur {} predicted {}, gap {} predicted {}",
            t.dur.count,
            render_stats(&t.dur),
            i.dur,
            render_stats(&t.gap),
            i.gap
        ),
    }
}

/// The path of an event: template plus the values of its fields, `out/file_%d [rank]`.
fn render_path(e: &Event) -> Option<String> {
    let t = crate::op::show_path(e.op, &e.path.as_ref()?.0);
    let nf = e.nfields();
    if nf == 0 {
        return Some(t);
    }
    let fields: Vec<String> = e.params[e.params.len() - nf..]
        .iter()
        .map(render_elastic)
        .collect();
    Some(format!("{t} [{}]", fields.join(", ")))
}

/// An event's parameters (fields excluded) as (name, shown value) pairs: the one rendering
/// `show` joins on a line and the Parquet export stores as a JSON object.
pub fn render_params(e: &Event) -> Vec<(String, String)> {
    let nf = e.nfields();
    let n = e.params.len();
    e.params[..n - nf]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let shown = match v.groups.as_slice() {
                // The prefix-sum model names the parameter it sums: `exscan(count)`.
                [g] => match &g.val {
                    Val::Exscan(x) => {
                        crate::prefix::render(x, &crate::prefix::summed_name(x, e.op, n, nf), 0)
                    }
                    Val::FileEnd(x) => crate::layout::render(
                        x,
                        x.of.map(|k| e.op.param_name(k as usize, n, nf)).as_deref(),
                        crate::layout::sets_size(e.op),
                        0,
                    ),
                    _ => render_elastic(v),
                },
                _ => render_elastic(v),
            };
            (e.op.param_name(i, n, nf), shown)
        })
        .collect()
}

/// One event as `op path  name = value, ...  | timing`.
pub fn render_event(e: &Event) -> String {
    let mut s = e.op.name().to_string();
    if let Some(p) = render_path(e) {
        let _ = write!(s, " {p}");
    }
    let params: Vec<String> = render_params(e)
        .into_iter()
        .map(|(name, shown)| format!("{name} = {shown}"))
        .collect();
    if !params.is_empty() {
        let _ = write!(s, "  {}", params.join(", "));
    }
    let _ = write!(s, "  | {}", render_timing(&e.timing));
    s
}

/// Writes nodes one per line, nested ones indented. A node's rank set is shown at the top
/// level and wherever it differs from its parent's, so uniform SPMD bodies stay uncluttered.
pub fn render_nodes(
    nodes: &[Node],
    parent: Option<&crate::ranks::RankSet>,
    depth: usize,
    out: &mut String,
) {
    for n in nodes {
        let pad = INDENT.repeat(depth);
        let ranks = match parent {
            Some(p) if *p == n.ranks => String::new(),
            _ => format!("ranks {}  ", n.ranks),
        };
        match &n.kind {
            NodeKind::Event(e) => {
                let _ = writeln!(out, "{pad}{ranks}{}", render_event(e));
                render_nodes(&e.children, Some(&n.ranks), depth + 1, out);
            }
            NodeKind::Loop(l) => {
                let _ = writeln!(out, "{pad}{ranks}loop x{} {{", render_elastic(&l.iters));
                render_nodes(&l.body, Some(&n.ranks), depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::RankSet;
    use crate::value::Group;

    fn one(val: Val<RankFn>) -> Elastic {
        Elastic {
            groups: vec![Group {
                ranks: RankSet::all(64),
                val,
            }],
        }
    }

    #[test]
    fn mixed_forms_read_naturally() {
        let v = one(Val::Lin {
            base: RankFn::Affine { a: 1048576, b: 0 },
            strides: vec![RankFn::Const(65536)],
        });
        assert_eq!(render_elastic(&v), "1048576*rank + 65536*i");
        let v = one(Val::Lin {
            base: RankFn::Affine { a: 1048576, b: 5 },
            strides: vec![RankFn::Const(0), RankFn::Const(-8)],
        });
        assert_eq!(render_elastic(&v), "1048576*rank - 8*j + 5");
        let v = one(Val::Lin {
            base: RankFn::Const(0),
            strides: vec![RankFn::Affine { a: 2, b: 1 }],
        });
        assert_eq!(render_elastic(&v), "(2*rank + 1)*i");
        let v = one(Val::Const(RankFn::Mod { a: 1, k: 4, b: -3 }));
        assert_eq!(render_elastic(&v), "(rank%4) - 3");
        let v = one(Val::Cycle(vec![
            Val::Const(RankFn::Const(1)),
            Val::Lin {
                base: RankFn::Const(0),
                strides: vec![RankFn::Const(4)],
            },
        ]));
        assert_eq!(render_elastic(&v), "cycle[1, 4*j][i]");
    }

    #[test]
    fn groups_and_iteration_counts() {
        let e = Elastic {
            groups: vec![
                Group {
                    ranks: RankSet::single(0),
                    val: Val::Const(RankFn::Const(3)),
                },
                Group {
                    ranks: RankSet::from_sorted(&[1, 2, 3, 4, 5, 6, 7]),
                    val: Val::Const(RankFn::Const(4)),
                },
            ],
        };
        assert_eq!(render_elastic(&e), "{0: 3; 1-7: 4}");
    }

    #[test]
    fn display_reads_as_show_does() {
        // `extrap --explain` prints values through Display: they must read as in `iotrex show`.
        // Display had a renderer of its own that gave `(1048576*rank + 5) + -8*j` here.
        let v = one(Val::Lin {
            base: RankFn::Affine { a: 1048576, b: 5 },
            strides: vec![RankFn::Const(0), RankFn::Const(-8)],
        });
        assert_eq!(v.to_string(), "1048576*rank - 8*j + 5");
        assert_eq!(
            RankFn::Div { a: -1, k: 4, b: 2 }.to_string(),
            "-(rank/4) + 2"
        );
        // Beyond the named indices, the same fallback name everywhere.
        let deep = one(Val::Lin {
            base: RankFn::Const(0),
            strides: vec![RankFn::Const(0); 8]
                .into_iter()
                .chain([RankFn::Const(3)])
                .collect(),
        });
        assert_eq!(deep.to_string(), "3*i8");
        assert_eq!(render_elastic(&deep), "3*i8");
    }

    #[test]
    fn timing_uses_the_mean_unit() {
        let mut s = Stats::default();
        for (ns, r) in [(10_000, 0), (40_200, 1), (12_100, 2), (12_100, 3)] {
            s.add(ns, r);
        }
        // mean (10000 + 40200 + 12100 + 12100) / 4 = 18600
        assert_eq!(render_stats(&s), "mean 18.6us [min 10.0 max 40.2]");
        assert_eq!(render_stats(&Stats::default()), "no samples");
    }
}
