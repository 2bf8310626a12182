//! The plots, drawn with plotters' SVG backend into strings that the page inlines.
//!
//! Every plot counts the data marks it draws and refuses to exist without any
//! ([`ReportError::EmptyPlot`]): the page then leaves it out with a note, so an empty frame never
//! passes for a result. Legends are HTML next to the SVG (see `html.rs`), so plots carry colours
//! only.

use crate::error::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A drawn plot.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The `<svg>` element.
    pub svg: String,
    /// Data marks drawn (bars, spans, points, lines); always at least one.
    pub marks: usize,
    /// Legend entries: name and colour index in [`PALETTE`].
    pub legend: Vec<(String, usize)>,
}

/// Colours by index (Tableau 10 plus two): distinct on screen and in print.
pub const PALETTE: [(u8, u8, u8); 12] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0xba, 0xb0, 0xac),
    (0x2f, 0x4b, 0x7c),
    (0x8c, 0xd1, 0x7d),
];

/// The colour of index `i` (wrapping).
pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// `#rrggbb` of index `i`, for HTML legends.
pub fn hex(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

const WIDTH: u32 = 1000;
const FONT: &str = "sans-serif";

struct Ctx<'a> {
    plot: &'a str,
    input: &'a str,
}

impl Ctx<'_> {
    fn draw<E: std::fmt::Display>(&self, e: E) -> ReportError {
        ReportError::Draw {
            plot: self.plot.to_string(),
            input: self.input.to_string(),
            message: e.to_string(),
        }
    }

    fn empty(&self) -> ReportError {
        ReportError::EmptyPlot {
            plot: self.plot.to_string(),
            input: self.input.to_string(),
        }
    }
}

/// Pixel width of the left label column for category labels (the SVG backend has no font
/// metrics, so this estimates ~7 px per character at 13 px).
fn label_width(labels: impl Iterator<Item = usize>) -> u32 {
    (labels.max().unwrap_or(4) as u32 * 7 + 16).clamp(60, 340)
}

fn right_label(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    text: &str,
    at: (i32, i32),
) -> Result<(), String> {
    let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    root.draw(&Text::new(text.to_string(), (at.0 - 6, at.1), style))
        .map_err(|e| e.to_string())
}

/// Horizontal stacked bars, one row per category: `rows` are (label, one value per part).
pub fn hbars(
    title: &str,
    input: &str,
    x_desc: &str,
    rows: &[(String, Vec<f64>)],
    parts: &[&str],
    fmt: &dyn Fn(f64) -> String,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    let rows: Vec<&(String, Vec<f64>)> = rows
        .iter()
        .filter(|r| r.1.iter().sum::<f64>() > 0.0)
        .collect();
    let max = rows
        .iter()
        .map(|r| r.1.iter().sum::<f64>())
        .fold(0.0f64, f64::max);
    if rows.is_empty() || max <= 0.0 {
        return Err(ctx.empty());
    }
    let n = rows.len();
    let height = 90 + 26 * n as u32;
    let left = label_width(rows.iter().map(|r| r.0.len()));
    let mut svg = String::new();
    let mut marks = 0;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_left(left)
            .x_label_area_size(36)
            .build_cartesian_2d(0f64..max * 1.05, 0f64..n as f64)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_desc)
            .x_label_formatter(&|v| fmt(*v))
            .label_style((FONT, 12))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        for (i, (label, vals)) in rows.iter().map(|r| (&r.0, &r.1)).enumerate() {
            // Row 0 at the top.
            let y = (n - 1 - i) as f64;
            let mut x = 0.0;
            for (p, v) in vals.iter().enumerate() {
                if *v <= 0.0 {
                    continue;
                }
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y + 0.15), (x + v, y + 0.85)],
                        color(p).filled(),
                    )))
                    .map_err(|e| ctx.draw(e))?;
                marks += 1;
                x += v;
            }
            let at = chart.backend_coord(&(0.0, y + 0.5));
            right_label(&root, label, at).map_err(|e| ctx.draw(e))?;
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot {
        svg,
        marks,
        legend: parts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), i))
            .collect(),
    })
}

/// Vertical stacked bars over ranks: `parts[p][i]` is part `p` of rank `ranks[i]`.
pub fn rank_bars(
    title: &str,
    input: &str,
    y_desc: &str,
    ranks: &[u32],
    parts: &[(&str, Vec<f64>)],
    fmt: &dyn Fn(f64) -> String,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    let total = |i: usize| parts.iter().map(|p| p.1[i]).sum::<f64>();
    let max = (0..ranks.len()).map(total).fold(0.0f64, f64::max);
    if ranks.is_empty() || max <= 0.0 {
        return Err(ctx.empty());
    }
    // Bar width from the spacing of the shown ranks (a sample keeps every k-th rank).
    let step = ranks
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64)
        .fold(f64::INFINITY, f64::min);
    let step = if step.is_finite() { step } else { 1.0 };
    let (lo, hi) = (
        ranks[0] as f64 - step / 2.0,
        ranks[ranks.len() - 1] as f64 + step / 2.0,
    );
    let mut svg = String::new();
    let mut marks = 0;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(90)
            .build_cartesian_2d(lo..hi, 0f64..max * 1.08)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("rank")
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| fmt(*v))
            .label_style((FONT, 12))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        let w = step * 0.4;
        for (i, &r) in ranks.iter().enumerate() {
            let mut y = 0.0;
            for (p, (_, vals)) in parts.iter().enumerate() {
                let v = vals[i];
                if v <= 0.0 {
                    continue;
                }
                let x = r as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - w, y), (x + w, y + v)],
                        color(p).filled(),
                    )))
                    .map_err(|e| ctx.draw(e))?;
                marks += 1;
                y += v;
            }
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot {
        svg,
        marks,
        legend: parts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.0.to_string(), i))
            .collect(),
    })
}

/// One span of a timeline lane: start and duration (ns), nested or not, colour index.
pub type Mark = (f64, f64, bool, usize);

/// A timeline: one lane per label, spans as coloured rectangles; nested spans fill the lower
/// half of their lane so the enclosing call stays visible above them.
pub fn timeline(
    title: &str,
    input: &str,
    lanes: &[(String, Vec<Mark>)],
    legend: Vec<(String, usize)>,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    let end = lanes
        .iter()
        .flat_map(|l| l.1.iter().map(|m| m.0 + m.1))
        .fold(0.0f64, f64::max);
    if lanes.iter().all(|l| l.1.is_empty()) || end <= 0.0 {
        return Err(ctx.empty());
    }
    let n = lanes.len();
    let height = 90 + 40 * n as u32;
    let left = label_width(lanes.iter().map(|l| l.0.len()));
    // Milliseconds on the axis; calls narrower than a pixel are drawn one pixel wide.
    let end_ms = end / 1e6;
    let px_ms = end_ms / (WIDTH - left - 20) as f64;
    let mut svg = String::new();
    let mut marks = 0;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_left(left)
            .x_label_area_size(36)
            .build_cartesian_2d(0f64..end_ms * 1.01, 0f64..n as f64)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("time (ms, rebuilt from mean gaps and durations)")
            .x_label_formatter(&|v| format!("{v:.2}"))
            .label_style((FONT, 12))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        for (i, (label, spans)) in lanes.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let rects = spans.iter().map(|&(s, d, nested, c)| {
                let x0 = (s / 1e6).max(0.0);
                let x1 = x0 + (d / 1e6).max(px_ms);
                let (y0, y1) = if nested {
                    (y + 0.1, y + 0.45)
                } else {
                    (y + 0.1, y + 0.9)
                };
                Rectangle::new([(x0, y0), (x1, y1)], color(c).filled())
            });
            chart.draw_series(rects).map_err(|e| ctx.draw(e))?;
            marks += spans.len();
            let at = chart.backend_coord(&(0.0, y + 0.5));
            right_label(&root, label, at).map_err(|e| ctx.draw(e))?;
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot { svg, marks, legend })
}

/// A fitted model to draw: its formula and its value at a rank count.
pub struct Curve<'a> {
    /// The formula, shown as the line's label.
    pub formula: &'a str,
    /// The model's value at a rank count.
    pub eval: &'a dyn Fn(f64) -> Option<f64>,
}

/// Values at the input scales as points, the model (if any) as a line through them extended to
/// the target, and the value the extrapolated trace holds at the target as a diamond.
pub fn scaling(
    title: &str,
    input: &str,
    y_desc: &str,
    points: &[(f64, f64)],
    curve: Option<&Curve<'_>>,
    target: Option<(f64, Option<f64>)>,
    fmt: &dyn Fn(f64) -> String,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    if points.is_empty() {
        return Err(ctx.empty());
    }
    let x_max = points
        .iter()
        .map(|p| p.0)
        .chain(target.map(|t| t.0))
        .fold(0.0f64, f64::max);
    let x_min = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let line: Vec<(f64, f64)> = match curve {
        Some(c) => (0..=200)
            .filter_map(|i| {
                let x = x_min + (x_max - x_min) * i as f64 / 200.0;
                (c.eval)(x).filter(|y| y.is_finite()).map(|y| (x, y))
            })
            .collect(),
        None => Vec::new(),
    };
    let ys = points
        .iter()
        .map(|p| p.1)
        .chain(line.iter().map(|p| p.1))
        .chain(target.and_then(|t| t.1));
    let (y_lo, y_hi) = ys.fold((0.0f64, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let y_hi = if y_hi > y_lo { y_hi } else { y_lo + 1.0 };
    let pad = (y_hi - y_lo) * 0.1;
    let mut svg = String::new();
    let mut marks = 0;
    let mut legend = vec![("measured at the input scales".to_string(), 0)];
    {
        let root = SVGBackend::with_string(&mut svg, (480, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 14))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max * 1.08, (y_lo - pad.min(y_lo.abs()))..y_hi + pad)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .x_desc("ranks")
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| fmt(*v))
            .label_style((FONT, 11))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        if let Some(c) = curve
            && line.len() > 1
        {
            chart
                .draw_series(LineSeries::new(
                    line.iter().copied(),
                    color(1).stroke_width(2),
                ))
                .map_err(|e| ctx.draw(e))?;
            marks += 1;
            legend.push((format!("model: {}", c.formula), 1));
            let c1 = color(1);
            let style = TextStyle::from((FONT, 12).into_font()).color(&c1);
            let at = chart.backend_coord(&(0.0, y_hi + pad));
            root.draw(&Text::new(
                format!("{} = {}", "f(n)", c.formula),
                (at.0 + 8, at.1 + 6),
                style,
            ))
            .map_err(|e| ctx.draw(e))?;
        }
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 5, color(0).filled())))
            .map_err(|e| ctx.draw(e))?;
        marks += points.len();
        if let Some((x, Some(y))) = target {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(
                    (x, y),
                    7,
                    color(2).filled(),
                )))
                .map_err(|e| ctx.draw(e))?;
            marks += 1;
            legend.push((format!("in the extrapolated trace at {x:.0} ranks"), 2));
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot { svg, marks, legend })
}
