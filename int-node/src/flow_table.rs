//! A fixed-capacity flow table owned by one lcore: open addressing with
//! linear probing and backward-shift deletion (no tombstones), at most 50%
//! full, allocated once at start. A full table refuses new flows (the caller
//! counts it); nothing is allocated per packet.
//!
//! A slot is aligned to `A` ([`Align32`] or [`Align64`]) and never straddles
//! a cache line: a lookup that hits its home slot costs one line.

use int_core::flow::FlowKey;

/// Slots of at most 32 bytes, two to a cache line.
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
pub struct Align32;

/// Slots of one cache line.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
pub struct Align64;

#[derive(Clone, Copy)]
struct Slot<V, A> {
    /// Zero-sized: gives the slot `A`'s alignment.
    _align: [A; 0],
    /// 0 = empty; otherwise the top bits of the hash, never 0.
    tag: u16,
    /// Last packet, in coarse ms (the owner's clock >> 20).
    last_seen: u32,
    key: FlowKey,
    value: V,
}

pub struct FlowTable<V, A = Align32> {
    slots: Box<[Slot<V, A>]>,
    mask: usize,
    len: usize,
    capacity: usize,
    /// Next slot the incremental sweep looks at.
    cursor: usize,
}

/// Coarse time for ageing: ns >> 20 (about 1.05 ms units).
#[inline]
pub fn coarse(now_ns: u64) -> u32 {
    (now_ns >> 20) as u32
}

impl<V: Copy + Default, A: Copy + Default> FlowTable<V, A> {
    pub fn new(capacity: usize) -> Self {
        let slot_count = (capacity.max(1) * 2).next_power_of_two();
        let empty = Slot {
            _align: [],
            tag: 0,
            last_seen: 0,
            key: FlowKey { src: 0.into(), dst: 0.into(), protocol: 0, src_port: 0, dst_port: 0 },
            value: V::default(),
        };
        // Reserve first, advise huge pages, then touch: the pages come in
        // as 2 MB pages where the kernel allows it.
        let mut slots: Vec<Slot<V, A>> = Vec::with_capacity(slot_count);
        crate::dpdk::os::advise_huge_pages(
            slots.as_ptr().cast::<u8>(),
            slot_count * std::mem::size_of::<Slot<V, A>>(),
        );
        slots.resize(slot_count, empty);
        FlowTable { slots: slots.into_boxed_slice(), mask: slot_count - 1, len: 0, capacity, cursor: 0 }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Whether the live flows' slots likely no longer fit in the CPU's
    /// caches (more than 2 MiB of them): lookups then miss to DRAM.
    #[inline]
    pub fn spills_cache(&self) -> bool {
        self.len * std::mem::size_of::<Slot<V, A>>() > 2 << 20
    }

    /// Bytes of one flow's slot (key, ageing and state).
    pub fn slot_bytes(&self) -> usize {
        std::mem::size_of::<Slot<V, A>>()
    }

    /// Bytes of table memory per flow of capacity.
    pub fn bytes_per_flow(&self) -> usize {
        self.slot_bytes() * self.slots.len() / self.capacity.max(1)
    }

    #[inline]
    fn tag_and_index(&self, hash: u64) -> (u16, usize) {
        let tag = ((hash >> 48) as u16) | 1;
        (tag, hash as usize & self.mask)
    }

    /// Starts loading the home slot of a flow whose `FlowKey::hash64` is
    /// `hash`: called in a stage's first pass over a burst, before the
    /// lookups of its second, so that the cache misses overlap instead of
    /// queueing one per packet.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let index = hash as usize & self.mask;
        if let Some(slot) = self.slots.get(index) {
            crate::dpdk::os::prefetch(slot);
        }
        // In DRAM a probe that runs on to the next slot would be a second
        // miss, not hidden: load the next slot too.
        if self.spills_cache() {
            if let Some(slot) = self.slots.get((index + 1) & self.mask) {
                crate::dpdk::os::prefetch(slot);
            }
        }
    }

    /// Finds the flow, or creates it with `V::default()`. `None` when the
    /// table is full. The bool is true for a new flow.
    #[cfg(test)]
    pub fn get_or_insert(&mut self, key: &FlowKey, now_ns: u64) -> Option<(&mut V, bool)> {
        self.get_or_insert_hashed(key, key.hash64(), now_ns)
    }

    /// [`Self::get_or_insert`] with the key's hash computed by the caller.
    #[inline]
    pub fn get_or_insert_hashed(&mut self, key: &FlowKey, hash: u64, now_ns: u64) -> Option<(&mut V, bool)> {
        let (tag, mut index) = self.tag_and_index(hash);
        loop {
            let slot = self.slots.get(index)?;
            if slot.tag == 0 {
                break;
            }
            if slot.tag == tag && slot.key == *key {
                let slot = self.slots.get_mut(index)?;
                slot.last_seen = coarse(now_ns);
                return Some((&mut slot.value, false));
            }
            index = (index + 1) & self.mask;
        }
        if self.len >= self.capacity {
            return None;
        }
        self.len += 1;
        let slot = self.slots.get_mut(index)?;
        *slot = Slot { _align: [], tag, last_seen: coarse(now_ns), key: *key, value: V::default() };
        Some((&mut slot.value, true))
    }

    #[cfg(test)]
    pub fn get(&self, key: &FlowKey) -> Option<&V> {
        let (tag, mut index) = self.tag_and_index(key.hash64());
        loop {
            let slot = self.slots.get(index)?;
            if slot.tag == 0 {
                return None;
            }
            if slot.tag == tag && slot.key == *key {
                return Some(&slot.value);
            }
            index = (index + 1) & self.mask;
        }
    }

    /// Backward-shift deletion: `hole` was just emptied; pull back every
    /// later entry of the run whose home slot is at or before the hole.
    fn shift_from(&mut self, mut hole: usize) {
        let mut next = (hole + 1) & self.mask;
        loop {
            let Some(&candidate) = self.slots.get(next) else { return };
            if candidate.tag == 0 {
                break;
            }
            let home = candidate.key.hash64() as usize & self.mask;
            if (next.wrapping_sub(home) & self.mask) >= (next.wrapping_sub(hole) & self.mask) {
                if let Some(slot) = self.slots.get_mut(hole) {
                    *slot = candidate;
                }
                hole = next;
            }
            next = (next + 1) & self.mask;
        }
        if let Some(slot) = self.slots.get_mut(hole) {
            slot.tag = 0;
        }
    }

    /// Visits up to `budget` slots from the sweep cursor: `visit` sees each
    /// live flow and its idle time in coarse ms; returning true removes the
    /// flow. Returns how many were removed.
    pub fn sweep(
        &mut self,
        budget: usize,
        now_ns: u64,
        mut visit: impl FnMut(&FlowKey, &mut V, u32) -> bool,
    ) -> usize {
        let now = coarse(now_ns);
        let mut removed = 0;
        for _ in 0..budget.min(self.slots.len()) {
            let index = self.cursor;
            self.cursor = (self.cursor + 1) & self.mask;
            let Some(slot) = self.slots.get_mut(index) else { continue };
            if slot.tag == 0 {
                continue;
            }
            let idle = now.wrapping_sub(slot.last_seen);
            let key = slot.key;
            if visit(&key, &mut slot.value, idle) {
                self.len -= 1;
                slot.tag = 0;
                self.shift_from(index);
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(i: u32) -> FlowKey {
        FlowKey {
            src: (0x0a00_0000 + i).into(),
            dst: 0x0a01_0001.into(),
            protocol: 17,
            src_port: i as u16,
            dst_port: 5000,
        }
    }

    #[test]
    fn insert_find_full() {
        let mut table: FlowTable<u32> = FlowTable::new(100);
        for i in 0..100 {
            let (value, new) = table.get_or_insert(&key(i), 0).unwrap();
            assert!(new);
            *value = i;
        }
        assert!(table.get_or_insert(&key(100), 0).is_none(), "full");
        for i in 0..100 {
            let (value, new) = table.get_or_insert(&key(i), 0).unwrap();
            assert!(!new);
            assert_eq!(*value, i);
        }
        assert_eq!(table.len(), 100);
    }

    /// Random inserts and sweeps checked against a HashMap.
    #[test]
    fn matches_a_hashmap_under_churn() {
        let mut table: FlowTable<u32> = FlowTable::new(64);
        let mut model: HashMap<FlowKey, u32> = HashMap::new();
        let mut rng = 0x1234_5678u64;
        for step in 0..20_000u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let k = key((rng % 150) as u32);
            if rng.is_multiple_of(5) {
                // Remove every flow whose value is odd, via the sweep.
                let mut removed = Vec::new();
                table.sweep(usize::MAX, 0, |k, v, _| {
                    let gone = *v % 2 == 1;
                    if gone {
                        removed.push(*k);
                    }
                    gone
                });
                for k in removed {
                    model.remove(&k);
                }
            } else if let Some((value, _)) = table.get_or_insert(&k, 0) {
                *value = step;
                model.insert(k, step);
            } else {
                assert_eq!(model.len(), 64);
            }
            assert_eq!(table.len(), model.len());
            for (k, v) in &model {
                assert_eq!(table.get(k), Some(v), "step {step}");
            }
        }
    }
}
