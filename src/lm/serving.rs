//! Serving many requests at once through one paged cache, with
//! iteration-level scheduling (Orca, Yu et al., 2022): at every step the
//! server admits the requests that fit and retires those that are done,
//! instead of waiting for a whole batch to finish (static batching).
//!
//! The policy, stated so that it can be tested:
//! - first come, first served: a request is admitted only when it is
//!   first in line, a slot is free and the pool can hold its whole text
//!   beside the whole texts of the requests running, so that no running
//!   request ever finds the pool full;
//! - each step gives every running request that is writing one token to
//!   read, and what is left of the token budget to the prompts being read,
//!   oldest request first, a chunk at a time;
//! - with static batching, nothing is admitted while anything runs.
//!
//! Every running request reads at least one token a step (the budget is
//! at least the number of slots), so a request waits at most as many
//! steps as the requests before it have tokens to read.

use std::collections::VecDeque;

use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::model::LanguageModel;
use super::paged::{PagedKv, Sequence};
use super::sample::Sampler;
use crate::error::AttnError;

/// A request: write `count` tokens (none, to read the prompt only) after
/// `prompt` (which [`Server::submit`] requires to hold a token),
/// drawn as `sampler` says with a random source seeded by `seed`, as
/// [`LanguageModel::generate`] would.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The tokens to continue.
    pub prompt: Vec<usize>,
    /// How many to write.
    pub count: usize,
    /// How to draw each.
    pub sampler: Sampler,
    /// The seed of its random source.
    pub seed: u64,
}

impl Request {
    /// The tokens its text will hold, written ones included (at most
    /// `usize::MAX`).
    pub fn len(&self) -> usize {
        self.prompt.len().saturating_add(self.count)
    }

    /// Whether its text will hold no token (a request the server refuses).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// When requests are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// At every step, as slots and blocks free up.
    Continuous,
    /// Only when every running request is done: a batch at a time.
    Static,
}

/// How a server schedules: its batching, how many requests run at once
/// (slots), and how many tokens a step reads in all (at least the slots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Continuous or static.
    pub batching: Batching,
    /// The most requests running at once.
    pub slots: usize,
    /// The most tokens a step reads, over all running requests.
    pub token_budget: usize,
}

/// A request that is done: its text (prompt and written tokens) and the
/// steps at which it arrived, was admitted and finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// Its number, in the order of submission.
    pub id: usize,
    /// Prompt and written tokens.
    pub text: Vec<usize>,
    /// The step count when it was submitted.
    pub arrived: usize,
    /// The step at which it was admitted.
    pub admitted: usize,
    /// The step in which it wrote its last token.
    pub finished: usize,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepReport {
    /// The requests admitted at its start.
    pub admitted: Vec<usize>,
    /// The requests running during it.
    pub running: usize,
    /// The tokens read in all.
    pub tokens: usize,
    /// The requests done at its end.
    pub finished: Vec<usize>,
}

/// A request being served.
#[derive(Debug)]
struct Running {
    id: usize,
    request: Request,
    arrived: usize,
    admitted: usize,
    sequence: Sequence,
    text: Vec<usize>, // prompt and written tokens
    rng: StdRng,
}

/// A server of one model: the requests waiting, those running, those done.
#[derive(Debug)]
pub struct Server<'a> {
    model: &'a LanguageModel<f32>,
    kv: PagedKv,
    policy: Policy,
    waiting: VecDeque<(usize, usize, Request)>, // id, arrival step, request
    running: Vec<Running>,
    served: Vec<Served>,
    steps: usize,
    submitted: usize,
}

impl<'a> Server<'a> {
    /// A server of `model` through the paged cache `kv` (made by it).
    pub fn new(
        model: &'a LanguageModel<f32>,
        kv: PagedKv,
        policy: Policy,
    ) -> Result<Self, AttnError> {
        if policy.slots == 0 || policy.token_budget < policy.slots {
            return Err(AttnError::InvalidArgument {
                name: "policy",
                value: policy.token_budget as f64,
                requirement: "needs at least one slot and a token budget (the value) of at least a token a slot",
            });
        }
        model.check_paged_cache(&kv)?;
        let pool = kv.pool();
        let held = |b: usize| pool.references(b) > usize::from(kv.keeps(b)); // by a sequence
        if (0..pool.blocks()).any(held) {
            return Err(AttnError::Mismatched {
                name: "paged cache of a server",
                requirement: "must hold no sequence's blocks: the server reserves the whole pool \
                              for the requests it admits (finish every sequence first)",
            });
        }
        let (waiting, running, served) = (VecDeque::new(), Vec::new(), Vec::new());
        Ok(Server { model, kv, policy, waiting, running, served, steps: 0, submitted: 0 })
    }

    /// Puts `request` in line; returns its number. Refused if it could
    /// never be served: an empty prompt, a token outside the vocabulary, a
    /// text longer than the context or than the pool holds.
    pub fn submit(&mut self, request: Request) -> Result<usize, AttnError> {
        if request.prompt.is_empty() {
            return Err(AttnError::Empty { name: "prompt", shape: (1, 0) });
        }
        self.model.check_token_ids("prompt", &request.prompt)?;
        let context = self.model.config().context;
        if request.prompt.len().saturating_add(request.count) > context {
            return Err(AttnError::TooLong {
                what: "the request's prompt and tokens to write",
                len: request.prompt.len().saturating_add(request.count),
                max: context,
            });
        }
        let pool = self.kv.pool();
        if self.blocks(&request) > pool.blocks() {
            return Err(AttnError::OutOfRange {
                name: "request's blocks",
                value: self.blocks(&request),
                requirement: "must fit the pool, whose blocks are",
                limit: pool.blocks(),
            });
        }
        let id = self.submitted;
        self.submitted += 1;
        self.waiting.push_back((id, self.steps, request));
        Ok(id)
    }

    /// The blocks a request's whole text takes.
    fn blocks(&self, request: &Request) -> usize {
        request.len().div_ceil(self.kv.pool().block_size())
    }

    /// Whether nothing waits or runs.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// The requests done so far, in the order they finished.
    pub fn served(&self) -> &[Served] {
        &self.served
    }

    /// The paged cache it serves through.
    pub fn cache(&self) -> &PagedKv {
        &self.kv
    }

    // ANCHOR: step
    /// One step: admit what fits; read, in one pass, a token of every
    /// request that is writing and chunks of the prompts being read; draw
    /// the next token of every request that has read its whole text;
    /// retire those done.
    pub fn step(&mut self) -> Result<StepReport, AttnError> {
        let mut report = StepReport { admitted: self.admit()?, ..StepReport::default() };
        let (mut reads, mut last) = (Vec::new(), Vec::new());
        let mut spare = self.policy.token_budget - self.running.len(); // past a token each
        for (j, r) in self.running.iter().enumerate() {
            // A token of the text; more of the prompt, oldest request first.
            let (read, unread) = (r.sequence.len(), r.text.len() - r.sequence.len());
            let chunk = 1 + spare.min(unread - 1);
            spare -= chunk - 1;
            reads.extend(r.text[read..read + chunk].iter().map(|&token| (j, token)));
            last.push(reads.len() - 1); // the row whose logits come next
        }
        if !reads.is_empty() {
            let mut sequences: Vec<&mut Sequence> =
                self.running.iter_mut().map(|r| &mut r.sequence).collect();
            let logits = self.model.read_paged(&reads, &mut sequences, &mut self.kv)?;
            for (r, &row) in self.running.iter_mut().zip(&last) {
                if r.sequence.len() == r.text.len() && r.text.len() < r.request.len() {
                    let logits = logits.row(row);
                    match r.request.sampler.sample(logits.as_slice().expect("a row"), &mut r.rng) {
                        Ok(next) => r.text.push(next),
                        Err(error) => {
                            // Unread again, so that the next step reads it.
                            self.kv.truncate(&mut r.sequence, r.text.len() - 1)?;
                            return Err(error);
                        }
                    }
                }
            }
        }
        (report.running, report.tokens) = (self.running.len(), reads.len());
        report.finished = self.retire()?;
        self.steps += 1;
        Ok(report)
    }
    // ANCHOR_END: step

    /// Serves every request submitted, step by step, until nothing waits
    /// or runs; returns what each step did.
    pub fn run(&mut self) -> Result<Vec<StepReport>, AttnError> {
        let mut reports = Vec::new();
        while !self.is_idle() {
            reports.push(self.step()?);
        }
        Ok(reports)
    }

    /// Admits the requests first in line that fit, as the policy says.
    fn admit(&mut self) -> Result<Vec<usize>, AttnError> {
        let mut admitted = Vec::new();
        if self.policy.batching == Batching::Static && !self.running.is_empty() {
            return Ok(admitted);
        }
        let mut reserved: usize = self.running.iter().map(|r| self.blocks(&r.request)).sum();
        while let Some((_, _, request)) = self.waiting.front() {
            let blocks = self.blocks(request);
            let fits = reserved + blocks <= self.kv.pool().blocks();
            if self.running.len() == self.policy.slots || !fits {
                break; // first come, first served: no one passes the first in line
            }
            let (id, arrived, request) = self.waiting.pop_front().expect("the front");
            let sequence = self.kv.start(&request.prompt)?; // shares a cached prefix
            let (text, rng) = (request.prompt.clone(), StdRng::seed_from_u64(request.seed));
            let admitted_at = self.steps;
            self.running.push(Running {
                id,
                request,
                arrived,
                admitted: admitted_at,
                sequence,
                text,
                rng,
            });
            reserved += blocks;
            admitted.push(id);
        }
        Ok(admitted)
    }

    /// Retires the requests that have written all their tokens.
    fn retire(&mut self) -> Result<Vec<usize>, AttnError> {
        let mut finished = Vec::new();
        let mut i = 0;
        while i < self.running.len() {
            let r = &self.running[i];
            if r.text.len() < r.request.len() {
                i += 1;
                continue;
            }
            let r = self.running.remove(i);
            finished.push(r.id);
            self.kv.finish(r.sequence)?;
            self.served.push(Served {
                id: r.id,
                text: r.text,
                arrived: r.arrived,
                admitted: r.admitted,
                finished: self.steps,
            });
        }
        Ok(finished)
    }
}

#[cfg(test)]
mod tests;
