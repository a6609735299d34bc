//! Every committed data file says where its figures come from: the first
//! line of each file in `book/data/` is a provenance header (date,
//! processor, measurement run, statistic; `report::provenance`)
//! written by the command that measured or derived it, or, for a text
//! written for the book, `# input: …`.

use report::provenance::Provenance;
use std::collections::BTreeMap;

#[test]
fn every_data_file_names_its_date_processor_run_and_statistic() {
    let dir = crate::book().join("data");
    let mut problems = Vec::new();
    let mut runs: BTreeMap<String, (String, String, String)> = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    files.sort();
    assert!(files.len() > 20, "only {} data files", files.len());
    for file in files {
        let text = if file.ends_with(".safetensors") {
            // Weights: the header is in the file's metadata.
            safetensors_provenance(&dir.join(&file))
        } else {
            std::fs::read_to_string(dir.join(&file)).unwrap()
        };
        if text.starts_with("# input: ") {
            continue;
        }
        let p = match Provenance::parse(&file, &text) {
            Ok(p) => p,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        if p.cpu == "unknown" || p.date == "unknown" || p.run.starts_with("by hand") {
            problems.push(format!(
                "book/data/{file}: written by hand ({}), not by the command of a run",
                p.line
            ));
        }
        // One run is one command on one machine on one day.
        let seen =
            runs.entry(p.run.clone()).or_insert((p.date.clone(), p.cpu.clone(), file.clone()));
        if (&seen.0, &seen.1) != (&p.date, &p.cpu) {
            problems.push(format!(
                "book/data/{file} and book/data/{} name the same run {} but a different date or processor",
                seen.2, p.run
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `provenance` entry of a safetensors file's metadata ("" without one).
fn safetensors_provenance(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let metadata = header.metadata().clone().unwrap_or_default();
    metadata.get("provenance").cloned().unwrap_or_default()
}
