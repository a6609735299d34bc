//! Turns the `<text>` elements that plotters writes into `<path>` outlines of
//! the embedded font, so a figure does not depend on the reader's fonts.
//!
//! plotters' SVG backend writes each label as
//! `<text x=".." y=".." dy=".." text-anchor=".." font-family=".." font-size=".."
//! opacity=".." fill=".." [transform=".."]>\nTEXT\n</text>`; we lay the text
//! out with the font's advances and kerning, as a browser would, and emit the
//! glyph curves instead.

use ab_glyph::{Font, FontRef, OutlineCurve, Point};
use std::fmt::Write;

/// `svg` with every `<text>` element replaced by a filled path in `font`,
/// and the smallest text it held: its glyphs' size in pixels per em (a
/// subscript's, if it has one) and the text.
pub fn text_to_paths(svg: &str, font: &'static [u8]) -> (String, Option<(f32, String)>) {
    let font = FontRef::try_from_slice(font).expect("a valid TrueType font");
    let mut out = String::with_capacity(svg.len());
    let mut smallest: Option<(f32, String)> = None;
    let mut rest = svg;
    while let Some(start) = rest.find("<text ") {
        out.push_str(&rest[..start]);
        let tag_end = start + rest[start..].find('>').expect("closed <text> tag");
        let close = tag_end + rest[tag_end..].find("</text>").expect("</text>");
        let attrs = parse_attributes(&rest[start + "<text ".len()..tag_end]);
        let text = unescape(rest[tag_end + 1..close].trim_matches('\n'));
        out.push_str(&text_path(&font, &attrs, &text));
        let em = smallest_em(&attrs, &text);
        if !text.trim().is_empty() && smallest.as_ref().is_none_or(|(s, _)| em < *s) {
            smallest = Some((em, text.trim().to_string()));
        }
        rest = &rest[close + "</text>".len()..];
        rest = rest.strip_prefix('\n').unwrap_or(rest);
    }
    out.push_str(rest);
    (out, smallest)
}

/// The size of a label's smallest glyphs, in pixels per em.
fn smallest_em(attrs: &[(String, String)], text: &str) -> f32 {
    let size = attrs
        .iter()
        .find(|(k, _)| k == "font-size")
        .and_then(|(_, v)| v.parse::<f32>().ok())
        .unwrap_or(0.0);
    match pieces(text).iter().any(|(_, sub)| *sub) {
        true => size * SUB_SCALE,
        false => size,
    }
}

/// How wide `text` is drawn at plotters' font size `size` (which it writes
/// as `size / 1.24` pixels per em), in pixels, laid out as [`text_to_paths`]
/// lays it out.
pub fn text_width(text: &str, size: f64, font: &'static [u8]) -> f64 {
    let font = FontRef::try_from_slice(font).expect("a valid TrueType font");
    f64::from(layout(&font, text, (size / 1.24) as f32).1)
}

fn parse_attributes(s: &str) -> Vec<(String, String)> {
    let mut attrs = Vec::new();
    let mut rest = s.trim();
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim().to_string();
        let value_end = eq + 2 + rest[eq + 2..].find('"').expect("closing quote");
        attrs.push((key, unescape(&rest[eq + 2..value_end])));
        rest = &rest[value_end + 1..];
    }
    attrs
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

/// The pieces of a label: `_x` or `_{xy}` is a subscript, as in the
/// book's notation (`d_k`, `d_model`, `ω_5`, `‖A‖_F`); the rest is normal.
fn pieces(text: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = vec![(String::new(), false)];
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next_is_word = chars.peek().is_some_and(|n| n.is_alphanumeric() || *n == '{');
        if c == '_' && next_is_word {
            let mut sub = String::new();
            if chars.peek() == Some(&'{') {
                chars.next();
                sub.extend(chars.by_ref().take_while(|&c| c != '}'));
            } else {
                while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric()) {
                    sub.push(n);
                    chars.next();
                }
            }
            out.push((sub, true));
            out.push((String::new(), false));
        } else {
            out.last_mut().expect("a piece").0.push(c);
        }
    }
    out.retain(|(t, _)| !t.is_empty());
    out
}

/// How much smaller a subscript is, and how far below the baseline it sits
/// (in ems of the label).
const SUB_SCALE: f32 = 0.8;
const SUB_DROP: f32 = 0.2;

/// Each glyph of a label with its pen position and size in pixels (`size`
/// per em) and its drop below the baseline, and the label's width.
fn layout(font: &FontRef, text: &str, size: f32) -> (Vec<(ab_glyph::GlyphId, f32, f32, f32)>, f32) {
    let units = font.units_per_em().unwrap_or(1000.0);
    let mut glyphs = Vec::new();
    let mut x = 0.0;
    for (piece, sub) in pieces(text) {
        let (em, drop) = if sub { (size * SUB_SCALE, size * SUB_DROP) } else { (size, 0.0) };
        let scale = em / units;
        let mut previous = None;
        for c in piece.chars() {
            let g = font.glyph_id(c);
            if let Some(p) = previous {
                x += font.kern_unscaled(p, g) * scale;
            }
            glyphs.push((g, x, scale, drop));
            x += font.h_advance_unscaled(g) * scale;
            previous = Some(g);
        }
    }
    (glyphs, x)
}

/// One `<path>` (empty if the text has no visible glyphs) for one label.
fn text_path(font: &FontRef, attrs: &[(String, String)], text: &str) -> String {
    let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
    let num = |k: &str| get(k).and_then(|v| v.parse::<f32>().ok()).unwrap_or(0.0);
    let size = num("font-size");
    let units = font.units_per_em().unwrap_or(1000.0);
    let scale = size / units;

    // Horizontal layout: advances plus kerning, subscripts smaller.
    let (glyphs, width) = layout(font, text, size);
    let shift = match get("text-anchor") {
        Some("middle") => -width / 2.0,
        Some("end") => -width,
        _ => 0.0,
    };
    let x_height =
        font.outline(font.glyph_id('x')).map(|o| o.bounds.max.y).unwrap_or(0.5 * units) * scale;
    let dy = match get("dy") {
        Some("0.76em") => 0.76 * size,
        Some("0.5ex") => 0.5 * x_height,
        Some("-0.5ex") => -0.5 * x_height,
        _ => 0.0,
    };
    let (x0, baseline) = (num("x") + shift, num("y") + dy);

    let mut d = String::new();
    for &(g, px, scale, drop) in &glyphs {
        let Some(outline) = font.outline(g) else {
            continue;
        };
        // Font units are y-up; SVG is y-down.
        let at = |p: Point| (x0 + px + p.x * scale, baseline + drop - p.y * scale);
        let mut last: Option<Point> = None;
        for curve in &outline.curves {
            let (start, end) = match *curve {
                OutlineCurve::Line(a, b) => (a, b),
                OutlineCurve::Quad(a, _, b) => (a, b),
                OutlineCurve::Cubic(a, _, _, b) => (a, b),
            };
            if last != Some(start) {
                let (sx, sy) = at(start);
                write!(d, "M{sx:.2} {sy:.2}").unwrap();
            }
            match *curve {
                OutlineCurve::Line(_, b) => {
                    let (bx, by) = at(b);
                    write!(d, "L{bx:.2} {by:.2}").unwrap();
                }
                OutlineCurve::Quad(_, c, b) => {
                    let ((cx, cy), (bx, by)) = (at(c), at(b));
                    write!(d, "Q{cx:.2} {cy:.2} {bx:.2} {by:.2}").unwrap();
                }
                OutlineCurve::Cubic(_, c1, c2, b) => {
                    let ((ax, ay), (cx, cy), (bx, by)) = (at(c1), at(c2), at(b));
                    write!(d, "C{ax:.2} {ay:.2} {cx:.2} {cy:.2} {bx:.2} {by:.2}").unwrap();
                }
            }
            last = Some(end);
        }
    }
    if d.is_empty() {
        return String::new();
    }
    let mut path = format!("<path d=\"{d}\"");
    for key in ["fill", "opacity", "transform"] {
        if let Some(v) = get(key) {
            write!(path, " {key}=\"{}\"", escape(v)).unwrap();
        }
    }
    // Keep the words searchable and readable by screen readers.
    writeln!(path, "><title>{}</title></path>", escape(text)).unwrap();
    path
}
