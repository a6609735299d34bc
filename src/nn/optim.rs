//! The optimiser and the learning-rate schedule every model of the book
//! trains with (chapter 12).

use super::params::Parameters;
use crate::error::AttnError;
use crate::real::Real;

// ANCHOR: adam
/// The Adam optimiser (Kingma and Ba, 2015): per parameter, running means of
/// the gradient (`m`) and of its square (`v`), bias-corrected.
pub struct Adam<F: Real = f64> {
    lr: f64,           // the learning rate, finite and > 0
    betas: (f64, f64), // decay of m and v
    eps: f64,          // added to √v̂
    m: Vec<Vec<F>>,    // one per parameter tensor
    v: Vec<Vec<F>>,
    step: i32,
}

impl<F: Real> Adam<F> {
    /// An optimiser for `model`'s parameters (any model of the crate).
    pub fn new(model: &impl Parameters<Real = F>, lr: f64) -> Result<Self, AttnError> {
        check_learning_rate(lr)?;
        let zeros: Vec<Vec<F>> = model
            .slices()
            .iter()
            .map(|s| vec![F::zero(); s.len()])
            .collect();
        Ok(Adam {
            lr,
            betas: (0.9, 0.98),
            eps: 1e-9,
            m: zeros.clone(),
            v: zeros,
            step: 0,
        })
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// `(β₁, β₂)`, the decay of the running means `m` and `v`.
    pub fn betas(&self) -> (f64, f64) {
        self.betas
    }

    /// `ε`, added to `√v̂`.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// One update: `θ ← θ − lr · m̂ / (√v̂ + ε)`, scaled by `lr_factor`
    /// (the schedule).
    pub fn update<P: Parameters<Real = F>>(
        &mut self,
        model: &mut P,
        grads: &P,
        lr_factor: f64,
    ) -> Result<(), AttnError> {
        let sizes = |p: &P| p.slices().iter().map(|s| s.len()).collect::<Vec<_>>();
        let expected: Vec<usize> = self.m.iter().map(Vec::len).collect();
        if sizes(model) != expected || sizes(grads) != expected {
            return Err(AttnError::Mismatched {
                name: "model and gradients",
                requirement: "must have the tensors the optimiser was made for",
            });
        }
        if !(lr_factor.is_finite() && lr_factor >= 0.0) {
            return Err(AttnError::InvalidArgument {
                name: "learning-rate factor",
                value: lr_factor,
                requirement: "must be finite and ≥ 0",
            });
        }
        for (t, values) in grads.slices().into_iter().enumerate() {
            if let Some(bad) = values.iter().find(|g| !g.is_finite()) {
                let tensor = grads.named_slices().swap_remove(t).0; // named only on failure
                let value = bad.wide();
                return Err(AttnError::NonFiniteGradient { tensor, value });
            }
        }
        let step = self.step + 1;
        let (b1, b2) = self.betas;
        let (c1, c2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
        let [b1, b2, c1, c2, eps] = [b1, b2, c1, c2, self.eps].map(F::of);
        let lr = F::of(self.lr * lr_factor);
        let one = F::one();
        // θ, m and v after the step for entry i of a tensor.
        let next = |theta: F, g: F, m: F, v: F| {
            let m = b1 * m + (one - b1) * g;
            let v = b2 * v + (one - b2) * g * g;
            (theta - lr * (m / c1) / ((v / c2).sqrt() + eps), m, v)
        };
        // First, without writing: would any parameter become non-finite?
        for (t, (((theta, g), m), v)) in model
            .slices()
            .into_iter()
            .zip(grads.slices())
            .zip(&self.m)
            .zip(&self.v)
            .enumerate()
        {
            for i in 0..theta.len() {
                let (after, _, _) = next(theta[i], g[i], m[i], v[i]);
                if !after.is_finite() {
                    let tensor = model.named_slices().swap_remove(t).0; // named only on failure
                    let value = after.wide();
                    return Err(AttnError::NonFiniteUpdate { tensor, value });
                }
            }
        }
        self.step = step;
        for (((theta, g), m), v) in model
            .slices_mut()
            .into_iter()
            .zip(grads.slices())
            .zip(&mut self.m)
            .zip(&mut self.v)
        {
            for i in 0..theta.len() {
                (theta[i], m[i], v[i]) = next(theta[i], g[i], m[i], v[i]);
            }
        }
        Ok(())
    }
}
// ANCHOR_END: adam

/// Checks that a learning rate is finite and positive.
pub(crate) fn check_learning_rate(lr: f64) -> Result<(), AttnError> {
    if lr.is_finite() && lr > 0.0 {
        return Ok(());
    }
    Err(AttnError::InvalidArgument {
        name: "learning rate",
        value: lr,
        requirement: "must be finite and > 0",
    })
}

/// Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps`:
/// the factor of the learning rate at `step`.
pub fn warmup_cosine(step: usize, steps: usize, warmup: usize) -> Result<f64, AttnError> {
    if step >= steps || warmup > steps {
        return Err(AttnError::InvalidArgument {
            name: "step",
            value: step as f64,
            requirement: "must be less than the number of steps, with warmup at most that",
        });
    }
    if step < warmup {
        return Ok((step + 1) as f64 / warmup as f64);
    }
    let progress = (step - warmup) as f64 / (steps - warmup).max(1) as f64;
    Ok(0.5 * (1.0 + (std::f64::consts::PI * progress).cos()))
}
