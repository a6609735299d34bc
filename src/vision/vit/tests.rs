use super::*;
use crate::vision::train::tests::{assert_gradients_match, images, SMALL};
use crate::vision::DigitClassifier;

/// `image` with its patches moved: new patch `j` is old patch `order[j]`.
fn permuted(image: &[u8; PIXELS], order: &[usize], config: VitConfig) -> [u8; PIXELS] {
    let (p, g) = (config.patch, config.grid());
    let mut out = [0; PIXELS];
    for (j, &from) in order.iter().enumerate() {
        for k in 0..p * p {
            let at = |patch: usize| ((patch / g) * p + k / p) * SIDE + (patch % g) * p + k % p;
            out[at(j)] = image[at(from)];
        }
    }
    out
}

#[test]
fn every_gradient_matches_finite_differences() {
    for positions in [PatchPositions::None, PatchPositions::Learned, PatchPositions::RowColumn] {
        let model = Vit::<f64>::new(VitConfig { positions, ..SMALL }, 3).unwrap();
        assert_gradients_match(&model, &images(), &format!("{positions:?}"));
    }
}

#[test]
fn without_positions_moving_the_patches_moves_nothing_and_with_them_it_does() {
    let config = VitConfig { patch: 2, ..SMALL };
    let order: Vec<usize> = (0..config.patches()).rev().collect();
    let images = images();
    let moved: Vec<_> = images.iter().map(|x| permuted(x, &order, config)).collect();
    assert_ne!(images, moved);
    for (positions, moves) in [
        (PatchPositions::None, false),
        (PatchPositions::Learned, true),
        (PatchPositions::RowColumn, true),
    ] {
        let model = Vit::<f64>::new(VitConfig { positions, ..config }, 5).unwrap();
        let (a, b) = (model.forward(&images).unwrap(), model.forward(&moved).unwrap());
        let largest = (a.logits() - b.logits()).iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        // Without positions only the order of the sums changes: rounding.
        assert_eq!(largest > 1e-6, moves, "{positions:?}: {largest}");
        if !moves {
            assert!(largest < 1e-12, "{largest}");
        }
    }
}

#[test]
fn patches_are_the_image_cut_in_squares() {
    let image: [u8; PIXELS] = std::array::from_fn(|i| (i % 17) as u8);
    let patches = crate::vision::patches_of::<f64>(&[image], 4).unwrap();
    assert_eq!(patches.dim(), (4, 16));
    // Patch 1 is the top right square: rows 0–3, columns 4–7.
    assert_eq!(patches[[1, 0]], 4.0 / 16.0);
    assert_eq!(patches[[1, 5]], 13.0 / 16.0); // row 1, column 5: pixel 13
    assert_eq!(patches[[2, 0]], f64::from((32 % 17) as u8) / 16.0); // row 4, column 0
}

#[test]
fn bad_sizes_are_refused_by_name() {
    let e = |c: VitConfig| Vit::<f32>::new(c, 0).unwrap_err().to_string();
    assert!(e(VitConfig { patch: 3, ..SMALL }).contains("patch"));
    assert!(e(VitConfig { heads: 3, ..SMALL }).contains("head"));
    assert!(e(VitConfig { layers: 0, ..SMALL }).contains("layers"));
    assert!(e(VitConfig { layers: 1 << 30, d_model: 1 << 12, ..SMALL }).contains("parameters"));
    let model = Vit::<f32>::new(SMALL, 0).unwrap();
    assert!(model.forward(&[]).is_err());
    assert!(model.loss_and_gradients(&images(), &[1]).is_err());
}

#[test]
fn each_head_s_weights_are_a_distribution_over_cls_and_the_patches() {
    let model = Vit::<f64>::new(SMALL, 2).unwrap();
    let fwd = model.forward(&images()).unwrap();
    let t = SMALL.patches() + 1;
    for (block, image, head) in [(0, 0, 0), (1, 1, 1)] {
        let w = fwd.weights(block, image, head).unwrap();
        assert_eq!(w.dim(), (t, t));
        assert!(w
            .rows()
            .into_iter()
            .all(|r| (r.sum() - 1.0).abs() < 1e-12 && r.iter().all(|&x| x > 0.0)));
    }
    // Image 1's weights differ from image 0's: each image attends on its own.
    assert_ne!(fwd.weights(0, 0, 0).unwrap(), fwd.weights(0, 1, 0).unwrap());
    for (block, image, head) in [(2, 0, 0), (0, 2, 0), (0, 0, 2)] {
        assert!(fwd.weights(block, image, head).is_err(), "{block} {image} {head}");
    }
}
