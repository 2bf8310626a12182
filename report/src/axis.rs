//! Axis ticks chosen by the report rather than by plotters: round values in the quantity's own
//! unit (`0, 100, 200 KiB`, `0, 2, 4 ms`, ranks `0, 1, 2, 3`), and no more of them than fit
//! side by side without their labels overlapping.
//!
//! plotters picks decimal ticks on the raw value, which gave `195.3 KiB` steps for bytes and
//! fractional ranks (`-0, 0, 0, 1, 2, 2`) under the bars of a 4-rank chart. Here every axis is
//! given its ticks (plotters' `with_key_points`) and its labels from one function per unit.

use crate::extrap::Unit;

/// Approximate advance of one character of the plots' sans-serif font, as a fraction of its
/// size (the SVG has no font metrics; digits and most letters of common sans fonts are
/// 0.5-0.6 em wide).
const CHAR_EM: f64 = 0.56;

/// Estimated pixel width of `text` at `font_px`.
pub fn text_px(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * CHAR_EM
}

/// The unit a value of `unit` up to `max` is printed in: (divisor, suffix).
fn scale(unit: Unit, max: f64) -> (f64, &'static str) {
    let max = max.abs();
    match unit {
        Unit::Bytes => {
            const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
            let mut d = 1.0;
            let mut i = 0;
            while max >= 1024.0 * d && i + 1 < U.len() {
                d *= 1024.0;
                i += 1;
            }
            (d, U[i])
        }
        Unit::Nanos => {
            if max >= 1e9 {
                (1e9, "s")
            } else if max >= 1e6 {
                (1e6, "ms")
            } else if max >= 1e3 {
                (1e3, "µs")
            } else {
                (1.0, "ns")
            }
        }
        Unit::Count | Unit::Plain => {
            if max >= 1e9 {
                (1e9, "G")
            } else if max >= 1e6 {
                (1e6, "M")
            } else if max >= 1e4 {
                (1e3, "k")
            } else {
                (1.0, "")
            }
        }
    }
}

/// Decimals needed to print multiples of `step` exactly enough to tell them apart.
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// Ticks of one axis with their labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// Tick positions in data units.
    pub values: Vec<f64>,
    /// One label per tick.
    pub labels: Vec<String>,
}

impl Ticks {
    /// The label of the tick at `v` (plotters asks per key point).
    pub fn label(&self, v: f64) -> String {
        self.values
            .iter()
            .position(|t| (t - v).abs() <= 1e-9 * t.abs().max(1.0))
            .map_or_else(String::new, |i| self.labels[i].clone())
    }
}

/// Round steps: 1, 2, 5 times a power of ten, at least `min_step`.
fn nice_steps(raw: f64, min_step: f64) -> impl Iterator<Item = f64> {
    let raw = raw.max(min_step).max(f64::MIN_POSITIVE);
    let mut e = raw.log10().floor() as i32 - 1;
    let mut k = 0usize;
    std::iter::from_fn(move || {
        let m = [1.0, 2.0, 5.0][k];
        let s = m * 10f64.powi(e);
        k += 1;
        if k == 3 {
            k = 0;
            e += 1;
        }
        Some(s)
    })
    .filter(move |s| *s >= min_step * (1.0 - 1e-12))
}

/// Ticks for values from `lo` to `hi` of `unit`, as many as fit along `px` pixels: each label
/// needs its own width plus a gap when `horizontal` (labels side by side on an x axis), or
/// twice the font size when stacked (a y axis). `integer` keeps ticks on whole values (ranks).
pub fn ticks(
    lo: f64,
    hi: f64,
    unit: Unit,
    px: f64,
    font_px: f64,
    horizontal: bool,
    integer: bool,
) -> Ticks {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let (div, suffix) = scale(unit, lo.abs().max(hi.abs()));
    let (ulo, uhi) = (lo / div, hi / div);
    // Whole ranks stay whole whatever the display unit.
    let min_step = if integer { 1.0 / div } else { 0.0 };
    let mut best = None;
    for step in nice_steps((uhi - ulo) / 12.0, min_step) {
        let first = (ulo / step).ceil();
        let last = (uhi / step).floor();
        let n = (last - first + 1.0).max(0.0) as usize;
        let d = decimals(step);
        let values: Vec<f64> = (0..n).map(|i| (first + i as f64) * step).collect();
        let labels: Vec<String> = values
            .iter()
            .map(|v| {
                let v = if v.abs() < step * 1e-9 { 0.0 } else { *v };
                // `4k` ranks, but `100 KiB` and `2 ms`.
                let sep = match unit {
                    Unit::Bytes | Unit::Nanos => " ",
                    Unit::Count | Unit::Plain => "",
                };
                format!("{v:.d$}{sep}{suffix}")
            })
            .collect();
        // Spacing between neighbouring ticks in pixels against what each label needs.
        let spacing = px * step / (uhi - ulo);
        let need = if horizontal {
            labels
                .iter()
                .map(|l| text_px(l, font_px))
                .fold(0.0, f64::max)
                + font_px
        } else {
            font_px * 2.0
        };
        // A few ticks read faster than many, even where more would fit.
        let most = if horizontal { 11 } else { 8 };
        let fits = n <= 1 || (spacing >= need && n <= most);
        best = Some(Ticks {
            values: values.iter().map(|v| v * div).collect(),
            labels,
        });
        if fits {
            break;
        }
        if n <= 2 {
            break;
        }
    }
    best.expect("nice_steps is infinite")
}

/// Ticks at powers of two from `lo` to `hi` (a log-scale rank axis), every one while they fit
/// along `px` pixels, else every second, fourth, ... power.
pub fn log2_ticks(lo: f64, hi: f64, px: f64, font_px: f64) -> Ticks {
    let (lo, hi) = (lo.max(1e-9), hi.max(lo * 2.0));
    let (a, b) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
    let decades = (hi / lo).log2();
    let mut every = 1;
    loop {
        let values: Vec<f64> = (a..=b)
            .filter(|e| (b - e) % every == 0)
            .map(|e| 2f64.powi(e))
            .collect();
        let labels: Vec<String> = values.iter().map(|v| rank_label(*v)).collect();
        let spacing = px * f64::from(every) / decades;
        let need = labels
            .iter()
            .map(|l| text_px(l, font_px))
            .fold(0.0, f64::max)
            + font_px;
        if spacing >= need || values.len() <= 2 {
            return Ticks { values, labels };
        }
        every *= 2;
    }
}

/// Ticks for a log axis of `unit` from `lo` to `hi` (both positive): powers of 1024 and their
/// power-of-two multiples for bytes (`1 KiB`, `4 KiB`, ...), of ten otherwise (`10 µs`,
/// `1000`), thinned to every k-th while they do not fit stacked along `px` pixels.
pub fn log_ticks(lo: f64, hi: f64, unit: Unit, px: f64, font_px: f64) -> Ticks {
    let base: f64 = if unit == Unit::Bytes { 2.0 } else { 10.0 };
    let (a, b) = (
        (lo.log(base) - 1e-9).ceil() as i32,
        (hi.log(base) + 1e-9).floor() as i32,
    );
    let span = (hi / lo).log(base).max(1e-9);
    let mut every = 1;
    loop {
        let values: Vec<f64> = (a..=b)
            .filter(|e| (b - e) % every == 0)
            .map(|e| base.powi(e))
            .collect();
        let spacing = px * f64::from(every) / span;
        if spacing >= font_px * 2.0 || values.len() <= 2 {
            let labels = values
                .iter()
                .map(|v| {
                    let (div, suffix) = scale(unit, *v);
                    let sep = match unit {
                        Unit::Bytes | Unit::Nanos => " ",
                        Unit::Count | Unit::Plain => "",
                    };
                    let x = v / div;
                    let d = if x >= 1.0 || x == 0.0 { 0 } else { decimals(x) };
                    format!("{x:.d$}{sep}{suffix}")
                })
                .collect();
            return Ticks { values, labels };
        }
        every *= 2;
    }
}

/// A rank count as people write it: `512`, `4096`, `64Ki`, `1Mi` (powers of two beyond 10^4).
pub fn rank_label(v: f64) -> String {
    if v >= 1_048_576.0 && (v / 1_048_576.0).fract() == 0.0 {
        format!("{}Mi", v / 1_048_576.0)
    } else if v >= 16_384.0 && (v / 1024.0).fract() == 0.0 {
        format!("{}Ki", v / 1024.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_ranks_get_one_tick_per_rank() {
        let t = ticks(-0.5, 3.5, Unit::Count, 900.0, 12.0, true, true);
        assert_eq!(t.values, vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(t.labels, vec!["0", "1", "2", "3"]);
    }

    #[test]
    fn many_ranks_get_round_ticks_that_fit() {
        let t = ticks(-0.5, 4095.5, Unit::Count, 900.0, 12.0, true, true);
        assert!(t.values.len() >= 4 && t.values.len() <= 12, "{t:?}");
        let spacing = 900.0 * (t.values[1] - t.values[0]) / 4096.0;
        let widest = t
            .labels
            .iter()
            .map(|l| text_px(l, 12.0))
            .fold(0.0, f64::max);
        assert!(spacing > widest, "{t:?}");
        assert!(t.values.iter().all(|v| v.fract() == 0.0));
    }

    #[test]
    fn bytes_in_round_binary_units() {
        let t = ticks(0.0, 400_000.0, Unit::Bytes, 250.0, 12.0, false, false);
        assert_eq!(t.labels.first().unwrap(), "0 KiB");
        assert!(t.labels.contains(&"100 KiB".to_string()), "{t:?}");
        assert_eq!(t.label(102_400.0), "100 KiB");
    }

    #[test]
    fn log_rank_axis_thins_out() {
        let t = log2_ticks(4.0 / 1.4, 1024.0 * 1.4, 500.0, 12.0);
        assert_eq!(
            t.labels,
            ["4", "8", "16", "32", "64", "128", "256", "512", "1024"]
        );
        let t = log2_ticks(4.0 / 1.4, 1024.0 * 1.4, 360.0, 13.0);
        assert_eq!(
            t.labels,
            ["4", "16", "64", "256", "1024"],
            "the target end kept"
        );
        let t = log2_ticks(4.0 / 1.4, 1_048_576.0 * 1.4, 360.0, 12.0);
        assert!(
            t.values.len() < 12 && t.labels.last().unwrap() == "1Mi",
            "{t:?}"
        );
    }

    #[test]
    fn log_value_axes() {
        let t = log_ticks(10.0, 5000.0, Unit::Count, 200.0, 13.0);
        assert_eq!(t.labels, ["10", "100", "1000"]);
        let t = log_ticks(200_000.0, 300_000_000.0, Unit::Bytes, 200.0, 13.0);
        assert!(t.labels.contains(&"256 MiB".to_string()), "{t:?}");
        assert!(t.values.len() <= 8, "{t:?}");
    }

    #[test]
    fn time_in_round_units() {
        let t = ticks(0.0, 3.3e6, Unit::Nanos, 250.0, 12.0, false, false);
        assert!(t.labels.contains(&"1.0 ms".to_string()), "{t:?}");
        let t = ticks(0.0, 0.8e6, Unit::Nanos, 250.0, 12.0, false, false);
        assert!(t.labels.contains(&"200 µs".to_string()), "{t:?}");
    }
}
