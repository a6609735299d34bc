//! Shared figure helpers for the chapter examples: a labelled heatmap with a
//! colour bar, and a line chart. Every figure is an SVG written into
//! `book/figures/`, with its text turned into outlines of the embedded Noto
//! Sans font, so the file looks the same in every browser and is
//! byte-identical on every run.
#![allow(dead_code)] // each example uses only some of the helpers

use std::path::PathBuf;

use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

pub mod measured;
mod outline;

/// The font family name the figures use; registered from embedded bytes.
const FAMILY: &str = "sans-serif";

/// Where figure `name` (e.g. `"ch02-weights.svg"`) lives in the book.
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
    legible(name, size.0, &svg);
    let path = figure_path(name);
    std::fs::create_dir_all(path.parent().unwrap()).expect("create book/figures");
    std::fs::write(&path, outline::text_to_paths(&svg, ttf_noto_sans::REGULAR))
        .expect("write figure");
    path
}

/// The width of the book's text column in CSS pixels: a wider figure is
/// shown scaled down to it, a narrower one at its own size.
const COLUMN: f64 = 750.0;

/// The smallest text a reader should have to read, in CSS pixels.
const SMALLEST_TEXT: f64 = 10.0;

/// Panics, naming the text, if any text of the figure `name` (`width`
/// pixels wide) would render below [`SMALLEST_TEXT`] pixels in the book's
/// column. plotters writes a font of size `s` as `s / 1.24` pixels per em.
/// With `ATTN_FIGURE_SIZES` set, prints each figure's smallest text.
fn legible(name: &str, width: u32, svg: &str) {
    let shown = (COLUMN / width as f64).min(1.0);
    let mut smallest: Option<(f64, String)> = None;
    for text in svg.split("<text ").skip(1) {
        let Some(size) = outline::attribute(text, "font-size") else {
            continue;
        };
        let label = text
            .split('>')
            .nth(1)
            .unwrap_or("")
            .split('<')
            .next()
            .unwrap_or("");
        let subscripted = outline::pieces(label).iter().any(|(_, sub)| *sub);
        let px = size
            * shown
            * if subscripted {
                outline::SUB_SCALE as f64
            } else {
                1.0
            };
        if !label.trim().is_empty() && smallest.as_ref().is_none_or(|(s, _)| px < *s) {
            smallest = Some((px, label.trim().to_string()));
        }
    }
    if let Some((px, label)) = smallest {
        if std::env::var_os("ATTN_FIGURE_SIZES").is_some() {
            eprintln!("{name}: smallest text {px:.1} px ({label:?})");
        }
        assert!(
            px >= SMALLEST_TEXT,
            "{name}: the text {label:?} would render at {px:.1} px in the book's {COLUMN} px \
             column (at least {SMALLEST_TEXT} px is legible): draw it larger, or the figure \
             narrower or in fewer panels"
        );
    }
}

/// Writes a figure drawn freely with plotters' primitives (a diagram):
/// `draw` receives the whole white canvas of `size` pixels.
pub fn drawing(
    name: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>),
) -> PathBuf {
    render(name, size, draw)
}

/// The figures' font at `size` pixels, for [`drawing`]s.
pub fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font())
}

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
    let longest = h
        .col_labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let turn = longest as f64 * LABEL_CHAR_PX > key_px - 4.0;
    let x_labels_px = if turn {
        30 + (longest as f64 * LABEL_CHAR_PX) as u32
    } else {
        55
    };
    let mut chart = ChartBuilder::on(plot)
        .caption(
            h.title,
            (
                FAMILY,
                fitted(h.title, title_size, plot.dim_in_pixel().0 - 20),
            ),
        )
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
            plot.draw(&Text::new(
                text.to_string(),
                (x - x0, y - y0 + 8),
                style.clone(),
            ))
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

/// The largest font size up to `largest` (but not below 15) at which
/// `text` fits in `width` pixels.
fn fitted(text: &str, largest: u32, width: u32) -> u32 {
    (15..=largest)
        .rev()
        .find(|&size| {
            outline::text_width(text, size as f64, ttf_noto_sans::REGULAR) <= width as f64
        })
        .unwrap_or(15)
}

/// About how wide one character of a 15-pixel label is drawn, in pixels.
const LABEL_CHAR_PX: f64 = 7.5;

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
        .find(|&c| key_width(m, c, 120, 55) >= if numbers { 34 } else { 12 })
        .unwrap_or(1);
    let rows = panels.len().div_ceil(columns);
    let key = key_width(m, columns, 120, 55);
    let cell_w = (120 + key * m as u32).max(380.min((COLUMN as u32 - 110) / columns as u32));
    let cell_h = (110 + key.clamp(12, 42) * n as u32).max(300);
    let size = (cell_w * columns as u32 + 110, cell_h * rows as u32 + 50);
    render(name, size, |root| {
        let title_size = fitted(title, 24, size.0 - 20);
        let root = root
            .titled(title, (FAMILY, title_size))
            .expect("draw figure title");
        let (grid, bar) = root.split_horizontally(size.0 as i32 - 110);
        for (area, (h, values)) in grid.split_evenly((rows, columns)).iter().zip(panels) {
            let h = Heatmap {
                annotate: h.annotate.filter(|_| key >= 34),
                ..*h
            };
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
    let h = Heatmap {
        annotate: h.annotate.filter(|_| key >= 34),
        ..*h
    };
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

/// One line of a [`Chart`].
pub struct Series {
    /// Legend text.
    pub label: String,
    /// `(x, y)` in data units (before any log transform).
    pub points: Vec<(f64, f64)>,
    /// Line colour.
    pub colour: RGBColor,
    /// Dashed (a theoretical reference) or solid with markers (a measurement).
    pub dashed: bool,
}

/// A line chart's frame. Log axes are drawn by plotting `log2 x` or
/// `log10 y` on a linear axis and labelling the ticks `2^k` / `10^k`.
#[derive(Clone, Copy)]
pub struct Chart<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// Axis captions.
    pub x_desc: &'a str,
    /// Axis captions.
    pub y_desc: &'a str,
    /// Plot `x` on a base-2 log scale.
    pub log2_x: bool,
    /// Plot `y` on a base-10 log scale.
    pub log10_y: bool,
    /// The visible `y` range, in data units.
    pub y_range: (f64, f64),
}

/// Colours for measured series and references, readable on white.
pub const BLUE_: RGBColor = RGBColor(31, 119, 180);
/// Second series colour.
pub const ORANGE_: RGBColor = RGBColor(230, 120, 20);
/// Reference lines.
pub const GREY_: RGBColor = RGBColor(110, 110, 110);
/// Third series colour.
pub const GREEN_: RGBColor = RGBColor(44, 160, 44);
/// Fourth series colour.
pub const PURPLE_: RGBColor = RGBColor(148, 103, 189);
/// Fifth series colour.
pub const BROWN_: RGBColor = RGBColor(140, 86, 75);

fn draw_chart(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    c: &Chart,
    series: &[Series],
) {
    let tx = |x: f64| if c.log2_x { x.log2() } else { x };
    let ty = |y: f64| if c.log10_y { y.log10() } else { y };
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| tx(p.0)));
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_lo, y_hi) = (ty(c.y_range.0), ty(c.y_range.1));
    let mut chart = ChartBuilder::on(area)
        .caption(
            c.title,
            (FAMILY, fitted(c.title, 19, area.dim_in_pixel().0 - 20)),
        )
        .margin(12)
        .margin_right(24)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
        .expect("build chart axes");
    let whole = |v: f64| (v - v.round()).abs() < 1e-9;
    // A few whole-numbered x values (layers, say) get a tick each and no
    // fractional ticks between them.
    let counts = !c.log2_x
        && x_hi - x_lo <= 20.0
        && series.iter().all(|s| s.points.iter().all(|p| whole(p.0)));
    let x_fmt = |v: &f64| match (c.log2_x, whole(*v)) {
        (true, true) => format!("{}", 2f64.powi(v.round() as i32)),
        (true, false) => String::new(),
        (false, true) => format!("{v:.0}"),
        (false, false) if counts => String::new(),
        (false, false) => format!("{v:.1}"),
    };
    let y_fmt = |v: &f64| match (c.log10_y, whole(*v)) {
        (true, true) if (-3..=4).contains(&(v.round() as i32)) => {
            format!("{}", 10f64.powi(v.round() as i32))
        }
        (true, true) => format!("1e{}", v.round() as i32),
        (true, false) => String::new(),
        (false, _) => format!("{v:.2}"),
    };
    chart
        .configure_mesh()
        .x_labels(if c.log2_x || counts {
            (x_hi - x_lo).round() as usize + 1
        } else {
            11
        })
        .y_labels(if c.log10_y {
            (y_hi - y_lo).round() as usize + 1
        } else {
            6
        })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .expect("draw chart axes");
    // Colour is never the only cue: a dashed series is a reference, and the
    // k-th solid series carries the k-th marker shape, in the legend too.
    let mut solid = 0;
    for s in series {
        let colour = s.colour;
        let points: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (tx(x), ty(y))).collect();
        if s.dashed {
            let legend = move |(x, y): (i32, i32)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], colour.stroke_width(2))
                    + PathElement::new(vec![(14, 0), (22, 0)], colour.stroke_width(2))
            };
            chart
                .draw_series(DashedLineSeries::new(points, 6, 4, colour.stroke_width(2)))
                .expect("draw reference line")
                .label(s.label.as_str())
                .legend(legend);
        } else {
            let shape = Marker::ALL[solid % Marker::ALL.len()];
            solid += 1;
            let legend = move |(x, y): (i32, i32)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (22, 0)], colour.stroke_width(2))
                    + shape.at((11, 0), colour)
            };
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .expect("draw series")
                .label(s.label.as_str())
                .legend(legend);
            // Every point of a measurement; about 12 along a long curve.
            let step = points.len().div_ceil(40).max(points.len() / 12).max(1);
            chart
                .draw_series(
                    points
                        .iter()
                        .step_by(step)
                        .map(|&p| EmptyElement::at(p) + shape.at((0, 0), colour)),
                )
                .expect("draw markers");
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font((FAMILY, 16))
        .draw()
        .expect("draw legend");
}

/// The marker shapes that tell solid series apart without colour, each a
/// filled polygon around its point (offsets in pixels).
#[derive(Debug, Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Plus,
    Diamond,
    TriangleDown,
}

impl Marker {
    const ALL: [Marker; 6] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Plus,
        Marker::Diamond,
        Marker::TriangleDown,
    ];

    fn vertices(self) -> Vec<(i32, i32)> {
        match self {
            Marker::Circle => vec![
                (4, 0),
                (3, 3),
                (0, 4),
                (-3, 3),
                (-4, 0),
                (-3, -3),
                (0, -4),
                (3, -3),
            ],
            Marker::Square => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
            Marker::Triangle => vec![(0, -5), (5, 4), (-5, 4)],
            Marker::Plus => vec![
                (-1, -5),
                (1, -5),
                (1, -1),
                (5, -1),
                (5, 1),
                (1, 1),
                (1, 5),
                (-1, 5),
                (-1, 1),
                (-5, 1),
                (-5, -1),
                (-1, -1),
            ],
            Marker::Diamond => vec![(0, -5), (5, 0), (0, 5), (-5, 0)],
            Marker::TriangleDown => vec![(0, 5), (5, -4), (-5, -4)],
        }
    }

    /// The shape at `(dx, dy)` from its anchor.
    fn at(self, (dx, dy): (i32, i32), colour: RGBColor) -> Polygon<(i32, i32)> {
        let points = self
            .vertices()
            .into_iter()
            .map(|(x, y)| (x + dx, y + dy))
            .collect::<Vec<_>>();
        Polygon::new(points, colour.filled())
    }
}

/// Writes one line chart, or several one above the other (so that each is
/// shown at its full width), to `book/figures/name`.
pub fn line_charts(name: &str, panels: &[(Chart, Vec<Series>)]) -> PathBuf {
    let height = 460 * panels.len() as u32;
    render(name, (620, height), |root| {
        let areas = root.split_evenly((panels.len(), 1));
        for (area, (chart, series)) in areas.iter().zip(panels) {
            draw_chart(area, chart, series);
        }
    })
}
