//! Chapter 18, Longer than trained: the ways the chapter's models read
//! positions, the lengths and recipes of `cargo xtask train long`, and its
//! data (`book/data/ch18-*.tsv`).

use attn::lm::SHAKESPEARE_TRAINING;
use attn::lm::{LanguageModel, LmConfig, LmTraining, Positions, SHAKESPEARE_MODEL};
use attn::rope_scaling::RopeScaling;

use crate::error::ReportError;

pub mod data;
pub mod measure;
pub mod tables;

/// The context the models are trained at (chapter 16's).
pub const TRAINED: usize = SHAKESPEARE_MODEL.context;

/// The longest length read: eight times the trained context.
pub const LONGEST: usize = 8 * TRAINED;

/// The context the rotary models' training continues at.
pub const CONTINUED: usize = 4 * TRAINED;

/// The seeds of every kind of model.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// Texts of [`LONGEST`] characters from the validation split read by every
/// model.
pub const LONG_TEXTS: usize = 16;

/// Positions per bucket of the data files.
pub const BUCKET: usize = 16;

/// The continuation at [`CONTINUED`] positions: 200 steps of 3 windows (as
/// many characters a step as chapter 16's 12 windows of 64), warm-up over
/// 20 steps to a tenth of chapter 16's peak learning rate, decaying to a
/// hundredth; AdamW as in chapter 16 (the seed is the model's).
pub const CONTINUATION: LmTraining = LmTraining {
    steps: 200,
    batch: 3,
    lr: 1e-4,
    warmup: 20,
    min_lr: 1e-5,
    log_every: 100,
    log_windows: 60,
    ..SHAKESPEARE_TRAINING
};

/// How a model is trained to know where its tokens are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trained {
    /// A learned vector per position (chapter 16's model).
    Learned,
    /// Rotary positions.
    Rotary,
    /// ALiBi.
    Alibi,
    /// No positions at all.
    NoPositions,
}

/// The kinds of model, in the order of every table.
pub const TRAINED_KINDS: [Trained; 4] =
    [Trained::Rotary, Trained::Alibi, Trained::NoPositions, Trained::Learned];

impl Trained {
    /// The model's configuration: chapter 16's with these positions.
    pub fn config(self) -> LmConfig {
        let positions = match self {
            Trained::Learned => Positions::Learned,
            Trained::Rotary => Positions::Rotary,
            Trained::Alibi => Positions::Alibi,
            Trained::NoPositions => Positions::None,
        };
        LmConfig { positions, ..SHAKESPEARE_MODEL }
    }

    /// Its name in the data files.
    pub fn label(self) -> &'static str {
        match self {
            Trained::Learned => "learned",
            Trained::Rotary => "rope",
            Trained::Alibi => "alibi",
            Trained::NoPositions => "none",
        }
    }
}

/// How a rotary model reads past its trained length: its frequencies as
/// trained, scaled by one of four methods, or YaRN's without its
/// temperature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scaled {
    /// RoPE's frequencies as trained.
    Plain,
    /// Position interpolation.
    Interpolated,
    /// NTK-aware scaling.
    NtkAware,
    /// YaRN, with its temperature.
    Yarn,
    /// YaRN's frequencies without its temperature: what the temperature
    /// does, by difference.
    YarnCold,
    /// Llama 3's frequency bands.
    Llama3,
}

/// RoPE as trained and its four scalings: each rotary model is continued
/// under each, and the figures draw them in this order.
pub const SCALINGS: [Scaled; 5] =
    [Scaled::Plain, Scaled::Interpolated, Scaled::NtkAware, Scaled::Yarn, Scaled::Llama3];

/// Every way a rotary model is read as trained, in the order of the
/// tables: the scalings, with YaRN's frequencies without its temperature
/// after YaRN.
pub const ROTARY_READS: [Scaled; 6] = [
    Scaled::Plain,
    Scaled::Interpolated,
    Scaled::NtkAware,
    Scaled::Yarn,
    Scaled::YarnCold,
    Scaled::Llama3,
];

/// YaRN's bounds as its paper and `transformers` set them: pairs turning
/// more than 32 times in the trained length are kept, fewer than once
/// interpolated.
pub const YARN_BETAS: (f64, f64) = (32.0, 1.0);

/// Llama 3.1's bands: wavelengths below a quarter of the trained length
/// kept, above it interpolated.
pub const LLAMA3_BANDS: (f64, f64) = (1.0, 4.0);

impl Scaled {
    /// The scaling that stretches the trained context `factor` times.
    pub fn scaling(self, factor: f64) -> RopeScaling {
        match self {
            Scaled::Plain => RopeScaling::None,
            Scaled::Interpolated => RopeScaling::Linear { factor },
            Scaled::NtkAware => RopeScaling::NtkAware { factor },
            Scaled::Yarn | Scaled::YarnCold => RopeScaling::Yarn {
                factor,
                trained: TRAINED,
                beta_fast: YARN_BETAS.0,
                beta_slow: YARN_BETAS.1,
                temperature: self == Scaled::Yarn,
            },
            Scaled::Llama3 => RopeScaling::Llama3 {
                factor,
                trained: TRAINED,
                low: LLAMA3_BANDS.0,
                high: LLAMA3_BANDS.1,
            },
        }
    }

    /// Its name in the data files.
    pub fn label(self) -> &'static str {
        match self {
            Scaled::Plain => "rope",
            Scaled::Interpolated => "pi",
            Scaled::NtkAware => "ntk",
            Scaled::Yarn => "yarn",
            Scaled::YarnCold => "yarn_cold",
            Scaled::Llama3 => "llama3",
        }
    }

    /// Its name in the chapter's tables and figures.
    pub fn name(self) -> &'static str {
        match self {
            Scaled::Plain => "RoPE",
            Scaled::Interpolated => "interpolation",
            Scaled::NtkAware => "NTK-aware",
            Scaled::Yarn => "YaRN",
            Scaled::YarnCold => "YaRN, no temperature",
            Scaled::Llama3 => "Llama 3",
        }
    }
}

/// `model` (trained at [`TRAINED`]) reading `len` tokens: a rotary model
/// with its frequencies scaled by `scaled` for `len / TRAINED`, the others
/// as they are (learned positions only up to [`TRAINED`]).
pub fn reading(
    model: &LanguageModel<f32>,
    scaled: Scaled,
    len: usize,
) -> Result<LanguageModel<f32>, ReportError> {
    let factor = len as f64 / TRAINED as f64;
    Ok(match model.config().positions {
        Positions::Learned if len <= TRAINED => model.clone(),
        Positions::Rotary | Positions::ScaledRotary(_) => {
            model.with_scaled_rope(len, scaled.scaling(factor))?
        }
        _ => model.with_context(len)?,
    })
}

/// The labels of the ways every model is read, for `kind`: the rotary
/// models in each of [`ROTARY_READS`], the others as they are.
pub fn readings(kind: Trained) -> Vec<(&'static str, Scaled)> {
    match kind {
        Trained::Rotary => ROTARY_READS.iter().map(|&s| (s.label(), s)).collect(),
        other => vec![(other.label(), Scaled::Plain)],
    }
}

/// The passkey models' training: chapter 16's recipe, on passkey texts of
/// 64 tokens, the key at a distance drawn at random.
pub const PASSKEY_TRAINING: LmTraining = SHAKESPEARE_TRAINING;

/// The lengths the passkey is asked at.
pub const PASSKEY_LENGTHS: [usize; 4] = [TRAINED, 2 * TRAINED, 4 * TRAINED, LONGEST];

/// Texts per length and distance.
pub const PASSKEY_TEXTS: usize = 32;

/// The distances (from the key's first digit to the question) a text of
/// `len` tokens is asked at: 8, 16 and 32, and the farthest a text of each
/// passkey length up to `len` can hold but one (56 in 64 tokens, 120 in
/// 128, …).
pub fn passkey_distances(len: usize) -> Vec<usize> {
    let near = [8, 16, 32];
    let far = PASSKEY_LENGTHS.iter().map(|&l| l - 8).filter(|&d| d + 8 <= len);
    near.into_iter().filter(|&d| d + 8 <= len).chain(far).collect()
}

/// The entropy of attention weights spread evenly over every key a causal
/// query sees, `ln(p + 1)` at position `p`, averaged over positions
/// `from..to` as the buckets average the measured entropy (0 if empty).
pub fn even_entropy(from: usize, to: usize) -> f64 {
    let each: Vec<f64> = (from..to).map(|p| ((p + 1) as f64).ln()).collect();
    if each.is_empty() {
        return 0.0;
    }
    each.iter().sum::<f64>() / each.len() as f64
}

/// The scale factor that stretches the trained context to [`LONGEST`].
pub const FACTOR: f64 = (LONGEST / TRAINED) as f64;

/// The width of the models' heads: 128 wide, 4 heads.
pub const D_K: usize = SHAKESPEARE_MODEL.d_model / SHAKESPEARE_MODEL.heads;

/// The pairs of the frequency table: the six fastest of a head [`D_K`]
/// wide, where the methods differ, and the slowest.
pub const TABLE_PAIRS: [usize; 7] = [0, 1, 2, 3, 4, 5, D_K / 2 - 1];

/// The frequency table of the chapter's heads for `factor`.
pub fn frequency_report(factor: f64) -> Result<String, ReportError> {
    tables::frequency_table(D_K, factor, &TABLE_PAIRS)
}

/// What RoPE's pairs of a head [`D_K`] wide see in training and past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Angles {
    /// Pairs in a head.
    pub pairs: usize,
    /// Pairs whose wavelength `2π/ω_f` is longer than the trained context:
    /// they never turn once in training.
    pub never_turned: usize,
    /// The slowest pair's largest angle in training, at position
    /// `TRAINED − 1` (radians).
    pub slowest_trained: f64,
    /// Its angle at position `LONGEST − 1`, as trained.
    pub slowest_longest: f64,
    /// Its angle there under position interpolation for [`FACTOR`].
    pub slowest_interpolated: f64,
}

/// [`Angles`] for the chapter's heads.
pub fn angles() -> Result<Angles, ReportError> {
    use attn::rope_scaling::RopeFrequencies;
    let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None)?;
    let pi = RopeFrequencies::new(D_K, 10000.0, Scaled::Interpolated.scaling(FACTOR))?;
    let wavelength = |w: f64| 2.0 * std::f64::consts::PI / w;
    let slowest = |f: &RopeFrequencies| f.omega()[f.omega().len() - 1];
    Ok(Angles {
        pairs: plain.omega().len(),
        never_turned: plain.omega().iter().filter(|&&w| wavelength(w) > TRAINED as f64).count(),
        slowest_trained: (TRAINED - 1) as f64 * slowest(&plain),
        slowest_longest: (LONGEST - 1) as f64 * slowest(&plain),
        slowest_interpolated: (LONGEST - 1) as f64 * slowest(&pi),
    })
}

/// [`angles`], as the chapter's example prints them.
pub fn angles_report() -> Result<String, ReportError> {
    let a = angles()?;
    Ok(format!(
        "pairs that never turn once in {TRAINED} positions: {} of {}\n\
         slowest pair, query and key {} apart: {:.4} rad\n\
         slowest pair, query and key {} apart: {:.4} rad as trained, {:.4} rad interpolated\n",
        a.never_turned,
        a.pairs,
        TRAINED - 1,
        a.slowest_trained,
        LONGEST - 1,
        a.slowest_longest,
        a.slowest_interpolated
    ))
}

/// How many of the heads' pairs `scaled` keeps at RoPE's frequency and how
/// many it divides by the whole [`FACTOR`] (the rest lie between).
pub fn kept_and_divided(scaled: Scaled) -> Result<(usize, usize), ReportError> {
    use attn::rope_scaling::RopeFrequencies;
    let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None)?;
    let mine = RopeFrequencies::new(D_K, 10000.0, scaled.scaling(FACTOR))?;
    let shares: Vec<f64> = mine.omega().iter().zip(plain.omega()).map(|(m, p)| m / p).collect();
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-12;
    Ok((
        shares.iter().filter(|&&r| near(r, 1.0)).count(),
        shares.iter().filter(|&&r| near(r, 1.0 / FACTOR)).count(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_entropy_is_the_mean_of_ln_p_plus_1() {
        assert_eq!(even_entropy(0, 1), 0.0, "the first query sees itself alone");
        let two = (2f64.ln() + 3f64.ln()) / 2.0;
        assert!((even_entropy(1, 3) - two).abs() < 1e-15);
        assert_eq!(even_entropy(5, 5), 0.0);
    }

    #[test]
    fn yarn_cold_is_yarn_without_its_temperature() {
        let [hot, cold] = [Scaled::Yarn, Scaled::YarnCold].map(|s| s.scaling(FACTOR));
        let RopeScaling::Yarn { temperature: false, .. } = cold else { panic!("{cold:?}") };
        let RopeScaling::Yarn { temperature: true, .. } = hot else { panic!("{hot:?}") };
        let readings = readings(Trained::Rotary);
        assert!(readings.iter().any(|r| r.1 == Scaled::YarnCold));
        assert!(!SCALINGS.contains(&Scaled::YarnCold), "the continuation keeps the temperature");
    }
}
