use super::*;

#[test]
fn a_pool_hands_out_its_blocks_then_refuses_by_type() {
    let mut pool = BlockPool::new(3, 4).unwrap();
    let blocks: Vec<usize> = (0..3).map(|_| pool.allocate().unwrap()).collect();
    assert_eq!(blocks, [0, 1, 2]);
    assert_eq!(pool.allocate(), Err(AttnError::PoolFull { blocks: 3, block_size: 4 }));
    pool.share(1).unwrap();
    pool.release(1).unwrap();
    assert_eq!(pool.free_blocks(), 0, "still held once");
    pool.release(1).unwrap();
    assert_eq!((pool.free_blocks(), pool.allocate().unwrap()), (1, 1));
    let err = BlockPool::new(3, 4).unwrap().release(0).unwrap_err().to_string();
    assert!(err.contains("block in use"), "{err}");
    assert!(pool.share(7).is_err());
    assert!(BlockPool::new(MAX_BLOCKS + 1, 1).is_err());
    assert!(BlockPool::new(4, usize::MAX / 2).unwrap_err().to_string().contains("rows"));
}

/// `slot` is the row a token's key is written to: walking the blocks of
/// the table in order, `B` rows each, visits the tokens in order.
#[test]
fn a_tables_slots_walk_its_blocks_in_order() {
    for block_size in 1..6 {
        let mut pool = BlockPool::new(40, block_size).unwrap();
        let (mut a, mut b) = (BlockTable::new(&pool), BlockTable::new(&pool));
        for t in 0..17 {
            a.push(&mut pool).unwrap();
            if t % 3 == 0 {
                b.push(&mut pool).unwrap(); // scatter a's blocks
            }
        }
        let walked: Vec<usize> = a
            .blocks()
            .iter()
            .flat_map(|&block| (0..block_size).map(move |r| block * block_size + r))
            .take(17)
            .collect();
        let slots: Vec<usize> = (0..17).map(|t| a.slot(t).unwrap()).collect();
        assert_eq!(slots, walked, "block size {block_size}");
        assert!(a.slot(17).is_err());
        let mut rows: Vec<usize> = (0..b.len()).map(|t| b.slot(t).unwrap()).collect();
        rows.extend(&slots);
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), 17 + b.len(), "two tables never share a row");
    }
}

#[test]
fn truncating_and_releasing_give_blocks_back() {
    let mut pool = BlockPool::new(5, 3).unwrap();
    let mut table = BlockTable::new(&pool);
    for _ in 0..10 {
        table.push(&mut pool).unwrap();
    }
    assert_eq!((table.blocks().len(), pool.free_blocks()), (4, 1));
    table.truncate(6, &mut pool).unwrap();
    assert_eq!((table.len(), table.blocks().len(), pool.free_blocks()), (6, 2, 3));
    table.truncate(7, &mut pool).unwrap();
    assert_eq!(table.len(), 6, "truncating never adds");
    let fork = table.fork(&mut pool).unwrap();
    table.release(&mut pool).unwrap();
    assert_eq!(pool.free_blocks(), 3, "the fork holds its blocks");
    let mut fork = fork;
    fork.release(&mut pool).unwrap();
    assert_eq!((table.len(), pool.free_blocks()), (0, 5));
}

#[test]
fn writing_into_a_shared_block_copies_it_and_a_full_pool_changes_nothing() {
    let mut pool = BlockPool::new(3, 4).unwrap();
    let mut a = BlockTable::new(&pool);
    for _ in 0..6 {
        a.push(&mut pool).unwrap();
    }
    let mut b = a.fork(&mut pool).unwrap();
    let copy = b.push(&mut pool).unwrap();
    assert_eq!(copy, Some(CopyOnWrite { from: 1, to: 2, rows: 2 }));
    assert_eq!((b.blocks(), pool.references(0), pool.references(1)), (&[0, 2][..], 2, 1));
    assert_eq!(a.push(&mut pool).unwrap(), None, "a holds block 1 alone now");
    let mut c = a.fork(&mut pool).unwrap();
    assert!(matches!(c.push(&mut pool), Err(AttnError::PoolFull { .. })));
    assert_eq!((c.len(), c.blocks(), pool.references(1)), (7, &[0, 1][..], 2));
    let other = BlockPool::new(3, 4).unwrap();
    assert!(BlockTable::new(&other).push(&mut pool).is_err(), "another pool's table");
}

#[test]
fn a_blocks_key_depends_on_its_prefix() {
    let block = [5, 6];
    assert_ne!(
        chain(chain(PREFIX_ROOT, &[1, 2]), &block),
        chain(chain(PREFIX_ROOT, &[3, 4]), &block)
    );
    assert_ne!(chain(PREFIX_ROOT, &[1, 2]), chain(PREFIX_ROOT, &[2, 1]));
    assert_eq!(chain(7, &block), chain(7, &block));
}

#[test]
fn the_prefix_cache_finds_full_blocks_before_the_last_token_and_evicts_the_oldest() {
    let mut pool = BlockPool::new(6, 2).unwrap();
    let mut cache = PrefixCache::new();
    let prompt = [1, 2, 3, 4, 5];
    let mut table = BlockTable::new(&pool);
    for _ in &prompt {
        table.push(&mut pool).unwrap();
    }
    assert!(cache.insert(&table, &prompt[..4], &mut pool).is_err(), "tokens and table differ");
    cache.insert(&table, &prompt, &mut pool).unwrap();
    assert_eq!((cache.len(), pool.references(0), pool.references(2)), (2, 2, 1));
    let found = |cache: &mut PrefixCache, prompt: &[usize], pool: &mut BlockPool| {
        let mut table = cache.lookup(prompt, pool).unwrap();
        let blocks = table.blocks().to_vec();
        table.release(pool).unwrap();
        blocks
    };
    assert_eq!(found(&mut cache, &[1, 2, 3, 4], &mut pool), [0], "[3, 4] holds the last");
    assert_eq!(found(&mut cache, &[1, 2, 3, 4, 0], &mut pool), [0, 1]);
    assert_eq!(found(&mut cache, &[1, 9, 3, 4, 0], &mut pool), Vec::<usize>::new());
    assert_eq!(cache.hits(), 1 + 2);
    assert_eq!((pool.references(0), pool.references(1)), (2, 2), "the lookups' tables released");
    let mut shared = cache.lookup(&prompt, &mut pool).unwrap();
    table.release(&mut pool).unwrap();
    assert!(!cache.evict(&mut pool).unwrap(), "every cached block is still held");
    shared.truncate(2, &mut pool).unwrap(); // block 1 now held by the cache alone
    assert!(cache.evict(&mut pool).unwrap());
    assert_eq!((cache.len(), pool.references(1)), (1, 0));
    assert_eq!(found(&mut cache, &prompt, &mut pool), [0]);
}
