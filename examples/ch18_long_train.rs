//! Chapter 18: trains chapter 16's language model with rotary positions,
//! ALiBi, no positions and learned positions, three seeds each, at its
//! context of 64; reads 16 texts of 512 validation characters with every
//! model (the rotary ones with their frequencies as trained and scaled four
//! ways), position by position; continues each rotary model's training at
//! 256 positions under each scaling; and trains the same four kinds of
//! model to find a passkey at 64 positions, then asks them at 64 to 512.
//! Writes `book/data/ch18-models.tsv`, `ch18-by-position.tsv` and
//! `ch18-passkey.tsv` (run by `cargo xtask train long`, two runs at a
//! time, one core each; not in CI: the chapter's figures and tests use the
//! committed files). Needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo xtask train long   # = cargo run --release --example ch18_long_train
//! cargo run --release --example ch18_long_train -- --steps 20   # a trial
//! ```
//!
//! With `--steps N`, every training takes `N` steps and the files go to
//! `target/ch18-trial/`, leaving the book's data as they are.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use attn::lm::{
    even_offsets, mean_loss, passkey_batch, train_lm, train_on_batches, Corpus, LanguageModel,
    LmTraining, SHAKESPEARE_TRAINING,
};
use report::ch16::corpus_dir;
use report::ch18::data::{MODEL_COLUMNS, PASSKEY_COLUMNS, POSITION_COLUMNS};
use report::ch18::measure::{buckets, by_position, long_texts, passkey_accuracy};
use report::ch18::{
    passkey_distances, reading, readings, Trained, BUCKET, CONTINUATION, CONTINUED, LONGEST,
    LONG_TEXTS, PASSKEY_LENGTHS, PASSKEY_TEXTS, PASSKEY_TRAINING, SCALINGS, SEEDS, TRAINED,
    TRAINED_KINDS,
};
use report::provenance::header;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// What one kind of model and seed adds to each data file, and printed.
#[derive(Default)]
struct Out {
    printed: String,
    models: String,
    positions: String,
    passkey: String,
}

fn main() -> Result<(), Failure> {
    let trial = trial_steps()?;
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let texts = long_texts(corpus.validation(), LONG_TEXTS, LONGEST)?;
    let jobs: Vec<(Trained, u64)> =
        TRAINED_KINDS.iter().flat_map(|&k| SEEDS.map(|s| (k, s))).collect();
    // Two runs at a time, each on a pool of one thread, taking the next job
    // as they finish; every result keeps its job's place.
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Out, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(kind, seed)) = jobs.get(i) else { break };
                let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build();
                let out = match pool {
                    Ok(pool) => pool.install(|| run(&corpus, &texts, kind, seed, trial)),
                    Err(e) => Err(e.to_string()),
                };
                if let Ok(out) = &out {
                    eprint!("{}", out.printed);
                }
                results.lock().expect("no run panics holding the lock")[i] = Some(out);
            });
        }
    });
    let some = "one run per kind of model and seed";
    let mut models = format!(
        "{}\n{MODEL_COLUMNS}\n",
        header(
            some,
            "validation loss over windows of 64 spanning the validation split, after chapter \
             16's recipe"
        )
    );
    let entropy_columns: String =
        (1..=TRAINED_KINDS[0].config().layers).map(|b| format!("\tentropy_{b}")).collect();
    let mut positions = format!(
        "{}\n{POSITION_COLUMNS}{entropy_columns}\n",
        header(
            some,
            &format!(
                "mean over {LONG_TEXTS} texts of {LONGEST} characters from the validation split \
                 and a bucket of {BUCKET} positions: the loss, and each block's attention \
                 entropy (nats) mean over its heads; learned positions read the first {TRAINED}"
            )
        )
    );
    let mut passkey = format!(
        "{}\n{PASSKEY_COLUMNS}\n",
        header(
            some,
            &format!(
                "share of {PASSKEY_TEXTS} passkey texts (the same for every model) whose whole key \
                 is the most likely answer"
            )
        )
    );
    let results = results.into_inner().map_err(|e| e.to_string())?;
    for out in results.into_iter().flatten() {
        let out = out?;
        print!("{}", out.printed);
        models += &out.models;
        positions += &out.positions;
        passkey += &out.passkey;
    }
    let dir = match trial {
        None => report::root().join("book/data"),
        Some(_) => report::root().join("target/ch18-trial"),
    };
    std::fs::create_dir_all(&dir)?;
    let dir = dir.display();
    std::fs::write(format!("{dir}/ch18-models.tsv"), models)?;
    std::fs::write(format!("{dir}/ch18-by-position.tsv"), positions)?;
    std::fs::write(format!("{dir}/ch18-passkey.tsv"), passkey)?;
    Ok(())
}

/// Every measurement of one kind of model and seed.
fn run(
    corpus: &Corpus,
    texts: &[Vec<usize>],
    kind: Trained,
    seed: u64,
    trial: Option<usize>,
) -> Result<Out, String> {
    measure(corpus, texts, (kind, seed), trial)
        .map_err(|e| format!("{} seed {seed}: {e}", kind.label()))
}

fn measure(
    corpus: &Corpus,
    texts: &[Vec<usize>],
    (kind, seed): (Trained, u64),
    trial: Option<usize>,
) -> Result<Out, Failure> {
    // A trial's recipes: every training `steps` long, logging once.
    let steps = |recipe: LmTraining| match trial {
        Some(steps) => LmTraining { steps, warmup: 1, log_every: steps, log_windows: 2, ..recipe },
        None => recipe,
    };
    let mut out = Out::default();
    let start = Instant::now();
    let mut model = LanguageModel::<f32>::new(kind.config(), seed)?;
    let recipe = steps(LmTraining { seed, ..SHAKESPEARE_TRAINING });
    train_lm(&mut model, corpus.train(), corpus.validation(), &recipe, |_, _| {})?;
    let loss = whole_validation(&model, corpus)?;
    let label = kind.label();
    out.printed += &format!(
        "{label} seed {seed}: trained in {:.0} s, validation loss {loss:.4}\n",
        start.elapsed().as_secs_f64()
    );
    out.models += &format!("{label}\t{seed}\ttrained\t{label}\t{loss:.5}\n");
    for (read, scaled) in readings(kind) {
        let len = if kind == Trained::Learned { TRAINED } else { LONGEST };
        let reader = reading(&model, scaled, len)?;
        let mine: Vec<Vec<usize>> = texts.iter().map(|t| t[..=len].to_vec()).collect();
        out.positions += &bucket_rows(&reader, &mine, len, (label, seed, "trained", read))?;
    }
    if kind == Trained::Rotary {
        for scaled in SCALINGS {
            let start = Instant::now();
            let mut longer = reading(&model, scaled, CONTINUED)?;
            let recipe = steps(LmTraining { seed, ..CONTINUATION });
            train_lm(&mut longer, corpus.train(), corpus.validation(), &recipe, |_, _| {})?;
            let read = scaled.label();
            out.printed += &format!(
                "{label} seed {seed}, continued at {CONTINUED} as {read}: {:.0} s\n",
                start.elapsed().as_secs_f64()
            );
            let reader = longer.with_context(LONGEST)?;
            out.positions +=
                &bucket_rows(&reader, texts, LONGEST, (label, seed, "continued", read))?;
        }
    }
    let start = Instant::now();
    let mut finder = LanguageModel::<f32>::new(kind.config(), seed)?;
    let recipe = steps(LmTraining { seed, ..PASSKEY_TRAINING });
    let config = finder.config();
    train_on_batches(
        &mut finder,
        &recipe,
        |rng| passkey_batch(&config, rng, recipe.batch),
        |_| Ok(0.0),
        |_, _| {},
    )?;
    out.printed += &format!(
        "{label} seed {seed}: passkey trained in {:.0} s\n",
        start.elapsed().as_secs_f64()
    );
    for (read, scaled) in readings(kind) {
        for len in PASSKEY_LENGTHS.into_iter().filter(|&l| kind != Trained::Learned || l <= TRAINED)
        {
            let reader = reading(&finder, scaled, len)?;
            for distance in passkey_distances(len) {
                let texts = (PASSKEY_TEXTS, (len * 1000 + distance) as u64);
                let found = passkey_accuracy(&reader, len, distance, texts, 8)?;
                out.passkey += &format!("{label}\t{seed}\t{read}\t{len}\t{distance}\t{found:.4}\n");
            }
        }
    }
    Ok(out)
}

/// The loss of `model` over windows of its context spanning the validation
/// split.
fn whole_validation(model: &LanguageModel<f32>, corpus: &Corpus) -> Result<f64, Failure> {
    let context = model.config().context;
    let text = corpus.validation();
    let whole = even_offsets(text.len() / context, text.len(), context)?;
    Ok(mean_loss(model, text, &whole, 12)?)
}

/// The rows of `ch18-by-position.tsv` for `model` reading `texts` (`len`
/// tokens each, plus the last one's target).
fn bucket_rows(
    model: &LanguageModel<f32>,
    texts: &[Vec<usize>],
    len: usize,
    (trained, seed, stage, read): (&str, u64, &str, &str),
) -> Result<String, Failure> {
    let measured = by_position(model, texts, len)?;
    let losses = buckets(&measured.loss, BUCKET);
    let entropies: Vec<Vec<(usize, f64)>> =
        measured.entropy.iter().map(|e| buckets(e, BUCKET)).collect();
    let mut rows = String::new();
    for (i, (first, loss)) in losses.iter().enumerate() {
        rows += &format!("{trained}\t{seed}\t{stage}\t{read}\t{first}\t{loss:.5}");
        for block in &entropies {
            rows += &format!("\t{:.5}", block[i].1);
        }
        rows += "\n";
    }
    Ok(rows)
}

/// `--steps N`: a trial with every training `N` steps long.
fn trial_steps() -> Result<Option<usize>, Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, n] if flag == "--steps" => match n.parse() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(format!("--steps takes a number of steps above 0, not {n:?}").into()),
        },
        _ => Err(format!("usage: ch18_long_train [--steps N] (got {args:?})").into()),
    }
}
