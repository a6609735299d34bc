//! Multi-head latent attention (DeepSeek-V2): keys and values are projected
//! down to one latent vector per token, of width `d_c`, which is all the
//! cache keeps (with a small shared rotary key of width `d_r`); each head
//! projects the latent back up to its keys and values. Folding the
//! up-projections into the query and the output ("absorbing" them) lets
//! decoding attend over the latents directly, without ever forming a key.

use ndarray::{concatenate, s, Array1, Array2, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::cache::KeyValueCache;
use crate::check::{check_finite, check_model_width};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::causal_mask;
use crate::nn::latent::{latent_forward, LatentWeights};
use crate::position::{check_even, rotate, Rotation};
use crate::projection::init_weight;
use crate::sliding::SlidingCache;

// ANCHOR: latent
/// A latent attention layer: `h` heads of width `d_h`, a latent of width
/// `d_c` and rotary parts of width `d_r`, for `d_model`-wide tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct LatentAttention {
    heads: usize,
    d_h: usize,
    /// `W_Q` (`d_model × h·d_h`), `W_QR` (`d_model × h·d_r`), `W_DKV`
    /// (`d_model × d_c`), `W_KR` (`d_model × d_r`), `W_UK` and `W_UV`
    /// (`d_c × h·d_h`), `W_O` (`h·d_h × d_model`), as the training stack
    /// holds them.
    w: LatentWeights<f32>,
}
// ANCHOR_END: latent

/// What latent attention caches per token: the latent `c_t` (`d_c`) and the
/// rotated shared key `k^R_t` (`d_r`), side by side in one row, `[c_t | k^R_t]`:
/// the keys every head scores, whose first `d_c` columns are the values too.
/// The rows are a ring buffer of the last `window` tokens ([`SlidingCache`]).
#[derive(Debug, Clone)]
pub struct LatentCache {
    keys: SlidingCache, // (d_c + d_r) wide, no separate values
    d_c: usize,
}

/// What latent attention's decoding step needs of the cache it reads:
/// [`LatentCache`] keeps the last tokens in a ring buffer, and a paged
/// cache ([`crate::lm::PagedKv`]) keeps them in the blocks of a pool. The
/// crate's own caches are the only ones (the trait is sealed), so that a
/// step can trust the widths they give back.
pub trait LatentRows: sealed::Sealed {
    /// The widths it was made for: the latent's `d_c`, and a row's
    /// `d_c + d_r`.
    fn widths(&self) -> (usize, usize);
    /// How many tokens it has been given: the position of the next.
    fn seen(&self) -> usize;
    /// Keeps the newest token's row `[c_t | k^R_t]`.
    fn append(&mut self, row: &ArrayRef1<f32>) -> Result<(), AttnError>;
    /// Attends with `q` over the rows held, as keys, their first `d_c`
    /// columns as values, the scores divided by `scale`.
    fn attend(&self, q: &ArrayRef1<f32>, scale: f32) -> Result<Array1<f32>, AttnError>;
}

/// Keeps [`LatentRows`] to the crate's own caches.
pub(crate) mod sealed {
    /// Implemented by the crate's latent caches only.
    pub trait Sealed {}
}

impl sealed::Sealed for LatentCache {}

impl LatentRows for LatentCache {
    fn widths(&self) -> (usize, usize) {
        (self.d_c, self.keys.width())
    }
    fn seen(&self) -> usize {
        self.keys.seen()
    }
    fn append(&mut self, row: &ArrayRef1<f32>) -> Result<(), AttnError> {
        self.keys.append(row, &Array1::zeros(0)) // no separate values
    }
    fn attend(&self, q: &ArrayRef1<f32>, scale: f32) -> Result<Array1<f32>, AttnError> {
        self.keys.attend_keys_as_values(q, self.d_c, scale)
    }
}

impl LatentCache {
    /// How many tokens it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds none yet.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Numbers it holds per token: `d_c + d_r`, whatever the number of heads.
    pub fn numbers_per_token(&self) -> usize {
        self.keys.width()
    }

    /// The bytes it holds: `window · (d_c + d_r)` numbers of 4 bytes.
    pub fn bytes(&self) -> usize {
        self.keys.bytes()
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
        let sizes =
            [("d_model", d_model), ("heads", heads), ("d_h", d_h), ("d_c", d_c), ("d_r", d_r)];
        crate::check::check_model_sizes(&sizes, (d_model, 1))?;
        check_even("d_r", d_r)?;
        // Every weight's entries, as a whole (a product of two reasonable
        // sizes can overflow), before the first is drawn.
        let limit = crate::check::MAX_ENTRIES;
        for (what, sizes) in [
            ("W_Q", [d_model, heads, d_h]),
            ("W_QR", [d_model, heads, d_r]),
            ("W_UK", [d_c, heads, d_h]),
            ("W_DKV and W_KR", [d_model, d_c.max(d_r), 1]),
        ] {
            crate::check::check_total(what, &sizes, limit)?;
        }
        let mut w = |rows, cols| init_weight(rows, cols, rng);
        let w = LatentWeights {
            w_q: w(d_model, heads * d_h)?,
            w_qr: w(d_model, heads * d_r)?,
            w_dkv: w(d_model, d_c)?,
            w_kr: w(d_model, d_r)?,
            w_uk: w(d_c, heads * d_h)?,
            w_uv: w(d_c, heads * d_h)?,
            w_o: w(heads * d_h, d_model)?,
        };
        Ok(LatentAttention { heads, d_h, w })
    }

    /// The layer with the weights `w`, checked: matrices of the sizes
    /// [`Self::new`] draws.
    pub(crate) fn from_weights(w: LatentWeights<f32>) -> Result<Self, AttnError> {
        let (heads, d_r) = (w.heads(), w.w_kr.ncols());
        let (d, d_c) = (w.w_q.nrows(), w.w_dkv.ncols());
        let d_h = w.w_q.ncols() / heads.max(1);
        let expected = [
            (d, heads * d_h),
            (d, heads * d_r),
            (d, d_c),
            (d, d_r),
            (d_c, heads * d_h),
            (d_c, heads * d_h),
            (heads * d_h, d),
        ];
        let shapes = w.matrices().map(|m| m.dim());
        if heads == 0 || d_h == 0 || shapes != expected {
            return Err(AttnError::Mismatched {
                name: "latent attention weights",
                requirement: "must be W_Q, W_QR, W_DKV, W_KR, W_UK, W_UV, W_O of one layer's sizes",
            });
        }
        Ok(LatentAttention { heads, d_h, w })
    }

    fn d_r(&self) -> usize {
        self.w.w_kr.ncols()
    }

    /// Head `i`'s columns of a matrix whose heads sit side by side, `width`
    /// each.
    fn head(w: &Array2<f32>, i: usize, width: usize) -> ndarray::ArrayView2<'_, f32> {
        w.slice(s![.., i * width..(i + 1) * width])
    }

    /// Causal self-attention over `x` (`n×d_model`), the explicit way (the
    /// training stack's, [`crate::nn`]): every
    /// head up-projects the latents to its keys `c W_UK^i` and values
    /// `c W_UV^i`, and its scores add the rotary parts, `q^C·k^C + q^R·k^R`,
    /// over `√(d_h + d_r)`. That is plain attention with queries `[q^C | q^R]`
    /// and keys `[k^C | k^R]`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("input", x, self.w.w_q.nrows())?;
        check_finite("input", x)?;
        let n = x.nrows();
        let weights = "the attention weights of the layer";
        crate::check::check_total(weights, &[self.heads, n, n], crate::check::MAX_ENTRIES)?;
        let causal = |_| Some(causal_mask(n, n));
        Ok(latent_forward(x, &self.w, n, causal)?.0)
    }

    // ANCHOR: absorbed
    /// The layer ready to decode with the up-projections absorbed. Per
    /// head, `W_Q^i (W_UK^i)ᵀ` (`d_model×d_c`) takes a token to a query that
    /// scores latents directly, since `q^C·k^C = (x W_Q^i)(c W_UK^i)ᵀ =
    /// (x W_Q^i (W_UK^i)ᵀ)·c`; and `W_UV^i W_O^i` (`d_c×d_model`) takes the
    /// head's weighted mean of latents to its share of the output. Computed
    /// once, not per token.
    pub fn absorbed(&self) -> AbsorbedLatent {
        let w = &self.w;
        let heads = (0..self.heads)
            .map(|i| {
                let w_uk = Self::head(&w.w_uk, i, self.d_h);
                let w_uv = Self::head(&w.w_uv, i, self.d_h);
                let w_o = w.w_o.slice(s![i * self.d_h..(i + 1) * self.d_h, ..]);
                let query = matmul(&Self::head(&w.w_q, i, self.d_h), &w_uk.t());
                [query, matmul(&w_uv, &w_o)]
            })
            .collect();
        AbsorbedLatent {
            heads,
            w_qr: w.w_qr.clone(),
            w_dkv: w.w_dkv.clone(),
            w_kr: w.w_kr.clone(),
            scale: ((self.d_h + self.d_r()) as f32).sqrt(),
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
    scale: f32, // √(d_h + d_r): the scores are the explicit form's, so is their scale
}

// ANCHOR_END: absorbed

impl AbsorbedLatent {
    /// An empty cache for this layer that keeps the last `window` tokens
    /// (at least 1), allocated at once.
    pub fn new_cache(&self, window: usize) -> Result<LatentCache, AttnError> {
        let d_c = self.w_dkv.ncols();
        // Keys [c | k^R], no separate values (the latents are), no sinks.
        let keys = SlidingCache::new(d_c + self.w_kr.ncols(), 0, 0, window)?;
        Ok(LatentCache { keys, d_c })
    }

    // ANCHOR: absorbed_step
    /// One decoding step: caches the token's latent and rotary key, then
    /// each head attends over the cache with keys `[c | k^R]` and values
    /// `c`, the latents themselves (multi-query attention in the latent
    /// space), and maps its result to the output.
    pub fn step(
        &self,
        x_t: &ArrayRef1<f32>,
        cache: &mut impl LatentRows,
    ) -> Result<Array1<f32>, AttnError> {
        let x = x_t.to_owned().insert_axis(Axis(0)); // 1×d_model
        check_model_width("token", &x, self.w_dkv.nrows())?;
        check_finite("token", &x)?;
        self.check_cache(cache)?;
        let (t, d_r) = (cache.seen(), self.w_kr.ncols()); // t: the token's position
        let mut k_r = matmul(&x, &self.w_kr);
        rotate(&mut k_r, t, Rotation::Forward);
        let row = concatenate![Axis(1), matmul(&x, &self.w_dkv), k_r]; // [c_t | k^R_t]
        cache.append(&row.row(0))?;
        let mut out = Array2::zeros((1, self.w_dkv.nrows()));
        for (i, [query, output]) in self.heads.iter().enumerate() {
            let mut q_r = matmul(&x, &self.w_qr.slice(s![.., i * d_r..(i + 1) * d_r]));
            rotate(&mut q_r, t, Rotation::Forward);
            let q = concatenate![Axis(1), matmul(&x, query), q_r]; // 1×(d_c + d_r)
            let latent_mean = cache.attend(&q.row(0), self.scale)?; // d_c
            out += &matmul(&latent_mean.insert_axis(Axis(0)), output);
        }
        Ok(out.remove_axis(Axis(0)))
    }
    // ANCHOR_END: absorbed_step

    /// Checks that `cache` was made for a layer of these widths.
    fn check_cache(&self, cache: &impl LatentRows) -> Result<(), AttnError> {
        let d_c = self.w_dkv.ncols();
        if cache.widths() == (d_c, d_c + self.w_kr.ncols()) {
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
