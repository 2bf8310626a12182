//! The plots, drawn with plotters' SVG backend into strings that the page inlines.
//!
//! Every plot counts the data marks it draws and refuses to exist without any
//! ([`ReportError::EmptyPlot`]): the page then leaves it out with a note, so an empty frame never
//! passes for a result. Legends are HTML next to the SVG (see `html.rs`), so plots carry colours
//! only.

use crate::axis;
use crate::error::ReportError;
use crate::extrap::Unit;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A linear or log axis whose ticks the report chose ([`axis::ticks`]); plotters draws its
/// grid lines and labels at those and nowhere else.
struct Keyed {
    range: std::ops::Range<f64>,
    log: bool,
    keys: Vec<f64>,
}

impl Keyed {
    fn lin(range: std::ops::Range<f64>, t: &axis::Ticks) -> Keyed {
        Keyed {
            range,
            log: false,
            keys: t.values.clone(),
        }
    }

    fn log(range: std::ops::Range<f64>, t: &axis::Ticks) -> Keyed {
        Keyed {
            range,
            log: true,
            keys: t.values.clone(),
        }
    }
}

impl Ranged for Keyed {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = |x: f64| {
            if self.log {
                x.max(f64::MIN_POSITIVE).ln()
            } else {
                x
            }
        };
        let (a, b) = (f(self.range.start), f(self.range.end));
        let t = if b > a { (f(*v) - a) / (b - a) } else { 0.0 };
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

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

/// Colours by index: Tableau 10, then the lighter Tableau 20 shades, so 20 ops on one page
/// each get their own colour; then the slate shades of [`CATEGORY`]; beyond, [`color`]
/// spreads further hues.
pub const PALETTE: [(u8, u8, u8); 24] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0x79, 0x70, 0x6e),
    (0x2f, 0x4b, 0x7c),
    (0x8c, 0xd1, 0x7d),
    (0xa0, 0xcb, 0xe8),
    (0xff, 0xbe, 0x7d),
    (0x86, 0xbc, 0xb6),
    (0xb6, 0x99, 0x2d),
    (0xd4, 0xa6, 0xc8),
    (0xd3, 0x72, 0x95),
    (0x49, 0x98, 0x94),
    (0x6a, 0x3d, 0x9a),
    // Slate shades for what is not an op (bytes written or read, layers, the extrapolated
    // value), so that colour always means an op.
    (0x37, 0x47, 0x4f),
    (0x90, 0xa4, 0xae),
    (0x5d, 0x7b, 0x8a),
    (0x1b, 0x26, 0x2c),
];

/// Indices of the slate shades: dark, light, middle, darkest.
pub const CATEGORY: [usize; 4] = [20, 21, 22, 23];

/// Ops get the colours before [`CATEGORY`], then the hues past the palette.
pub fn op_colour(k: usize) -> usize {
    if k < CATEGORY[0] {
        k
    } else {
        k + CATEGORY.len()
    }
}

/// Colours [`check`](crate::check) accepts as data marks: the palette and the hues [`color`]
/// makes beyond it for pages with many ops.
pub const COLOURS: usize = 64;

/// The colour of index `i`: the palette, then hues a golden angle apart.
pub fn rgb(i: usize) -> (u8, u8, u8) {
    if i < PALETTE.len() {
        return PALETTE[i];
    }
    let i = PALETTE.len() + (i - PALETTE.len()) % (COLOURS - PALETTE.len());
    let h = ((i - PALETTE.len()) as f64 * 137.508) % 360.0;
    // HSL to RGB at saturation 0.55, lightness 0.5.
    let (s, l) = (0.55, 0.5);
    let c = (1.0 - (2.0 * l - 1.0f64).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let q = |v: f64| ((v + m) * 255.0).round() as u8;
    (q(r), q(g), q(b))
}

/// The colour of index `i`.
pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = rgb(i);
    RGBColor(r, g, b)
}

/// `#rrggbb` of index `i`, for HTML legends.
pub fn hex(i: usize) -> String {
    let (r, g, b) = rgb(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

const WIDTH: u32 = 1000;
/// Plots shown two per row.
const HALF_WIDTH: u32 = 490;
const FONT: &str = "sans-serif";
/// Tick labels and axis descriptions: 13 and 14 px, legible when a 1000 px plot is shown at
/// the page's 1060 px width or a 480 px one at two per row.
const TICK_FONT: u32 = 13;
const DESC_FONT: u32 = 14;
/// Width of the y tick label column of full-width plots (`1023.9 KiB`, `999.5 ms`).
const Y_LABELS: u32 = 100;
/// The same for the scaling plots.
const SCALING_Y_LABELS: u32 = 90;
/// The extrapolated value's marker: the darkest slate.
const TARGET_COLOUR: usize = CATEGORY[3];

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
    (labels.max().unwrap_or(4) as u32 * 8 + 16).clamp(60, LABEL_MAX)
}

/// The widest left label column: past it a label is wrapped ([`wrap`]), not clipped at the
/// plot's left edge.
const LABEL_MAX: u32 = 340;

/// `label` in lines of at most `chars` characters, broken after a comma or before a
/// parenthesis (a call site's label is `op file (LAYER 1.2%, LAYER 3.4%, ...)`: a layer stays
/// beside its share), else between words, inside a word only where a word alone is longer
/// than a line.
fn wrap(label: &str, chars: usize) -> Vec<String> {
    let chars = chars.max(8);
    let len = |s: &str| s.chars().count();
    // Split `s` where a break pattern occurs, `k` bytes into it: (", ", 2) breaks after the
    // comma and its space, (" (", 1) before the parenthesis.
    let split = |s: &str, at: &[(&str, usize)]| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = s;
        while let Some(cut) = at
            .iter()
            .filter_map(|(p, k)| rest.find(p).map(|i| i + k))
            .filter(|c| *c > 0)
            .min()
        {
            out.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        out.push(rest.to_string());
        out
    };
    let mut pieces = Vec::new();
    for p in split(label, &[(", ", 2), (" (", 1)])
        .into_iter()
        .flat_map(|p| {
            if len(&p) <= chars {
                vec![p]
            } else {
                split(&p, &[(" ", 1)])
            }
        })
    {
        if len(&p) <= chars {
            pieces.push(p);
        } else {
            let cs: Vec<char> = p.chars().collect();
            pieces.extend(cs.chunks(chars).map(|c| c.iter().collect::<String>()));
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for p in pieces {
        if !cur.is_empty() && len(&cur) + len(p.trim_end()) > chars {
            lines.push(cur.trim_end().to_string());
            cur.clear();
        }
        cur.push_str(&p);
    }
    if !cur.trim().is_empty() || lines.is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    lines
}

fn right_label(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    text: &str,
    at: (i32, i32),
) -> Result<(), String> {
    let style =
        TextStyle::from((FONT, TICK_FONT).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    root.draw(&Text::new(text.to_string(), (at.0 - 6, at.1), style))
        .map_err(|e| e.to_string())
}

/// Draws `title` (font `size`) centred in a band of its own at the top of `root`, `width`
/// wide, and returns the area below for the chart. A chart with y tick labels may have a tick
/// at the top of its axis whose label stands half above the plot, where plotters' own caption
/// would meet a long title (an op and its file's path); in a band of its own it cannot.
fn title_band<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    size: u32,
    width: u32,
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, String> {
    let (band, below) = root.split_vertically(size + 10);
    band.draw(&Text::new(
        title,
        (width as i32 / 2, (size as i32 + 10) / 2 + 2),
        TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(|e| e.to_string())?;
    Ok(below)
}

/// Horizontal stacked bars, one row per category: `rows` are (label, one value per part);
/// part `p` is drawn in colour `parts[p].1` (an op's colour, or the part's index).
pub fn hbars(
    title: &str,
    input: &str,
    x_desc: &str,
    unit: Unit,
    rows: &[(String, Vec<f64>)],
    parts: &[(&str, usize)],
) -> Result<Plot, ReportError> {
    let rows: Vec<(String, Vec<(f64, usize)>)> = rows
        .iter()
        .map(|(l, v)| {
            (
                l.clone(),
                v.iter().zip(parts).map(|(v, p)| (*v, p.1)).collect(),
            )
        })
        .collect();
    let legend = parts
        .iter()
        .enumerate()
        .filter(|(i, _)| rows.iter().any(|r| r.1.get(*i).is_some_and(|v| v.0 > 0.0)))
        .map(|(_, (p, c))| (p.to_string(), *c))
        .collect();
    bars_h(title, input, x_desc, unit, &rows, legend, WIDTH)
}

/// One bar per op, in the op's colour: `rows` are (label, value, colour). Half-width, so two
/// sit side by side; the labels name the ops, so there is no legend.
pub fn op_bars(
    title: &str,
    input: &str,
    x_desc: &str,
    unit: Unit,
    rows: &[(String, Vec<f64>, usize)],
) -> Result<Plot, ReportError> {
    let rows: Vec<(String, Vec<(f64, usize)>)> = rows
        .iter()
        .map(|(l, v, c)| (l.clone(), v.iter().map(|v| (*v, *c)).collect()))
        .collect();
    bars_h(title, input, x_desc, unit, &rows, Vec::new(), HALF_WIDTH)
}

fn bars_h(
    title: &str,
    input: &str,
    x_desc: &str,
    unit: Unit,
    rows: &[(String, Vec<(f64, usize)>)],
    legend: Vec<(String, usize)>,
    width: u32,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    let sum = |r: &[(f64, usize)]| r.iter().map(|p| p.0).sum::<f64>();
    let rows: Vec<&(String, Vec<(f64, usize)>)> = rows.iter().filter(|r| sum(&r.1) > 0.0).collect();
    let max = rows.iter().map(|r| sum(&r.1)).fold(0.0f64, f64::max);
    if rows.is_empty() || max <= 0.0 {
        return Err(ctx.empty());
    }
    let n = rows.len();
    let left = label_width(rows.iter().map(|r| r.0.len()));
    // Labels that do not fit the widest column take more lines, and every row the height of
    // the tallest (13 px text, 15 px apart).
    let labels: Vec<Vec<String>> = rows
        .iter()
        .map(|r| wrap(&r.0, ((left - 16) / 8) as usize))
        .collect();
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1) as u32;
    let row = 26 + 15 * (lines - 1);
    let height = 90 + row * n as u32;
    let mut svg = String::new();
    let mut marks = 0;
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let xt = axis::ticks(
            0.0,
            max * 1.05,
            unit,
            f64::from(width - left - 30),
            f64::from(TICK_FONT),
            true,
            false,
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, if width < WIDTH { 14 } else { 16 }))
            .margin(10)
            .margin_left(left)
            .margin_right(20)
            .x_label_area_size(40)
            .build_cartesian_2d(Keyed::lin(0f64..max * 1.05, &xt), 0f64..n as f64)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_desc)
            .x_label_formatter(&|v| xt.label(*v))
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, DESC_FONT))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        for (i, (label, vals)) in labels.iter().zip(rows.iter().map(|r| &r.1)).enumerate() {
            // Row 0 at the top.
            let y = (n - 1 - i) as f64;
            let mut x = 0.0;
            for (v, c) in vals {
                if *v <= 0.0 {
                    continue;
                }
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y + 0.15), (x + v, y + 0.85)],
                        color(*c).filled(),
                    )))
                    .map_err(|e| ctx.draw(e))?;
                marks += 1;
                x += v;
            }
            let at = chart.backend_coord(&(0.0, y + 0.5));
            let top = at.1 - 15 * (label.len() as i32 - 1) / 2;
            for (k, line) in label.iter().enumerate() {
                right_label(&root, line, (at.0, top + 15 * k as i32)).map_err(|e| ctx.draw(e))?;
            }
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot { svg, marks, legend })
}

/// Vertical stacked bars over ranks: `parts[p][i]` is part `p` of rank `ranks[i]`.
/// Part `p` is drawn in colour `parts[p].1`.
pub fn rank_bars(
    title: &str,
    input: &str,
    y_desc: &str,
    unit: Unit,
    ranks: &[u32],
    parts: &[(&str, usize, Vec<f64>)],
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    let total = |i: usize| parts.iter().map(|p| p.2[i]).sum::<f64>();
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
        // Ticks on whole ranks (under the bars' centres), as many as fit; the y axis in the
        // quantity's unit.
        let xt = axis::ticks(
            lo,
            hi,
            Unit::Count,
            f64::from(WIDTH - Y_LABELS - 30),
            f64::from(TICK_FONT),
            true,
            true,
        );
        let yt = axis::ticks(
            0.0,
            max * 1.08,
            unit,
            300.0 - 100.0,
            f64::from(TICK_FONT),
            false,
            false,
        );
        let below = title_band(&root, title, 16, WIDTH).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&below)
            .margin(10)
            .margin_right(20)
            .x_label_area_size(40)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d(Keyed::lin(lo..hi, &xt), Keyed::lin(0f64..max * 1.08, &yt))
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("rank")
            .y_desc(y_desc)
            .x_label_formatter(&|v| xt.label(*v))
            .y_label_formatter(&|v| yt.label(*v))
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, DESC_FONT))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        // Bars under 4 px wide would alias into stripes: each part is then one stepped area
        // over the ranks instead.
        let px_per_step = f64::from(WIDTH - Y_LABELS - 30) * step / (hi - lo);
        if px_per_step < 4.0 {
            let mut below = vec![0.0; ranks.len()];
            for (_, c, vals) in parts {
                if vals.iter().all(|v| *v <= 0.0) {
                    continue;
                }
                let above: Vec<f64> = below
                    .iter()
                    .zip(vals)
                    .map(|(b, v)| b + v.max(0.0))
                    .collect();
                let h = step / 2.0;
                let mut pts: Vec<(f64, f64)> = Vec::with_capacity(4 * ranks.len());
                for (i, &r) in ranks.iter().enumerate() {
                    pts.push((r as f64 - h, above[i]));
                    pts.push((r as f64 + h, above[i]));
                }
                for (i, &r) in ranks.iter().enumerate().rev() {
                    pts.push((r as f64 + h, below[i]));
                    pts.push((r as f64 - h, below[i]));
                }
                chart
                    .draw_series(std::iter::once(Polygon::new(pts, color(*c).filled())))
                    .map_err(|e| ctx.draw(e))?;
                marks += 1;
                below = above;
            }
        } else {
            let w = step * 0.4;
            for (i, &r) in ranks.iter().enumerate() {
                let mut y = 0.0;
                for (_, c, vals) in parts {
                    let v = vals[i];
                    if v <= 0.0 {
                        continue;
                    }
                    let x = r as f64;
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x - w, y), (x + w, y + v)],
                            color(*c).filled(),
                        )))
                        .map_err(|e| ctx.draw(e))?;
                    marks += 1;
                    y += v;
                }
            }
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot {
        svg,
        marks,
        // Parts with nothing drawn (no reads, no stdio) stay out of the legend.
        legend: parts
            .iter()
            .filter(|p| p.2.iter().any(|v| *v > 0.0))
            .map(|p| (p.0.to_string(), p.1))
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
    // Calls narrower than a pixel are drawn one pixel wide.
    let px_ns = end / f64::from(WIDTH - left - 30);
    let mut svg = String::new();
    let mut marks = 0;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let xt = axis::ticks(
            0.0,
            end * 1.01,
            Unit::Nanos,
            f64::from(WIDTH - left - 30),
            f64::from(TICK_FONT),
            true,
            false,
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_left(left)
            .margin_right(20)
            .x_label_area_size(40)
            .build_cartesian_2d(Keyed::lin(0f64..end * 1.01, &xt), 0f64..n as f64)
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("time (rebuilt from mean gaps and durations)")
            .x_label_formatter(&|v| xt.label(*v))
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, DESC_FONT))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        for (i, (label, spans)) in lanes.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let rects = spans.iter().map(|&(s, d, nested, c)| {
                let x0 = s.max(0.0);
                let x1 = x0 + d.max(px_ns);
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
/// the target, and the value the extrapolated trace holds at the target as a triangle; all in
/// the quantity's colour `colour` (its op's), on a log2 rank axis so that inputs at 4-16 ranks
/// and a target at 1,024 or 2^20 are all readable.
#[allow(clippy::too_many_arguments)]
pub fn scaling(
    title: &str,
    input: &str,
    y_desc: &str,
    unit: Unit,
    points: &[(f64, f64)],
    curve: Option<&Curve<'_>>,
    target: Option<(f64, Option<f64>)>,
    colour: usize,
) -> Result<Plot, ReportError> {
    let ctx = Ctx { plot: title, input };
    if points.is_empty() {
        return Err(ctx.empty());
    }
    let x_max = points
        .iter()
        .map(|p| p.0)
        .chain(target.map(|t| t.0))
        .fold(1.0f64, f64::max);
    let x_min = points
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .clamp(1.0, x_max);
    let line: Vec<(f64, f64)> = match curve {
        Some(c) => (0..=200)
            .filter_map(|i| {
                // Even steps on the log axis.
                let x = x_min * (x_max / x_min).powf(i as f64 / 200.0);
                (c.eval)(x).filter(|y| y.is_finite()).map(|y| (x, y))
            })
            .collect(),
        None => Vec::new(),
    };
    let ys_all: Vec<f64> = points
        .iter()
        .map(|p| p.1)
        .chain(line.iter().map(|p| p.1))
        .chain(target.and_then(|t| t.1))
        .collect();
    let (y_lo, y_hi) = ys_all
        .iter()
        .fold((0.0f64, 0.0f64), |(lo, hi), y| (lo.min(*y), hi.max(*y)));
    let y_hi = if y_hi > y_lo { y_hi } else { y_lo + 1.0 };
    let pad = (y_hi - y_lo) * 0.1;
    // Values over orders of magnitude (calls or bytes growing with the rank count from 4 to
    // 1,024) on a log axis too, so that the input scales are not flattened onto zero.
    let positive = ys_all.iter().all(|y| *y > 0.0);
    let y_min = ys_all.iter().copied().fold(f64::INFINITY, f64::min);
    let log_y = positive && y_hi / y_min > 30.0;
    let (y0, y1) = if log_y {
        (y_min / 1.6, y_hi * 1.6)
    } else {
        (y_lo - pad.min(y_lo.abs()), y_hi + pad)
    };
    // Half a power of two either side, so the first and last points are not on the frame.
    let (x0, x1) = (x_min / 1.4, x_max * 1.4);
    const W: u32 = 480;
    const H: u32 = 300;
    let xt = axis::log2_ticks(
        x0,
        x1,
        f64::from(W - SCALING_Y_LABELS - 30),
        f64::from(TICK_FONT),
    );
    let yt = if log_y {
        axis::log_ticks(y0, y1, unit, f64::from(H - 100), f64::from(TICK_FONT))
    } else {
        axis::ticks(
            y0,
            y1,
            unit,
            f64::from(H - 100),
            f64::from(TICK_FONT),
            false,
            false,
        )
    };
    let mut svg = String::new();
    let mut marks = 0;
    let mut legend = vec![("measured at the input scales".to_string(), colour)];
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ctx.draw(e))?;
        let below = title_band(&root, title, 14, W).map_err(|e| ctx.draw(e))?;
        let mut chart = ChartBuilder::on(&below)
            .margin(10)
            .margin_right(16)
            .x_label_area_size(40)
            .y_label_area_size(SCALING_Y_LABELS)
            .build_cartesian_2d(
                Keyed::log(x0..x1, &xt),
                if log_y {
                    Keyed::log(y0..y1, &yt)
                } else {
                    Keyed::lin(y0..y1, &yt)
                },
            )
            .map_err(|e| ctx.draw(e))?;
        chart
            .configure_mesh()
            .x_desc("ranks (log scale)")
            .y_desc(if log_y {
                format!("{y_desc} (log scale)")
            } else {
                y_desc.to_string()
            })
            .x_label_formatter(&|v| xt.label(*v))
            .y_label_formatter(&|v| yt.label(*v))
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, DESC_FONT))
            .draw()
            .map_err(|e| ctx.draw(e))?;
        if let Some(c) = curve
            && line.len() > 1
        {
            chart
                .draw_series(LineSeries::new(
                    line.iter().copied(),
                    color(colour).stroke_width(2),
                ))
                .map_err(|e| ctx.draw(e))?;
            marks += 1;
            legend.push((format!("model: {}", c.formula), colour));
        }
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 5, color(colour).filled())),
            )
            .map_err(|e| ctx.draw(e))?;
        marks += points.len();
        if let Some((x, Some(y))) = target {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(
                    (x, y),
                    7,
                    color(TARGET_COLOUR).filled(),
                )))
                .map_err(|e| ctx.draw(e))?;
            marks += 1;
            legend.push((
                format!("in the extrapolated trace at {x:.0} ranks"),
                TARGET_COLOUR,
            ));
        }
        root.present().map_err(|e| ctx.draw(e))?;
    }
    Ok(Plot { svg, marks, legend })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_wrap_between_words_within_the_column() {
        let l = "nc_put_vara p.nc (HDF5 0.5%, MPIIO 82.7%, MPI 16.5%, POSIX <0.1%, STDIO <0.1%)";
        let lines = wrap(l, 40);
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines.iter().all(|x| x.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), l);
        assert_eq!(lines[0], "nc_put_vara p.nc (HDF5 0.5%,");
        assert_eq!(lines[1], "MPIIO 82.7%, MPI 16.5%, POSIX <0.1%,");
        // Short labels stay one line; a word longer than a line is cut.
        assert_eq!(wrap("pwrite", 40), ["pwrite"]);
        let w = wrap(&"x".repeat(30), 12);
        assert_eq!(w, ["x".repeat(12), "x".repeat(12), "x".repeat(6)]);
    }
}
