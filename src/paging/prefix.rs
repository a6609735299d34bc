//! Shared prefixes: the full blocks of every sequence, kept by a key that
//! chains the block's tokens to the key of the prefix before it, so that a
//! new prompt beginning with the same tokens reads those blocks instead of
//! computing them again (vLLM's automatic prefix caching; SGLang's radix
//! cache, Zheng et al., 2024, keeps the same tree).

use std::collections::HashMap;

use super::{BlockPool, BlockTable};
use crate::error::AttnError;

/// The key of the empty prefix, before the first block (FNV-1a's offset).
pub const PREFIX_ROOT: u64 = 0xcbf2_9ce4_8422_2325;

// ANCHOR: chain
/// The key of a full block of `tokens` that follows the prefix whose key
/// is `parent`: FNV-1a over the parent's key, then the tokens. Equal
/// blocks after different prefixes get different keys, since their keys
/// and values differ.
pub fn chain(parent: u64, tokens: &[usize]) -> u64 {
    let bytes = tokens.iter().flat_map(|&t| (t as u64).to_le_bytes());
    let mut key = PREFIX_ROOT;
    for byte in parent.to_le_bytes().into_iter().chain(bytes) {
        key = (key ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    }
    key
}
// ANCHOR_END: chain

/// What a cached block holds: its key, its prefix's key and its tokens
/// (compared on a hit, so that a collision of keys cannot give a sequence
/// another's keys and values), and when it was last used.
#[derive(Debug)]
struct Entry {
    key: u64,
    parent: u64,
    tokens: Vec<usize>,
    used: u64,
}

/// Full blocks kept for the prompts to come: each held once by the cache
/// itself, so that it outlives the sequence that wrote it, until the pool
/// needs it back ([`PrefixCache::evict`]).
#[derive(Debug, Default)]
pub struct PrefixCache {
    by_key: HashMap<u64, usize>,    // key → block
    entries: HashMap<usize, Entry>, // block → what it holds
    clock: u64,
    hits: usize,
    pool: Option<u64>, // the pool it keeps blocks of, from its first use
}

impl PrefixCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The blocks it keeps.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The blocks [`PrefixCache::lookup`] has found so far.
    pub fn hits(&self) -> usize {
        self.hits
    }

    // ANCHOR: lookup
    /// A table of the cached blocks that `prompt` begins with, each now
    /// held once more: the full blocks before the prompt's last token
    /// (whose logits are still to compute) found under their chained keys
    /// with the same tokens after the same prefix, up to the first that is
    /// not.
    pub fn lookup(
        &mut self,
        prompt: &[usize],
        pool: &mut BlockPool,
    ) -> Result<BlockTable, AttnError> {
        self.check_pool(pool)?;
        self.clock += 1;
        let before_last = &prompt[..prompt.len().saturating_sub(1)];
        let (mut parent, mut blocks) = (PREFIX_ROOT, Vec::new());
        for tokens in before_last.chunks_exact(pool.block_size()) {
            let key = chain(parent, tokens);
            let Some(&block) = self.by_key.get(&key) else { break };
            let entry = self.entries.get_mut(&block).expect("every key's block is kept");
            if entry.parent != parent || entry.tokens != tokens {
                break; // two prefixes with one key: not this one
            }
            entry.used = self.clock;
            blocks.push(block);
            parent = key;
        }
        self.hits += blocks.len();
        BlockTable::sharing(&blocks, pool)
    }
    // ANCHOR_END: lookup

    /// Keeps the full blocks of `table`, which holds `tokens` in order,
    /// that it does not keep yet, each held once more by the cache.
    pub fn insert(
        &mut self,
        table: &BlockTable,
        tokens: &[usize],
        pool: &mut BlockPool,
    ) -> Result<(), AttnError> {
        self.check_pool(pool)?;
        table.check_pool(pool)?;
        if tokens.len() != table.len() {
            return Err(AttnError::OutOfRange {
                name: "tokens",
                value: tokens.len(),
                requirement: "must be the tokens the table holds, as many as",
                limit: table.len(),
            });
        }
        self.clock += 1;
        let mut parent = PREFIX_ROOT;
        for (tokens, &block) in tokens.chunks_exact(table.block_size()).zip(table.blocks()) {
            let key = chain(parent, tokens);
            match (self.by_key.get(&key).map(|b| &self.entries[b]), self.entries.get(&block)) {
                (Some(held), _) if held.parent == parent && held.tokens == tokens => {} // kept
                (None, None) => {
                    pool.share(block)?;
                    self.by_key.insert(key, block);
                    let entry = Entry { key, parent, tokens: tokens.to_vec(), used: self.clock };
                    self.entries.insert(block, entry);
                }
                // Another prefix holds the key (a collision), or the block is
                // kept under another key: what follows is not kept either,
                // since its key would chain to another prefix's.
                _ => break,
            }
            parent = key;
        }
        Ok(())
    }

    /// Whether it keeps `block` (and so holds it once).
    pub(crate) fn keeps(&self, block: usize) -> bool {
        self.entries.contains_key(&block)
    }

    /// Gives back to the pool the least recently used block that only the
    /// cache holds; `false` if there is none.
    pub fn evict(&mut self, pool: &mut BlockPool) -> Result<bool, AttnError> {
        self.check_pool(pool)?;
        let unused = self.entries.iter().filter(|(&block, _)| pool.references(block) == 1);
        let Some(block) = unused.min_by_key(|(&block, e)| (e.used, block)).map(|(&b, _)| b) else {
            return Ok(false);
        };
        let entry = self.entries.remove(&block).expect("found above");
        self.by_key.remove(&entry.key);
        pool.release(block)?;
        Ok(true)
    }

    /// Binds the cache to `pool` at its first use; any other pool is
    /// refused, since the cache's blocks are that pool's.
    fn check_pool(&mut self, pool: &BlockPool) -> Result<(), AttnError> {
        if *self.pool.get_or_insert(pool.id) != pool.id {
            return Err(AttnError::Mismatched {
                name: "prefix cache",
                requirement: "must be used with the pool whose blocks it keeps",
            });
        }
        Ok(())
    }
}
