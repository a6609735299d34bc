//! Chapter 6's printed tables.

use crate::error::ReportError;
use attn::cache::{cumulative_flops, flops_per_token_with_cache, flops_per_token_without_cache};

use crate::show::table;

/// The decode-cost table's width `d`.
pub const DECODE_WIDTH: u64 = 512;
/// The lengths of the decode-cost table.
pub const DECODE_LENGTHS: [u64; 4] = [1, 128, 1024, 4096];

/// The decode-cost table the chapter prints: for each `n`, the FLOPs for
/// token `n` and for all `n` tokens, without and with the cache, in GFLOP.
pub fn decode_cost_table(ns: &[u64], d: u64) -> Result<String, ReportError> {
    let giga = |flops: f64| format!("{:.3}", flops / 1e9);
    let rows: Vec<Vec<String>> = ns
        .iter()
        .map(|&n| {
            let (one_without, one_with) =
                (flops_per_token_without_cache(n, d), flops_per_token_with_cache(n, d));
            let all_without = cumulative_flops(n, d, flops_per_token_without_cache)?;
            let all_with = cumulative_flops(n, d, flops_per_token_with_cache)?;
            Ok(vec![
                n.to_string(),
                giga(one_without),
                giga(one_with),
                giga(all_without),
                giga(all_with),
                format!("{:.0}×", all_without / all_with),
            ])
        })
        .collect::<Result<_, ReportError>>()?;
    Ok(table(
        &["n", "token n, no cache", "token n, cache", "all n, no cache", "all n, cache", "saved"],
        &rows,
    ))
}
