//! Reading many tokens in one pass through a paged cache: a token of every
//! sequence being served (a step of continuous batching), or several
//! tokens of one sequence (a prompt read in chunks; a draft verified in
//! one pass). The LayerNorms, the feed-forward products and the output
//! head take all the rows at once; each row attends over its own
//! sequence's cache, the rows of a sequence in order. [`LanguageModel::step`]'s
//! one token at a time and this are a pair: the tests hold each row to
//! [`LanguageModel::step_paged`]'s logits, bit for bit.

use ndarray::{s, Array2};

use super::{PagedKv, PagedStep, Sequence};
use crate::check::{check_total, MAX_ENTRIES};
use crate::decoder::{Positions, EPS};
use crate::error::AttnError;
use crate::lm::kv::BlockCaches;
use crate::lm::model::LanguageModel;
use crate::nn::{ffn_sublayer, layer_norm_forward};

impl LanguageModel<f32> {
    /// Reads a token for each of `reads`, `(sequence, token)` with
    /// `sequence` an index into `sequences`, in one pass, the rows of a
    /// sequence one after the other in the order given. Returns the logits
    /// of every row, `reads.len() × vocab`: each row's are those
    /// [`Self::step_paged`] would return for it. On an error, no sequence
    /// has read anything.
    pub fn read_paged(
        &self,
        reads: &[(usize, usize)],
        sequences: &mut [&mut Sequence],
        kv: &mut PagedKv,
    ) -> Result<Array2<f32>, AttnError> {
        self.check_reads(reads, sequences, kv)?;
        let before: Vec<usize> = sequences.iter().map(|s| s.len()).collect();
        let mut positions = Vec::with_capacity(reads.len());
        let mut claim = || -> Result<(), AttnError> {
            for &(s, _) in reads {
                positions.push(sequences[s].table.len());
                kv.claim(&mut sequences[s].table)?;
            }
            Ok(())
        };
        let logits = claim().and_then(|()| self.read_rows(reads, &positions, sequences, kv));
        match logits {
            Ok(logits) => {
                for &(s, token) in reads {
                    sequences[s].tokens.push(token);
                }
                for (sequence, &len) in sequences.iter().zip(&before) {
                    kv.remember(sequence, len)?;
                }
                Ok(logits)
            }
            Err(error) => {
                for (sequence, &len) in sequences.iter_mut().zip(&before) {
                    sequence.table.truncate(len, &mut kv.pool)?;
                }
                self.blame_parameters(error)
            }
        }
    }

    // ANCHOR: read_rows
    /// [`Self::read_paged`]'s work, once the rows have their places in the
    /// pool: the token of row `i` at `positions[i]`.
    fn read_rows(
        &self,
        reads: &[(usize, usize)],
        positions: &[usize],
        sequences: &[&mut Sequence],
        kv: &mut PagedKv,
    ) -> Result<Array2<f32>, AttnError> {
        let (c, eps) = (self.config, EPS as f32);
        let mut x = Array2::zeros((reads.len(), c.d_model)); // a row a token
        for (i, (&(_, token), &p)) in reads.iter().zip(positions).enumerate() {
            x.row_mut(i).assign(&self.tokens.row(token));
            if c.positions == Positions::Learned {
                x.row_mut(i).zip_mut_with(&self.positions.row(p), |x, p| *x += p);
            }
        }
        for (l, block) in self.blocks.iter().enumerate() {
            let (a, _) = layer_norm_forward(&x, &block.ln1.gamma, &block.ln1.beta, eps)?;
            let mut attended = Array2::zeros(x.raw_dim());
            for (i, (&(s, _), &p)) in reads.iter().zip(positions).enumerate() {
                // Each row over its own sequence's cache.
                let mut step = PagedStep { layers: &mut kv.layers, table: &sequences[s].table };
                let a_i = a.slice(s![i..i + 1, ..]);
                attended
                    .row_mut(i)
                    .assign(&step.attend(l, &block.attn, &a_i, (c.heads, p))?.row(0));
            }
            x += &attended;
            let (f, _) = ffn_sublayer(&x, (&block.ln2, &block.ffn), c.activation, eps)?;
            x += &f; // all the rows' products at once
        }
        let mut logits = Array2::zeros((reads.len(), c.vocab));
        for (i, mut row) in logits.rows_mut().into_iter().enumerate() {
            row.assign(&self.read_out(&x.slice(s![i..i + 1, ..]))?.row(0)); // a row at a time
        }
        Ok(logits)
    }
    // ANCHOR_END: read_rows

    /// Checks `read_paged`'s arguments before anything is read.
    fn check_reads(
        &self,
        reads: &[(usize, usize)],
        sequences: &[&mut Sequence],
        kv: &PagedKv,
    ) -> Result<(), AttnError> {
        if reads.is_empty() {
            return Err(AttnError::Empty { name: "reads", shape: (0, 2) });
        }
        let widest = self.config.d_model.max(self.config.vocab); // a row of x, of logits
        check_total("the rows read", &[reads.len(), widest], MAX_ENTRIES)?;
        self.check_paged_cache(kv)?;
        let mut counts = vec![0_usize; sequences.len()];
        for &(s, token) in reads {
            let count = counts.get_mut(s).ok_or(AttnError::OutOfRange {
                name: "read's sequence",
                value: s,
                requirement: "must be an index into the sequences, which are",
                limit: sequences.len(),
            })?;
            *count += 1;
            self.check_token_ids("token", &[token])?;
        }
        for (sequence, &count) in sequences.iter().zip(&counts) {
            kv.check_sequence(sequence)?;
            let len = sequence.len() + count;
            if len > self.config.context {
                return Err(AttnError::TooLong {
                    what:
                        "a sequence's tokens and those it is to read (a paged cache does not slide)",
                    len,
                    max: self.config.context,
                });
            }
        }
        Ok(())
    }
}
