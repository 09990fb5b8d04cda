//! When a sink reports a flow's one-way latency.
//!
//! Host-INT reports the first packet of a flow, every packet whose latency
//! falls in another bucket than the previous packet's (up to 16 increasing
//! thresholds; below the first is bucket 0), and a flow not reported for
//! 2 s. The same rules are here, plus two alternatives to buckets: report
//! when the latency moved by more than an absolute amount, or by more than a
//! percentage, from the last reported value.
//!
//! Where we differ from Host-INT: the refresh period is configurable; in the
//! threshold modes the comparison is with the last *reported* latency, so a
//! slow drift is reported once it adds up, where bucket edges would miss it;
//! and bucket edges have hysteresis: a flow whose latency sits on an edge
//! (jitter of a few per cent across 250 us) would otherwise be reported on
//! every other packet. A packet moves its flow to another bucket only when
//! its latency is past the edge by [`DEFAULT_HYSTERESIS_PERCENT`] of itself
//! (configurable; 0 is Host-INT's rule), or when it is the
//! [`DEFAULT_LASTING_PACKETS`]th packet in a row in another bucket than the
//! flow's (configurable; 0: never): a change that lasts is reported even
//! where it stays within the band (240 to 264.9 us across the 250 us edge,
//! under the 6 % that would move it at once), while a flow that jitters
//! across the edge, back in its own bucket every few packets, is not.

pub const MAX_BUCKETS: usize = 16;

/// How far past a bucket edge (in per cent of the latency) a packet must be
/// to move its flow to the other bucket.
pub const DEFAULT_HYSTERESIS_PERCENT: u8 = 6;

/// How many packets in a row in another bucket than the flow's (each
/// within the hysteresis) move it there: a flow on an edge whose packets
/// fall on either side at random does so once in about 2^17 packets.
pub const DEFAULT_LASTING_PACKETS: u8 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeRule {
    /// Thresholds in ns, increasing; `len` of them are used; a flow
    /// changes bucket only `hysteresis` per cent past an edge, or after
    /// `lasting` packets in a row in another bucket (0: never).
    Buckets { thresholds: [u32; MAX_BUCKETS], len: u8, hysteresis: u8, lasting: u8 },
    /// Report when |latency - last reported| > this many ns.
    Absolute { ns: u32 },
    /// Report when |latency - last reported| > percent of last reported.
    Relative { percent: u32 },
}

impl ChangeRule {
    /// Buckets from a list; `None` if there are more than 16 or they do not
    /// increase.
    pub fn buckets(list: &[u32]) -> Option<ChangeRule> {
        if list.len() > MAX_BUCKETS || list.windows(2).any(|w| matches!(w, [a, b] if a >= b)) {
            return None;
        }
        let mut thresholds = [0u32; MAX_BUCKETS];
        thresholds.get_mut(..list.len())?.copy_from_slice(list);
        Some(ChangeRule::Buckets {
            thresholds,
            len: list.len() as u8,
            hysteresis: DEFAULT_HYSTERESIS_PERCENT,
            lasting: DEFAULT_LASTING_PACKETS,
        })
    }

    /// The same rule with another hysteresis (buckets only; at most 50 %).
    pub fn with_hysteresis(self, percent: u8) -> ChangeRule {
        match self {
            ChangeRule::Buckets { thresholds, len, lasting, .. } => {
                ChangeRule::Buckets { thresholds, len, hysteresis: percent.min(50), lasting }
            }
            other => other,
        }
    }

    /// The same rule with another run of packets that moves a flow within
    /// the hysteresis (buckets only; 0: never).
    pub fn with_lasting(self, packets: u8) -> ChangeRule {
        match self {
            ChangeRule::Buckets { thresholds, len, hysteresis, .. } => {
                ChangeRule::Buckets { thresholds, len, hysteresis, lasting: packets }
            }
            other => other,
        }
    }

    #[inline]
    pub fn bucket(&self, latency_ns: u64) -> u8 {
        match self {
            ChangeRule::Buckets { thresholds, len, .. } => thresholds
                .iter()
                .take(usize::from(*len))
                .take_while(|edge| latency_ns >= u64::from(**edge))
                .count() as u8,
            _ => 0,
        }
    }

    /// The bucket a flow in bucket `held` moves to with this latency, and
    /// the run of packets in another bucket that it ends with, `run`
    /// before it: the latency's own bucket if it is still another bucket
    /// when pulled back toward `held` by the hysteresis, or if this packet
    /// makes the run `lasting` long; else `held`, the run one longer (none
    /// when the packet is in `held`).
    #[inline]
    fn next_bucket(&self, held: u8, run: u8, latency_ns: u64) -> (u8, u8) {
        let bucket = self.bucket(latency_ns);
        let ChangeRule::Buckets { hysteresis, lasting, .. } = *self else { return (bucket, 0) };
        if bucket == held || hysteresis == 0 {
            return (bucket, 0);
        }
        let margin = latency_ns / 100 * u64::from(hysteresis);
        let pulled =
            if bucket > held { latency_ns.saturating_sub(margin) } else { latency_ns.saturating_add(margin) };
        let run = run.saturating_add(1);
        if self.bucket(pulled) != held || run == lasting {
            (bucket, 0)
        } else {
            (held, run)
        }
    }
}

/// The longest one-way latency a sink believes from 64-bit timestamps
/// (INT 2.1): a minute. Longer is a source clock far behind the sink's, or
/// a timestamp that lies, and is counted as clock skew.
pub const MAX_ONE_WAY_NS: u64 = 60_000_000_000;

/// One-way latency from 64-bit epoch-ns timestamps, as a signed difference:
/// `Ok(latency)` from 0 to [`MAX_ONE_WAY_NS`], else `Err(difference)`
/// (negative: the sink's clock is behind the source's), which is clock
/// skew, never a latency.
#[inline]
pub fn one_way_latency64(sink_ns: u64, source_ns: u64) -> Result<u64, i128> {
    let difference = i128::from(sink_ns) - i128::from(source_ns);
    match u64::try_from(difference) {
        Ok(latency) if latency <= MAX_ONE_WAY_NS => Ok(latency),
        _ => Err(difference),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyConfig {
    pub rule: ChangeRule,
    /// Report a flow at least this often while it has traffic (ns, at most
    /// [`crate::ticks::MAX_INTERVAL_NS`], to 1.024 us); 0 = never.
    pub refresh_ns: u64,
}

impl Default for LatencyConfig {
    /// Host-INT's defaults: a 2 s refresh, and buckets at 50 us, 100 us,
    /// 250 us, 500 us, 1 ms, 2.5 ms, 5 ms, 10 ms (ours; Host-INT's are set
    /// by its control program).
    fn default() -> Self {
        let rule = ChangeRule::buckets(&[
            50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000,
        ])
        .unwrap_or(ChangeRule::Absolute { ns: 100_000 });
        LatencyConfig { rule, refresh_ns: 2_000_000_000 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportReason {
    FirstPacket,
    /// The latency moved the flow to another bucket (past the edge by the
    /// hysteresis).
    BucketChange,
    /// Moved past the absolute or relative threshold.
    ThresholdChange,
    Refresh,
}

impl ReportReason {
    pub fn name(self) -> &'static str {
        match self {
            ReportReason::FirstPacket => "first_packet",
            ReportReason::BucketChange => "bucket_change",
            ReportReason::ThresholdChange => "threshold_change",
            ReportReason::Refresh => "refresh",
        }
    }
}

/// Per-flow state: 11 bytes, byte-aligned (it lives in the sink's 64-byte
/// flow slot, whose last byte it leaves to the path rule). Latencies are
/// kept in 40 bits (18 minutes, past any latency a sink believes,
/// [`MAX_ONE_WAY_NS`]): INT 2.1's timestamps tell seconds apart, and a
/// rule must not see 4.3 s as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyState {
    /// [`crate::ticks`] of the last report (native order): a refresh
    /// period may be up to [`crate::ticks::MAX_INTERVAL_NS`].
    last_report: [u8; 4],
    /// The latency last reported, 40 bits, high byte first.
    last_reported: [u8; 5],
    /// Packets in a row in another bucket than the flow's, within the
    /// hysteresis (buckets only).
    run: u8,
    /// [`REPORTED`], and the flow's bucket, held by the hysteresis (at most
    /// [`MAX_BUCKETS`], in the low bits).
    bucket: u8,
}

/// [`LatencyState::bucket`]'s bit for "reported once".
const REPORTED: u8 = 0x80;

/// The largest latency [`LatencyState`] keeps; larger ones are kept as it.
pub const MAX_KEPT_NS: u64 = (1 << 40) - 1;

impl LatencyState {
    /// The latency last reported; `None` before the first report.
    pub fn last_reported(&self) -> Option<u64> {
        (self.bucket & REPORTED != 0).then(|| self.reported_ns())
    }

    fn reported_ns(&self) -> u64 {
        self.last_reported.iter().fold(0, |ns, byte| (ns << 8) | u64::from(*byte))
    }

    /// Records one packet's latency; says whether (and why) to report it.
    #[inline]
    pub fn observe(&mut self, config: &LatencyConfig, latency_ns: u64, now_ns: u64) -> Option<ReportReason> {
        let latency_ns = latency_ns.min(MAX_KEPT_NS);
        let (bucket, run) = if self.bucket & REPORTED == 0 {
            (config.rule.bucket(latency_ns), 0)
        } else {
            config.rule.next_bucket(self.bucket & !REPORTED, self.run, latency_ns)
        };
        self.run = run;
        let reason = if self.bucket & REPORTED == 0 {
            Some(ReportReason::FirstPacket)
        } else {
            let changed = match config.rule {
                ChangeRule::Buckets { .. } => {
                    (bucket != (self.bucket & !REPORTED)).then_some(ReportReason::BucketChange)
                }
                ChangeRule::Absolute { ns } => (latency_ns.abs_diff(self.reported_ns()) > u64::from(ns))
                    .then_some(ReportReason::ThresholdChange),
                ChangeRule::Relative { percent } => {
                    let last = self.reported_ns();
                    let limit = u128::from(last) * u128::from(percent) / 100;
                    (u128::from(latency_ns.abs_diff(last)) > limit).then_some(ReportReason::ThresholdChange)
                }
            };
            changed.or_else(|| {
                (config.refresh_ns != 0
                    && crate::ticks::elapsed_ns(now_ns, u32::from_ne_bytes(self.last_report))
                        >= config.refresh_ns)
                    .then_some(ReportReason::Refresh)
            })
        };
        self.bucket = (self.bucket & REPORTED) | bucket;
        if reason.is_some() {
            self.bucket |= REPORTED;
            self.last_reported.copy_from_slice(&latency_ns.to_be_bytes()[3..]);
            self.last_report = crate::ticks::tick(now_ns).to_ne_bytes();
        }
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets() -> LatencyConfig {
        LatencyConfig { rule: ChangeRule::buckets(&[100, 200, 400]).unwrap(), refresh_ns: 1_000_000 }
    }

    #[test]
    fn bucket_index() {
        let rule = ChangeRule::buckets(&[100, 200, 400]).unwrap();
        assert_eq!(
            [0, 99, 100, 199, 200, 399, 400, u64::from(u32::MAX), u64::MAX].map(|l| rule.bucket(l)),
            [0, 0, 1, 1, 2, 2, 3, 3, 3]
        );
        assert!(ChangeRule::buckets(&[100, 100]).is_none());
        assert!(ChangeRule::buckets(&[1; 17]).is_none());
    }

    #[test]
    fn reports_first_crossings_and_refresh() {
        let config = buckets();
        let mut state = LatencyState::default();
        let seen: Vec<_> = [(50, 0), (60, 10), (150, 20), (160, 30), (90, 40), (95, 1045), (99, 1050)]
            .iter()
            .map(|(latency, t_us)| state.observe(&config, *latency, t_us * 1000))
            .collect();
        assert_eq!(
            seen,
            vec![
                Some(ReportReason::FirstPacket),
                None,
                Some(ReportReason::BucketChange),
                None,
                Some(ReportReason::BucketChange),
                Some(ReportReason::Refresh),
                None
            ]
        );
    }

    /// A flow whose latency jitters across an edge (248-252 us around the
    /// default 250 us) is reported once, not on every other packet (issue
    /// 44: 1,100 reports for 2,000 packets of IOAM through the kernel);
    /// once past the edge by the hysteresis it moves, and back likewise.
    #[test]
    fn hysteresis_holds_a_flow_that_sits_on_an_edge() {
        let config = LatencyConfig { refresh_ns: 0, ..LatencyConfig::default() };
        let jitter = [248_000, 252_000, 249_000, 251_500, 250_000, 247_000, 253_000];
        let mut state = LatencyState::default();
        let reports: Vec<_> = jitter.iter().filter_map(|l| state.observe(&config, *l, 0)).collect();
        assert_eq!(reports, [ReportReason::FirstPacket]);
        // Past 250 us by more than 6 %: the flow moves up, then stays.
        assert_eq!(state.observe(&config, 270_000, 0), Some(ReportReason::BucketChange));
        assert_eq!(state.observe(&config, 248_000, 0), None);
        // Below by more than 6 %: back down.
        assert_eq!(state.observe(&config, 230_000, 0), Some(ReportReason::BucketChange));
        // Host-INT's rule (no hysteresis) reports every crossing.
        let host_int = LatencyConfig { rule: config.rule.with_hysteresis(0), refresh_ns: 0 };
        let mut state = LatencyState::default();
        let crossings = jitter.iter().filter(|l| state.observe(&host_int, **l, 0).is_some()).count();
        assert_eq!(crossings, 6);
    }

    /// A step from 240 to 264.9 us crosses the 250 us edge by 5.6 %, within
    /// the 6 % hysteresis: with no refresh it was never reported. It lasts,
    /// so the 16th packet in a row past the edge moves the flow and reports
    /// it; the flow then stays. Jitter across the edge, back in the flow's
    /// bucket within every 16 packets, is never reported; with no run
    /// (`lasting` 0) the step is not either.
    #[test]
    fn a_lasting_change_within_the_hysteresis_is_reported() {
        let config = LatencyConfig { refresh_ns: 0, ..LatencyConfig::default() };
        let mut state = LatencyState::default();
        assert_eq!(state.observe(&config, 240_000, 0), Some(ReportReason::FirstPacket));
        let step: Vec<_> = (0..40).map(|_| state.observe(&config, 264_900, 0)).collect();
        let reported: Vec<usize> = (0..40).filter(|&i| step[i].is_some()).collect();
        assert_eq!(reported, [usize::from(DEFAULT_LASTING_PACKETS) - 1]);
        assert_eq!(step[reported[0]], Some(ReportReason::BucketChange));
        // Back down the same way.
        let back: Vec<_> = (0..16).map(|_| state.observe(&config, 240_000, 0)).collect();
        assert_eq!(back.iter().flatten().count(), 1);
        assert_eq!(back[15], Some(ReportReason::BucketChange));

        let mut state = LatencyState::default();
        let every_other = (0..10_000).map(|i| if i % 2 == 0 { 248_000 } else { 252_000 });
        assert_eq!(every_other.filter_map(|l| state.observe(&config, l, 0)).count(), 1);
        let mut state = LatencyState::default();
        let fifteen_in_sixteen = (0..10_000).map(|i| if i % 16 == 0 { 248_000 } else { 264_900 });
        assert_eq!(fifteen_in_sixteen.filter_map(|l| state.observe(&config, l, 0)).count(), 1);

        let no_run = LatencyConfig { rule: config.rule.with_lasting(0), refresh_ns: 0 };
        let mut state = LatencyState::default();
        let seen = [240_000].into_iter().chain([264_900; 1000]);
        assert_eq!(seen.filter_map(|l| state.observe(&no_run, l, 0)).count(), 1);
    }

    #[test]
    fn state_is_compact() {
        assert_eq!(core::mem::size_of::<LatencyState>(), 11);
        assert_eq!(core::mem::align_of::<LatencyState>(), 1);
    }

    #[test]
    fn absolute_and_relative_modes() {
        let absolute = LatencyConfig { rule: ChangeRule::Absolute { ns: 10 }, refresh_ns: 0 };
        let mut state = LatencyState::default();
        let seen: Vec<_> =
            [100, 105, 109, 111, 115, 99].iter().map(|l| state.observe(&absolute, *l, 0).is_some()).collect();
        assert_eq!(seen, vec![true, false, false, true, false, true]);
        let relative = LatencyConfig { rule: ChangeRule::Relative { percent: 10 }, refresh_ns: 0 };
        let mut state = LatencyState::default();
        let seen: Vec<_> = [1000, 1090, 1101, 1200, 1210]
            .iter()
            .map(|l| state.observe(&relative, *l, 0).is_some())
            .collect();
        assert_eq!(seen, vec![true, false, true, false, false]);
    }

    #[test]
    fn one_way_latency_from_64_bit_timestamps() {
        let now = 1_700_000_000_000_000_000u64;
        assert_eq!(one_way_latency64(now, now - 3_000_000_000), Ok(3_000_000_000));
        assert_eq!(one_way_latency64(now, now), Ok(0));
        assert_eq!(one_way_latency64(now, now - MAX_ONE_WAY_NS), Ok(MAX_ONE_WAY_NS));
        assert_eq!(one_way_latency64(now, now - MAX_ONE_WAY_NS - 1), Err(i128::from(MAX_ONE_WAY_NS) + 1));
        assert_eq!(one_way_latency64(now, now + 1000), Err(-1000));
        // A source timestamp of 0 is no latency of 54 years.
        assert_eq!(one_way_latency64(now, 0), Err(i128::from(now)));
        assert_eq!(one_way_latency64(0, u64::MAX), Err(-i128::from(u64::MAX)));
    }

    /// Latencies past 32 bits keep their value: 4 s and 4 s + 2^32 ns are
    /// not the same latency, and the last reported one reads back whole.
    #[test]
    fn latencies_past_32_bits() {
        let absolute = LatencyConfig { rule: ChangeRule::Absolute { ns: 1_000_000 }, refresh_ns: 0 };
        let mut state = LatencyState::default();
        let four_s = 4_000_000_000u64;
        let seen: Vec<_> = [four_s, four_s + (1 << 32), four_s + (1 << 32) + 10]
            .iter()
            .map(|l| state.observe(&absolute, *l, 0).is_some())
            .collect();
        assert_eq!(seen, vec![true, true, false]);
        assert_eq!(state.last_reported(), Some(four_s + (1 << 32)));
        let relative = LatencyConfig { rule: ChangeRule::Relative { percent: 10 }, refresh_ns: 0 };
        let mut state = LatencyState::default();
        let seen: Vec<_> = [MAX_KEPT_NS, MAX_KEPT_NS + 1, u64::MAX, 3_000_000_000]
            .iter()
            .map(|l| state.observe(&relative, *l, 0).is_some())
            .collect();
        assert_eq!(seen, vec![true, false, false, true]);
        assert_eq!(state.last_reported(), Some(3_000_000_000));
    }
}
