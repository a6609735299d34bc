//! The book's math, `$…$` in TeX, as plain text for a terminal:
//! `$\operatorname{softmax}(s/\tau)$` becomes `softmax(s/τ)`.

/// `text` with each `$…$` (or `$$…$$`) span as plain text.
pub(crate) fn plain_math(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('$').enumerate() {
        match i % 2 {
            0 => out.push_str(part),
            _ => out.push_str(&plain(part)),
        }
    }
    out
}

/// `text` broken into lines of at most `width` characters, at spaces.
pub(crate) fn wrapped(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

/// TeX commands with one braced argument, and how the argument is shown.
const WRAPPERS: [(&str, &str, &str); 8] = [
    ("\\text{", "", ""),
    ("\\operatorname{", "", ""),
    ("\\mathrm{", "", ""),
    ("\\mathbf{", "", ""),
    ("\\mathbb{", "", ""),
    ("\\sqrt{", "√(", ")"),
    ("\\bar{", "", "\u{0304}"),
    ("\\hat{", "", "\u{0302}"),
];

/// TeX symbols and their characters, longest names first where one name
/// starts another (`\top` before `\to`).
const SYMBOLS: [(&str, &str); 34] = [
    ("^\\top", "ᵀ"),
    ("\\top", "ᵀ"),
    ("\\to", "→"),
    ("\\cdot", "·"),
    ("\\times", "×"),
    ("\\tau", "τ"),
    ("\\sigma", "σ"),
    ("\\omega", "ω"),
    ("\\infty", "∞"),
    ("\\sum", "Σ"),
    ("\\varepsilon", "ε"),
    ("\\rho", "ρ"),
    ("\\partial", "∂"),
    ("\\lambda", "λ"),
    ("\\cos", "cos"),
    ("\\sin", "sin"),
    ("\\max", "max"),
    ("\\ln", "ln"),
    ("\\lVert", "‖"),
    ("\\rVert", "‖"),
    ("\\lbrack", "["),
    ("\\rbrack", "]"),
    ("\\lceil", "⌈"),
    ("\\rceil", "⌉"),
    ("\\le", "≤"),
    ("\\ge", "≥"),
    ("\\ne", "≠"),
    ("\\approx", "≈"),
    ("\\ell", "ℓ"),
    ("\\dots", "…"),
    ("\\,", " "),
    ("\\ ", " "),
    ("\\{", "{"),
    ("\\}", "}"),
];

/// One math span as plain text.
fn plain(tex: &str) -> String {
    let mut s = tex.to_string();
    for (command, before, after) in WRAPPERS {
        while let Some(at) = s.find(command) {
            let open = at + command.len();
            let Some(len) = matching_brace(&s[open..]) else { break };
            let inner = &s[open..open + len];
            // One character needs no brackets: √d, not √(d).
            let simple = command == "\\sqrt{" && inner.chars().filter(|c| *c != '_').count() <= 3;
            let (before, after) = if simple { ("√", "") } else { (before, after) };
            let inner = if command == "\\mathbb{" && inner == "R" { "ℝ" } else { inner };
            s = format!("{}{before}{inner}{after}{}", &s[..at], &s[open + len + 1..]);
        }
    }
    for (command, symbol) in SYMBOLS {
        s = s.replace(command, symbol);
    }
    s.replace(['{', '}'], "")
}

/// The length of the text before the brace that closes an opened one.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::plain_math;

    #[test]
    fn the_book_s_math_reads_in_a_terminal() {
        assert_eq!(plain_math(r"is $\operatorname{softmax}(s/\tau)$ of"), "is softmax(s/τ) of");
        assert_eq!(plain_math(r"by $\sqrt{d_k}$ and $\tau \to \infty$"), "by √d_k and τ → ∞");
        assert_eq!(plain_math(r"$QK^\top / \sqrt{d_k + 1}$"), "QKᵀ / √(d_k + 1)");
        assert_eq!(plain_math(r"$\tau \le 0$, `x { y }`"), "τ ≤ 0, `x { y }`");
        assert_eq!(plain_math(r"$\text{head}_{i}$"), "head_i");
        assert_eq!(super::wrapped("a bb ccc dd", 6), "a bb\nccc dd");
    }
}
