//! Chapter 18, Longer than trained: RoPE's frequencies under four
//! scalings, the angles the slowest pair reaches; then what `cargo xtask
//! train long` measured (`book/data/ch18-*.tsv`): the loss and attention
//! entropy by position to 512 characters for every way of reading
//! positions, before and after a continuation at 256, and the passkey
//! found at 64 to 512; and the chapter's figures. Needs neither the corpus
//! nor Python.
//!
//! ```text
//! cargo run --example ch18_longer_than_trained
//! cargo run --example ch18_longer_than_trained -- --factor 4   # --help
//! ```

use clap::{value_parser, Arg, Command};
use report::ch18::data::{model_losses, passkeys_found, position_buckets, PositionBucket};
use report::ch18::tables::{
    curve, entropy, entropy_table, loss, loss_table, passkey_at, passkey_distance_table,
    passkey_reads, passkey_table, rotary_reads, table_reads, validation_report, zero_shot_reads,
    Spread,
};
use report::ch18::{
    angles_report, even_entropy, frequency_report, Scaled, BUCKET, CONTINUED, FACTOR, LONGEST,
    PASSKEY_LENGTHS, TRAINED,
};
use report::error::ReportError;
use report::plot::{self, line_charts_legend_beside, Chart, Series};

fn main() -> Result<(), ReportError> {
    let matches = Command::new("ch18_longer_than_trained")
        .about(
            "Chapter 18: RoPE scaled past its trained length, and what the trained models do there",
        )
        .after_help("The measured tables and figures do not depend on --factor.")
        .arg(
            Arg::new("factor")
                .long("factor")
                .value_parser(value_parser!(f64))
                .help(format!("The scale factor of the frequency table [default: {FACTOR}]")),
        )
        .get_matches();
    let factor = matches.get_one::<f64>("factor").copied().unwrap_or(FACTOR);
    println!("== The heads' frequencies scaled for {factor} times {TRAINED} positions, as shares of RoPE's ==");
    println!("{}", frequency_report(factor)?);
    println!("== The slowest pair's angle ==");
    println!("{}", angles_report()?);

    let (buckets, _) = position_buckets()?;
    println!("== Loss by position, trained at {TRAINED} (mean and range of 3 seeds) ==");
    println!("{}", loss_table(&buckets, "trained", &table_reads()));
    println!("== Attention entropy by position, trained at {TRAINED} (nats) ==");
    println!("{}", entropy_table(&buckets, "trained", &table_reads()));
    println!("== Loss by position, continued at {CONTINUED} ==");
    println!("{}", loss_table(&buckets, "continued", &rotary_reads()));
    let (models, _) = model_losses()?;
    println!(
        "== Validation loss at {TRAINED}, over the whole split (mean and range of 3 seeds) =="
    );
    println!("{}", validation_report(&models));
    let (found, _) = passkeys_found()?;
    println!("\n== Passkeys found, % (mean over distances; mean and range of 3 seeds) ==");
    println!("{}", passkey_table(&found, &PASSKEY_LENGTHS));
    println!("== Passkeys found in texts of {LONGEST}, % by distance (mean of 3 seeds) ==");
    println!("{}", passkey_distance_table(&found, LONGEST));

    draw_losses(&buckets);
    draw_entropy(&buckets);
    draw_passkey(&found);
    Ok(())
}

/// Eight colours, one a way of reading positions.
const COLOURS: [plotters::style::RGBColor; 8] = [
    plot::BLUE_,
    plot::ORANGE_,
    plot::GREEN_,
    plot::PURPLE_,
    plot::BROWN_,
    plot::RED_,
    plot::CYAN_,
    plot::GREY_,
];

/// One line per way of reading, the mean of the seeds with their range.
fn lines(
    buckets: &[PositionBucket],
    stage: &str,
    reads: &[(&str, &str)],
    value: fn(&PositionBucket) -> f64,
) -> Vec<Series> {
    reads
        .iter()
        .zip(COLOURS)
        .map(|(&(label, name), colour)| {
            let points = curve(buckets, (stage, label), value);
            Series {
                label: name.to_string(),
                points: points.iter().map(|&(p, s)| (middle(p), s.mean)).collect(),
                colour,
                dashed: false,
                spread: points.iter().map(|(_, s)| (s.low, s.high)).collect(),
            }
        })
        .collect()
}

/// The middle of the bucket starting at `first`.
fn middle(first: usize) -> f64 {
    first as f64 + BUCKET as f64 / 2.0
}

/// Figure 18.1: the loss by position, as trained and after the
/// continuation.
fn draw_losses(buckets: &[PositionBucket]) {
    let top = Chart {
        title: "Trained at 64: loss by position",
        x_desc: "position in the text",
        y_desc: "loss (nats)",
        log2_x: false,
        log10_y: false,
        y_range: (1.2, 4.0),
    };
    let bottom = Chart { title: "Continued at 256 for 200 steps", y_range: (1.4, 2.8), ..top };
    let continued = lines(buckets, "continued", &rotary_reads(), loss);
    line_charts_legend_beside(
        "ch18-loss-by-position.svg",
        &[(top, lines(buckets, "trained", &zero_shot_reads(), loss)), (bottom, continued)],
    );
}

/// Figure 18.2: attention entropy by position, mean over blocks and heads,
/// with that of weights spread evenly over every key.
fn draw_entropy(buckets: &[PositionBucket]) {
    let reads = zero_shot_reads();
    let mut series = lines(buckets, "trained", &reads[..reads.len() - 1], entropy);
    let cold = [(Scaled::YarnCold.label(), Scaled::YarnCold.name())];
    let cold = lines(buckets, "trained", &cold, entropy)
        .into_iter()
        .map(|s| Series { colour: COLOURS[reads.len() - 1], ..s });
    series.extend(cold);
    series.push(Series {
        label: "even over all keys".into(),
        points: (0..LONGEST / BUCKET)
            .map(|b| (middle(BUCKET * b), even_entropy(BUCKET * b, BUCKET * (b + 1))))
            .collect(),
        colour: plotters::style::RGBColor(0, 0, 0),
        dashed: true,
        spread: Vec::new(),
    });
    let chart = Chart {
        title: "Attention entropy by position (trained at 64)",
        x_desc: "position of the query",
        y_desc: "entropy (nats), mean over blocks and heads",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 6.5),
    };
    line_charts_legend_beside("ch18-entropy.svg", &[(chart, series)]);
}

/// Figure 18.3: passkeys found against the text's length.
fn draw_passkey(found: &[report::ch18::data::PasskeyFound]) {
    let series = passkey_reads()
        .into_iter()
        .filter(|&(_, read, _)| read != Scaled::YarnCold.label())
        .zip(COLOURS)
        .map(|((trained, read, name), colour)| {
            let at: Vec<(f64, Spread)> = PASSKEY_LENGTHS
                .iter()
                .filter_map(|&l| Some((l as f64, passkey_at(found, (trained, read), l, None)?)))
                .collect();
            Series {
                label: name.to_string(),
                points: at.iter().map(|(l, s)| (*l, 100.0 * s.mean)).collect(),
                colour,
                dashed: false,
                spread: at.iter().map(|(_, s)| (100.0 * s.low, 100.0 * s.high)).collect(),
            }
        })
        .collect();
    let chart = Chart {
        title: "Passkeys found, trained at 64",
        x_desc: "length of the text (log scale)",
        y_desc: "keys found (%)",
        log2_x: true,
        log10_y: false,
        y_range: (0.0, 100.0),
    };
    line_charts_legend_beside("ch18-passkey.svg", &[(chart, series)]);
}
