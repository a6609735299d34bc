//! Attention on images: the handwritten digits a Vision Transformer reads.
//!
//! The UCI optical recognition of handwritten digits test set (Alpaydin
//! and Kaynak, 1998): 1,797 images of 8×8 pixels, each pixel a count from
//! 0 to 16 of the dark cells of a 4×4 block of a 32×32 bitmap, labelled
//! with the digit 0 to 9, written by 13 people. scikit-learn ships it as
//! a file of comma-separated integers, one image a line, its 64 pixels row
//! by row and then its label; `cargo xtask digits` takes that file out of
//! scikit-learn's wheel into `target/digits/digits.csv`.
//!
//! The split is by position: the first [`TRAINING_IMAGES`] images train,
//! the last [`TEST_IMAGES`] test, so that any program reading the same
//! file splits it the same way.

use std::ops::Range;
use std::path::Path;

use crate::error::AttnError;

mod explain;
mod patches;
mod perceptron;
mod train;
mod vit;
mod weights;
pub use explain::{mean_heads, occlusion, position_similarity, rank_correlation, rollout};
pub use patches::patches_of;
pub use perceptron::{Perceptron, PerceptronForward};
pub use train::{accuracy, train_classifier, DigitClassifier, VitTraining, DIGITS_TRAINING};
pub use vit::{PatchPositions, Vit, VitConfig, VitForward};

/// Pixels a side.
pub const SIDE: usize = 8;
/// Pixels an image.
pub const PIXELS: usize = SIDE * SIDE;
/// The largest pixel: 16 dark cells of 16.
pub const MAX_PIXEL: u8 = 16;
/// Classes: the digits 0 to 9.
pub const CLASSES: usize = 10;
/// Images in the file.
pub const DIGIT_IMAGES: usize = 1_797;
/// Images of the test split, the file's last.
pub const TEST_IMAGES: usize = 500;
/// Images of the training split, the file's first.
pub const TRAINING_IMAGES: usize = DIGIT_IMAGES - TEST_IMAGES;

/// Where `cargo xtask digits` puts the file, relative to the repository.
pub const DIGITS_FILE: &str = "target/digits/digits.csv";

/// Labelled images of 8×8 pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digits {
    images: Vec<[u8; PIXELS]>,
    labels: Vec<u8>,
}

impl Digits {
    /// Reads the whole set from `path` (`DIGITS_FILE` as `cargo xtask
    /// digits` writes it): an error says what is missing or wrong, and
    /// what to do.
    pub fn read(path: impl AsRef<Path>) -> Result<Digits, AttnError> {
        let path = path.as_ref();
        let error = |reason: String| AttnError::Dataset {
            source: path.display().to_string(),
            reason: format!("{reason}; `cargo xtask digits` fetches it again"),
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let digits = Digits::parse(&text).map_err(|e| match e {
            AttnError::Dataset { reason, .. } => error(reason),
            other => other,
        })?;
        if digits.len() != DIGIT_IMAGES {
            let found = digits.len();
            return Err(error(format!(
                "{found} images, not {DIGIT_IMAGES}: the file is truncated or changed; delete it"
            )));
        }
        Ok(digits)
    }

    /// The images of `text`, one a line: 64 pixels from 0 to 16 and a
    /// label from 0 to 9, separated by commas. An error names the line.
    pub fn parse(text: &str) -> Result<Digits, AttnError> {
        let (mut images, mut labels) = (Vec::new(), Vec::new());
        for (i, line) in text.lines().enumerate() {
            let bad = |what: String| AttnError::Dataset {
                source: "the text".to_string(),
                reason: format!("line {}: {what}", i + 1),
            };
            let fields: Vec<&str> = line.trim().split(',').collect();
            if fields.len() != PIXELS + 1 {
                let n = fields.len();
                return Err(bad(format!("{n} fields, not {} pixels and a label", PIXELS + 1)));
            }
            let number = |field: &str, largest: u8| {
                field.trim().parse::<u8>().ok().filter(|&x| x <= largest).ok_or_else(|| {
                    bad(format!("{field:?} is not a whole number from 0 to {largest}"))
                })
            };
            let mut image = [0; PIXELS];
            for (pixel, field) in image.iter_mut().zip(&fields) {
                *pixel = number(field, MAX_PIXEL)?;
            }
            images.push(image);
            labels.push(number(fields[PIXELS], CLASSES as u8 - 1)?);
        }
        if images.is_empty() {
            let reason = "no images".to_string();
            return Err(AttnError::Dataset { source: "the text".to_string(), reason });
        }
        Ok(Digits { images, labels })
    }

    /// Images held.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Whether it holds no images (never: [`Digits::parse`] refuses none).
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Image `i`'s pixels, row by row.
    pub fn image(&self, i: usize) -> Result<&[u8; PIXELS], AttnError> {
        self.images.get(i).ok_or_else(|| self.out_of_range(i))
    }

    /// Image `i`'s label, the digit it shows.
    pub fn label(&self, i: usize) -> Result<u8, AttnError> {
        self.labels.get(i).copied().ok_or_else(|| self.out_of_range(i))
    }

    /// The training images and the test images, by position: all but the
    /// last [`TEST_IMAGES`], and those (for a set of fewer, the last
    /// quarter tests).
    pub fn split(&self) -> (Range<usize>, Range<usize>) {
        let test = if self.len() == DIGIT_IMAGES { TEST_IMAGES } else { self.len() / 4 };
        let first_test = self.len() - test;
        (0..first_test, first_test..self.len())
    }

    /// How many images of `range` show each digit.
    pub fn class_counts(&self, range: Range<usize>) -> Result<[usize; CLASSES], AttnError> {
        let labels = self.labels.get(range.clone()).ok_or_else(|| self.out_of_range(range.end))?;
        let mut counts = [0; CLASSES];
        labels.iter().for_each(|&l| counts[usize::from(l)] += 1);
        Ok(counts)
    }

    fn out_of_range(&self, i: usize) -> AttnError {
        AttnError::OutOfRange {
            name: "image",
            value: i,
            requirement: "must be less than the number of images",
            limit: self.len(),
        }
    }
}

/// Checks that every pixel of `images` is at most [`MAX_PIXEL`].
fn check_pixels(images: &[[u8; PIXELS]]) -> Result<(), AttnError> {
    match images.iter().flatten().find(|&&x| x > MAX_PIXEL) {
        Some(&pixel) => Err(AttnError::OutOfRange {
            name: "pixel",
            value: usize::from(pixel),
            requirement: "must count at most a 4×4 block's cells",
            limit: usize::from(MAX_PIXEL),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pixel: u8, label: u8) -> String {
        let mut fields = vec![pixel.to_string(); PIXELS];
        fields.push(label.to_string());
        fields.join(",")
    }

    #[test]
    fn a_line_is_64_pixels_and_a_label() {
        let text = [line(3, 7), line(16, 0)].join("\n");
        let digits = Digits::parse(&text).unwrap();
        assert_eq!(digits.len(), 2);
        assert_eq!(digits.image(1).unwrap(), &[16; PIXELS]);
        assert_eq!((digits.label(0).unwrap(), digits.label(1).unwrap()), (7, 0));
        assert_eq!(digits.class_counts(0..2).unwrap()[7], 1);
        assert!(digits.image(2).is_err() && digits.label(2).is_err());
    }

    #[test]
    fn bad_lines_are_refused_by_line() {
        let e = |text: &str| Digits::parse(text).unwrap_err().to_string();
        assert!(e(&line(17, 1)).contains("line 1: \"17\" is not a whole number from 0 to 16"));
        assert!(e(&line(1, 10)).contains("from 0 to 9"));
        assert!(e(&format!("{}\n1,2,3", line(1, 1))).contains("line 2: 3 fields"));
        assert!(e(&line(1, 1).replace(",1,", ",x,")).contains("\"x\""));
        assert!(e("").contains("no images"));
        let missing = Digits::read("/nonexistent/digits.csv").unwrap_err().to_string();
        assert!(missing.contains("cargo xtask digits"), "{missing}");
    }
}
