//! Every numbers test binds a figure to a value computed from the code or
//! data the sentence speaks of, never to a literal restating the text, and
//! every claim's truth is computed from data, never written `true`.

use report::numbers::literal_bindings;

#[test]
fn no_numbers_test_binds_a_literal() {
    let tests = report::root().join("tests");
    let mut found = Vec::new();
    let mut read = 0;
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with("_numbers.rs") {
            continue;
        }
        read += 1;
        let source = std::fs::read_to_string(&path).unwrap();
        found.extend(literal_bindings(&source).into_iter().map(|f| format!("tests/{name}:{f}")));
    }
    assert!(read >= 19, "found only {read} numbers tests");
    assert!(found.is_empty(), "{} bindings restate the text:\n{}", found.len(), found.join("\n"));
}
