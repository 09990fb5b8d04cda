//! The host's time base: Unix-epoch nanoseconds from CLOCK_REALTIME, read
//! once per burst, never stepping backwards.
//!
//! Every process on a host reads the same kernel clock, so a source and a
//! sink on one host agree to the cost of a read (tens of ns, through the
//! vDSO); across hosts they agree as well as the hosts' NTP or PTP
//! discipline does. INT 0.5 timestamps carry its low 32 bits, as Host-INT
//! writes them.
//!
//! A per-process clock extrapolated from the TSC rate would not do: DPDK's
//! rate is an estimate (rounded to 10 MHz on VMs), so such a clock runs fast
//! by up to milliseconds a second and every re-sync steps it back, by an
//! amount and at a phase of its own in each process.
//!
//! CLOCK_REALTIME itself can step back (an operator or NTP setting the
//! time). The clock then holds its last value until the system clock has
//! caught up: every time the node computes (flow ages, latencies, report
//! pacing) moves forward or stands still, and each hold is counted.

use std::time::{SystemTime, UNIX_EPOCH};

/// One lcore's reader of the host clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    last_ns: u64,
    holding: bool,
    /// Times the system clock was found behind the last reading.
    steps_back: u64,
}

impl Clock {
    pub fn new() -> Self {
        Clock::default()
    }

    /// Epoch ns now: never less than any earlier reading of this clock.
    #[inline]
    pub fn now_ns(&mut self) -> u64 {
        self.advance(realtime_ns())
    }

    /// Takes a reading of the system clock: the later of it and the last
    /// value.
    #[inline]
    fn advance(&mut self, system_ns: u64) -> u64 {
        if system_ns >= self.last_ns {
            self.last_ns = system_ns;
            self.holding = false;
        } else if !self.holding {
            self.holding = true;
            self.steps_back += 1;
        }
        self.last_ns
    }

    /// How often the system clock stepped back under this clock.
    pub fn steps_back(&self) -> u64 {
        self.steps_back
    }
}

/// CLOCK_REALTIME in ns (std reads it with clock_gettime, a vDSO call).
#[inline]
fn realtime_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_while_the_system_clock_is_behind() {
        let mut clock = Clock::new();
        assert_eq!(clock.advance(1_000), 1_000);
        assert_eq!(clock.advance(2_000), 2_000);
        // Stepped back by 1.5 us: held, and counted once.
        assert_eq!(clock.advance(500), 2_000);
        assert_eq!(clock.advance(1_900), 2_000);
        assert_eq!(clock.steps_back(), 1);
        assert_eq!(clock.advance(2_100), 2_100);
        assert_eq!(clock.advance(2_050), 2_100);
        assert_eq!(clock.steps_back(), 2);
    }

    #[test]
    fn follows_the_system_clock() {
        let mut clock = Clock::new();
        let before = realtime_ns();
        let now = clock.now_ns();
        let after = realtime_ns();
        assert!((before..=after).contains(&now));
        assert!(clock.now_ns() >= now);
    }
}
