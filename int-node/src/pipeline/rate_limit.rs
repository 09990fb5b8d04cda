//! The rate limit on a sink's reports, of either INT version.

/// Reports per second with a burst allowance; refilled from the host clock.
pub struct RateLimit {
    per_second: u64,
    tokens: u64,
    last_ns: u64,
}

impl RateLimit {
    pub fn new(per_second: u32) -> Self {
        RateLimit { per_second: u64::from(per_second), tokens: Self::burst(per_second), last_ns: 0 }
    }

    pub fn per_second(&self) -> u32 {
        self.per_second.min(u64::from(u32::MAX)) as u32
    }

    /// The allowance: a tenth of a second's reports, and at least 16, so
    /// that a low limit still lets one burst's reports through together
    /// (config/README.md's `export.rate_limit`).
    fn burst(per_second: u32) -> u64 {
        u64::from(per_second / 10).max(16)
    }

    #[inline]
    pub fn allow(&mut self, now_ns: u64) -> bool {
        if self.per_second == 0 {
            return true;
        }
        // At most a second's worth: the first call sees the whole epoch.
        let elapsed = now_ns.saturating_sub(self.last_ns).min(1_000_000_000);
        let refill = elapsed * self.per_second / 1_000_000_000;
        if refill > 0 {
            self.tokens = (self.tokens + refill).min(Self::burst(self.per_second as u32));
            self.last_ns = now_ns;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// At most `per_second` events in each second of the packets' clock
/// (fixed windows): a congested hop's alerts are spread over the seconds
/// it stays congested, and a quota of N is never N plus a burst.
pub struct Quota {
    per_second: u32,
    used: u32,
    window_ns: u64,
}

impl Quota {
    /// 0: no quota.
    pub fn new(per_second: u32) -> Self {
        Quota { per_second, used: 0, window_ns: 0 }
    }

    #[inline]
    pub fn allow(&mut self, now_ns: u64) -> bool {
        if self.per_second == 0 {
            return true;
        }
        let window_ns = now_ns - now_ns % 1_000_000_000;
        if window_ns != self.window_ns {
            (self.window_ns, self.used) = (window_ns, 0);
        }
        if self.used >= self.per_second {
            return false;
        }
        self.used += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Quota, RateLimit};

    /// The allowance is max(rate / 10, 16) reports at one instant, then
    /// one per 1/rate s; 0 is no limit.
    #[test]
    fn the_burst_is_a_tenth_of_the_rate_and_at_least_16() {
        let at = 7_000_000_000;
        for (rate, burst) in [(10_000, 1000), (1000, 100), (170, 17), (160, 16), (50, 16), (1, 16)] {
            let mut limit = RateLimit::new(rate);
            assert_eq!((0..5000).filter(|_| limit.allow(at)).count(), burst, "rate {rate}");
            let next = at + 1_000_000_000u64.div_ceil(u64::from(rate));
            assert_eq!((0..5000).filter(|_| limit.allow(next)).count(), 1, "rate {rate}: refilled one");
        }
        let mut unlimited = RateLimit::new(0);
        assert_eq!((0..5000).filter(|_| unlimited.allow(at)).count(), 5000);
    }

    #[test]
    fn a_quota_counts_per_second() {
        let mut quota = Quota::new(3);
        let allowed = |quota: &mut Quota, at_ns: u64, n| (0..n).filter(|_| quota.allow(at_ns)).count();
        assert_eq!(allowed(&mut quota, 5_000_000_000, 10), 3);
        assert_eq!(allowed(&mut quota, 5_900_000_000, 10), 0, "the same second");
        assert_eq!(allowed(&mut quota, 6_000_000_000, 10), 3, "the next one");
        assert_eq!(allowed(&mut Quota::new(0), 0, 10), 10, "0: no quota");
    }
}
