//! The global allocator that proves the packet path allocates nothing.

/// The global allocator: the system's, counting what worker lcores allocate
/// while they forward (`on_packet_path`), so that a run can prove that the
/// packet path allocates nothing.
pub struct CountingAllocator;

static PACKET_PATH_ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    static ON_PACKET_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as on (or off) the packet path.
pub fn on_packet_path(on: bool) {
    ON_PACKET_PATH.with(|flag| flag.set(on));
}

/// Allocations made on the packet path so far.
pub fn packet_path_allocations() -> u64 {
    PACKET_PATH_ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

fn count() {
    // try_with: during thread teardown the flag may be gone.
    if ON_PACKET_PATH.try_with(|flag| flag.get()).unwrap_or(false) {
        PACKET_PATH_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counting touches only an atomic and a const-initialised thread-local.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout contract is passed on as it is.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above; ptr came from this allocator (the system's).
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
