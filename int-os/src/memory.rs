//! Memory hints: cache prefetch and transparent huge pages.

/// A hint to load `value`'s cache line.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint on a valid reference; it never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch((value as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Asks the kernel to back `[start, start + len)` with transparent huge
/// pages (where enabled as `madvise`): big flow tables then cost far fewer
/// TLB misses. Call before the memory is first touched.
pub fn advise_huge_pages(start: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let first = (start as usize).div_ceil(HUGE) * HUGE;
    let end = (start as usize + len) / HUGE * HUGE;
    if end > first {
        // SAFETY: madvise only changes how the kernel backs these pages,
        // which lie inside an allocation the caller owns.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}
