//! What a trained Vision Transformer looks at, three ways: the attention
//! of `[CLS]` over the patches in one block, attention *rollout* (Abnar
//! and Zuidema, 2020), which follows attention through every block, and
//! *occlusion*, which blanks one patch at a time and measures how far the
//! decision moves. The first two read the weights; only the third asks
//! what the model needs.

use ndarray::Array2;

use super::patches::pixel_of;
use super::vit::{PatchPositions, Vit, VitForward};
use super::PIXELS;
use crate::error::AttnError;
use crate::real::Real;

/// The mean over heads of `block`'s weights for `image`: `(P+1)×(P+1)`.
pub fn mean_heads<F: Real>(
    model: &Vit<F>,
    fwd: &VitForward<F>,
    block: usize,
    image: usize,
) -> Result<Array2<f64>, AttnError> {
    let heads = model.config().heads;
    let mut mean = fwd.weights(block, image, 0)?.mapv(|w| w.wide() / heads as f64);
    for head in 1..heads {
        mean.zip_mut_with(fwd.weights(block, image, head)?, |m, &w| *m += w.wide() / heads as f64);
    }
    Ok(mean)
}

// ANCHOR: rollout
/// Attention rollout for `image`: in each block, the heads' mean weights
/// `A` with the residual path as half of each row, `½A + ½I`; multiplied
/// from the first block to the last, `R = Â_L ⋯ Â_1`. Returns `[CLS]`'s row
/// of `R` over the patches (`P` numbers): how much of `[CLS]`'s final
/// vector flows from each patch's input, if attention were all that mixed
/// the tokens.
pub fn rollout<F: Real>(
    model: &Vit<F>,
    fwd: &VitForward<F>,
    image: usize,
) -> Result<Vec<f64>, AttnError> {
    let t = model.config().patches() + 1;
    let mut r = Array2::<f64>::eye(t);
    for block in 0..model.config().layers {
        let a = mean_heads(model, fwd, block, image)? * 0.5 + Array2::<f64>::eye(t) * 0.5;
        r = a.dot(&r);
    }
    Ok(r.row(0).iter().skip(1).copied().collect())
}
// ANCHOR_END: rollout

/// Occlusion for `image`: for each patch, how much the logit of `class`
/// falls when that patch's pixels are set to 0 (`P` numbers; negative when
/// blanking the patch raises it).
pub fn occlusion<F: Real>(
    model: &Vit<F>,
    image: &[u8; PIXELS],
    class: usize,
) -> Result<Vec<f64>, AttnError> {
    let c = model.config();
    if class >= super::CLASSES {
        return Err(AttnError::OutOfRange {
            name: "class",
            value: class,
            requirement: "must be a digit",
            limit: super::CLASSES,
        });
    }
    let mut images = vec![*image];
    for j in 0..c.patches() {
        let mut blank = *image;
        (0..c.patch * c.patch).for_each(|k| blank[pixel_of(j, k, c.patch)] = 0);
        images.push(blank);
    }
    let logits = model.forward(&images)?.logits().column(class).mapv(|z| z.wide());
    Ok(logits.iter().skip(1).map(|z| logits[0] - z).collect())
}

/// The cosine similarity of the position vectors that patches `i` and `j`
/// receive (`P×P`), as Dosovitskiy et al. draw them: whether neighbours in
/// the image got similar vectors. An error for a model without positions.
pub fn position_similarity<F: Real>(model: &Vit<F>) -> Result<Array2<f64>, AttnError> {
    if model.config().positions == PatchPositions::None {
        return Err(AttnError::InvalidArgument {
            name: "model",
            value: 0.0,
            requirement: "must have positions to compare",
        });
    }
    let vectors: Vec<Vec<f64>> =
        (1..=model.config().patches()).map(|place| model.position_of(place)).collect();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    Ok(Array2::from_shape_fn((vectors.len(), vectors.len()), |(i, j)| {
        let dot: f64 = vectors[i].iter().zip(&vectors[j]).map(|(a, b)| a * b).sum();
        dot / (norm(&vectors[i]) * norm(&vectors[j])).max(f64::MIN_POSITIVE)
    }))
}

/// Spearman's rank correlation of `a` and `b` (ties get their mean rank):
/// 1 when they order the patches alike, −1 when in reverse.
pub fn rank_correlation(a: &[f64], b: &[f64]) -> Result<f64, AttnError> {
    if a.len() != b.len() || a.len() < 2 {
        return Err(AttnError::Mismatched {
            name: "rank_correlation's inputs",
            requirement: "must be of one length, at least 2",
        });
    }
    if let Some(&bad) = a.iter().chain(b).find(|x| !x.is_finite()) {
        return Err(AttnError::InvalidArgument {
            name: "rank_correlation's inputs",
            value: bad,
            requirement: "must hold only finite numbers",
        });
    }
    let ranks = |x: &[f64]| {
        let mut order: Vec<usize> = (0..x.len()).collect();
        order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
        let mut rank = vec![0.0; x.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len() && x[order[end]] == x[order[start]] {
                end += 1;
            }
            let mean = (start + end - 1) as f64 / 2.0;
            order[start..end].iter().for_each(|&i| rank[i] = mean);
            start = end;
        }
        rank
    };
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = (a.len() - 1) as f64 / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean) * (x - mean);
        sbb += (y - mean) * (y - mean);
    }
    Ok(if saa == 0.0 || sbb == 0.0 { 0.0 } else { sab / (saa * sbb).sqrt() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::train::tests::images;
    use crate::vision::VitConfig;

    const SMALL: VitConfig = VitConfig { patch: 2, ..crate::vision::train::tests::SMALL };

    #[test]
    fn rollout_multiplies_the_blocks_half_attention_half_identity() {
        let model = Vit::<f64>::new(SMALL, 1).unwrap();
        let fwd = model.forward(&images()).unwrap();
        let t = SMALL.patches() + 1;
        let a = |block| mean_heads(&model, &fwd, block, 1).unwrap();
        let half = |m: Array2<f64>| m * 0.5 + Array2::<f64>::eye(t) * 0.5;
        let r = half(a(1)).dot(&half(a(0)));
        let rolled = rollout(&model, &fwd, 1).unwrap();
        assert_eq!(rolled.len(), SMALL.patches());
        for (j, x) in rolled.iter().enumerate() {
            assert!((x - r[[0, j + 1]]).abs() < 1e-15, "patch {j}");
        }
        // [CLS]'s row of R sums to 1; the patches hold all but [CLS]'s share.
        let cls_share = r[[0, 0]];
        assert!((rolled.iter().sum::<f64>() + cls_share - 1.0).abs() < 1e-12);
    }

    #[test]
    fn blanking_a_blank_patch_changes_nothing_and_a_dark_one_something() {
        let model = Vit::<f64>::new(SMALL, 2).unwrap();
        let mut image = [0u8; PIXELS];
        image[0] = 16; // only patch 0 has ink
        let drop = occlusion(&model, &image, 3).unwrap();
        assert_eq!(drop.len(), SMALL.patches());
        assert!(drop[1..].iter().all(|&d| d == 0.0), "{drop:?}");
        assert!(drop[0] != 0.0);
        assert!(occlusion(&model, &image, 10).is_err());
    }

    #[test]
    fn positions_are_most_like_themselves() {
        for positions in [PatchPositions::Learned, PatchPositions::RowColumn] {
            let model = Vit::<f64>::new(VitConfig { positions, ..SMALL }, 3).unwrap();
            let s = position_similarity(&model).unwrap();
            assert_eq!(s.dim(), (SMALL.patches(), SMALL.patches()));
            for i in 0..SMALL.patches() {
                assert!((s[[i, i]] - 1.0).abs() < 1e-12);
                assert!((0..SMALL.patches())
                    .all(|j| s[[i, j]] <= 1.0 + 1e-12 && s[[i, j]] == s[[j, i]]));
            }
        }
        let none =
            Vit::<f64>::new(VitConfig { positions: PatchPositions::None, ..SMALL }, 3).unwrap();
        assert!(position_similarity(&none).is_err());
    }

    #[test]
    fn rank_correlation_is_spearmans() {
        let r = |a: &[f64], b: &[f64]| rank_correlation(a, b).unwrap();
        assert_eq!(r(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(r(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        // Ranks 1, 2, 3, 4 against 1, 3, 2, 4: 1 − 6·2/(4·15) = 0.8.
        assert!((r(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]) - 0.8).abs() < 1e-12);
        // Ties share their mean rank.
        assert!((r(&[1.0, 1.0, 2.0], &[1.0, 2.0, 3.0]) - 0.866_025_403_784_438_6).abs() < 1e-12);
        assert!(rank_correlation(&[1.0], &[1.0]).is_err());
        assert!(rank_correlation(&[1.0, f64::NAN], &[1.0, 2.0]).is_err());
    }
}
