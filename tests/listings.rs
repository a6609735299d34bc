//! The reader's path through the code (contract 1 in DEVELOPERS.md): every
//! listing a chapter includes is one a reader can hold, and shows only what
//! the book has taught by then.
//!
//! - A region included in chapters 1–12 has at most 40 non-blank lines
//!   (doc comments count, the `ANCHOR` markers do not), in chapters 13–16 at
//!   most 60; the introduction's and the appendices' are free.
//! - A region in chapter k names no crate item whose own listing first
//!   appears in a later chapter (or only in an appendix). An item's listing
//!   is a region that contains its definition. Where a name could mean
//!   items of several chapters (a method name such as `step`, defined by
//!   several types), the test cannot decide: such a case must be in
//!   `tests/listing_order_read.txt`, read by a person and explained there,
//!   and an entry there that is no longer undecided is an error too.

mod common;

use common::book::{book, includes, rust_files, summary};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The budget of a region in chapter `chapter`, if it has one.
fn budget(chapter: Chapter) -> Option<usize> {
    match chapter {
        Chapter::Numbered(k) if k <= 12 => Some(40),
        Chapter::Numbered(_) => Some(60),
        Chapter::Free => None,
    }
}

/// Where a page stands in the reader's path: a numbered chapter, or a page
/// whose listings have no budget and come after every chapter (the
/// introduction has none; the appendices are read after the chapters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Chapter {
    Numbered(u32),
    Free,
}

fn chapter_of(page: &str) -> Chapter {
    let number = page
        .strip_prefix("ch")
        .and_then(|rest| rest.split('-').next())
        .and_then(|n| n.parse().ok());
    number.map_or(Chapter::Free, Chapter::Numbered)
}

/// One included region: the page that includes it, the file and anchor,
/// and the 0-based lines of the file it shows (non-blank, markers left out).
struct Region {
    page: String,
    chapter: Chapter,
    file: PathBuf,
    anchor: String,
    lines: Vec<usize>,
}

fn file_lines(cache: &mut HashMap<PathBuf, Vec<String>>, path: &Path) -> Vec<String> {
    cache
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .lines()
                .map(String::from)
                .collect()
        })
        .clone()
}

/// Whether `line` is the marker `ANCHOR: name` or `ANCHOR_END: name`.
fn marks(line: &str, marker: &str, name: &str) -> bool {
    line.split(marker).nth(1).is_some_and(|rest| rest.trim() == name)
}

fn regions() -> (Vec<Region>, HashMap<PathBuf, Vec<String>>) {
    let mut cache = HashMap::new();
    let mut out = Vec::new();
    for listed in summary() {
        let text = fs::read_to_string(book().join(&listed.file)).unwrap();
        for (path, anchor) in includes(&text) {
            let file = book().join(&path);
            let lines = file_lines(&mut cache, &file);
            let anchor = anchor.unwrap_or_default();
            let mut on = anchor.is_empty();
            let mut shown = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                if !anchor.is_empty() && marks(line, "ANCHOR:", &anchor) {
                    on = true;
                } else if !anchor.is_empty() && marks(line, "ANCHOR_END:", &anchor) {
                    on = false;
                } else if on && !line.trim().is_empty() && !line.contains("ANCHOR") {
                    shown.push(i);
                }
            }
            out.push(Region {
                page: listed.file.clone(),
                chapter: chapter_of(&listed.file),
                file: file.canonicalize().unwrap_or(file),
                anchor,
                lines: shown,
            });
        }
    }
    (out, cache)
}

#[test]
fn every_included_region_fits_its_chapters_budget() {
    let (regions, _) = regions();
    assert!(regions.len() > 100, "the book includes {} regions", regions.len());
    let over: Vec<String> = regions
        .iter()
        .filter_map(|r| {
            let limit = budget(r.chapter)?;
            (r.lines.len() > limit).then(|| {
                format!(
                    "{}: {}:{} shows {} lines, more than {limit}",
                    r.page,
                    r.file.display(),
                    r.anchor,
                    r.lines.len()
                )
            })
        })
        .collect();
    assert!(
        over.is_empty(),
        "{} regions over their chapter's budget: split them into named functions the \
         prose walks through, or show a smaller form tested equal to the engine:\n{}",
        over.len(),
        over.join("\n")
    );
}

/// A definition in `src/`: its file, 0-based line, kind (`fn`, `struct`,
/// …), the type or trait whose `impl` or body holds it (methods), and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Definition {
    file: PathBuf,
    line: usize,
    kind: String,
    owner: Option<String>,
    name: String,
}

/// A line of code with its string and character literals blanked, split
/// into the code and its comment.
fn split_comment(line: &str) -> (String, String) {
    static STRINGS: OnceLock<Regex> = OnceLock::new();
    let strings =
        STRINGS.get_or_init(|| Regex::new(r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)'"#).unwrap());
    let blank = strings.replace_all(line, "\"\"").to_string();
    match blank.find("//") {
        Some(i) => (blank[..i].to_string(), blank[i..].to_string()),
        None => (blank, String::new()),
    }
}

/// Every definition of an item in the crate's sources: free functions,
/// types, traits, constants and modules, and the methods of `impl` and
/// `trait` blocks (with their owner). A function's own body is not
/// searched for nested items.
fn definitions(cache: &mut HashMap<PathBuf, Vec<String>>) -> Vec<Definition> {
    let item = Regex::new(
        r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)?(fn|struct|enum|trait|type|const|static|mod)\s+([A-Za-z_]\w*)",
    )
    .unwrap();
    let imp = Regex::new(
        r"^\s*(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s+(?:[\w:]+(?:<[^{]*>)?\s+for\s+)?([\w:]+)",
    )
    .unwrap();
    let trait_block =
        Regex::new(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?trait\s+(\w+)").unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for path in rust_files(&src) {
        let path = path.canonicalize().unwrap();
        let lines = file_lines(cache, &path);
        let mut depth = 0_i64;
        // (depth at which the block opened, its owner or "<fn>").
        let mut blocks: Vec<(i64, String)> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let (code, _) = split_comment(line);
            let owner = blocks.last().map(|(_, o)| o.clone());
            let in_fn = owner.as_deref() == Some("<fn>");
            let found = item.captures(&code);
            if let Some(c) = &found {
                let kind = c[1].to_string();
                if !(in_fn && kind == "fn") {
                    out.push(Definition {
                        file: path.clone(),
                        line: i,
                        kind,
                        owner: owner.clone().filter(|o| o != "<fn>"),
                        name: c[2].to_string(),
                    });
                }
            }
            if code.contains('{') {
                if let Some(c) = imp.captures(&code) {
                    let name = c[1].rsplit("::").next().unwrap().to_string();
                    blocks.push((depth, name));
                } else if let Some(c) = trait_block.captures(&code) {
                    blocks.push((depth, c[1].to_string()));
                } else if found.as_ref().is_some_and(|c| &c[1] == "fn") && !in_fn {
                    blocks.push((depth, "<fn>".into()));
                }
            }
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            while blocks.last().is_some_and(|(d, _)| depth <= *d) {
                blocks.pop();
            }
        }
    }
    out
}

/// Method names of the standard library and of ndarray that the listings
/// call: `.len()` in a listing means a length, whatever crate type also
/// has a `len`.
const OUTSIDE_METHODS: &[&str] = &[
    "abs", "clone", "collect", "dot", "exp", "get", "insert", "is_empty", "iter", "len", "ln",
    "map", "max", "min", "new", "push", "remove", "row", "rows", "sqrt", "sum", "to_owned",
];

/// A name a region uses: the `Type::` before it, whether a `.` comes
/// before it (a method call), and whether it is called or imported.
struct Use {
    qualifier: Option<String>,
    method: bool,
    called: bool,
    name: String,
}

fn uses(code: &[String], comments: &[String]) -> Vec<Use> {
    let ident = Regex::new(r"(?:(\w+)\s*::\s*|(\.)\s*)?\b([A-Za-z_]\w*)\b(\s*\(|\s*::<)?").unwrap();
    let ticks = Regex::new(r"`([^`]*)`").unwrap();
    let mut out = Vec::new();
    for line in code {
        let imported = line.trim_start().starts_with("use ");
        for c in ident.captures_iter(line) {
            out.push(Use {
                qualifier: c.get(1).map(|m| m.as_str().to_string()),
                method: c.get(2).is_some(),
                called: c.get(4).is_some() || imported,
                name: c[3].to_string(),
            });
        }
    }
    // In comments, only what is written as code: `name` or [`name`].
    for comment in comments {
        for t in ticks.captures_iter(comment) {
            for c in ident.captures_iter(&t[1]) {
                out.push(Use {
                    qualifier: c.get(1).map(|m| m.as_str().to_string()),
                    method: c.get(2).is_some(),
                    called: true,
                    name: c[3].to_string(),
                });
            }
        }
    }
    out
}

/// The names a region binds itself: `let` bindings, parameters, closure
/// arguments. A call of one of them is not a call of a crate item.
fn locals(code: &str) -> BTreeSet<String> {
    let patterns = [r"\blet\s+(?:mut\s+)?(\w+)", r"\|\s*(\w+)[^|]*\|", r"(\w+)\s*:\s*[&\w(\[]"];
    let mut out = BTreeSet::new();
    for p in patterns {
        for c in Regex::new(p).unwrap().captures_iter(code) {
            out.insert(c[1].to_string());
        }
    }
    out
}

/// What the order check finds: regions that name an item only a later
/// chapter shows, and names it cannot decide, each as
/// `page anchor name: the candidates`.
fn order_findings() -> (Vec<String>, Vec<String>) {
    let (regions, mut cache) = regions();
    let defs = definitions(&mut cache);
    // The first chapter whose listing contains each definition.
    let mut shown_in: BTreeMap<&Definition, Chapter> = BTreeMap::new();
    for d in &defs {
        for r in regions.iter().filter(|r| r.file == d.file) {
            if r.lines.binary_search(&d.line).is_ok() {
                let first = shown_in.entry(d).or_insert(r.chapter);
                *first = (*first).min(r.chapter);
            }
        }
    }
    // The first chapter that shows each type (its struct, enum or trait).
    let mut type_shown: HashMap<&str, Chapter> = HashMap::new();
    for (d, &c) in &shown_in {
        if ["struct", "enum", "trait", "type"].contains(&d.kind.as_str()) {
            let first = type_shown.entry(d.name.as_str()).or_insert(c);
            *first = (*first).min(c);
        }
    }
    let mut by_name: HashMap<&str, Vec<&Definition>> = HashMap::new();
    for d in &defs {
        by_name.entry(d.name.as_str()).or_default().push(d);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let describe = |d: &Definition, at: Option<Chapter>| {
        let file = d.file.strip_prefix(&root).unwrap_or(&d.file).display();
        let owner = d.owner.as_deref().map(|o| format!("{o}::")).unwrap_or_default();
        match at {
            Some(Chapter::Numbered(k)) => format!("{owner}{} ({file}, chapter {k})", d.name),
            Some(Chapter::Free) => format!("{owner}{} ({file}, an appendix)", d.name),
            None => format!("{owner}{} ({file}, not shown)", d.name),
        }
    };
    let (mut later, mut undecided) = (BTreeSet::new(), BTreeSet::new());
    for r in &regions {
        // The WGSL kernels' names are not the crate's items.
        if r.chapter == Chapter::Free || r.file.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let lines = &cache[&r.file];
        let (mut code, mut comments) = (Vec::new(), Vec::new());
        for &i in &r.lines {
            let (c, m) = split_comment(&lines[i]);
            code.push(c);
            comments.push(m);
        }
        let own: BTreeSet<&str> = defs
            .iter()
            .filter(|d| d.file == r.file && r.lines.binary_search(&d.line).is_ok())
            .map(|d| d.name.as_str())
            .collect();
        let bound = locals(&code.join("\n"));
        let region_uses = uses(&code, &comments);
        let named: BTreeSet<&str> = region_uses.iter().map(|u| u.name.as_str()).collect();
        for u in &region_uses {
            let name = u.name.as_str();
            if own.contains(name) || (u.method && (OUTSIDE_METHODS.contains(&name) || !u.called)) {
                continue; // the region's own item, a common method, or a field
            }
            let free = u.qualifier.is_none() && !u.method;
            if free && name.starts_with(char::is_lowercase) && (!u.called || bound.contains(name)) {
                continue; // a variable, a field, or a closure of the region's own
            }
            let Some(all) = by_name.get(name) else {
                continue; // not the crate's
            };
            let candidates: Vec<&&Definition> = match u.qualifier.as_deref() {
                Some(q) if q.starts_with(char::is_uppercase) && q != "Self" => {
                    all.iter().filter(|d| d.owner.as_deref() == Some(q)).collect()
                }
                // A method call `.name(…)`: a method of a type the reader
                // has met by this chapter, or that the region names.
                _ if u.method => all
                    .iter()
                    .filter(|d| d.kind == "fn")
                    .filter(|d| {
                        d.owner.as_deref().is_some_and(|o| {
                            named.contains(o) || type_shown.get(o).is_some_and(|&c| c <= r.chapter)
                        })
                    })
                    .collect(),
                _ if name.starts_with(char::is_uppercase) => {
                    all.iter().filter(|d| d.kind != "fn" && d.kind != "mod").collect()
                }
                _ => all.iter().filter(|d| d.owner.is_none()).collect(),
            };
            let at: Vec<Option<Chapter>> =
                candidates.iter().map(|d| shown_in.get(**d).copied()).collect();
            let is_later = |c: &Option<Chapter>| c.is_some_and(|c| c > r.chapter);
            if !at.iter().any(is_later) {
                continue;
            }
            let list: Vec<String> =
                candidates.iter().zip(&at).map(|(d, c)| describe(d, *c)).collect();
            let case = format!("{} {} {name}", r.page, r.anchor);
            if at.iter().all(is_later) {
                later.insert(format!("{case}: {}", list.join("; ")));
            } else {
                undecided.insert(format!("{case}: {}", list.join("; ")));
            }
        }
    }
    (later.into_iter().collect(), undecided.into_iter().collect())
}

/// The undecided cases a person has read: lines `page anchor name: why`
/// (`#` starts a comment).
fn read_cases() -> BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/listing_order_read.txt");
    let text = fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (case, why) = l.split_once(':').unwrap_or((l, ""));
            (case.trim().to_string(), why.trim().to_string())
        })
        .collect()
}

#[test]
fn no_listing_names_an_item_a_later_chapter_shows() {
    let (later, undecided) = order_findings();
    let read = read_cases();
    let case_of = |line: &String| line.split_once(':').unwrap().0.to_string();
    let unread: Vec<&String> =
        undecided.iter().filter(|l| !read.contains_key(&case_of(l))).collect();
    let decided: BTreeSet<String> = undecided.iter().map(case_of).collect();
    let stale: Vec<&String> = read.keys().filter(|k| !decided.contains(*k)).collect();
    let unexplained: Vec<&String> =
        read.iter().filter(|(_, why)| why.len() < 20).map(|(k, _)| k).collect();
    assert!(
        later.is_empty() && unread.is_empty() && stale.is_empty() && unexplained.is_empty(),
        "{} names in listings whose own listing first appears in a later chapter (or only in \
         an appendix): show the idea in a smaller form, or move the listing:\n{}\n\n\
         {} undecided names not read by a person (add each to tests/listing_order_read.txt \
         with what it refers to):\n{}\n\nentries no longer undecided: {stale:#?}\n\
         entries without an explanation: {unexplained:#?}",
        later.len(),
        later.join("\n"),
        unread.len(),
        unread.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
    );
}
