//! Chapter 20, attention on images: the models the chapter compares, and
//! the readers of what `cargo xtask train vision` writes to `book/data/`.

use attn::vision::{PatchPositions, Perceptron, VitConfig, VitTraining, DIGITS_TRAINING};

use crate::error::ReportError;
use crate::provenance::Provenance;

/// The test images `book/data/ch20-digits.tsv` keeps for the figures.
pub const FIGURE_DIGITS: usize = 6;

/// The error for a damaged `book/data/FILE` of this chapter.
fn damaged(file: &str, reason: String) -> ReportError {
    ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{reason}; `cargo xtask train vision` writes it again"),
    }
}

/// The lines of `book/data/FILE` after its header (and, with `columns`,
/// after its line of column names), and where it comes from.
fn data_lines(file: &str, columns: bool) -> Result<(Vec<String>, Provenance), ReportError> {
    let (source, text) = Provenance::read(file)?;
    let lines = text.lines().filter(|l| !l.starts_with('#')).skip(usize::from(columns));
    Ok((lines.map(str::to_string).collect(), source))
}

/// The labels and pixels of `ch20-digits.tsv`: the first test images.
pub fn figure_digits() -> Result<Vec<(u8, [u8; attn::vision::PIXELS])>, ReportError> {
    let file = "ch20-digits.tsv";
    let bad = |reason: String| damaged(file, reason);
    let mut out = Vec::new();
    for line in data_lines(file, false)?.0 {
        let (label, pixels) = line.split_once('\t').ok_or_else(|| bad(format!("{line:?}")))?;
        let number = |x: &str| x.parse::<u8>().map_err(|e| bad(format!("{x:?}: {e}")));
        let values: Vec<u8> = pixels.split(' ').map(number).collect::<Result<_, _>>()?;
        let image = values.try_into().map_err(|_| bad(format!("{line:?} is not 64 pixels")))?;
        out.push((number(label)?, image));
    }
    Ok(out)
}

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

/// The columns of `ch20-accuracy.tsv`.
pub const COLUMNS: &str = "model\tseed\timages\tparameters\taccuracy";

impl Trained {
    /// Its line of `ch20-accuracy.tsv`.
    pub fn line(&self) -> String {
        let Trained { model, seed, images, parameters, accuracy } = self;
        format!("{model}\t{seed}\t{images}\t{parameters}\t{accuracy}")
    }
}

/// Every model of `ch20-accuracy.tsv`, and where it comes from.
pub fn trained() -> Result<(Vec<Trained>, Provenance), ReportError> {
    let file = "ch20-accuracy.tsv";
    let bad = |reason: String| damaged(file, reason);
    let (lines, source) = data_lines(file, true)?;
    let mut out = Vec::new();
    for line in lines {
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

/// The columns of `ch20-explain.tsv`.
pub const EXPLAIN_COLUMNS: &str = "seed\tattention\trollout\tneighbours\tothers";

impl Explained {
    /// Measures `model` (of seed `seed`) on the images `test` of `digits`.
    pub fn measure(
        model: &attn::vision::Vit<f32>,
        digits: &attn::vision::Digits,
        test: std::ops::Range<usize>,
        seed: u64,
    ) -> Result<Explained, attn::AttnError> {
        use attn::vision::{occlusion, rank_correlation, rollout};
        let c = model.config();
        let (mut attention, mut rolled) = (0.0, 0.0);
        for i in test.clone() {
            let image = *digits.image(i)?;
            let fwd = model.forward(&[image])?;
            let class = attn::lm::greedy(&fwd.logits().row(0).to_vec())?;
            let drop = occlusion(model, &image, class)?;
            let last = attn::vision::mean_heads(model, &fwd, c.layers - 1, 0)?;
            let raw: Vec<f64> = last.row(0).iter().skip(1).copied().collect();
            attention += rank_correlation(&raw, &drop)?;
            rolled += rank_correlation(&rollout(model, &fwd, 0)?, &drop)?;
        }
        let (neighbours, others) = neighbour_similarity(model)?;
        let n = test.len() as f64;
        Ok(Explained { seed, attention: attention / n, rollout: rolled / n, neighbours, others })
    }

    /// Its line of `ch20-explain.tsv`.
    pub fn line(&self) -> String {
        let Explained { seed, attention, rollout, neighbours, others } = self;
        format!("{seed}\t{attention}\t{rollout}\t{neighbours}\t{others}")
    }
}

/// The mean cosine similarity of the position vectors of patches side by
/// side (sharing an edge), and of the other pairs of distinct patches.
pub fn neighbour_similarity(model: &attn::vision::Vit<f32>) -> Result<(f64, f64), attn::AttnError> {
    let c = model.config();
    let s = attn::vision::position_similarity(model)?;
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
    Ok((crate::measurements::mean(&near), crate::measurements::mean(&far)))
}

/// Every seed's line of `ch20-explain.tsv`, and where it comes from.
pub fn explained() -> Result<(Vec<Explained>, Provenance), ReportError> {
    let file = "ch20-explain.tsv";
    let bad = |reason: String| damaged(file, reason);
    let (lines, source) = data_lines(file, true)?;
    let mut out = Vec::new();
    for line in lines {
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

/// The mean, lowest and highest test accuracy of `model` over its seeds
/// on `images` training images; `None` if no run has them.
pub fn summary(trained: &[Trained], model: &str, images: usize) -> Option<(f64, f64, f64)> {
    let values: Vec<f64> = trained
        .iter()
        .filter(|t| t.model == model && t.images == images)
        .map(|t| t.accuracy)
        .collect();
    if values.is_empty() {
        return None;
    }
    let (lo, hi) = crate::ch17::range(&values);
    Some((crate::measurements::mean(&values), lo, hi))
}

/// The models trained on every training image, in the table's order.
pub fn models_in_order() -> Vec<String> {
    let mut out: Vec<String> = vits().iter().map(vit_name).collect();
    out.extend(["perceptron".to_string(), "linear".to_string()]);
    out
}

/// A model's name as the chapter's tables write it.
pub fn described(model: &str) -> String {
    let parts: Vec<&str> = model.split('-').collect();
    match parts[..] {
        ["vit", patch, positions] => {
            let positions = match positions {
                "learned" => "learned positions",
                "row_column" => "row + column",
                _ => "no positions",
            };
            format!("ViT {patch}×{patch} patches, {positions}")
        }
        ["perceptron"] => "MLP, one hidden layer".to_string(),
        _ => model.to_string(),
    }
}

/// The accuracy of every model on the whole training split: mean, lowest
/// and highest of its seeds, in percent.
pub fn accuracy_table(trained: &[Trained]) -> String {
    let all = attn::vision::TRAINING_IMAGES;
    let mut out = format!(
        "{:<36} {:>10} {:>6} {:>6} {:>6}\n",
        "model", "parameters", "mean", "lowest", "highest"
    );
    for model in models_in_order() {
        let Some((mean, lo, hi)) = summary(trained, &model, all) else { continue };
        let parameters = trained.iter().find(|t| t.model == model).map_or(0, |t| t.parameters);
        out.push_str(&format!(
            "{:<36} {:>10} {:>6.1} {:>6.1} {:>7.1}\n",
            described(&model),
            parameters,
            100.0 * mean,
            100.0 * lo,
            100.0 * hi
        ));
    }
    out.trim_end().to_string()
}

/// Accuracy against training images for the chapter's ViT and the
/// perceptron: mean (lowest–highest) of the seeds, in percent.
pub fn data_size_table(trained: &[Trained]) -> String {
    let vit = vit_name(&CHAPTER_VIT);
    let mut out = format!("{:>6}  {:>18}  {:>18}\n", "images", "ViT 2×2, learned", "MLP");
    let cell = |model: &str, n: usize| {
        summary(trained, model, n).map_or("-".to_string(), |(m, lo, hi)| {
            format!("{:.1} ({:.1}–{:.1})", 100.0 * m, 100.0 * lo, 100.0 * hi)
        })
    };
    for n in TRAINING_SIZES {
        out.push_str(&format!("{n:>6}  {:>18}  {:>18}\n", cell(&vit, n), cell("perceptron", n)));
    }
    out.trim_end().to_string()
}

/// What the chapter's ViTs look at, seed by seed, and the mean: the mean
/// correlations of attention and of rollout with occlusion.
pub fn explain_table(explained: &[Explained]) -> String {
    seed_table(explained, ["attention ~ occlusion", "rollout ~ occlusion"], |e| {
        [e.attention, e.rollout]
    })
}

/// The positions of the chapter's ViTs, seed by seed, and the mean: the
/// mean cosine similarity of neighbours' position vectors and of others'.
pub fn positions_table(explained: &[Explained]) -> String {
    seed_table(explained, ["neighbours' cosine", "others'"], |e| [e.neighbours, e.others])
}

/// Two columns of `explained` by seed, and their means.
fn seed_table(
    explained: &[Explained],
    names: [&str; 2],
    columns: fn(&Explained) -> [f64; 2],
) -> String {
    let mut out = format!("{:>5}  {:>22}  {:>20}\n", "seed", names[0], names[1]);
    let row = |name: String, v: [f64; 2]| format!("{name:>5}  {:>22.2}  {:>20.2}\n", v[0], v[1]);
    for e in explained {
        out.push_str(&row(e.seed.to_string(), columns(e)));
    }
    let mean = |k: usize| {
        crate::measurements::mean(&explained.iter().map(|e| columns(e)[k]).collect::<Vec<_>>())
    };
    out.push_str(&row("mean".into(), [mean(0), mean(1)]));
    out.trim_end().to_string()
}

/// The probability `model` gives each digit for each image of `digits`
/// (label, pixels): the softmax of its logits, a row an image.
pub fn probabilities(
    model: &attn::vision::Vit<f32>,
    digits: &[(u8, [u8; attn::vision::PIXELS])],
) -> Result<ndarray::Array2<f32>, ReportError> {
    let images: Vec<[u8; attn::vision::PIXELS]> = digits.iter().map(|d| d.1).collect();
    Ok(attn::softmax::softmax_rows(model.forward(&images)?.logits())?)
}

/// [`probabilities`] as a table, a row an image, its label first.
pub fn probabilities_table(
    model: &attn::vision::Vit<f32>,
    digits: &[(u8, [u8; attn::vision::PIXELS])],
) -> Result<String, ReportError> {
    let classes = attn::vision::CLASSES;
    let mut out =
        format!("label  {}\n", (0..classes).map(|k| format!("{k:>5}")).collect::<String>());
    for ((label, _), p) in digits.iter().zip(probabilities(model, digits)?.rows()) {
        let cells: String = p.iter().map(|x| format!("{x:>5.2}")).collect();
        out.push_str(&format!("{label:>5}  {cells}\n"));
    }
    Ok(out.trim_end().to_string())
}

/// The chapter's ViT, from `book/data/ch20-vit-weights.safetensors`.
pub fn chapter_model() -> Result<attn::vision::Vit<f32>, ReportError> {
    let path = crate::root().join("book/data/ch20-vit-weights.safetensors");
    let bytes =
        std::fs::read(&path).map_err(|e| damaged("ch20-vit-weights.safetensors", e.to_string()))?;
    Ok(attn::vision::Vit::from_safetensors(&bytes)?)
}

/// The positive control of the positions' measure: untrained ViTs of the
/// chapter's sizes with row + column positions (neighbours share a row or
/// a column vector by construction), one per seed.
pub fn control_table() -> Result<String, ReportError> {
    let config = VitConfig { positions: PatchPositions::RowColumn, ..CHAPTER_VIT };
    let mut out = format!("{:>5}  {:>22}  {:>20}\n", "seed", "neighbours' cosine", "others'");
    for seed in SEEDS {
        let (near, far) = neighbour_similarity(&attn::vision::Vit::new(config, seed)?)?;
        out.push_str(&format!("{seed:>5}  {near:>22.2}  {far:>20.2}\n"));
    }
    Ok(out.trim_end().to_string())
}

/// The chapter's ViT against PyTorch's (`tests/golden/vit.txt`, written
/// by `tools/vit_reference.py`): the largest difference in the logits and
/// in any head's weights, and in the logits of two broken copies, the
/// positions added twice (the table doubled) and a `[CLS]` vector of zeros.
pub fn pytorch_gaps() -> Result<[f64; 4], ReportError> {
    use attn::nn::Parameters;
    let golden = crate::golden::load("vit.txt");
    let images: Vec<[u8; attn::vision::PIXELS]> =
        golden["pixels"].rows().into_iter().map(|r| std::array::from_fn(|i| r[i] as u8)).collect();
    // The largest difference; infinite where the shapes differ.
    let gap = |ours: &ndarray::ArrayRef2<f32>, theirs: &ndarray::Array2<f32>| {
        if ours.dim() != theirs.dim() {
            return f64::INFINITY;
        }
        ours.iter().zip(theirs).map(|(a, b)| f64::from((a - b).abs())).fold(0.0, f64::max)
    };
    let model = chapter_model()?;
    let logit_gap = |m: &attn::vision::Vit<f32>| -> Result<f64, ReportError> {
        Ok(gap(m.forward(&images)?.logits(), &golden["logits"]))
    };
    let edited = |name: &str, change: fn(&mut f32)| {
        let mut m = model.clone();
        if let Some(t) = m.named_slices().iter().position(|(n, _)| n == name) {
            m.slices_mut()[t].iter_mut().for_each(change);
        }
        m
    };
    let c = model.config();
    let fwd = model.forward(&images)?;
    let mut weights: f64 = 0.0;
    for block in 0..c.layers {
        for i in 0..images.len() {
            for head in 0..c.heads {
                let name = format!("weights_block{block}_image{i}_head{head}");
                weights = weights.max(gap(fwd.weights(block, i, head)?, &golden[&name]));
            }
        }
    }
    Ok([
        logit_gap(&model)?,
        weights,
        logit_gap(&edited("positions", |x| *x *= 2.0))?,
        logit_gap(&edited("cls", |x| *x = 0.0))?,
    ])
}
