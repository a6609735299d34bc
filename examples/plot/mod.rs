//! Shared figure helpers for the chapter examples: a labelled heatmap with a
//! colour bar, and a line chart. Every figure is an SVG written into
//! `book/figures/`, with its text turned into outlines of the embedded Noto
//! Sans font, so the file looks the same in every browser and is
//! byte-identical on every run.
#![allow(dead_code)] // each example uses only some of the helpers

use std::path::PathBuf;

use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

mod outline;

/// The font family name the figures use; registered from embedded bytes.
const FAMILY: &str = "sans-serif";

/// Where figure `name` (e.g. `"ch01-weights.svg"`) lives in the book.
pub fn figure_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("book")
        .join("figures")
        .join(name)
}

/// Registers the embedded Noto Sans as the figures' font. Idempotent.
fn register_font() {
    plotters::style::register_font(FAMILY, FontStyle::Normal, ttf_noto_sans::REGULAR)
        .unwrap_or_else(|_| panic!("the embedded Noto Sans font is valid"));
}

/// Draws into an in-memory SVG of `size` pixels with `draw`, then writes it
/// to `book/figures/name` with all text converted to glyph outlines.
fn render(
    name: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>),
) -> PathBuf {
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).expect("fill background");
        draw(&root);
        root.present().expect("finish the SVG");
    }
    let path = figure_path(name);
    std::fs::create_dir_all(path.parent().unwrap()).expect("create book/figures");
    std::fs::write(&path, outline::text_to_paths(&svg, ttf_noto_sans::REGULAR))
        .expect("write figure");
    path
}

/// A heatmap of an `n×m` matrix in `[lo, hi]`.
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

/// Draws `values` (rows × columns) as a heatmap into `area`.
fn draw_heatmap(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    h: &Heatmap,
    values: &ndarray::Array2<f32>,
) {
    let (n, m) = values.dim();
    let (lo, hi) = h.range;
    let (plot, bar) = area.split_horizontally(area.dim_in_pixel().0 as i32 - 110);
    let mut chart = ChartBuilder::on(&plot)
        .caption(h.title, (FAMILY, 22))
        .margin(10)
        .x_label_area_size(55)
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
        .x_label_formatter(&|v| label(h.col_labels, v, false))
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
    draw_colour_bar(&bar, h);
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

/// Writes a single heatmap figure to `book/figures/name`.
pub fn heatmap(name: &str, h: &Heatmap, values: &ndarray::Array2<f32>) -> PathBuf {
    let (n, m) = values.dim();
    let width = (200 + 70 * m as u32).max(520) + 110;
    let height = (150 + 50 * n as u32).max(360);
    render(name, (width, height), |root| draw_heatmap(root, h, values))
}
