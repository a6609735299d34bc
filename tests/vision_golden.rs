//! Chapter 18's Vision Transformer against PyTorch: the committed weights
//! (`cargo xtask train vision` writes them) loaded into a ViT built from
//! `torch.nn`'s own layers (`tools/vit_reference.py golden`), on the first
//! test images of the digits. The golden file holds the images' pixels, so
//! that the comparison needs no data; the second test checks them against
//! the digits' file.

use attn::vision::{Digits, Vit, DIGITS_FILE, PIXELS};

mod common;

/// The largest difference allowed between a value of the crate and PyTorch's.
const TOLERANCE: f32 = 1e-5;

/// The chapter's trained model.
fn model() -> Vit<f32> {
    report::ch18::chapter_model().unwrap_or_else(|e| panic!("{e}"))
}

fn worst(ours: &ndarray::ArrayRef2<f32>, theirs: &ndarray::Array2<f32>) -> f32 {
    assert_eq!(ours.dim(), theirs.dim());
    ours.iter().zip(theirs).map(|(a, b)| (a - b).abs()).fold(0.0_f32, f32::max)
}

#[test]
fn the_vision_transformer_equals_pytorchs() {
    let golden = common::golden::load("vit.txt");
    let images: Vec<[u8; PIXELS]> =
        golden["pixels"].rows().into_iter().map(|r| std::array::from_fn(|i| r[i] as u8)).collect();
    let model = model();
    let c = model.config();
    let fwd = model.forward(&images).unwrap();
    let logits = worst(fwd.logits(), &golden["logits"]);
    assert!(logits <= TOLERANCE, "logits: largest difference {logits:e}");
    let mut compared = 0;
    let mut largest = 0.0_f32;
    for block in 0..c.layers {
        for (i, _) in images.iter().enumerate() {
            for head in 0..c.heads {
                let name = format!("weights_block{block}_image{i}_head{head}");
                let gap = worst(fwd.weights(block, i, head).unwrap(), &golden[&name]);
                assert!(gap <= TOLERANCE, "{name}: largest difference {gap:e}");
                (compared, largest) = (compared + 1, largest.max(gap));
            }
        }
    }
    assert_eq!(compared, c.layers * images.len() * c.heads);
    println!("largest differences: logits {logits:e}, attention weights {largest:e}");
}

/// The golden images are the first of the test split, as the script says.
#[test]
fn the_golden_images_are_the_first_test_images() {
    let golden = common::golden::load("vit.txt");
    let digits = Digits::read(concat!(env!("CARGO_MANIFEST_DIR"), "/", "target/digits/digits.csv"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(DIGITS_FILE, "target/digits/digits.csv");
    let first = digits.split().1.start;
    for (i, row) in golden["pixels"].rows().into_iter().enumerate() {
        let image = digits.image(first + i).unwrap();
        assert!(row.iter().zip(image).all(|(&a, &b)| a == f32::from(b)), "image {}", first + i);
    }
}
