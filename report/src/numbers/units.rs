//! The units of a page in which figures are compared: each sentence of
//! prose, each Markdown table, each output block (a `text` fence). The
//! check of `numbers::Bindings::mixed_runs` requires the figures of one unit
//! to come from one measurement run with one statistic.

use std::ops::Range;

/// A sentence, a table or an output block: where it is in the page.
pub struct Unit {
    /// Byte range in the page.
    pub range: Range<usize>,
    /// 1-based line of its start.
    pub line: usize,
    /// `"sentence"`, `"table"` or `"output block"`.
    pub kind: &'static str,
}

/// The page's units, in order.
pub fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut fence: Option<(usize, usize, bool)> = None; // start, line, is text
    let mut table: Option<(usize, usize)> = None;
    let mut paragraph: Option<(usize, usize)> = None;
    let line_starts: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .map(|l| {
            let start = offset;
            offset += l.len();
            (start, l)
        })
        .collect();
    let end_of = |start: usize, line: &str| start + line.len();
    let close_paragraph = |p: &mut Option<(usize, usize)>, end: usize, out: &mut Vec<Unit>| {
        if let Some((start, line)) = p.take() {
            out.extend(sentences(text, start..end, line));
        }
    };
    for (i, &(start, line)) in line_starts.iter().enumerate() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            match fence.take() {
                None => {
                    close_paragraph(&mut paragraph, start, &mut out);
                    fence = Some((end_of(start, line), i + 1, info.trim() == "text"));
                }
                Some((body, first, is_text)) => {
                    if is_text {
                        out.push(Unit {
                            range: body..start,
                            line: first + 1,
                            kind: "output block",
                        });
                    }
                }
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if trimmed.starts_with('|') {
            close_paragraph(&mut paragraph, start, &mut out);
            table.get_or_insert((start, i + 1));
            continue;
        }
        if let Some((t, l)) = table.take() {
            out.push(Unit { range: t..start, line: l, kind: "table" });
        }
        let breaks = trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("- (");
        if breaks {
            close_paragraph(&mut paragraph, start, &mut out);
            if trimmed.starts_with("- (") {
                paragraph = Some((start, i + 1));
            }
            continue;
        }
        paragraph.get_or_insert((start, i + 1));
    }
    if let Some((t, l)) = table.take() {
        out.push(Unit { range: t..text.len(), line: l, kind: "table" });
    }
    close_paragraph(&mut paragraph, text.len(), &mut out);
    out
}

/// Abbreviations after which a full stop does not end a sentence.
const ABBREVIATIONS: [&str; 4] = ["e.g", "i.e", "et al", "cf"];

/// The sentences of the paragraph at `range`, which starts on `line`.
fn sentences(text: &str, range: Range<usize>, line: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut start = range.start;
    let bytes = text.as_bytes();
    let line_of = |pos: usize| line + text[range.start..pos].matches('\n').count();
    for i in range.clone() {
        let end_mark = matches!(bytes[i], b'.' | b'?' | b'!');
        let followed =
            bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()) || i + 1 == range.end;
        if !(end_mark && followed) {
            continue;
        }
        let before = &text[start..i];
        if ABBREVIATIONS.iter().any(|a| before.ends_with(a)) {
            continue;
        }
        out.push(Unit { range: start..i + 1, line: line_of(start), kind: "sentence" });
        start = i + 1;
    }
    if start < range.end && !text[start..range.end].trim().is_empty() {
        out.push(Unit { range: start..range.end, line: line_of(start), kind: "sentence" });
    }
    out
}
