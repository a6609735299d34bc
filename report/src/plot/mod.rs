//! Shared figure helpers for the chapter examples: a labelled heatmap with a
//! colour bar, and a line chart. Every figure is an SVG written into
//! `book/figures/` by `cargo xtask figures` (into `target/figures/` when a
//! reader runs an example by hand: [`figure_path`]), with its text turned into outlines of the embedded Noto
//! Sans font, so the file looks the same in every browser and is
//! byte-identical on every run.

use std::path::PathBuf;

use plotters::prelude::*;

pub mod measured;
mod outline;

/// The font family name the figures use; registered from embedded bytes.
const FAMILY: &str = "sans-serif";

/// The variable that `cargo xtask figures` (and `test`, `serve`) sets so
/// that the examples draw the book's own figures.
pub const BOOK_FIGURES: &str = "ATTN_BOOK_FIGURES";

/// Where figure `name` (e.g. `"ch02-weights.svg"`) is written: into the
/// book's `book/figures/` when [`BOOK_FIGURES`] is set to `1`, as `cargo
/// xtask figures` sets it; otherwise into `target/figures/`, so that a
/// reader who runs an example with other parameters never overwrites a
/// figure the book shows.
pub fn figure_path(name: &str) -> PathBuf {
    figure_path_for(name, std::env::var(BOOK_FIGURES).is_ok_and(|v| v == "1"))
}

/// [`figure_path`], into the book's figures or not.
pub fn figure_path_for(name: &str, book: bool) -> PathBuf {
    let dir = if book { "book" } else { "target" };
    crate::root().join(dir).join("figures").join(name)
}

/// Registers the embedded Noto Sans as the figures' font. Idempotent.
fn register_font() {
    plotters::style::register_font(FAMILY, FontStyle::Normal, ttf_noto_sans::REGULAR)
        .unwrap_or_else(|_| panic!("the embedded Noto Sans font is valid"));
}

/// Draws into an in-memory SVG of `size` pixels with `draw`, then writes it
/// to [`figure_path`] with all text converted to glyph outlines.
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
    std::fs::create_dir_all(path.parent().unwrap()).expect("create the figures' folder");
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader's run of an example writes under `target/`; only the runs
    /// `cargo xtask figures` makes write the book's figures.
    #[test]
    fn only_the_books_own_runs_write_book_figures() {
        let book = figure_path_for("ch05-heads.svg", true);
        let reader = figure_path_for("ch05-heads.svg", false);
        assert!(book.ends_with("book/figures/ch05-heads.svg"), "{}", book.display());
        assert!(reader.ends_with("target/figures/ch05-heads.svg"), "{}", reader.display());
        assert_eq!(book.parent().unwrap().parent(), Some(crate::root().join("book").as_path()));
        assert_eq!(reader.parent().unwrap().parent(), Some(crate::root().join("target").as_path()));
    }
}
