//! Per-flow sequence tracking at the sink: which flow sequence numbers never
//! arrived.
//!
//! A 64-packet window below the highest sequence number seen holds one bit
//! per packet. A packet is declared lost only when it falls out of the
//! window without having arrived, or when the flow's head has not moved for
//! the loss timeout and the sink flushes the window ([`SequenceTracker::flush`]).
//! Counters are 32-bit and wrap.
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
//!   2^20) resets the flow instead of counting a huge gap.
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
}

/// Losses declared and not yet reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingLoss {
    /// The first sequence number declared lost since the last report.
    pub first_sequence: u32,
    /// When the first of them was declared (sink clock, ns).
    pub first_declared_ns: u64,
    pub count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SequenceTracker {
    started: bool,
    highest: u32,
    /// Bit i: `highest - i` arrived. Bits for numbers before the first
    /// packet are set, so they never count as lost.
    window: u64,
    /// Last time `highest` moved (ns).
    pub last_advance_ns: u64,
    pending: PendingLoss,
    pub lost_total: u32,
    pub duplicates: u32,
    pub reordered: u32,
    pub late: u32,
    pub restarts: u32,
}

impl SequenceTracker {
    pub fn highest(&self) -> Option<u32> {
        self.started.then_some(self.highest)
    }

    /// Records one arrival.
    pub fn record(&mut self, sequence: u32, now_ns: u64) -> SeqEvent {
        if !self.started {
            self.start(sequence, now_ns);
            return SeqEvent::First;
        }
        let ahead = sequence.wrapping_sub(self.highest);
        if ahead == 0 {
            self.duplicates = self.duplicates.wrapping_add(1);
            return SeqEvent::Duplicate;
        }
        if ahead < 0x8000_0000 {
            self.advance(ahead, now_ns);
            return if ahead == 1 { SeqEvent::InOrder } else { SeqEvent::Ahead { skipped: ahead - 1 } };
        }
        let behind = self.highest.wrapping_sub(sequence);
        if behind < WINDOW {
            let bit = 1u64 << behind;
            if self.window & bit != 0 {
                if sequence == 1 {
                    return self.restart(sequence, now_ns);
                }
                self.duplicates = self.duplicates.wrapping_add(1);
                return SeqEvent::Duplicate;
            }
            self.window |= bit;
            self.reordered = self.reordered.wrapping_add(1);
            return SeqEvent::Reordered;
        }
        if sequence == 1 || behind > RESTART_DISTANCE {
            return self.restart(sequence, now_ns);
        }
        self.late = self.late.wrapping_add(1);
        SeqEvent::Late
    }

    fn start(&mut self, sequence: u32, now_ns: u64) {
        self.started = true;
        self.highest = sequence;
        self.window = u64::MAX;
        if (2..=WINDOW).contains(&sequence) {
            // Bits 1..sequence-1 stand for numbers 1..sequence-1.
            let missing = (1u64 << (sequence - 1)) - 1;
            self.window &= !(missing << 1);
        }
        self.last_advance_ns = now_ns;
    }

    fn restart(&mut self, sequence: u32, now_ns: u64) -> SeqEvent {
        // Holes left by the old run never arrived: they are losses.
        self.flush(now_ns);
        self.restarts = self.restarts.wrapping_add(1);
        self.start(sequence, now_ns);
        SeqEvent::Restart
    }

    fn advance(&mut self, ahead: u32, now_ns: u64) {
        let old_highest = self.highest;
        if ahead >= WINDOW {
            // The whole window leaves, and so do the skipped numbers that do
            // not fit in the new window.
            self.declare_window_holes(!self.window, 63, now_ns);
            let beyond = ahead - WINDOW;
            if beyond > 0 {
                self.declare(old_highest.wrapping_add(1), beyond, now_ns);
            }
            self.window = 1;
        } else {
            let leaving = !self.window & !(u64::MAX >> ahead);
            self.declare_window_holes(leaving, 63, now_ns);
            self.window = (self.window << ahead) | 1;
        }
        self.highest = old_highest.wrapping_add(ahead);
        self.last_advance_ns = now_ns;
    }

    /// Declares the set bits of `holes` (positions in the current window)
    /// lost; `oldest` is the highest bit position that may be set.
    fn declare_window_holes(&mut self, holes: u64, oldest: u32, now_ns: u64) {
        let count = holes.count_ones();
        if count == 0 {
            return;
        }
        let oldest_hole = oldest - holes.leading_zeros().min(oldest);
        self.declare(self.highest.wrapping_sub(oldest_hole), count, now_ns);
    }

    fn declare(&mut self, first_sequence: u32, count: u32, now_ns: u64) {
        if self.pending.count == 0 {
            self.pending.first_sequence = first_sequence;
            self.pending.first_declared_ns = now_ns;
        }
        self.pending.count = self.pending.count.wrapping_add(count);
        self.lost_total = self.lost_total.wrapping_add(count);
    }

    /// Declares every hole still in the window lost: called when the head
    /// has not moved for the loss timeout. A packet that fills such a hole
    /// afterwards is counted as a duplicate.
    pub fn flush(&mut self, now_ns: u64) {
        if self.started {
            self.declare_window_holes(!self.window, 63, now_ns);
            self.window = u64::MAX;
        }
    }

    /// Whether the window still has holes (missing, not yet declared).
    pub fn has_holes(&self) -> bool {
        self.started && self.window != u64::MAX
    }

    /// Losses declared and not yet taken.
    pub fn pending_count(&self) -> u32 {
        self.pending.count
    }

    /// Losses declared since the last call, if any.
    pub fn take_pending(&mut self) -> Option<PendingLoss> {
        if self.pending.count == 0 {
            return None;
        }
        Some(core::mem::take(&mut self.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(sequences: &[u32]) -> SequenceTracker {
        let mut tracker = SequenceTracker::default();
        for (t, s) in sequences.iter().enumerate() {
            tracker.record(*s, t as u64);
        }
        tracker
    }

    fn lost_after_flush(sequences: &[u32]) -> u32 {
        let mut tracker = feed(sequences);
        tracker.flush(1_000_000);
        tracker.lost_total
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
        let mut tracker = feed(&seqs);
        assert_eq!(tracker.lost_total, 300, "declared as the window passes");
        let pending = tracker.take_pending().unwrap();
        assert_eq!((pending.first_sequence, pending.count), (100, 300));
        assert_eq!(tracker.take_pending(), None);
    }

    #[test]
    fn reordering_is_not_loss() {
        let mut seqs: Vec<u32> = (1..=200).collect();
        seqs.swap(10, 11);
        seqs.swap(50, 90); // 91 overtakes 51..=90: 40 late arrivals
        let tracker = feed(&seqs);
        assert_eq!(tracker.reordered, 1 + 40);
        assert_eq!(lost_after_flush(&seqs), 0);
    }

    #[test]
    fn duplicate_never_hides_a_loss() {
        // 5 is lost; 4 arrives twice, once where 5 should have been.
        let seqs = [1, 2, 3, 4, 4, 6, 7];
        let tracker = feed(&seqs);
        assert_eq!(tracker.duplicates, 1);
        assert_eq!(lost_after_flush(&seqs), 1);
        // A duplicate of the newest packet.
        assert_eq!(lost_after_flush(&[1, 2, 2, 3]), 0);
    }

    #[test]
    fn wrap_at_2_pow_32() {
        let start = u32::MAX - 10;
        let seqs: Vec<u32> = (0..30u32).map(|i| start.wrapping_add(i)).filter(|s| *s != 2).collect();
        let mut tracker = feed(&seqs);
        tracker.flush(99);
        assert_eq!(tracker.lost_total, 1);
        assert_eq!(tracker.take_pending().unwrap().first_sequence, 2);
    }

    #[test]
    fn restart_resets_without_false_loss() {
        let mut seqs: Vec<u32> = (1..=500).collect();
        seqs.extend(1..=100);
        let mut tracker = feed(&seqs);
        assert_eq!(tracker.restarts, 1);
        tracker.flush(0);
        assert_eq!(tracker.lost_total, 0);
        assert_eq!(tracker.highest(), Some(100));
    }

    #[test]
    fn late_packet_after_window() {
        let mut seqs: Vec<u32> = (1..=200).filter(|s| *s != 20).collect();
        seqs.push(20);
        let tracker = feed(&seqs);
        assert_eq!(tracker.late, 1);
        assert_eq!(tracker.lost_total, 1);
    }

    #[test]
    fn first_packet_not_one_is_fine() {
        assert_eq!(lost_after_flush(&[1000, 1001, 1003]), 1);
    }

    #[test]
    fn lost_first_packets_count() {
        // 1 and 2 never came: the flow's first packet was number 3.
        assert_eq!(lost_after_flush(&[3, 4, 5]), 2);
        let mut tracker = feed(&[3, 4, 5]);
        tracker.flush(9);
        assert_eq!(tracker.take_pending().unwrap().first_sequence, 1);
        // ... unless they were only overtaken.
        assert_eq!(lost_after_flush(&[2, 1, 3]), 0);
        // Far from 1: the sink joined late; nothing is assumed.
        assert_eq!(lost_after_flush(&[65, 66]), 0);
    }
}
