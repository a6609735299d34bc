//! The encoder–decoder's backward pass: each step of the forward pass
//! undone in reverse order.

use ndarray::{Array1, ArrayRef2};

use super::forward::Seq2SeqForward;
use super::model::Seq2Seq;
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::nn::{
    attention_sublayer_backward, check_d_logits, check_same_model, embedding_backward,
    ffn_sublayer_backward, layer_norm_backward, linear_backward, Activation, Heads,
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
        let (dz, dw, db) = linear_backward(&fwd.z, &self.head.0, d_logits);
        g.head = (dw, db);
        let (mut dy, dg, db) = layer_norm_backward(&fwd.decoder_ln, &self.decoder_ln[0], &dz);
        g.decoder_ln = [dg, db];
        let mut d_memory = Matrix::zeros(fwd.memory.dim());
        for (l, (p, c)) in self.decoder.iter().zip(&fwd.decoder).enumerate().rev() {
            let gd = &mut g.decoder[l];
            let sublayer = (&p.ln, &p.ffn);
            let (dx, d_ln, d_ffn) = ffn_sublayer_backward(&c.ffn, sublayer, Activation::Gelu, &dy);
            (gd.ln, gd.ffn) = (d_ln, d_ffn);
            dy += &dx;
            let heads = Heads::new(t, tk, h);
            let sublayer = (&p.cross_attention.ln, &p.cross_attention.w);
            let memory = Some(&*fwd.memory);
            let (dx, d_mem, d_ln, dw) =
                attention_sublayer_backward(&c.cross_attention, memory, sublayer, heads, &dy);
            if let Some(d_mem) = d_mem {
                d_memory += &d_mem;
            }
            (gd.cross_attention.ln, gd.cross_attention.w) = (d_ln, dw);
            dy += &dx;
            let heads = Heads::new(t, t, h);
            let sublayer = (&p.self_attention.ln, &p.self_attention.w);
            let (dx, _, d_ln, dw) =
                attention_sublayer_backward(&c.self_attention, None, sublayer, heads, &dy);
            (gd.self_attention.ln, gd.self_attention.w) = (d_ln, dw);
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
            let sublayer = (&p.ln, &p.ffn);
            let (dxx, d_ln, d_ffn) = ffn_sublayer_backward(&c.ffn, sublayer, Activation::Gelu, &dx);
            (ge.ln, ge.ffn) = (d_ln, d_ffn);
            dx += &dxx;
            let heads = Heads::new(s, s, h);
            let sublayer = (&p.attention.ln, &p.attention.w);
            let (dxx, _, d_ln, dw) =
                attention_sublayer_backward(&c.attention, None, sublayer, heads, &dx);
            (ge.attention.ln, ge.attention.w) = (d_ln, dw);
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
