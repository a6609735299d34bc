//! Golden files (`tests/golden/`), written by the PyTorch scripts under
//! `tools/` (each one's header says how to regenerate them).

use std::collections::HashMap;

use ndarray::Array2;

/// Reads a golden file: `NAME ROWS COLS` headers, each followed by its rows.
pub fn load(name: &str) -> HashMap<String, Array2<f32>> {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let mut tensors = HashMap::new();
    while let Some(header) = lines.next() {
        let parts: Vec<&str> = header.split_whitespace().collect();
        let [key, rows, cols] = parts[..] else {
            panic!("{path}: bad header {header:?}");
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
