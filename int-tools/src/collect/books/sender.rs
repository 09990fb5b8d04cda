//! Report sequence accounting for one sender: reports lost in the network
//! or the sender, found from gaps in its report sequence numbers.

/// The largest report sequence gap believed as lost reports (a sink's
/// report ring holds 4096 by default). A larger jump, ahead or back, is a
/// sender that restarted or a forged number: counted, and the sender's
/// sequence starts again from it, so a forger can claim at most this many
/// lost reports per datagram.
pub const MAX_REPORT_GAP: u32 = 4096;

/// What a Telemetry Report 2.0 sender's Sequence Number counts. TR 2.0
/// section 3.2 says it "reflects the sequence of reports" from a node:
/// read either as one number per datagram (int-node's reading: a group
/// header per datagram) or one per individual report it holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Numbering {
    #[default]
    Datagrams,
    Reports,
}

/// What accounting for one datagram found: the reports missing right
/// before it, and whether its number started the sequence again or came
/// late. A receiving collector finds it; an aggregator, which may see
/// only some of a sender's datagrams, books what the receiver found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Accounting {
    pub missing: u32,
    pub resync: bool,
    pub late: bool,
}

impl Accounting {
    /// Whether a collector's accounting could have found this: at most
    /// [`MAX_REPORT_GAP`] missing, and none where the number started the
    /// sequence again or came late ([`Sender::account`] counts no gap
    /// then). What another collector says past that is a lie, not loss.
    pub fn plausible(&self) -> bool {
        self.missing <= MAX_REPORT_GAP && (self.missing == 0 || !(self.resync || self.late))
    }
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Sender {
    next_sequence: Option<u32>,
    pub lost_reports: u64,
    /// Jumps by more than [`MAX_REPORT_GAP`] either way, and sequence 1
    /// again: the sequence starts again from the new number.
    pub resyncs: u64,
    /// Numbers up to [`MAX_REPORT_GAP`] behind the next expected one:
    /// duplicates or reordering.
    pub late: u64,
    /// TR 2.0: the numbering the sender's datagrams last showed, and the
    /// last datagram taken in order (its widened number, its reports).
    pub numbering: Numbering,
    last_group: Option<(u32, u32)>,
}

impl Sender {
    /// [`Sender::account`] for a TR 2.0 datagram: its 22-bit number is
    /// widened across wraps first. Accounts for a TR 2.0 datagram numbered `sequence` holding
    /// `reports` individual reports, in either [`Numbering`]. After a
    /// datagram of several reports, the next in order is numbered one more
    /// (per datagram) or that many more (per report): whichever the number
    /// is says the sender's numbering, kept until a datagram says
    /// otherwise; a gap is counted in that numbering's unit. A number that
    /// is neither (a loss) is read in the numbering last seen.
    pub fn account_group(&mut self, sequence: u32, reports: u32) -> u32 {
        let widened = self.widen_22(sequence);
        if let Some((last, count)) = self.last_group.filter(|&(_, count)| count > 1) {
            if widened == last.wrapping_add(1) {
                self.numbering = Numbering::Datagrams;
            } else if widened == last.wrapping_add(count) {
                self.numbering = Numbering::Reports;
            }
            let step = if self.numbering == Numbering::Reports { count } else { 1 };
            self.next_sequence = Some(last.wrapping_add(step));
        }
        let late = self.late;
        let lost = self.account(widened);
        if self.late == late {
            self.last_group = Some((widened, reports.max(1)));
        }
        lost
    }

    /// What `account` (one of the two) found for one datagram.
    pub fn accounted(&mut self, account: impl FnOnce(&mut Sender) -> u32) -> Accounting {
        let (resyncs, late) = (self.resyncs, self.late);
        let missing = account(self);
        Accounting { missing, resync: self.resyncs > resyncs, late: self.late > late }
    }

    /// Books what another collector's accounting found.
    pub fn book(&mut self, found: Accounting) {
        self.lost_reports += u64::from(found.missing);
        self.resyncs += u64::from(found.resync);
        self.late += u64::from(found.late);
    }

    /// A 22-bit number widened to 32 bits: the signed 22-bit difference
    /// from the number expected, added to it.
    fn widen_22(&self, sequence: u32) -> u32 {
        const MASK: u32 = 0x003f_ffff;
        match self.next_sequence {
            Some(expected) => {
                let difference = (sequence.wrapping_sub(expected) & MASK) << 10;
                expected.wrapping_add(((difference as i32) >> 10) as u32)
            }
            None => sequence,
        }
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
        let seen: Vec<u32> =
            [0x3f_fffe, 0x3f_ffff, 0, 3, 2].iter().map(|s| sender.account_group(*s, 1)).collect();
        assert_eq!(seen, vec![0, 0, 0, 2, 0]);
        assert_eq!((sender.lost_reports, sender.late, sender.resyncs), (2, 1, 0));
    }

    /// A sender that numbers every report (TR 2.0 3.2's other reading):
    /// 480 reports in datagrams of 1 to 7, numbered by report, count no
    /// loss (they counted 351 lost before); one numbered by datagram
    /// neither; a datagram lost from either counts in its sender's unit.
    #[test]
    fn tr20_numbering_by_report_or_by_datagram_loses_nothing() {
        let sizes: Vec<u32> = (0..120).map(|i| [1, 7, 3, 5][i % 4]).collect();
        assert_eq!(sizes.iter().sum::<u32>(), 480);
        let (mut by_report, mut by_datagram) = (Sender::default(), Sender::default());
        let mut number = 1u32;
        for (i, &size) in sizes.iter().enumerate() {
            by_report.account_group(number & 0x3f_ffff, size);
            by_datagram.account_group(i as u32 + 1, size);
            number += size;
        }
        assert_eq!((by_report.lost_reports, by_report.late, by_report.resyncs), (0, 0, 0));
        assert_eq!(by_report.numbering, Numbering::Reports);
        assert_eq!((by_datagram.lost_reports, by_datagram.late, by_datagram.resyncs), (0, 0, 0));
        assert_eq!(by_datagram.numbering, Numbering::Datagrams);
        // The next datagram (7 reports) lost: 7 reports, or 1 datagram.
        assert_eq!(by_report.account_group(number + 7, 1), 7);
        assert_eq!(by_datagram.account_group(122, 1), 1);
        // Across the 22-bit wrap, per report.
        let mut wrapping = Sender::default();
        let seen: Vec<u32> = [(0x3f_fffa, 4), (0x3f_fffe, 5), (3, 2), (5, 1), (9, 1)]
            .iter()
            .map(|&(s, n)| wrapping.account_group(s, n))
            .collect();
        assert_eq!(seen, vec![0, 0, 0, 0, 3]);
    }
}
