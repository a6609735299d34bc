//! Chapter 20: attention on images.

use ndarray::Array2;

use crate::error::AttnError;

// ANCHOR: images_from_patches
/// Exercise 1: the inverse of [`crate::vision::patches_of`]: from patches
/// `patch` pixels a side, one a row, `P = (8 / patch)²` rows an image, the
/// images, one a row of 64 pixels (row by row, as scaled). `patch` must
/// divide 8, each row must hold `patch²` numbers and the rows must make
/// whole images.
pub fn images_from_patches(patches: &Array2<f64>, patch: usize) -> Result<Array2<f64>, AttnError> {
    if patch == 0 || 8 % patch != 0 {
        let requirement = "must divide the image's side, 8: 1, 2, 4 or 8";
        return Err(AttnError::InvalidArgument { name: "patch", value: patch as f64, requirement });
    }
    let (g, per_image) = (8 / patch, 64 / (patch * patch));
    if patches.ncols() != patch * patch || !patches.nrows().is_multiple_of(per_image) {
        return Err(AttnError::Mismatched {
            name: "patches",
            requirement: "must be patch² numbers a row, (8 / patch)² rows an image",
        });
    }
    let mut images = Array2::zeros((patches.nrows() / per_image, 64));
    for ((row, j), values) in
        (0..patches.nrows()).map(|r| (r / per_image, r % per_image)).zip(patches.rows())
    {
        for (k, &x) in values.iter().enumerate() {
            let (y, x_) = ((j / g) * patch + k / patch, (j % g) * patch + k % patch);
            images[[row, y * 8 + x_]] = x;
        }
    }
    Ok(images)
}
// ANCHOR_END: images_from_patches

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::patches_of;

    /// Patch `j` of an image is grid row `j / g` and column `j mod g`, with
    /// `g = 8 / patch`; its pixel `k` is row `k / patch`, column
    /// `k mod patch` inside it. The test cuts images with `patches_of` and
    /// puts them back together.
    #[test]
    fn patches_put_back_together_are_the_image() {
        let images: Vec<[u8; 64]> =
            (0..3usize).map(|b| std::array::from_fn(|i| ((i * 5 + b * 3) % 17) as u8)).collect();
        for patch in [1, 2, 4, 8] {
            let cut = patches_of::<f64>(&images, patch).unwrap();
            let back = images_from_patches(&cut, patch).unwrap();
            assert_eq!(back.dim(), (3, 64), "patch {patch}");
            for (b, image) in images.iter().enumerate() {
                for (i, &pixel) in image.iter().enumerate() {
                    assert_eq!(back[[b, i]], f64::from(pixel) / 16.0, "patch {patch}, pixel {i}");
                }
            }
        }
        assert!(images_from_patches(&Array2::zeros((4, 16)), 3).is_err(), "3 does not divide 8");
        assert!(images_from_patches(&Array2::zeros((4, 9)), 4).is_err(), "rows of 9");
        assert!(images_from_patches(&Array2::zeros((5, 16)), 4).is_err(), "an image and a patch");
    }
}
