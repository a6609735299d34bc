//! The check that a binding's value comes from code or data: a numbers
//! test that binds `exact("0.3", 0.3)` restates the text and checks nothing.

/// The binding methods whose second argument is the computed value.
const VALUE_METHODS: [&str; 6] = ["exact", "value", "rounded", "at_most", "at_least", "claim"];

/// Every binding call in `source` (a numbers test) whose computed value is
/// a literal (numbers and operators only, `true` or `false` for a claim) or
/// parsed from the shown text itself, as `line: call`.
pub fn literal_bindings(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for method in VALUE_METHODS {
        let pattern = format!(".{method}(");
        for (at, _) in source.match_indices(&pattern) {
            let open = at + pattern.len();
            let Some(args) = arguments(&source[open..]) else { continue };
            let Some(value) = args.get(1) else { continue };
            if restates(value) {
                let line = source[..at].matches('\n').count() + 1;
                let call: String = source[at + 1..open + args.join(", ").len() + 1]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                found.push(format!("{line}: {call}"));
            }
        }
    }
    found.sort_by_key(|f| f.split(':').next().and_then(|n| n.parse::<usize>().ok()));
    found
}

/// A value that is only literals and operators, or the shown text parsed.
fn restates(value: &str) -> bool {
    let v = value.trim();
    if v == "true" || v == "false" || v.contains(".parse") {
        return true;
    }
    let mut rest = v.to_string();
    for cast in
        ["as f64", "as f32", "as usize", "as u64", "f64::from", "f64", "f32", "usize", "u64"]
    {
        rest = rest.replace(cast, " ");
    }
    rest.chars().all(|c| c.is_ascii_digit() || " _.+-*/()e".contains(c))
}

/// The top-level, comma-separated arguments of a call whose text starts
/// just after its `(`; `None` if the call does not close.
fn arguments(text: &str) -> Option<Vec<String>> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let (mut args, mut current) = (Vec::new(), String::new());
    for c in text.chars() {
        if in_string {
            current.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                current.push(c);
            }
            '(' | '[' | '{' => {
                depth += 1;
                current.push(c);
            }
            ')' | ']' | '}' if depth == 0 => {
                args.push(current.trim().to_string());
                return Some(args);
            }
            ')' | ']' | '}' => {
                depth -= 1;
                current.push(c);
            }
            ',' if depth == 0 => args.push(std::mem::take(&mut current).trim().to_string()),
            _ => current.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_value_is_found_and_a_computed_one_is_not() {
        // Each of these passed the old checker.
        let tautologies = [
            r#"b.exact("0.3", 0.3);"#,
            r#"b.exact("1024", 1024.0);"#,
            r#"b.exact("8", 512 / 64);"#,
            r#"b.exact("60,000", 60_000);"#,
            r#"b.value("4.8", 4.8, 0.1);"#,
            r#"b.claim("it grows", true);"#,
            r#"b.exact(shown, shown.parse::<f64>().unwrap());"#,
        ];
        for t in tautologies {
            assert_eq!(literal_bindings(t).len(), 1, "{t}");
        }
        let computed = [
            r#"b.exact("64", c.d_model as f64);"#,
            r#"b.rounded("0.242", uniform).claim("it, (grows)", rises && level);"#,
            r#"b.exact("256", 1.0 / slopes[7] as f64);"#,
        ];
        for c in computed {
            assert!(literal_bindings(c).is_empty(), "{c}: {:?}", literal_bindings(c));
        }
    }
}
