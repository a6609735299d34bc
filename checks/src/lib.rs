//! Nothing to import: this package holds the crate's benchmarks
//! (`benches/`) and its property tests (`tests/properties/`), whose
//! dependencies (criterion, proptest) the chapters' examples never need.
