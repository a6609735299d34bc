//! Shared figure helpers for the chapter examples: a labelled heatmap with a
//! colour bar, and a line chart. Every figure is an SVG written into
//! `book/figures/`, with its text turned into outlines of the embedded Noto
//! Sans font, so the file looks the same in every browser and is
//! byte-identical on every run.

use std::path::PathBuf;

use plotters::prelude::*;

pub mod measured;
mod outline;

/// The font family name the figures use; registered from embedded bytes.
const FAMILY: &str = "sans-serif";

/// Where figure `name` (e.g. `"ch02-weights.svg"`) lives in the book.
pub fn figure_path(name: &str) -> PathBuf {
    crate::root().join("book").join("figures").join(name)
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
    let (svg, smallest) = outline::text_to_paths(&svg, ttf_noto_sans::REGULAR);
    if let Some((em, text)) = smallest {
        legible(name, size.0, em as f64, &text);
    }
    let path = figure_path(name);
    std::fs::create_dir_all(path.parent().unwrap()).expect("create book/figures");
    std::fs::write(&path, svg).expect("write figure");
    path
}

/// The width of the book's text column in CSS pixels: a wider figure is
/// shown scaled down to it, a narrower one at its own size.
const COLUMN: f64 = 750.0;

/// The smallest text a reader should have to read, in CSS pixels.
const SMALLEST_TEXT: f64 = 10.0;

/// Panics, naming it, if the figure `name`'s smallest `text`, `em` pixels
/// per em in a figure `width` pixels wide, would render below
/// [`SMALLEST_TEXT`] pixels in the book's column. (plotters writes a font of
/// size `s` as `s / 1.24` pixels per em; a subscript counts at its size.)
/// With `ATTN_FIGURE_SIZES` set, prints the size.
fn legible(name: &str, width: u32, em: f64, text: &str) {
    let px = em * (COLUMN / width as f64).min(1.0);
    if std::env::var_os("ATTN_FIGURE_SIZES").is_some() {
        eprintln!("{name}: smallest text {px:.1} px ({text:?})");
    }
    assert!(
        px >= SMALLEST_TEXT,
        "{name}: the text {text:?} would render at {px:.1} px in the book's {COLUMN} px \
         column (at least {SMALLEST_TEXT} px is legible): draw it larger, or the figure \
         narrower or in fewer panels"
    );
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

mod chart;
mod heatmap;
#[allow(unused_imports)] // each example uses only some of the helpers
pub use chart::*;
#[allow(unused_imports)]
pub use heatmap::*;
