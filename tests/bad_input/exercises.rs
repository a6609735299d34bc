//! The exercises' solutions (`src/exercises/`), which a reader calls as
//! they would the crate's own functions: each is called with what a reader
//! could pass by mistake (shapes that do not fit, nothing at all, sizes of
//! zero or past memory, numbers that are not finite, parameters out of
//! range) and must answer with an error that names it, never a panic, an
//! abort, or a result that is not finite or not the answer.

use attn::exercises::fast::Partial;
use attn::multihead::MultiHeadAttention;
use attn::AttnError;
use ndarray::{array, Array1, Array2, Array3};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

fn too_large<T>(r: Result<T, AttnError>) -> bool {
    matches!(r, Err(AttnError::TooLarge { .. }))
}

/// The error's message, which must name what was wrong.
fn message<T: std::fmt::Debug>(r: Result<T, AttnError>) -> String {
    r.unwrap_err().to_string()
}

/// Scores and attention (chapters 1, 2 and 5): shapes that do not fit,
/// empty or non-finite inputs, and inputs whose scores, products or
/// outputs would not fit in memory (2^16 rows against 2^16 rows, 16 GiB of
/// `f32`) are errors before anything that size is allocated.
#[test]
fn scores_refuse_shapes_that_do_not_fit_and_sizes_past_memory() {
    use attn::exercises::ch01::multiplicative_scores;
    use attn::exercises::ch02::{attention_per_item, shift_gap};
    use attn::exercises::ch05::head_weights;

    let (q, k, w) = (Array2::<f32>::ones((3, 4)), Array2::ones((5, 2)), Array2::ones((4, 2)));
    assert_eq!(multiplicative_scores(&q, &k, &w).unwrap(), Array2::from_elem((3, 5), 8.0));
    let wrong_w = message(multiplicative_scores(&q, &k, &Array2::ones((2, 4))));
    assert!(wrong_w.contains("W"), "{wrong_w}");
    assert!(multiplicative_scores(&Array2::zeros((0, 4)), &k, &w).is_err(), "no queries");
    assert!(multiplicative_scores(&q, &Array2::from_elem((5, 2), f32::NAN), &w).is_err());
    let huge = Array2::from_elem((3, 4), 1e38_f32);
    assert!(multiplicative_scores(&huge, &k, &w).is_err(), "scores past f32");
    let (long, wide) = (Array2::<f32>::zeros((1 << 16, 1)), Array2::<f32>::zeros((1, 1 << 16)));
    assert!(too_large(multiplicative_scores(&long, &long, &Array2::zeros((1, 1)))), "n×m");
    assert!(too_large(multiplicative_scores(&long, &wide, &wide)), "Q W is 2^16 × 2^16");

    let items = |b, rows, cols| Array3::<f32>::ones((b, rows, cols));
    let (q3, k3, v3) = (items(2, 3, 4), items(2, 5, 4), items(2, 5, 2));
    let even = attention_per_item(&q3, &k3, &v3).unwrap(); // equal scores: the mean of the values
    approx::assert_abs_diff_eq!(even, Array3::ones((2, 3, 2)), epsilon = 1e-6);
    let fewer = attention_per_item(&q3, &items(3, 5, 4), &v3);
    assert!(matches!(fewer, Err(AttnError::BatchSizeMismatch { .. })), "{fewer:?}");
    assert!(attention_per_item(&q3, &items(2, 5, 3), &v3).is_err(), "keys 3 wide, queries 4");
    assert!(attention_per_item(&q3, &k3, &items(2, 4, 2)).is_err(), "4 values for 5 keys");
    assert!(attention_per_item(&items(2, 0, 4), &k3, &v3).is_err(), "no queries");
    let mut nan = k3.clone();
    nan[[1, 2, 0]] = f32::NAN;
    assert!(attention_per_item(&q3, &nan, &v3).is_err(), "NaN in item 1's keys");
    // One key, 2^16 queries and values 2^16 wide: a 2^32-entry output.
    let output = attention_per_item(&items(1, 1 << 16, 1), &items(1, 1, 1), &items(1, 1, 1 << 16));
    assert!(too_large(output), "B×n×d_v");

    let s = array![1.0_f32, 2.0, 3.0];
    assert!(shift_gap(&s, 5.0).unwrap() < 1e-5);
    for c in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        assert!(message(shift_gap(&s, c)).starts_with("c "), "c = {c}");
    }
    assert!(shift_gap(&array![1.0, f32::NAN], 1.0).is_err(), "a NaN score");
    assert!(shift_gap(&array![3e38_f32, 0.0], 3e38).is_err(), "s + c overflows to +∞");

    let layer = MultiHeadAttention::new(8, 2, &mut StdRng::seed_from_u64(0)).unwrap();
    let x = Array2::<f32>::ones((3, 8));
    let weights = head_weights(&layer, &x, &x, 1).unwrap();
    approx::assert_abs_diff_eq!(weights, Array2::from_elem((3, 3), 1.0 / 3.0), epsilon = 1e-6);
    for head in [2, usize::MAX] {
        assert!(message(head_weights(&layer, &x, &x, head)).starts_with("head "), "{head}");
    }
    assert!(head_weights(&layer, &Array2::ones((3, 4)), &x, 0).is_err(), "4 wide, d_model 8");
    assert!(head_weights(&layer, &x, &Array2::zeros((0, 8)), 0).is_err(), "no keys");
    assert!(head_weights(&layer, &Array2::from_elem((3, 8), f32::NAN), &x, 0).is_err());
    let long = Array2::<f32>::zeros((1 << 16, 8));
    assert!(too_large(head_weights(&layer, &long, &long, 0)), "2^16 × 2^16 weights");
}

/// Formulas from sizes and scales (chapters 3, 4, 8, 9, 10, 13 and 15): a
/// size of 0, a scale or a smoothing outside its range, sizes whose count
/// overflows or whose arrays would not fit in memory, and a result that is
/// not finite are errors.
#[test]
fn formulas_refuse_zero_sizes_overflow_and_results_that_are_not_finite() {
    use attn::exercises::ch03::score_scale;
    use attn::exercises::ch04::scaled_score_variance;
    use attn::exercises::ch08::naive_peak_bytes;
    use attn::exercises::ch09::layers_to_reach_first_token;
    use attn::exercises::ch10::encoder_layer_parameters;
    use attn::exercises::ch13::smoothing_floor;
    use attn::exercises::ch15::bert_parameters;

    assert_eq!(score_scale(2.0, 0.5, 16).unwrap(), 4.0);
    for (sigma_q, sigma_k) in [(0.0, 1.0), (-1.0, 1.0), (f64::NAN, 1.0), (1.0, f64::INFINITY)] {
        assert!(score_scale(sigma_q, sigma_k, 4).is_err(), "σ_q = {sigma_q}, σ_k = {sigma_k}");
    }
    assert!(message(score_scale(1.0, 1.0, 0)).starts_with("d_k "));
    // Two finite σ whose product overflows f64, or underflows to 0.
    assert!(message(score_scale(1e200, 1e200, 4)).contains("sigma_q"));
    assert!(score_scale(1e-200, 1e-200, 4).is_err(), "a scale of 0");

    let variance = scaled_score_variance(64, 16, 0.125, 200, 3).unwrap();
    assert!((variance - 1.0).abs() < 0.25, "{variance}");
    for (d_model, d_k, tokens) in [(1, 8, 50), (16, 0, 50), (16, 8, 1)] {
        assert!(scaled_score_variance(d_model, d_k, 0.25, tokens, 1).is_err());
    }
    for weight_std in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let error = message(scaled_score_variance(16, 8, weight_std, 50, 1));
        assert!(error.starts_with("weight_std "), "{error}");
    }
    assert!(too_large(scaled_score_variance(usize::MAX, 8, 0.25, 50, 1)), "W_Q");
    assert!(too_large(scaled_score_variance(2, 1 << 40, 0.25, 2, 1)), "W_Q 2 × 2^40");
    assert!(too_large(scaled_score_variance(16, 8, 0.25, 1 << 16, 1)), "2^32 scores");
    assert!(too_large(scaled_score_variance(2, 1 << 25, 0.25, 1 << 6, 1)), "Q is 2^6 × 2^25");
    // Weights so large that the scores overflow f32: an error, not ∞ or NaN.
    assert!(scaled_score_variance(16, 8, 1e30, 50, 1).is_err());

    assert_eq!(naive_peak_bytes(2, 3, 4, 5).unwrap(), 4 * (6 + 10 + 8));
    for (n, m, d_k, d_v) in [(0, 3, 4, 5), (2, 0, 4, 5), (2, 3, 0, 5), (2, 3, 4, 0)] {
        assert!(naive_peak_bytes(n, m, d_k, d_v).is_err(), "{n}, {m}, {d_k}, {d_v}");
    }
    assert!(message(naive_peak_bytes(2, 0, 4, 5)).starts_with("m "));
    assert!(naive_peak_bytes(u64::MAX, 2, 1, 1).is_err());
    assert!(naive_peak_bytes(1, u64::MAX, u64::MAX, u64::MAX).is_err());
    assert!(naive_peak_bytes(u64::MAX / 4, 1, 1, 1).is_err(), "the sum fits, 4 times it not");

    assert_eq!(layers_to_reach_first_token(64, 8).unwrap(), 9);
    assert_eq!(layers_to_reach_first_token(usize::MAX, usize::MAX).unwrap(), 1);
    for w in [0, 1] {
        assert!(message(layers_to_reach_first_token(10, w)).starts_with("w "), "w = {w}");
    }
    assert!(message(layers_to_reach_first_token(0, 4)).starts_with("n "), "no positions");

    assert_eq!(encoder_layer_parameters(512, 2048).unwrap(), 3_150_336);
    for (d_model, d_ff) in [(0, 2048), (512, 0), (usize::MAX, 2), (2, usize::MAX), (1 << 32, 1)] {
        assert!(encoder_layer_parameters(d_model, d_ff).is_err(), "{d_model}, {d_ff}");
    }
    assert!(message(encoder_layer_parameters(0, 4)).starts_with("d_model "));

    // Chapter 15's count of the pretrained model.
    assert_eq!(bert_parameters(30522, 512, 384, 1536, 6).unwrap(), 22_565_376);
    for sizes in [[0, 512, 384, 1536, 6], [30522, 512, 384, 1536, 0], [30522, 512, 0, 1536, 6]] {
        let [vocabulary, positions, d, d_ff, layers] = sizes;
        assert!(bert_parameters(vocabulary, positions, d, d_ff, layers).is_err(), "{sizes:?}");
    }
    assert!(message(bert_parameters(30522, 512, 384, 1536, 0)).starts_with("layers "));
    assert!(bert_parameters(usize::MAX, 1, 1, 1, 1).is_err(), "the tables' rows overflow");
    assert!(bert_parameters(1, 1, 1 << 32, 1, 1).is_err(), "d² overflows");
    assert!(bert_parameters(1, 1, 1, 1, usize::MAX).is_err(), "layers × a layer overflows");

    let floor = smoothing_floor(0.1, 13).unwrap();
    assert!((floor - 0.5372).abs() < 1e-4, "{floor}"); // the chapter's
    assert_eq!(smoothing_floor(0.0, 13).unwrap(), 0.0);
    assert!((smoothing_floor(1.0, 13).unwrap() - 13f64.ln()).abs() < 1e-12, "even over 13");
    for epsilon in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        let error = message(smoothing_floor(epsilon, 13));
        assert!(error.starts_with("epsilon "), "ε = {epsilon}: {error}");
    }
    assert!(message(smoothing_floor(0.1, 0)).starts_with("v "), "no tokens");
    // A vocabulary of any size, without an array of it.
    let widest = smoothing_floor(0.1, usize::MAX).unwrap();
    assert!(widest.is_finite() && widest > floor, "{widest}");
}

/// Masks, positions and the sink-and-window ring (chapters 6, 7 and 17):
/// a window of 0, a width RoPE cannot pair, positions past `usize`,
/// non-finite rows or rows that overflow when turned, and masks or rings
/// too large to hold are errors.
#[test]
fn masks_positions_and_rings_refuse_what_they_cannot_hold() {
    use attn::exercises::ch06::sliding_window_mask;
    use attn::exercises::ch07::rope_half_split;
    use attn::exercises::ch17::ring_rows;

    let band = array![[true, false, false], [true, true, false], [false, true, true]];
    assert_eq!(sliding_window_mask(3, 2).unwrap(), band);
    assert!(message(sliding_window_mask(3, 0)).starts_with("window "));
    assert!(too_large(sliding_window_mask(1 << 16, 4)), "a 2^16 × 2^16 mask");
    assert!(too_large(sliding_window_mask(usize::MAX, 4)));

    let x = array![[1.0_f32, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0, 0.0]];
    assert_eq!(
        rope_half_split(&x.slice(ndarray::s![..1, ..]), 0).unwrap(),
        x.slice(ndarray::s![..1, ..])
    );
    let turned = rope_half_split(&x, 7).unwrap();
    for (before, after) in x.rows().into_iter().zip(turned.rows()) {
        let norm = |r: ndarray::ArrayView1<f32>| r.dot(&r).sqrt();
        assert!((norm(before) - norm(after)).abs() < 1e-5, "a rotation keeps the norm");
    }
    assert!(message(rope_half_split(&Array2::zeros((2, 3)), 0)).starts_with("d_k "));
    assert!(rope_half_split(&Array2::zeros((2, 0)), 0).is_err(), "no dimensions");
    assert!(message(rope_half_split(&x, usize::MAX)).starts_with("first position "));
    assert!(rope_half_split(&array![[1.0, f32::NAN]], 0).is_err(), "a NaN entry");
    assert!(rope_half_split(&array![[3e38_f32, -3e38]], 1).is_err(), "a·cos − b·sin overflows");

    assert_eq!(ring_rows(5, 1, 2).unwrap(), vec![Some(0), Some(3), Some(4)]);
    assert_eq!(ring_rows(usize::MAX, 1, 2).unwrap().len(), 3, "any number of tokens seen");
    assert!(message(ring_rows(3, 1, 0)).starts_with("window "));
    for (sinks, window) in [(usize::MAX, 2), (1, usize::MAX), (1 << 30, 1)] {
        assert!(too_large(ring_rows(3, sinks, window)), "{sinks} sinks, a window of {window}");
    }
}

/// Gradients, tiles and the recurrent step (chapters 11 and 14 and the
/// appendix): shapes that do not fit, empty or non-finite inputs, and
/// results that overflow (a tiny temperature, sums past `f32`) are errors,
/// never an `Ok` holding ∞ or NaN.
#[test]
fn gradients_and_tiles_refuse_non_finite_inputs_and_results() {
    use attn::exercises::ch11::softmax_temperature_backward;
    use attn::exercises::ch14::gru_step;
    use attn::exercises::fast::{merge_partials, row_d};

    let (p, dp) = (array![[0.5, 0.5]], array![[1.0, 0.0]]);
    assert_eq!(softmax_temperature_backward(&p, &dp, 0.5).unwrap(), array![[0.5, -0.5]]);
    assert!(softmax_temperature_backward(&p, &array![[1.0, 0.0, 0.0]], 1.0).is_err());
    for tau in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(message(softmax_temperature_backward(&p, &dp, tau)).starts_with("tau "), "{tau}");
    }
    assert!(softmax_temperature_backward(&array![[f64::NAN, 0.5]], &dp, 1.0).is_err());
    assert!(softmax_temperature_backward(&p, &array![[f64::INFINITY, 0.0]], 1.0).is_err());
    // dZ / τ past f64 for the smallest τ > 0.
    assert!(softmax_temperature_backward(&p, &dp, 1e-320).is_err());

    let o = array![[1.0_f32, 2.0], [3.0, 4.0]];
    assert_eq!(row_d(&o, &array![[1.0, 1.0], [0.5, 0.0]]).unwrap(), array![3.0, 1.5]);
    assert!(message(row_d(&o, &Array2::zeros((2, 3)))).contains("dO"));
    assert!(row_d(&o, &array![[1.0, f32::NAN], [0.0, 0.0]]).is_err(), "NaN in dO");
    assert!(row_d(&array![[1e30_f32]], &array![[1e30_f32]]).is_err(), "D past f32");

    let partial = |m: f32, l: f32, o: Array1<f32>| Partial { m, l, o };
    let merged = merge_partials(&partial(0.0, 1.0, array![2.0]), &partial(0.0, 1.0, array![4.0]));
    assert_eq!(merged.unwrap(), partial(0.0, 2.0, array![6.0]));
    let one = partial(0.0, 1.0, array![1.0]);
    assert!(merge_partials(&one, &partial(0.0, 1.0, array![1.0, 2.0])).is_err(), "widths");
    for bad in [
        partial(f32::NAN, 1.0, array![1.0]),
        partial(f32::INFINITY, 1.0, array![1.0]),
        partial(0.0, -1.0, array![1.0]),
        partial(0.0, f32::NAN, array![1.0]),
        partial(0.0, 1.0, array![f32::INFINITY]),
    ] {
        assert!(message(merge_partials(&one, &bad)).starts_with("partial "), "{bad:?}");
    }
    // Two sums, or two outputs, each finite, whose sum is past f32.
    let big_l = partial(0.0, 3e38, array![1.0]);
    assert!(merge_partials(&big_l, &big_l).is_err(), "ℓ past f32");
    let big_o = partial(0.0, 1.0, array![3e38]);
    assert!(merge_partials(&big_o, &big_o).is_err(), "o past f32");

    let zeros = |rows, cols| Array2::<f64>::zeros((rows, cols));
    let h = Array2::from_elem((2, 4), 0.5);
    let halved = gru_step(&zeros(2, 3), &h, &zeros(3, 12), &zeros(4, 12), &zeros(1, 12));
    assert_eq!(halved.unwrap(), Array2::from_elem((2, 4), 0.25), "z = ½, ĥ = 0");
    let wrong_u = message(gru_step(&zeros(2, 3), &h, &zeros(3, 12), &zeros(4, 9), &zeros(1, 12)));
    assert!(wrong_u.starts_with("U "), "{wrong_u}");
    assert!(gru_step(&zeros(3, 3), &h, &zeros(3, 12), &zeros(4, 12), &zeros(1, 12)).is_err());
    assert!(
        gru_step(&zeros(0, 3), &zeros(0, 4), &zeros(3, 12), &zeros(4, 12), &zeros(1, 12)).is_err(),
        "an empty batch"
    );
    assert!(
        gru_step(&zeros(2, 3), &zeros(2, 0), &zeros(3, 0), &zeros(0, 0), &zeros(1, 0)).is_err(),
        "a state of width 0"
    );
    // 3·d_h past usize, with no memory behind it: an empty batch.
    let wide = zeros(0, usize::MAX / 2);
    assert!(gru_step(&zeros(0, 1), &wide, &zeros(1, 3), &zeros(3, 3), &zeros(1, 3)).is_err());
    let nan_b = Array2::from_elem((1, 12), f64::NAN);
    assert!(gru_step(&zeros(2, 3), &h, &zeros(3, 12), &zeros(4, 12), &nan_b).is_err());
}

/// Examples, decoding and the weights they read (chapters 12 to 16): an
/// example too long to hold, a source the translator cannot read, logits
/// or penalties that are not finite, tokens past the logits, and runs or
/// weights that are no weights are errors.
#[test]
fn examples_decoding_and_weights_refuse_what_is_not_theirs() {
    use attn::exercises::ch12::sorting_example;
    use attn::exercises::ch13::greedy_translate;
    use attn::exercises::ch14::run_spread;
    use attn::exercises::ch15::self_weight;
    use attn::exercises::ch16::repetition_penalty;
    use attn::translation::{translation_set, Seq2Seq, Seq2SeqConfig, BOOK_SEQ2SEQ, NUMBER_VOCAB};

    let e = sorting_example(4, &mut StdRng::seed_from_u64(0)).unwrap();
    assert_eq!((e.len(), e[4]), (9, attn::model::SEP));
    assert!(e[5..].windows(2).all(|w| w[0] <= w[1]), "{e:?}");
    for k in [usize::MAX, usize::MAX / 2, 1 << 40] {
        assert!(too_large(sorting_example(k, &mut StdRng::seed_from_u64(0))), "k = {k}");
    }
    // Through the task the training loop draws from, too, for either task.
    for task in [attn::exercises::ch12::SORT, attn::model::Task::REVERSE] {
        assert!(too_large(task.example(1 << 40, &mut StdRng::seed_from_u64(0))), "{}", task.name());
        assert_eq!(task.example(3, &mut StdRng::seed_from_u64(0)).unwrap().len(), 7);
    }

    let config = Seq2SeqConfig { d_model: 8, heads: 2, d_ff: 16, layers: 1, ..BOOK_SEQ2SEQ };
    let net = Seq2Seq::new(config, 0).unwrap();
    let source = translation_set(1, 0, &[]).unwrap().remove(0).source;
    assert!(greedy_translate(&net, &source).unwrap().len() <= 8);
    assert!(greedy_translate(&net, &[]).is_err(), "no source");
    assert!(greedy_translate(&net, &[NUMBER_VOCAB.0]).is_err(), "a token past the vocabulary");
    assert!(greedy_translate(&net, &[source[0]; 13]).is_err(), "longer than 12 words");

    let mut z = [2.0, -1.0, 0.5];
    repetition_penalty(&mut z, &[0, 1], 2.0).unwrap();
    assert_eq!(z, [1.0, -2.0, 0.5]);
    for penalty in [0.5, -1.0, f32::NAN, f32::INFINITY] {
        let error = message(repetition_penalty(&mut z, &[0], penalty));
        assert!(error.contains("penalty"), "{penalty}: {error}");
    }
    assert!(repetition_penalty(&mut z, &[3], 1.5).is_err(), "token 3 of 3 logits");
    assert!(repetition_penalty(&mut z, &[usize::MAX], 1.5).is_err());
    assert_eq!(z, [1.0, -2.0, 0.5], "untouched by the errors");
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut z = [1.0, bad];
        assert!(repetition_penalty(&mut z, &[0], 2.0).is_err(), "a logit of {bad}");
        assert_eq!(z[0], 1.0, "token 0's logit is not penalised on an error");
    }
    assert!(repetition_penalty(&mut [-2.0, 1.0], &[0], 3e38).is_err(), "−2 · 3e38 past f32");

    let row = array![0.25, 0.25, 0.5];
    let (share, entropy) = run_spread(row.view(), 0, 2).unwrap();
    assert_eq!(share, 0.5);
    assert!((entropy - 2f64.ln()).abs() < 1e-12);
    for (start, end) in [(1, 1), (2, 1), (0, 4), (usize::MAX, usize::MAX), (0, usize::MAX)] {
        let error = message(run_spread(row.view(), start, end));
        assert!(error.starts_with("run's end "), "{start}..{end}: {error}");
    }
    assert!(run_spread(Array1::zeros(0).view(), 0, 0).is_err(), "an empty row");
    assert!(run_spread(array![0.0, 0.0, 1.0].view(), 0, 2).is_err(), "no weight on the run");
    assert!(run_spread(array![f64::NAN, 0.5].view(), 0, 2).is_err());
    // A negative weight made the entropy negative: −2 ln 2 from (−1, 2).
    let negative = run_spread(array![-0.5, 1.0].view(), 0, 2);
    assert!(message(negative).starts_with("weight on the run "));

    assert_eq!(self_weight(&Array2::<f32>::eye(3)).unwrap(), 1.0);
    assert!(message(self_weight(&Array2::<f32>::zeros((2, 3)))).contains("weights"));
    assert!(self_weight(&Array2::<f32>::zeros((0, 0))).is_err(), "no tokens");
    let mut nan = Array2::<f32>::eye(2);
    nan[[1, 1]] = f32::NAN;
    assert!(self_weight(&nan).is_err(), "a NaN on the diagonal");
}

/// Configurations and layers (chapter 17): a configuration that does not
/// say what the cache holds, or says it in numbers that give no width (a
/// hidden size below or not a multiple of the heads), and key/value
/// heads that do not divide the heads, are errors.
#[test]
fn configurations_and_layers_refuse_what_gives_no_layout() {
    use attn::exercises::ch17::{layout_from_config, mean_pool_key_value_heads};
    use attn::kv_bytes::KvLayout;

    let config =
        |extra: &str| format!(r#"{{"num_hidden_layers": 2, "num_attention_heads": 4, {extra}}}"#);
    let heads = layout_from_config(&config(r#""hidden_size": 32"#)).unwrap();
    assert_eq!(heads, (2, KvLayout::Heads { kv_heads: 4, d_head: 8 }));
    let latent = config(r#""hidden_size": 32, "kv_lora_rank": 16, "qk_rope_head_dim": 4"#);
    assert_eq!(layout_from_config(&latent).unwrap(), (2, KvLayout::Latent { d_c: 16, d_r: 4 }));
    for bad in [
        r#""hidden_size": 2"#,  // fewer than the heads: a head of width 0
        r#""hidden_size": 30"#, // not a multiple of the heads
        r#""hidden_size": 32, "kv_lora_rank": 16"#, // half a latent
        r#""hidden_size": 32, "qk_rope_head_dim": 4"#,
        r#""hidden_size": 32, "num_key_value_heads": 0"#,
        r#""hidden_size": 32, "num_key_value_heads": 8"#,
        r#""hidden_size": -32"#,
        r#""hidden_size": 1e30"#,
        r#""hidden_size": "32""#,
    ] {
        assert!(layout_from_config(&config(bad)).is_err(), "{bad}");
    }
    let short = message(layout_from_config(&config(r#""hidden_size": 30"#)));
    assert!(short.starts_with("hidden_size "), "{short}");
    for not_json in ["", "null", "[]", "{", "32"] {
        assert!(layout_from_config(not_json).is_err(), "{not_json:?}");
    }

    let mut rng = StdRng::seed_from_u64(1);
    let layer = MultiHeadAttention::new(8, 4, &mut rng).unwrap();
    assert_eq!(mean_pool_key_value_heads(&layer, 2).unwrap().kv_heads(), 2);
    for kv_heads in [0, 3, 8, usize::MAX] {
        let error = message(mean_pool_key_value_heads(&layer, kv_heads));
        assert!(error.starts_with("h_kv"), "{kv_heads}: {error}");
    }
    let grouped = MultiHeadAttention::grouped(8, 4, 2, &mut rng).unwrap();
    assert!(mean_pool_key_value_heads(&grouped, 1).is_err(), "already grouped");
    let biases = [(); 4].map(|_| Array1::zeros(8));
    let biased = MultiHeadAttention::new(8, 4, &mut rng).unwrap().with_biases(biases.into());
    assert!(mean_pool_key_value_heads(&biased.unwrap(), 2).is_err(), "with biases");
}

#[test]
fn chapter_18s_exercises_refuse_bad_factors_frequencies_and_weights() {
    use attn::exercises::ch18::{interpolated, row_entropies};
    for factor in [0.5, f64::NAN, f64::INFINITY] {
        let e = interpolated(&[1.0], factor).unwrap_err().to_string();
        assert!(e.contains("scale factor"), "{e}");
    }
    let e = interpolated(&[1.0, 0.0], 2.0).unwrap_err().to_string();
    assert!(e.contains("frequency"), "{e}");
    let mut w = ndarray::Array2::<f32>::eye(3);
    w[[1, 1]] = f32::NAN;
    let e = row_entropies(&w).unwrap_err().to_string();
    assert!(e.contains("attention weights"), "{e}");
    let half = ndarray::Array2::<f32>::eye(3) / 2.0;
    assert!(row_entropies(&half).is_err(), "rows summing to 1/2");
}

#[test]
fn chapter_19s_exercises_refuse_tables_and_distributions_that_do_not_fit() {
    use attn::exercises::ch19::{emitted, token_in_row};
    let e = token_in_row(&[3], 0, 0, 0).unwrap_err().to_string();
    assert!(e.contains("block size"), "{e}");
    let e = token_in_row(&[3, 1], 4, 9, 0).unwrap_err().to_string();
    assert!(e.contains("tokens of the table"), "{e}");
    assert_eq!(token_in_row(&[3, 1], 4, 6, usize::MAX).unwrap(), None, "a row past the pool");
    for (p, q) in [(vec![0.5, 0.5], vec![1.0]), (vec![0.5, 0.6], vec![0.5, 0.5])] {
        assert!(emitted(&p, &q).is_err(), "p = {p:?}, q = {q:?}");
    }
    assert!(emitted(&[f64::NAN, 1.0], &[0.5, 0.5]).is_err(), "NaN");
}

#[test]
fn chapter_21s_exercise_refuses_a_workgroup_past_the_queries_and_empty_tiles() {
    use attn::exercises::ch21::{key_tiles, tiles_loaded};
    let e = key_tiles(3, (4, 4), 12, 5).unwrap_err().to_string();
    assert!(e.contains("workgroup"), "{e}");
    for (br, bc, m) in [(0, 4, 5), (4, 0, 5), (4, 4, 0)] {
        assert!(key_tiles(0, (br, bc), 12, m).is_err(), "{br} {bc} {m}");
        assert!(tiles_loaded((br, bc), 12, m).is_err(), "{br} {bc} {m}");
    }
    assert!(key_tiles(0, (4, 4), 0, 5).is_err(), "no queries");
    assert!(tiles_loaded((4, 4), 0, 5).is_err(), "no queries");
}
