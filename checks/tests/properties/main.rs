//! Contract 4, searched for rather than listed: proptest drives the
//! mechanism's public functions with arbitrary shapes (empty and mismatched
//! ones included) and arbitrary values (NaN, ±∞, huge and tiny finite ones
//! included). Whatever it finds, a function must return a typed error or an
//! `Ok` whose every number is finite; a panic fails the test. Sizes include
//! ones whose products cannot be allocated: an abort would fail the test
//! too. On finite, moderate input, the invariants the chapters test must
//! hold as well.

use attn::approximate::{causal_linear_attention, linear_attention, local_attention};
use attn::attention::batched_attention;
use attn::block::{
    Activation, Config, DecoderLayer, EncoderLayer, FeedForward, LayerNorm, Norm, Transformer,
};
use attn::cache::{decode_with_cache, KvCache};
use attn::exercises::ch09::chunked_softmax;
use attn::fast::{fast_attention, fast_attention_with, Tiles};
use attn::linalg::matrix_product;
use attn::masking::{biased_attention, masked_attention, padded_batch_attention, Padding};
use attn::model::TinyTransformer;
use attn::multihead::fast_multihead;
use attn::multihead::{merge_heads, multi_head_attention, split_heads, MultiHeadAttention};
use attn::nn::Parameters;
use attn::origins::{kernel_regression, AdditiveScore};
use attn::position::{alibi_bias, alibi_slopes, rope, sinusoidal};
use attn::pretrained::{cosine, l2_normalize, mean_pool, pytorch_linear};
use attn::projection::Projections;
use attn::softmax::{softmax, softmax_rows};
use attn::tiled::online_softmax_step;
use attn::tiled::tiled_attention;
use attn::translation::{
    batch, beam_search, number_pair, translate, translation_set, Seq2Seq, Seq2SeqConfig,
};
use attn::{scaled_dot_product_attention, AttnError};
use ndarray::{Array1, Array2, Array3};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

mod language_model;
mod rope_scaling;

/// Any `f32` a caller might pass: ordinary values most of the time, and the
/// troublesome ones often.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -4.0_f32..4.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(3e38_f32),
        1 => Just(-3e38_f32),
        1 => Just(1e20_f32),
        1 => Just(-200.0_f32),
        1 => Just(1e-40_f32),
        1 => Just(0.0_f32),
    ]
}

/// A `rows×cols` matrix of [`value`]s, each size from 0 to `max`.
fn matrix(max: usize) -> impl Strategy<Value = Array2<f32>> {
    (0..=max, 0..=max).prop_flat_map(|(r, c)| {
        proptest::collection::vec(value(), r * c)
            .prop_map(move |v| Array2::from_shape_vec((r, c), v).unwrap())
    })
}

/// A `rows×cols` matrix: of [`value`]s, or (half the time, so that the
/// arithmetic runs to the end often) of ordinary values only.
fn shaped(rows: usize, cols: usize) -> impl Strategy<Value = Array2<f32>> {
    prop_oneof![
        proptest::collection::vec(value(), rows * cols),
        proptest::collection::vec(-4.0_f32..4.0, rows * cols),
    ]
    .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

/// `Q`, `K`, `V` and an `n×m` mask and bias: shapes that fit most of the
/// time (so that the arithmetic runs), any shapes otherwise.
fn attention_inputs() -> impl Strategy<Value = [Array2<f32>; 4]> {
    let fitting = (0usize..6, 0usize..6, 0usize..5, 0usize..4)
        .prop_flat_map(|(n, m, d, d_v)| (shaped(n, d), shaped(m, d), shaped(m, d_v), shaped(n, m)));
    let any_shape = (matrix(5), matrix(5), matrix(5), matrix(5));
    prop_oneof![4 => fitting, 1 => any_shape].prop_map(|(q, k, v, b)| [q, k, v, b])
}

/// A matrix `d_model` = 4 wide most of the time (what the layers below
/// expect), any shape otherwise.
fn layer_input() -> impl Strategy<Value = Array2<f32>> {
    prop_oneof![4 => (0usize..6).prop_flat_map(|n| shaped(n, 4)), 1 => matrix(6)]
}

/// A `rows×cols` matrix of moderate finite values.
fn finite(rows: usize, cols: usize) -> impl Strategy<Value = Array2<f32>> {
    proptest::collection::vec(-3.0_f32..3.0, rows * cols)
        .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

fn mask(max: usize) -> impl Strategy<Value = Array2<bool>> {
    (0..=max, 0..=max).prop_flat_map(|(r, c)| {
        proptest::collection::vec(any::<bool>(), r * c)
            .prop_map(move |v| Array2::from_shape_vec((r, c), v).unwrap())
    })
}

fn all_finite<'a>(xs: impl IntoIterator<Item = &'a f32>) -> bool {
    xs.into_iter().all(|x| x.is_finite())
}

/// The contract on a result: an error, or only finite numbers.
fn holds<T>(result: Result<T, AttnError>, numbers: impl Fn(&T) -> bool) -> bool {
    result.map_or(true, |r| numbers(&r))
}

/// 512 cases a test, from a fixed seed so that CI runs the same cases every
/// time; `PROPTEST_RNG_SEED=N PROPTEST_CASES=M` searches elsewhere.
fn config() -> ProptestConfig {
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok());
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok());
    ProptestConfig {
        cases: cases.unwrap_or(512),
        rng_seed: RngSeed::Fixed(seed.unwrap_or(2026)),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn attention_functions_never_panic_nor_return_non_finite_numbers(
        [q, k, v, bias] in attention_inputs(), causal in any::<bool>(), w in 0usize..7,
    ) {
        let keep = bias.mapv(|b| b > 0.0);
        let ok = |a: &attn::Attention| all_finite(&a.output) && all_finite(&a.weights);
        prop_assert!(holds(scaled_dot_product_attention(&q, &k, &v), ok));
        prop_assert!(holds(masked_attention(&q, &k, &v, &keep), ok));
        prop_assert!(holds(biased_attention(&q, &k, &v, &bias), ok));
        prop_assert!(holds(tiled_attention(&q, &k, &v, causal), |o| all_finite(o)));
        prop_assert!(holds(local_attention(&q, &k, &v, w), |o| all_finite(o)));
        prop_assert!(holds(linear_attention(&q, &k, &v), |o| all_finite(o)));
        prop_assert!(holds(causal_linear_attention(&q, &k, &v), |o| all_finite(o)));
        prop_assert!(holds(decode_with_cache(&q, &k, &v), |o| all_finite(o)));
    }

    /// The crate's matrix product: ndarray's product to rounding, or a
    /// typed error for mismatched shapes, non-finite entries or overflow.
    #[test]
    fn the_matrix_product_is_right_or_refuses(a in matrix(6), b in matrix(6)) {
        match matrix_product(&a, &b) {
            Ok(c) => {
                prop_assert!(all_finite(&c));
                // Rounding is at most k·ε·Σ|a_ik||b_kj| per entry, in any order.
                let bound = a.mapv(f32::abs).dot(&b.mapv(f32::abs));
                for ((x, y), m) in c.iter().zip(&a.dot(&b)).zip(&bound) {
                    prop_assert!(!y.is_finite() || (x - y).abs() <= 1e-5 * m + 1e-30);
                }
            }
            Err(AttnError::ProductShapes { .. }) => prop_assert!(a.ncols() != b.nrows()),
            Err(AttnError::InvalidArgument { name, .. }) => {
                prop_assert!(a.ncols() == b.nrows());
                let (bad, named) = if all_finite(&a) { (&b, "b") } else { (&a, "a") };
                prop_assert!(!all_finite(bad));
                prop_assert_eq!(name, named);
            }
            Err(AttnError::Overflow { .. }) => prop_assert!(
                all_finite(&a) && all_finite(&b) && a.iter().chain(&b).any(|x| x.abs() >= 1e19)
            ),
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    #[test]
    fn softmax_and_positions_never_panic_nor_return_non_finite_numbers(
        x in matrix(6), chunk in 0usize..5, first in prop_oneof![0usize..10, Just(usize::MAX)],
        slope in value(), n in 0usize..6, d in 0usize..9, h in 0usize..10,
    ) {
        prop_assert!(holds(softmax_rows(&x), |p| all_finite(p)));
        if x.nrows() > 0 {
            let row = x.row(0).to_owned();
            prop_assert!(holds(softmax(&row), |p| all_finite(p)));
            prop_assert!(holds(chunked_softmax(&row, chunk), |p| all_finite(p)));
        }
        prop_assert!(holds(rope(&x, first), |y| all_finite(y)));
        prop_assert!(holds(sinusoidal(n, d), |pe| all_finite(pe)));
        prop_assert!(holds(alibi_slopes(h), |s| all_finite(s)));
        // ALiBi's bias holds −∞ above the diagonal by design; below it,
        // every entry must be finite.
        let below_diagonal_finite =
            |b: &Array2<f32>| b.indexed_iter().all(|((i, j), x)| j > i || x.is_finite());
        prop_assert!(holds(alibi_bias(n, slope), below_diagonal_finite));
        prop_assert!(holds(split_heads(&x, h), |s| all_finite(s)));
    }

    #[test]
    fn layers_never_panic_nor_return_non_finite_numbers(
        x in layer_input(), y in layer_input(), weights in proptest::collection::vec(
            prop_oneof![3 => shaped(4, 4), 1 => matrix(4)], 4),
        h in 0usize..5, keep in mask(6), seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let [a, b, c, d] = <[Array2<f32>; 4]>::try_from(weights).unwrap();
        if let Ok(mha) = MultiHeadAttention::from_weights([a, b, c, d].into(), h) {
            let ok = |o: &attn::multihead::MultiHeadOutput| all_finite(&o.output) && all_finite(&o.weights);
            prop_assert!(holds(mha.forward(&x, &y), ok));
            prop_assert!(holds(multi_head_attention(&mha, &x, &y), ok));
            prop_assert!(holds(mha.forward_masked(&x, &y, &keep), ok));
            prop_assert!(holds(mha.forward_fused(&x), ok));
        }
        let c = Config { d_model: 4, h: 2, d_ff: 8, activation: Activation::Gelu, norm: Norm::Pre };
        let ln = LayerNorm::new(4);
        prop_assert!(holds(ln.forward(&x), |o| all_finite(o)));
        let ffn = FeedForward::new(4, 8, Activation::Relu, &mut rng).unwrap();
        prop_assert!(holds(ffn.forward(&x), |o| all_finite(o)));
        let encoder = EncoderLayer::new(c, &mut rng).unwrap();
        prop_assert!(holds(encoder.forward(&x), |o| all_finite(o)));
        let decoder = DecoderLayer::new(Config { norm: Norm::Post, ..c }, &mut rng).unwrap();
        prop_assert!(holds(decoder.forward(&x, &y), |o| all_finite(o)));
        let model = Transformer::new(c, 1, &mut rng).unwrap();
        prop_assert!(holds(model.encode(&x), |o| all_finite(o)));
        prop_assert!(holds(model.decode(&x, &y), |o| all_finite(o)));
        let p = Projections::new(4, 3, 2, &mut rng).unwrap();
        prop_assert!(holds(p.attend(&x, &y), |a| all_finite(&a.output) && all_finite(&a.weights)));
    }

    #[test]
    fn batches_and_the_cache_never_panic(
        b in 0usize..3, t in 0usize..4, d in 0usize..4, lengths in proptest::collection::vec(0usize..6, 0..4),
        left in any::<bool>(), causal in any::<bool>(), values in proptest::collection::vec(value(), 48),
        widths in (0usize..4, 0usize..4, 0usize..4),
    ) {
        let cube = |offset: usize| {
            Array3::from_shape_fn((b, t, d), |(i, j, l)| values[(offset + i * 16 + j * 4 + l) % 48])
        };
        let (q, k, v) = (cube(0), cube(7), cube(13));
        let side = if left { Padding::Left } else { Padding::Right };
        let ok = |a: &attn::attention::BatchedAttention| all_finite(&a.output) && all_finite(&a.weights);
        prop_assert!(holds(padded_batch_attention(&q, &k, &v, &lengths, side, causal), ok));
        prop_assert!(holds(batched_attention(&q, &k, &v), ok));
        prop_assert!(holds(Ok::<_, AttnError>(merge_heads(&q)), |m| m.dim() == (t, b * d)));
        let (d_q, d_k, d_v) = widths;
        let mut cache = KvCache::new(d_k, d_v);
        let row = |n: usize, offset: usize| Array1::from_shape_fn(n, |i| values[(offset + i) % 48]);
        for step in 0..3 {
            let out = cache.step(&row(d_q, step), &row(d_k, step + 5), &row(d_v, step + 9));
            prop_assert!(holds(out, |o| all_finite(o)));
        }
    }

    #[test]
    fn the_weights_loader_never_panics_on_any_text(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        header in proptest::collection::vec(prop_oneof![0usize..40, Just(usize::MAX), Just(1usize << 40)], 0..7),
        lines in proptest::collection::vec("[-0-9.eEaNinf ]{0,40}", 0..40),
    ) {
        let _ = TinyTransformer::from_text(&String::from_utf8_lossy(&bytes));
        let header: Vec<String> = header.iter().map(usize::to_string).collect();
        let text = format!("tiny-transformer {}\n{}", header.join(" "), lines.join("\n"));
        if let Ok(model) = TinyTransformer::from_text(&text) {
            prop_assert!(model.slices().iter().all(|s| s.iter().all(|x| x.is_finite())));
        }
    }

    /// On finite, moderate input the chapters' invariants hold: weights are
    /// a distribution, tiled attention equals naive attention, and a query
    /// whose keys are all masked gets zeros.
    #[test]
    fn invariants_hold_on_moderate_input(
        (q, k, v, keep) in (1usize..7, 1usize..7, 1usize..5, 1usize..5).prop_flat_map(|(n, m, d, d_v)| {
            (finite(n, d), finite(m, d), finite(m, d_v), proptest::collection::vec(any::<bool>(), n * m)
                .prop_map(move |b| Array2::from_shape_vec((n, m), b).unwrap()))
        }),
    ) {
        let naive = scaled_dot_product_attention(&q, &k, &v).unwrap();
        for row in naive.weights.rows() {
            prop_assert!((row.sum() - 1.0).abs() < 1e-5);
        }
        let tiled = tiled_attention(&q, &k, &v, false).unwrap();
        prop_assert!((&tiled - &naive.output).iter().all(|d| d.abs() < 1e-5));
        let masked = masked_attention(&q, &k, &v, &keep).unwrap();
        for (i, row) in masked.weights.rows().into_iter().enumerate() {
            let any_kept = keep.row(i).iter().any(|&k| k);
            let sum = row.sum();
            let distribution = if any_kept { (sum - 1.0).abs() < 1e-5 } else { sum == 0.0 };
            prop_assert!(distribution, "row {} sums to {}", i, sum);
            if !any_kept {
                prop_assert!(masked.output.row(i).iter().all(|&o| o == 0.0));
            }
        }
    }

    /// An `Ok` is the right answer, even for entries far from 1: attention
    /// computed in `f64` (where scores of 1e40 are ordinary numbers) agrees
    /// with every weight the crate returns. Scores that overflow `f32` must
    /// be an error, not a row of zeros or of wrong weights.
    #[test]
    fn an_ok_answer_is_the_right_answer_for_huge_entries(
        (q, k, v) in (1usize..4, 1usize..4, 1usize..3).prop_flat_map(|(n, m, d)| {
            let entry = prop_oneof![-4.0_f32..4.0, -1e21_f32..1e21];
            let shaped = move |r: usize, c: usize| proptest::collection::vec(entry.clone(), r * c)
                .prop_map(move |x| Array2::from_shape_vec((r, c), x).unwrap());
            (shaped(n, d), shaped(m, d), shaped(m, 1))
        }),
    ) {
        if let Ok(a) = scaled_dot_product_attention(&q, &k, &v) {
            let (q, k) = (q.mapv(f64::from), k.mapv(f64::from));
            let scores = q.dot(&k.t()) / (q.ncols() as f64).sqrt();
            for (i, row) in scores.rows().into_iter().enumerate() {
                let max = row.fold(f64::NEG_INFINITY, |m, &s| m.max(s));
                let exps = row.mapv(|s| (s - max).exp());
                let weights = &exps / exps.sum();
                for (j, (&w, &ours)) in weights.iter().zip(a.weights.row(i)).enumerate() {
                    prop_assert!((w - f64::from(ours)).abs() < 1e-3, "weight ({}, {}): {} vs {}", i, j, ours, w);
                }
            }
        }
    }
}

/// A size a caller might pass: small most of the time, and sometimes one
/// whose product with another cannot be allocated.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..9, 1 => Just(4096usize), 1 => Just(1usize << 40), 1 => Just(usize::MAX)]
}

proptest! {
    #![proptest_config(config())]

    /// The appendix's kernel, chapter 1's scores and chapter 15's pooling:
    /// an error or finite numbers, whatever the shapes, values and tiles.
    #[test]
    fn fast_origins_and_pooling_never_panic_nor_return_non_finite_numbers(
        [q, k, v, _] in attention_inputs(), causal in any::<bool>(),
        (tq, tk) in (size(), size()), (m, l) in (value(), value()),
        x in matrix(5), bandwidth in value(), (d_q, d_a) in (size(), size()), len in 0usize..7,
    ) {
        prop_assert!(holds(fast_attention(&q, &k, &v, causal), |o| all_finite(o)));
        let tiles = Tiles { query: tq, key: tk };
        prop_assert!(holds(fast_attention_with(&q, &k, &v, causal, tiles), |o| all_finite(o)));
        let mut scores: Vec<f32> = x.iter().copied().collect();
        let (mut m, mut l) = (m, l);
        let step = online_softmax_step(&mut scores, &mut m, &mut l);
        prop_assert!(holds(step, |c| c.is_finite() && l.is_finite()));
        if let Ok(layer) = MultiHeadAttention::new(4, 2, &mut StdRng::seed_from_u64(0)) {
            prop_assert!(holds(fast_multihead(&layer, &q, &k), |o| all_finite(o)));
        }
        let column = |a: &Array2<f32>| a.iter().copied().collect::<Array1<f32>>();
        let ok = |a: &attn::Attention| all_finite(&a.output) && all_finite(&a.weights);
        prop_assert!(holds(kernel_regression(&column(&q), &column(&k), &column(&v), bandwidth), ok));
        if let Ok(score) = AdditiveScore::new(d_q, d_q, d_a, &mut StdRng::seed_from_u64(1)) {
            prop_assert!(holds(score.attend(&q, &k, &v), ok));
        }
        prop_assert!(holds(mean_pool(&x, len), |p| all_finite(p)));
        let row = column(&x);
        prop_assert!(holds(l2_normalize(&row), |p| all_finite(p)));
        prop_assert!(holds(cosine(&row, &row), |c| c.is_finite() && c.abs() <= 1.0 + 1e-6));
        prop_assert!(all_finite(&pytorch_linear(&x)) || !all_finite(&x));
    }

    /// Chapter 13's data, decoding and model: a typed error for any number,
    /// size or text, never a panic, an abort or a loop that does not end.
    #[test]
    fn translation_never_panics_hangs_nor_aborts(
        number in any::<u32>(), count in size(), seed in any::<u64>(),
        width in size(), max_len in 0usize..6,
        ids in proptest::collection::vec(prop_oneof![0usize..50, Just(usize::MAX)], 0..8),
        (d_model, heads, d_ff, layers) in (size(), size(), size(), size()),
        text in "[-0-9.eEaNinf \n]{0,80}",
    ) {
        let _ = number_pair(number);
        if count <= 2_000 {
            prop_assert!(holds(translation_set(count, seed, &[]), |s| s.len() == count));
        } else {
            let _ = translation_set(count, seed, &[]); // an error, or a tenth of the numbers
        }
        let log_probs = |prefix: &[usize]| Ok(vec![-(3f64.ln()); 3 + prefix.len() % 2]);
        let _ = beam_search(log_probs, 0, width, max_len);
        let _ = batch(&[(&ids[..], &ids[..])]);
        let config = Seq2SeqConfig { d_model, heads, d_ff, layers, max_lengths: (12, 8), bottleneck: false, vocab: attn::translation::NUMBER_VOCAB };
        if let Ok(net) = Seq2Seq::new(config, seed) {
            prop_assert!(holds(translate(&net, &ids, width.min(3)), |t| t.len() <= 9));
        }
        let _ = Seq2Seq::from_text(&format!("seq2seq {d_model} {heads} {d_ff} {layers} 12 8 0 33 13\n{text}"));
    }
}
