//! The language model's KV cache, paged (Kwon et al., 2023): the keys and
//! values of every sequence served live in the blocks of one pool, a store
//! per key/value head (or the latents) of every block of the model, and a
//! sequence's [`BlockTable`] says which rows are its own. A step reads a
//! sequence's keys and values through its table into the order of its
//! tokens and attends over them with the contiguous cache's own function:
//! the logits are the contiguous cache's, bit for bit.

use std::sync::OnceLock;

use ndarray::{s, Array1, Array2, ArrayRef1, ArrayRef2, Axis};

use super::generate::finite;
use super::kv::{attend_heads, mismatched_cache, BlockCaches};
use super::model::{LanguageModel, LmConfig};
use crate::cache::{check_new_token, KeyValueCache};
use crate::check::{check_total, MAX_ENTRIES};
use crate::decoder::Positions;
use crate::error::AttnError;
use crate::latent::{AbsorbedLatent, LatentAttention, LatentRows};
use crate::nn::BlockAttention;
use crate::paging::{BlockPool, BlockTable, CopyOnWrite, PrefixCache};
use crate::rope_scaling::RopeFrequencies;
use crate::scaled_dot_product_attention;
use crate::sliding::attend_rows_as_values;

/// The paged KV cache of a model: a pool of blocks, and for every layer of
/// the model the stores its tokens' keys and values are written to, one
/// row a token, in the pool's rows (`blocks · B` rows each).
#[derive(Debug)]
pub struct PagedKv {
    pool: BlockPool,
    layers: Vec<PagedLayer>,
    prefixes: Option<PrefixCache>,
    made_for: LmConfig,
}

/// One layer's stores.
#[derive(Debug)]
enum PagedLayer {
    /// The keys and the values of every key/value head, and RoPE's
    /// frequencies if the step turns queries and keys at their positions.
    Heads { k: Vec<Array2<f32>>, v: Vec<Array2<f32>>, turn: Option<RopeFrequencies> },
    /// The rows `[c | k^R]` of latent attention, and the block's attention
    /// with its up-projections absorbed, which reads them.
    Latent { absorbed: Box<AbsorbedLatent>, rows: Array2<f32>, d_c: usize },
}

/// A sequence being served: the tokens it has read, and the blocks of the
/// pool that hold their keys and values.
#[derive(Debug)]
pub struct Sequence {
    table: BlockTable,
    tokens: Vec<usize>,
}

impl Sequence {
    /// The tokens it has read, whose keys and values the pool holds.
    pub fn tokens(&self) -> &[usize] {
        &self.tokens
    }

    /// How many: the position of the next.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether it has read none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Its blocks.
    pub fn table(&self) -> &BlockTable {
        &self.table
    }
}

// ANCHOR: paged_head
/// One key/value head's store, seen through one sequence's table for one
/// step: the sequence's `held` tokens, oldest first, are rows
/// `table.slot(0..held)` of `k` and `v`. The query heads of a group share
/// what the first of them gathers.
#[derive(Debug)]
struct PagedHead<'a> {
    k: &'a mut Array2<f32>,
    v: &'a mut Array2<f32>,
    table: &'a BlockTable,
    held: usize,
    gathered: OnceLock<(Array2<f32>, Array2<f32>)>,
}

impl KeyValueCache for PagedHead<'_> {
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        check_new_token(k_t, v_t, (self.k.ncols(), self.v.ncols()))?;
        let row = self.table.slot(self.held)?; // the row the table gave the token
        self.k.row_mut(row).assign(k_t);
        self.v.row_mut(row).assign(v_t);
        (self.held, self.gathered) = (self.held + 1, OnceLock::new());
        Ok(())
    }

    /// Gathers the keys and values in the order of the tokens, then
    /// attends as the contiguous cache does.
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        if self.gathered.get().is_none() {
            let (k, v) =
                (gather(self.k, self.table, self.held)?, gather(self.v, self.table, self.held)?);
            let _ = self.gathered.set((k, v));
        }
        let (k, v) = self.gathered.get().expect("gathered above");
        let q_t = q_t.to_owned().insert_axis(Axis(0)); // 1×d_k
        Ok(scaled_dot_product_attention(&q_t, k, v)?.output.row(0).to_owned())
    }

    fn len(&self) -> usize {
        self.held
    }
}

/// The rows of `store` that hold tokens `0..held` of `table`, in the
/// order of the tokens, copied a block at a time.
fn gather(store: &Array2<f32>, table: &BlockTable, held: usize) -> Result<Array2<f32>, AttnError> {
    let b = table.block_size();
    let mut rows = Array2::zeros((held, store.ncols()));
    for (i, mut chunk) in rows.axis_chunks_iter_mut(Axis(0), b).enumerate() {
        let (first, n) = (table.slot(i * b)?, chunk.nrows()); // the block's first row in the pool
        chunk.assign(&store.slice(s![first..first + n, ..]));
    }
    Ok(rows)
}
// ANCHOR_END: paged_head

/// Latent attention's rows, seen through one sequence's table for one step.
#[derive(Debug)]
struct PagedLatent<'a> {
    rows: &'a mut Array2<f32>,
    d_c: usize,
    table: &'a BlockTable,
    held: usize,
    gathered: OnceLock<Array2<f32>>, // shared by the heads
}

impl crate::latent::sealed::Sealed for PagedLatent<'_> {}

impl LatentRows for PagedLatent<'_> {
    fn widths(&self) -> (usize, usize) {
        (self.d_c, self.rows.ncols())
    }
    fn seen(&self) -> usize {
        self.held
    }
    fn append(&mut self, row: &ArrayRef1<f32>) -> Result<(), AttnError> {
        check_new_token(row, &Array1::zeros(0), (self.rows.ncols(), 0))?;
        let slot = self.table.slot(self.held)?;
        self.rows.row_mut(slot).assign(row);
        (self.held, self.gathered) = (self.held + 1, OnceLock::new());
        Ok(())
    }
    fn attend(&self, q: &ArrayRef1<f32>, scale: f32) -> Result<Array1<f32>, AttnError> {
        if self.gathered.get().is_none() {
            let _ = self.gathered.set(gather(self.rows, self.table, self.held)?);
        }
        let gathered = self.gathered.get().expect("gathered above");
        attend_rows_as_values(q, gathered.view(), self.d_c, scale)
    }
}

/// The stores of every block seen through one sequence's table: what a
/// step of the model reads and writes.
struct PagedStep<'a> {
    layers: &'a mut [PagedLayer],
    table: &'a BlockTable,
}

impl BlockCaches for PagedStep<'_> {
    fn attend(
        &mut self,
        layer: usize,
        attention: &BlockAttention<f32>,
        a: &ArrayRef2<f32>,
        (h, position): (usize, usize),
    ) -> Result<Array2<f32>, AttnError> {
        let table = self.table;
        match (attention, &mut self.layers[layer]) {
            (BlockAttention::Heads(w), PagedLayer::Heads { k, v, turn }) => {
                let head =
                    |(k, v)| PagedHead { k, v, table, held: position, gathered: OnceLock::new() };
                let mut heads: Vec<PagedHead> = k.iter_mut().zip(v.iter_mut()).map(head).collect();
                attend_heads(w, a, &mut heads, (h, turn.as_ref().map(|rope| (position, rope))))
            }
            (BlockAttention::Latent(_), PagedLayer::Latent { absorbed, rows, d_c }) => {
                let gathered = OnceLock::new();
                let mut latents = PagedLatent { rows, d_c: *d_c, table, held: position, gathered };
                Ok(absorbed.step(&a.row(0), &mut latents)?.insert_axis(Axis(0)))
            }
            _ => Err(mismatched_cache()),
        }
    }
}

impl LanguageModel<f32> {
    /// An empty paged cache for this model: a pool of `blocks` blocks of
    /// `block_size` tokens, every store allocated at once. Positions must
    /// be learned, rotary or none (ALiBi's biases are not offered here).
    pub fn new_paged_cache(&self, blocks: usize, block_size: usize) -> Result<PagedKv, AttnError> {
        let c = self.config;
        if c.positions == Positions::Alibi {
            return Err(AttnError::Mismatched {
                name: "a paged cache",
                requirement:
                    "needs learned, rotary or no positions: ALiBi's biases are not offered",
            });
        }
        let pool = BlockPool::new(blocks, block_size)?;
        let rows = blocks * block_size; // the pool checked it fits
        let d_k = c.d_model / c.heads;
        let widest = c.latent.map_or(2 * c.kv_heads * d_k, |l| l.d_c + l.d_r);
        check_total("the paged KV cache", &[c.layers, rows, widest], MAX_ENTRIES)?;
        let mut layers = Vec::with_capacity(c.layers);
        for block in &self.blocks {
            layers.push(match &block.attn {
                BlockAttention::Heads(_) => PagedLayer::Heads {
                    k: (0..c.kv_heads).map(|_| Array2::zeros((rows, d_k))).collect(),
                    v: (0..c.kv_heads).map(|_| Array2::zeros((rows, d_k))).collect(),
                    turn: c
                        .positions
                        .rope()
                        .map(|s| RopeFrequencies::of_heads(d_k, s))
                        .transpose()?,
                },
                BlockAttention::Latent(w) => {
                    let absorbed = LatentAttention::from_weights(w.clone())?.absorbed();
                    let (d_c, width) = absorbed.new_cache(1)?.widths();
                    let rows = Array2::zeros((rows, width));
                    PagedLayer::Latent { absorbed: Box::new(absorbed), rows, d_c }
                }
            });
        }
        Ok(PagedKv { pool, layers, prefixes: None, made_for: c })
    }

    // ANCHOR: step_paged
    /// [`Self::step`] through a paged cache: reads `token` at the next
    /// position of `sequence`, its keys and values written to a row the
    /// sequence's table claims in `kv`'s pool, and returns the logits of
    /// the token after it. A full pool is an error and leaves the sequence
    /// as it was. The cache does not slide: positions stop at the context.
    pub fn step_paged(
        &self,
        token: usize,
        sequence: &mut Sequence,
        kv: &mut PagedKv,
    ) -> Result<Array1<f32>, AttnError> {
        self.check_paged(token, sequence, kv)?;
        let position = sequence.len();
        kv.claim(&mut sequence.table)?; // a row for the token in every store
        let mut step = PagedStep { layers: &mut kv.layers, table: &sequence.table };
        match self.read_token(token, position, &mut step).and_then(finite) {
            Ok(logits) => {
                sequence.tokens.push(token);
                kv.remember(sequence, position)?;
                Ok(logits)
            }
            Err(error) => {
                sequence.table.truncate(position, &mut kv.pool)?;
                self.blame_parameters(error)
            }
        }
    }
    // ANCHOR_END: step_paged

    /// Checks that `kv` was made for this model.
    pub(super) fn check_paged_cache(&self, kv: &PagedKv) -> Result<(), AttnError> {
        if kv.made_for != self.config {
            return Err(mismatched_cache());
        }
        Ok(())
    }

    /// Checks that `kv` was made for this model, that `sequence` is one of
    /// its pool's, and that `token` can be read next.
    fn check_paged(
        &self,
        token: usize,
        sequence: &Sequence,
        kv: &PagedKv,
    ) -> Result<(), AttnError> {
        self.check_paged_cache(kv)?;
        kv.check_sequence(sequence)?;
        if sequence.len() >= self.config.context {
            return Err(AttnError::TooLong {
                what: "the sequence's tokens and the new one (a paged cache does not slide)",
                len: sequence.len() + 1,
                max: self.config.context,
            });
        }
        self.check_token_ids("token", &[token])
    }
}

impl PagedKv {
    /// Its pool's books: the blocks free and in use.
    pub fn pool(&self) -> &BlockPool {
        &self.pool
    }

    /// The bytes its stores take, allocated at once.
    pub fn bytes(&self) -> usize {
        let layer = |l: &PagedLayer| match l {
            PagedLayer::Heads { k, v, .. } => k.iter().chain(v).map(|x| x.len()).sum::<usize>(),
            PagedLayer::Latent { rows, .. } => rows.len(),
        };
        self.layers.iter().map(layer).sum::<usize>() * std::mem::size_of::<f32>()
    }

    /// Keeps the full blocks of every sequence in a [`PrefixCache`], so
    /// that [`PagedKv::start`] shares them with prompts that begin with
    /// the same tokens.
    pub fn share_prefixes(&mut self) {
        self.prefixes.get_or_insert_with(PrefixCache::new);
    }

    /// Whether the prefix cache keeps `block` (and so holds it once).
    pub(super) fn keeps(&self, block: usize) -> bool {
        self.prefixes.as_ref().is_some_and(|p| p.keeps(block))
    }

    /// The prefix cache, if prefixes are shared.
    pub fn prefixes(&self) -> Option<&PrefixCache> {
        self.prefixes.as_ref()
    }

    /// A new sequence that will read `prompt`: empty, or, with shared
    /// prefixes, already holding the cached blocks `prompt` begins with
    /// (its [`Sequence::tokens`] say how many of the prompt are read).
    pub fn start(&mut self, prompt: &[usize]) -> Result<Sequence, AttnError> {
        self.made_for.check_token_ids("prompt's token", prompt)?;
        let table = match &mut self.prefixes {
            Some(prefixes) => prefixes.lookup(prompt, &mut self.pool)?,
            None => BlockTable::new(&self.pool),
        };
        let tokens = prompt[..table.len()].to_vec();
        Ok(Sequence { table, tokens })
    }

    /// Ends `sequence`, returning its blocks to the pool (those the prefix
    /// cache or another sequence holds stay in use). A sequence dropped
    /// without `finish` keeps its blocks for the life of the pool.
    pub fn finish(&mut self, mut sequence: Sequence) -> Result<(), AttnError> {
        self.check_sequence(&sequence)?;
        sequence.table.release(&mut self.pool)
    }

    /// A second sequence with the same tokens, sharing every block: the
    /// first of the two to write into a shared block copies it.
    pub fn fork(&mut self, sequence: &Sequence) -> Result<Sequence, AttnError> {
        let table = sequence.table.fork(&mut self.pool)?;
        Ok(Sequence { table, tokens: sequence.tokens.clone() })
    }

    /// Forgets the tokens of `sequence` from `len` on (rejected draft
    /// tokens, say), releasing the blocks no longer needed.
    pub fn truncate(&mut self, sequence: &mut Sequence, len: usize) -> Result<(), AttnError> {
        sequence.table.truncate(len, &mut self.pool)?;
        sequence.tokens.truncate(len);
        Ok(())
    }

    // ANCHOR: claim
    /// A row in every store for `table`'s next token: a block from the
    /// pool when needed (if the pool is full, the prefix cache gives back
    /// its least recently used block first), and the rows of a block
    /// another sequence shares copied to the sequence's own.
    fn claim(&mut self, table: &mut BlockTable) -> Result<(), AttnError> {
        let copy = loop {
            match table.push(&mut self.pool) {
                Err(AttnError::PoolFull { .. }) if self.evict()? => continue,
                claimed => break claimed?,
            }
        };
        if let Some(copy) = copy {
            self.copy_rows(copy);
        }
        Ok(())
    }
    // ANCHOR_END: claim

    /// Copies the first `rows` rows of block `from` to block `to`, in every
    /// store.
    fn copy_rows(&mut self, CopyOnWrite { from, to, rows }: CopyOnWrite) {
        let b = self.pool.block_size();
        let (from, to) = (from * b, to * b);
        for layer in &mut self.layers {
            let stores = match layer {
                PagedLayer::Heads { k, v, .. } => k.iter_mut().chain(v).collect(),
                PagedLayer::Latent { rows, .. } => vec![rows],
            };
            for store in stores {
                let shared = store.slice(s![from..from + rows, ..]).to_owned();
                store.slice_mut(s![to..to + rows, ..]).assign(&shared);
            }
        }
    }

    /// A second sequence with the same tokens in blocks of its own, their
    /// keys and values copied: nothing shared (a fork shares every block
    /// and copies only the one it writes into). A full pool is an error,
    /// and allocates nothing.
    pub fn copy(&mut self, sequence: &Sequence) -> Result<Sequence, AttnError> {
        self.check_sequence(sequence)?;
        let b = self.pool.block_size();
        let mut table = BlockTable::new(&self.pool);
        for _ in 0..sequence.len() {
            if let Err(error) = table.push(&mut self.pool) {
                table.release(&mut self.pool)?;
                return Err(error);
            }
        }
        for (i, (&from, &to)) in sequence.table.blocks().iter().zip(table.blocks()).enumerate() {
            let rows = b.min(sequence.len() - i * b);
            self.copy_rows(CopyOnWrite { from, to, rows });
        }
        Ok(Sequence { table, tokens: sequence.tokens.clone() })
    }

    /// Gives a block of the prefix cache back to the pool; `false` if
    /// there is none to give.
    fn evict(&mut self) -> Result<bool, AttnError> {
        match &mut self.prefixes {
            Some(prefixes) => prefixes.evict(&mut self.pool),
            None => Ok(false),
        }
    }

    /// With shared prefixes, keeps the blocks `sequence` has filled since
    /// it held `before` tokens.
    fn remember(&mut self, sequence: &Sequence, before: usize) -> Result<(), AttnError> {
        let b = self.pool.block_size();
        match &mut self.prefixes {
            Some(p) if sequence.len() / b > before / b => {
                p.insert(&sequence.table, &sequence.tokens, &mut self.pool)
            }
            _ => Ok(()),
        }
    }

    fn check_sequence(&self, sequence: &Sequence) -> Result<(), AttnError> {
        if sequence.table.len() != sequence.tokens.len() {
            return Err(AttnError::Mismatched {
                name: "sequence",
                requirement: "must hold as many tokens as its table",
            });
        }
        sequence.table.check_pool(&self.pool)
    }
}

mod rows;

#[cfg(test)]
mod tests;
