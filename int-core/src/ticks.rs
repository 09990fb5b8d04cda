//! Compact per-flow times: nanoseconds >> 10 (1.024 us ticks) in a `u32`.
//!
//! A sink keeps a few times per flow; at 8 bytes each they would not fit
//! the 64-byte flow slot. A tick counter wraps every 73 minutes, and times
//! are only ever compared with "now", wrapping: an interval of up to half
//! that is exact to a tick, and a time after "now" (a clock that went back)
//! counts as no time at all, never as 73 minutes.

const SHIFT: u32 = 10;

/// The longest interval a tick difference can tell (just under 2^41 ns,
/// 36 minutes): the other half of the tick circle is "before".
pub const MAX_INTERVAL_NS: u64 = (1 << (31 + SHIFT)) - 1;

#[inline]
pub fn tick(now_ns: u64) -> u32 {
    (now_ns >> SHIFT) as u32
}

/// Nanoseconds from `then` (a tick) to `now_ns`, to a tick; 0 when `then`
/// is after `now_ns`.
#[inline]
pub fn elapsed_ns(now_ns: u64, then: u32) -> u64 {
    let ticks = tick(now_ns).wrapping_sub(then);
    if ticks > i32::MAX as u32 {
        return 0;
    }
    u64::from(ticks) << SHIFT
}

/// `then` (a tick) as a full nanosecond time, taken to be at most
/// [`MAX_INTERVAL_NS`] before `now_ns`.
#[inline]
pub fn to_ns(now_ns: u64, then: u32) -> u64 {
    ((now_ns >> SHIFT) << SHIFT).saturating_sub(elapsed_ns(now_ns, then))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrap() {
        let then_ns = 5_000_000_000u64;
        let now_ns = then_ns + 2_000_000_000;
        assert!(elapsed_ns(now_ns, tick(then_ns)).abs_diff(2_000_000_000) < 1024);
        assert!(to_ns(now_ns, tick(then_ns)).abs_diff(then_ns) < 1024);
        // Across the u32 wrap of the tick counter.
        let then_ns = (u64::from(u32::MAX) << SHIFT) - 4096;
        let now_ns = then_ns + 1_000_000;
        assert!(tick(now_ns) < tick(then_ns));
        assert!(elapsed_ns(now_ns, tick(then_ns)).abs_diff(1_000_000) < 1024);
        assert_eq!(to_ns(now_ns, tick(then_ns)), then_ns);
        // The longest interval, and one longer than the counter can tell.
        assert!(elapsed_ns(then_ns + MAX_INTERVAL_NS, tick(then_ns)).abs_diff(MAX_INTERVAL_NS) < 2048);
        assert_eq!(elapsed_ns(then_ns + MAX_INTERVAL_NS + 2048, tick(then_ns)), 0);
    }

    #[test]
    fn a_clock_that_went_back_gives_no_time() {
        let then_ns = 9_000_000_000_000u64;
        assert_eq!(elapsed_ns(then_ns - 1_200_000, tick(then_ns)), 0);
        assert_eq!(elapsed_ns(then_ns - 30 * 60 * 1_000_000_000, tick(then_ns)), 0);
    }
}
