//! How an IOAM domain's nodes write a timestamp (RFC 9197 section 5).

/// How the domain's nodes write a timestamp's fraction (RFC 9197 section
/// 5: the format is the namespace's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampFormat {
    /// Microseconds, as the Linux kernel writes them (POSIX).
    #[default]
    Posix,
    /// Nanoseconds (PTP's truncated format).
    Ptp,
}

impl TimestampFormat {
    /// Seconds and fraction of a time in ns since the epoch.
    pub fn split(self, ns: u64) -> (u32, u32) {
        let (seconds, below) = ((ns / 1_000_000_000) as u32, (ns % 1_000_000_000) as u32);
        match self {
            TimestampFormat::Posix => (seconds, below / 1000),
            TimestampFormat::Ptp => (seconds, below),
        }
    }

    /// The time in ns since the epoch of a timestamp's two fields; `None`
    /// for a fraction past a second. Seconds wrap in 2106, as the field does.
    pub fn join(self, seconds: u32, fraction: u32) -> Option<u64> {
        let below = match self {
            TimestampFormat::Posix => u64::from(fraction) * 1000,
            TimestampFormat::Ptp => u64::from(fraction),
        };
        (below < 1_000_000_000).then_some(u64::from(seconds) * 1_000_000_000 + below)
    }
}
