//! Heatmaps with a colour bar: one matrix, a grid of them, or a dense one,
//! sized so that every number and label fits the book's column.

use std::path::PathBuf;

use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

use super::{fitted, render, COLUMN, FAMILY};

/// A heatmap of an `n×m` matrix in `[lo, hi]`.
#[derive(Clone, Copy)]
pub struct Heatmap<'a> {
    /// The figure's title.
    pub title: &'a str,
    /// One label per row (drawn top to bottom), e.g. the queries.
    pub row_labels: &'a [&'a str],
    /// One label per column, e.g. the keys.
    pub col_labels: &'a [&'a str],
    /// Axis captions.
    pub x_desc: &'a str,
    /// Axis captions.
    pub y_desc: &'a str,
    /// The colour bar's caption.
    pub value_desc: &'a str,
    /// The range the colours span.
    pub range: (f32, f32),
    /// Print each cell's value with this many decimals (`None`: no numbers).
    pub annotate: Option<usize>,
}

/// Draws `values` (rows × columns) as a heatmap with its colour bar into `area`.
fn draw_heatmap(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    h: &Heatmap,
    values: &ndarray::Array2<f32>,
) {
    let (plot, bar) = area.split_horizontally(area.dim_in_pixel().0 as i32 - 110);
    draw_cells(&plot, h, values, 22);
    draw_colour_bar(&bar, h);
}

/// Draws the cells, labels and title of a heatmap (no colour bar).
fn draw_cells(
    plot: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    h: &Heatmap,
    values: &ndarray::Array2<f32>,
    title_size: u32,
) {
    let (n, m) = values.dim();
    let (lo, hi) = h.range;
    // Key labels wider than their column are turned to read upwards.
    let key_px = (plot.dim_in_pixel().0 as f64 - 100.0) / m as f64;
    let longest = h.col_labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let turn = longest as f64 * LABEL_CHAR_PX > key_px - 4.0;
    let x_labels_px = if turn { 30 + (longest as f64 * LABEL_CHAR_PX) as u32 } else { 55 };
    let mut chart = ChartBuilder::on(plot)
        .caption(h.title, (FAMILY, fitted(h.title, title_size, plot.dim_in_pixel().0 - 20)))
        .margin(10)
        .x_label_area_size(x_labels_px)
        .y_label_area_size(80)
        .build_cartesian_2d((0..m - 1).into_segmented(), (0..n - 1).into_segmented())
        .expect("build heatmap axes");
    let label = |labels: &[&str], v: &SegmentValue<usize>, flip: bool| match v {
        SegmentValue::CenterOf(i) if *i < labels.len() => {
            labels[if flip { labels.len() - 1 - i } else { *i }].to_string()
        }
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(m)
        .y_labels(n)
        .x_label_formatter(&|v| {
            if turn {
                String::new() // drawn below, after the cells
            } else {
                label(h.col_labels, v, false)
            }
        })
        .y_label_formatter(&|v| label(h.row_labels, v, true))
        .x_desc(h.x_desc)
        .y_desc(h.y_desc)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 16))
        .draw()
        .expect("draw heatmap axes");
    for ((i, j), &x) in values.indexed_iter() {
        let y = n - 1 - i; // row 0 at the top
        let colour = ViridisRGB::get_color_normalized(x.clamp(lo, hi), lo, hi);
        let cell = [
            (SegmentValue::Exact(j), SegmentValue::Exact(y)),
            (SegmentValue::Exact(j + 1), SegmentValue::Exact(y + 1)),
        ];
        chart
            .draw_series(std::iter::once(Rectangle::new(cell, colour.filled())))
            .expect("draw cell");
        if let Some(decimals) = h.annotate {
            let t = (x - lo) / (hi - lo);
            let ink = if t > 0.6 { BLACK } else { WHITE };
            let style = TextStyle::from((FAMILY, 14).into_font()).color(&ink).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                ),
            );
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{x:.decimals$}"),
                    (SegmentValue::CenterOf(j), SegmentValue::CenterOf(y)),
                    style,
                )))
                .expect("draw cell value");
        }
    }
    if turn {
        // Read upwards, ending just below the axis under each column.
        let style = TextStyle::from((FAMILY, 15).into_font())
            .transform(FontTransform::Rotate270)
            .pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Center,
            ));
        let (x0, y0) = plot.get_base_pixel();
        for (j, text) in h.col_labels.iter().enumerate().take(m) {
            let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(j), SegmentValue::Exact(0)));
            plot.draw(&Text::new(text.to_string(), (x - x0, y - y0 + 8), style.clone()))
                .expect("draw key label");
        }
    }
}

/// A vertical colour bar for the range `h.range`, captioned `h.value_desc`.
fn draw_colour_bar(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, h: &Heatmap) {
    let (lo, hi) = h.range;
    let steps = 100;
    let mut bar = ChartBuilder::on(area)
        .margin_top(50)
        .margin_bottom(65)
        .margin_right(40)
        .margin_left(5)
        .y_label_area_size(0)
        .right_y_label_area_size(50)
        .build_cartesian_2d(0.0_f32..1.0, lo..hi)
        .expect("build colour bar");
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_desc(h.value_desc)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .draw()
        .expect("draw colour bar axis");
    bar.draw_series((0..steps).map(|s| {
        let (a, b) = (s as f32 / steps as f32, (s + 1) as f32 / steps as f32);
        let (ya, yb) = (lo + a * (hi - lo), lo + b * (hi - lo));
        let colour = ViridisRGB::get_color_normalized((ya + yb) / 2.0, lo, hi);
        Rectangle::new([(0.0, ya), (1.0, yb)], colour.filled())
    }))
    .expect("draw colour bar");
}

/// About how wide one character of a 15-pixel label is drawn, in pixels.
const LABEL_CHAR_PX: f64 = 7.5;

/// The narrowest key column, in pixels, that a cell's number fits in.
const NUMBER_PX: u32 = 34;

/// The pixels for each of `m` keys in a heatmap panel whose labels and
/// margins take `fixed` pixels, with `columns` panels and the colour bar
/// side by side in the book's column: at most `widest`.
fn key_width(m: usize, columns: usize, fixed: u32, widest: u32) -> u32 {
    let panel = (COLUMN as u32 - 110) / columns as u32;
    (panel.saturating_sub(fixed) / m as u32).min(widest)
}

/// Writes a grid of heatmaps (at most `columns` per row, fewer if the keys
/// would not fit the book's column) sharing one colour bar:
/// `panels` pairs each panel's settings (title, labels) with its values;
/// the colour bar takes its range and caption from the first panel.
pub fn heatmap_grid(
    name: &str,
    title: &str,
    columns: usize,
    panels: &[(Heatmap, ndarray::Array2<f32>)],
) -> PathBuf {
    let (n, m) = panels[0].1.dim();
    let numbers = panels[0].0.annotate.is_some();
    // As many panels side by side as leave each key room for its label or
    // its number; the figure is never wider than the book's column.
    let columns = (1..=columns)
        .rev()
        .find(|&c| key_width(m, c, 120, 55) >= if numbers { NUMBER_PX } else { 12 })
        .unwrap_or(1);
    let rows = panels.len().div_ceil(columns);
    let key = key_width(m, columns, 120, 55);
    let cell_w = (120 + key * m as u32).max(380.min((COLUMN as u32 - 110) / columns as u32));
    let cell_h = (110 + key.clamp(12, 42) * n as u32).max(300);
    let size = (cell_w * columns as u32 + 110, cell_h * rows as u32 + 50);
    render(name, size, |root| {
        let title_size = fitted(title, 24, size.0 - 20);
        let root = root.titled(title, (FAMILY, title_size)).expect("draw figure title");
        let (grid, bar) = root.split_horizontally(size.0 as i32 - 110);
        for (area, (h, values)) in grid.split_evenly((rows, columns)).iter().zip(panels) {
            let h = Heatmap { annotate: h.annotate.filter(|_| key >= NUMBER_PX), ..*h };
            draw_cells(area, &h, values, 17);
        }
        draw_colour_bar(&bar, &panels[0].0);
    })
}

/// Writes a single heatmap figure to `book/figures/name`.
pub fn heatmap(name: &str, h: &Heatmap, values: &ndarray::Array2<f32>) -> PathBuf {
    let (n, m) = values.dim();
    let key = key_width(m, 1, 200, 70);
    let width = (200 + key * m as u32).max(520) + 110;
    let height = (150 + key.clamp(18, 50) * n as u32).max(360);
    let h = Heatmap { annotate: h.annotate.filter(|_| key >= NUMBER_PX), ..*h };
    render(name, (width, height), |root| draw_heatmap(root, &h, values))
}

/// Writes a heatmap of a large matrix (no cell values) at a fixed `size` in
/// pixels; label only some rows and columns by passing `""` for the others.
pub fn dense_heatmap(
    name: &str,
    h: &Heatmap,
    values: &ndarray::Array2<f32>,
    size: (u32, u32),
) -> PathBuf {
    render(name, size, |root| draw_heatmap(root, h, values))
}
