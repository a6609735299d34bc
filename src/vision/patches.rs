//! Cutting an image into patches: the tokens a Vision Transformer reads.

use ndarray::Array2;

use super::{check_pixels, MAX_PIXEL, PIXELS, SIDE};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::real::Real;

// ANCHOR: patches
/// Where pixel `k` of patch `j` sits in the image (row by row), for
/// patches `patch` pixels a side: patch `j` is row `j / g`, column
/// `j mod g` of a grid `g = 8 / patch` patches a side, and its pixels go
/// row by row.
pub(crate) fn pixel_of(j: usize, k: usize, patch: usize) -> usize {
    let g = SIDE / patch;
    let (row, column) = ((j / g) * patch + k / patch, (j % g) * patch + k % patch);
    row * SIDE + column
}

/// The patches of `images`, one a row: image `b`'s patch `j` is row
/// `b·P + j` (`P = (8 / patch)²`), its `patch²` pixels scaled to `[0, 1]`.
/// `patch` must divide 8; a pixel past 16 is an error.
pub fn patches_of<F: Real>(images: &[[u8; PIXELS]], patch: usize) -> Result<Array2<F>, AttnError> {
    if patch == 0 || !SIDE.is_multiple_of(patch) {
        let requirement = "must divide the image's side, 8: 1, 2, 4 or 8";
        return Err(AttnError::InvalidArgument { name: "patch", value: patch as f64, requirement });
    }
    check_pixels(images)?;
    check_total("the images' pixels", &[images.len(), PIXELS], MAX_ENTRIES)?;
    let count = PIXELS / (patch * patch); // P
    let mut out = Array2::zeros((images.len() * count, patch * patch));
    for (b, image) in images.iter().enumerate() {
        for j in 0..count {
            for (k, x) in out.row_mut(b * count + j).iter_mut().enumerate() {
                let pixel = image[pixel_of(j, k, patch)];
                *x = F::of(f64::from(pixel) / f64::from(MAX_PIXEL));
            }
        }
    }
    Ok(out)
}
// ANCHOR_END: patches
