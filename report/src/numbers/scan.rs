//! Finding the numbers of a page: every token a reader sees as a number,
//! where it is, and the lines that make a claim about data.

use std::ops::Range;

/// A number as written: its text (without thousands separators) and where.
#[derive(Debug, Clone)]
pub struct Token {
    /// The number as written, without thousands separators.
    pub text: String,
    /// Byte offset of its start in the page.
    pub start: usize,
    /// Byte offset just past its end.
    pub end: usize,
    /// 1-based line.
    pub line: usize,
    /// Inside `$…$` or `$$…$$`.
    pub in_math: bool,
    /// Inside a `text` fence (output of an example).
    pub in_output: bool,
}

/// A claim registered for a phrase binds each line holding part of it (a
/// phrase may wrap across lines).
pub(super) fn line_holds(line: &str, phrase: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && (phrase.contains(line) || line.contains(phrase) || {
            let words: Vec<&str> = phrase.split_whitespace().collect();
            (1..words.len()).any(|k| {
                line.ends_with(&words[..k].join(" ")) || line.starts_with(&words[k..].join(" "))
            })
        })
}

/// Words that state something measured about data.
const CLAIM_WORDS: [&str; 16] = [
    "grows",
    "grow",
    "growing",
    "stays",
    "stay",
    "faster",
    "slower",
    "rises",
    "falls",
    "shrinks",
    "halves",
    "doubles",
    "times smaller",
    "times larger",
    "times faster",
    "times slower",
];

pub(super) fn claim_word(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    CLAIM_WORDS.into_iter().find(|w| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + w.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// A line a reader reads: prose, math, a table or an output block.
pub(super) struct ReaderLine<'a> {
    /// 1-based.
    pub(super) number: usize,
    /// Byte offset of the line in the page.
    pub(super) start: usize,
    /// The line, with its newline.
    pub(super) text: &'a str,
    /// Inside a `text` fence (output of an example).
    pub(super) in_output: bool,
}

/// The lines a reader reads: not code (listings and runnable snippets), but
/// prose, math, tables and output blocks; fence lines themselves are left out.
pub(super) fn reader_lines(text: &str) -> Vec<ReaderLine<'_>> {
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                None => Some(info.trim().to_string()),
                Some(_) => None,
            };
            continue;
        }
        let in_output = match &fence {
            Some(info) if info == "text" => true,
            Some(_) => continue,
            None => false,
        };
        lines.push(ReaderLine { number: i + 1, start, text: line, in_output });
    }
    lines
}

/// Removes thousands separators (`10,000`, `10{,}000`) and writes the minus
/// sign as ASCII.
pub(super) fn normalise(s: &str) -> String {
    if NUMBER_WORDS.iter().any(|(w, _)| w.eq_ignore_ascii_case(s)) {
        return s.to_lowercase();
    }
    s.replace("{,}", "").replace(',', "").replace('−', "-")
}

/// Numbers written as words, with their values. "One" is left out: it is
/// far more often a pronoun or an article ("one of them", "one head at a
/// time") than a count a reader would check.
pub const NUMBER_WORDS: [(&str, f64); 22] = [
    ("two", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
    ("thirteen", 13.0),
    ("fourteen", 14.0),
    ("fifteen", 15.0),
    ("sixteen", 16.0),
    ("twenty", 20.0),
    ("thirty", 30.0),
    ("forty", 40.0),
    ("fifty", 50.0),
    ("hundred", 100.0),
    ("thousand", 1000.0),
    ("million", 1e6),
];

/// What a count of evidence counts: a number word before one of these (at
/// most one word between, "three training runs") is a number to bind.
/// Counts of the page's own structure ("two ways", "three things") and of a
/// model's shape ("four heads") are not yet on this list.
pub const EVIDENCE_NOUNS: [&str; 18] = [
    "seed",
    "seeds",
    "run",
    "runs",
    "initialisation",
    "initialisations",
    "test",
    "tests",
    "model",
    "models",
    "trial",
    "trials",
    "repeat",
    "repeats",
    "measurement",
    "measurements",
    "machine",
    "machines",
];

/// Whether the words after a number word name evidence: the first or the
/// second word is in [`EVIDENCE_NOUNS`].
fn counts_evidence(rest: &str) -> bool {
    // The words that follow without punctuation between.
    let phrase: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == ' ' || *c == '-').collect();
    phrase.split([' ', '-']).filter(|w| !w.is_empty()).take(2).any(|w| EVIDENCE_NOUNS.contains(&w))
}

/// Number words of a prose line that count evidence ("six tests", "three
/// seeds"), outside inline math, code spans and link targets; the token's
/// text is the word in lower case.
fn scan_words(line: &str, start: usize, line_no: usize, out: &mut Vec<Token>) {
    let lower = line.to_lowercase();
    if lower.len() != line.len() {
        return; // a character whose lower case changes length: skip the line
    }
    let skip = skipped_spans(line);
    let mut hidden = vec![false; line.len()];
    let (mut math, mut code) = (false, false);
    for (i, c) in line.char_indices() {
        match c {
            '$' if !code => math = !math,
            '`' if !math => code = !code,
            _ => {}
        }
        hidden[i] = math || code || c == '$' || c == '`';
    }
    for (word, _) in NUMBER_WORDS {
        for (i, _) in lower.match_indices(word) {
            let end = i + word.len();
            let before = lower[..i].chars().next_back();
            let after = lower[end..].chars().next();
            let glued = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if glued(before) || glued(after) || hidden[i] || skip.iter().any(|r| r.contains(&i)) {
                continue;
            }
            if !counts_evidence(&lower[end..]) {
                continue;
            }
            out.push(Token {
                text: word.to_string(),
                start: start + i,
                end: start + end,
                line: line_no,
                in_math: false,
                in_output: false,
            });
        }
    }
    out.sort_by_key(|t| t.start);
}

/// The number a shown text stands for ("10,000" → 10000, "2.4e-7",
/// "three" → 3).
pub fn parse(shown: &str) -> f64 {
    if let Some((_, value)) = NUMBER_WORDS.iter().find(|(w, _)| w.eq_ignore_ascii_case(shown)) {
        return *value;
    }
    normalise(shown)
        .trim_end_matches(['%', '×'])
        .parse()
        .unwrap_or_else(|e| panic!("{shown} is not a number: {e}"))
}

/// Every number in the reader's text: outside code fences other than
/// `text`, outside link targets and include directives.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut in_display_math = false;
    for line in reader_lines(text) {
        if line.text.trim() == "$$" {
            in_display_math = !in_display_math;
            continue;
        }
        scan_line(line.text, line.start, line.number, line.in_output, in_display_math, &mut out);
        if !in_display_math && !line.in_output {
            scan_words(line.text, line.start, line.number, &mut out);
        }
    }
    out
}

fn scan_line(
    line: &str,
    start: usize,
    line_no: usize,
    in_output: bool,
    display_math: bool,
    out: &mut Vec<Token>,
) {
    let bytes = line.as_bytes();
    let skip = skipped_spans(line);
    let mut in_math = display_math;
    let mut i = 0;
    while i < bytes.len() {
        if !in_output && !display_math && bytes[i] == b'$' {
            in_math = !in_math;
            i += 1;
            continue;
        }
        if !bytes[i].is_ascii_digit() || skip.iter().any(|r| r.contains(&i)) {
            i += 1;
            continue;
        }
        // Digits glued to a name (d_k, f32, ch03, x1) are part of the name.
        let before = line[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphabetic() || c == '_' || c == '\\') {
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        let end = date_end(line, i).unwrap_or_else(|| number_end(line, i));
        let after = line[end..].chars().next();
        // A number glued to a letter is a name or a unit-less product (4n²d, 2nd).
        if after.is_some_and(|c| c.is_ascii_alphabetic() && c != 'e') {
            i = end;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        // A power of ten in math, 10^{-7} or 3 \cdot 10^{-7}, is one number.
        if in_math && &line[i..end] == "10" {
            if let Some((exponent, close)) = power_of_ten(&line[end..]) {
                let joined = line[..i].trim_end();
                let mantissa = [" \\cdot", " \\times"]
                    .iter()
                    .find_map(|op| joined.strip_suffix(op.trim_start_matches(' ')))
                    .filter(|_| out.last().is_some_and(|t: &Token| t.line == line_no));
                let token = match mantissa {
                    Some(_) => {
                        let m = out.pop().unwrap();
                        Token {
                            text: format!("{}e{exponent}", m.text),
                            end: start + end + close,
                            ..m
                        }
                    }
                    None => Token {
                        text: format!("1e{exponent}"),
                        start: start + i,
                        end: start + end + close,
                        line: line_no,
                        in_math,
                        in_output,
                    },
                };
                out.push(token);
                i = end + close;
                continue;
            }
        }
        let mut first = i;
        if let Some(m) = line[..i].strip_suffix('-').or(line[..i].strip_suffix('−')) {
            let sign_before = m.chars().next_back();
            if sign_before.is_none_or(|c| " ([{=,:^".contains(c)) {
                first = m.len();
            }
        }
        // A unit glued to the number is part of it: 14% is not 14.
        let mut rest = line[end..].chars();
        let end = match (rest.next(), rest.next()) {
            (Some('%'), _) => end + 1,
            // 2504× is a factor; 4×4 is a shape.
            (Some('×'), next) if !next.is_some_and(char::is_alphanumeric) => end + '×'.len_utf8(),
            _ => end,
        };
        out.push(Token {
            text: normalise(&line[first..end]),
            start: start + first,
            end: start + end,
            line: line_no,
            in_math,
            in_output,
        });
        i = end;
    }
}

/// `^{-7}` or `^6` after a 10: the exponent and the length of that text.
fn power_of_ten(rest: &str) -> Option<(String, usize)> {
    let rest = rest.strip_prefix('^')?;
    if let Some(inner) = rest.strip_prefix('{') {
        let close = inner.find('}')?;
        let e = inner[..close].replace('−', "-");
        e.parse::<i32>().ok()?;
        Some((e, close + 3))
    } else {
        let d = rest.chars().next().filter(char::is_ascii_digit)?;
        Some((d.to_string(), 2))
    }
}

/// A date written as YYYY-MM-DD is one token.
fn date_end(line: &str, i: usize) -> Option<usize> {
    let b = line.as_bytes().get(i..i + 10)?;
    let shape =
        b.iter().enumerate().all(
            |(k, c)| {
                if k == 4 || k == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            },
        );
    shape.then_some(i + 10)
}

/// The end of a number starting at `i`: digits, thousands groups (`,ddd` or
/// `{,}ddd`), a decimal part, an exponent.
fn number_end(line: &str, i: usize) -> usize {
    let b = line.as_bytes();
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    loop {
        let rest = &line[j..];
        let sep = if rest.starts_with("{,}") {
            3
        } else if rest.starts_with(',') {
            1
        } else {
            0
        };
        let group = j + sep;
        if sep > 0
            && digits(group) == group + 3
            && !b.get(group + 3).is_some_and(|c| c.is_ascii_digit())
        {
            j = group + 3;
        } else {
            break;
        }
    }
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        j = digits(j + 1);
    }
    if b.get(j) == Some(&b'e') {
        let k = if matches!(b.get(j + 1), Some(b'-') | Some(b'+')) { j + 2 } else { j + 1 };
        if b.get(k).is_some_and(|c| c.is_ascii_digit()) {
            j = digits(k);
        }
    }
    j
}

/// Byte ranges of a line that are not reader-facing numbers: link and image
/// targets, include directives, inline code that names a file or command.
fn skipped_spans(line: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut search = 0;
    while let Some(p) = line[search..].find("](") {
        let open = search + p + 1;
        let close = line[open..].find(')').map_or(line.len(), |c| open + c);
        spans.push(open..close);
        search = close;
    }
    for marker in ["{{#include", "http://", "https://", "examples/", "tests/", "src/", "book/"] {
        for (p, _) in line.match_indices(marker) {
            let end = line[p..]
                .find(|c: char| c.is_whitespace() || c == '`' || c == ')' || c == '}')
                .map_or(line.len(), |e| p + e);
            spans.push(p..end.max(p + marker.len()));
        }
    }
    spans
}
