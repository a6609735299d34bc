//! Chapter 20's Vision Transformer against PyTorch: the committed weights
//! (`cargo xtask train vision` writes them) loaded into a ViT built from
//! `torch.nn`'s own layers (`tools/vit_reference.py golden`), on the first
//! test images of the digits. The golden file holds the images' pixels, so
//! that the comparison needs no data; the second test checks them against
//! the digits' file.

use attn::vision::{Digits, DIGITS_FILE};

mod common;

/// The largest difference allowed between a value of the crate and PyTorch's.
const TOLERANCE: f32 = 1e-5;

#[test]
fn the_vision_transformer_equals_pytorchs() {
    // The largest differences in the logits and in every head's weights
    // of every block, for every golden image (infinite for a shape that
    // differs from the golden one).
    let [logits, weights, _, _] = report::ch20::pytorch_gaps().unwrap_or_else(|e| panic!("{e}"));
    let tolerance = f64::from(TOLERANCE);
    assert!(logits <= tolerance, "logits: largest difference {logits:e}");
    assert!(weights <= tolerance, "attention weights: largest difference {weights:e}");
    // The golden file holds every head of every block for every image.
    let golden = common::golden::load("vit.txt");
    let c = report::ch20::chapter_model().unwrap().config();
    let heads = golden.keys().filter(|k| k.starts_with("weights_")).count();
    assert_eq!(heads, c.layers * golden["pixels"].nrows() * c.heads);
    println!("largest differences: logits {logits:e}, attention weights {weights:e}");
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
