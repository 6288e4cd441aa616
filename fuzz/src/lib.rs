//! The libFuzzer harness around the targets of `braid-fuzz`: one binary per target
//! (`fuzz_targets/`), and a counting allocator, so an input that makes the code under test hold
//! more than [`MEMORY_LIMIT`] bytes at once is a finding like a panic ("bounded memory").

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use libfuzzer_sys;

/// Most bytes one input may have live at once beyond what was live before it.
pub const MEMORY_LIMIT: usize = 64 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs one input through `target` and checks the memory it held.
pub fn run(data: &[u8], target: fn(&[u8])) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    target(data);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    assert!(peak <= MEMORY_LIMIT, "{peak} bytes live at once for one input (limit {MEMORY_LIMIT})");
}

/// `target!(path::to::function)`: the libFuzzer entry point for one target.
#[macro_export]
macro_rules! target {
    ($f:path) => {
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::run(data, $f));
    };
}
