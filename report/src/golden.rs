//! Golden files (`tests/golden/`), written by the PyTorch scripts under
//! `tools/` (each one's header says how to regenerate them): what the
//! tests compare the crate with, and what a chapter's example reports.

use std::collections::HashMap;

use ndarray::Array2;

/// Reads a golden file: `NAME ROWS COLS` headers, each followed by its
/// rows. Panics on a malformed file: the files are committed, and a test
/// should stop at one that is not what its script writes.
pub fn load(name: &str) -> HashMap<String, Array2<f32>> {
    let path = crate::root().join("tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let mut tensors = HashMap::new();
    while let Some(header) = lines.next() {
        let parts: Vec<&str> = header.split_whitespace().collect();
        let [key, rows, cols] = parts[..] else {
            panic!("{}: bad header {header:?}", path.display());
        };
        let (rows, cols): (usize, usize) = (rows.parse().unwrap(), cols.parse().unwrap());
        let values: Vec<f32> = (0..rows)
            .flat_map(|_| lines.next().expect("a row").split_whitespace())
            .map(|v| v.parse().expect("a number"))
            .collect();
        let tensor = Array2::from_shape_vec((rows, cols), values).expect("rows × cols numbers");
        tensors.insert(key.to_string(), tensor);
    }
    tensors
}
