//! `numagc arena-bench --plot DIR`: the plots, each as SVG and PNG.
//!
//! - `fig5`: like the paper's Fig. 5, the performance of each allocator at
//!   the first thread count relative to the baseline allocator (the paper's
//!   serial SOLARIS allocator; glibc here), glibc's time / the allocator's,
//!   against X; the no-allocation bound is drawn too (the ceiling).
//! - `fig6-x<X>`: like Fig. 6, the "true" parallel performance: glibc's
//!   time at the first thread count / the allocator's at each thread count,
//!   against threads, one plot per X.
//! - `workloads`: FT, MG, larson and xmalloc-test, glibc's time / the
//!   allocator's at the same thread count, a group of bars (one per
//!   allocator) per workload and thread count.

use super::report::Summary;
use crate::bench::plot::{register_fonts, FONT};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(120, 120, 120),
    RGBColor(23, 190, 207),
];

type Series = (String, Vec<Option<f64>>);

fn median(s: &[Summary], case: &str, k: usize, a: &str) -> Option<f64> {
    s.iter()
        .find(|x| {
            x.case == case && x.threads == k && x.allocator == a && x.answers_ok == Some(true)
        })
        .and_then(|x| x.wall_median_s)
}

fn allocators(s: &[Summary]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for x in s {
        if !v.contains(&x.allocator) {
            v.push(x.allocator.clone());
        }
    }
    v
}

pub fn write(dir: &Path, s: &[Summary], threads: &[usize]) -> Result<Vec<PathBuf>, String> {
    register_fonts()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("creating plot directory {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let names = allocators(s);
    let k0 = threads[0];
    let xs: Vec<usize> = super::XS
        .iter()
        .copied()
        .filter(|x| s.iter().any(|y| y.x == Some(*x)))
        .collect();
    if !xs.is_empty() {
        let labels: Vec<String> = xs.iter().map(|x| format!("X = {x}")).collect();
        let series: Vec<Series> = names
            .iter()
            .map(|a| {
                let v = xs
                    .iter()
                    .map(|x| {
                        let case = format!("fig1 X={x}");
                        median(s, &case, k0, "glibc")
                            .zip(median(s, &case, k0, a))
                            .map(|(g, t)| g / t)
                    })
                    .collect();
                (a.clone(), v)
            })
            .collect();
        written.extend(chart(
            dir,
            "fig5",
            &format!("Fig. 1 microbenchmark, {k0} thread(s): performance relative to glibc"),
            "glibc time / allocator time",
            &labels,
            &series,
            false,
        )?);
        for &x in &xs {
            let case = format!("fig1 X={x}");
            let labels: Vec<String> = threads.iter().map(|k| format!("{k} thread(s)")).collect();
            let series: Vec<Series> = names
                .iter()
                .map(|a| {
                    let v = threads
                        .iter()
                        .map(|&k| {
                            median(s, &case, k0, "glibc")
                                .zip(median(s, &case, k, a))
                                .map(|(g, t)| g / t)
                        })
                        .collect();
                    (a.clone(), v)
                })
                .collect();
            written.extend(chart(
                dir,
                &format!("fig6-x{x}"),
                &format!("Fig. 1, X = {x}: performance relative to glibc on {k0} thread(s)"),
                "glibc time (first thread count) / time",
                &labels,
                &series,
                false,
            )?);
        }
    }
    let mut others: Vec<(String, usize)> = Vec::new();
    for x in s.iter().filter(|x| x.x.is_none()) {
        if !others.iter().any(|(c, k)| *c == x.case && *k == x.threads) {
            others.push((x.case.clone(), x.threads));
        }
    }
    if !others.is_empty() {
        let labels: Vec<String> = others.iter().map(|(c, k)| format!("{c} x{k}")).collect();
        let series: Vec<Series> = names
            .iter()
            .filter(|a| *a != "bound")
            .map(|a| {
                let v = others
                    .iter()
                    .map(|(c, k)| {
                        median(s, c, *k, "glibc")
                            .zip(median(s, c, *k, a))
                            .map(|(g, t)| g / t)
                    })
                    .collect();
                (a.clone(), v)
            })
            .collect();
        written.extend(chart(
            dir,
            "workloads",
            "FT, MG, larson, xmalloc-test: performance relative to glibc",
            "glibc time / allocator time",
            &labels,
            &series,
            true,
        )?);
    }
    Ok(written)
}

fn chart(
    dir: &Path,
    stem: &str,
    title: &str,
    y_desc: &str,
    labels: &[String],
    series: &[Series],
    bars: bool,
) -> Result<Vec<PathBuf>, String> {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .fold(1.0f64, f64::max)
        * 1.15;
    let size = ((160 * labels.len() as u32 + 400).max(900), 650);
    let svg = dir.join(format!("{stem}.svg"));
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        title,
        y_desc,
        labels,
        series,
        max,
        bars,
    )
    .map_err(|e| format!("writing {}: {e}", svg.display()))?;
    let png = dir.join(format!("{stem}.png"));
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        y_desc,
        labels,
        series,
        max,
        bars,
    )
    .map_err(|e| format!("writing {}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    labels: &[String],
    series: &[Series],
    max: f64,
    bars: bool,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let n = labels.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 24))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(labels.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let r = x.round();
            if (x - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < labels.len() {
                labels[r as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()?;
    let w = 0.8 / series.len().max(1) as f64;
    for (i, (name, v)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        if bars {
            let rects: Vec<Rectangle<(f64, f64)>> = v
                .iter()
                .enumerate()
                .filter_map(|(j, y)| {
                    y.map(|y| {
                        let x0 = j as f64 - 0.4 + i as f64 * w;
                        Rectangle::new([(x0, 0.0), (x0 + w * 0.9, y)], c.filled())
                    })
                })
                .collect();
            chart
                .draw_series(rects)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
            continue;
        }
        let pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .filter_map(|(j, y)| y.map(|y| (j as f64, y)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))?;
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(-0.5, 1.0), (n - 0.5, 1.0)],
        BLACK.stroke_width(1),
    )))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
