//! What a stub's doc tells the reader about the crate: the items the
//! book's solution uses that a reader cannot see from the signature and
//! the tests. The error variants it returns, with their fields; the
//! methods of the crate's types it calls, and their constructors; and the
//! crate's public functions it calls (its stub imports those too), except
//! those a later chapter teaches and those whose import the solution marks
//! [`WRITTEN`]: writing that function is the exercise (chapter 9's online
//! softmax step).

use std::path::Path;

use crate::root;

/// The lines of the stub's doc ("The book's solution uses …"), and the
/// names of the functions whose imports the stub keeps.
pub(super) fn crate_items(
    chapter: u32,
    listing: &str,
    imports: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let sources = sources();
    for variant in words_after(listing, "AttnError::") {
        if let Some(fields) = variant_fields(&variant) {
            lines.push(format!("`AttnError::{variant} {{ {fields} }}` (src/error.rs)"));
        }
    }
    let methods: Vec<String> = words_after(listing, ".")
        .into_iter()
        .filter(|m| listing.contains(&format!(".{m}(")) && !STD_METHODS.contains(&m.as_str()))
        .filter(|m| {
            let defined = [format!("pub fn {m}(&self"), format!("pub fn {m}(&mut self")];
            sources.iter().any(|s| defined.iter().any(|d| s.contains(d.as_str())))
        })
        .map(|m| format!("`{m}()`"))
        .collect();
    if !methods.is_empty() {
        lines.push(format!("the crate's methods {}", methods.join(", ")));
    }
    // Constructors and other associated functions: `Type::name(`.
    for (i, _) in listing.match_indices("::") {
        let before = &listing[..i];
        let ty_start =
            before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
        let ty = &before[ty_start..];
        let name: String =
            listing[i + 2..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let call = format!("`{ty}::{name}`");
        let is_type = ty != "AttnError"
            && sources.iter().any(|s| {
                s.contains(&format!("pub struct {ty} ")) || s.contains(&format!("pub struct {ty}<"))
            });
        let defined = sources.iter().any(|s| s.contains(&format!("pub fn {name}(")));
        if is_type
            && listing[i + 2 + name.len()..].starts_with('(')
            && defined
            && !lines.contains(&call)
        {
            lines.push(call);
        }
    }
    let mut kept = Vec::new();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap_or_default();
    for import in imports {
        let Some(path) = import.strip_prefix("use attn::").and_then(|p| p.strip_suffix(';')) else {
            continue;
        };
        let (module, names) = match path.split_once("::{") {
            Some((module, list)) => (module, list.trim_end_matches('}').split(',').collect()),
            None => path.rsplit_once("::").map_or((path, vec![]), |(m, n)| (m, vec![n])),
        };
        for name in names.into_iter().map(str::trim).filter(|n| !n.is_empty()) {
            let called = listing.contains(&format!("{name}("));
            // Only what a reader's crate can call: a public function of a
            // public module.
            let top = module.split("::").next().unwrap_or(module);
            let public = lib.contains(&format!("pub mod {top};"))
                && sources.iter().any(|s| {
                    s.contains(&format!("pub fn {name}(")) || s.contains(&format!("pub fn {name}<"))
                });
            if !called || !public || import.contains(WRITTEN) {
                continue;
            }
            // A function no chapter's listing shows is named without one; one
            // a later chapter teaches is not handed over.
            let taught = taught_in(name);
            if taught.is_some_and(|t| t > chapter) {
                continue;
            }
            let chapter = taught.map(|t| format!(" (chapter {t})")).unwrap_or_default();
            lines.push(format!("`attn::{module}::{name}`{chapter}"));
            kept.push(name.to_string());
        }
    }
    (lines, kept)
}

/// The comment that marks an import of the solution whose function the
/// reader writes instead: the stub neither imports nor names it.
pub(super) const WRITTEN: &str = "// the exercise writes this";

/// Methods of std's and ndarray's types that the crate's types also have.
const STD_METHODS: [&str; 14] = [
    "len", "is_empty", "iter", "dim", "nrows", "ncols", "clone", "to_vec", "to_owned", "map",
    "mapv", "sum", "dot", "rows",
];

/// The identifiers that follow `prefix` in `text`, first occurrence first.
fn words_after(text: &str, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let word: String = text[i + prefix.len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !word.is_empty() && !found.contains(&word) {
            found.push(word);
        }
    }
    found
}

/// The crate's sources, the exercises' solutions left out.
fn sources() -> Vec<String> {
    let mut texts = Vec::new();
    let mut dirs = vec![root().join("src")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.filter_map(|e| Some(e.ok()?.path())) {
            if path.is_dir() && !path.ends_with("exercises") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                texts.extend(std::fs::read_to_string(&path).ok());
            }
        }
    }
    texts
}

/// The fields of `AttnError::variant`, as `name, value, requirement`.
fn variant_fields(variant: &str) -> Option<String> {
    let text = std::fs::read_to_string(root().join("src/error.rs")).ok()?;
    let start = text.find(&format!("\n    {variant} {{\n"))?;
    let body = &text[start..];
    let end = body.find("\n    },")?;
    let fields: Vec<&str> = body[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("        ")?.split_once(':').map(|(name, _)| name))
        .filter(|name| !name.starts_with("//"))
        .collect();
    Some(fields.join(", "))
}

/// The first chapter whose listings define the function `name`.
fn taught_in(name: &str) -> Option<u32> {
    let book = root().join("book");
    let mut chapters: Vec<_> = std::fs::read_dir(&book)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let file = p.file_name()?.to_str()?.to_string();
            let number = file.strip_prefix("ch")?.get(..2)?.parse::<u32>().ok()?;
            Some((number, p))
        })
        .collect();
    chapters.sort();
    let defines = [format!("fn {name}("), format!("fn {name}<")];
    chapters.into_iter().find_map(|(number, path)| {
        let text = std::fs::read_to_string(&path).ok()?;
        let found = text.split("{{#include ../").skip(1).any(|include| {
            let target = include.split("}}").next().unwrap_or("");
            let (file, anchor) = target.split_once(':').unwrap_or((target, ""));
            listing(&root().join("book").join("..").join(file), anchor)
                .is_some_and(|l| defines.iter().any(|d| l.contains(d.as_str())))
        });
        found.then_some(number)
    })
}

/// The text between `// ANCHOR: anchor` and its end in `file` (the whole
/// file without an anchor).
fn listing(file: &Path, anchor: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    if anchor.is_empty() {
        return Some(text);
    }
    let start = text.find(&format!("// ANCHOR: {anchor}\n"))?;
    let end = text[start..].find(&format!("// ANCHOR_END: {anchor}"))?;
    Some(text[start..start + end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_items_a_solution_uses_are_found() {
        assert_eq!(words_after("a.b(c).d(e.b(", "."), ["b", "d"]);
        assert_eq!(variant_fields("InvalidArgument").as_deref(), Some("name, value, requirement"));
        assert_eq!(variant_fields("NoSuchVariant"), None);
        assert_eq!(taught_in("softmax_rows"), Some(2));
        let imports = ["use attn::softmax::softmax_rows;".to_string()];
        let listing = "fn f() -> Result<(), AttnError> { softmax_rows(&x)?; layer.d_k(); \
                       Err(AttnError::InvalidArgument { name, value, requirement }) }";
        let (lines, kept) = crate_items(5, listing, &imports);
        assert_eq!(kept, ["softmax_rows"]);
        assert!(lines.iter().any(|l| l.contains("`d_k()`")), "{lines:?}");
        assert!(lines[0].starts_with("`AttnError::InvalidArgument { name, value"), "{lines:?}");
        let (_, kept) = crate_items(1, listing, &imports);
        assert!(kept.is_empty(), "chapter 2's softmax_rows is not handed to chapter 1");
    }
}
