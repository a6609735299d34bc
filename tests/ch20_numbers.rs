//! Chapter 20 quotes the output of `cargo run --example
//! ch20_attention_on_images`, which reads the chapter's weights and the
//! runs of `cargo xtask train vision`; these tests recompute that output
//! and bind every number the chapter shows, section by section.

use attn::nn::Parameters;
use attn::vision::{
    Vit, VitConfig, DIGIT_IMAGES, MAX_PIXEL, PIXELS, SIDE, TEST_IMAGES, TRAINING_IMAGES,
};
use report::ch20::{
    accuracy_table, chapter_model, data_size_table, explain_table, explained, figure_digits,
    probabilities_table, recipe, summary, trained, vit_name, Trained, CHAPTER_VIT, SEEDS,
};
use report::numbers::{captured, Bindings};

/// Scores of four patches in one order, and in the reverse order.
const ORDER: [f64; 4] = [0.1, 0.4, 0.2, 0.3];
const REVERSED: [f64; 4] = [0.4, 0.1, 0.3, 0.2];

mod common;

const CHAPTER: &str = "ch20-attention-on-images.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    digits_as_tokens(&mut b);
    pytorch(&mut b);
    running(&mut b);
    let (runs, source) = trained().unwrap();
    earns_its_place(&mut b, &runs, &source);
    more_images(&mut b, &runs, &source);
    heads_and_positions(&mut b);
    exercises(&mut b);
    b.assert_all_bound();
}

fn digits_as_tokens(b: &mut Bindings) {
    let c = CHAPTER_VIT;
    let large = VitConfig { patch: 4, ..c };
    b.section("Digits as tokens");
    b.exact("1,797", DIGIT_IMAGES as f64)
        .exact("8", SIDE as f64)
        .exact("16", f64::from(MAX_PIXEL))
        // A pixel counts the cells of a square block: 16 = 4 × 4.
        .exact("4", f64::from(MAX_PIXEL).sqrt())
        .exact("1,297", TRAINING_IMAGES as f64)
        .exact("500", TEST_IMAGES as f64);
    // 2 by 2 patches: 16 tokens of 4 numbers; 4 by 4: 4 tokens of 16.
    assert_eq!((c.patches(), c.patch * c.patch), (16, 4));
    assert_eq!((large.patches(), large.patch * large.patch), (4, 16));
}

fn pytorch(b: &mut Bindings) {
    let model = chapter_model().unwrap();
    let c = model.config();
    assert_eq!(c, CHAPTER_VIT);
    let r = recipe(SEEDS[0]);
    let [logits, weights, twice, no_cls] = report::ch20::pytorch_gaps().unwrap();
    let golden_images = report::golden::load("vit.txt")["pixels"].nrows();
    b.section("The same model in PyTorch");
    b.exact("4", c.heads as f64)
        .exact("32", c.d_model as f64)
        .exact("64", c.d_ff as f64)
        .exact("1,000", r.steps as f64)
        .exact("three", golden_images as f64)
        .exact(
            "1e-5",
            captured("tests/vision_golden.rs", r"const TOLERANCE: f32 = ([0-9.e-]+);")[0],
        )
        .rounded("5.0e-6", logits)
        .rounded("5.7e-7", weights)
        .rounded("2.0", twice)
        .rounded("1.8", no_cls);
    assert_eq!(r.batch, c.d_model, "the text's second 32 is the batch");
}

fn running(b: &mut Bindings) {
    let model = chapter_model().unwrap();
    let digits = figure_digits().unwrap();
    let probabilities = report::ch20::probabilities(&model, &digits).unwrap();
    let sure = probabilities.rows().into_iter().filter(|p| p.iter().any(|&x| x > 0.98)).count();
    let third = probabilities.row(2);
    b.section("Running it");
    b.quoted(&probabilities_table(&model, &digits).unwrap())
        .exact("six", digits.len() as f64)
        .claim("five of them a probability above 0.98", sure == 5)
        .at_least(
            "0.98",
            probabilities
                .rows()
                .into_iter()
                .filter_map(|p| p.iter().copied().reduce(f32::max))
                .filter(|&x| x > 0.9)
                .fold(1.0_f32, f32::min)
                .into(),
        )
        .claim(
            "the third,\na 2, as a 9 (0.61) or a 1 (0.35)",
            digits[2].0 == 2 && third[9] > third[1],
        );
}

fn mean_of(runs: &[Trained], model: &str) -> (f64, f64, f64) {
    let (m, lo, hi) = summary(runs, model, TRAINING_IMAGES).unwrap();
    (100.0 * m, 100.0 * lo, 100.0 * hi)
}

fn earns_its_place(b: &mut Bindings, runs: &[Trained], source: &report::provenance::Provenance) {
    let name = |patch: usize, positions| vit_name(&VitConfig { patch, positions, ..CHAPTER_VIT });
    use attn::vision::PatchPositions::{Learned, None as NoPositions, RowColumn};
    let best = mean_of(runs, &name(4, Learned));
    let perceptron = mean_of(runs, "perceptron");
    let linear = mean_of(runs, "linear");
    let small: Vec<f64> =
        [Learned, RowColumn, NoPositions].iter().map(|&p| mean_of(runs, &name(2, p)).0).collect();
    b.section("Does attention earn its place?");
    b.exact("three", SEEDS.len() as f64)
        .exact("500", TEST_IMAGES as f64)
        // The models that are not ViTs: the MLP and the linear classifier.
        .exact(
            "two",
            report::ch20::models_in_order().iter().filter(|m| !m.starts_with("vit")).count() as f64,
        )
        .exact("64", PIXELS as f64);
    let mut s = b.from(&[source]);
    s.quoted(&accuracy_table(runs))
        .rounded("93.3%", best.0)
        .rounded("92.8%", best.1)
        .rounded("92.6%", perceptron.2)
        .rounded("1.2", best.0 - perceptron.0)
        .rounded("6", (best.0 - perceptron.0) / 100.0 * TEST_IMAGES as f64)
        .claim("its lowest run, 92.8%, is above the MLP's highest", best.1 > perceptron.2)
        .claim(
            "With 2 by 2 patches every ViT does worse than\nthe MLP",
            small.iter().all(|&m| m < perceptron.0),
        )
        .claim("no better than the linear classifier", small.iter().all(|&m| m <= linear.0))
        .rounded("86.3%", small[0])
        .rounded("65.7%", small[2])
        .rounded("90.5%", mean_of(runs, &name(4, NoPositions)).0);
    b.exact("16", CHAPTER_VIT.patches() as f64);
}

fn more_images(b: &mut Bindings, runs: &[Trained], source: &report::provenance::Provenance) {
    let vit = vit_name(&CHAPTER_VIT);
    let lead: Vec<f64> = report::ch20::TRAINING_SIZES
        .iter()
        .map(|&n| {
            100.0 * (summary(runs, "perceptron", n).unwrap().0 - summary(runs, &vit, n).unwrap().0)
        })
        .collect();
    b.section("More images");
    b.exact("three", SEEDS.len() as f64);
    let mut s = b.from(&[source]);
    s.quoted(&data_size_table(runs))
        .claim("The MLP is ahead at every size", lead.iter().all(|&l| l > 0.0))
        .claim("furthest ahead with the fewest\nimages", lead.iter().skip(1).all(|&l| l < lead[0]))
        .rounded("21.9", lead[0])
        .rounded("5.8", lead[lead.len() - 1])
        .claim(
            "this ViT is still below the MLP trained on 400",
            summary(runs, &vit, TRAINING_IMAGES).unwrap().0
                < summary(runs, "perceptron", 400).unwrap().0,
        );
    let r = recipe(SEEDS[0]);
    let passes = |n: usize| (r.steps * r.batch) as f64 / n as f64;
    b.exact("1,000", r.steps as f64)
        .exact("32", r.batch as f64)
        .rounded("320", passes(report::ch20::TRAINING_SIZES[0]))
        .rounded("25", passes(TRAINING_IMAGES))
        // "the ViT of 4 by 4 patches": the other patch size.
        .exact("4", VitConfig { patch: 4, ..CHAPTER_VIT }.patch as f64);
}

fn heads_and_positions(b: &mut Bindings) {
    let (explained, source) = explained().unwrap();
    let mean = |f: fn(&report::ch20::Explained) -> f64| {
        explained.iter().map(f).sum::<f64>() / explained.len() as f64
    };
    b.section("What the heads look at");
    b.exact("two", report::ch20::FIGURE_DIGITS.min(2) as f64)
        .exact("500", TEST_IMAGES as f64)
        .exact("16", CHAPTER_VIT.patches() as f64)
        .exact("-1", attn::vision::rank_correlation(&ORDER, &REVERSED).unwrap())
        .exact("1", attn::vision::rank_correlation(&ORDER, &ORDER).unwrap());
    let rollouts: Vec<f64> = explained.iter().map(|e| e.rollout).collect();
    let mut s = b.from(&[&source]);
    s.quoted(&explain_table(&explained))
        .claim(
            "Neither comes near 1",
            explained.iter().all(|e| e.attention.abs() < 0.5 && e.rollout.abs() < 0.5),
        )
        .claim("uncorrelated with\nocclusion on average", mean(|e| e.attention).abs() < 0.05)
        .claim(
            "rollout is correlated negatively in every\nseed",
            rollouts.iter().all(|&r| r < 0.0),
        );
    b.section("What the positions hold");
    b.exact("4", CHAPTER_VIT.grid() as f64)
        .quoted(&report::ch20::control_table().unwrap())
        .claim("neighbours far more alike than the others", control_holds())
        .exact("three", SEEDS.len() as f64);
    let mut s = b.from(&[&source]);
    s.quoted(&report::ch20::positions_table(&explained)).claim(
        "are no more alike than the others",
        mean(|e| e.neighbours) - mean(|e| e.others) < 0.05,
    );
    b.again("86.3%").again("65.7%");
}

fn exercises(b: &mut Bindings) {
    let c = CHAPTER_VIT;
    let row_column = VitConfig { positions: attn::vision::PatchPositions::RowColumn, ..c };
    let count = |c: VitConfig| Vit::<f32>::new(c, 0).unwrap().named_slices()[3].1.len() / c.d_model;
    b.section("Exercises");
    b.exact("64", PIXELS as f64)
        .exact("8", SIDE as f64)
        .exact("16", c.patches() as f64)
        .exact("17", count(c) as f64)
        .exact("4", c.grid() as f64)
        .exact("8", count(row_column) as f64);
}

/// The positive control: in each untrained row + column ViT, neighbours'
/// mean similarity exceeds the others' by more than 0.2.
fn control_holds() -> bool {
    let config = VitConfig { positions: attn::vision::PatchPositions::RowColumn, ..CHAPTER_VIT };
    SEEDS.iter().all(|&seed| {
        let model = Vit::<f32>::new(config, seed).unwrap();
        let (near, far) = report::ch20::neighbour_similarity(&model).unwrap();
        near > far + 0.2
    })
}
