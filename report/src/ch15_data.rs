//! Chapter 15's data files in `book/data/`: derived once from the model by
//! [`derive()`] (`cargo xtask model --data`), committed, and read back by
//! [`Derived::read`], so that the chapter's example, its figures and its
//! numbers test need no model. A test derives them again and compares.

use crate::error::ReportError;
use std::path::{Path, PathBuf};

use ndarray::Array3;

use super::ch15::{tokenize_all, Corpus, FIGURE_SENTENCE, TOKENIZER_EXAMPLES};
use super::measurements::{bad, data_rows, number};
use super::provenance::{one_run, Provenance};
use attn::pretrained::{
    ablations, embeddings, head_statistics, pair_similarities, unrelated_similarities, Ablation,
    HeadStatistics,
};
use attn::pretrained::{tensor_shapes, Bert, Tokens, WordPiece};

/// [`attn::pretrained::head_statistics`] of every head in every layer, averaged over the
/// `sentences`: `result[layer][head]`.
pub fn corpus_statistics(
    bert: &Bert,
    sentences: &[Tokens],
) -> Result<Vec<Vec<HeadStatistics>>, ReportError> {
    let (layers, h) = (bert.layers().len(), bert.h());
    let mut sums = vec![vec![HeadStatistics::default(); h]; layers];
    for tokens in sentences {
        let encoded = bert.encode(&tokens.ids)?;
        for (layer, weights) in encoded.weights.iter().enumerate() {
            for (head, w) in weights.outer_iter().enumerate() {
                let s = head_statistics(&w)?;
                let sum = &mut sums[layer][head];
                sum.entropy += s.entropy;
                sum.cls += s.cls;
                sum.sep += s.sep;
                sum.previous += s.previous;
                sum.next += s.next;
            }
        }
    }
    let count = sentences.len() as f64;
    for s in sums.iter_mut().flatten() {
        *s = HeadStatistics {
            entropy: s.entropy / count,
            cls: s.cls / count,
            sep: s.sep / count,
            previous: s.previous / count,
            next: s.next / count,
        };
    }
    Ok(sums)
}

/// The derived files, in the order [`derive()`] returns them.
pub const FILES: [&str; 5] = [
    "ch15-tensors.tsv",
    "ch15-tokens.tsv",
    "ch15-attention.tsv",
    "ch15-heads.tsv",
    "ch15-similarity.tsv",
];

/// Everything chapter 15 quotes or draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// Every tensor of the file: name, type, shape.
    pub tensors: Vec<(String, String, Vec<usize>)>,
    /// What [`Bert::parameter_count`] counts.
    pub parameters: usize,
    /// The `ε` of the model's LayerNorms.
    pub layer_norm_eps: f32,
    /// Sentences and their tokens: the tokenizer's examples, the figure's
    /// sentence, then the corpus.
    pub tokens: Vec<(String, Tokens)>,
    /// The figure sentence's weights, per layer `h×n×n`.
    pub attention: Vec<Array3<f32>>,
    /// Per layer and head: what it attends to, and what removing it does.
    pub heads: Vec<Vec<(HeadStatistics, Ablation)>>,
    /// Per pair: the paraphrases' similarity, and the first sentence's with
    /// the next pair's second.
    pub similarity: Vec<(f32, f32)>,
}

/// The directory of the data files.
pub fn data_dir() -> PathBuf {
    crate::root().join("book/data")
}

/// Computes every file's text from the model in `model` (a few minutes in a
/// debug build).
pub fn derive(model: &Path) -> Result<Vec<String>, ReportError> {
    let bert = Bert::load(model)?;
    let wordpiece = WordPiece::load(model)?;
    let corpus = Corpus::read()?;
    let mut sentences: Vec<&str> = TOKENIZER_EXAMPLES.to_vec();
    sentences.push(FIGURE_SENTENCE);
    sentences.extend(corpus.sentences());
    let tokens = tokenize_all(&wordpiece, &sentences)?;
    let corpus_tokens = &tokens[TOKENIZER_EXAMPLES.len() + 1..];
    let paraphrases = &corpus_tokens[..2 * corpus.pairs.len()];

    let mut tensors = String::new();
    for t in tensor_shapes(model)? {
        let shape: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        tensors += &format!("{}\t{}\t{}\n", t.name, t.dtype, shape.join("x"));
    }
    tensors += &format!("# Bert::parameter_count\t{}\n", bert.parameter_count());
    let eps = bert.layers().first().map_or(0.0, |l| l.layer_norms()[0].parameters().2);
    tensors += &format!("# LayerNorm ε\t{eps:e}\n");

    let mut token_rows = String::new();
    for (sentence, t) in sentences.iter().zip(&tokens) {
        let ids: Vec<String> = t.ids.iter().map(u32::to_string).collect();
        token_rows += &format!("{sentence}\t{}\t{}\n", t.tokens.join(" "), ids.join(" "));
    }

    let mut attention = String::new();
    let figure = bert.encode(&tokens[TOKENIZER_EXAMPLES.len()].ids)?;
    for (layer, weights) in figure.weights.iter().enumerate() {
        for (head, w) in weights.outer_iter().enumerate() {
            for (query, row) in w.rows().into_iter().enumerate() {
                let values: Vec<String> = row.iter().map(|x| format!("{x:.4}")).collect();
                attention += &format!("{layer}\t{head}\t{query}\t{}\n", values.join("\t"));
            }
        }
    }

    let statistics = corpus_statistics(&bert, corpus_tokens)?;
    let ablated = ablations(&bert, paraphrases)?;
    let mut heads = String::new();
    for (layer, (s_row, a_row)) in statistics.iter().zip(&ablated).enumerate() {
        for (head, (s, a)) in s_row.iter().zip(a_row).enumerate() {
            heads += &format!(
                "{layer}\t{head}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{:.6}\t{:.6}\n",
                s.entropy, s.cls, s.sep, s.previous, s.next, a.shift, a.similarity_change
            );
        }
    }

    let e = embeddings(&bert, paraphrases)?;
    let mut similarity = String::new();
    let pairs = pair_similarities(&e)?.into_iter().zip(unrelated_similarities(&e)?);
    for (i, (same, unrelated)) in pairs.enumerate() {
        similarity += &format!("{i}\t{same:.4}\t{unrelated:.4}\n");
    }

    let header = super::provenance::header(
        "exact",
        "derived from all-MiniLM-L6-v2 by `cargo xtask model --data`",
    );
    let head = |columns: &str, body: String| format!("{header}\n{columns}\n{body}");
    Ok(vec![
        head("name\tdtype\tshape", tensors),
        head("sentence\ttokens\tids", token_rows),
        head("layer\thead\tquery\tweights…", attention),
        head("layer\thead\tentropy\tcls\tsep\tprevious\tnext\tshift\tsimilarity_change", heads),
        head("pair\tparaphrase\tunrelated", similarity),
    ])
}

/// The sentences per second of the crate (`ch15-speed.tsv`) and of PyTorch
/// (`ch15-speed-pytorch.tsv`), measured in one run with one statistic
/// (checked), and the two files' headers.
#[derive(Debug, Clone)]
pub struct Speeds {
    /// The crate's sentence embeddings per second.
    pub ours: f64,
    /// PyTorch's.
    pub pytorch: f64,
    /// The headers of the two files.
    pub sources: [Provenance; 2],
}

/// Reads both speed files and checks they are one run.
pub fn read_speeds() -> Result<Speeds, ReportError> {
    let speed = |file: &str| -> Result<(f64, Provenance), ReportError> {
        let (source, text) = Provenance::read(file)?;
        let row = rows(&text).next().ok_or_else(|| bad(file, "no measurement"))?;
        Ok((number(file, row.get(1).copied().unwrap_or(""))?, source))
    };
    let ((ours, a), (pytorch, b)) = (speed("ch15-speed.tsv")?, speed("ch15-speed-pytorch.tsv")?);
    one_run(&[&a, &b])?;
    Ok(Speeds { ours, pytorch, sources: [a, b] })
}

/// The data rows of a tab-separated file's text.
fn rows(text: &str) -> impl Iterator<Item = Vec<&str>> {
    data_rows(text, '\t')
}

impl Derived {
    /// Reads the committed files from `book/data/`.
    pub fn read() -> Result<Derived, ReportError> {
        let text =
            |file: &str| std::fs::read_to_string(data_dir().join(file)).map_err(|e| bad(file, e));
        let [tensors, tokens, attention, heads, similarity] = FILES.map(text);
        Derived::parse(&[tensors?, tokens?, attention?, heads?, similarity?])
    }

    /// Parses the files' texts, in the order of [`FILES`].
    pub fn parse(texts: &[String]) -> Result<Derived, ReportError> {
        let [tensors_text, tokens_text, attention_text, heads_text, similarity_text] = texts else {
            return Err(bad("ch15-*", "expected five files"));
        };
        let f = FILES;
        let mut tensors = Vec::new();
        for r in rows(tensors_text) {
            let shape: Result<Vec<usize>, _> = r[2].split('x').map(|d| number(f[0], d)).collect();
            tensors.push((r[0].to_string(), r[1].to_string(), shape?));
        }
        let parameters = tensors_text
            .lines()
            .find_map(|l| l.strip_prefix("# Bert::parameter_count\t"))
            .ok_or_else(|| bad(f[0], "no parameter count"))?;
        let parameters = number(f[0], parameters)?;
        let eps = tensors_text
            .lines()
            .find_map(|l| l.strip_prefix("# LayerNorm ε\t"))
            .ok_or_else(|| bad(f[0], "no LayerNorm ε"))?;
        let layer_norm_eps = number(f[0], eps)?;

        let mut tokens = Vec::new();
        for r in rows(tokens_text) {
            let ids: Result<Vec<u32>, _> = r[2].split(' ').map(|i| number(f[1], i)).collect();
            let t = Tokens { tokens: r[1].split(' ').map(String::from).collect(), ids: ids? };
            tokens.push((r[0].to_string(), t));
        }

        let n = tokens
            .get(TOKENIZER_EXAMPLES.len())
            .map(|(_, t)| t.ids.len())
            .ok_or_else(|| bad(f[1], "no figure sentence"))?;
        let h = 1 + rows(attention_text)
            .map(|r| number::<usize>(f[2], r[1]))
            .try_fold(0, |max, head| head.map(|head| max.max(head)))?;
        let mut attention: Vec<Array3<f32>> = Vec::new();
        for r in rows(attention_text) {
            let [layer, head, query]: [usize; 3] =
                [number(f[2], r[0])?, number(f[2], r[1])?, number(f[2], r[2])?];
            if attention.len() <= layer {
                attention.push(Array3::zeros((h, n, n)));
            }
            for (key, value) in r[3..].iter().enumerate() {
                attention[layer][[head, query, key]] = number(f[2], value)?;
            }
        }

        let mut heads: Vec<Vec<(HeadStatistics, Ablation)>> = Vec::new();
        for r in rows(heads_text) {
            let v: Result<Vec<f64>, _> = r.iter().map(|x| number(f[3], x)).collect();
            let v = v?;
            let layer = v[0] as usize;
            if heads.len() <= layer {
                heads.push(Vec::new());
            }
            let s =
                HeadStatistics { entropy: v[2], cls: v[3], sep: v[4], previous: v[5], next: v[6] };
            let a = Ablation { shift: v[7], similarity_change: v[8] };
            heads[layer].push((s, a));
        }

        let mut similarity = Vec::new();
        for r in rows(similarity_text) {
            similarity.push((number(f[4], r[1])?, number(f[4], r[2])?));
        }
        Ok(Derived { tensors, parameters, layer_norm_eps, tokens, attention, heads, similarity })
    }
}
