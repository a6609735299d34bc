//! Paging a KV cache (Kwon et al., 2023): the keys and values of every
//! sequence being served live in one pool of fixed-size blocks of `B`
//! tokens, allocated as the sequences grow and returned when they end, so
//! that no sequence reserves room for a context it may never reach. A
//! sequence's [`BlockTable`] lists its blocks in order. Blocks are counted
//! by reference, so that sequences can share them (a common prefix,
//! [`PrefixCache`]; a fork), and a shared block is copied before a
//! sequence writes into it.
//!
//! This module keeps the books only: which block holds which token. The
//! numbers themselves live in the stores of [`crate::lm::PagedKv`].

use std::sync::atomic::{AtomicU64, Ordering};

use crate::check::check_total;
use crate::error::AttnError;

mod prefix;

pub use prefix::{chain, PrefixCache, PREFIX_ROOT};

/// The most blocks a pool holds: a bound on its bookkeeping.
pub const MAX_BLOCKS: usize = 1 << 24;

/// A number for each pool made, so that a table cannot be used with
/// another pool than its own.
static POOLS: AtomicU64 = AtomicU64::new(0);

// ANCHOR: pool
/// A pool of `blocks` blocks of `block_size` tokens each: how many
/// sequences hold each block (0: free), and the free ones.
#[derive(Debug)]
pub struct BlockPool {
    block_size: usize,
    references: Vec<usize>, // per block
    free: Vec<usize>,       // the free blocks; the next given is the last
    id: u64,
}

impl BlockPool {
    /// Hands out a free block, now held once: a typed error, not an
    /// abort, when none is left.
    pub fn allocate(&mut self) -> Result<usize, AttnError> {
        let block = self.free.pop().ok_or(AttnError::PoolFull {
            blocks: self.references.len(),
            block_size: self.block_size,
        })?;
        self.references[block] = 1;
        Ok(block)
    }

    /// One more holder of `block`, which must be in use.
    pub fn share(&mut self, block: usize) -> Result<(), AttnError> {
        self.check_in_use(block)?;
        self.references[block] += 1;
        Ok(())
    }

    /// One holder fewer of `block`; when none is left, it is free again.
    pub fn release(&mut self, block: usize) -> Result<(), AttnError> {
        self.check_in_use(block)?;
        self.references[block] -= 1;
        if self.references[block] == 0 {
            self.free.push(block);
        }
        Ok(())
    }
}
// ANCHOR_END: pool

impl BlockPool {
    /// A pool of `blocks` free blocks (1 to [`MAX_BLOCKS`]) of
    /// `block_size` tokens each (at least 1).
    pub fn new(blocks: usize, block_size: usize) -> Result<Self, AttnError> {
        for (name, value) in [("blocks", blocks), ("block size", block_size)] {
            if value == 0 {
                return Err(AttnError::InvalidArgument {
                    name,
                    value: 0.0,
                    requirement: "must be at least 1",
                });
            }
        }
        check_total("the pool's blocks", &[blocks], MAX_BLOCKS)?;
        check_total("the pool's rows", &[blocks, block_size], usize::MAX)?; // slots in range
        let free = (0..blocks).rev().collect(); // block 0 is given first
        let id = POOLS.fetch_add(1, Ordering::Relaxed);
        Ok(BlockPool { block_size, references: vec![0; blocks], free, id })
    }

    /// The tokens a block holds, `B`.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// The blocks it holds, free or not.
    pub fn blocks(&self) -> usize {
        self.references.len()
    }

    /// The blocks free.
    pub fn free_blocks(&self) -> usize {
        self.free.len()
    }

    /// How many hold `block` (0: free); 0 for a block past the pool.
    pub fn references(&self, block: usize) -> usize {
        self.references.get(block).copied().unwrap_or(0)
    }

    /// Checks that every one of `blocks` is in use, before a change to
    /// all of them that must not stop halfway.
    fn check_all_in_use(&self, blocks: &[usize]) -> Result<(), AttnError> {
        blocks.iter().try_for_each(|&block| self.check_in_use(block))
    }

    fn check_in_use(&self, block: usize) -> Result<(), AttnError> {
        if self.references(block) == 0 {
            return Err(AttnError::OutOfRange {
                name: "block",
                value: block,
                requirement: "must be a block in use of this pool, which holds",
                limit: self.blocks(),
            });
        }
        Ok(())
    }
}

// ANCHOR: table
/// A sequence's blocks, in order, and how many tokens they hold: token `t`
/// is row `t mod B` of block `blocks[t / B]`.
#[derive(Debug)]
pub struct BlockTable {
    blocks: Vec<usize>,
    len: usize,
    block_size: usize,
    pool: u64, // the pool its blocks belong to
}

impl BlockTable {
    /// The row of the pool's storage, counted over all its blocks, that
    /// holds token `t` (`t < len`): `blocks[t / B] · B + t mod B`.
    pub fn slot(&self, t: usize) -> Result<usize, AttnError> {
        if t >= self.len {
            return Err(AttnError::OutOfRange {
                name: "token",
                value: t,
                requirement: "must be one the table holds, fewer than",
                limit: self.len,
            });
        }
        let b = self.block_size;
        Ok(self.blocks[t / b] * b + t % b)
    }
}
// ANCHOR_END: table

/// A block that a sequence shares and is about to write into, copied first:
/// the first `rows` rows of block `from` are to be copied to block `to`,
/// now the sequence's own, in every store of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyOnWrite {
    /// The shared block.
    pub from: usize,
    /// The sequence's new block.
    pub to: usize,
    /// The rows that hold tokens.
    pub rows: usize,
}

impl BlockTable {
    /// An empty table for blocks of `pool`.
    pub fn new(pool: &BlockPool) -> Self {
        BlockTable { blocks: Vec::new(), len: 0, block_size: pool.block_size, pool: pool.id }
    }

    /// The tokens it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its blocks, in the order of the tokens they hold.
    pub fn blocks(&self) -> &[usize] {
        &self.blocks
    }

    /// The tokens a block holds, `B`.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    // ANCHOR: push
    /// Makes room for one more token: a new block when the last is full
    /// (or there is none), a copy of the last when another sequence holds
    /// it too. Returns the copy the stores must make, if any; on an error
    /// (a full pool) the table is as it was.
    pub fn push(&mut self, pool: &mut BlockPool) -> Result<Option<CopyOnWrite>, AttnError> {
        self.check_pool(pool)?;
        let (b, used) = (self.block_size, self.len % self.block_size);
        let mut copy = None;
        if used == 0 {
            self.blocks.push(pool.allocate()?); // the last block is full
        } else {
            let last = *self.blocks.last().expect("a partly used block");
            if pool.references(last) > 1 {
                let own = pool.allocate()?;
                pool.release(last)?;
                *self.blocks.last_mut().expect("a block") = own;
                copy = Some(CopyOnWrite { from: last, to: own, rows: used });
            }
        }
        self.len += 1;
        debug_assert!(self.blocks.len() == self.len.div_ceil(b));
        Ok(copy)
    }
    // ANCHOR_END: push

    /// Drops the tokens from `len` on (if it holds more), releasing the
    /// blocks no longer needed.
    pub fn truncate(&mut self, len: usize, pool: &mut BlockPool) -> Result<(), AttnError> {
        self.check_pool(pool)?;
        let len = len.min(self.len);
        let kept = len.div_ceil(self.block_size);
        pool.check_all_in_use(&self.blocks[kept..])?; // all or nothing
        for block in self.blocks.drain(kept..) {
            pool.release(block)?;
        }
        self.len = len;
        Ok(())
    }

    /// Returns every block to the pool: the sequence has ended.
    pub fn release(&mut self, pool: &mut BlockPool) -> Result<(), AttnError> {
        self.truncate(0, pool)
    }

    /// A second table holding the same tokens in the same blocks, each now
    /// held once more: the first to write into the shared last block
    /// copies it.
    pub fn fork(&self, pool: &mut BlockPool) -> Result<BlockTable, AttnError> {
        self.check_pool(pool)?;
        pool.check_all_in_use(&self.blocks)?; // all or nothing
        for &block in &self.blocks {
            pool.share(block)?;
        }
        Ok(BlockTable { blocks: self.blocks.clone(), ..*self })
    }

    /// A table of `blocks` (each now held once more), full: the blocks of
    /// a shared prefix.
    pub(crate) fn sharing(blocks: &[usize], pool: &mut BlockPool) -> Result<Self, AttnError> {
        pool.check_all_in_use(blocks)?; // all or nothing
        for &block in blocks {
            pool.share(block)?;
        }
        let len = blocks.len() * pool.block_size; // blocks of the pool: no overflow
        Ok(BlockTable { blocks: blocks.to_vec(), len, ..BlockTable::new(pool) })
    }

    /// Checks that its blocks are `pool`'s.
    pub(crate) fn check_pool(&self, pool: &BlockPool) -> Result<(), AttnError> {
        if self.pool != pool.id {
            return Err(AttnError::Mismatched {
                name: "block table",
                requirement: "must be used with the pool it was made for",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
