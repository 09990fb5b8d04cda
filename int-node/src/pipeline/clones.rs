//! Clones at a source: one packet in N of each watched flow is copied
//! into a fresh mbuf, the copy instrumented and sent after the burst that
//! carries the untouched original: an INT 2.1 source's (INT 2.1, "INT
//! Applied to Synthetic Traffic"), with D set so that the sink reports the
//! copy and then discards it; an IFA initiator's probe copies, with I
//! clear, which the terminator drops. Copies come from a pool of their own (`clone.mbufs`), never
//! from the heap nor from the pool the ports receive into: a pool with
//! nothing to give costs the copy (counted `clones_refused`; the flow's next
//! packet is copied in its place), never an original.
//!
//! Nor does a TX queue with no room: copies go only into the room a
//! burst's originals left, and not at all in the poll after copies filled
//! the queue, when the originals, offered first, wait for the consumer to
//! take the copies' room ([`Clones::in_the_way`]). A copy that does not
//! leave (refused by the queue or held back) spends no number
//! ([`Clones::unsent`]).

use std::sync::Arc;

use int_core::flow::FlowKey;

use crate::dpdk::mbuf::{alloc_into, Burst, BURST};
use crate::dpdk::mempool::Mempool;
use crate::stats::{Counter, Counters};

pub struct Clones {
    /// One copy in `every` packets of each flow: its 1st, N+1st, ...
    every: u32,
    pool: Arc<Mempool>,
    /// This burst's copies, sent after it.
    pub out: Burst,
    /// Each copy in [`Clones::out`], by index: what made it due.
    due: Due,
    /// The TX queue refused some of the last poll's copies: it is full
    /// of them.
    filled: bool,
}

impl Clones {
    pub fn new(every: u32, pool: Arc<Mempool>) -> Self {
        Clones { every: every.max(1), pool, out: Burst::default(), due: Due::default(), filled: false }
    }

    /// The number, among its flow's copies (from 1), of the copy of the
    /// flow's `n`th packet (from 1); `None` if that packet is not copied.
    #[inline]
    pub fn copy_number(&self, n: u32) -> Option<u32> {
        copy_number(self.every, n)
    }

    /// Packet `i` of `burst` copied to the end of [`Clones::out`] (`due`:
    /// its flow, and the flow's count that made it due): its index there,
    /// or `None` (counted) when the pool has no mbuf.
    #[inline]
    pub fn copy(
        &mut self,
        burst: &Burst,
        i: usize,
        due: (&FlowKey, u32),
        counters: &mut Counters,
    ) -> Option<usize> {
        let frame = burst.data(i)?;
        if alloc_into(&mut self.out, self.pool.as_ptr(), frame) {
            let j = self.out.len() - 1;
            self.due.record(j, due.0, due.1);
            Some(j)
        } else {
            counters.inc(Counter::clones_refused);
            None
        }
    }

    /// Whether copies fill the TX queue (the last poll's were refused):
    /// this poll's originals then wait for the consumer to take their
    /// room rather than be refused, and no copy follows them.
    #[inline]
    pub fn in_the_way(&self) -> bool {
        self.filled
    }

    /// Frees the copies that may not follow this poll's originals (any
    /// original refused: the queue has no room left; or copies filled
    /// it): how many, whose due packets [`Clones::unsent`] then gives.
    #[inline]
    pub fn hold_back(&mut self, originals_refused: bool) -> usize {
        let held = if originals_refused || self.filled { self.out.retain(|_| false) } else { 0 };
        self.filled = false;
        held
    }

    /// Notes that the TX queue refused `refused` of this poll's copies.
    #[inline]
    pub fn refused(&mut self, refused: usize) {
        self.filled = refused > 0;
    }

    /// The due packets of copies `from..to` of this poll ([`Due::unsent`]).
    pub fn unsent(&self, from: usize, to: usize) -> impl Iterator<Item = &(FlowKey, u32)> {
        self.due.unsent(from, to)
    }

    /// Frees the last copy: it could not be instrumented.
    pub fn take_back(&mut self) {
        let last = self.out.len().wrapping_sub(1);
        self.out.retain(|k| k != last);
    }
}

/// Each copy of a poll, by its index among them: its flow and the flow's
/// count that made it due, to give its number back if it does not leave.
struct Due([(FlowKey, u32); BURST]);

impl Default for Due {
    fn default() -> Self {
        Due([(FlowKey::default(), 0); BURST])
    }
}

impl Due {
    fn record(&mut self, j: usize, flow: &FlowKey, n: u32) {
        if let Some(slot) = self.0.get_mut(j) {
            *slot = (*flow, n);
        }
    }

    /// The due packets of copies `from..to` (they did not leave), last
    /// first: setting each flow's count back to before its copy's leaves
    /// it before the flow's first copy that did not leave, and the flow's
    /// next packet is copied in its place with the same number.
    ///
    /// Going back is right only when no later copy of the flow took a
    /// number: the queue takes a prefix of the copies, so every copy after
    /// a refused one was refused too (and held-back copies are all of
    /// them). The flow's packets counted after its copy and not copied
    /// carry no number: counting them again only brings its next copy
    /// sooner.
    fn unsent(&self, from: usize, to: usize) -> impl Iterator<Item = &(FlowKey, u32)> {
        self.0.get(from..to).unwrap_or_default().iter().rev()
    }
}

/// The copy number of a flow's `n`th packet when one in `every` is copied.
/// A flow whose count goes back one for a copy that did not leave numbers
/// its next packet's copy the same.
#[inline]
fn copy_number(every: u32, n: u32) -> Option<u32> {
    let before = n.wrapping_sub(1);
    before.is_multiple_of(every).then(|| before / every + 1)
}

#[cfg(test)]
mod tests {
    use super::{copy_number, Due};
    use int_core::flow::FlowKey;
    use std::collections::HashMap;
    use std::net::Ipv4Addr;

    /// Bursts of 32 packets of four flows, one copy in `every` (1 and 3),
    /// the TX queue taking a random prefix of each burst's copies: the
    /// copies that leave carry each flow's numbers 1, 2, 3, ... with no gap
    /// and none twice, whatever the queue refused, when the copies that do
    /// not leave give their counts back as [`Due::unsent`] says.
    #[test]
    fn copies_that_do_not_leave_spend_no_number() {
        let flows: Vec<FlowKey> =
            (0..4).map(|port| FlowKey::v4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 17, port, 9)).collect();
        let mut random = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: usize| {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            (random % below as u64) as usize
        };
        for every in [1, 3] {
            let mut counts: HashMap<FlowKey, u32> = HashMap::new();
            let mut left: HashMap<FlowKey, Vec<u32>> = HashMap::new();
            let mut refused = 0;
            for _ in 0..500 {
                let (mut due, mut copies) = (Due::default(), Vec::new());
                for _ in 0..32 {
                    let flow = flows[next(flows.len())];
                    let count = counts.entry(flow).or_default();
                    *count += 1;
                    if let Some(number) = copy_number(every, *count) {
                        due.record(copies.len(), &flow, *count);
                        copies.push((flow, number));
                    }
                }
                let sent = next(copies.len() + 1);
                refused += copies.len() - sent;
                for (flow, number) in &copies[..sent] {
                    left.entry(*flow).or_default().push(*number);
                }
                for (flow, n) in due.unsent(sent, copies.len()) {
                    counts.insert(*flow, n - 1);
                }
            }
            assert!(refused > 1000, "{refused}");
            for (flow, numbers) in &left {
                let gap = numbers.iter().zip(1..).position(|(&number, expected)| number != expected);
                assert_eq!(gap, None, "{flow}, one in {every}: {:?}", &numbers[..numbers.len().min(20)]);
            }
        }
    }

    #[test]
    fn every_nth_packet_is_copied_and_numbered() {
        // One in 8: the 1st, 9th and 17th packets, numbered 1, 2, 3.
        let numbers: Vec<Option<u32>> = (1..=17).map(|n| copy_number(8, n)).collect();
        assert_eq!(numbers.iter().flatten().copied().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!((numbers[0], numbers[8], numbers[16]), (Some(1), Some(2), Some(3)));
        // Every packet with 1; a flow's count past u32::MAX starts again.
        assert!((1..100).all(|n| copy_number(1, n) == Some(n)));
        assert_eq!(copy_number(8, 0), None);
    }
}
