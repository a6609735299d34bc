//! Sizes bounded as a whole: each size can pass its own check while their
//! product cannot be allocated. Every such request is `AttnError::TooLarge`,
//! naming the sizes, before anything is allocated (an allocation failure
//! aborts the process, which no test could catch).

use attn::block::{Activation, Config, Norm, Transformer};
use attn::fast::{fast_attention, fast_attention_with, Tiles};
use attn::grad::gradient_norms;
use attn::model::{held_out, train, Task, TrainConfig, BOOK_TRAINING};
use attn::position::alibi_slopes;
use attn::scaled_dot_product_attention;
use attn::scaling::saturation_experiment;
use attn::translation::{
    number_pair, train_seq2seq, Seq2Seq, Seq2SeqConfig, BOOK_SEQ2SEQ, BOOK_SEQ2SEQ_TRAINING,
};
use attn::AttnError;
use ndarray::Array2;

use crate::{rng, small};

fn too_large<T: std::fmt::Debug>(result: Result<T, AttnError>) -> String {
    match result {
        Err(e @ AttnError::TooLarge { .. }) => e.to_string(),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn models_are_bounded_by_their_parameters_as_a_whole() {
    let big = Seq2SeqConfig { d_model: 4096, d_ff: 4096, layers: 64, ..BOOK_SEQ2SEQ };
    let message = too_large(Seq2Seq::new(big, 0));
    assert!(message.contains("the model's parameters"), "{message}");
    let c = Config { d_model: 8, h: 2, d_ff: 16, activation: Activation::Relu, norm: Norm::Pre };
    let message = too_large(Transformer::new(c, usize::MAX, &mut rng()));
    assert!(message.contains(&usize::MAX.to_string()), "{message}");
}

#[test]
fn training_is_bounded_by_a_batch_s_activations_and_its_steps() {
    let huge_batch = TrainConfig { batch: 1 << 40, ..BOOK_TRAINING };
    too_large(train(small(), &huge_batch, &[]));
    let endless = TrainConfig { steps: usize::MAX, warmup: 0, ..BOOK_TRAINING };
    too_large(train(small(), &endless, &[]));
    let mut training = BOOK_SEQ2SEQ_TRAINING;
    training.batch = 1 << 40;
    too_large(train_seq2seq(BOOK_SEQ2SEQ, &training, &[number_pair(12).unwrap()]));
}

#[test]
fn attention_and_its_experiments_are_bounded_by_what_they_build() {
    let x = Array2::<f32>::zeros((65_536, 1));
    let message = too_large(scaled_dot_product_attention(&x, &x, &x));
    assert!(message.contains("65536 × 65536"), "{message}");
    too_large(alibi_slopes(usize::MAX));
    too_large(gradient_norms(&[usize::MAX], 1, 0));
    too_large(saturation_experiment(usize::MAX, 1, 0));
    // k = 2³² + 1 examples: no longer wrapped to k = 1.
    too_large(held_out(Task::REVERSE, (1 << 32) + 1, 1, 0));
}

#[test]
fn tiles_larger_than_the_problem_cost_nothing() {
    let q = Array2::from_shape_fn((3, 4), |(i, j)| (i + j) as f32 / 7.0);
    let huge = Tiles { query: 65_536, key: 65_536 };
    let want = fast_attention(&q, &q, &q, false).unwrap();
    assert_eq!(fast_attention_with(&q, &q, &q, false, huge).unwrap(), want);
}

/// The same numbers in another memory layout give the same bits, as for
/// every other kernel of the crate.
#[test]
fn the_fast_kernel_does_not_depend_on_the_inputs_memory_layout() {
    use ndarray::ShapeBuilder;
    let value = |(i, j): (usize, usize)| ((i * 7919 + j * 104_729) % 1009) as f32 / 97.0 - 5.0;
    let (n, m, d) = (300, 257, 64);
    let q = Array2::from_shape_fn((n, d), value);
    let k = Array2::from_shape_fn((m, d), |(i, j)| value((i + 5, j)));
    let v = Array2::from_shape_fn((m, d), |(i, j)| value((i + 9, j)));
    let column_major = |x: &Array2<f32>| {
        let mut c = Array2::zeros(x.dim().f());
        c.assign(x);
        c
    };
    for causal in [false, true] {
        let rows = fast_attention(&q, &k, &v, causal).unwrap();
        let columns =
            fast_attention(&column_major(&q), &column_major(&k), &column_major(&v), causal)
                .unwrap();
        let transposed = fast_attention(&q, &k.t().to_owned().t(), &v, causal).unwrap();
        let wide = |x: &Array2<f32>| {
            let mut w = Array2::zeros((x.nrows(), x.ncols() + 3));
            w.slice_mut(ndarray::s![.., 1..x.ncols() + 1]).assign(x);
            w
        };
        let (wq, wk, wv) = (wide(&q), wide(&k), wide(&v));
        let cols = ndarray::s![.., 1..d + 1];
        let strided =
            fast_attention(&wq.slice(cols), &wk.slice(cols), &wv.slice(cols), causal).unwrap();
        assert_eq!(rows, strided, "causal {causal}");
        assert_eq!(rows, columns, "causal {causal}");
        assert_eq!(rows, transposed, "causal {causal}");
    }
}

/// A size of zero does not let another size through: `count` empty
/// sequences are still `count` allocations. Each size is checked against
/// the limit, not only their product (this aborted, allocating 24 TiB of
/// empty sequences, before the check did).
#[test]
fn a_zero_size_does_not_let_a_huge_count_through() {
    use attn::lm::{even_offsets, repeated_sequences};
    let e = repeated_sequences(0, 1 << 40, 0, 5).unwrap_err().to_string();
    assert!(e.contains("repeated sequences"), "{e}");
    assert!(even_offsets(1 << 40, 100, 0).is_err());
    assert_eq!(repeated_sequences(0, 3, 0, 5).unwrap(), vec![Vec::<usize>::new(); 3]);
}
