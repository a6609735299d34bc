use attn::vision::*;
fn main() {
    let digits = Digits::read(DIGITS_FILE).unwrap();
    let (train, test) = digits.split();
    for (patch, positions) in [
        (4, PatchPositions::Learned),
        (2, PatchPositions::Learned),
        (2, PatchPositions::RowColumn),
        (2, PatchPositions::None),
    ] {
        let config = VitConfig { patch, d_model: 32, heads: 4, layers: 2, d_ff: 64, positions };
        let t = std::time::Instant::now();
        let mut model = Vit::<f32>::new(config, 1).unwrap();
        train_classifier(&mut model, &digits, train.clone(), &DIGITS_TRAINING).unwrap();
        let acc = accuracy(&model, &digits, test.clone()).unwrap();
        println!(
            "{patch} {positions:?}: {acc:.3} in {:.1} s, {} params",
            t.elapsed().as_secs_f64(),
            config.parameter_count().unwrap()
        );
    }
}
