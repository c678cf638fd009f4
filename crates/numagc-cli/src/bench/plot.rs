//! The harness's plots, each written as SVG and PNG:
//!
//! - `speedup`: speedup against vprocs, one panel per benchmark, one line
//!   per series (collector plan and placement policy) and the ideal
//!   speedup dashed, as the paper's Figures 4 to 7 (which draw one machine
//!   and policy per figure; here the series of a benchmark share its
//!   panel);
//! - `gc_share`: the median GC share of each configuration, benchmarks on
//!   the x axis, one bar per (vprocs, series) in each group;
//! - `pauses`: the collection pauses of all the runs of each benchmark
//!   (all vproc counts and policies merged; each plan apart when several
//!   were run), as a histogram outline per benchmark (and plan) with
//!   log-spaced bins on a log time axis.
//!
//! A series is one (plan, policy) pair run, coloured alike in both plots.
//! Its label names the plan only when more than one plan was run
//! ("split/local", legend "plan/policy: split/local"), and else the
//! policy alone ("local", legend "policy: local"), as before plans were a
//! dimension of the harness.
//!
//! Text is drawn with a font compiled into the binary (DejaVu Sans, see
//! `assets/README.md`) through plotters' `ab_glyph` feature, so no system
//! font library is needed.

use super::record::{RunRecord, Summary};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// DejaVu Sans; its licence is in `assets/LICENSE-DejaVu.txt`.
const FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
pub(crate) const FONT: &str = "sans-serif";

const TITLE_PX: u32 = 34;
const PANEL_TITLE_PX: u32 = 28;
const DESC_PX: u32 = 26;
const TICK_PX: u32 = 22;
const LEGEND_PX: u32 = 24;
const NOTE_PX: u32 = 20;

/// Width and height of the bar chart and the histogram.
const SIZE: (u32, u32) = (1200, 800);

/// Tableau 10 without its grey (kept for the ideal line).
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const IDEAL: RGBColor = RGBColor(130, 130, 130);
const GRID: RGBColor = RGBColor(225, 225, 225);

type Res<T = ()> = Result<T, Box<dyn Error>>;

/// Writes `speedup`, `gc_share` and `pauses`, each as `.svg` and `.png`,
/// into `dir` (created if missing), and returns the paths written.
pub fn write_plots(
    dir: &Path,
    summaries: &[Summary],
    runs: &[RunRecord],
) -> Result<Vec<PathBuf>, String> {
    if summaries.is_empty() {
        return Err("no results to plot: the list of configuration summaries is empty".into());
    }
    if runs.is_empty() {
        return Err("no results to plot: the list of runs is empty".into());
    }
    register_fonts()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("creating plot directory {}: {e}", dir.display()))?;

    let plots = [
        ("speedup", Plot::Speedup(SpeedupData::new(summaries))),
        ("gc_share", Plot::GcShare(GcShareData::new(summaries))),
        ("pauses", Plot::Pauses(PauseData::new(runs))),
    ];
    let mut written = Vec::new();
    for (name, plot) in &plots {
        let size = plot.size();
        let svg = dir.join(format!("{name}.svg"));
        render(SVGBackend::new(&svg, size).into_drawing_area(), plot)
            .map_err(|e| format!("writing {}: {e}", svg.display()))?;
        written.push(svg);
        let png = dir.join(format!("{name}.png"));
        render(BitMapBackend::new(&png, size).into_drawing_area(), plot)
            .map_err(|e| format!("writing {}: {e}", png.display()))?;
        written.push(png);
    }
    Ok(written)
}

/// Registers the embedded font under the generic family names plotters
/// uses, once per process.
pub(crate) fn register_fonts() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            plotters::style::register_font(family, FontStyle::Normal, FONT_BYTES).map_err(
                |_| "the embedded plot font (DejaVu Sans) could not be read".to_string(),
            )?;
        }
        Ok(())
    })
    .clone()
}

enum Plot {
    Speedup(SpeedupData),
    GcShare(GcShareData),
    Pauses(PauseData),
}

impl Plot {
    fn size(&self) -> (u32, u32) {
        match self {
            Plot::Speedup(d) => d.size(),
            _ => SIZE,
        }
    }
}

fn render<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, plot: &Plot) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    match plot {
        Plot::Speedup(d) => draw_speedup(&root, d)?,
        Plot::GcShare(d) => draw_gc_share(&root, d)?,
        Plot::Pauses(d) => draw_pauses(&root, d)?,
    }
    root.present()?;
    Ok(())
}

// ---------------------------------------------------------------- data

/// Values in order of first appearance, without repeats.
fn first_seen<'a>(xs: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in xs {
        if !out.iter().any(|o| o == x) {
            out.push(x.to_string());
        }
    }
    out
}

/// The series of the speedup and GC-share plots: every (plan, policy) pair
/// run, in order of first appearance.
struct Series {
    /// (plan, policy).
    keys: Vec<(String, String)>,
    /// More than one plan was run: labels name the plan.
    several_plans: bool,
}

impl Series {
    fn new(summaries: &[Summary]) -> Series {
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in summaries {
            if !keys
                .iter()
                .any(|(plan, policy)| *plan == s.plan && *policy == s.numa_policy)
            {
                keys.push((s.plan.clone(), s.numa_policy.clone()));
            }
        }
        let several_plans = first_seen(keys.iter().map(|k| k.0.as_str())).len() > 1;
        Series {
            keys,
            several_plans,
        }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The index of the series `s` belongs to.
    fn index_of(&self, s: &Summary) -> usize {
        self.keys
            .iter()
            .position(|(plan, policy)| *plan == s.plan && *policy == s.numa_policy)
            .unwrap_or(0)
    }

    /// "local", or "split/local" when several plans were run.
    fn name(&self, i: usize) -> String {
        let (plan, policy) = &self.keys[i];
        if self.several_plans {
            format!("{plan}/{policy}")
        } else {
            policy.clone()
        }
    }

    /// The speedup plot's legend entry: "policy: local", or
    /// "plan/policy: split/local" when several plans were run.
    fn legend(&self, i: usize) -> String {
        let what = if self.several_plans {
            "plan/policy"
        } else {
            "policy"
        };
        format!("{what}: {}", self.name(i))
    }
}

struct SpeedupData {
    benchmarks: Vec<String>,
    series: Series,
    /// Per benchmark, per series: (vprocs, speedup), by vprocs.
    lines: Vec<Vec<Vec<(f64, f64)>>>,
    /// Per benchmark: the vproc count its speedups are relative to.
    bases: Vec<f64>,
    /// Every vproc count run, ascending.
    vprocs: Vec<usize>,
    y_max: f64,
}

impl SpeedupData {
    fn new(summaries: &[Summary]) -> SpeedupData {
        let benchmarks = first_seen(summaries.iter().map(|s| s.benchmark.as_str()));
        let series = Series::new(summaries);
        let mut vprocs: Vec<usize> = summaries.iter().map(|s| s.vprocs).collect();
        vprocs.sort_unstable();
        vprocs.dedup();
        let mut lines = Vec::new();
        let mut bases = Vec::new();
        let mut y_max = 0.0f64;
        for b in &benchmarks {
            let of_b: Vec<&Summary> = summaries.iter().filter(|s| &s.benchmark == b).collect();
            let base = of_b
                .iter()
                .filter_map(|s| s.speedup_base_vprocs)
                .min()
                .or_else(|| of_b.iter().map(|s| s.vprocs).min())
                .unwrap_or(1)
                .max(1);
            bases.push(base as f64);
            let per_series: Vec<Vec<(f64, f64)>> = (0..series.len())
                .map(|i| {
                    let mut pts: Vec<(f64, f64)> = of_b
                        .iter()
                        .filter(|s| series.index_of(s) == i)
                        .filter_map(|s| {
                            s.speedup
                                .filter(|v| v.is_finite())
                                .map(|v| (s.vprocs as f64, v))
                        })
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    pts
                })
                .collect();
            for (_, y) in per_series.iter().flatten() {
                y_max = y_max.max(*y);
            }
            y_max = y_max.max(*vprocs.last().unwrap_or(&1) as f64 / base as f64);
            lines.push(per_series);
        }
        SpeedupData {
            benchmarks,
            series,
            lines,
            bases,
            vprocs,
            y_max: y_max.max(1.0),
        }
    }

    fn grid(&self) -> (usize, usize) {
        let n = self.benchmarks.len().max(1);
        let cols = ((n as f64 * 1.5).sqrt().ceil() as usize).clamp(1, n).min(4);
        (n.div_ceil(cols), cols)
    }

    fn size(&self) -> (u32, u32) {
        let (rows, cols) = self.grid();
        let w = (cols as u32 * 400).max(1200);
        let h = (180 + rows as u32 * 460).max(800);
        (w, h)
    }
}

struct GcShareData {
    benchmarks: Vec<String>,
    series: Series,
    /// (vprocs, series index), by vprocs then series.
    configs: Vec<(usize, usize)>,
    /// Per benchmark, per configuration: the median GC share in percent.
    values: Vec<Vec<Option<f64>>>,
}

impl GcShareData {
    fn new(summaries: &[Summary]) -> GcShareData {
        let benchmarks = first_seen(summaries.iter().map(|s| s.benchmark.as_str()));
        let series = Series::new(summaries);
        let mut configs: Vec<(usize, usize)> = summaries
            .iter()
            .map(|s| (s.vprocs, series.index_of(s)))
            .collect();
        configs.sort_unstable();
        configs.dedup();
        let values = benchmarks
            .iter()
            .map(|b| {
                configs
                    .iter()
                    .map(|&(v, i)| {
                        summaries
                            .iter()
                            .find(|s| &s.benchmark == b && s.vprocs == v && series.index_of(s) == i)
                            .map(|s| s.gc_share_median * 100.0)
                            .filter(|x| x.is_finite())
                    })
                    .collect()
            })
            .collect();
        GcShareData {
            benchmarks,
            series,
            configs,
            values,
        }
    }

    fn y_max(&self) -> f64 {
        let m = self
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .fold(0.0, f64::max);
        nice_ceil((m * 1.15).max(1.0))
    }
}

/// Pause bins per decade of the histogram.
const BINS_PER_DECADE: f64 = 5.0;

/// (bin start µs, bin end µs, count) for every bin of the common range.
type PauseSeries = (String, u64, Vec<(f64, f64, u64)>);

struct PauseData {
    /// Per benchmark with pauses (per benchmark and plan when several
    /// plans were run): its name ("binarytrees", "binarytrees, split"),
    /// pause count and bins.
    series: Vec<PauseSeries>,
    /// Bin edges: 10^(k / BINS_PER_DECADE) µs for k in this range.
    k_range: (i32, i32),
    runs: usize,
    /// More than one plan was run: each has its own outlines.
    several_plans: bool,
}

impl PauseData {
    fn new(runs: &[RunRecord]) -> PauseData {
        let bin_of =
            |ns: u64| ((ns.max(1) as f64 / 1000.0).log10() * BINS_PER_DECADE).floor() as i32;
        let plans = first_seen(runs.iter().map(|r| r.plan.as_str()));
        let mut merged: Vec<(String, BTreeMap<i32, u64>)> = Vec::new();
        for b in first_seen(runs.iter().map(|r| r.benchmark.as_str())) {
            for plan in &plans {
                let mut bins = BTreeMap::new();
                for r in runs.iter().filter(|r| r.benchmark == b && r.plan == *plan) {
                    for &(ns, count) in &r.pauses {
                        if count > 0 {
                            *bins.entry(bin_of(ns)).or_insert(0) += count;
                        }
                    }
                }
                if !bins.is_empty() {
                    let name = if plans.len() > 1 {
                        format!("{b}, {plan}")
                    } else {
                        b.clone()
                    };
                    merged.push((name, bins));
                }
            }
        }
        let lo = merged
            .iter()
            .filter_map(|(_, m)| m.keys().next())
            .min()
            .copied()
            .unwrap_or(0);
        let hi = merged
            .iter()
            .filter_map(|(_, m)| m.keys().next_back())
            .max()
            .copied()
            .unwrap_or(0)
            + 1;
        let edge = |k: i32| 10f64.powf(k as f64 / BINS_PER_DECADE);
        let series = merged
            .into_iter()
            .map(|(b, m)| {
                let total = m.values().sum();
                let bins = (lo..hi)
                    .map(|k| (edge(k), edge(k + 1), m.get(&k).copied().unwrap_or(0)))
                    .collect();
                (b, total, bins)
            })
            .collect();
        PauseData {
            series,
            k_range: (lo, hi),
            runs: runs.len(),
            several_plans: plans.len() > 1,
        }
    }
}

// ------------------------------------------------------------- helpers

/// The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k at least `x`.
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= x * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// A number without needless decimals.
fn fmt_num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else if x.abs() >= 10.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A count, shortened with k and M from 10 000 on.
fn fmt_count(x: f64) -> String {
    if x.abs() >= 1e6 {
        format!("{}M", fmt_num(x / 1e6))
    } else if x.abs() >= 1e4 {
        format!("{}k", fmt_num(x / 1e3))
    } else {
        fmt_num(x)
    }
}

/// An integer with thousands separated by commas.
fn fmt_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A duration given in µs, with its unit.
fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", fmt_num(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", fmt_num(us / 1e3))
    } else if us >= 1.0 {
        format!("{} µs", fmt_num(us))
    } else {
        format!("{} ns", fmt_num(us * 1e3))
    }
}

fn style(px: u32) -> TextStyle<'static> {
    (FONT, px).into_font().color(&BLACK)
}

/// A lighter shade of `c`: `t` = 0 is `c`, 1 is white.
fn lighten(c: RGBColor, t: f64) -> RGBColor {
    let m = |x: u8| (x as f64 + (255.0 - x as f64) * t).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
}

impl Marker {
    fn nth(i: usize) -> Marker {
        [
            Marker::Circle,
            Marker::Triangle,
            Marker::Square,
            Marker::Diamond,
        ][i % 4]
    }
}

/// Draws a marker centred on the pixel `(x, y)`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    m: Marker,
    (x, y): (i32, i32),
    c: RGBColor,
) -> Res
where
    DB::ErrorType: 'static,
{
    let s = c.filled();
    match m {
        Marker::Circle => area.draw(&Circle::new((x, y), 7, s))?,
        Marker::Triangle => area.draw(&Polygon::new(
            vec![(x, y - 9), (x - 8, y + 6), (x + 8, y + 6)],
            s,
        ))?,
        Marker::Square => area.draw(&Rectangle::new([(x - 6, y - 6), (x + 6, y + 6)], s))?,
        Marker::Diamond => area.draw(&Polygon::new(
            vec![(x, y - 9), (x + 8, y), (x, y + 9), (x - 8, y)],
            s,
        ))?,
    }
    Ok(())
}

#[derive(Clone)]
enum Swatch {
    /// A line of this colour and width, with a marker or not.
    Line(RGBColor, u32, Option<Marker>),
    Dashed(RGBColor),
    Bar(RGBColor),
    /// No swatch: the label heads a row.
    Heading,
}

impl Swatch {
    fn width(&self) -> u32 {
        match self {
            Swatch::Line(..) | Swatch::Dashed(_) => 48,
            Swatch::Bar(_) => 26,
            Swatch::Heading => 0,
        }
    }
}

/// A legend of rows of entries, centred in its strip.
struct Legend {
    entries: Vec<(Swatch, String)>,
    /// Entry indices of each row.
    rows: Vec<Vec<usize>>,
    /// Width of each entry, its trailing gap included.
    widths: Vec<u32>,
}

const LEGEND_ROW_H: u32 = 38;
const LEGEND_GAP: u32 = 32;

impl Legend {
    /// Lays out `groups` of entries, each group starting a row and wrapped
    /// into rows no wider than `width`. With `uniform`, every heading has
    /// the width of the widest heading and every other entry that of the
    /// widest other entry, so that the rows line up as columns.
    fn new<DB: DrawingBackend>(
        area: &DrawingArea<DB, Shift>,
        groups: Vec<Vec<(Swatch, String)>>,
        width: u32,
        uniform: bool,
    ) -> Res<Legend>
    where
        DB::ErrorType: 'static,
    {
        let entries: Vec<(Swatch, String)> = groups
            .iter()
            .flatten()
            .map(|(s, l)| (s.clone(), l.clone()))
            .collect();
        let mut widths = Vec::new();
        for (swatch, label) in &entries {
            let (w, _) = area.estimate_text_size(label, &style(LEGEND_PX))?;
            let pad = if matches!(swatch, Swatch::Heading) {
                0
            } else {
                10
            };
            widths.push(swatch.width() + pad + w + LEGEND_GAP);
        }
        if uniform {
            let is_heading = |i: usize| matches!(entries[i].0, Swatch::Heading);
            let widest = |h: bool| {
                (0..entries.len())
                    .filter(|&i| is_heading(i) == h)
                    .map(|i| widths[i])
                    .max()
                    .unwrap_or(0)
            };
            let (wh, we) = (widest(true), widest(false));
            for (i, w) in widths.iter_mut().enumerate() {
                *w = if is_heading(i) { wh } else { we };
            }
        }
        let mut rows: Vec<Vec<usize>> = Vec::new();
        let mut i = 0;
        for g in &groups {
            let mut used = u32::MAX;
            for _ in g {
                let w = widths[i];
                match rows.last_mut() {
                    Some(row) if used.saturating_add(w) <= width => row.push(i),
                    _ => {
                        rows.push(vec![i]);
                        used = 0;
                    }
                }
                used += w;
                i += 1;
            }
        }
        Ok(Legend {
            entries,
            rows,
            widths,
        })
    }

    fn height(&self) -> u32 {
        if self.rows.is_empty() {
            0
        } else {
            self.rows.len() as u32 * LEGEND_ROW_H + 8
        }
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Res
    where
        DB::ErrorType: 'static,
    {
        let (w, _) = area.dim_in_pixel();
        let label_style = style(LEGEND_PX).pos(Pos::new(HPos::Left, VPos::Center));
        // Rows are centred as a block: all start where the widest does.
        let row_w = |row: &Vec<usize>| {
            row.iter()
                .map(|&i| self.widths[i])
                .sum::<u32>()
                .saturating_sub(LEGEND_GAP)
        };
        let widest = self.rows.iter().map(row_w).max().unwrap_or(0);
        let uniform_start = (w.saturating_sub(widest) / 2) as i32;
        for (r, row) in self.rows.iter().enumerate() {
            let mut x = if self.rows.len() > 1 && matches!(self.entries[row[0]].0, Swatch::Heading)
            {
                uniform_start
            } else {
                (w.saturating_sub(row_w(row)) / 2) as i32
            };
            let y = (r as u32 * LEGEND_ROW_H + LEGEND_ROW_H / 2 + 4) as i32;
            for &i in row {
                let (swatch, label) = &self.entries[i];
                let x1 = x + swatch.width() as i32;
                match swatch {
                    Swatch::Line(c, lw, m) => {
                        area.draw(&PathElement::new(
                            vec![(x, y), (x1, y)],
                            c.stroke_width(*lw),
                        ))?;
                        if let Some(m) = m {
                            draw_marker(area, *m, ((x + x1) / 2, y), *c)?;
                        }
                    }
                    Swatch::Dashed(c) => {
                        for s in (x..x1).step_by(14) {
                            area.draw(&PathElement::new(
                                vec![(s, y), ((s + 8).min(x1), y)],
                                c.stroke_width(3),
                            ))?;
                        }
                    }
                    Swatch::Bar(c) => {
                        area.draw(&Rectangle::new([(x, y - 12), (x1, y + 12)], c.filled()))?;
                    }
                    Swatch::Heading => {}
                }
                let tx = if matches!(swatch, Swatch::Heading) {
                    x
                } else {
                    x1 + 10
                };
                area.draw(&Text::new(label.clone(), (tx, y), label_style.clone()))?;
                x += self.widths[i] as i32;
            }
        }
        Ok(())
    }
}

/// Splits off a title strip and a legend strip from the top of `root`,
/// draws both, and returns the area below.
fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &Legend,
) -> Res<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    let title_h = TITLE_PX + 20 + if subtitle.is_empty() { 0 } else { NOTE_PX + 8 };
    let (top, rest) = root.split_vertically(title_h);
    let (w, _) = top.dim_in_pixel();
    top.draw(&Text::new(
        title.to_string(),
        ((w / 2) as i32, 12),
        style(TITLE_PX).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    if !subtitle.is_empty() {
        top.draw(&Text::new(
            subtitle.to_string(),
            ((w / 2) as i32, (TITLE_PX + 20) as i32),
            style(NOTE_PX)
                .color(&RGBColor(80, 80, 80))
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    let (leg, body) = rest.split_vertically(legend.height());
    legend.draw(&leg)?;
    Ok(body)
}

fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, what: &str) -> Res
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        what.to_string(),
        ((w / 2) as i32, (h / 2) as i32),
        style(DESC_PX)
            .color(&RGBColor(110, 110, 110))
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

/// A linear axis ticked at given values only.
struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked {
            inner: range.into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

// ------------------------------------------------------------- speedup

/// Tick positions among `counts` (ascending) that are not crowded on an
/// axis from 0 to `max`: the largest is always kept.
fn vproc_ticks(counts: &[usize], max: f64) -> Vec<f64> {
    let min_gap = max / 10.0;
    let mut out: Vec<f64> = Vec::new();
    for &c in counts.iter().rev() {
        let c = c as f64;
        if out.last().is_none_or(|&last| last - c >= min_gap) {
            out.push(c);
        }
    }
    out.reverse();
    out
}

fn draw_speedup<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &SpeedupData) -> Res
where
    DB::ErrorType: 'static,
{
    let mut entries: Vec<(Swatch, String)> = (0..d.series.len())
        .map(|i| {
            (
                Swatch::Line(PALETTE[i % PALETTE.len()], 3, Some(Marker::nth(i))),
                d.series.legend(i),
            )
        })
        .collect();
    entries.push((Swatch::Dashed(IDEAL), "ideal speedup".into()));
    let (w, _) = root.dim_in_pixel();
    let legend = Legend::new(root, vec![entries], w - 40, false)?;
    let base_note = if d.bases.iter().all(|&b| b == 1.0) {
        "speedup = median wall time on 1 vproc / median wall time on n vprocs, same benchmark, plan and policy".to_string()
    } else {
        "speedup = median wall time at the smallest vproc count run / median wall time on n vprocs"
            .to_string()
    };
    let body = header(root, "Speedup vs. number of vprocs", &base_note, &legend)?;

    let (rows, cols) = d.grid();
    let panels = body.split_evenly((rows, cols));
    let x_max_count = *d.vprocs.last().unwrap_or(&1) as f64;
    let x_max = x_max_count + (x_max_count * 0.06).max(0.25);
    let x_ticks = vproc_ticks(&d.vprocs, x_max_count);
    let y_max = nice_ceil(d.y_max * 1.05);
    for (bi, bench) in d.benchmarks.iter().enumerate() {
        let panel = &panels[bi];
        let mut chart = ChartBuilder::on(panel)
            .caption(bench, style(PANEL_TITLE_PX))
            .margin_top(6)
            .margin_left(10)
            .margin_right(24)
            .margin_bottom(6)
            .x_label_area_size(TICK_PX + DESC_PX + 26)
            .y_label_area_size(TICK_PX * 2 + DESC_PX + 10)
            .build_cartesian_2d(Ticked::new(0.0..x_max, x_ticks.clone()), 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc("vprocs (count)")
            .y_desc("speedup (×)")
            .axis_desc_style(style(DESC_PX))
            .label_style(style(TICK_PX))
            .x_label_formatter(&|x| fmt_num(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .y_labels(6)
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .axis_style(BLACK.stroke_width(2))
            .draw()?;
        let base = d.bases[bi];
        chart.draw_series(DashedLineSeries::new(
            vec![(base, 1.0), (x_max_count, x_max_count / base)],
            10,
            8,
            IDEAL.stroke_width(3),
        ))?;
        let plot_area = chart.plotting_area().strip_coord_spec();
        let mut any = false;
        for (pi, pts) in d.lines[bi].iter().enumerate() {
            if pts.is_empty() {
                continue;
            }
            any = true;
            let c = PALETTE[pi % PALETTE.len()];
            chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(3)))?;
            for p in pts {
                let px = chart.backend_coord(p);
                let (ox, oy) = plot_area.get_base_pixel();
                draw_marker(&plot_area, Marker::nth(pi), (px.0 - ox, px.1 - oy), c)?;
            }
        }
        if !any {
            no_data(&plot_area, "no successful runs")?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------ GC share

fn draw_gc_share<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &GcShareData) -> Res
where
    DB::ErrorType: 'static,
{
    let vprocs: Vec<usize> = {
        let mut v: Vec<usize> = d.configs.iter().map(|c| c.0).collect();
        v.dedup();
        v
    };
    // Hue by series, shade by vproc count (darker with more).
    let color_of = |(v, p): (usize, usize)| {
        let base = PALETTE[p % PALETTE.len()];
        let j = vprocs.iter().position(|&x| x == v).unwrap_or(0);
        let t = if vprocs.len() > 1 {
            0.6 * (1.0 - j as f64 / (vprocs.len() - 1) as f64)
        } else {
            0.0
        };
        lighten(base, t)
    };
    // One legend row per series, one swatch per vproc count run with it:
    // "local, vprocs: [] 1 [] 2 [] 4" ("split/local, vprocs: ..." when
    // several plans were run).
    let groups: Vec<Vec<(Swatch, String)>> = (0..d.series.len())
        .map(|p| {
            let mut row = vec![(Swatch::Heading, format!("{}, vprocs:", d.series.name(p)))];
            for &(v, q) in &d.configs {
                if q == p {
                    row.push((Swatch::Bar(color_of((v, p))), v.to_string()));
                }
            }
            row
        })
        .collect();
    let (w, _) = root.dim_in_pixel();
    let legend = Legend::new(root, groups, w - 40, true)?;
    let body = header(
        root,
        "GC share of machine time per benchmark",
        "median over repetitions of collection time summed over vprocs / (wall time × vprocs)",
        &legend,
    )?;

    // Benchmark names are written under their groups, turned upright when
    // they do not fit across.
    let nb = d.benchmarks.len();
    let y_label_w = TICK_PX * 2 + DESC_PX + 26;
    let (bw, _) = body.dim_in_pixel();
    let group_px = (bw.saturating_sub(y_label_w + 40)) / nb.max(1) as u32;
    let mut widest = 0;
    for b in &d.benchmarks {
        widest = widest.max(body.estimate_text_size(b, &style(TICK_PX))?.0);
    }
    let upright = widest + 12 > group_px;
    let names_h = if upright { widest + 16 } else { TICK_PX + 14 };

    let centres: Vec<f64> = (0..nb).map(|i| i as f64 + 0.5).collect();
    let y_max = d.y_max();
    let mut chart = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(30)
        .margin_top(10)
        .margin_bottom(6)
        .x_label_area_size(names_h + DESC_PX + 16)
        .y_label_area_size(y_label_w)
        .build_cartesian_2d(Ticked::new(0.0..nb as f64, centres), 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("benchmark")
        .y_desc("GC share (% of wall time × vprocs)")
        .axis_desc_style(style(DESC_PX))
        .label_style(style(TICK_PX))
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|y| fmt_num(*y))
        .y_labels(8)
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.stroke_width(2))
        .draw()?;
    let (ox, oy) = body.get_base_pixel();
    for (i, name) in d.benchmarks.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let (x, y) = (x - ox, y - oy + 10);
        let text = if upright {
            Text::new(
                name.clone(),
                (x, y),
                style(TICK_PX)
                    .transform(FontTransform::Rotate270)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            )
        } else {
            Text::new(
                name.clone(),
                (x, y),
                style(TICK_PX).pos(Pos::new(HPos::Center, VPos::Top)),
            )
        };
        body.draw(&text)?;
    }

    let k = d.configs.len().max(1) as f64;
    let (pad, inner) = (0.1, 0.8);
    let bar_w = inner / k;
    let bar_px = group_px as f64 * bar_w;
    let value_style = style(NOTE_PX).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (bi, vals) in d.values.iter().enumerate() {
        for (ci, v) in vals.iter().enumerate() {
            let Some(v) = *v else { continue };
            let x0 = bi as f64 + pad + ci as f64 * bar_w;
            let x1 = x0 + bar_w * 0.92;
            let c = color_of(d.configs[ci]);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x1, v)],
                c.filled(),
            )))?;
            // The value over the bar, where it fits.
            let label = fmt_num((v * 10.0).round() / 10.0);
            if bar_px >= body.estimate_text_size(&label, &style(NOTE_PX))?.0 as f64 + 4.0 {
                chart.draw_series(std::iter::once(Text::new(
                    label,
                    ((x0 + x1) / 2.0, v),
                    value_style.clone(),
                )))?;
            }
        }
    }
    Ok(())
}

// -------------------------------------------------------------- pauses

fn draw_pauses<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PauseData) -> Res
where
    DB::ErrorType: 'static,
{
    // Earlier outlines are drawn wider, so that outlines that coincide
    // still show every colour.
    let n = d.series.len();
    let step = if n > 1 {
        (3.0 / (n - 1) as f64).min(1.5)
    } else {
        0.0
    };
    let width_of = |i: usize| (3.0 + step * (n - 1 - i) as f64).round() as u32;
    let entries = d
        .series
        .iter()
        .enumerate()
        .map(|(i, (b, n, _))| {
            (
                Swatch::Line(PALETTE[i % PALETTE.len()], width_of(i), None),
                format!("{b} ({} pauses)", fmt_thousands(*n)),
            )
        })
        .collect();
    let (w, _) = root.dim_in_pixel();
    let legend = Legend::new(root, vec![entries], w - 40, false)?;
    let note = format!(
        "all runs of each benchmark{} merged ({} runs: every vproc count and policy); {} bins per decade",
        if d.several_plans { " and plan" } else { "" },
        d.runs,
        BINS_PER_DECADE
    );
    let body = header(root, "Collection pause times", &note, &legend)?;
    if d.series.is_empty() {
        return no_data(&body, "no collection pauses were recorded");
    }

    let (lo, hi) = d.k_range;
    // Whole decades around the bins, so that the axis has labelled ticks.
    let dec_lo = (lo as f64 / BINS_PER_DECADE).floor() as i32;
    let dec_hi = ((hi as f64 / BINS_PER_DECADE).ceil() as i32).max(dec_lo + 1);
    let (x0, x1) = (10f64.powi(dec_lo), 10f64.powi(dec_hi));
    let x_bold: Vec<f64> = (dec_lo..=dec_hi).map(|e| 10f64.powi(e)).collect();
    let x_light: Vec<f64> = (dec_lo..dec_hi)
        .flat_map(|e| (2..10).map(move |m| m as f64 * 10f64.powi(e)))
        .collect();

    let counts = || d.series.iter().flat_map(|s| s.2.iter().map(|b| b.2));
    let max_count = counts().max().unwrap_or(1).max(1);
    let min_count = counts().filter(|&c| c > 0).min().unwrap_or(1);
    let log_y = max_count >= 20 * min_count;
    let y_bottom = if log_y { 0.5 } else { 0.0 };
    // The outline of the bins from the first to the last non-empty one.
    let stairs = |bins: &[(f64, f64, u64)]| {
        let first = bins.iter().position(|b| b.2 > 0).unwrap_or(0);
        let last = bins.iter().rposition(|b| b.2 > 0).unwrap_or(bins.len() - 1);
        let bins = &bins[first..=last];
        let mut pts = vec![(bins[0].0, y_bottom)];
        for &(a, b, c) in bins {
            let y = if c == 0 { y_bottom } else { c as f64 };
            pts.push((a, y));
            pts.push((b, y));
        }
        pts.push((bins[bins.len() - 1].1, y_bottom));
        pts
    };

    let y_desc = if log_y {
        "pauses per bin (count, log scale)"
    } else {
        "pauses per bin (count)"
    };
    let x_desc = "pause duration (log scale)";
    fn builder<'a, 'b, DB: DrawingBackend>(
        body: &'a DrawingArea<DB, Shift>,
    ) -> ChartBuilder<'a, 'b, DB> {
        let mut b = ChartBuilder::on(body);
        b.margin_left(10)
            .margin_right(40)
            .margin_top(10)
            .margin_bottom(6)
            .x_label_area_size(TICK_PX + DESC_PX + 30)
            .y_label_area_size(TICK_PX * 3 + DESC_PX + 10);
        b
    }
    let x_axis = || {
        (x0..x1)
            .log_scale()
            .with_key_points(x_bold.clone())
            .with_light_points(x_light.clone())
    };
    let (bold, light) = (RGBColor(205, 205, 205), RGBColor(238, 238, 238));
    if log_y {
        let dec_top = ((max_count as f64 * 1.5).log10().ceil() as i32).max(1);
        let y_bold: Vec<f64> = (0..=dec_top).map(|e| 10f64.powi(e)).collect();
        let y_light: Vec<f64> = (0..dec_top)
            .flat_map(|e| (2..10).map(move |m| m as f64 * 10f64.powi(e)))
            .collect();
        let y_axis = (y_bottom..10f64.powi(dec_top))
            .log_scale()
            .with_key_points(y_bold)
            .with_light_points(y_light);
        let mut chart = builder(&body).build_cartesian_2d(x_axis(), y_axis)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style(style(DESC_PX))
            .label_style(style(TICK_PX))
            .x_label_formatter(&|x| fmt_us(*x))
            .y_label_formatter(&|y| fmt_count(*y))
            .bold_line_style(bold)
            .light_line_style(light)
            .axis_style(BLACK.stroke_width(2))
            .draw()?;
        for (i, (_, _, bins)) in d.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart.draw_series(LineSeries::new(stairs(bins), c.stroke_width(width_of(i))))?;
        }
    } else {
        let y_max = nice_ceil(max_count as f64 * 1.1);
        let mut chart = builder(&body).build_cartesian_2d(x_axis(), 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style(style(DESC_PX))
            .label_style(style(TICK_PX))
            .x_label_formatter(&|x| fmt_us(*x))
            .y_label_formatter(&|y| fmt_count(*y))
            .y_labels(8)
            .bold_line_style(bold)
            .light_line_style(light)
            .axis_style(BLACK.stroke_width(2))
            .draw()?;
        for (i, (_, _, bins)) in d.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart.draw_series(LineSeries::new(stairs(bins), c.stroke_width(width_of(i))))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::record::summarize;
    use super::*;

    fn record(bench: &str, policy: &str, vprocs: usize, rep: usize) -> RunRecord {
        // Speedups that differ by benchmark and policy; pauses that spread
        // over three decades, fewer the longer.
        let bi = ["binarytrees", "parfib", "pingpong"]
            .iter()
            .position(|b| *b == bench)
            .unwrap() as f64;
        let eff = if policy == "local" {
            0.95 - 0.1 * bi
        } else {
            0.85 - 0.15 * bi
        };
        let wall = 10.0 / (1.0 + (vprocs as f64 - 1.0) * eff) * (1.0 + 0.01 * rep as f64);
        let gc_share =
            0.05 + 0.03 * bi + 0.02 * vprocs as f64 + if policy == "local" { 0.0 } else { 0.03 };
        let pauses: Vec<(u64, u64)> = (0..30)
            .map(|i| {
                let ns = (20_000.0 * 1.3f64.powi(i) * (1.0 + 0.5 * bi)) as u64;
                (ns, (2000.0 / 1.4f64.powi(i)) as u64 + 1)
            })
            .collect();
        RunRecord {
            benchmark: bench.into(),
            api: "safe".into(),
            size: "quick".into(),
            params: BTreeMap::new(),
            vprocs,
            plan: "split".into(),
            pes: 0,
            pe_stats: Vec::new(),
            numa_policy: policy.into(),
            repetition: rep,
            wall_s: wall,
            gc_s: wall * gc_share * vprocs as f64,
            gc_share,
            pause_count: pauses.iter().map(|p| p.1).sum(),
            pause_p99_ms: 1.0,
            pause_max_ms: 5.0,
            pause_p999_ms: 0.0,
            peak_heap_bytes: 0,
            pauses,
            minor_collections: 10,
            major_collections: 2,
            promotions: 1,
            global_collections: 1,
            bytes_allocated: 1 << 30,
            bytes_promoted: 1 << 20,
            tasks_forked: 9,
            tasks_stolen: 5,
            numa_locality: Some(0.9),
            copy_imbalance_median: None,
            copy_imbalance_max: None,
            scan_wait_median_us: None,
            promotion_ns_per_object: None,
            promotion_ns_per_kib: None,
            correct: true,
            error: None,
        }
    }

    fn synthetic(vprocs: &[usize]) -> Vec<RunRecord> {
        let mut runs = Vec::new();
        for b in ["binarytrees", "parfib", "pingpong"] {
            for p in ["local", "interleave"] {
                for &v in vprocs {
                    for rep in 1..=3 {
                        runs.push(record(b, p, v, rep));
                    }
                }
            }
        }
        runs
    }

    /// Copies the plots to `$PLOT_SAMPLES/sub` when that is set, to
    /// look at them.
    fn keep_samples(written: &[PathBuf], sub: &str) {
        if let Ok(keep) = std::env::var("PLOT_SAMPLES") {
            let keep = PathBuf::from(keep).join(sub);
            std::fs::create_dir_all(&keep).unwrap();
            for p in written {
                std::fs::copy(p, keep.join(p.file_name().unwrap())).unwrap();
            }
        }
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::env::temp_dir().join(format!("numagc-plot-{tag}-{}-{nanos}", std::process::id()))
    }

    #[test]
    fn plot_writes_six_readable_files() {
        let runs = synthetic(&[1, 2, 4]);
        let summaries = summarize(&runs);
        let dir = temp_dir("six");
        let written = write_plots(&dir, &summaries, &runs).unwrap();
        assert_eq!(written.len(), 6);
        for name in ["speedup", "gc_share", "pauses"] {
            for ext in ["svg", "png"] {
                let p = dir.join(format!("{name}.{ext}"));
                assert!(written.contains(&p), "{} not returned", p.display());
                let bytes = std::fs::read(&p).unwrap();
                assert!(!bytes.is_empty(), "{} is empty", p.display());
                if ext == "png" {
                    assert!(
                        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
                        "{} is not a PNG",
                        p.display()
                    );
                }
            }
        }
        let svg = |name: &str| std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        let (speedup, gc, pauses) = (svg("speedup"), svg("gc_share"), svg("pauses"));
        for text in [&speedup, &gc, &pauses] {
            assert!(text.contains("<text"), "no text in an SVG");
            for b in ["binarytrees", "parfib", "pingpong"] {
                assert!(text.contains(b), "{b} missing");
            }
        }
        for label in [
            "vprocs (count)",
            "speedup (×)",
            "policy: local",
            "policy: interleave",
            "ideal speedup",
        ] {
            assert!(speedup.contains(label), "speedup.svg lacks {label:?}");
        }
        for label in [
            "GC share (% of wall time × vprocs)",
            "benchmark",
            "local, vprocs:",
            "interleave, vprocs:",
        ] {
            assert!(gc.contains(label), "gc_share.svg lacks {label:?}");
        }
        for label in ["pause duration (log scale)", "pauses per bin (count", "µs"] {
            assert!(pauses.contains(label), "pauses.svg lacks {label:?}");
        }
        // One plan: no label names it.
        for text in [&speedup, &gc, &pauses] {
            assert!(!text.contains("split"), "a label names the one plan");
        }
        keep_samples(&written, "");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plot_with_two_plans_names_the_plan_in_every_series() {
        let mut runs = synthetic(&[1, 2]);
        let other: Vec<RunRecord> = runs
            .iter()
            .map(|r| RunRecord {
                plan: "other".into(),
                wall_s: r.wall_s * 1.2,
                ..r.clone()
            })
            .collect();
        runs.extend(other);
        let summaries = summarize(&runs);
        let dir = temp_dir("plans");
        let written = write_plots(&dir, &summaries, &runs).unwrap();
        assert_eq!(written.len(), 6);
        let svg = |name: &str| std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        let (speedup, gc, pauses) = (svg("speedup"), svg("gc_share"), svg("pauses"));
        for label in [
            "plan/policy: split/local",
            "plan/policy: split/interleave",
            "plan/policy: other/local",
            "plan/policy: other/interleave",
            "same benchmark, plan and policy",
        ] {
            assert!(speedup.contains(label), "speedup.svg lacks {label:?}");
        }
        for label in ["split/local, vprocs:", "other/interleave, vprocs:"] {
            assert!(gc.contains(label), "gc_share.svg lacks {label:?}");
        }
        for label in [
            "binarytrees, split (",
            "binarytrees, other (",
            "and plan merged",
        ] {
            assert!(pauses.contains(label), "pauses.svg lacks {label:?}");
        }
        keep_samples(&written, "two-plans");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plot_with_two_vproc_counts_and_no_pauses() {
        let mut runs = synthetic(&[1, 2]);
        for r in &mut runs {
            r.pauses.clear();
        }
        let summaries = summarize(&runs);
        let dir = temp_dir("two");
        let written = write_plots(&dir, &summaries, &runs).unwrap();
        assert_eq!(written.len(), 6);
        assert!(std::fs::read_to_string(dir.join("pauses.svg"))
            .unwrap()
            .contains("no collection pauses"));
        keep_samples(&written, "two-vprocs");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plot_many_configurations_and_long_names() {
        let names = [
            "barnes-hut-400k",
            "raytracer-512x512",
            "quicksort-10M",
            "smvm",
            "dmm-600x600",
            "binarytrees-d21",
        ];
        let mut runs = Vec::new();
        for (bi, b) in names.iter().enumerate() {
            for (pi, p) in ["local", "interleave", "node0"].iter().enumerate() {
                for v in [1, 2, 4, 8, 16, 32, 48] {
                    let mut r = record("parfib", p, v, 1);
                    r.benchmark = b.to_string();
                    let eff = 0.98 - 0.08 * bi as f64 - 0.1 * pi as f64;
                    r.wall_s = 100.0 / (1.0 + (v as f64 - 1.0) * eff.powf((v as f64).ln()));
                    r.gc_share = 0.02 + 0.01 * bi as f64 + 0.004 * v as f64 + 0.02 * pi as f64;
                    // Few pauses: the histogram stays on a linear count axis.
                    r.pauses = vec![(50_000 * (bi as u64 + 1), 3), (900_000, 1)];
                    runs.push(r);
                }
            }
        }
        let summaries = summarize(&runs);
        let dir = temp_dir("many");
        let written = write_plots(&dir, &summaries, &runs).unwrap();
        assert_eq!(written.len(), 6);
        let gc = std::fs::read_to_string(dir.join("gc_share.svg")).unwrap();
        assert!(
            gc.contains("node0, vprocs:")
                && gc.contains("\n48\n")
                && gc.contains("raytracer-512x512")
        );
        keep_samples(&written, "many");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plot_single_vproc_count_and_failed_runs() {
        let mut runs = synthetic(&[1]);
        // Every run of one benchmark failed: its panel says so.
        for r in runs.iter_mut().filter(|r| r.benchmark == "parfib") {
            r.correct = false;
            r.error = Some("wrong answer".into());
        }
        let summaries = summarize(&runs);
        let dir = temp_dir("single");
        let written = write_plots(&dir, &summaries, &runs).unwrap();
        assert_eq!(written.len(), 6);
        assert!(std::fs::read_to_string(dir.join("speedup.svg"))
            .unwrap()
            .contains("no successful runs"));
        keep_samples(&written, "single-vproc");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plot_empty_input_is_an_error() {
        let runs = synthetic(&[1]);
        let summaries = summarize(&runs);
        let dir = temp_dir("empty");
        let e = write_plots(&dir, &[], &runs).unwrap_err();
        assert!(e.contains("no results to plot"), "{e}");
        let e = write_plots(&dir, &summaries, &[]).unwrap_err();
        assert!(e.contains("no results to plot"), "{e}");
        assert!(!dir.exists());
    }

    #[test]
    fn plot_unwritable_dir_is_an_error_naming_it() {
        let runs = synthetic(&[1, 2]);
        let summaries = summarize(&runs);
        // A directory under a regular file cannot be created, even by root.
        let file = temp_dir("file");
        std::fs::write(&file, b"not a directory").unwrap();
        let dir = file.join("plots");
        let e = write_plots(&dir, &summaries, &runs).unwrap_err();
        assert!(e.contains(&dir.display().to_string()), "{e}");
        std::fs::remove_file(&file).unwrap();
    }
}
