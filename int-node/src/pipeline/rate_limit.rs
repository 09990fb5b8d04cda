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
