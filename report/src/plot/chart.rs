//! Line charts: series with a second cue besides colour (dashes for
//! references, a marker shape for each measurement), log axes, and panels
//! stacked one above the other.

use std::path::PathBuf;

use plotters::prelude::*;

use super::{fitted, render, FAMILY};

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
    /// A range `(low, high)` for each point, drawn as a vertical bar through
    /// it (the spread over runs, say); empty for none.
    pub spread: Vec<(f64, f64)>,
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
/// Sixth series colour.
pub const RED_: RGBColor = RGBColor(214, 39, 40);
/// Seventh series colour.
pub const CYAN_: RGBColor = RGBColor(23, 170, 190);

fn draw_chart(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    c: &Chart,
    series: &[Series],
    legend_inside: bool,
) {
    let tx = |x: f64| if c.log2_x { x.log2() } else { x };
    let ty = |y: f64| if c.log10_y { y.log10() } else { y };
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| tx(p.0)));
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_lo, y_hi) = (ty(c.y_range.0), ty(c.y_range.1));
    let mut chart = ChartBuilder::on(area)
        .caption(c.title, (FAMILY, fitted(c.title, 19, area.dim_in_pixel().0 - 20)))
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
        .x_labels(if c.log2_x || counts { (x_hi - x_lo).round() as usize + 1 } else { 11 })
        .y_labels(if c.log10_y { (y_hi - y_lo).round() as usize + 1 } else { 6 })
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
            // The spread of each point: a bar from low to high, with caps.
            let spread = || s.spread.iter().zip(&s.points).map(|(&r, &(x, _))| (tx(x), r));
            let bar = |(x, (lo, hi)): (f64, (f64, f64))| {
                PathElement::new(vec![(x, ty(lo)), (x, ty(hi))], colour.stroke_width(1))
            };
            chart.draw_series(spread().map(bar)).expect("draw spread");
            let cap = |x: f64, y: f64| {
                EmptyElement::at((x, ty(y)))
                    + PathElement::new(vec![(-4, 0), (4, 0)], colour.stroke_width(1))
            };
            let caps = spread().flat_map(|(x, (lo, hi))| [cap(x, lo), cap(x, hi)]);
            chart.draw_series(caps).expect("draw spread caps");
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
    if !legend_inside {
        return;
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
            Marker::Circle => {
                vec![(4, 0), (3, 3), (0, 4), (-3, 3), (-4, 0), (-3, -3), (0, -4), (3, -3)]
            }
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
        let points = self.vertices().into_iter().map(|(x, y)| (x + dx, y + dy)).collect::<Vec<_>>();
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
            draw_chart(area, chart, series, true);
        }
    })
}

/// [`line_charts`] with each panel's legend beside it rather than over
/// its upper left corner: for charts whose lines fill every corner.
pub fn line_charts_legend_beside(name: &str, panels: &[(Chart, Vec<Series>)]) -> PathBuf {
    let height = 460 * panels.len() as u32;
    render(name, (760, height), |root| {
        let areas = root.split_evenly((panels.len(), 1));
        for (area, (chart, series)) in areas.iter().zip(panels) {
            let (plot, side) = area.split_horizontally(560);
            draw_chart(&plot, chart, series, false);
            draw_legend(&side, series);
        }
    })
}

/// A legend in its own area: each series' sample (the dashes, or the line
/// with its marker, as [`draw_chart`] draws them) and its label.
fn draw_legend(side: &DrawingArea<SVGBackend, plotters::coord::Shift>, series: &[Series]) {
    let mut solid = 0;
    for (i, s) in series.iter().enumerate() {
        let (x, y) = (6, 64 + 26 * i as i32);
        let line = |from: i32, to: i32| {
            PathElement::new(vec![(x + from, y), (x + to, y)], s.colour.stroke_width(2))
        };
        if s.dashed {
            side.draw(&line(0, 8)).expect("draw legend");
            side.draw(&line(14, 22)).expect("draw legend");
        } else {
            let shape = Marker::ALL[solid % Marker::ALL.len()];
            solid += 1;
            side.draw(&line(0, 22)).expect("draw legend");
            side.draw(&shape.at((x + 11, y), s.colour)).expect("draw legend");
        }
        let label = Text::new(s.label.as_str(), (x + 30, y - 9), (FAMILY, 16).into_font());
        side.draw(&label).expect("draw legend");
    }
}
