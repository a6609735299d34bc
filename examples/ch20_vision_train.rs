//! Attention on images: trains every model chapter 20 compares on the
//! digits, seeds 1, 2 and 3, by one recipe (1,000 steps of 32 images,
//! AdamW): Vision Transformers of 2×2 and 4×4 patches with learned, row
//! plus column, and no positions; a perceptron with about as many
//! parameters as the chapter's ViT, and a linear classifier. Then the
//! chapter's ViT and the perceptron again on the first 100, 200, 400 and
//! 800 training images. Writes each model's test accuracy to
//! `book/data/ch20-accuracy.tsv`, what the chapter's ViTs look at (against
//! occlusion) to `book/data/ch20-explain.tsv`, and the chapter's ViT of
//! seed 1 to `book/data/ch20-vit-weights.safetensors` and the first test
//! images to `book/data/ch20-digits.tsv`, for the chapter's figures.
//! Run by `cargo xtask train vision`, not in CI. Needs the digits (`cargo xtask digits`).
//!
//! ```text
//! cargo xtask train vision   # = cargo run --release --example ch20_vision_train
//! ```

use attn::vision::{
    accuracy, train_classifier, DigitClassifier, Digits, Perceptron, Vit, VitConfig, DIGITS_FILE,
};
use rayon::prelude::*;
use report::ch20::{
    perceptron_width, recipe, vit_name, vits, Explained, Trained, CHAPTER_VIT, COLUMNS,
    EXPLAIN_COLUMNS, FIGURE_DIGITS, SEEDS, TRAINING_SIZES,
};
use report::provenance::header;

/// A model to train: a ViT, or a perceptron's hidden widths.
#[derive(Clone)]
enum Model {
    Vit(VitConfig),
    Perceptron(Vec<usize>),
}

/// Trains `model` from `seed` on the first `images` training images and
/// scores it on the test split.
fn run(
    digits: &Digits,
    model: &Model,
    seed: u64,
    images: usize,
) -> Result<(Trained, Option<Explained>), String> {
    let (train, test) = digits.split();
    let train = train.start..train.start + images;
    fn scored<M: DigitClassifier>(
        mut m: M,
        digits: &Digits,
        (train, test): (std::ops::Range<usize>, std::ops::Range<usize>),
        seed: u64,
    ) -> Result<(usize, f64, M), attn::AttnError> {
        train_classifier(&mut m, digits, train, &recipe(seed))?;
        Ok((m.parameter_count(), accuracy(&m, digits, test)?, m))
    }
    let mut explained = None;
    let (name, parameters, accuracy) = match model {
        Model::Vit(c) => {
            let (count, acc, m) = scored(
                Vit::<f32>::new(*c, seed).map_err(|e| e.to_string())?,
                digits,
                (train, test),
                seed,
            )
            .map_err(|e| e.to_string())?;
            let chapters = *c == CHAPTER_VIT && images == digits.split().0.len();
            if chapters {
                let e = Explained::measure(&m, digits, digits.split().1, seed);
                explained = Some(e.map_err(|e| e.to_string())?);
            }
            if chapters && seed == SEEDS[0] {
                let provenance = header("one run", "the chapter's ViT, seed 1");
                let bytes = m.to_safetensors(&provenance).map_err(|e| e.to_string())?;
                let path = report::root().join("book/data/ch20-vit-weights.safetensors");
                std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            (vit_name(c), count, acc)
        }
        Model::Perceptron(hidden) => {
            let m = Perceptron::<f32>::new(hidden, seed).map_err(|e| e.to_string())?;
            let (count, acc, _) =
                scored(m, digits, (train, test), seed).map_err(|e| e.to_string())?;
            let name = if hidden.is_empty() { "linear" } else { "perceptron" };
            (name.to_string(), count, acc)
        }
    };
    println!("{name:>20}  seed {seed}  {images:>4} images  {parameters:>6} parameters  accuracy {accuracy:.3}");
    Ok((Trained { model: name, seed, images, parameters, accuracy }, explained))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let digits = Digits::read(report::root().join(DIGITS_FILE))?;
    let all = digits.split().0.len();
    let perceptron = Model::Perceptron(vec![perceptron_width()]);
    let mut models: Vec<Model> = vits().into_iter().map(Model::Vit).collect();
    models.extend([perceptron.clone(), Model::Perceptron(vec![])]);
    let mut jobs: Vec<(Model, u64, usize)> =
        models.iter().flat_map(|m| SEEDS.map(|s| (m.clone(), s, all))).collect();
    for images in TRAINING_SIZES.into_iter().filter(|&n| n < all) {
        for model in [Model::Vit(CHAPTER_VIT), perceptron.clone()] {
            jobs.extend(SEEDS.map(|s| (model.clone(), s, images)));
        }
    }
    let results: Vec<(Trained, Option<Explained>)> = jobs
        .par_iter()
        .map(|(model, seed, images)| run(&digits, model, *seed, *images))
        .collect::<Result<_, _>>()?;
    let mut text = header(
        "one run per model, seed and number of training images",
        "test split: the last 500 images",
    );
    text.push('\n');
    text.push_str(COLUMNS);
    text.push('\n');
    for (r, _) in &results {
        text.push_str(&r.line());
        text.push('\n');
    }
    let path = report::root().join("book/data/ch20-accuracy.tsv");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = header(
        "mean over the 500 test images; one run per seed",
        "the chapter's ViT: Spearman correlations with occlusion; cosine similarity of positions",
    );
    text.push('\n');
    text.push_str(EXPLAIN_COLUMNS);
    text.push('\n');
    for e in results.iter().filter_map(|(_, e)| e.as_ref()) {
        text.push_str(&e.line());
        text.push('\n');
    }
    let path = report::root().join("book/data/ch20-explain.tsv");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    // The first test images, for the chapter's figures (which need no data).
    let mut text = header("exact", "the first test images: label, then 64 pixels row by row");
    text.push('\n');
    for i in digits.split().1.take(FIGURE_DIGITS) {
        let pixels: Vec<String> = digits.image(i)?.iter().map(|p| p.to_string()).collect();
        text.push_str(&format!("{}\t{}\n", digits.label(i)?, pixels.join(" ")));
    }
    let path = report::root().join("book/data/ch20-digits.tsv");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}
