//! Per-flow sequence tracking at the sink: which flow sequence numbers never
//! arrived.
//!
//! A 64-packet window below the highest sequence number seen holds one bit
//! per packet. A packet is declared lost only when it falls out of the
//! window without having arrived, or when the flow has been silent for the
//! loss timeout and the sink flushes the window ([`SequenceTracker::flush`]).
//! Counts are 32-bit and wrap.
//!
//! Where we differ from Host-INT, and why:
//! - Host-INT keeps one gap (head, tail, 16-bit count): a duplicate inside a
//!   gap hides a loss and counts wrap at 65536. Here every packet has its
//!   own bit: a duplicate is counted as a duplicate and never fills a hole.
//! - Reordering within 64 packets is never counted as loss, however long it
//!   takes (Host-INT counts reordering over 200 ms as loss).
//! - Sequence numbers are compared in serial arithmetic (RFC 1982), so the
//!   2^32 wrap is just one more step forward.
//! - A source restart (sequence number 1 again, or a jump back by more than
//!   2^20) resets the flow instead of counting a huge gap; it starts clean
//!   (a jump back is as easily forged as a jump ahead).
//! - A jump ahead is believed only up to a bound the caller gives (from the
//!   most packets the flow can have sent since its last one): a larger jump
//!   is a forged or corrupted number, or a source that restarted high. The
//!   numbers jumped over are not declared; the flow starts again from it
//!   ([`SeqEvent::Implausible`]), so one spoofed packet cannot claim 2^31
//!   losses.
//! - Sources number a flow from 1: a flow first seen at a small number
//!   (within the window) had its first packets lost or overtaken, so those
//!   numbers are holes like any other. A flow first seen at a large number
//!   (the sink started late, or forgot the flow) starts clean.

/// Packets a late arrival may trail the highest sequence number and still
/// fill its hole.
pub const WINDOW: u32 = 64;
/// A jump back by more than this is a source restart, not a late packet.
pub const RESTART_DISTANCE: u32 = 1 << 20;

/// What one packet's sequence number meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqEvent {
    /// The flow's first packet (or first after a restart).
    First,
    /// The next expected number.
    InOrder,
    /// Ahead of the next expected: `skipped` numbers are now missing (not
    /// yet declared lost).
    Ahead { skipped: u32 },
    /// Fills a hole inside the window.
    Reordered,
    /// Already seen.
    Duplicate,
    /// Older than the window: its number was already declared lost.
    Late,
    /// The source started again.
    Restart,
    /// Further ahead than the flow could have gone: not believed; the flow
    /// starts again from this number (holes already open are declared, as at
    /// a restart; the numbers jumped over are not).
    Implausible,
}

/// The largest jump ahead a caller may allow (half the sequence space: more
/// is behind).
pub const MAX_JUMP: u32 = 0x7FFF_FFFF;

/// Losses declared and not yet reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingLoss {
    /// The first sequence number declared lost since the last report.
    pub first_sequence: u32,
    /// When the first of them was declared (sink clock, ns, to 1.024 us).
    pub first_declared_ns: u64,
    pub count: u32,
}

/// What one arrival did: its meaning, and how many packets it declared
/// lost (holes pushed out of the window, or the old run at a restart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub event: SeqEvent,
    pub declared_lost: u32,
}

/// One flow's sequence state: 24 bytes, 4-byte aligned, so that the sink's
/// whole flow slot fits one cache line. Counting (duplicates, reordering,
/// losses) is the caller's, from what [`SequenceTracker::record`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SequenceTracker {
    highest: u32,
    /// Bit i: `highest - i` arrived; low word first. Bits for numbers before
    /// the first packet are set, so they never count as lost. All zero
    /// before the first packet (afterwards bit 0, `highest`, is always set).
    /// Two words rather than a u64 keep the alignment at 4.
    window: [u32; 2],
    pending_first_sequence: u32,
    /// [`crate::ticks`] of the first pending loss's declaration.
    pending_declared: u32,
    pending_count: u32,
}

impl SequenceTracker {
    pub fn highest(&self) -> Option<u32> {
        self.started().then_some(self.highest)
    }

    #[inline]
    fn started(&self) -> bool {
        self.window() != 0
    }

    #[inline]
    fn window(&self) -> u64 {
        u64::from(self.window[0]) | (u64::from(self.window[1]) << 32)
    }

    #[inline]
    fn set_window(&mut self, window: u64) {
        self.window = [window as u32, (window >> 32) as u32];
    }

    /// Records one arrival; a jump ahead by more than `max_jump` numbers is
    /// [`SeqEvent::Implausible`].
    #[inline]
    pub fn record(&mut self, sequence: u32, now_ns: u64, max_jump: u32) -> Recorded {
        if !self.started() {
            self.start(sequence);
            return Recorded { event: SeqEvent::First, declared_lost: 0 };
        }
        let ahead = sequence.wrapping_sub(self.highest);
        if ahead == 0 {
            return Recorded { event: SeqEvent::Duplicate, declared_lost: 0 };
        }
        if ahead <= MAX_JUMP && ahead > max_jump.max(1) {
            // Holes already open are declared, as at a restart; the numbers
            // jumped over are not holes.
            let declared_lost = self.flush(now_ns);
            self.highest = sequence;
            return Recorded { event: SeqEvent::Implausible, declared_lost };
        }
        if ahead <= MAX_JUMP {
            let declared_lost = self.advance(ahead, now_ns);
            let event = if ahead == 1 { SeqEvent::InOrder } else { SeqEvent::Ahead { skipped: ahead - 1 } };
            return Recorded { event, declared_lost };
        }
        let behind = self.highest.wrapping_sub(sequence);
        if behind < WINDOW {
            let bit = 1u64 << behind;
            let window = self.window();
            if window & bit != 0 {
                if sequence == 1 {
                    return self.restart(sequence, now_ns);
                }
                return Recorded { event: SeqEvent::Duplicate, declared_lost: 0 };
            }
            self.set_window(window | bit);
            return Recorded { event: SeqEvent::Reordered, declared_lost: 0 };
        }
        if sequence == 1 || behind > RESTART_DISTANCE {
            return self.restart(sequence, now_ns);
        }
        Recorded { event: SeqEvent::Late, declared_lost: 0 }
    }

    fn start(&mut self, sequence: u32) {
        self.highest = sequence;
        let mut window = u64::MAX;
        if (2..=WINDOW).contains(&sequence) {
            // Bits 1..sequence-1 stand for numbers 1..sequence-1.
            let missing = (1u64 << (sequence - 1)) - 1;
            window &= !(missing << 1);
        }
        self.set_window(window);
    }

    fn restart(&mut self, sequence: u32, now_ns: u64) -> Recorded {
        // Holes left by the old run never arrived: they are losses.
        let declared_lost = self.flush(now_ns);
        self.highest = sequence;
        Recorded { event: SeqEvent::Restart, declared_lost }
    }

    fn advance(&mut self, ahead: u32, now_ns: u64) -> u32 {
        let old_highest = self.highest;
        let window = self.window();
        let declared;
        if ahead >= WINDOW {
            // The whole window leaves, and so do the skipped numbers that do
            // not fit in the new window.
            let mut count = self.declare_window_holes(!window, now_ns);
            let beyond = ahead - WINDOW;
            if beyond > 0 {
                count += self.declare(old_highest.wrapping_add(1), beyond, now_ns);
            }
            declared = count;
            self.set_window(1);
        } else {
            let leaving = !window & !(u64::MAX >> ahead);
            declared = self.declare_window_holes(leaving, now_ns);
            self.set_window((window << ahead) | 1);
        }
        self.highest = old_highest.wrapping_add(ahead);
        declared
    }

    /// Declares the set bits of `holes` (positions in the current window)
    /// lost; returns how many.
    fn declare_window_holes(&mut self, holes: u64, now_ns: u64) -> u32 {
        let count = holes.count_ones();
        if count == 0 {
            return 0;
        }
        let oldest_hole = 63 - holes.leading_zeros();
        self.declare(self.highest.wrapping_sub(oldest_hole), count, now_ns)
    }

    fn declare(&mut self, first_sequence: u32, count: u32, now_ns: u64) -> u32 {
        if self.pending_count == 0 {
            self.pending_first_sequence = first_sequence;
            self.pending_declared = crate::ticks::tick(now_ns);
        }
        self.pending_count = self.pending_count.wrapping_add(count);
        count
    }

    /// Declares every hole still in the window lost (the sink calls this
    /// once the flow has been silent for the loss timeout); returns how
    /// many. A packet that fills such a hole afterwards is a duplicate.
    pub fn flush(&mut self, now_ns: u64) -> u32 {
        if !self.started() {
            return 0;
        }
        let declared = self.declare_window_holes(!self.window(), now_ns);
        self.set_window(u64::MAX);
        declared
    }

    /// Whether the window still has holes (missing, not yet declared).
    pub fn has_holes(&self) -> bool {
        self.started() && self.window() != u64::MAX
    }

    /// Losses declared and not yet taken.
    pub fn pending_count(&self) -> u32 {
        self.pending_count
    }

    /// How long ago the first loss not yet taken was declared (ns, to
    /// 1.024 us); 0 when none is pending.
    pub fn pending_age_ns(&self, now_ns: u64) -> u64 {
        if self.pending_count == 0 {
            return 0;
        }
        crate::ticks::elapsed_ns(now_ns, self.pending_declared)
    }

    /// Losses declared since the last call, if any; `now_ns` is the clock
    /// the losses were declared on (their time is kept in ticks).
    pub fn take_pending(&mut self, now_ns: u64) -> Option<PendingLoss> {
        if self.pending_count == 0 {
            return None;
        }
        let pending = PendingLoss {
            first_sequence: self.pending_first_sequence,
            first_declared_ns: crate::ticks::to_ns(now_ns, self.pending_declared),
            count: self.pending_count,
        };
        self.pending_count = 0;
        Some(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a caller counts from the tracker's answers.
    #[derive(Default)]
    struct Tally {
        tracker: SequenceTracker,
        lost: u32,
        duplicates: u32,
        reordered: u32,
        late: u32,
        restarts: u32,
    }

    impl Tally {
        fn record(&mut self, sequence: u32, now_ns: u64) {
            let recorded = self.tracker.record(sequence, now_ns, MAX_JUMP);
            self.lost += recorded.declared_lost;
            match recorded.event {
                SeqEvent::Duplicate => self.duplicates += 1,
                SeqEvent::Reordered => self.reordered += 1,
                SeqEvent::Late => self.late += 1,
                SeqEvent::Restart => self.restarts += 1,
                SeqEvent::First | SeqEvent::InOrder | SeqEvent::Ahead { .. } | SeqEvent::Implausible => {}
            }
        }

        fn flush(&mut self, now_ns: u64) {
            self.lost += self.tracker.flush(now_ns);
        }
    }

    fn feed(sequences: &[u32]) -> Tally {
        let mut tally = Tally::default();
        for (t, s) in sequences.iter().enumerate() {
            tally.record(*s, t as u64);
        }
        tally
    }

    fn lost_after_flush(sequences: &[u32]) -> u32 {
        let mut tally = feed(sequences);
        tally.flush(1_000_000);
        tally.lost
    }

    #[test]
    fn in_order_loses_nothing() {
        let seqs: Vec<u32> = (1..=1000).collect();
        assert_eq!(lost_after_flush(&seqs), 0);
    }

    #[test]
    fn every_kth_removed_is_counted() {
        let seqs: Vec<u32> = (1..=1000).filter(|s| s % 7 != 0).collect();
        assert_eq!(lost_after_flush(&seqs), 1000 / 7);
    }

    #[test]
    fn burst_longer_than_window() {
        let seqs: Vec<u32> = (1..=1000).filter(|s| !(100..400).contains(s)).collect();
        let mut tally = feed(&seqs);
        assert_eq!(tally.lost, 300, "declared as the window passes");
        let pending = tally.tracker.take_pending(2000).unwrap();
        assert_eq!((pending.first_sequence, pending.count), (100, 300));
        assert_eq!(tally.tracker.take_pending(2000), None);
    }

    #[test]
    fn reordering_is_not_loss() {
        let mut seqs: Vec<u32> = (1..=200).collect();
        seqs.swap(10, 11);
        seqs.swap(50, 90); // 91 overtakes 51..=90: 40 late arrivals
        let tally = feed(&seqs);
        assert_eq!(tally.reordered, 1 + 40);
        assert_eq!(lost_after_flush(&seqs), 0);
    }

    #[test]
    fn duplicate_never_hides_a_loss() {
        // 5 is lost; 4 arrives twice, once where 5 should have been.
        let seqs = [1, 2, 3, 4, 4, 6, 7];
        let tally = feed(&seqs);
        assert_eq!(tally.duplicates, 1);
        assert_eq!(lost_after_flush(&seqs), 1);
        // A duplicate of the newest packet.
        assert_eq!(lost_after_flush(&[1, 2, 2, 3]), 0);
    }

    #[test]
    fn wrap_at_2_pow_32() {
        let start = u32::MAX - 10;
        let seqs: Vec<u32> = (0..30u32).map(|i| start.wrapping_add(i)).filter(|s| *s != 2).collect();
        let mut tally = feed(&seqs);
        tally.flush(99);
        assert_eq!(tally.lost, 1);
        assert_eq!(tally.tracker.take_pending(99).unwrap().first_sequence, 2);
    }

    #[test]
    fn restart_resets_without_false_loss() {
        let mut seqs: Vec<u32> = (1..=500).collect();
        seqs.extend(1..=100);
        let mut tally = feed(&seqs);
        assert_eq!(tally.restarts, 1);
        tally.flush(0);
        assert_eq!(tally.lost, 0);
        assert_eq!(tally.tracker.highest(), Some(100));
    }

    #[test]
    fn late_packet_after_window() {
        let mut seqs: Vec<u32> = (1..=200).filter(|s| *s != 20).collect();
        seqs.push(20);
        let tally = feed(&seqs);
        assert_eq!(tally.late, 1);
        assert_eq!(tally.lost, 1);
    }

    #[test]
    fn pending_losses_keep_their_time() {
        let mut tally = Tally::default();
        let t0 = 7_000_000_000u64;
        tally.record(1, t0);
        tally.record(3, t0 + 1_000);
        tally.flush(t0 + 500_000_000);
        tally.record(4, t0 + 600_000_000);
        let pending = tally.tracker.take_pending(t0 + 900_000_000).unwrap();
        assert_eq!((pending.first_sequence, pending.count), (2, 1));
        assert!(pending.first_declared_ns.abs_diff(t0 + 500_000_000) < 1024);
        assert_eq!(core::mem::size_of::<SequenceTracker>(), 24);
        assert_eq!(core::mem::align_of::<SequenceTracker>(), 4);
    }

    #[test]
    fn an_implausible_jump_declares_nothing_and_resynchronises() {
        let mut tracker = SequenceTracker::default();
        for sequence in 1..=10 {
            tracker.record(sequence, 0, 100);
        }
        // 2^31 - 1 ahead of 10, and a bound of 100: not believed.
        let forged = 10 + MAX_JUMP;
        assert_eq!(
            tracker.record(forged, 0, 100),
            Recorded { event: SeqEvent::Implausible, declared_lost: 0 }
        );
        // The real flow goes on: 2^31 behind the forged number is a restart.
        let next = tracker.record(11, 0, 100);
        assert_eq!(next, Recorded { event: SeqEvent::Restart, declared_lost: 0 });
        assert_eq!(tracker.record(12, 0, 100).event, SeqEvent::InOrder);
        // Within the bound, a jump is a loss.
        assert_eq!(tracker.record(112, 0, 100).event, SeqEvent::Ahead { skipped: 99 });
        assert_eq!(tracker.record(213, 0, 100).event, SeqEvent::Implausible);
        assert_eq!(tracker.flush(0), 0);
        assert_eq!(tracker.take_pending(0).map(|p| p.count), Some(99));
    }

    #[test]
    fn first_packet_not_one_is_fine() {
        assert_eq!(lost_after_flush(&[1000, 1001, 1003]), 1);
    }

    #[test]
    fn lost_first_packets_count() {
        // 1 and 2 never came: the flow's first packet was number 3.
        assert_eq!(lost_after_flush(&[3, 4, 5]), 2);
        let mut tally = feed(&[3, 4, 5]);
        tally.flush(9);
        assert_eq!(tally.tracker.take_pending(9).unwrap().first_sequence, 1);
        // ... unless they were only overtaken.
        assert_eq!(lost_after_flush(&[2, 1, 3]), 0);
        // Far from 1: the sink joined late; nothing is assumed.
        assert_eq!(lost_after_flush(&[65, 66]), 0);
    }
}
