//! Chapter 12: trains the tiny Transformer to reverse 8 digits, and the same
//! model to sort them (exercise 1), prints the training time and the
//! held-out accuracy of each, and writes the weights and the loss curves to
//! `book/data/` (run by `cargo xtask train`, not in CI: the figures come
//! from the committed weights).
//!
//! ```text
//! cargo xtask train        # = cargo run --release --example ch12_train
//! ```

use std::time::Instant;

use report::provenance::header;

use attn::exercises::ch12::BOOK_SORT_TRAINING;
use attn::model::{
    accuracy, held_out, train_with, TrainConfig, BOOK_MODEL, BOOK_TRAINING, HELD_OUT,
};
use attn::nn::Parameters;

fn main() -> Result<(), report::error::ReportError> {
    for (training, name) in [(BOOK_TRAINING, "ch12"), (BOOK_SORT_TRAINING, "ch12-sort")] {
        train_and_save(&training, name)?;
    }
    Ok(())
}

/// Trains `BOOK_MODEL` with `training` and writes `NAME-weights.txt` and
/// `NAME-training.csv`.
fn train_and_save(training: &TrainConfig, name: &str) -> Result<(), report::error::ReportError> {
    let test = held_out(training.task, BOOK_MODEL.k, HELD_OUT.0, HELD_OUT.1)?;
    // Held-out accuracy every 5 steps while the model is learning, then every 20.
    let measured = |step: usize| {
        if step <= 100 {
            step.is_multiple_of(5)
        } else {
            step.is_multiple_of(20)
        }
    };
    let mut checkpoints = Vec::new();
    let start = Instant::now();
    let (net, losses) = train_with(BOOK_MODEL, training, &test, |step, net| {
        if measured(step + 1) {
            let exact = accuracy(net, &test[..200]).expect("held-out examples are valid").0;
            checkpoints.push((step + 1, exact));
        }
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let (exact, digits) = accuracy(&net, &test)?;
    println!("== {:?} ==", training.task);
    println!(
        "trained {} parameters for {} steps in {seconds:.1} s (including the checkpoint evaluations)",
        net.parameter_count(),
        training.steps
    );
    println!(
        "final loss {:.5}; held-out exact {exact:.4}, per digit {digits:.4}",
        losses[losses.len() - 1]
    );

    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let weights = header("exact", "the trained weights, rounded to f32");
    std::fs::write(format!("{dir}/{name}-weights.txt"), format!("{weights}\n{}", net.to_text()?))
        .expect("write weights");
    let mut csv = format!(
        "{}\nstep,loss,held_out_exact\n",
        header(
            "per step",
            "each step's loss on its batch; exact accuracy on 200 held-out sequences at checkpoints"
        )
    );
    for (i, loss) in losses.iter().enumerate() {
        let step = i + 1;
        let acc =
            checkpoints.iter().find(|c| c.0 == step).map_or(String::new(), |c| format!("{}", c.1));
        csv += &format!("{step},{loss},{acc}\n");
    }
    std::fs::write(format!("{dir}/{name}-training.csv"), csv).expect("write loss curve");
    println!("wrote book/data/{name}-weights.txt and book/data/{name}-training.csv");
    Ok(())
}
