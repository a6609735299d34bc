//! The handwritten digits' reader: images and ranges past the end, and
//! lines that are not an image.

use attn::vision::{
    accuracy, train_classifier, DigitClassifier, Digits, PatchPositions, Perceptron, Vit,
    VitConfig, VitTraining, DIGITS_TRAINING, PIXELS,
};
use attn::AttnError;

fn two_digits() -> Digits {
    let line = |label: u8| {
        let mut fields = vec!["1".to_string(); PIXELS];
        fields.push(label.to_string());
        fields.join(",")
    };
    Digits::parse(&format!("{}\n{}", line(3), line(4))).unwrap()
}

#[test]
fn an_image_past_the_end_is_named() {
    let digits = two_digits();
    let past =
        |e: AttnError| matches!(e, AttnError::OutOfRange { name: "image", value: 2, limit: 2, .. });
    assert!(past(digits.image(2).unwrap_err()));
    assert!(past(digits.label(2).unwrap_err()));
    let e = digits.class_counts(1..3).unwrap_err();
    assert!(matches!(e, AttnError::OutOfRange { name: "image", value: 3, limit: 2, .. }), "{e}");
    assert_eq!(digits.class_counts(0..2).unwrap()[3], 1);
}

#[test]
fn a_line_that_is_not_an_image_is_named() {
    let e = Digits::parse("1,2").unwrap_err();
    assert!(matches!(&e, AttnError::Dataset { reason, .. } if reason.contains("line 1")), "{e}");
    let e = Digits::read("/no/such/digits.csv").unwrap_err().to_string();
    assert!(e.contains("/no/such/digits.csv") && e.contains("cargo xtask digits"), "{e}");
}

const SMALL: VitConfig = VitConfig {
    patch: 4,
    d_model: 8,
    heads: 2,
    layers: 1,
    d_ff: 16,
    positions: PatchPositions::Learned,
};

#[test]
fn a_vision_transformer_refuses_what_it_cannot_be_or_read() {
    let named = |c: VitConfig, name: &str| {
        let e = Vit::<f32>::new(c, 0).unwrap_err().to_string();
        assert!(e.contains(name), "{name}: {e}");
    };
    named(VitConfig { patch: 3, ..SMALL }, "patch");
    named(VitConfig { patch: 0, ..SMALL }, "patch");
    named(VitConfig { heads: 3, ..SMALL }, "head");
    named(VitConfig { d_ff: 0, ..SMALL }, "d_ff");
    named(VitConfig { layers: usize::MAX, ..SMALL }, "parameters");
    named(VitConfig { d_model: usize::MAX, heads: 1, ..SMALL }, "parameters");
    let model = Vit::<f32>::new(SMALL, 0).unwrap();
    let image = [[0u8; PIXELS]];
    let e = model.forward(&[]).err().expect("no images is refused").to_string();
    assert!(e.contains("images"), "{e}");
    let e = model.loss_and_gradients(&image, &[1, 2]).unwrap_err();
    assert!(matches!(e, AttnError::Mismatched { name: "labels", .. }), "{e}");
    assert!(model.loss_and_gradients(&image, &[10]).is_err(), "a label past 9");
    let e = model.forward(&[[17; PIXELS]]).err().expect("a pixel past 16 is refused");
    assert!(matches!(e, AttnError::OutOfRange { name: "pixel", value: 17, limit: 16, .. }), "{e}");
    let fwd = model.forward(&image).unwrap();
    let e = fwd.weights(1, 0, 0).unwrap_err().to_string(); // one block only
    assert!(e.contains("block"), "{e}");
    assert!(fwd.weights(0, 1, 0).unwrap_err().to_string().contains("image"));
    let e = model.backward(&fwd, &ndarray::Array2::zeros((2, 10))).unwrap_err().to_string();
    assert!(e.contains("logits"), "{e}");
    let other = Vit::<f32>::new(SMALL, 1).unwrap();
    assert!(
        other.backward(&fwd, &ndarray::Array2::zeros((1, 10))).is_err(),
        "another model's pass"
    );
    let e = Vit::from_safetensors(b"not a file").unwrap_err();
    assert!(matches!(e, AttnError::InvalidWeights { .. }), "{e}");
    let bytes = model.to_safetensors("").unwrap();
    let e = Vit::from_safetensors(&bytes[..bytes.len() - 4]).unwrap_err();
    assert!(matches!(e, AttnError::InvalidWeights { .. }), "{e}");
}

#[test]
fn training_and_scoring_refuse_empty_or_missing_images_and_empty_recipes() {
    let digits = two_digits();
    let mut model = Vit::<f32>::new(SMALL, 0).unwrap();
    let recipe = VitTraining { steps: 2, warmup: 1, batch: 2, ..DIGITS_TRAINING };
    let e = |r: Result<Vec<f64>, AttnError>| r.unwrap_err().to_string();
    assert!(e(train_classifier(&mut model, &digits, 0..0, &recipe)).contains("training images"));
    assert!(e(train_classifier(&mut model, &digits, 0..3, &recipe)).contains("image"));
    let no_steps = VitTraining { steps: 0, ..recipe };
    assert!(e(train_classifier(&mut model, &digits, 0..2, &no_steps)).contains("steps"));
    let long_warmup = VitTraining { warmup: 3, ..recipe };
    assert!(train_classifier(&mut model, &digits, 0..2, &long_warmup).is_err());
    let huge = VitTraining { steps: usize::MAX, batch: usize::MAX, ..recipe };
    assert!(e(train_classifier(&mut model, &digits, 0..2, &huge)).contains("images"));
    assert!(accuracy(&model, &digits, 1..1).unwrap_err().to_string().contains("images"));
    let past = accuracy(&model, &digits, 0..5).unwrap_err();
    assert!(matches!(past, AttnError::OutOfRange { name: "image", value: 4, .. }), "{past}");
    assert!(train_classifier(&mut model, &digits, 0..2, &recipe).is_ok());
}

#[test]
fn a_perceptron_refuses_an_empty_layer_a_bad_pixel_and_another_models_pass() {
    let e = Perceptron::<f32>::new(&[8, 0], 0).unwrap_err().to_string();
    assert!(e.contains("hidden"), "{e}");
    let e = Perceptron::<f32>::new(&[usize::MAX], 0).unwrap_err().to_string();
    assert!(e.contains("parameters"), "{e}");
    let model = Perceptron::<f32>::new(&[8], 0).unwrap();
    let e = model.forward(&[[17; PIXELS]]).err().expect("a pixel past 16 is refused");
    assert!(matches!(e, AttnError::OutOfRange { name: "pixel", value: 17, .. }), "{e}");
    assert!(model.forward(&[]).err().expect("no images").to_string().contains("images"));
    let e = model.loss_and_gradients(&[[0; PIXELS]], &[1, 2]).unwrap_err();
    assert!(matches!(e, AttnError::Mismatched { name: "labels", .. }), "{e}");
    let fwd = model.forward(&[[1; PIXELS]]).unwrap();
    let e = model.backward(&fwd, &ndarray::Array2::zeros((1, 9))).unwrap_err().to_string();
    assert!(e.contains("logits"), "{e}");
    let other = Perceptron::<f32>::new(&[8], 1).unwrap();
    assert!(other.backward(&fwd, &ndarray::Array2::zeros((1, 10))).is_err(), "another's pass");
}

#[test]
fn what_a_vit_looks_at_refuses_what_is_not_there() {
    use attn::vision::{mean_heads, occlusion, position_similarity, rank_correlation, rollout};
    let model = Vit::<f32>::new(SMALL, 0).unwrap();
    let fwd = model.forward(&[[3; PIXELS]]).unwrap();
    assert!(mean_heads(&model, &fwd, 1, 0).unwrap_err().to_string().contains("block"));
    assert!(rollout(&model, &fwd, 1).unwrap_err().to_string().contains("image"));
    let e = occlusion(&model, &[3; PIXELS], 10).unwrap_err();
    assert!(matches!(e, AttnError::OutOfRange { name: "class", value: 10, .. }), "{e}");
    assert!(occlusion(&model, &[17; PIXELS], 1).is_err(), "a pixel past 16");
    let none = Vit::<f32>::new(VitConfig { positions: PatchPositions::None, ..SMALL }, 0).unwrap();
    assert!(position_similarity(&none).unwrap_err().to_string().contains("positions"));
    let e = rank_correlation(&[1.0, 2.0], &[1.0]).unwrap_err();
    assert!(matches!(e, AttnError::Mismatched { .. }), "{e}");
    let e = rank_correlation(&[1.0, f64::INFINITY], &[1.0, 2.0]).unwrap_err();
    assert!(e.to_string().contains("finite"), "{e}");
}

#[test]
fn cutting_patches_refuses_a_size_that_does_not_divide_8_and_rebuilding_a_ragged_set() {
    let e = attn::vision::patches_of::<f32>(&[[0; PIXELS]], 3).unwrap_err().to_string();
    assert!(e.contains("patch"), "{e}");
    assert!(attn::vision::patches_of::<f32>(&[[0; PIXELS]], 0).is_err());
    assert!(attn::vision::patches_of::<f32>(&[[17; PIXELS]], 2).is_err(), "a pixel past 16");
    let e =
        attn::exercises::ch20::images_from_patches(&ndarray::Array2::zeros((3, 4)), 2).unwrap_err();
    assert!(matches!(e, AttnError::Mismatched { name: "patches", .. }), "{e}");
}
