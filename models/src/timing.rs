//! Least-squares fits of timing statistics against the rank count.
//!
//! Timing is the one approximate quantity in an extrapolated trace. Each statistic (a mean
//! duration, a compute gap) is fitted over the input scales with constant, linear, inverse
//! (`k/n`), inverse plus constant and degree-2 polynomial models (nalgebra's SVD solve), and the
//! model with the best fitness is chosen: `std/mean` of the observations for the constant
//! model, `sqrt(residual sum of squares)/mean` for the others, as in ScalaIOExtrap. A model
//! needs more observations than coefficients, so the quadratic is only tried from four scales.

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use std::fmt;

/// The timing model families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingModel {
    /// `c`.
    Constant,
    /// `a*n + b`.
    Linear,
    /// `k/n`.
    Inverse,
    /// `k/n + c`.
    InverseConstant,
    /// `a*n^2 + b*n + c`.
    Quadratic,
}

impl TimingModel {
    /// All families, simplest first (ties in fitness go to the simpler one).
    pub const ALL: [TimingModel; 5] = [
        TimingModel::Constant,
        TimingModel::Inverse,
        TimingModel::Linear,
        TimingModel::InverseConstant,
        TimingModel::Quadratic,
    ];

    fn terms(self, n: f64) -> Vec<f64> {
        match self {
            TimingModel::Constant => vec![1.0],
            TimingModel::Linear => vec![n, 1.0],
            TimingModel::Inverse => vec![1.0 / n],
            TimingModel::InverseConstant => vec![1.0 / n, 1.0],
            TimingModel::Quadratic => vec![n * n, n, 1.0],
        }
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            TimingModel::Constant => "constant",
            TimingModel::Linear => "linear",
            TimingModel::Inverse => "inverse",
            TimingModel::InverseConstant => "inverse+constant",
            TimingModel::Quadratic => "quadratic",
        }
    }
}

/// A fitted timing model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingFit {
    /// The family.
    pub model: TimingModel,
    /// Coefficients in the order of the family's terms.
    pub coeffs: Vec<f64>,
    /// The fitness measure (lower is better; 0 is an exact fit).
    pub fitness: f64,
}

impl TimingFit {
    /// The fitted value at `n`.
    pub fn eval(&self, n: f64) -> f64 {
        self.model
            .terms(n)
            .iter()
            .zip(&self.coeffs)
            .map(|(t, c)| t * c)
            .sum()
    }
}

impl fmt::Display for TimingFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.coeffs;
        let g = |x: f64| format!("{x:.4e}");
        match self.model {
            TimingModel::Constant => write!(f, "{}", g(c[0]))?,
            TimingModel::Linear => write!(f, "{}*n + {}", g(c[0]), g(c[1]))?,
            TimingModel::Inverse => write!(f, "{}/n", g(c[0]))?,
            TimingModel::InverseConstant => write!(f, "{}/n + {}", g(c[0]), g(c[1]))?,
            TimingModel::Quadratic => write!(f, "{}*n^2 + {}*n + {}", g(c[0]), g(c[1]), g(c[2]))?,
        }
        write!(f, " ({}, fitness {:.3})", self.model.name(), self.fitness)
    }
}

/// Fits one model by least squares; `None` when the system is degenerate.
pub fn fit_model(model: TimingModel, ns: &[f64], ys: &[f64]) -> Option<TimingFit> {
    let m = model.terms(1.0).len();
    if ns.is_empty() || (model != TimingModel::Constant && ns.len() <= m) {
        return None;
    }
    let mean = ys.iter().sum::<f64>() / ys.len() as f64;
    let scale = if mean.abs() > 0.0 { mean.abs() } else { 1.0 };
    if model == TimingModel::Constant {
        let var = ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / ys.len() as f64;
        return Some(TimingFit {
            model,
            coeffs: vec![mean],
            fitness: var.sqrt() / scale,
        });
    }
    let a = DMatrix::from_fn(ns.len(), m, |i, j| model.terms(ns[i])[j]);
    let b = DVector::from_column_slice(ys);
    let svd = a.clone().svd(true, true);
    let x = svd.solve(&b, 1e-12).ok()?;
    let resid = (&a * &x - &b).norm_squared();
    let coeffs: Vec<f64> = x.iter().copied().collect();
    if coeffs.iter().any(|c| !c.is_finite()) {
        return None;
    }
    Some(TimingFit {
        model,
        coeffs,
        fitness: resid.sqrt() / scale,
    })
}

/// The best model for `ys` observed at rank counts `ns` whose prediction at `target` is
/// non-negative (a time cannot be negative; a quadratic that dives below zero is passed over).
/// Fitness within 1e-9 of the best goes to the simpler model.
pub fn fit_timing(ns: &[f64], ys: &[f64], target: f64) -> Option<TimingFit> {
    let mut best: Option<TimingFit> = None;
    for m in TimingModel::ALL {
        let Some(f) = fit_model(m, ns, ys) else {
            continue;
        };
        let v = f.eval(target);
        if !v.is_finite() || v < 0.0 {
            continue;
        }
        if best.as_ref().is_none_or(|b| f.fitness + 1e-9 < b.fitness) {
            best = Some(f);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: [f64; 4] = [4.0, 8.0, 12.0, 16.0];

    #[test]
    fn exact_laws_are_recovered() {
        let ys: Vec<f64> = NS.iter().map(|n| 1000.0 + 64000.0 / n).collect();
        let f = fit_timing(&NS, &ys, 64.0).unwrap();
        assert_eq!(f.model, TimingModel::InverseConstant);
        assert!((f.eval(64.0) - 2000.0).abs() < 1e-6, "{f}");
        let ys = [500.0; 4];
        let f = fit_timing(&NS, &ys, 1e6).unwrap();
        assert_eq!(f.model, TimingModel::Constant);
        assert_eq!(f.fitness, 0.0);
        let ys: Vec<f64> = NS.iter().map(|n| 30.0 * n + 7.0).collect();
        let f = fit_timing(&NS, &ys, 32.0).unwrap();
        assert_eq!(f.model, TimingModel::Linear);
        assert!((f.eval(32.0) - 967.0).abs() < 1e-6);
    }

    #[test]
    fn never_predicts_negative_time() {
        let ys = [900.0, 500.0, 300.0, 50.0];
        let f = fit_timing(&NS, &ys, 1e6).unwrap();
        assert!(f.eval(1e6) >= 0.0, "{f}");
    }
}
