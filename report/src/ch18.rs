//! Chapter 18, attention on images: the models the chapter compares, and
//! the readers of what `cargo xtask train vision` writes to `book/data/`.

use attn::vision::{PatchPositions, Perceptron, VitConfig, VitTraining, DIGITS_TRAINING};

use crate::error::ReportError;
use crate::provenance::Provenance;

/// The initialisations (and orders of images) every model is trained from.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The recipe every model is trained by, for a seed.
pub fn recipe(seed: u64) -> VitTraining {
    VitTraining { seed, ..DIGITS_TRAINING }
}

/// The chapter's Vision Transformer: 2×2 patches (16 of them), learned
/// positions, two blocks of four heads, width 32.
pub const CHAPTER_VIT: VitConfig = VitConfig {
    patch: 2,
    d_model: 32,
    heads: 4,
    layers: 2,
    d_ff: 64,
    positions: PatchPositions::Learned,
};

/// The Vision Transformers of the comparison: both patch sizes, each kind
/// of positions, the chapter's sizes otherwise.
pub fn vits() -> Vec<VitConfig> {
    let kinds = [PatchPositions::Learned, PatchPositions::RowColumn, PatchPositions::None];
    [2, 4]
        .into_iter()
        .flat_map(|patch| kinds.map(|positions| VitConfig { patch, positions, ..CHAPTER_VIT }))
        .collect()
}

/// The perceptron's hidden width: the one whose parameters come closest to
/// the chapter's ViT's.
pub fn perceptron_width() -> usize {
    let target = CHAPTER_VIT.parameter_count().unwrap_or(0) as f64;
    let count = |h: usize| {
        Perceptron::<f32>::new(&[h], 0).map_or(0, |p| attn::nn::Parameters::parameter_count(&p))
            as f64
    };
    (1..1000)
        .min_by(|&a, &b| (count(a) - target).abs().total_cmp(&(count(b) - target).abs()))
        .unwrap_or(1)
}

/// The numbers of training images of the data-size curve (the first of the
/// training split); the last is all of it.
pub const TRAINING_SIZES: [usize; 5] = [100, 200, 400, 800, attn::vision::TRAINING_IMAGES];

/// A model's name in the data files: `vit-2-learned`, `perceptron`,
/// `linear`.
pub fn vit_name(c: &VitConfig) -> String {
    let positions = match c.positions {
        PatchPositions::Learned => "learned",
        PatchPositions::RowColumn => "row_column",
        PatchPositions::None => "none",
    };
    format!("vit-{}-{positions}", c.patch)
}

/// One trained model's result: its name, seed, training images, parameters
/// and share of the test split named right.
#[derive(Debug, Clone, PartialEq)]
pub struct Trained {
    /// `vit-2-learned`, `perceptron`, `linear`.
    pub model: String,
    /// Its seed.
    pub seed: u64,
    /// The training images it saw.
    pub images: usize,
    /// Its parameters.
    pub parameters: usize,
    /// Its accuracy on the 500 test images.
    pub accuracy: f64,
}

/// The columns of `ch18-accuracy.tsv`.
pub const COLUMNS: &str = "model\tseed\timages\tparameters\taccuracy";

impl Trained {
    /// Its line of `ch18-accuracy.tsv`.
    pub fn line(&self) -> String {
        let Trained { model, seed, images, parameters, accuracy } = self;
        format!("{model}\t{seed}\t{images}\t{parameters}\t{accuracy}")
    }
}

/// Every model of `ch18-accuracy.tsv`, and where it comes from.
pub fn trained() -> Result<(Vec<Trained>, Provenance), ReportError> {
    let file = "ch18-accuracy.tsv";
    let (source, text) = Provenance::read(file)?;
    let bad = |reason: String| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{reason}; `cargo xtask train vision` writes it again"),
    };
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let [model, seed, images, parameters, accuracy] = f[..] else {
            return Err(bad(format!("{line:?} is not five fields")));
        };
        let number = |x: &str| x.parse::<f64>().map_err(|e| bad(format!("{x:?}: {e}")));
        out.push(Trained {
            model: model.to_string(),
            seed: number(seed)? as u64,
            images: number(images)? as usize,
            parameters: number(parameters)? as usize,
            accuracy: number(accuracy)?,
        });
    }
    Ok((out, source))
}

/// What one trained ViT's heads look at, over the test split: the mean
/// over images of Spearman's correlation between occlusion (how far each
/// patch's blanking lowers the predicted digit's logit) and the last
/// block's `[CLS]` attention (heads' mean), and between occlusion and
/// rollout; and the mean cosine similarity of the position vectors of
/// patches side by side (sharing an edge) and of the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    /// Its seed.
    pub seed: u64,
    /// Mean correlation of the last block's `[CLS]` attention with occlusion.
    pub attention: f64,
    /// Mean correlation of rollout with occlusion.
    pub rollout: f64,
    /// Mean similarity of neighbouring patches' positions.
    pub neighbours: f64,
    /// Mean similarity of the other pairs of distinct patches.
    pub others: f64,
}

/// The columns of `ch18-explain.tsv`.
pub const EXPLAIN_COLUMNS: &str = "seed\tattention\trollout\tneighbours\tothers";

impl Explained {
    /// Measures `model` (of seed `seed`) on the images `test` of `digits`.
    pub fn measure(
        model: &attn::vision::Vit<f32>,
        digits: &attn::vision::Digits,
        test: std::ops::Range<usize>,
        seed: u64,
    ) -> Result<Explained, attn::AttnError> {
        use attn::vision::{occlusion, position_similarity, rank_correlation, rollout};
        let c = model.config();
        let (mut attention, mut rolled) = (0.0, 0.0);
        for i in test.clone() {
            let image = *digits.image(i)?;
            let fwd = model.forward(&[image])?;
            let logits = fwd.logits().row(0);
            let class = (0..logits.len()).fold(0, |b, k| if logits[k] > logits[b] { k } else { b });
            let drop = occlusion(model, &image, class)?;
            let last = attn::vision::mean_heads(model, &fwd, c.layers - 1, 0)?;
            let raw: Vec<f64> = last.row(0).iter().skip(1).copied().collect();
            attention += rank_correlation(&raw, &drop)?;
            rolled += rank_correlation(&rollout(model, &fwd, 0)?, &drop)?;
        }
        let s = position_similarity(model)?;
        let g = c.grid();
        let (mut near, mut far) = (Vec::new(), Vec::new());
        for i in 0..c.patches() {
            for j in (0..c.patches()).filter(|&j| j != i) {
                let (dr, dc) = ((i / g).abs_diff(j / g), (i % g).abs_diff(j % g));
                if dr + dc == 1 {
                    near.push(s[[i, j]])
                } else {
                    far.push(s[[i, j]])
                }
            }
        }
        let n = test.len() as f64;
        Ok(Explained {
            seed,
            attention: attention / n,
            rollout: rolled / n,
            neighbours: crate::measurements::mean(&near),
            others: crate::measurements::mean(&far),
        })
    }

    /// Its line of `ch18-explain.tsv`.
    pub fn line(&self) -> String {
        let Explained { seed, attention, rollout, neighbours, others } = self;
        format!("{seed}\t{attention}\t{rollout}\t{neighbours}\t{others}")
    }
}

/// Every seed's line of `ch18-explain.tsv`, and where it comes from.
pub fn explained() -> Result<(Vec<Explained>, Provenance), ReportError> {
    let file = "ch18-explain.tsv";
    let (source, text) = Provenance::read(file)?;
    let bad = |reason: String| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{reason}; `cargo xtask train vision` writes it again"),
    };
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<f64> = line
            .split('\t')
            .map(|x| x.parse().map_err(|e| bad(format!("{x:?}: {e}"))))
            .collect::<Result<_, _>>()?;
        let [seed, attention, rollout, neighbours, others] = f[..] else {
            return Err(bad(format!("{line:?} is not five fields")));
        };
        out.push(Explained { seed: seed as u64, attention, rollout, neighbours, others });
    }
    Ok((out, source))
}
