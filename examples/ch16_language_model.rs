//! Chapter 16, A language model that writes: loads the committed weights
//! and training logs (`book/data/ch16-*`, written by `cargo xtask train
//! lm`), prints the model, its losses against the baselines, samples at
//! several temperatures, the KV cache's check and size, and the induction
//! scores of three training runs, and draws the chapter's figures. Needs
//! neither the corpus nor Python.
//!
//! ```text
//! cargo run --example ch16_language_model
//! cargo run --example ch16_language_model -- --prompt "JULIET." --temperature 0.8   # writes; --help
//! ```

use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};
use ndarray::Array2;

use attn::lm::{Decoding, LmCache, Sampler, SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING};
use attn::nn::Parameters;
use report::ch16::{
    book_model, final_losses, head_log, rotary_final_losses, rotary_log, rotary_model, samples,
    training_log, vocabulary, PROMPT, SAMPLE_LENGTH, SAMPLE_SEED,
};
use report::ch16::{control_heads, control_log};
use report::ch16_control::{
    control_ablation, control_ablation_report, control_figure_head, control_model, control_report,
};
use report::ch16_report::{
    ablation_report, cache_check, cache_report, cache_speeds, figure_heads, induction_table,
    loss_table, penalised_greedy, pytorch_log, sliding_report, speed_report, top_heads,
    training_speeds, verse_report, INDUCTION_VERSE, REPORT_STEPS,
};
use report::error::ReportError;
use report::plot;

/// The options of a reader's own writing; with none, the chapter's report.
fn options() -> ArgMatches {
    let option = |name: &'static str, help: String| Arg::new(name).long(name).help(help);
    Command::new("ch16_language_model")
        .about("Chapter 16: the trained model's report, or (with any option) text it writes")
        .after_help("With no option, prints the chapter's report and draws its figures.")
        .arg(option("prompt", format!("The text to continue [default: {PROMPT:?}]")))
        .arg(
            option("length", format!("Characters to add [default: {SAMPLE_LENGTH}]"))
                .value_parser(value_parser!(usize)),
        )
        .arg(
            option("temperature", "0 is greedy decoding [default: 1]".into())
                .value_parser(value_parser!(f64)),
        )
        .arg(
            option("top-k", "Sample among the k likeliest".into())
                .value_parser(value_parser!(usize)),
        )
        .arg(
            option("top-p", "Sample among the likeliest whose probabilities sum to p".into())
                .value_parser(value_parser!(f64)),
        )
        .arg(
            option("seed", format!("The random draws' seed [default: {SAMPLE_SEED}]"))
                .value_parser(value_parser!(u64)),
        )
        .arg(
            option(
                "no-cache",
                "Recompute the whole window every step, without the KV cache".into(),
            )
            .action(ArgAction::SetTrue),
        )
        .get_matches()
}

/// Writes with the reader's options: the prompt and what the model adds,
/// and how long it took.
fn write(options: &ArgMatches) -> Result<(), ReportError> {
    let model = book_model()?;
    let vocab = vocabulary();
    let prompt = options.get_one::<String>("prompt").map_or(PROMPT, String::as_str);
    let length = options.get_one::<usize>("length").copied().unwrap_or(SAMPLE_LENGTH);
    let seed = options.get_one::<u64>("seed").copied().unwrap_or(SAMPLE_SEED);
    let mut sampler = Sampler::new(options.get_one::<f64>("temperature").copied().unwrap_or(1.0))?;
    if let Some(&k) = options.get_one::<usize>("top-k") {
        sampler = sampler.top_k(k)?;
    }
    if let Some(&p) = options.get_one::<f64>("top-p") {
        sampler = sampler.top_p(p)?;
    }
    let decoding = match options.get_flag("no-cache") {
        true => Decoding::Recompute,
        false => Decoding::Cached,
    };
    let start = std::time::Instant::now();
    let tokens = model.generate(&vocab.encode(prompt)?, length, &sampler, seed, decoding)?;
    let seconds = start.elapsed().as_secs_f64();
    println!("{}", vocab.decode(&tokens)?);
    eprintln!("\n({length} characters in {seconds:.2} s, {decoding:?}, seed {seed})");
    Ok(())
}

fn main() -> Result<(), ReportError> {
    let options = options();
    let writing = ["prompt", "length", "temperature", "top-k", "top-p", "seed"]
        .iter()
        .any(|name| options.contains_id(name) && options.value_source(name).is_some())
        || options.get_flag("no-cache");
    if writing {
        return write(&options);
    }
    let model = book_model()?;
    let c = model.config();
    println!(
        "== The model: {} characters, context {}, d_model {}, {} heads, {} blocks, d_ff {}; \
         {} parameters ==",
        c.vocab,
        c.context,
        c.d_model,
        c.heads,
        c.layers,
        c.d_ff,
        model.parameter_count()
    );
    assert_eq!(c, SHAKESPEARE_MODEL, "the weights are the book's model");

    let log = training_log()?;
    let (finals, bigram) = final_losses()?;
    println!(
        "\n== Training: {} steps of {} windows, three seeds ==",
        SHAKESPEARE_TRAINING.steps, SHAKESPEARE_TRAINING.batch
    );
    println!("{}", loss_table(&log, &REPORT_STEPS));
    for (seed, loss) in &finals {
        println!("seed {seed}: validation loss over the whole validation split {loss:.4}");
    }
    println!("character bigram model: {bigram:.4}");
    println!(
        "uniform guess over {} characters: ln {} = {:.4}",
        c.vocab,
        c.vocab,
        (c.vocab as f64).ln()
    );

    let speeds = training_speeds()?;
    let torch = pytorch_log()?;
    let torch_validation = torch.last().map_or(f64::NAN, |l| l.2);
    println!("\n== Training speed, the crate against PyTorch ==");
    println!("{}", speed_report(&speeds, torch_validation));

    println!("\n== Samples: \"Romeo.\\n\" continued by 200 characters ==");
    for (label, text) in samples(&model)? {
        println!("-- {label} --\n{text}\n");
    }

    println!("== The KV cache ==");
    println!("{}", cache_check(&model)?);
    println!(
        "bytes per token: {} (2 · {} blocks · {} numbers · 4 bytes)",
        LmCache::bytes_per_token(&model),
        c.layers,
        c.d_model
    );
    println!("\nseconds to generate, best of 5:");
    let speeds = cache_speeds()?.0;
    println!("{}", cache_report(&speeds));
    println!("{}", report::ch16_report::call_cost_report(&speeds));

    let (control, control_heads) = (control_log()?, control_heads()?);
    let control_model = control_model()?;
    println!("\n== A positive control: two blocks trained on periodic random sequences ==");
    println!("{}", control_report(&control, &control_heads));
    println!("{}", control_ablation_report(&control_ablation()?, &control_model)?);

    let heads = head_log()?;
    println!("\n== Induction: 24 random sequences of 32 characters, repeated once ==");
    println!("{}", induction_table(&log));
    println!("{}", top_heads(&heads, INDUCTION_VERSE.len()));

    println!("\n== Exercise 1: greedy decoding with a repetition penalty ==");
    for (label, penalty) in
        [("no penalty", (1.0, 20)), ("penalty 1.3 on the last 20 characters", (1.3, 20))]
    {
        println!(
            "-- {label} --\n{}\n",
            penalised_greedy(&model, report::ch16::PROMPT, 100, penalty)?
        );
    }

    let rotary = rotary_model()?;
    let rotary_log = rotary_log()?;
    let (rotary_seed, rotary_loss) = rotary_final_losses()?[0];
    let last = rotary_log.last().expect("the rotary log has lines");
    println!("\n== Rotary positions, seed {rotary_seed}: a sliding cache ==");
    println!(
        "{} parameters; validation loss at step {}: {:.3} (240 windows), {rotary_loss:.4} over the whole validation split",
        rotary.parameter_count(),
        last.step,
        last.validation_loss
    );
    let (text, check) = sliding_report(&rotary)?;
    println!("{check}\n-- temperature 0.8, through the sliding cache --\n{text}");

    println!("\n== Removing heads from the book's model (seed 1), on the repeated sequences ==");
    println!("{}", ablation_report(&model, &heads)?);

    draw_training(&log, bigram, c.vocab);
    draw_induction("ch16-induction.svg", &log, &heads, 9.0);
    draw_head(&model, &heads)?;
    draw_induction("ch16-control.svg", &control, &control_heads, 6.0);
    verse_heatmaps(
        "ch16-control-head.svg",
        &control_model,
        &[control_figure_head(&control_model)?],
    )?;
    Ok(())
}

/// Figure 16.1: training and validation loss of the three runs.
fn draw_training(log: &[report::ch16::LogLine], bigram: f64, vocab: usize) {
    use plot::{line_charts, Chart, Series, BLUE_, GREEN_, GREY_, ORANGE_};
    let colours = [BLUE_, ORANGE_, GREEN_];
    let mut series = Vec::new();
    for (i, seed) in [1, 2, 3].into_iter().enumerate() {
        let points = |f: fn(&report::ch16::LogLine) -> f64| {
            log.iter().filter(|l| l.seed == seed).map(|l| (l.step as f64, f(l))).collect::<Vec<_>>()
        };
        series.push(Series {
            label: format!("seed {seed}, validation"),
            points: points(|l| l.validation_loss),
            colour: colours[i],
            dashed: false,
            spread: Vec::new(),
        });
    }
    let flat = |label: String, y: f64| Series {
        label,
        points: vec![(100.0, y), (2000.0, y)],
        colour: GREY_,
        dashed: true,
        spread: Vec::new(),
    };
    series.push(flat(format!("bigram model, {bigram:.2}"), bigram));
    series.push(flat(
        format!("uniform, ln {vocab} = {:.2}", (vocab as f64).ln()),
        (vocab as f64).ln(),
    ));
    let chart = Chart {
        title: "Validation loss while training, three seeds",
        x_desc: "step",
        y_desc: "loss (nats per character)",
        log2_x: false,
        log10_y: false,
        y_range: (1.0, 4.6),
    };
    line_charts("ch16-training.svg", &[(chart, series)]);
}

/// Figures 16.2 and 16.4: the loss on repeated random characters, and the
/// best previous-token and prefix-matching heads, over training, into the
/// figure `name`, its loss axis up to `top`.
fn draw_induction(
    name: &str,
    log: &[report::ch16::LogLine],
    heads: &[report::ch16::HeadLine],
    top: f64,
) {
    use plot::{line_charts, Chart, Series, BLUE_, GREEN_, ORANGE_};
    let colours = [BLUE_, ORANGE_, GREEN_];
    let mut losses = Vec::new();
    let mut scores = Vec::new();
    for (i, seed) in [1, 2, 3].into_iter().enumerate() {
        let runs: Vec<_> = log.iter().filter(|l| l.seed == seed).collect();
        losses.push(Series {
            label: format!("seed {seed}, repeat"),
            points: runs.iter().map(|l| (l.step as f64, l.repeat_loss)).collect(),
            colour: colours[i],
            dashed: false,
            spread: Vec::new(),
        });
        losses.push(Series {
            label: format!("seed {seed}, first half"),
            points: runs.iter().map(|l| (l.step as f64, l.first_half_loss)).collect(),
            colour: colours[i],
            dashed: true,
            spread: Vec::new(),
        });
        let best = |step: usize, score: fn(&report::ch16::HeadLine) -> f64| {
            heads.iter().filter(|h| h.seed == seed && h.step == step).map(score).fold(0.0, f64::max)
        };
        // Prefix matching in blocks 2 to 4 only: block 1's keys cannot match prefixes.
        let prefix = |h: &report::ch16::HeadLine| if h.block > 0 { h.prefix_matching } else { 0.0 };
        scores.push(Series {
            label: format!("seed {seed}, previous token"),
            points: runs
                .iter()
                .map(|l| (l.step as f64, best(l.step, |h| h.previous_token)))
                .collect(),
            colour: colours[i],
            dashed: false,
            spread: Vec::new(),
        });
        scores.push(Series {
            label: format!("seed {seed}, prefix matching"),
            points: runs.iter().map(|l| (l.step as f64, best(l.step, prefix))).collect(),
            colour: colours[i],
            dashed: true,
            spread: Vec::new(),
        });
    }
    let loss_chart = Chart {
        title: "Loss on random characters and on their repeat",
        x_desc: "step",
        y_desc: "loss (nats per character)",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, top),
    };
    let score_chart = Chart {
        title: "The largest score of any head",
        x_desc: "step",
        y_desc: "mean attention weight",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 1.0),
    };
    line_charts(name, &[(loss_chart, losses), (score_chart, scores)]);
}

/// Figure 16.5: the book model's strongest previous-token head, and its
/// strongest prefix-matching head, on a repeated line of verse.
fn draw_head(
    model: &attn::lm::LanguageModel<f32>,
    heads: &[report::ch16::HeadLine],
) -> Result<(), ReportError> {
    println!("{}", verse_report(model, heads)?);
    let panels: Vec<(usize, usize)> =
        figure_heads(heads).iter().map(|h| (h.block, h.head)).collect();
    verse_heatmaps("ch16-heads.svg", model, &panels)
}

/// The second reading's attention on [`INDUCTION_VERSE`] read twice, for
/// each `(block, head)` (from 0) of `panels`, one panel each.
fn verse_heatmaps(
    name: &str,
    model: &attn::lm::LanguageModel<f32>,
    panels: &[(usize, usize)],
) -> Result<(), ReportError> {
    let text = format!("{INDUCTION_VERSE}{INDUCTION_VERSE}");
    let fwd = model.forward(&[vocabulary().encode(&text)?])?;
    // The repeat's queries (rows 32 to 63) against every key.
    let half = INDUCTION_VERSE.len();
    let label = |i: usize| {
        if i.is_multiple_of(8) {
            i.to_string()
        } else {
            String::new()
        }
    };
    let keys: Vec<String> = (0..text.len()).map(label).collect();
    let queries: Vec<String> = (half..text.len()).map(label).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let titles: Vec<String> =
        panels.iter().map(|(b, h)| format!("block {}, head {}", b + 1, h + 1)).collect();
    let mut grid = Vec::new();
    for (&(block, head), title) in panels.iter().zip(&titles) {
        let weights: Array2<f32> =
            fwd.weights(block, 0, head)?.slice(ndarray::s![half.., ..]).to_owned();
        let heatmap = plot::Heatmap {
            title,
            row_labels: &queries,
            col_labels: &keys,
            x_desc: "key position",
            y_desc: "query position (the repeat)",
            value_desc: "attention weight",
            range: (0.0, 1.0),
            annotate: None,
        };
        grid.push((heatmap, weights));
    }
    plot::heatmap_grid(name, "A line read twice: the second reading's attention", 2, &grid);
    Ok(())
}
