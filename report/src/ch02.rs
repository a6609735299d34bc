//! Chapter 2's inputs that the example prints and the text quotes.

/// The logits of the overflow demonstration: one huge, one hugely negative.
pub const OVERFLOW_LOGITS: [f32; 3] = [1000.0, -1000.0, 0.0];

/// The shift of exercise 3, past `ln(f32::MAX)` ≈ 88.72, which the naive
/// softmax cannot survive.
pub const EXERCISE_SHIFT: f32 = 100.0;

/// The line the introduction's first figure reads: the first line of
/// Shakespeare's Sonnet 18.
pub const VERSE_LINE: &str = "Shall I compare thee to a summer's day?";

/// One head of chapter 16's trained language model (seed 1's weights) on
/// [`VERSE_LINE`]: the introduction's first picture of what attention
/// becomes once it is trained.
pub struct TrainedHead {
    /// The block, from 0: that of seed 1's strongest previous-token head
    /// (chapter 16's Figure 16.5).
    pub block: usize,
    /// The head, from 0.
    pub head: usize,
    /// Its weights on the line: row `i` is character `i` attending, column
    /// `j` character `j` attended to.
    pub weights: ndarray::Array2<f32>,
}

impl TrainedHead {
    /// The mean weight a character puts on the character before it, over
    /// every character but the first (which has none).
    pub fn previous(&self) -> f64 {
        let n = self.weights.nrows();
        let sum: f64 = (1..n).map(|i| f64::from(self.weights[[i, i - 1]])).sum();
        sum / (n - 1).max(1) as f64
    }

    /// How many characters, of those with one before them, put their
    /// largest weight on it.
    pub fn previous_largest(&self) -> usize {
        (1..self.weights.nrows())
            .filter(|&i| {
                let row = self.weights.row(i);
                row.iter().all(|&w| w <= row[i - 1])
            })
            .count()
    }

    /// The largest weight any character puts on a later one: 0, since the
    /// model is causal (chapter 6's mask).
    pub fn ahead(&self) -> f32 {
        let n = self.weights.nrows();
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|ij| self.weights[ij])
            .fold(0.0, f32::max)
    }
}

/// [`TrainedHead`], from the committed weights and head log of chapter 16
/// (`book/data/ch16-*`).
pub fn trained_head() -> Result<TrainedHead, crate::error::ReportError> {
    let model = crate::ch16::book_model()?;
    let heads = crate::ch16::head_log()?;
    let [previous, _] = crate::ch16_report::figure_heads(&heads);
    let (block, head) = (previous.block, previous.head);
    let tokens = crate::ch16::vocabulary().encode(VERSE_LINE)?;
    let forward = model.forward(&[tokens])?;
    Ok(TrainedHead { block, head, weights: forward.weights(block, 0, head)?.to_owned() })
}
