//! Unix-epoch nanoseconds from the TSC: INT timestamps carry the low 32 bits
//! of ns since the epoch, as Host-INT writes them. Calibrated against
//! CLOCK_REALTIME and re-synced by its owner every second so that the TSC
//! and the system clock (NTP/PTP-disciplined) do not drift apart.

use std::time::{SystemTime, UNIX_EPOCH};

/// Re-sync after this many ns.
const RESYNC_NS: u64 = 1_000_000_000;

/// Reads the TSC.
#[inline]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC has no preconditions.
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: reads the timer through the shim.
    unsafe {
        dpdk_sys::shim_rdtsc()
    }
}

fn realtime_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// One lcore's clock (not shared: each owner re-syncs its own copy).
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    base_tsc: u64,
    base_ns: u64,
    /// ns per tick in 32.32 fixed point.
    ns_per_tick: u64,
}

impl TscClock {
    pub fn new(hz: u64) -> Self {
        let hz = hz.max(1);
        let mut clock = TscClock {
            base_tsc: 0,
            base_ns: 0,
            ns_per_tick: ((1_000_000_000u128 << 32) / u128::from(hz)) as u64,
        };
        clock.resync();
        clock
    }

    /// Pins the TSC to CLOCK_REALTIME now.
    pub fn resync(&mut self) {
        let before = rdtsc();
        let ns = realtime_ns();
        let after = rdtsc();
        self.base_tsc = before + (after - before) / 2;
        self.base_ns = ns;
    }

    /// Epoch ns for a TSC reading.
    #[inline]
    pub fn ns_at(&self, tsc: u64) -> u64 {
        // Saturating: another core's TSC may read a little behind the base.
        let ticks = tsc.saturating_sub(self.base_tsc);
        self.base_ns + ((u128::from(ticks) * u128::from(self.ns_per_tick)) >> 32) as u64
    }

    /// Epoch ns now; re-syncs first if the last sync is over a second old.
    #[inline]
    pub fn now_ns(&mut self) -> u64 {
        let tsc = rdtsc();
        let ns = self.ns_at(tsc);
        if ns - self.base_ns > RESYNC_NS {
            self.resync();
            return self.ns_at(rdtsc());
        }
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_realtime() {
        // 1 GHz nominal: only the conversion is checked, not the CPU's rate.
        let clock = TscClock { base_tsc: 1000, base_ns: 5_000, ns_per_tick: 1 << 32 };
        assert_eq!(clock.ns_at(1000), 5_000);
        assert_eq!(clock.ns_at(3000), 7_000);
        let slow = TscClock { base_tsc: 0, base_ns: 0, ns_per_tick: (1u64 << 32) / 2 };
        assert_eq!(slow.ns_at(4_000_000_000), 2_000_000_000);
    }
}
