//! Report sequence accounting for one sender: reports lost in the network
//! or the sender, found from gaps in its report sequence numbers.

/// The largest report sequence gap believed as lost reports (a sink's
/// report ring holds 4096 by default). A larger jump, ahead or back, is a
/// sender that restarted or a forged number: counted, and the sender's
/// sequence starts again from it, so a forger can claim at most this many
/// lost reports per datagram.
const MAX_REPORT_GAP: u32 = 4096;

#[derive(Debug, Default, Clone)]
pub struct Sender {
    next_sequence: Option<u32>,
    pub lost_reports: u64,
    /// Jumps by more than [`MAX_REPORT_GAP`] either way, and sequence 1
    /// again: the sequence starts again from the new number.
    pub resyncs: u64,
    /// Numbers up to [`MAX_REPORT_GAP`] behind the next expected one:
    /// duplicates or reordering.
    pub late: u64,
}

impl Sender {
    /// [`Sender::account`] for Telemetry Report 2.0's 22-bit numbers: they
    /// are widened across wraps first.
    pub fn account_22(&mut self, sequence: u32) -> u32 {
        const MASK: u32 = 0x003f_ffff;
        let widened = match self.next_sequence {
            // The 22-bit difference, signed, from the number expected.
            Some(expected) => {
                let difference = (sequence.wrapping_sub(expected) & MASK) << 10;
                expected.wrapping_add(((difference as i32) >> 10) as u32)
            }
            None => sequence,
        };
        self.account(widened)
    }

    /// Accounts for one report's sequence number; returns how many reports
    /// are believed lost right before it.
    pub fn account(&mut self, sequence: u32) -> u32 {
        let Some(expected) = self.next_sequence else {
            self.next_sequence = Some(sequence.wrapping_add(1));
            return 0;
        };
        let gap = sequence.wrapping_sub(expected);
        let behind = expected.wrapping_sub(sequence);
        if (1..=MAX_REPORT_GAP).contains(&behind) && sequence != 1 {
            self.late += 1;
            return 0;
        }
        self.next_sequence = Some(sequence.wrapping_add(1));
        if gap > MAX_REPORT_GAP {
            self.resyncs += 1;
            return 0;
        }
        self.lost_reports += u64::from(gap);
        gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_gaps_are_believed_only_when_plausible() {
        let mut sender = Sender::default();
        let seen: Vec<u32> =
            [1, 2, 5, 4, 4_000_000_000, 6, 7, 1, 2].iter().map(|s| sender.account(*s)).collect();
        assert_eq!(seen, vec![0, 0, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!((sender.lost_reports, sender.late, sender.resyncs), (2, 1, 3));
        // Forged numbers, one after another: never more than the window
        // each, and random ones almost never count at all.
        let mut forged = Sender::default();
        let mut x = 0x9e37_79b9u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            forged.account(x);
        }
        assert!(forged.lost_reports <= 10_000 * u64::from(MAX_REPORT_GAP));
        assert!(forged.lost_reports < 50_000, "{}", forged.lost_reports);
    }

    #[test]
    fn twenty_two_bit_numbers_widen_across_the_wrap() {
        let mut sender = Sender::default();
        let seen: Vec<u32> = [0x3f_fffe, 0x3f_ffff, 0, 3, 2].iter().map(|s| sender.account_22(*s)).collect();
        assert_eq!(seen, vec![0, 0, 0, 2, 0]);
        assert_eq!((sender.lost_reports, sender.late, sender.resyncs), (2, 1, 0));
    }
}
