//! An exercise's solution file names the exercise by the number the book
//! gives it: a file that says "Chapter 5, exercise 2" must solve the
//! chapter's exercise 2, the one whose text includes the file or names
//! its function.

use regex::Regex;
use report::numbers::repository_file;

/// The text of exercise `k` of a chapter's page: from its `**k.` heading
/// to the next exercise, the quiz or the end.
fn exercise_text(page: &str, k: u32) -> Option<&str> {
    let exercises = &page[page.find("## Exercises")?..];
    let exercises = &exercises[..exercises.find("## Quiz").unwrap_or(exercises.len())];
    let start = exercises.find(&format!("\n**{k}. "))?;
    let rest = &exercises[start + 1..];
    let end = rest.find(&format!("\n**{}. ", k + 1)).unwrap_or(rest.len());
    Some(&rest[..end])
}

#[test]
fn every_solution_file_names_its_exercise_by_the_books_number() {
    let header = Regex::new(r"^//! Chapter (\d+), exercises? (\d+)(?: and (\d+))?").unwrap();
    let function = Regex::new(r"(?m)^pub fn (\w+)").unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(report::root().join("src/exercises")).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        let Some(c) = header.captures(&source) else { continue };
        let chapter: u32 = c[1].parse().unwrap();
        let names: Vec<&str> =
            function.captures_iter(&source).map(|f| f.get(1).unwrap().as_str()).collect();
        let pages: Vec<String> = std::fs::read_dir(report::root().join("book"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("ch{chapter:02}-")))
            .collect();
        assert_eq!(pages.len(), 1, "chapter {chapter}'s page");
        let page = repository_file(&format!("book/{}", pages[0]));
        for k in [c.get(2), c.get(3)].into_iter().flatten() {
            let k: u32 = k.as_str().parse().unwrap();
            let text = exercise_text(&page, k).unwrap_or_else(|| {
                panic!("{}: chapter {chapter} has no exercise {k}", path.display())
            });
            let file = format!("src/exercises/{}", path.file_name().unwrap().to_string_lossy());
            assert!(
                text.contains(&file) || names.iter().any(|n| text.contains(&format!("`{n}"))),
                "{}: says exercise {k}, but the book's exercise {k} neither includes it nor names \
                 any of {names:?}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} headers read");
}
