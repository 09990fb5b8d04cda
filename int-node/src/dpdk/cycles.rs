//! The TSC as the EAL reads it: time elapsed within a burst for a few ns a
//! reading, where the system clock's call takes tens.

/// TSC cycles to ns, at the rate the EAL measured at init.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    /// ns per cycle, 32.32 fixed point.
    ns_per_cycle: u64,
}

impl Stopwatch {
    /// `None` before the EAL has measured the TSC (no EAL: unit tests).
    pub fn new() -> Option<Stopwatch> {
        // SAFETY: reads a value the EAL sets at init (0 before); no state.
        let hz = unsafe { dpdk_sys::rte_get_tsc_hz() };
        let ns_per_cycle = (1_000_000_000u128 << 32).checked_div(u128::from(hz))?;
        Some(Stopwatch { ns_per_cycle: u64::try_from(ns_per_cycle).ok()? })
    }

    /// The TSC now.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        // SAFETY: rte_rdtsc reads the time stamp counter; no memory, no state.
        unsafe { dpdk_sys::shim_rdtsc() }
    }

    /// ns since `start`.
    #[inline(always)]
    pub fn ns_since(&self, start: u64) -> u64 {
        let cycles = self.start().saturating_sub(start);
        ((u128::from(cycles) * u128::from(self.ns_per_cycle)) >> 32).min(u128::from(u64::MAX)) as u64
    }
}
