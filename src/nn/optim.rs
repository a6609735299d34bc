//! The optimiser and the learning-rate schedule every model of the book
//! trains with (chapter 12).

use rayon::prelude::*;

use super::params::Parameters;
use crate::check::check_positive;
use crate::error::AttnError;
use crate::real::Real;

// ANCHOR: adam
/// The Adam optimiser (Kingma and Ba, 2015): per parameter, running means of
/// the gradient (`m`) and of its square (`v`), bias-corrected; with weight
/// decay, AdamW (Loshchilov and Hutter, 2019).
pub struct Adam<F: Real = f64> {
    lr: f64,           // the learning rate, finite and > 0
    betas: (f64, f64), // decay of m and v
    eps: f64,          // added to √v̂
    m: Vec<Vec<F>>,    // one per parameter tensor
    v: Vec<Vec<F>>,
    step: i32,
    decay: Vec<f64>, // per tensor: λ for the tensors AdamW decays, else 0
}

/// Adam's rule at one step: its constants, and each tensor's shrink
/// `1 − lr·λ` (1 for a tensor that does not decay).
struct Rule<F> {
    b1: F,
    b2: F,
    c1: F, // 1 − β₁ᵗ
    c2: F, // 1 − β₂ᵗ
    eps: F,
    lr: F,
    shrink: Vec<F>,
}
// ANCHOR_END: adam

impl<F: Real> Adam<F> {
    /// An optimiser for `model`'s parameters (any model of the crate).
    pub fn new(model: &impl Parameters<Real = F>, lr: f64) -> Result<Self, AttnError> {
        check_learning_rate(lr)?;
        let zeros: Vec<Vec<F>> = model.slices().iter().map(|s| vec![F::zero(); s.len()]).collect();
        Ok(Adam {
            lr,
            betas: (0.9, 0.98),
            eps: 1e-9,
            decay: vec![0.0; zeros.len()],
            m: zeros.clone(),
            v: zeros,
            step: 0,
        })
    }

    /// The same optimiser with decays `β₁, β₂` of the running means, each
    /// in `[0, 1)`, and `ε > 0` added to `√v̂`.
    pub fn with_betas_and_eps(self, betas: (f64, f64), eps: f64) -> Result<Self, AttnError> {
        for (name, beta) in [("β₁", betas.0), ("β₂", betas.1)] {
            if !(0.0..1.0).contains(&beta) {
                return Err(AttnError::InvalidArgument {
                    name,
                    value: beta,
                    requirement: "must be in [0, 1)",
                });
            }
        }
        check_positive("ε", eps)?;
        Ok(Adam { betas, eps, ..self })
    }

    /// AdamW: the same optimiser, which also shrinks every tensor `t` with
    /// `decayed[t]` by `lr · λ` of itself each step, apart from the
    /// gradient (decoupled weight decay). `decayed` has one entry per
    /// tensor, e.g. [`crate::lm::LanguageModel::matrices`].
    pub fn with_weight_decay(self, lambda: f64, decayed: &[bool]) -> Result<Self, AttnError> {
        if !(lambda.is_finite() && lambda >= 0.0) {
            return Err(AttnError::InvalidArgument {
                name: "weight decay",
                value: lambda,
                requirement: "must be finite and ≥ 0",
            });
        }
        if decayed.len() != self.m.len() {
            return Err(AttnError::Mismatched {
                name: "the tensors to decay",
                requirement: "must say, for each of the model's tensors, whether it decays",
            });
        }
        let decay = decayed.iter().map(|&d| if d { lambda } else { 0.0 }).collect();
        Ok(Adam { decay, ..self })
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
}

// ANCHOR: adam_update
impl<F: Real> Adam<F> {
    /// One update of every parameter `θ` by its gradient `g`, the
    /// learning rate scaled by `lr_factor` (the schedule):
    /// `m ← β₁m + (1 − β₁)g`, `v ← β₂v + (1 − β₂)g²`, and
    /// `θ ← θ·(1 − lr·λ) − lr · m̂ / (√v̂ + ε)` with `m̂ = m/(1 − β₁ᵗ)`,
    /// `v̂ = v/(1 − β₂ᵗ)` at step `t`.
    pub fn update<P: Parameters<Real = F>>(
        &mut self,
        model: &mut P,
        grads: &P,
        lr_factor: f64,
    ) -> Result<(), AttnError> {
        self.check_update(model, grads, lr_factor)?; // nothing changes if this fails
        let rule = self.rule(self.step + 1, lr_factor);
        self.step += 1;
        let gradients = grads.slices();
        // Tensor i, entry j: the same order in the model, its gradients and
        // m, v. Each entry on its own, so the pool's threads share the tensors.
        let tensors = model.slices_mut().into_par_iter().zip(gradients);
        let tensors = tensors.zip(&mut self.m).zip(&mut self.v).enumerate();
        tensors.for_each(|(i, (((theta, g), m), v))| {
            let entries = theta.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut());
            for (((theta, &g), m), v) in entries {
                (*theta, *m, *v) = rule.next(*theta, g, (*m, *v), rule.shrink[i]);
            }
        });
        Ok(())
    }
}

impl<F: Real> Rule<F> {
    /// `(θ, m, v)` after the step, for an entry of a tensor that shrinks by
    /// `shrink`.
    fn next(&self, theta: F, g: F, (m, v): (F, F), shrink: F) -> (F, F, F) {
        let one = F::one();
        let m = self.b1 * m + (one - self.b1) * g;
        let v = self.b2 * v + (one - self.b2) * g * g;
        let step = self.lr * (m / self.c1) / ((v / self.c2).sqrt() + self.eps);
        (theta * shrink - step, m, v)
    }
}
// ANCHOR_END: adam_update

impl<F: Real> Adam<F> {
    /// The rule of step `step`, the learning rate scaled by `lr_factor`.
    fn rule(&self, step: i32, lr_factor: f64) -> Rule<F> {
        let (b1, b2) = self.betas;
        let (c1, c2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
        let [b1, b2, c1, c2, eps] = [b1, b2, c1, c2, self.eps].map(F::of);
        let shrink = self.decay.iter();
        let shrink = shrink.map(|&l| F::of(1.0 - self.lr * lr_factor * l)).collect();
        let lr = F::of(self.lr * lr_factor);
        Rule { b1, b2, c1, c2, eps, lr, shrink }
    }

    /// Checks an update before it is made: the model and the gradients have
    /// the optimiser's tensors, the factor is finite and `≥ 0`, every
    /// gradient is finite, and no parameter would become non-finite.
    fn check_update<P: Parameters<Real = F>>(
        &self,
        model: &P,
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
        let rule = self.rule(self.step + 1, lr_factor);
        for (t, (((theta, g), m), v)) in
            model.slices().into_iter().zip(grads.slices()).zip(&self.m).zip(&self.v).enumerate()
        {
            let after = |(((&theta, &g), &m), &v)| rule.next(theta, g, (m, v), rule.shrink[t]).0;
            let entries = || theta.iter().zip(g).zip(m).zip(v);
            // A fold without an early exit, so that the compiler vectorises it.
            if !entries().fold(true, |finite, e| finite & after(e).is_finite()) {
                let tensor = model.named_slices().swap_remove(t).0; // named only on failure
                let value = entries().map(after).find(|a| !a.is_finite());
                let value = value.map_or(f64::NAN, |a| a.wide());
                return Err(AttnError::NonFiniteUpdate { tensor, value });
            }
        }
        Ok(())
    }
}

/// Checks that a learning rate is finite and positive.
pub(crate) fn check_learning_rate(lr: f64) -> Result<(), AttnError> {
    check_positive("learning rate", lr)
}

/// Checks that a warm-up of `warmup` steps fits in a training of `steps`.
pub(crate) fn check_warmup(warmup: usize, steps: usize) -> Result<(), AttnError> {
    if warmup > steps {
        let requirement = "must be at most the number of steps";
        return Err(AttnError::OutOfRange {
            name: "warmup",
            value: warmup,
            requirement,
            limit: steps,
        });
    }
    Ok(())
}

/// Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps`:
/// the factor of the learning rate at `step`.
pub fn warmup_cosine(step: usize, steps: usize, warmup: usize) -> Result<f64, AttnError> {
    warmup_cosine_to(step, steps, warmup, 0.0)
}

/// [`warmup_cosine`], decaying to `floor` (in `[0, 1]`) rather than 0:
/// `floor + (1 − floor) · ½(1 + cos(π · progress))` after the warm-up.
pub fn warmup_cosine_to(
    step: usize,
    steps: usize,
    warmup: usize,
    floor: f64,
) -> Result<f64, AttnError> {
    if !(0.0..=1.0).contains(&floor) {
        return Err(AttnError::InvalidArgument {
            name: "floor of the learning rate",
            value: floor,
            requirement: "must be in [0, 1]",
        });
    }
    if step >= steps {
        return Err(AttnError::OutOfRange {
            name: "step",
            value: step,
            requirement: "must be less than the number of steps",
            limit: steps,
        });
    }
    check_warmup(warmup, steps)?;
    if step < warmup {
        return Ok((step + 1) as f64 / warmup as f64);
    }
    let progress = (step - warmup) as f64 / (steps - warmup).max(1) as f64;
    Ok(floor + (1.0 - floor) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos()))
}

// ANCHOR: clip
/// Gradient clipping: if the gradients' global norm `‖g‖ = √(Σ g²)` over
/// every tensor exceeds `max_norm`, scales them all by `max_norm / ‖g‖`,
/// so that one bad batch cannot throw the weights far. Returns `‖g‖`
/// before clipping.
pub fn clip_gradient_norm<P: Parameters>(grads: &mut P, max_norm: f64) -> Result<f64, AttnError> {
    check_positive("largest gradient norm", max_norm)?;
    let squares: f64 = grads.slices().iter().flat_map(|t| t.iter()).map(|g| g.wide().powi(2)).sum();
    let norm = squares.sqrt();
    if !norm.is_finite() {
        return Err(AttnError::NonFiniteGradient {
            tensor: "the gradients' norm".into(),
            value: norm,
        });
    }
    if norm > max_norm {
        let scale = P::Real::of(max_norm / norm);
        grads.slices_mut().into_iter().flatten().for_each(|g| *g *= scale);
    }
    Ok(norm)
}
// ANCHOR_END: clip

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tensors of two parameters each.
    #[derive(Clone)]
    struct Two([Vec<f64>; 2]);

    impl Parameters for Two {
        type Real = f64;
        fn slices(&self) -> Vec<&[f64]> {
            self.0.iter().map(Vec::as_slice).collect()
        }
        fn slices_mut(&mut self) -> Vec<&mut [f64]> {
            self.0.iter_mut().map(Vec::as_mut_slice).collect()
        }
        fn named_slices(&self) -> Vec<(String, &[f64])> {
            ["a".to_string(), "b".into()].into_iter().zip(self.slices()).collect()
        }
    }

    #[test]
    fn adamw_shrinks_only_the_decayed_tensors_apart_from_the_gradient() {
        let mut model = Two([vec![2.0, -4.0], vec![2.0, -4.0]]);
        let zero = Two([vec![0.0; 2], vec![0.0; 2]]);
        let mut adam =
            Adam::new(&model, 0.1).unwrap().with_weight_decay(0.5, &[true, false]).unwrap();
        adam.update(&mut model, &zero, 1.0).unwrap();
        assert_eq!(model.0[0], vec![2.0 * 0.95, -4.0 * 0.95]); // θ(1 − lr·λ)
        assert_eq!(model.0[1], vec![2.0, -4.0]);
        let e = Adam::new(&model, 0.1).unwrap().with_weight_decay(0.5, &[true]);
        assert!(e.is_err());
    }

    #[test]
    fn betas_and_eps_are_checked_and_used() {
        let model = Two([vec![0.0; 2], vec![0.0; 2]]);
        let adam = Adam::new(&model, 0.1).unwrap();
        let adam = adam.with_betas_and_eps((0.9, 0.99), 1e-8).unwrap();
        assert_eq!((adam.betas(), adam.eps()), ((0.9, 0.99), 1e-8));
        let adam = Adam::new(&model, 0.1).unwrap();
        assert!(adam.with_betas_and_eps((1.0, 0.99), 1e-8).is_err());
    }

    #[test]
    fn clipping_scales_the_global_norm_down_to_the_limit_and_never_up() {
        let mut g = Two([vec![3.0, 0.0], vec![0.0, 4.0]]); // ‖g‖ = 5
        assert_eq!(clip_gradient_norm(&mut g, 1.0).unwrap(), 5.0);
        let clipped = [vec![3.0 * 0.2, 0.0], vec![0.0, 4.0 * 0.2]];
        assert_eq!(g.0, clipped);
        assert!((clip_gradient_norm(&mut g, 2.0).unwrap() - 1.0).abs() < 1e-15);
        assert_eq!(g.0, clipped);
        let mut nan = Two([vec![f64::NAN, 0.0], vec![0.0; 2]]);
        assert!(clip_gradient_norm(&mut nan, 1.0).is_err());
        assert!(clip_gradient_norm(&mut g, 0.0).is_err());
    }

    #[test]
    fn the_schedule_warms_up_then_decays_to_its_floor() {
        let at = |step| warmup_cosine_to(step, 2000, 100, 0.1).unwrap();
        assert_eq!(at(0), 0.01);
        assert_eq!(at(99), 1.0);
        assert_eq!(at(100), 1.0);
        assert!((at(1050) - 0.55).abs() < 1e-12);
        assert!((at(1999) - 0.1).abs() < 1e-5);
        let to_zero = warmup_cosine_to(1050, 2000, 100, 0.0).unwrap();
        assert_eq!(warmup_cosine(1050, 2000, 100).unwrap(), to_zero);
        assert!((to_zero - 0.5).abs() < 1e-12);
        assert!(warmup_cosine_to(0, 2000, 100, 1.5).is_err());
    }
}
