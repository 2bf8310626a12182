//! `iotrex report` pages of real traces rendered by headless Chromium at 4, 64 and 1,024 ranks
//! (ior_like traced under `mpirun` at 4, 8, 12, 16 and 64 ranks; 1,024 by `iotrex extrap` from
//! the first four). Chromium lays the page out; a script added to a copy of it (the report
//! itself has none) measures every text of every plot, and the test asserts on what a reader
//! would see: no JavaScript errors, the sections in PyDarshan's order, op names, no two texts
//! of a plot overlapping or cut off at its edge, rank ticks that are whole ranks (one per rank
//! at 4 ranks), and each op in one colour across the page. A NetCDF-4 program's page (four
//! nested layers, long per-call labels) is rendered the same way.
//!
//! Needs `chromium` (`scripts/install-deps.sh` installs it). With `IOTREX_REPORT_SHOTS=DIR`
//! the pages and their screenshots are also copied to DIR for a person to look at.

use crate::common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        for name in ["chromium", "chromium-browser"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return p;
            }
        }
    }
    panic!("chromium not found: run scripts/install-deps.sh (it installs Debian's chromium)");
}

/// Measures, after layout, every non-empty `<text>` of every `<svg>` (its box on the page),
/// the pairs of texts of one plot whose boxes overlap, uncaught errors, and the page height;
/// writes them as JSON into `<pre id="iotrex-geometry">` for `--dump-dom`.
const MEASURE: &str = r#"<script>
(function () {
  var out = { svgs: [], errors: [], height: 0 };
  window.addEventListener('error', function (e) { out.errors.push(String(e.message)); });
  document.querySelectorAll('svg').forEach(function (svg) {
    var sec = svg.closest('details[id]') || null;
    var texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      var s = t.textContent.trim();
      if (s.length > 0 && r.width > 0) {
        texts.push({ s: s, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom });
      }
    });
    var overlaps = [];
    for (var i = 0; i < texts.length; i++) {
      for (var j = i + 1; j < texts.length; j++) {
        var a = texts[i], b = texts[j];
        // One pixel of slack: neighbouring glyph boxes may touch.
        if (a.x0 < b.x1 - 1 && b.x0 < a.x1 - 1 && a.y0 < b.y1 - 1 && b.y0 < a.y1 - 1) {
          overlaps.push([a.s, b.s]);
        }
      }
    }
    // Texts drawn past the plot's own box are cut off on the page (a long label at the left).
    var box = svg.getBoundingClientRect();
    var clipped = texts.filter(function (t) {
      return t.x0 < box.left - 1 || t.x1 > box.right + 1 || t.y0 < box.top - 1 || t.y1 > box.bottom + 1;
    }).map(function (t) { return t.s; });
    out.svgs.push({ section: sec ? sec.id : '', texts: texts, overlaps: overlaps, clipped: clipped });
  });
  out.height = document.documentElement.scrollHeight;
  var pre = document.createElement('pre');
  pre.id = 'iotrex-geometry';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

#[derive(Debug, serde::Deserialize)]
struct Text {
    s: String,
    x0: f64,
    x1: f64,
    y0: f64,
}

#[derive(Debug, serde::Deserialize)]
struct Svg {
    section: String,
    texts: Vec<Text>,
    overlaps: Vec<(String, String)>,
    clipped: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
struct Geometry {
    svgs: Vec<Svg>,
    errors: Vec<String>,
    height: u32,
}

impl Svg {
    fn title(&self) -> &str {
        self.texts.first().map_or("", |t| t.s.as_str())
    }

    /// The x tick labels of a rank axis: the row of whole numbers with the most labels.
    fn rank_ticks(&self) -> Vec<(u32, f64, f64)> {
        let mut rows: BTreeMap<i64, Vec<(u32, f64, f64)>> = BTreeMap::new();
        for t in &self.texts {
            if let Ok(v) = t.s.parse::<u32>() {
                rows.entry(t.y0.round() as i64)
                    .or_default()
                    .push((v, t.x0, t.x1));
            }
        }
        let mut row = rows.into_values().max_by_key(Vec::len).unwrap_or_default();
        row.sort_by(|a, b| a.1.total_cmp(&b.1));
        row
    }
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn run_chromium(args: &[String]) -> (String, String) {
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .output()
        .expect("run chromium");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Renders `report` (every section opened) in Chromium: the measured geometry, and
/// screenshots of the page as delivered at `shot` and with every section open beside it
/// (`NAME-open.png`).
fn render(report: &Path, shot: &Path, dir: &Path) -> (Geometry, String) {
    let html = std::fs::read_to_string(report).expect("report written");
    report::check(&html).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    let open = html
        .replace("<details id=", "<details open id=")
        .replace("<details class=", "<details open class=")
        .replace("</body>", &format!("{MEASURE}</body>"));
    let copy = report.with_extension("open.html");
    std::fs::write(&copy, &open).unwrap();
    let profile = dir.join("chromium-profile");
    let (dom, stderr) = run_chromium(&[
        format!("--user-data-dir={}", profile.display()),
        "--window-size=1400,1000".into(),
        "--dump-dom".into(),
        format!("file://{}", copy.display()),
    ]);
    assert!(
        !stderr.contains("Uncaught") && !stderr.contains(":CONSOLE"),
        "JavaScript errors or console messages rendering {}:\n{stderr}",
        report.display()
    );
    let start = dom
        .find("<pre id=\"iotrex-geometry\">")
        .unwrap_or_else(|| panic!("the measuring script did not run on {}", report.display()));
    let body = &dom[start + "<pre id=\"iotrex-geometry\">".len()..];
    let json = unescape(&body[..body.find("</pre>").expect("closed pre")]);
    let g: Geometry = serde_json::from_str(&json).expect("geometry JSON");
    assert!(g.errors.is_empty(), "{:?}", g.errors);
    // Two screenshots: the page as delivered (the first trace open, the extrapolation at the
    // end) and with every section open. Chromium caps a screenshot's height; a longer page is
    // cut there, which is enough to see it.
    let open_shot = shot.with_file_name(format!(
        "{}-open.png",
        shot.file_stem().unwrap().to_string_lossy()
    ));
    for (page, png) in [(report, shot), (copy.as_path(), open_shot.as_path())] {
        run_chromium(&[
            format!("--user-data-dir={}", profile.display()),
            format!("--window-size=1400,{}", g.height.clamp(800, 16_000)),
            format!("--screenshot={}", png.display()),
            "--hide-scrollbars".into(),
            format!("file://{}", page.display()),
        ]);
        let size = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
        // A blank page compresses to a few KB; plots and tables do not.
        assert!(size > 50_000, "{} is only {size} bytes", png.display());
    }
    (g, dom)
}

/// Sections present and in order: the overview, the traces, then the extrapolation.
fn assert_sections(dom: &str, want: &[&str]) {
    let mut last = 0;
    for w in want {
        let at = dom
            .find(w)
            .unwrap_or_else(|| panic!("the page lacks {w:?}"));
        assert!(
            at >= last,
            "{w:?} comes before the section it should follow"
        );
        last = at;
    }
}

fn assert_legible(g: &Geometry, page: &str) {
    assert!(!g.svgs.is_empty(), "{page}: no plots");
    for svg in &g.svgs {
        assert!(
            svg.overlaps.is_empty(),
            "{page}: texts overlap in plot {:?} ({}): {:?}",
            svg.title(),
            svg.section,
            svg.overlaps
        );
        assert!(
            svg.clipped.is_empty(),
            "{page}: texts cut off at the edge of plot {:?} ({}): {:?}",
            svg.title(),
            svg.section,
            svg.clipped
        );
        for t in &svg.texts {
            // Hashes and internal names stay out of plots; axes say what they measure.
            assert!(
                !t.s.contains("call site 0x") && !t.s.contains("[group") && t.s != "value",
                "{page}: plot {:?} shows {:?}",
                svg.title(),
                t.s
            );
        }
    }
}

fn per_rank_bytes<'a>(g: &'a Geometry, section: &str) -> &'a Svg {
    g.svgs
        .iter()
        .find(|s| s.section == section && s.title() == "File bytes per rank")
        .unwrap_or_else(|| panic!("no 'File bytes per rank' plot in {section}"))
}

/// The colour of each op in every legend and table swatch of the page: one per op.
fn assert_one_colour_per_op(html: &str) {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut n = 0;
    for part in html.split("<i class=\"sw\" style=\"background:").skip(1) {
        let colour = &part[..7];
        let rest = &part[part.find("</i>").unwrap() + 4..];
        let rest = rest.trim_start_matches("<code>");
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !(name.starts_with("MPI_") || rest.contains("(POSIX)") || rest.contains("(STDIO)")) {
            continue;
        }
        n += 1;
        if let Some(c) = seen.insert(name.clone(), colour.to_string()) {
            assert_eq!(c, colour, "{name} has two colours on one page");
        }
    }
    assert!(n >= 10, "{n} op swatches found");
    let distinct: std::collections::BTreeSet<&String> = seen.values().collect();
    assert_eq!(
        distinct.len(),
        seen.len(),
        "two ops share a colour: {seen:?}"
    );
}

/// The per-layer section of the first trace: both charts drawn, the I/O layers with their
/// time in the label (a thin bar is otherwise invisible), the collective write broken down
/// over the library's POSIX writes below it, and its equation.
fn assert_layer_times(g: &Geometry, dom: &str, page: &str) {
    let find = |title: &str| {
        g.svgs
            .iter()
            .find(|s| s.section == "trace-0" && s.title() == title)
            .unwrap_or_else(|| panic!("{page}: no {title:?} plot"))
    };
    let layers = find("Time per I/O layer (mean per rank): exclusive, then nested below");
    for l in ["MPIIO ", "POSIX "] {
        assert!(
            layers.texts.iter().any(|t| t.s.starts_with(l)),
            "{page}: no {l:?} row in the per-layer chart"
        );
    }
    let sites = find("Application-level calls: time by layer (mean per rank)");
    assert!(
        sites
            .texts
            .iter()
            .any(|t| t.s.starts_with("MPI_File_write_at_all (POSIX ")),
        "{page}: the collective write's row does not give its POSIX share"
    );
    let eq = dom
        .split("<code>")
        .find(|c| c.starts_with("MPI_File_write_at_all ") && c.contains(" = "))
        .unwrap_or_else(|| panic!("{page}: no equation of the collective write"));
    let eq = &eq[..eq.find("</code>").unwrap()];
    assert!(
        eq.contains(" = pwrite") && eq.ends_with(" in MPIIO"),
        "{page}: {eq}"
    );
}

#[test]
fn report_pages_at_4_64_and_1024_ranks_render_legibly_in_chromium() {
    let dir = scratch();
    let d = |s: &str| dir.path().join(s);
    let data = d("ior.dat").display().to_string();
    let a = args(&[
        "-a", "mpiio", "-c", "-t", "65536", "-b", "131072", "-s", "2", "-o", &data,
    ]);
    let ior = app("ior_like");
    let trace = |np: u32| d(&format!("ior.{np}.iotrex"));
    for np in [4, 8, 12, 16, 64] {
        mpirun(np, &ior, &a, &trace(np), &Opts::default());
    }
    let s = |p: PathBuf| p.display().to_string();
    let o = iotrex(&[
        "extrap",
        &s(trace(4)),
        &s(trace(8)),
        &s(trace(12)),
        &s(trace(16)),
        "--ranks",
        "1024",
        "-o",
        &s(d("ior.1024.iotrex")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let pages: [(&str, Vec<String>); 3] = [
        ("report-4", vec![s(trace(4))]),
        ("report-64", vec![s(trace(64))]),
        (
            "report-1024",
            vec![
                s(trace(4)),
                s(trace(8)),
                s(trace(12)),
                s(trace(16)),
                "--extrap".into(),
                s(d("ior.1024.iotrex")),
            ],
        ),
    ];
    let keep = std::env::var_os("IOTREX_REPORT_SHOTS").map(PathBuf::from);
    let mut rendered = BTreeMap::new();
    for (name, ins) in &pages {
        let html = d(&format!("{name}.html"));
        let mut argv: Vec<&str> = vec!["report"];
        argv.extend(ins.iter().map(String::as_str));
        argv.extend(["-o", html.to_str().unwrap()]);
        let o = iotrex(&argv);
        assert!(o.status.success(), "{}", text(&o));
        let shot = d(&format!("{name}.png"));
        let (g, dom) = render(&html, &shot, dir.path());
        if let Some(k) = &keep {
            std::fs::create_dir_all(k).unwrap();
            std::fs::copy(&shot, k.join(format!("{name}.png"))).unwrap();
            std::fs::copy(
                d(&format!("{name}-open.png")),
                k.join(format!("{name}-open.png")),
            )
            .unwrap();
            std::fs::copy(&html, k.join(format!("{name}.html"))).unwrap();
        }
        assert_legible(&g, name);
        assert_one_colour_per_op(&std::fs::read_to_string(&html).unwrap());
        rendered.insert(*name, (g, dom));
    }

    // 4 ranks: one tick per rank, each a whole rank, left to right (the old axis read
    // "-0,0,0,1,2,2,2,3,4").
    let (g4, dom4) = &rendered["report-4"];
    assert_sections(
        dom4,
        &[
            "<h2 id=\"overview\">Overview",
            "I/O per layer",
            "Calls per operation",
            "<h3>Files</h3>",
            "Per-rank I/O volume and time",
            "I/O stack",
            "<h3>Time per layer: inclusive and exclusive</h3>",
            "<h3>Timeline</h3>",
        ],
    );
    for op in ["MPI_File_open", "MPI_File_write_at_all", "MPI_File_close"] {
        assert!(dom4.contains(op), "report-4 lacks {op}");
    }
    let ticks: Vec<u32> = per_rank_bytes(g4, "trace-0")
        .rank_ticks()
        .iter()
        .map(|t| t.0)
        .collect();
    assert_eq!(ticks, [0, 1, 2, 3], "rank ticks at 4 ranks");

    for name in ["report-4", "report-64"] {
        let (g, dom) = &rendered[name];
        assert_layer_times(g, dom, name);
    }

    let (g64, _) = &rendered["report-64"];
    let t64 = per_rank_bytes(g64, "trace-0").rank_ticks();
    assert!(t64.len() >= 4 && t64.last().unwrap().0 <= 63, "{t64:?}");

    // 1,024 ranks (the extrapolated trace is the fifth section): round ranks, increasing,
    // apart, and reaching past half the axis.
    let (g1k, dom1k) = &rendered["report-1024"];
    assert_sections(
        dom1k,
        &[
            "<h2 id=\"overview\">Overview",
            "id=\"trace-0\"",
            "id=\"trace-4\"",
            "<h2 id=\"extrap\">Extrapolation to 1024 ranks",
            "Every parameter and timing statistic",
        ],
    );
    let t1k = per_rank_bytes(g1k, "trace-4").rank_ticks();
    assert!(t1k.len() >= 4, "{t1k:?}");
    for w in t1k.windows(2) {
        assert!(w[1].0 > w[0].0 && w[1].1 > w[0].2 + 4.0, "ticks {w:?}");
    }
    assert!(
        t1k.iter().all(|t| t.0 % 10 == 0 || t.0 % 64 == 0),
        "{t1k:?}"
    );
    assert!(t1k.last().unwrap().0 >= 512, "{t1k:?}");
    // Scaling plots: one per quantity (wall time once), on a rank axis that reaches 1024.
    let scaling: Vec<&Svg> = g1k.svgs.iter().filter(|s| s.section.is_empty()).collect();
    assert!(!scaling.is_empty(), "no scaling plots");
    let walls = scaling
        .iter()
        .filter(|s| s.title().starts_with("wall time"))
        .count();
    assert_eq!(walls, 1, "wall time plotted {walls} times");
    for p in &scaling {
        assert!(
            p.texts.iter().any(|t| t.s == "1024"),
            "plot {:?} has no 1024 tick",
            p.title()
        );
    }
}

/// The per-rank axes stay legible at 4,096 ranks (a synthetic trace: no machine here runs
/// 4,096 real ranks): every rank in the file-bytes chart, round ticks that do not touch.
#[test]
fn report_page_at_4096_ranks_has_legible_rank_axes() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.4096.iotrex");
    let html = dir.path().join("report-4096.html");
    let o = iotrex(&[
        "synth",
        "--ranks",
        "4096",
        "--iters",
        "2",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = iotrex(&[
        "report",
        t.to_str().unwrap(),
        "--max-ranks",
        "4096",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let shot = dir.path().join("report-4096.png");
    let (g, _) = render(&html, &shot, dir.path());
    if let Some(k) = std::env::var_os("IOTREX_REPORT_SHOTS").map(PathBuf::from) {
        std::fs::create_dir_all(&k).unwrap();
        std::fs::copy(&shot, k.join("report-4096.png")).unwrap();
    }
    assert_legible(&g, "report-4096");
    for title in [
        "File bytes per rank",
        "Time in I/O calls per rank (application-level calls, by layer)",
    ] {
        let p = g
            .svgs
            .iter()
            .find(|s| s.title() == title)
            .unwrap_or_else(|| panic!("no {title:?} plot"));
        let ticks = p.rank_ticks();
        assert!((4..=11).contains(&ticks.len()), "{title}: {ticks:?}");
        for w in ticks.windows(2) {
            assert!(w[1].0 > w[0].0 && w[1].1 > w[0].2 + 4.0, "{title}: {w:?}");
        }
        assert!(ticks.last().unwrap().0 >= 2048, "{title}: {ticks:?}");
    }
}

/// A NetCDF-4 program traced with the NetCDF and HDF5 layers (`tests/apps/nc4_par.c`, 4 ranks):
/// the per-layer charts name every layer in its own colour, and the per-call chart's labels,
/// which list the shares of five layers below each NetCDF call, wrap instead of running off
/// the plot's left edge (they did: 60-character labels in a column of 340 px).
#[test]
fn report_page_of_a_netcdf_program_shows_its_layers_legibly() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let trace = dir.path().join("nc4.4.iotrex");
    let a = args(&[&format!("{}/p.nc", data.display()), "-s", "3"]);
    let opts = Opts {
        env: vec![
            ("IOTREX_NETCDF", "1".to_string()),
            ("IOTREX_HDF5", "1".to_string()),
        ],
        ..Opts::default()
    };
    mpirun(4, &app("nc4_par"), &a, &trace, &opts);
    let html = dir.path().join("report-nc4.html");
    let o = iotrex(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let shot = dir.path().join("report-nc4.png");
    let (g, _) = render(&html, &shot, dir.path());
    if let Some(k) = std::env::var_os("IOTREX_REPORT_SHOTS").map(PathBuf::from) {
        std::fs::create_dir_all(&k).unwrap();
        std::fs::copy(&shot, k.join("report-nc4.png")).unwrap();
        std::fs::copy(
            dir.path().join("report-nc4-open.png"),
            k.join("report-nc4-open.png"),
        )
        .unwrap();
    }
    assert_legible(&g, "report-nc4");
    let sites = g
        .svgs
        .iter()
        .find(|s| s.title() == "Application-level calls: time by layer (mean per rank)")
        .expect("the per-call chart");
    assert!(
        sites.texts.iter().any(|t| t.s.starts_with("nc_put_vara")),
        "no NetCDF call in the per-call chart: {:?}",
        sites.texts.iter().map(|t| &t.s).collect::<Vec<_>>()
    );
    // Each layer of the legend in its own colour.
    let page = std::fs::read_to_string(&html).unwrap();
    let legend = page
        .split("Application-level calls: time by layer")
        .nth(1)
        .expect("the per-call chart in the page");
    let mut colours = BTreeMap::new();
    for layer in ["NetCDF", "HDF5", "MPIIO", "MPI", "POSIX"] {
        let end = legend
            .find(&format!("</i>{layer}</span>"))
            .unwrap_or_else(|| panic!("{layer} not in the per-call chart's legend"));
        let start = legend[..end].rfind("background:").unwrap() + "background:".len();
        colours.insert(layer, legend[start..start + 7].to_string());
    }
    let distinct: std::collections::BTreeSet<&String> = colours.values().collect();
    assert_eq!(
        distinct.len(),
        colours.len(),
        "layers share a colour: {colours:?}"
    );
}
