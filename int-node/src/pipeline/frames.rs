//! A burst's frames as a stage's first pass meets them: each packet's
//! bytes, with the next one loading, unless its mbuf may not be
//! rewritten (counted by reason; the stage forwards it untouched).

use crate::dpdk::mbuf::{Burst, Unwritable, Writable};
use crate::stats::{Counter, Counters};

/// Packet `i`'s frame for a stage's first pass: `None` past the burst, and
/// for mbufs that are not [`Burst::writable`] (counted by reason; stages
/// forward them untouched). Starts loading packet i+1 on the way.
#[inline(always)]
pub(crate) fn frame_ahead<'a>(burst: &'a Burst, i: usize, counters: &mut Counters) -> Option<&'a [u8]> {
    if i >= burst.len() {
        return None;
    }
    burst.prefetch(i + 1);
    if let Some(counter) = unwritable(burst, i) {
        counters.inc(counter);
        return None;
    }
    burst.data(i)
}

/// `step` on every packet of `burst` a stage may rewrite (the others
/// counted by [`unwritable`] and left as they are), loading the next one
/// on the way; counts what each step says, and takes out of the burst the
/// packets whose counter `dropped` names.
#[inline(always)]
pub(crate) fn rewrite_each(
    burst: &mut Burst,
    counters: &mut Counters,
    dropped: impl Fn(Counter) -> bool,
    mut step: impl FnMut(&mut Burst, usize, &mut Counters) -> Counter,
) {
    let mut drop = 0u32;
    for i in 0..burst.len() {
        burst.prefetch(i + 1);
        if let Some(counter) = unwritable(burst, i) {
            counters.inc(counter);
            continue;
        }
        let counter = step(burst, i, counters);
        if dropped(counter) {
            drop |= 1 << i;
        }
        counters.inc(counter);
    }
    if drop != 0 {
        burst.retain(|i| drop & (1 << i) == 0);
    }
}

/// The counter for packet `i` when its mbuf may not be rewritten.
#[inline(always)]
pub(crate) fn unwritable(burst: &Burst, i: usize) -> Option<Counter> {
    match burst.writable(i) {
        Writable::Yes => None,
        Writable::No(Unwritable::MultiSegment) => Some(Counter::multi_segment),
        Writable::No(Unwritable::Shared) => Some(Counter::shared_mbuf),
    }
}
