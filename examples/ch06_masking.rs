//! Chapter 6, Masking: prints the masks, what −∞ and −1e9 do to a row of
//! scores, a padded batch, the KV cache check and its cost, and draws the
//! chapter's three figures.
//!
//! ```text
//! cargo run --example ch06_masking
//! ```

use report::plot;

use attn::cache::{
    cumulative_flops, decode_with_cache, flops_per_token_with_cache, flops_per_token_without_cache,
};
use attn::masking::{
    additive_mask, causal_mask, fully_masked_row, key_padding_mask, masked_attention, Padding,
};
use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::softmax::softmax_rows;
use ndarray::{array, Array2, ArrayRef2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::show::matrix;

/// A boolean mask as 1 (keep) and 0 (drop).
fn ones_and_zeros(keep: &ArrayRef2<bool>) -> Array2<f32> {
    keep.mapv(|k| if k { 1.0 } else { 0.0 })
}

fn main() -> Result<(), report::error::ReportError> {
    println!("== The causal mask for n = 5: boolean (1 = keep) and additive ==");
    let keep = causal_mask(5, 5);
    println!("{}", matrix(&ones_and_zeros(&keep), 0));
    println!("{}", matrix(&additive_mask(&keep), 0));

    println!("\n== A row whose every key is masked; scores [3, 40, -25, 100] ==");
    let [stable, textbook, fill_1e9, add_1e9] =
        fully_masked_row(&array![3.0_f32, 40.0, -25.0, 100.0])?;
    println!("fill -inf, stable softmax:    {}", matrix(&stable, 4));
    println!("fill -inf, textbook softmax:  {}", matrix(&textbook, 4));
    println!("fill -1e9:                    {}", matrix(&fill_1e9, 4));
    println!("add -1e9:                     {}", matrix(&add_1e9, 4));
    let spacing = f32::from_bits(1e9_f32.to_bits() + 1) - 1e9;
    println!("f32 numbers near 1e9 are {spacing} apart: 3 + (-1e9) = {}", 3.0_f32 + -1e9);

    println!("\n== Large scores [3e9, 2.5e9, 5e9], key 2 masked ==");
    let big = array![[3.0e9_f32, 2.5e9, 5.0e9]];
    let keep_two = array![[true, true, false]];
    let bias = additive_mask(&keep_two);
    println!("add -inf:  {}", matrix(&softmax_rows(&(&big + &bias))?, 4));
    let bias_1e9 = bias.mapv(|b| b.max(-1e9));
    println!("add -1e9:  {}", matrix(&softmax_rows(&(&big + &bias_1e9))?, 4));

    println!("\n== Padding: 3 real tokens in a row of 5 ==");
    let right = key_padding_mask(5, 3, 5, Padding::Right)?;
    let left_causal = key_padding_mask(5, 3, 5, Padding::Left)? & causal_mask(5, 5);
    println!("right padding, key-padding mask:\n{}", matrix(&ones_and_zeros(&right), 0));
    println!("left padding and causal:\n{}", matrix(&ones_and_zeros(&left_causal), 0));
    let mut rng = StdRng::seed_from_u64(5);
    let x = standard_normal(5, 4, &mut rng);
    let out = masked_attention(&x, &x, &x, &left_causal)?.output;
    println!(
        "output rows of the two padding queries:\n{}",
        matrix(&out.slice(ndarray::s![..2, ..]), 4)
    );

    println!("\n== KV cache: 100 tokens decoded one at a time, d_k = d_v = 16 ==");
    let mut rng = StdRng::seed_from_u64(100);
    let (q, k, v) = (
        standard_normal(100, 16, &mut rng),
        standard_normal(100, 16, &mut rng),
        standard_normal(100, 16, &mut rng),
    );
    let full = masked_attention(&q, &k, &v, &causal_mask(100, 100))?.output;
    let incremental = decode_with_cache(&q, &k, &v)?;
    let diff = (&full - &incremental).fold(0.0_f32, |m, &d| m.max(d.abs()));
    println!("largest difference from full causal attention: {diff:.1e}");

    let (lengths, d) = (report::ch06::DECODE_LENGTHS, report::ch06::DECODE_WIDTH);
    println!("\n== Cost of generating tokens, d = {d} (GFLOP) ==");
    println!("{}", report::ch06::decode_cost_table(&lengths, d)?);

    draw_masks()?;
    draw_weights()?;
    draw_cost()?;
    Ok(())
}

/// Figure 6.2: the causal mask, a key-padding mask, and both with left
/// padding, over the same 5 positions and 3 real tokens as the printed masks.
fn draw_masks() -> Result<(), report::error::ReportError> {
    let positions = ["0", "1", "2", "3", "4"];
    let masks = [
        ("causal", causal_mask(5, 5)),
        ("key padding (3 tokens, right-padded)", key_padding_mask(5, 3, 5, Padding::Right)?),
        (
            "causal and key padding (left-padded)",
            key_padding_mask(5, 3, 5, Padding::Left)? & causal_mask(5, 5),
        ),
    ];
    let panels: Vec<_> = masks
        .iter()
        .map(|(title, keep)| {
            let h = plot::Heatmap {
                title,
                row_labels: &positions,
                col_labels: &positions,
                x_desc: "key position",
                y_desc: "query position",
                value_desc: "1 = may attend, 0 = masked",
                range: (0.0, 1.0),
                annotate: Some(0),
            };
            (h, ones_and_zeros(keep))
        })
        .collect();
    let path = plot::heatmap_grid("ch06-masks.svg", "Three masks over 5 positions", 3, &panels);
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 6.2: the same scores, softmaxed without and with the causal mask.
fn draw_weights() -> Result<(), report::error::ReportError> {
    let words = ["The", "cat", "sat", "on", "the", "mat"];
    let mut rng = StdRng::seed_from_u64(55);
    let (q, k) = (standard_normal(6, 8, &mut rng), standard_normal(6, 8, &mut rng));
    let v = Array2::<f32>::eye(6);
    let unmasked = scaled_dot_product_attention(&q, &k, &v)?.weights;
    let causal = masked_attention(&q, &k, &v, &causal_mask(6, 6))?.weights;
    let panel = |title| plot::Heatmap {
        title,
        row_labels: &words,
        col_labels: &words,
        x_desc: "key",
        y_desc: "query",
        value_desc: "attention weight",
        range: (0.0, 1.0),
        annotate: Some(2),
    };
    let panels = [(panel("no mask"), unmasked), (panel("causal mask"), causal)];
    let path = plot::heatmap_grid(
        "ch06-masked-weights.svg",
        "The same scores (random Q, K) softmaxed without and with the causal mask",
        2,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 6.3: total FLOPs to generate n tokens, with and without a cache.
fn draw_cost() -> Result<(), report::error::ReportError> {
    let d = report::ch06::DECODE_WIDTH;
    let ns: Vec<u64> = (0..=12).map(|p| 1 << p).collect();
    let series = |label: &str, per_token: fn(u64, u64) -> f64, colour| {
        Ok(plot::Series {
            label: label.to_string(),
            points: ns
                .iter()
                .map(|&n| Ok((n as f64, cumulative_flops(n, d, per_token)?)))
                .collect::<Result<_, attn::AttnError>>()?,
            colour,
            dashed: false,
            spread: Vec::new(),
        }) as Result<plot::Series, attn::AttnError>
    };
    let chart = plot::Chart {
        title: "FLOPs to generate n tokens, one attention layer, d = 512",
        x_desc: "tokens generated, n",
        y_desc: "total FLOPs (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e6, 1e14),
    };
    let lines = vec![
        series("without a cache (rerun the prefix)", flops_per_token_without_cache, plot::ORANGE_)?,
        series("with a KV cache", flops_per_token_with_cache, plot::BLUE_)?,
    ];
    let path = plot::line_charts("ch06-kv-cache.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
    Ok(())
}
