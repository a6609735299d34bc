//! The encoder–decoder's backward pass: each step of the forward pass
//! undone in reverse order.

use ndarray::{Array1, ArrayRef2};

use super::forward::Seq2SeqForward;
use super::model::Seq2Seq;
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::linalg::linear_backward;
use crate::nn::{
    check_d_logits, check_same_model, embedding_backward, layer_norm_backward, Activation, Heads,
};

impl Seq2Seq {
    /// The backward pass: the gradient with respect to every parameter,
    /// given `dL/dlogits`.
    pub fn backward(
        &self,
        fwd: &Seq2SeqForward,
        d_logits: &ArrayRef2<f64>,
    ) -> Result<Seq2Seq, AttnError> {
        check_same_model(fwd.fingerprint, self, self.config)?;
        check_d_logits(d_logits, fwd.logits.dim())?;
        let (s, t) = fwd.lengths;
        let (h, bottleneck) = (self.config.heads, self.config.bottleneck);
        let tk = if bottleneck { 1 } else { s };
        let mut g = self.zeros_like();
        let dz;
        (dz, g.head) = linear_backward(&fwd.z, &self.head.w, d_logits)?;
        let mut dy;
        (dy, g.decoder_ln) = layer_norm_backward(&fwd.decoder_ln, &self.decoder_ln.gamma, &dz)?;
        let mut d_memory = Matrix::zeros(fwd.memory.dim());
        let memory = (&*fwd.memory, Heads::new(t, tk, h));
        for (l, (block, cache)) in self.decoder.iter().zip(&fwd.decoder).enumerate().rev() {
            let heads = Heads::new(t, t, h);
            let (dx, grads, d_mem) =
                block.backward_with_memory(cache, heads, memory, Activation::Gelu, &dy)?;
            (dy, g.decoder[l]) = (dx, grads);
            d_memory += &d_mem;
        }
        embedding_backward(
            &dy,
            &fwd.batch.inputs,
            &mut g.target_embeddings,
            &mut g.target_positions,
        );
        let d_output = match bottleneck {
            true => unpool(&d_memory, &fwd.batch.source_lengths, s),
            false => d_memory,
        };
        let mut dx;
        (dx, g.encoder_ln) =
            layer_norm_backward(&fwd.encoder_ln, &self.encoder_ln.gamma, &d_output)?;
        for (l, (block, cache)) in self.encoder.iter().zip(&fwd.encoder).enumerate().rev() {
            let heads = Heads::new(s, s, h);
            (dx, g.encoder[l]) = block.backward(cache, heads, Activation::Gelu, &dx)?;
        }
        embedding_backward(
            &dx,
            &fwd.batch.sources,
            &mut g.source_embeddings,
            &mut g.source_positions,
        );
        Ok(g)
    }
}

/// The backward pass of [`pool`]: each real row gets `1/len` of its
/// sequence's gradient, padding rows nothing.
fn unpool(d_pooled: &Matrix, lengths: &[usize], s: usize) -> Matrix {
    let mut dx = Matrix::zeros((lengths.len() * s, d_pooled.ncols()));
    for (b, &len) in lengths.iter().enumerate() {
        let share: Array1<f64> = d_pooled.row(b).to_owned() / len as f64;
        for j in 0..len {
            dx.row_mut(b * s + j).assign(&share);
        }
    }
    dx
}
