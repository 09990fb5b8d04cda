//! The reference stages' flow table: open addressing with linear probing
//! over a two-word key read at fixed offsets; no ageing, no eviction.

/// Up to three quarters of a power of two of flows, each with a `V`.
pub struct FlowSlots<V> {
    /// A key's second word holds the protocol (6 or 17), so an all-zero
    /// key marks an empty slot.
    keys: Vec<[u64; 2]>,
    values: Vec<V>,
    mask: usize,
    used: usize,
}

impl<V: Copy + Default> FlowSlots<V> {
    /// Room for `flows` flows (twice as many slots, rounded up).
    pub fn new(flows: usize) -> Self {
        let slots = (flows.max(2) * 2).next_power_of_two();
        FlowSlots { keys: vec![[0; 2]; slots], values: vec![V::default(); slots], mask: slots - 1, used: 0 }
    }

    /// The value of `key`'s flow, a new one (default) if there is room;
    /// `None` when the table is three quarters full.
    #[inline(always)]
    pub fn entry(&mut self, key: [u64; 2]) -> Option<&mut V> {
        let mut at = hash(key) & self.mask;
        for _ in 0..=self.mask {
            let slot = self.keys.get_mut(at)?;
            if *slot == key {
                return self.values.get_mut(at);
            }
            if *slot == [0; 2] {
                if 4 * self.used >= 3 * (self.mask + 1) {
                    return None;
                }
                *slot = key;
                self.used += 1;
                return self.values.get_mut(at);
            }
            at = (at + 1) & self.mask;
        }
        None
    }

    /// The value of `key`'s flow, if it has one.
    pub fn get(&self, key: [u64; 2]) -> Option<&V> {
        let mut at = hash(key) & self.mask;
        for _ in 0..=self.mask {
            match self.keys.get(at)? {
                slot if *slot == key => return self.values.get(at),
                [0, 0] => return None,
                _ => at = (at + 1) & self.mask,
            }
        }
        None
    }

    pub fn len(&self) -> usize {
        self.used
    }

    pub fn is_empty(&self) -> bool {
        self.used == 0
    }
}

#[inline(always)]
fn hash(key: [u64; 2]) -> usize {
    let h = (key[0] ^ key[1].rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h ^ (h >> 29)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_values_apart_and_refuses_when_full() {
        let mut slots = FlowSlots::<u32>::new(4);
        for flow in 1..=6u64 {
            *slots.entry([flow, 17 << 32]).unwrap() = flow as u32 * 10;
        }
        for flow in 1..=6u64 {
            assert_eq!(*slots.entry([flow, 17 << 32]).unwrap(), flow as u32 * 10);
        }
        assert_eq!(slots.len(), 6);
        assert!(slots.entry([7, 17 << 32]).is_none(), "8 slots hold 6 flows");
    }
}
