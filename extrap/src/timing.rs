//! The wall time of an extrapolated trace, composed as the papers behind iotrex do: the time
//! per rank of each kind (I/O, communication, collectives, compute gaps) fitted on its own,
//! plus a compensation term (the slowest rank's wall time minus the mean rank's traced time)
//! fitted on its own, so the predicted wall time is the sum of modelled parts. Its interval
//! combines the parts' in quadrature, widened to the sum's own held-out error where that is
//! larger ([`models::timing::sum_interval`]).

use crate::{Curve, Explain, Input, sample_ns};
use models::timing::{Regime, TimingChoice, choose_in, held_out_predictions, sum_interval};
use rsd::timing::{Interval, Predicted, Prediction, TimeKind, fmt_ns, time_parts};

/// A choice's prediction as stored in the trace.
pub(crate) fn predicted(c: &TimingChoice) -> Predicted {
    Predicted {
        value: c.value,
        interval: Interval {
            lo: c.interval.0,
            hi: c.interval.1,
        },
    }
}

/// The observations and the model sampled from the smallest scale to the target.
pub(crate) fn curve(ns: &[f64], ys: &[f64], c: &TimingChoice, target: i64) -> Curve {
    Curve {
        points: ns
            .iter()
            .map(|&n| n as i64)
            .zip(ys.iter().copied())
            .collect(),
        samples: sample_ns(ns[0] as i64, target)
            .into_iter()
            .map(|n| (n, c.fit.eval(n as f64).max(0.0)))
            .collect(),
    }
}

/// The wall time's parts per run (`None` when a run records no wall time).
fn parts_of(i: &Input) -> Option<Vec<(TimeKind, f64)>> {
    let h = &i.file.header;
    if h.wall_ns == 0 {
        return None;
    }
    let mut v = time_parts(&i.file.trace.nodes, h.nranks);
    let traced: f64 = v.iter().map(|(_, t)| t).sum();
    // The slowest rank's wall time is at least the mean rank's traced time, up to clock
    // granularity; a negative remainder is that granularity.
    v.push((TimeKind::Compensation, (h.wall_ns as f64 - traced).max(0.0)));
    Some(v)
}

/// The predicted wall time at `target` from every run of `groups` (runs per scale), and the
/// `--explain` lines: the noise measured across repeated runs, each part, the sum.
pub(crate) fn wall(groups: &[Vec<&Input>], target: u32) -> (Option<Prediction>, Vec<Explain>) {
    let mut explain = Vec::new();
    let mut ns = Vec::new();
    let mut rows = Vec::new();
    let mut walls = Vec::new();
    for g in groups {
        for i in g {
            let Some(p) = parts_of(i) else {
                return (None, explain);
            };
            ns.push(f64::from(i.file.header.nranks));
            rows.push(p);
            walls.push(i.file.header.wall_ns as f64);
        }
    }
    let inputs: Vec<(u32, u32)> = groups
        .iter()
        .map(|g| (g[0].file.header.nranks, g.len() as u32))
        .collect();
    if groups.iter().any(|g| g.len() > 1) {
        explain.push(Explain {
            event: "run".into(),
            quantity: "noise across repeated runs".into(),
            model: noise_text(groups),
            curve: None,
        });
    }
    let t = f64::from(target);
    let (regime, why) = regime(groups, target);
    explain.push(Explain {
        event: "run".into(),
        quantity: "cores".into(),
        model: why,
        curve: None,
    });
    let mut parts = Vec::new();
    for (k, kind) in TimeKind::ALL.iter().enumerate() {
        let ys: Vec<f64> = rows.iter().map(|r| r[k].1).collect();
        let Some(c) = choose_in(regime, &ns, &ys, 0.0, t) else {
            return (None, explain);
        };
        explain.push(Explain {
            event: "run".into(),
            quantity: format!("time per rank: {}", kind.name()),
            model: c.describe(),
            curve: Some(curve(&ns, &ys, &c, i64::from(target))),
        });
        parts.push((*kind, c));
    }
    // The total's own held-out predictions: every part's chosen family refitted without the
    // scale, summed.
    let mut held_out: Vec<(f64, f64)> = Vec::new();
    for (k, (_, c)) in parts.iter().enumerate() {
        let ys: Vec<f64> = rows.iter().map(|r| r[k].1).collect();
        let Some(h) = held_out_predictions(c.fit.model, &ns, &ys) else {
            held_out.clear();
            break;
        };
        if k == 0 {
            held_out = h;
        } else {
            for ((_, acc), (_, p)) in held_out.iter_mut().zip(h) {
                *acc += p;
            }
        }
    }
    let summed: Vec<(f64, (f64, f64))> = parts.iter().map(|(_, c)| (c.value, c.interval)).collect();
    let (value, (lo, hi)) = sum_interval(&summed, &ns, &walls, &held_out, t);
    let wall = Predicted {
        value,
        interval: Interval { lo, hi },
    };
    let list: Vec<String> = parts
        .iter()
        .map(|(k, c)| format!("{} {} ({})", k.name(), fmt_ns(c.value), c.fit.model.name()))
        .collect();
    let samples = sample_ns(ns[0] as i64, i64::from(target))
        .into_iter()
        .map(|n| {
            let y = parts
                .iter()
                .map(|(_, c)| c.fit.eval(n as f64).max(0.0))
                .sum();
            (n, y)
        })
        .collect();
    explain.push(Explain {
        event: "run".into(),
        quantity: "wall time".into(),
        model: format!(
            "{} {} at {target} ranks = the sum of the parts per rank: {}",
            fmt_ns(wall.value),
            wall.interval,
            list.join(" + ")
        ),
        curve: Some(Curve {
            points: ns.iter().map(|&n| n as i64).zip(walls).collect(),
            samples,
        }),
    });
    let prediction = Prediction {
        inputs,
        wall,
        parts: parts.iter().map(|(k, c)| (*k, predicted(c))).collect(),
    };
    (Some(prediction), explain)
}

/// Whether the runs shared cores ([`Regime::Oversubscribed`]): every input ran more ranks
/// than CPUs on some node, and so does the target on nodes like theirs (its ranks per core
/// those of the inputs scaled by the rank counts); and `--explain`'s words for it. Inputs that
/// do not record their CPUs (`Header::node_cores`) leave every family in ([`Regime::Any`]).
fn regime(groups: &[Vec<&Input>], target: u32) -> (Regime, String) {
    let mut per: Vec<(u32, f64)> = Vec::new();
    for i in groups.iter().flatten() {
        let h = &i.file.header;
        let Some(r) = h.ranks_per_core() else {
            return (
                Regime::Any,
                format!(
                    "{} does not record the CPUs its ranks had: every timing family is a candidate",
                    i.name
                ),
            );
        };
        per.push((h.nranks, r));
    }
    let at_target = per
        .iter()
        .map(|&(n, r)| r * f64::from(target) / f64::from(n))
        .fold(f64::INFINITY, f64::min);
    let mut scales: Vec<String> = Vec::new();
    for (n, r) in &per {
        let s = format!("{r:.3} at {n}");
        if !scales.contains(&s) {
            scales.push(s);
        }
    }
    let said = format!(
        "ranks per core {} ranks; {at_target:.3} at the target on nodes like the inputs'",
        scales.join(", ")
    );
    if per.iter().all(|&(_, r)| r > 1.0) && at_target > 1.0 {
        (
            Regime::Oversubscribed,
            format!(
                "{said}: oversubscribed, so the parts of the wall time are chosen among the \
                 families of ranks sharing cores (constant, k/n, falling k/n + c, linear, \
                 k/n + c + b*n)"
            ),
        )
    } else {
        (
            Regime::Any,
            format!("{said}: not oversubscribed throughout, every timing family is a candidate"),
        )
    }
}

/// The spread of the wall time between repeated runs of each scale, as `--explain` says it.
fn noise_text(groups: &[Vec<&Input>]) -> String {
    let per: Vec<String> = groups
        .iter()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let w: Vec<f64> = g.iter().map(|i| i.file.header.wall_ns as f64).collect();
            let mean = w.iter().sum::<f64>() / w.len() as f64;
            let sd =
                (w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (w.len() - 1) as f64).sqrt();
            format!(
                "{} runs at {} ranks: wall time {} +- {:.1}%",
                g.len(),
                g[0].file.header.nranks,
                fmt_ns(mean),
                if mean > 0.0 { 100.0 * sd / mean } else { 0.0 }
            )
        })
        .collect();
    format!(
        "{}; every timing model uses the spread between runs as its noise (a trend smaller \
         than it is not fitted)",
        per.join("; ")
    )
}
