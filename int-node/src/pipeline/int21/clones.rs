//! Clones at an INT 2.1 source (INT 2.1, "INT Applied to Synthetic
//! Traffic"): one packet in N of each watched flow is copied into a fresh
//! mbuf, the copy instrumented with D set (so that the sink reports it and
//! then discards it) and sent after the burst that carries the untouched
//! original. Copies come from a pool of their own (`clone.mbufs`), never
//! from the heap nor from the pool the ports receive into: a pool with
//! nothing to give costs the copy (counted `clones_refused`; the flow's next
//! packet is copied in its place), never an original.

use std::sync::Arc;

use crate::dpdk::mbuf::{alloc_into, Burst};
use crate::dpdk::mempool::Mempool;
use crate::stats::{Counter, Counters};

pub struct Clones {
    /// One copy in `every` packets of each flow: its 1st, N+1st, ...
    every: u32,
    pool: Arc<Mempool>,
    /// This burst's copies, sent after it.
    pub out: Burst,
}

impl Clones {
    pub fn new(every: u32, pool: Arc<Mempool>) -> Self {
        Clones { every: every.max(1), pool, out: Burst::default() }
    }

    /// The number, among its flow's copies (from 1), of the copy of the
    /// flow's `n`th packet (from 1); `None` if that packet is not copied.
    #[inline]
    pub fn copy_number(&self, n: u32) -> Option<u32> {
        copy_number(self.every, n)
    }

    /// Packet `i` of `burst` copied to the end of [`Clones::out`]: its
    /// index there, or `None` (counted) when the pool has no mbuf.
    #[inline]
    pub fn copy(&mut self, burst: &Burst, i: usize, counters: &mut Counters) -> Option<usize> {
        let frame = burst.data(i)?;
        if alloc_into(&mut self.out, self.pool.as_ptr(), frame) {
            Some(self.out.len() - 1)
        } else {
            counters.inc(Counter::clones_refused);
            None
        }
    }

    /// Frees the last copy: it could not be instrumented.
    pub fn take_back(&mut self) {
        let last = self.out.len().wrapping_sub(1);
        self.out.retain(|k| k != last);
    }
}

/// The copy number of a flow's `n`th packet when one in `every` is copied.
#[inline]
fn copy_number(every: u32, n: u32) -> Option<u32> {
    let before = n.wrapping_sub(1);
    before.is_multiple_of(every).then(|| before / every + 1)
}

#[cfg(test)]
mod tests {
    use super::copy_number;

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
