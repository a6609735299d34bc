//! Stubs written from the book's solutions import what the solutions
//! import; this removes the imports of items private to the book's crate,
//! which a reader's answer cannot name.

use super::{write, Step};
use std::path::Path;

/// Removes from the stubs in `dir/src` the imports of items private to
/// the book's crate (the solution's own helpers, which the reader's answer
/// does not need), as `cargo check` names them (E0603), with `features`
/// on; only in the files of `only` (a module), if given. A comment says
/// what was removed.
pub(super) fn prune_private_imports(
    check: &dyn Fn() -> Result<String, String>,
    dir: &Path,
    only: Option<&str>,
) -> Step {
    for _ in 0..4 {
        let stderr = check()?;
        let mut private: Vec<(String, usize, String)> = stderr
            .lines()
            .filter(|l| l.contains("error[E0603]"))
            .filter_map(|l| {
                let mut parts = l.split(':');
                let file = parts.next()?.to_string();
                let line = parts.next()?.parse::<usize>().ok()?;
                let name = l.split('`').nth(1)?.to_string();
                Some((file, line, name))
            })
            // The stubs' imports only: the book's tests stay as they are.
            .filter(|(file, _, _)| !file.contains("checks"))
            .filter(|(file, _, _)| only.is_none_or(|m| file.ends_with(&format!("{m}.rs"))))
            .collect();
        if private.is_empty() {
            return Ok(());
        }
        private.sort();
        private.dedup();
        for (file, line, name) in private {
            let path = dir.join(&file);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if let Some(l) = lines.get_mut(line.saturating_sub(1)) {
                *l = without_import(l, &name);
            }
            write(&path, &(lines.join("\n") + "\n"))?;
        }
    }
    Err("the stubs still import private items after four passes".into())
}

/// A `use` line without `name`: the name taken out of its braces, or the
/// line made a comment if nothing else is left.
fn without_import(line: &str, name: &str) -> String {
    let note = format!("// (the solution also used {name}, private to the crate)");
    if !line.trim_start().starts_with("use ") {
        return line.to_string();
    }
    let Some((head, rest)) = line.split_once('{') else {
        return note;
    };
    let Some((names, tail)) = rest.split_once('}') else {
        return note;
    };
    let all: Vec<&str> = names.split(',').map(str::trim).collect();
    if !all.contains(&name) {
        // A private module: the whole line goes.
        return format!("// (the solution also used {}, private to the crate)", line.trim());
    }
    let kept: Vec<&str> = all.into_iter().filter(|n| !n.is_empty() && *n != name).collect();
    match kept.as_slice() {
        [] => note,
        [one] => format!("{}{one}{}", head, tail),
        many => format!("{head}{{{}}}{tail}", many.join(", ")),
    }
}
