//! Chapter 2's inputs that the example prints and the text quotes.

/// The logits of the overflow demonstration: one huge, one hugely negative.
pub const OVERFLOW_LOGITS: [f32; 3] = [1000.0, -1000.0, 0.0];

/// The shift of exercise 3, past `ln(f32::MAX)` ≈ 88.72, which the naive
/// softmax cannot survive.
pub const EXERCISE_SHIFT: f32 = 100.0;
