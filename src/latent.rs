//! Multi-head latent attention (DeepSeek-V2): keys and values are projected
//! down to one latent vector per token, of width `d_c`, which is all the
//! cache keeps (with a small shared rotary key of width `d_r`); each head
//! projects the latent back up to its keys and values. Folding the
//! up-projections into the query and the output ("absorbing" them) lets
//! decoding attend over the latents directly, without ever forming a key.

use ndarray::{concatenate, s, Array1, Array2, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::attention::{attend, Scores};
use crate::check::{check_finite, check_model_width};
use crate::error::AttnError;
use crate::fast::matmul::matmul;
use crate::masking::{causal_mask, masked_attention};
use crate::position::{check_even, rotate, Rotation};
use crate::projection::init_weight;

// ANCHOR: latent
/// A latent attention layer: `h` heads of width `d_h`, a latent of width
/// `d_c` and rotary parts of width `d_r`, for `d_model`-wide tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct LatentAttention {
    heads: usize,
    d_h: usize,
    w_q: Array2<f32>, // d_model × h·d_h: the queries matched against the latent's keys
    w_qr: Array2<f32>, // d_model × h·d_r: the queries' rotary parts
    w_dkv: Array2<f32>, // d_model × d_c: down to the latent c, which is cached
    w_kr: Array2<f32>, // d_model × d_r: the one rotary key all heads share, cached
    w_uk: Array2<f32>, // d_c × h·d_h: the latent up to each head's keys
    w_uv: Array2<f32>, // d_c × h·d_h: the latent up to each head's values
    w_o: Array2<f32>, // h·d_h × d_model
}
// ANCHOR_END: latent

/// What latent attention caches per token: the latent `c_t` (`d_c`) and the
/// rotated shared key `k^R_t` (`d_r`), side by side in one row, `[c_t | k^R_t]`:
/// the keys every head scores, whose first `d_c` columns are the values too.
#[derive(Debug, Clone)]
pub struct LatentCache {
    keys: Array2<f32>, // t × (d_c + d_r)
    d_c: usize,
}

impl LatentCache {
    /// How many tokens it holds.
    pub fn len(&self) -> usize {
        self.keys.nrows()
    }

    /// Whether it holds none yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Numbers it holds per token: `d_c + d_r`, whatever the number of heads.
    pub fn numbers_per_token(&self) -> usize {
        self.keys.ncols()
    }
}

impl LatentAttention {
    /// A layer with weights drawn as chapter 4 draws them. `d_r` must be
    /// even (RoPE turns pairs) and every size at least 1.
    pub fn new(
        d_model: usize,
        heads: usize,
        [d_h, d_c, d_r]: [usize; 3],
        rng: &mut StdRng,
    ) -> Result<Self, AttnError> {
        let sizes = [
            ("d_model", d_model),
            ("heads", heads),
            ("d_h", d_h),
            ("d_c", d_c),
            ("d_r", d_r),
        ];
        crate::check::check_model_sizes(&sizes, (d_model, 1))?;
        check_even("d_r", d_r)?;
        let mut w = |rows, cols| init_weight(rows, cols, rng);
        Ok(LatentAttention {
            heads,
            d_h,
            w_q: w(d_model, heads * d_h)?,
            w_qr: w(d_model, heads * d_r)?,
            w_dkv: w(d_model, d_c)?,
            w_kr: w(d_model, d_r)?,
            w_uk: w(d_c, heads * d_h)?,
            w_uv: w(d_c, heads * d_h)?,
            w_o: w(heads * d_h, d_model)?,
        })
    }

    fn d_r(&self) -> usize {
        self.w_kr.ncols()
    }

    /// Head `i`'s columns of a matrix whose heads sit side by side, `width`
    /// each.
    fn head(w: &Array2<f32>, i: usize, width: usize) -> ndarray::ArrayView2<'_, f32> {
        w.slice(s![.., i * width..(i + 1) * width])
    }

    // ANCHOR: explicit
    /// Causal self-attention over `x` (`n×d_model`), the explicit way: every
    /// head up-projects the latents to its keys `c W_UK^i` and values
    /// `c W_UV^i`, and its scores add the rotary parts, `q^C·k^C + q^R·k^R`,
    /// over `√(d_h + d_r)`. That is plain attention with queries `[q^C | q^R]`
    /// and keys `[k^C | k^R]`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("input", x, self.w_q.nrows())?;
        check_finite("input", x)?;
        let (n, d_r) = (x.nrows(), self.d_r());
        let c = matmul(x, &self.w_dkv); // n×d_c: all a cache would keep, with k^R
        let mut k_r = matmul(x, &self.w_kr); // n×d_r, shared by the heads
        rotate(&mut k_r, 0, Rotation::Forward);
        let causal = causal_mask(n, n);
        let mut heads = Vec::new();
        for i in 0..self.heads {
            let q_c = matmul(x, &Self::head(&self.w_q, i, self.d_h));
            let mut q_r = matmul(x, &Self::head(&self.w_qr, i, d_r));
            rotate(&mut q_r, 0, Rotation::Forward);
            let k_c = matmul(&c, &Self::head(&self.w_uk, i, self.d_h)); // n×d_h
            let v = matmul(&c, &Self::head(&self.w_uv, i, self.d_h)); // n×d_h
            let q = concatenate![Axis(1), q_c, q_r];
            let k = concatenate![Axis(1), k_c, k_r];
            heads.push(masked_attention(&q, &k, &v, &causal)?.output);
        }
        let views: Vec<_> = heads.iter().map(|h| h.view()).collect();
        Ok(matmul(
            &concatenate(Axis(1), &views).expect("n rows each"),
            &self.w_o,
        ))
    }
    // ANCHOR_END: explicit

    // ANCHOR: absorbed
    /// The layer ready to decode with the up-projections absorbed. Per
    /// head, `W_Q^i (W_UK^i)ᵀ` (`d_model×d_c`) takes a token to a query that
    /// scores latents directly, since `q^C·k^C = (x W_Q^i)(c W_UK^i)ᵀ =
    /// (x W_Q^i (W_UK^i)ᵀ)·c`; and `W_UV^i W_O^i` (`d_c×d_model`) takes the
    /// head's weighted mean of latents to its share of the output. Computed
    /// once, not per token.
    pub fn absorbed(&self) -> AbsorbedLatent {
        let heads = (0..self.heads)
            .map(|i| {
                let w_uk = Self::head(&self.w_uk, i, self.d_h);
                let w_uv = Self::head(&self.w_uv, i, self.d_h);
                let w_o = self.w_o.slice(s![i * self.d_h..(i + 1) * self.d_h, ..]);
                let query = matmul(&Self::head(&self.w_q, i, self.d_h), &w_uk.t());
                [query, matmul(&w_uv, &w_o)]
            })
            .collect();
        AbsorbedLatent {
            heads,
            w_qr: self.w_qr.clone(),
            w_dkv: self.w_dkv.clone(),
            w_kr: self.w_kr.clone(),
            sqrt: ((self.d_h + self.d_r()) as f32).sqrt(),
        }
    }
}

/// A [`LatentAttention`] layer with its up-projections absorbed: what
/// decoding needs, and no `W_UK`, `W_UV` at all.
#[derive(Debug, Clone, PartialEq)]
pub struct AbsorbedLatent {
    heads: Vec<[Array2<f32>; 2]>, // per head: W_Q^i (W_UK^i)ᵀ, W_UV^i W_O^i
    w_qr: Array2<f32>,
    w_dkv: Array2<f32>,
    w_kr: Array2<f32>,
    sqrt: f32, // √(d_h + d_r): the scores' scale is that of the explicit form
}

impl AbsorbedLatent {
    /// An empty cache for this layer.
    pub fn new_cache(&self) -> LatentCache {
        let d_c = self.w_dkv.ncols();
        LatentCache {
            keys: Array2::zeros((0, d_c + self.w_kr.ncols())),
            d_c,
        }
    }

    /// One decoding step: caches the token's latent and rotary key, then
    /// each head attends over the cache with keys `[c | k^R]` and values
    /// `c`, the latents themselves (multi-query attention in the latent
    /// space), and maps its result to the output.
    pub fn step(
        &self,
        x_t: &ArrayRef1<f32>,
        cache: &mut LatentCache,
    ) -> Result<Array1<f32>, AttnError> {
        let x = x_t.to_owned().insert_axis(Axis(0)); // 1×d_model
        check_model_width("token", &x, self.w_dkv.nrows())?;
        check_finite("token", &x)?;
        self.check_cache(cache)?;
        let (t, d_r) = (cache.len(), self.w_kr.ncols()); // t: the token's position
        let mut k_r = matmul(&x, &self.w_kr);
        rotate(&mut k_r, t, Rotation::Forward);
        let row = concatenate![Axis(1), matmul(&x, &self.w_dkv), k_r]; // [c_t | k^R_t]
        cache
            .keys
            .push_row(row.row(0))
            .expect("width checked above");
        let (keys, latents) = (&cache.keys, cache.keys.slice(s![.., ..cache.d_c]));
        let mut out = Array2::zeros((1, self.w_dkv.nrows()));
        for (i, [query, output]) in self.heads.iter().enumerate() {
            let mut q_r = matmul(&x, &self.w_qr.slice(s![.., i * d_r..(i + 1) * d_r]));
            rotate(&mut q_r, t, Rotation::Forward);
            let q = concatenate![Axis(1), matmul(&x, query), q_r]; // 1×(d_c + d_r)
            let (_, latent_mean) = attend(&q, keys, &latents, self.sqrt, Scores::Plain)?; // 1×d_c
            out += &matmul(&latent_mean, output);
        }
        Ok(out.remove_axis(Axis(0)))
    }
    // ANCHOR_END: absorbed

    /// Checks that `cache` was made for a layer of these widths.
    fn check_cache(&self, cache: &LatentCache) -> Result<(), AttnError> {
        let d_c = self.w_dkv.ncols();
        if (cache.d_c, cache.keys.ncols()) == (d_c, d_c + self.w_kr.ncols()) {
            return Ok(());
        }
        Err(AttnError::Mismatched {
            name: "latent cache",
            requirement:
                "must be made by this layer's new_cache (latents d_c, rotary keys d_r wide)",
        })
    }
}

#[cfg(test)]
mod tests;
