//! Chapter 17's checks on the book's own model: the bytes its caches keep
//! per token, and the equalities between each variant's cached step and
//! its forward pass.

use super::*;

/// Chapter 16's model with rotary positions and 4, 2 or 1 key/value heads:
/// its cache's bytes per token, one line each.
pub fn book_caches() -> Result<String, ReportError> {
    book_caches_of(&ATTENTIONS)
}

/// [`book_caches`] for the variants `attentions` (a reader's choice of
/// key/value heads: they must divide the model's 4 heads).
pub fn book_caches_of(attentions: &[Attention]) -> Result<String, ReportError> {
    let mut out = String::new();
    for &attention in attentions {
        let model = LanguageModel::<f32>::new(variant(attention), 1)?;
        let name = match attention {
            Attention::KvHeads(1) => "1 key/value head".to_string(),
            Attention::KvHeads(g) => format!("{g} key/value heads"),
            Attention::Latent => format!("latent {} + rotary key {}", LATENT.d_c, LATENT.d_r),
        };
        out += &format!("{name}: {} bytes per token\n", LmCache::bytes_per_token(&model));
    }
    Ok(out.trim_end().to_string())
}

/// Tokens, window and sinks of the ring buffer's check.
pub const RING: (usize, usize, usize) = (300, 8, 2);

/// Key/value heads of the grouped-query check (for its 4 query heads).
pub const GROUPED_CHECK: usize = 2;

/// Each construction against what it must equal: the largest difference.
pub fn equalities() -> Result<String, ReportError> {
    equalities_of(GROUPED_CHECK, RING)
}

/// [`equalities`] with `kv_heads` key/value heads for 4 query heads, and a
/// ring of `(tokens, window, sinks)`: a reader's own sizes.
pub fn equalities_of(kv_heads: usize, ring: (usize, usize, usize)) -> Result<String, ReportError> {
    let (n, window, sinks) = ring;
    let heads = if kv_heads == 1 { "head" } else { "heads" };
    Ok(format!(
        "grouped-query, {kv_heads} key/value {heads} for 4, against multi-head with copied heads: {:.1e}\n\
         absorbed latent attention against the explicit layer, 40 steps: {:.1e}\n\
         ring buffer ({sinks} sinks, window {window}) against the mask, {n} steps: {:.1e}",
        grouped_gap(kv_heads)?,
        latent_gap()?,
        ring_gap(ring)?
    ))
}

fn largest(a: &Array2<f32>, b: &Array2<f32>) -> f32 {
    (a - b).iter().fold(0.0, |m, d| m.max(d.abs()))
}

/// A grouped layer against the multi-head layer whose key and value heads
/// are copies of their group's.
fn grouped_gap(g: usize) -> Result<f32, ReportError> {
    let mut rng = StdRng::seed_from_u64(16);
    let (d, h) = (16, 4);
    let layer = MultiHeadAttention::grouped(d, h, g, &mut rng)?;
    let mha = layer.to_multi_head();
    let x = standard_normal(10, d, &mut rng);
    Ok(largest(&layer.forward(&x, &x)?.output, &mha.forward(&x, &x)?.output))
}

/// Absorbed decoding against the explicit layer, step by step.
fn latent_gap() -> Result<f32, ReportError> {
    let mut rng = StdRng::seed_from_u64(16);
    let layer = LatentAttention::new(16, 4, [4, 6, 4], &mut rng)?;
    let x = standard_normal(40, 16, &mut rng);
    let explicit = layer.forward(&x)?;
    let absorbed = layer.absorbed();
    let mut cache = absorbed.new_cache(x.nrows())?;
    let mut gap = 0.0_f32;
    for t in 0..x.nrows() {
        let out = absorbed.step(&x.row(t), &mut cache)?;
        gap = gap.max((&out - &explicit.row(t)).iter().fold(0.0, |m, d| m.max(d.abs())));
    }
    Ok(gap)
}

/// The ring buffer against attention under a sink-and-window mask.
fn ring_gap((n, window, sinks): (usize, usize, usize)) -> Result<f32, ReportError> {
    let mut rng = StdRng::seed_from_u64(16);
    let d = 4;
    let q = rope(&standard_normal(n, d, &mut rng), 0)?;
    let k = rope(&standard_normal(n, d, &mut rng), 0)?;
    let v = standard_normal(n, d, &mut rng);
    let keep = sinks_and_window_mask(n, sinks, window)?;
    let full = masked_attention(&q, &k, &v, &keep)?;
    let mut cache = SlidingCache::new(d, d, sinks, window)?;
    let mut gap = 0.0_f32;
    for t in 0..n {
        cache.append(&k.row(t), &v.row(t))?;
        let out = cache.attend(&q.row(t))?;
        gap = gap.max((&out - &full.output.row(t)).iter().fold(0.0, |m, d| m.max(d.abs())));
    }
    Ok(gap)
}
