//! The introduction against SUMMARY.md, and every page's pointers to other
//! chapters, figures and exercises.

use regex::Regex;
use std::collections::BTreeSet;

use crate::{chapters, line_of, page, pages, prose, summary};

/// The number a word names, from two to twenty ("seven" → 7), read with
/// chapter 13's number words.
fn number_word(word: &str) -> Option<usize> {
    let word = word.to_lowercase();
    (2..=20)
        .find(|&n| attn::translation::number_words(n).is_ok_and(|w| w == [word.as_str()]))
        .map(|n| n as usize)
}

/// Every chapter number a text refers to: "chapter 3", "chapters 2 to 7",
/// "chapters 3, 7 and 11", "Chapter 13".
fn chapter_numbers(flat: &str) -> Vec<(usize, usize)> {
    let reference = Regex::new(r"(?i)\bchapters? ((?:\d+)(?:(?:,| and| or| to|–) \d+)*)").unwrap();
    let number = Regex::new(r"\d+").unwrap();
    let mut out = Vec::new();
    for c in reference.captures_iter(flat) {
        let list = c.get(1).unwrap();
        let numbers: Vec<usize> =
            number.find_iter(list.as_str()).map(|m| m.as_str().parse().unwrap()).collect();
        let ranged = list.as_str().contains(" to ") || list.as_str().contains('–');
        if ranged && numbers.len() == 2 {
            out.extend((numbers[0]..=numbers[1]).map(|n| (n, list.start())));
        } else {
            out.extend(numbers.into_iter().map(|n| (n, list.start())));
        }
    }
    out
}

#[test]
fn the_introduction_names_every_chapter_and_counts_them_right() {
    let listed = summary();
    let numbered = chapters();
    let last = numbered.last().unwrap().0;
    let mut parts: Vec<(String, usize)> = Vec::new();
    for l in listed.iter().filter(|l| l.file.starts_with("ch")) {
        match parts.last_mut() {
            Some((p, n)) if *p == l.part => *n += 1,
            _ => parts.push((l.part.clone(), 1)),
        }
    }
    let appendices: Vec<&str> =
        listed.iter().filter(|l| l.part == "Appendices").map(|l| l.file.as_str()).collect();
    let text = page("introduction.md");
    let flat = prose(&text).replace('\n', " ");
    let mut problems = Vec::new();

    let mentioned: BTreeSet<usize> = chapter_numbers(&flat).into_iter().map(|(n, _)| n).collect();
    for (n, file) in &numbered {
        if !mentioned.contains(n) {
            problems.push(format!("introduction.md never names chapter {n} ({file})"));
        }
    }
    for n in mentioned.iter().filter(|&&n| n > last || n == 0) {
        problems.push(format!("introduction.md names chapter {n}; the book has {last}"));
    }
    for file in &appendices {
        if !text.contains(&format!("]({file})")) {
            problems.push(format!("introduction.md does not link the appendix {file}"));
        }
    }
    // Counts: "<n> chapters", "<n> appendices", "<n> parts", and groups
    // such as "the last six", which count chapters.
    let counted = Regex::new(r"(?i)\b(\w+) (chapters|appendices|parts)\b").unwrap();
    let group = Regex::new(r"(?i)\b(?:first|next|last|remaining|other) (\w+)\b").unwrap();
    let chapter_counts: BTreeSet<usize> =
        parts.iter().map(|(_, n)| *n).chain([numbered.len()]).collect();
    for c in counted.captures_iter(&flat) {
        let Some(n) = number_word(&c[1]) else {
            continue;
        };
        let right = match c[2].to_lowercase().as_str() {
            "chapters" => chapter_counts.contains(&n),
            "appendices" => n == appendices.len(),
            _ => n == parts.len(),
        };
        if !right {
            problems.push(format!(
                "introduction.md:{}: \"{}\", but SUMMARY.md has parts of {:?} chapters and {} appendices",
                line_of(&text, c.get(0).unwrap().start()),
                &c[0],
                parts.iter().map(|p| p.1).collect::<Vec<_>>(),
                appendices.len()
            ));
        }
    }
    for c in group.captures_iter(&flat) {
        let Some(n) = number_word(&c[1]) else {
            continue;
        };
        if !chapter_counts.contains(&n) {
            problems.push(format!(
                "introduction.md:{}: \"{}\" counts chapters, but SUMMARY.md's parts have {:?}",
                line_of(&text, c.get(0).unwrap().start()),
                &c[0],
                parts.iter().map(|p| p.1).collect::<Vec<_>>()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The number of the chapter in `file` (`ch04-….md` → 4), if it is one.
fn own_number(file: &str) -> Option<usize> {
    file.strip_prefix("ch")?.get(..2)?.parse().ok()
}

/// The figures a page captions, `*Figure 4.1.`, as `"4.1"`.
fn captions(text: &str) -> BTreeSet<String> {
    let caption = Regex::new(r"(?m)^\*Figure ([0-9A-Z]+\.\d+)\.").unwrap();
    caption.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// The exercises of a page, by number.
fn exercises(text: &str) -> BTreeSet<usize> {
    let Some(start) = text.find("## Exercises") else {
        return BTreeSet::new();
    };
    let end = text[start..].find("## Quiz").map_or(text.len(), |e| start + e);
    let exercise = Regex::new(r"(?m)^\*\*(\d+)\. ").unwrap();
    exercise.captures_iter(&text[start..end]).map(|c| c[1].parse().unwrap()).collect()
}

#[test]
fn pointers_to_chapters_figures_and_exercises_lead_where_they_say() {
    let all = pages();
    let last = chapters().last().unwrap().0;
    let by_number =
        |n: usize| all.iter().find(|(f, _)| own_number(f) == Some(n)).map(|(_, t)| t.as_str());
    let relative = Regex::new(
        r"(?i)\b(?:the|a|an) (?:next|previous|last|final|later|earlier|following) chapter\b",
    )
    .unwrap();
    let figure =
        Regex::new(r"\bFigures? ((?:[0-9A-Z]+\.\d+)(?:(?:,| and| or) [0-9A-Z]+\.\d+)*)").unwrap();
    let figure_id = Regex::new(r"[0-9A-Z]+\.\d+").unwrap();
    let exercise_of =
        Regex::new(r"(?i)\bchapter (\d+)(?:'s|,) exercise (\d+)|\bexercise (\d+) of chapter (\d+)")
            .unwrap();
    let named_code = Regex::new(r"(?i)\bchapter (\d+)'s `([A-Za-z_:]+)`").unwrap();
    let mut problems = Vec::new();
    for (file, text) in &all {
        let flat = prose(text).replace('\n', " ");
        let own = own_number(file);
        let at = |offset: usize| format!("book/{file}:{}", line_of(text, offset));
        for (n, offset) in chapter_numbers(&flat) {
            if n == 0 || n > last {
                problems.push(format!("{}: chapter {n} does not exist", at(offset)));
            }
            if Some(n) == own {
                problems.push(format!(
                    "{}: chapter {n} names itself; say \"this chapter\"",
                    at(offset)
                ));
            }
        }
        for m in relative.find_iter(&flat) {
            problems.push(format!(
                "{}: \"{}\": name the chapter by its number",
                at(m.start()),
                m.as_str()
            ));
        }
        // Figures are named in the text outside code, but captions are
        // italic prose too; read the raw text for them.
        for c in figure.captures_iter(&flat) {
            for id in figure_id.find_iter(&c[1]) {
                let (chapter, _) = id.as_str().split_once('.').unwrap();
                let owner = match chapter.parse::<usize>() {
                    Ok(n) => by_number(n),
                    Err(_) => all
                        .iter()
                        .find(|(f, t)| !f.starts_with("ch") && captions(t).contains(id.as_str()))
                        .map(|(_, t)| t.as_str()),
                };
                if !owner.is_some_and(|t| captions(t).contains(id.as_str())) {
                    problems.push(format!(
                        "{}: Figure {} has no caption anywhere",
                        at(c.get(0).unwrap().start()),
                        id.as_str()
                    ));
                }
            }
        }
        for c in exercise_of.captures_iter(&flat) {
            let (n, k) = match (c.get(1), c.get(3)) {
                (Some(n), _) => (n.as_str(), &c[2]),
                (_, Some(k)) => (&c[4], k.as_str()),
                _ => continue,
            };
            let (n, k): (usize, usize) = (n.parse().unwrap(), k.parse().unwrap());
            if !by_number(n).is_some_and(|t| exercises(t).contains(&k)) {
                problems.push(format!(
                    "{}: chapter {n} has no exercise {k}",
                    at(c.get(0).unwrap().start())
                ));
            }
        }
        for c in named_code.captures_iter(text) {
            let n: usize = c[1].parse().unwrap();
            let name = c[2].rsplit("::").next().unwrap();
            if !by_number(n).is_some_and(|t| t.contains(name)) {
                problems.push(format!(
                    "{}: chapter {n} never mentions `{name}`",
                    at(c.get(0).unwrap().start())
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
