//! Every chapter ends with a quiz. These tests check that each has one,
//! with an answer for each question, and recompute the quiz answers that
//! are numbers or facts about the crate's functions.

use attn::complexity::{
    attention_flops, block_crossover_length, crossover_length, feed_forward_flops, projection_flops,
};
use attn::masking::causal_mask;
use attn::multihead::{multihead_flops, MultiHeadAttention};
use attn::position::{alibi_slopes, sinusoidal};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

fn chapters() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            (name.starts_with("ch") && name.ends_with(".md"))
                .then(|| (name.clone(), std::fs::read_to_string(format!("{dir}/{name}")).unwrap()))
        })
        .collect();
    files.sort();
    files
}

/// The letter an answer opens with: `(c). The variance …` → `c`.
fn right_letter(answer: &str) -> char {
    answer.trim_start().chars().nth(1).unwrap()
}

#[test]
fn every_chapter_has_a_quiz_with_an_answer_per_question() {
    let chapters = chapters();
    // Every chapter the table of contents lists, and no other file.
    let summary = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/book/SUMMARY.md"));
    let listed = summary.unwrap().matches("](ch").count();
    assert!(listed >= 16, "SUMMARY.md lists {listed} chapters");
    assert_eq!(chapters.len(), listed, "chapter files against SUMMARY.md's chapters");
    for (name, text) in chapters {
        let quiz = text.split("## Quiz").nth(1).unwrap_or_else(|| panic!("{name} has no quiz"));
        let questions = quiz.lines().filter(|l| l.starts_with("**") && l.contains(". ")).count();
        let answers = quiz.matches("<summary>Answer</summary>").count();
        assert!(questions >= 3, "{name}: {questions} questions");
        assert_eq!(questions, answers, "{name}: every question needs an answer");
        // Each answer names one of the listed options.
        for answer in quiz.split("<summary>Answer</summary>").skip(1) {
            let letter = right_letter(answer);
            assert!("abcd".contains(letter), "{name}: answer {letter}");
        }
    }
}

/// The right option's letter is spread over the four: a reader pressing
/// options (the quizzes answer back) must not learn that "(b)" is usually
/// right. Each letter is right for between a sixth and a third of the
/// questions.
#[test]
fn right_answers_are_spread_over_the_letters() {
    let mut counts = [0usize; 4];
    for (_, text) in chapters() {
        let quiz = text.split("## Quiz").nth(1).unwrap_or_default();
        for answer in quiz.split("<summary>Answer</summary>").skip(1) {
            let letter = right_letter(answer);
            counts[(letter as u8 - b'a') as usize] += 1;
        }
    }
    let total: usize = counts.iter().sum();
    for (letter, &count) in ('a'..='d').zip(&counts) {
        assert!(
            6 * count >= total && 3 * count <= total,
            "({letter}) is right for {count} of {total} questions: {counts:?}"
        );
    }
}

/// An option's length must not give the answer away, as it does when the
/// right option is the one careful, qualified sentence among short wrong
/// ones. The right option is the longest in at most a third of the
/// questions (a quarter by chance), and in none is it more than half as
/// long again as the longest wrong option.
#[test]
fn right_answers_do_not_stand_out_by_length() {
    let (mut questions, mut longest, mut outliers) = (0, 0, Vec::new());
    for (name, text) in chapters() {
        let quiz = text.split("## Quiz").nth(1).unwrap_or_default();
        let parts: Vec<&str> = quiz.split("<summary>Answer</summary>").collect();
        for (i, pair) in parts.windows(2).enumerate() {
            let right = right_letter(pair[1]);
            let options: Vec<(char, usize)> = pair[0]
                .lines()
                .filter_map(|l| {
                    let rest = l.strip_prefix("- (")?;
                    let letter = rest.chars().next()?;
                    Some((letter, rest.chars().count() - 3))
                })
                .collect();
            let of = |wanted: bool| {
                options
                    .iter()
                    .filter(|(l, _)| (*l == right) == wanted)
                    .map(|&(_, n)| n)
                    .max()
                    .unwrap_or(0)
            };
            let (right_len, wrong_len) = (of(true), of(false));
            questions += 1;
            if right_len > wrong_len {
                longest += 1;
            }
            if 2 * right_len > 3 * wrong_len {
                outliers.push(format!("{name} question {} ({right})", i + 1));
            }
        }
    }
    assert!(
        3 * longest <= questions,
        "the right option is the longest in {longest} of {questions} questions"
    );
    assert!(
        outliers.is_empty(),
        "right options more than half as long again as every wrong one: {}",
        outliers.join(", ")
    );
}

#[test]
fn numeric_answers() {
    // Chapter 3: the standard deviation of q·k at d_k = 256 is 16.
    assert_eq!(256f64.sqrt(), 16.0);
    // Chapter 5: d_k = 512 / 8 = 64, and h does not change the FLOPs.
    let layer = MultiHeadAttention::new(512, 8, &mut StdRng::seed_from_u64(0)).unwrap();
    assert_eq!(layer.d_k(), 64);
    assert_eq!(multihead_flops(100, 100, 512, 1), multihead_flops(100, 100, 512, 8));
    // Chapter 6: the causal mask for n = 4 keeps 10 entries.
    assert_eq!(causal_mask(4, 4).iter().filter(|&&k| k).count(), 10);
    // Chapter 7: position 0 is [0, 1, 0, 1, …]; ALiBi's slopes for 8 heads.
    let pe = sinusoidal(1, 8).unwrap();
    assert_eq!(pe.row(0).to_vec(), vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
    let slopes = alibi_slopes(8).unwrap();
    assert_eq!((slopes[0], slopes[7]), (0.5, 1.0 / 256.0));
    // Chapter 8: equal FLOPs at n = 1024 for d_model = 512.
    assert_eq!(crossover_length(512), 1024.0);
    assert_eq!(projection_flops(1024, 512), attention_flops(1024, 512));
    // Chapter 8: with d_ff = 4d, a block's crossover is at 3072.
    assert_eq!(block_crossover_length(512, 2048), 3072.0);
    assert_eq!(
        projection_flops(3072, 512) + feed_forward_flops(3072, 512, 2048),
        attention_flops(3072, 512)
    );
}
