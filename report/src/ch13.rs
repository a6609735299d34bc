//! Chapter 13's measurements and printed reports on the trained
//! encoder–decoders: how alignment-like each
//! cross-attention head is, and where beam search changes a translation.
//! Each report formats values the caller computed once (the example prints
//! them, the numbers test quotes them and checks the same values).

use crate::error::ReportError;
use crate::show::table;
use attn::grad::Matrix;
use attn::translation::{
    alignment, batch, corpus_bleu, number_pair, number_words, score, translate_all, Seq2Seq,
    TranslationPair, TARGET_VOCAB,
};

/// The committed seed sweep, `book/data/ch13-seeds.csv`: `(seed, held-out
/// exact accuracy, the best head's alignment score)` per run.
pub fn seeds() -> Result<Vec<(u64, f64, f64)>, ReportError> {
    let file = "ch13-seeds.csv";
    let rows = crate::measurements::numeric_rows(file)?;
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [Some(seed), Some(exact), Some(head)] => Ok((*seed as u64, *exact, *head)),
            _ => {
                Err(crate::measurements::bad(file, format!("a row {r:?} of other than 3 numbers")))
            }
        })
        .collect()
}

/// The committed training curves, `book/data/ch13-training.csv`: each row
/// `[step, loss of each model]`.
pub fn training_curves() -> Result<Vec<Vec<f64>>, ReportError> {
    let file = "ch13-training.csv";
    let rows = crate::measurements::numeric_rows(file)?;
    rows.into_iter()
        .map(|r| r.into_iter().collect::<Option<Vec<f64>>>())
        .map(|r| r.ok_or_else(|| crate::measurements::bad(file, "an empty field")))
        .collect()
}

/// A target as the book prints it: its digits, space-separated.
pub fn digits(target: &[usize]) -> String {
    let digit = |&t: &usize| match t {
        3..TARGET_VOCAB => (t - 3).to_string(),
        _ => "?".into(),
    };
    target.iter().map(digit).collect::<Vec<_>>().join(" ")
}

/// A pair's axis labels in the figures: its words (the keys), and the
/// digits each decoder position predicts, then `EOS` (the queries).
pub fn pair_labels(pair: &TranslationPair) -> Result<(Vec<String>, Vec<String>), ReportError> {
    let words = number_words(pair.number)?.iter().map(|w| w.to_string()).collect();
    let mut rows: Vec<String> = digits(&pair.target).split(' ').map(String::from).collect();
    rows.push("EOS".into());
    Ok((words, rows))
}

/// A small panel of a grid of cross-attention maps: digits (rows) by
/// source words.
pub fn digit_panel<'a>(
    title: &'a str,
    rows: &'a [&'a str],
    words: &'a [&'a str],
) -> crate::plot::Heatmap<'a> {
    crate::plot::Heatmap {
        title,
        row_labels: rows,
        col_labels: words,
        x_desc: "source word",
        y_desc: "digit predicted",
        value_desc: "attention weight",
        range: (0.0, 1.0),
        annotate: None,
    }
}

/// The task's examples: each number, its words, its digits, and the word
/// each digit translates (`–`: none).
pub fn examples_report(numbers: &[u32]) -> Result<String, ReportError> {
    let mut rows = Vec::new();
    for &x in numbers {
        let words = number_words(x)?;
        let from: Vec<&str> = alignment(x)?.iter().map(|a| a.map_or("–", |j| words[j])).collect();
        rows.push(vec![words.join(" "), digits(&number_pair(x)?.target), from.join(", ")]);
    }
    Ok(table(&["source", "target", "each digit from"], &rows))
}

/// Chapter 13's worked BLEU example: two candidates, their references,
/// and every step of corpus BLEU.
pub fn bleu_report() -> Result<String, ReportError> {
    let candidates = [vec![3, 4, 2, 0, 5], vec![7, 0, 0]];
    let references = [vec![3, 4, 2, 0, 1, 5], vec![7, 0, 0]];
    let bleu = corpus_bleu(&candidates, &references)?;
    let mut out = String::new();
    for (c, r) in candidates.iter().zip(&references) {
        let show = |x: &[usize]| x.iter().map(usize::to_string).collect::<Vec<_>>().join(" ");
        out += &format!("candidate {:<10} reference {}\n", show(c), show(r));
    }
    let fractions: Vec<String> =
        bleu.counts.iter().map(|(matched, total)| format!("{matched}/{total}")).collect();
    let (candidate, reference) = bleu.lengths;
    out += &format!(
        "precisions of 1- to 4-grams: {}\nlengths: candidates {candidate}, references {reference}; \
         brevity penalty = {:.4}\nBLEU = {:.4}",
        fractions.join(", "),
        bleu.brevity_penalty,
        bleu.score
    );
    Ok(out)
}

/// The cross-attention weights of `pair`, its reference target fed to the
/// decoder (teacher forcing): `[layer][head]`, each `(digits + 1) × words`
/// (row `i` predicts digit `i`; the last row predicts EOS).
pub fn cross_attention(
    net: &Seq2Seq,
    pair: &TranslationPair,
) -> Result<Vec<Vec<Matrix>>, ReportError> {
    let fwd = net.forward(&batch(&[(&pair.source[..], &pair.target[..])])?)?;
    let c = net.config();
    (0..c.layers)
        .map(|l| (0..c.heads).map(|h| Ok(fwd.cross_weights(l, 0, h)?.clone())).collect())
        .collect()
}

/// Two guesses that know nothing of the words, scored like
/// [`attn::translation::alignment_scores`]: a random word (the expected share, the mean of
/// `1/words`), and the diagonal (digit `i` of `T` from word
/// `round(i·(S − 1)/(T − 1))` of `S`), which a language without
/// reordering would favour.
pub fn alignment_baselines(pairs: &[TranslationPair]) -> Result<(f64, f64), ReportError> {
    let (mut chance, mut diagonal, mut aligned) = (0.0, 0, 0);
    for pair in pairs {
        let gold = alignment(pair.number)?;
        let (s, t) = (pair.source.len(), gold.len());
        for (i, word) in gold.iter().enumerate() {
            if let Some(j) = *word {
                aligned += 1;
                chance += 1.0 / s as f64;
                let guess = (i * (s - 1)) as f64 / (t - 1).max(1) as f64;
                diagonal += usize::from(guess.round() as usize == j);
            }
        }
    }
    let n = aligned.max(1) as f64;
    Ok((chance / n, diagonal as f64 / n))
}

/// The alignment scores as a table (one row a decoder layer), then the
/// two baselines.
pub fn alignment_report(scores: &[Vec<f64>], (chance, diagonal): (f64, f64)) -> String {
    let heads = scores.first().map_or(0, Vec::len);
    let header: Vec<String> = std::iter::once("decoder layer".to_string())
        .chain((1..=heads).map(|h| format!("head {h}")))
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = scores
        .iter()
        .enumerate()
        .map(|(l, s)| {
            std::iter::once((l + 1).to_string())
                .chain(s.iter().map(|x| format!("{x:.3}")))
                .collect()
        })
        .collect();
    format!("{}\nrandom word {chance:.3}, diagonal {diagonal:.3}", table(&header, &rows))
}

/// The beam width chapter 13 compares with greedy decoding.
pub const BEAM: usize = 4;

/// A row of [`scores_report`]: model, beam width (1: greedy), exact, BLEU.
pub type Score = (&'static str, usize, f64, f64);

/// Translations of a set of pairs, one token list a pair.
pub type Translations = Vec<Vec<usize>>;

/// Translates `pairs` with each model at each of its beam widths and
/// scores the translations: the rows of [`scores_report`], and the
/// translations in the same order.
pub fn decode_and_score(
    models: &[(&'static str, &Seq2Seq, &[usize])],
    pairs: &[TranslationPair],
) -> Result<(Vec<Score>, Vec<Translations>), ReportError> {
    let (mut results, mut translations) = (Vec::new(), Vec::new());
    for &(name, net, widths) in models {
        for &width in widths {
            let candidates = translate_all(net, pairs, width)?;
            let (exact, bleu) = score(&candidates, pairs)?;
            results.push((name, width, exact, bleu.score));
            translations.push(candidates);
        }
    }
    Ok((results, translations))
}

/// The held-out scores: one row a model and decoding, `(model, beam
/// width, exact, BLEU)`; width 1 is greedy.
pub fn scores_report(results: &[Score]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|&(model, width, exact, bleu)| {
            let decoding = match width {
                1 => "greedy".to_string(),
                _ => format!("beam {width}"),
            };
            vec![model.to_string(), decoding, format!("{exact:.3}"), format!("{bleu:.3}")]
        })
        .collect();
    table(&["model", "decoding", "exact", "BLEU"], &rows)
}

/// One line of [`beam_changes`]: `model`'s translations with beam `width`
/// against greedy decoding.
pub fn beam_report(
    model: &str,
    width: usize,
    (differ, fixed, broken): (usize, usize, usize),
) -> String {
    format!(
        "beam {width} vs greedy, {model}: {differ} translations differ, {fixed} corrected, {broken} spoiled"
    )
}

/// Where beam search and greedy decoding disagree on `pairs`: how many
/// translations differ, how many beam search corrects, how many it spoils.
pub fn beam_changes(
    greedy: &[Vec<usize>],
    beam: &[Vec<usize>],
    pairs: &[TranslationPair],
) -> (usize, usize, usize) {
    let (mut differ, mut fixed, mut broken) = (0, 0, 0);
    for ((g, b), p) in greedy.iter().zip(beam).zip(pairs) {
        if g != b {
            differ += 1;
            fixed += usize::from(*b == p.target);
            broken += usize::from(*g == p.target);
        }
    }
    (differ, fixed, broken)
}
