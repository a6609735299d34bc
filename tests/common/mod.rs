//! Shared by the chapters' number tests: a chapter must quote, verbatim,
//! what its example prints.

/// Panics unless `book/CHAPTER` contains `block` verbatim.
pub fn assert_quoted(chapter: &str, block: &str) {
    let path = format!("{}/book/{chapter}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        text.contains(block),
        "{chapter} does not quote this output of its example:\n{block}"
    );
}
