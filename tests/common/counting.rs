//! A global allocator that wraps the system one and counts the bytes
//! allocated at once (chapters 8 and 9's memory benchmark and the
//! appendix's memory test include this file with `#[path]` and install it
//! with `#[global_allocator]`). The counts depend on the sizes allocated,
//! not on timing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting the bytes currently allocated and the
/// most ever allocated at once since the last [`peak_during`].
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
}

/// The bytes allocated now.
#[allow(dead_code, reason = "only some of the files that include this read it")]
pub fn current() -> usize {
    CURRENT.load(Relaxed)
}

/// Runs `f` and returns its result, dropped, with the most bytes allocated
/// at once above what was allocated before it started.
#[allow(dead_code, reason = "only some of the files that include this read it")]
pub fn peak_during<T>(f: impl FnOnce() -> T) -> usize {
    let before = CURRENT.load(Relaxed);
    PEAK.store(before, Relaxed);
    drop(f());
    PEAK.load(Relaxed) - before
}
