//! The handwritten digits as `cargo xtask digits` unpacks them (`cargo
//! xtask test` fetches them first): the whole file, a split that keeps
//! every digit on both sides, a damaged copy refused with what to do, and
//! a Vision Transformer that learns to read them.

use attn::vision::{
    accuracy, train_classifier, Digits, PatchPositions, Vit, VitConfig, VitTraining, CLASSES,
    DIGITS_FILE, DIGITS_TRAINING, DIGIT_IMAGES, TEST_IMAGES, TRAINING_IMAGES,
};

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DIGITS_FILE)
}

fn digits() -> Digits {
    Digits::read(path()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_file_holds_every_image_and_both_splits_every_digit() {
    let digits = digits();
    assert_eq!(digits.len(), DIGIT_IMAGES);
    let (train, test) = digits.split();
    assert_eq!((train.len(), test.len()), (TRAINING_IMAGES, TEST_IMAGES));
    assert_eq!((train.end, test.start), (test.start, TRAINING_IMAGES));
    let (in_train, in_test) =
        (digits.class_counts(train).unwrap(), digits.class_counts(test).unwrap());
    // Every digit is about a tenth of each split: from 8% to 12%.
    for (split, counts) in [(TRAINING_IMAGES, in_train), (TEST_IMAGES, in_test)] {
        assert_eq!(counts.iter().sum::<usize>(), split);
        for (digit, &count) in counts.iter().enumerate() {
            let share = count as f64 / split as f64;
            assert!((0.08..0.12).contains(&share), "digit {digit}: {count} of {split}");
        }
    }
    assert_eq!(CLASSES, in_test.len());
    // The first image is a 0, its middle columns dark at the top.
    assert_eq!(digits.label(0).unwrap(), 0);
    assert_eq!(&digits.image(0).unwrap()[..8], &[0, 0, 5, 13, 9, 1, 0, 0]);
}

#[test]
fn a_damaged_copy_is_refused_with_what_to_do() {
    let text = std::fs::read_to_string(path()).unwrap_or_else(|e| panic!("{DIGITS_FILE}: {e}"));
    let dir = std::env::temp_dir().join(format!("attn-digits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("digits.csv");
    let error = |damaged: &str| {
        std::fs::write(&copy, damaged).unwrap();
        Digits::read(&copy).unwrap_err().to_string()
    };
    let truncated = error(&text[..text.len() / 2]);
    assert!(truncated.contains("cargo xtask digits"), "{truncated}");
    let last_line = text.lines().take(DIGIT_IMAGES - 1).collect::<Vec<_>>().join("\n");
    assert!(error(&last_line).contains("1796 images, not 1797"));
    let corrupt = text.replacen(",13,", ",130,", 1);
    assert!(error(&corrupt).contains("line 1: \"130\""), "{}", error(&corrupt));
    std::fs::remove_dir_all(&dir).unwrap();
}

const VIT: VitConfig = VitConfig {
    patch: 4,
    d_model: 32,
    heads: 4,
    layers: 2,
    d_ff: 64,
    positions: PatchPositions::Learned,
};

/// From three initialisations and three orders of images, 300 steps
/// teach a ViT of 4×4 patches to name held-out digits far above chance
/// (one in ten): at least 70% of the test split each time.
#[test]
fn a_trained_vision_transformer_reads_held_out_digits() {
    let digits = digits();
    let (train, test) = digits.split();
    for seed in 1..=3 {
        let recipe = VitTraining { steps: 300, warmup: 20, seed, ..DIGITS_TRAINING };
        let mut model = Vit::<f32>::new(VIT, seed).unwrap();
        let before = accuracy(&model, &digits, test.clone()).unwrap();
        let losses = train_classifier(&mut model, &digits, train.clone(), &recipe).unwrap();
        let after = accuracy(&model, &digits, test.clone()).unwrap();
        assert!(after >= 0.7, "seed {seed}: {before} before training, {after} after");
        assert!(losses[losses.len() - 1] < losses[0], "seed {seed}: {losses:?}");
    }
}

/// Training gives the same bits for a seed, on one thread and on two.
#[test]
fn training_a_vision_transformer_is_deterministic() {
    let digits = digits();
    let recipe = VitTraining { steps: 5, warmup: 1, ..DIGITS_TRAINING };
    let train = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut model = Vit::<f32>::new(VIT, 7).unwrap();
            let losses = train_classifier(&mut model, &digits, digits.split().0, &recipe).unwrap();
            (model, losses)
        })
    };
    let one = train(1);
    assert!(train(1) == one && train(2) == one, "the runs differ");
}
