//! The encoder–decoder's backward pass: each step of the forward pass
//! undone in reverse order.

use ndarray::{Array1, ArrayRef2};

use super::forward::Seq2SeqForward;
use super::model::Seq2Seq;
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::nn::{
    check_same_model, embedding_backward, ffn_backward, layer_norm_backward, linear_backward,
    mha_backward, Activation, Heads,
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
        if d_logits.dim() != fwd.logits.dim() {
            return Err(AttnError::ShapesDiffer {
                what: "dL/dlogits and the logits",
                left: d_logits.dim(),
                right: fwd.logits.dim(),
            });
        }
        let (s, t) = fwd.lengths;
        let (h, bottleneck) = (self.config.heads, self.config.bottleneck);
        let tk = if bottleneck { 1 } else { s };
        let mut g = self.zeros_like();
        let (dz, dw, db) = linear_backward(&fwd.z, &self.head.0, d_logits);
        g.head = (dw, db);
        let (mut dy, dg, db) = layer_norm_backward(&fwd.decoder_ln, &self.decoder_ln[0], &dz);
        g.decoder_ln = [dg, db];
        let mut d_memory = Matrix::zeros(fwd.memory.dim());
        for (l, (p, c)) in self.decoder.iter().zip(&fwd.decoder).enumerate().rev() {
            let gd = &mut g.decoder[l];
            let (dc, d_ffn) = ffn_backward(&c.ffn, &p.ffn, Activation::Gelu, &dy);
            gd.ffn = d_ffn;
            let (dx, dg, db) = layer_norm_backward(&c.ln3, &p.ln[0], &dc);
            gd.ln = [dg, db];
            dy += &dx;
            let ca = &p.cross_attention;
            let (d_b, d_mem, dw) = mha_backward(
                &c.cross_attention,
                &c.b,
                &fwd.memory,
                &ca.w,
                Heads {
                    tq: t,
                    tk,
                    heads: h,
                },
                &dy,
            );
            d_memory += &d_mem;
            gd.cross_attention.w = dw;
            let (dx, dg, db) = layer_norm_backward(&c.ln2, &ca.ln[0], &d_b);
            gd.cross_attention.ln = [dg, db];
            dy += &dx;
            let sa = &p.self_attention;
            let (d_a, d_a2, dw) = mha_backward(
                &c.self_attention,
                &c.a,
                &c.a,
                &sa.w,
                Heads {
                    tq: t,
                    tk: t,
                    heads: h,
                },
                &dy,
            );
            gd.self_attention.w = dw;
            let (dx, dg, db) = layer_norm_backward(&c.ln1, &sa.ln[0], &(d_a + d_a2));
            gd.self_attention.ln = [dg, db];
            dy += &dx;
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
        let (mut dx, dg, db) = layer_norm_backward(&fwd.encoder_ln, &self.encoder_ln[0], &d_output);
        g.encoder_ln = [dg, db];
        for (l, (p, c)) in self.encoder.iter().zip(&fwd.encoder).enumerate().rev() {
            let ge = &mut g.encoder[l];
            let (dc, d_ffn) = ffn_backward(&c.ffn, &p.ffn, Activation::Gelu, &dx);
            ge.ffn = d_ffn;
            let (dxx, dg, db) = layer_norm_backward(&c.ln2, &p.ln[0], &dc);
            ge.ln = [dg, db];
            dx += &dxx;
            let (d_a, d_a2, dw) = mha_backward(
                &c.attention,
                &c.a,
                &c.a,
                &p.attention.w,
                Heads {
                    tq: s,
                    tk: s,
                    heads: h,
                },
                &dx,
            );
            ge.attention.w = dw;
            let (dxx, dg, db) = layer_norm_backward(&c.ln1, &p.attention.ln[0], &(d_a + d_a2));
            ge.attention.ln = [dg, db];
            dx += &dxx;
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
