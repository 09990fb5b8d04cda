//! A fixed-capacity flow table owned by one lcore: open addressing with
//! linear probing and backward-shift deletion (no tombstones), at most 50%
//! full, allocated once at start; nothing is allocated per packet.
//!
//! A full table admits a new flow only in place of a flow its owner calls
//! evictable (a flow that has sent one packet: what a flood of invented
//! flows leaves behind), the oldest such flow near the new flow's home slot.
//! Established flows are never pushed out by new ones; when no evictable
//! flow is near, the new flow is refused (the caller counts it).
//!
//! Keys apart from values, as the reference stages keep them
//! (`int_core::reference::FlowSlots`): a key is the flow's two words
//! ([`FlowWords`], 16 bytes, four to a cache line), so a probe runs over
//! one line of keys and compares two words, with nothing to build from the
//! packet's words first; the value (state and ageing) is read once the key
//! matched. A value is aligned to `A` ([`Natural`] or [`Align64`]): a
//! sink's never straddles a cache line.

use std::net::IpAddr;

use int_core::flow::{FlowKey, FlowWords};

/// Values at their own alignment (a source's packet count and its age:
/// 8 bytes).
#[derive(Clone, Copy, Default)]
pub struct Natural;

/// Values of one cache line.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
pub struct Align64;

/// A flow's value and its ageing.
#[derive(Clone, Copy)]
struct Value<V, A> {
    /// Zero-sized: gives the value `A`'s alignment.
    _align: [A; 0],
    /// Last packet, in coarse ms (the owner's clock >> 20).
    last_seen: u32,
    value: V,
}

/// A slot's key: the flow's [`FlowWords`] with [`LIVE`] set in the second
/// word; all zero in an empty slot.
type Key = [u64; 2];

/// The bit of a key's second word that marks a live slot (above
/// everything [`FlowWords::rest`] holds).
const LIVE: u64 = 1 << 63;
const EMPTY: Key = [0; 2];

#[inline(always)]
fn key_of(words: &FlowWords) -> Key {
    [words.addresses, words.rest | LIVE]
}

#[inline(always)]
fn words_of(key: Key) -> FlowWords {
    FlowWords { addresses: key[0], rest: key[1] & !LIVE }
}

/// Where a table places a flow: the flow's two words multiplied as one
/// 128-bit product, its halves folded, then its high bits folded into the
/// low ones that pick the slot (one multiplication, where
/// `FlowWords::hash64`'s finaliser takes three and a stage pays it per
/// packet). Flows that differ in a port alone, or in one address, spread
/// over the slots as random ones would (the reference stages' one-word
/// multiply puts flows that differ in their source port alone in one slot).
/// Unkeyed, as `hash64` is: a full table's eviction, not the hash, bounds
/// what a sender who picks colliding flows can do.
#[inline(always)]
pub fn hash(words: &FlowWords) -> u64 {
    let product =
        u128::from(words.addresses ^ 0x9e37_79b9_7f4a_7c15) * u128::from(words.rest ^ 0xc2b2_ae3d_27d4_eb4f);
    let folded = (product as u64) ^ ((product >> 64) as u64);
    folded ^ (folded >> 29)
}

pub struct FlowTable<V, A = Natural> {
    keys: Box<[Key]>,
    values: Box<[Value<V, A>]>,
    /// Per slot, the source and destination addresses of an IPv6 flow,
    /// which its key keeps folded: for tables whose flows are named in
    /// reports after their packets are gone ([`FlowTable::with_ipv6_keys`];
    /// empty otherwise). Written when an IPv6 flow is created, read when it
    /// is reported.
    ipv6_addresses: Box<[[u8; 32]]>,
    mask: usize,
    len: usize,
    capacity: usize,
    /// Next slot the incremental sweep looks at.
    cursor: usize,
    /// Passes the sweep has completed over the whole table.
    passes: u64,
}

/// Steps per full pass of a stage's sweep over its table.
pub const SWEEP_STEPS: u64 = 64;
/// The most slots a sweep visits per second: a 1M-flow table (2M slots) is
/// swept once a second instead of sixteen times, and the packet path keeps
/// the memory bandwidth.
const MAX_SWEEP_SLOTS_PER_SECOND: u64 = 2_000_000;

/// Slots a sweep step visits every `step_ns`: a [`SWEEP_STEPS`]th of a
/// table of `slot_count` slots, paced for large tables (a full pass then
/// takes longer than `SWEEP_STEPS` steps).
pub fn sweep_budget(slot_count: usize, step_ns: u64) -> usize {
    let paced = (MAX_SWEEP_SLOTS_PER_SECOND * step_ns / 1_000_000_000).max(1) as usize;
    slot_count.div_ceil(SWEEP_STEPS as usize).min(paced)
}

/// Slots from a new flow's home that a full table looks in for a flow to
/// evict (a few cache lines, read only when the table is full).
const EVICTION_WINDOW: usize = 32;

/// A flow as a general path names it, or as a fast path reads it: the
/// same slot either way, but a table that keeps IPv6 addresses
/// ([`FlowTable::with_ipv6_keys`]) checks and keeps them only from a key.
#[derive(Debug, Clone, Copy)]
pub enum FlowRef<'a> {
    Key(&'a FlowKey),
    Words(&'a FlowWords),
}

/// How a flow got its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Known; `idle_ms` since its last packet, in coarse ms.
    Existing { idle_ms: u32 },
    /// New, in a free slot.
    Created,
    /// New, in place of an evictable flow (the table was full).
    Evicted,
}

/// Coarse time for ageing: ns >> 20 (about 1.05 ms units).
#[inline]
pub fn coarse(now_ns: u64) -> u32 {
    (now_ns >> 20) as u32
}

/// Coarse ms from `last_seen` to `now`; 0 when `last_seen` is later (a
/// clock that went back must not age a live flow out).
#[inline]
fn idle_ms(now: u32, last_seen: u32) -> u32 {
    let idle = now.wrapping_sub(last_seen);
    if idle > i32::MAX as u32 {
        0
    } else {
        idle
    }
}

/// Bytes of one slot: its key and its value.
fn slot_size<V, A>() -> usize {
    std::mem::size_of::<Key>() + std::mem::size_of::<Value<V, A>>()
}

/// `count` copies of `value`, their pages advised huge before they are
/// touched (they come in as 2 MB pages where the kernel allows it).
fn filled<T: Copy>(count: usize, value: T) -> Box<[T]> {
    let mut items: Vec<T> = Vec::with_capacity(count);
    int_os::memory::advise_huge_pages(items.as_ptr().cast::<u8>(), count * std::mem::size_of::<T>());
    items.resize(count, value);
    items.into_boxed_slice()
}

/// Slots of a table of `capacity` flows: at most half of them in use.
fn slot_count(capacity: usize) -> usize {
    capacity.max(1).saturating_mul(2).checked_next_power_of_two().unwrap_or(usize::MAX)
}

/// Bytes of a table of `capacity` flows, as [`FlowTable::new`] (or, with
/// `ipv6_keys`, [`FlowTable::with_ipv6_keys`]) allocates it: worked out
/// before anything is allocated.
pub fn table_bytes<V, A>(capacity: usize, ipv6_keys: bool) -> u64 {
    let slot = slot_size::<V, A>() + if ipv6_keys { 32 } else { 0 };
    (slot_count(capacity) as u64).saturating_mul(slot as u64)
}

impl<V: Copy + Default, A: Copy + Default> FlowTable<V, A> {
    pub fn new(capacity: usize) -> Self {
        let slot_count = slot_count(capacity);
        let empty = Value { _align: [], last_seen: 0, value: V::default() };
        FlowTable {
            keys: filled(slot_count, EMPTY),
            values: filled(slot_count, empty),
            ipv6_addresses: Box::new([]),
            mask: slot_count - 1,
            len: 0,
            capacity,
            cursor: 0,
            passes: 0,
        }
    }

    /// [`FlowTable::new`], keeping each IPv6 flow's full addresses (32
    /// bytes per slot) so that [`SweptKey::flow`] can name it.
    pub fn with_ipv6_keys(capacity: usize) -> Self {
        let mut table = Self::new(capacity);
        table.ipv6_addresses = vec![[0u8; 32]; table.keys.len()].into_boxed_slice();
        table
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn slot_count(&self) -> usize {
        self.keys.len()
    }

    /// Whether the live flows' slots likely no longer fit in the CPU's
    /// caches (more than 2 MiB of them): lookups then miss to DRAM.
    #[inline]
    pub fn spills_cache(&self) -> bool {
        self.len * slot_size::<V, A>() > 2 << 20
    }

    /// Bytes of one flow's slot (key, ageing and state).
    pub fn slot_bytes(&self) -> usize {
        slot_size::<V, A>()
    }

    /// Bytes of table memory per flow of capacity.
    pub fn bytes_per_flow(&self) -> usize {
        self.slot_bytes() * self.keys.len() / self.capacity.max(1)
    }

    /// The home slot of a flow whose [`hash`] is `hash`.
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask
    }

    /// Starts loading the home slot of a flow whose [`hash`] is
    /// `hash`: called in a stage's first pass over a burst, before the
    /// lookups of its second, so that the cache misses overlap instead of
    /// queueing one per packet.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let index = self.home(hash);
        if let (Some(key), Some(value)) = (self.keys.get(index), self.values.get(index)) {
            int_os::memory::prefetch(key);
            int_os::memory::prefetch(value);
        }
        // In DRAM a probe that runs on to the next slot would be a second
        // miss, not hidden: load the next key too (the value follows only
        // if the probe ends there).
        if self.spills_cache() {
            if let Some(key) = self.keys.get((index + 1) & self.mask) {
                int_os::memory::prefetch(key);
            }
        }
    }

    /// Finds the flow, or creates it with `V::default()`. `None` when the
    /// table is full and no flow near the new one's home is `evictable`.
    #[cfg(test)]
    pub fn get_or_insert(
        &mut self,
        key: &FlowKey,
        now_ns: u64,
        evictable: impl Fn(&V) -> bool,
    ) -> Option<(&mut V, Admission)> {
        self.get_or_insert_hashed(key, hash(&key.words()), now_ns, evictable)
    }

    /// [`Self::get_or_insert`] with the key's hash computed by the caller.
    #[inline]
    pub fn get_or_insert_hashed(
        &mut self,
        key: &FlowKey,
        hash: u64,
        now_ns: u64,
        evictable: impl Fn(&V) -> bool,
    ) -> Option<(&mut V, Admission)> {
        self.get_or_insert_slot(key_of(&key.words()), Some(key), hash, now_ns, evictable)
    }

    /// [`Self::get_or_insert_hashed`] for a flow read by a fast path
    /// (`hash` is its [`hash`]): an IPv6 flow's addresses are
    /// neither checked nor kept, so a table that keeps them is given keys.
    #[inline(always)]
    pub fn get_or_insert_words(
        &mut self,
        words: &FlowWords,
        hash: u64,
        now_ns: u64,
        evictable: impl Fn(&V) -> bool,
    ) -> Option<(&mut V, Admission)> {
        self.get_or_insert_slot(key_of(words), None, hash, now_ns, evictable)
    }

    /// [`Self::get_or_insert_hashed`] or [`Self::get_or_insert_words`],
    /// for a flow named either way.
    #[inline(always)]
    pub fn get_or_insert_flow(
        &mut self,
        flow: FlowRef<'_>,
        now_ns: u64,
        evictable: impl Fn(&V) -> bool,
    ) -> Option<(&mut V, Admission)> {
        match flow {
            FlowRef::Key(key) => self.get_or_insert_hashed(key, hash(&key.words()), now_ns, evictable),
            FlowRef::Words(words) => self.get_or_insert_words(words, hash(words), now_ns, evictable),
        }
    }

    /// The lookup: `full` is the whole key where it may be IPv6 (whose
    /// addresses a table may keep beside its keys).
    #[inline(always)]
    fn get_or_insert_slot(
        &mut self,
        key: Key,
        full: Option<&FlowKey>,
        hash: u64,
        now_ns: u64,
        evictable: impl Fn(&V) -> bool,
    ) -> Option<(&mut V, Admission)> {
        let mut index = self.home(hash);
        let now = coarse(now_ns);
        loop {
            let slot = *self.keys.get(index)?;
            if slot == key
                && match full {
                    Some(full) => self.same_addresses(index, full),
                    None => true,
                }
            {
                let value = self.values.get_mut(index)?;
                let idle_ms = idle_ms(now, value.last_seen);
                value.last_seen = now;
                return Some((&mut value.value, Admission::Existing { idle_ms }));
            }
            if slot == EMPTY {
                break;
            }
            index = (index + 1) & self.mask;
        }
        let mut admission = Admission::Created;
        if self.len >= self.capacity {
            self.evict_near(hash, evictable)?;
            admission = Admission::Evicted;
            index = self.free_slot_for(hash)?;
        }
        self.len += 1;
        if let Some(full) = full {
            self.keep_ipv6_addresses(index, full);
        }
        *self.keys.get_mut(index)? = key;
        let value = self.values.get_mut(index)?;
        *value = Value { _align: [], last_seen: now, value: V::default() };
        Some((&mut value.value, admission))
    }

    /// Where the table keeps IPv6 addresses, a new IPv6 flow's in slot
    /// `index`.
    #[inline]
    fn keep_ipv6_addresses(&mut self, index: usize, key: &FlowKey) {
        if let (Some(addresses), IpAddr::V6(src), IpAddr::V6(dst)) =
            (self.ipv6_addresses.get_mut(index), key.src, key.dst)
        {
            addresses[..16].copy_from_slice(&src.octets());
            addresses[16..].copy_from_slice(&dst.octets());
        }
    }

    /// Where the table keeps IPv6 addresses, whether slot `index` holds
    /// `key`'s (two IPv6 flows whose folds collide stay apart); true
    /// otherwise.
    #[inline]
    fn same_addresses(&self, index: usize, key: &FlowKey) -> bool {
        match (self.ipv6_addresses.get(index), key.src, key.dst) {
            (Some(kept), IpAddr::V6(src), IpAddr::V6(dst)) => {
                kept[..16] == src.octets() && kept[16..] == dst.octets()
            }
            _ => true,
        }
    }

    /// Removes the oldest evictable flow of the [`EVICTION_WINDOW`] slots
    /// from `hash`'s home slot; `None` if there is none. Rare (a full
    /// table), so out of line.
    #[inline(never)]
    fn evict_near(&mut self, hash: u64, evictable: impl Fn(&V) -> bool) -> Option<()> {
        let home = self.home(hash);
        let mut victim: Option<(usize, u32)> = None;
        for step in 0..EVICTION_WINDOW {
            let index = (home + step) & self.mask;
            let (key, value) = (self.keys.get(index)?, self.values.get(index)?);
            if *key == EMPTY || !evictable(&value.value) {
                continue;
            }
            let older = match victim {
                Some((_, seen)) => value.last_seen.wrapping_sub(seen) > i32::MAX as u32,
                None => true,
            };
            if older {
                victim = Some((index, value.last_seen));
            }
        }
        let (index, _) = victim?;
        self.remove_at(index);
        Some(())
    }

    /// The empty slot that ends `hash`'s probe run.
    fn free_slot_for(&self, hash: u64) -> Option<usize> {
        let mut index = self.home(hash);
        for _ in 0..self.keys.len() {
            if *self.keys.get(index)? == EMPTY {
                return Some(index);
            }
            index = (index + 1) & self.mask;
        }
        None
    }

    fn remove_at(&mut self, index: usize) {
        if let Some(key) = self.keys.get_mut(index) {
            *key = EMPTY;
            self.len -= 1;
            self.shift_from(index);
        }
    }

    #[cfg(test)]
    pub fn get(&self, key: &FlowKey) -> Option<&V> {
        let (wanted, mut index) = (key_of(&key.words()), self.home(hash(&key.words())));
        loop {
            match *self.keys.get(index)? {
                EMPTY => return None,
                slot if slot == wanted => return Some(&self.values.get(index)?.value),
                _ => index = (index + 1) & self.mask,
            }
        }
    }

    /// Backward-shift deletion: `hole` was just emptied; pull back every
    /// later entry of the run whose home slot is at or before the hole.
    fn shift_from(&mut self, mut hole: usize) {
        let mut next = (hole + 1) & self.mask;
        loop {
            let Some(&candidate) = self.keys.get(next) else { return };
            if candidate == EMPTY {
                break;
            }
            let home = self.home(hash(&words_of(candidate)));
            if (next.wrapping_sub(home) & self.mask) >= (next.wrapping_sub(hole) & self.mask) {
                self.keys.copy_within(next..next + 1, hole);
                self.values.copy_within(next..next + 1, hole);
                if !self.ipv6_addresses.is_empty() {
                    self.ipv6_addresses.copy_within(next..next + 1, hole);
                }
                hole = next;
            }
            next = (next + 1) & self.mask;
        }
        if let Some(key) = self.keys.get_mut(hole) {
            *key = EMPTY;
        }
    }

    /// Changes every live flow's value in place (a reload that makes the
    /// flows' kept state mean something else): a walk over the whole table.
    pub fn for_each_mut(&mut self, mut change: impl FnMut(&mut V)) {
        for (_, value) in self.keys.iter().zip(self.values.iter_mut()).filter(|(key, _)| **key != EMPTY) {
            change(&mut value.value);
        }
    }

    /// Passes the sweep has completed over the whole table.
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// Visits up to `budget` slots from the sweep cursor: `visit` sees each
    /// live flow (its key as the slot keeps it) and its idle time in coarse
    /// ms; returning true removes the flow. Returns how many were removed.
    pub fn sweep(
        &mut self,
        budget: usize,
        now_ns: u64,
        mut visit: impl FnMut(&SweptKey<'_>, &mut V, u32) -> bool,
    ) -> usize {
        let now = coarse(now_ns);
        let mut removed = 0;
        let budget = budget.min(self.keys.len());
        let mut advanced = 0;
        while advanced < budget {
            let index = self.cursor;
            let key = self.keys.get(index).copied().filter(|key| *key != EMPTY);
            if let (Some(key), Some(value)) = (key, self.values.get_mut(index)) {
                let idle = idle_ms(now, value.last_seen);
                let key = SweptKey { words: words_of(key), ipv6_addresses: self.ipv6_addresses.get(index) };
                if visit(&key, &mut value.value, idle) {
                    self.remove_at(index);
                    removed += 1;
                    // Backward-shift deletion may have pulled a later flow
                    // of the run into this slot: it is visited next, not
                    // skipped for a pass (at shutdown, for good).
                    if self.keys.get(index).is_some_and(|key| *key != EMPTY) {
                        continue;
                    }
                }
            }
            self.cursor = (index + 1) & self.mask;
            self.passes += u64::from(self.cursor == 0);
            advanced += 1;
        }
        removed
    }
}

/// The key of a flow the sweep visits: what its slot keeps and, in a table
/// that keeps them, its IPv6 addresses.
pub struct SweptKey<'a> {
    words: FlowWords,
    ipv6_addresses: Option<&'a [u8; 32]>,
}

impl SweptKey<'_> {
    /// The flow's full key: always for IPv4; for IPv6 where the table
    /// keeps the addresses. `None`: the slot's fold is all there is.
    pub fn flow(&self) -> Option<FlowKey> {
        self.words.key_v4().or_else(|| self.words.flow_v6(self.ipv6_addresses?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_tables_are_swept_at_a_paced_rate() {
        // 1000 flows: a 64th of the table per step, a pass in 64 steps.
        assert_eq!(sweep_budget(2048, 1 << 20), 32);
        // 1M flows: about 2M slots a second, a pass in about a second
        // rather than in 64 ms.
        let budget = sweep_budget(2 << 20, 1 << 20);
        assert_eq!(budget, 2097);
        let steps_per_pass = (2 << 20) / budget as u64;
        assert_eq!(steps_per_pass * (1 << 20) / 1_000_000, 1048, "ms per pass");
        assert_eq!(sweep_budget(16, 1), 1, "at least one slot a step");
    }
    use std::collections::HashMap;

    /// Flows that differ in their source port alone, or in one address
    /// alone, take about as many home slots as random ones would.
    #[test]
    fn the_hash_spreads_flows_that_differ_in_one_field() {
        let homes = |keys: &mut dyn Iterator<Item = FlowKey>| {
            keys.map(|key| hash(&key.words()) & 2047).collect::<std::collections::HashSet<u64>>().len()
        };
        let port = |p: u16| FlowKey::v4(0x0a00_0001.into(), 0x0a01_0001.into(), 17, p, 5000);
        let address = |i: u32| FlowKey::v4((0x0a00_0000 + i).into(), 0x0a01_0001.into(), 17, 4000, 5000);
        let destination = |i: u32| FlowKey::v4(0x0a00_0001.into(), (0x0a01_0000 + i).into(), 17, 4000, 5000);
        // 1024 keys into 2048 slots: about 2048 * (1 - e^-0.5), 806, if random.
        for (what, used) in [
            ("ports", homes(&mut (0..1024).map(port))),
            ("sources", homes(&mut (0..1024).map(address))),
            ("destinations", homes(&mut (0..1024).map(destination))),
            ("ipv6", homes(&mut (0..1024).map(key6))),
        ] {
            assert!(used > 750, "{what}: {used} of 2048 slots");
        }
    }

    fn key(i: u32) -> FlowKey {
        FlowKey::v4((0x0a00_0000 + i).into(), 0x0a01_0001.into(), 17, i as u16, 5000)
    }

    /// A pass that removes every flow removes every flow: backward-shift
    /// deletion pulls later flows of a run into the slot just emptied, and
    /// the sweep visits them there (it used to step past them, and a flow
    /// left at shutdown never reported its last losses).
    #[test]
    fn a_pass_visits_flows_shifted_back_by_a_removal() {
        let mut table: FlowTable<u32> = FlowTable::new(1000);
        for i in 0..1000 {
            table.get_or_insert(&key(i), 0, never).unwrap();
        }
        let slots = table.slot_count();
        let mut visited = std::collections::HashSet::new();
        let removed = table.sweep(slots, 0, |key, _, _| {
            visited.insert(key.flow());
            true
        });
        assert_eq!((removed, table.len(), visited.len()), (1000, 0, 1000));
        assert_eq!(table.passes(), 1);
    }

    #[test]
    fn insert_find_full() {
        let mut table: FlowTable<u32> = FlowTable::new(100);
        for i in 0..100 {
            let (value, admission) = table.get_or_insert(&key(i), 0, never).unwrap();
            assert_eq!(admission, Admission::Created);
            *value = i;
        }
        assert!(table.get_or_insert(&key(100), 0, never).is_none(), "full");
        for i in 0..100 {
            let (value, admission) = table.get_or_insert(&key(i), 0, never).unwrap();
            assert_eq!(admission, Admission::Existing { idle_ms: 0 });
            assert_eq!(*value, i);
        }
        assert_eq!(table.len(), 100);
    }

    fn never(_: &u32) -> bool {
        false
    }

    /// A flood of one-packet flows into a full table takes the place of
    /// other one-packet flows, never of established ones; a flow's idle time
    /// survives a clock that went back.
    #[test]
    fn a_flood_of_new_flows_never_evicts_established_ones() {
        let mut table: FlowTable<u32> = FlowTable::new(1000);
        let one_packet = |packets: &u32| *packets <= 1;
        for i in 0..500 {
            for _ in 0..2 {
                let (packets, _) = table.get_or_insert(&key(i), 0, one_packet).unwrap();
                *packets += 1;
            }
        }
        let (mut evicted, mut refused) = (0, 0);
        for i in 500..100_000 {
            match table.get_or_insert(&key(i), u64::from(i) << 20, one_packet) {
                Some((packets, admission)) => {
                    *packets += 1;
                    evicted += u32::from(admission == Admission::Evicted);
                }
                None => refused += 1,
            }
        }
        assert_eq!(table.len(), 1000);
        assert!(evicted > 90_000, "evicted {evicted}, refused {refused}");
        for i in 0..500 {
            assert_eq!(table.get(&key(i)), Some(&2), "established flow {i}");
        }
    }

    /// Without the side array an IPv6 flow cannot be named; with it, a
    /// slot's addresses are checked against its fold.
    #[test]
    fn ipv6_flows_are_named_only_where_their_addresses_are_kept() {
        for (mut table, named) in [(FlowTable::<u32>::new(8), false), (FlowTable::with_ipv6_keys(8), true)] {
            table.get_or_insert(&key6(3), 0, never).unwrap();
            table.get_or_insert(&key(4), 0, never).unwrap();
            let mut seen = Vec::new();
            table.sweep(usize::MAX, 0, |k, _, _| {
                seen.push(k.flow());
                false
            });
            seen.sort();
            let v6 = named.then(|| key6(3));
            let mut expected = vec![Some(key(4)), v6];
            expected.sort();
            assert_eq!(seen, expected);
        }
        // Two IPv6 flows with the same fold (forced here: their slot's
        // addresses changed under it) are two flows, not one.
        let mut table = FlowTable::<u32>::with_ipv6_keys(8);
        *table.get_or_insert(&key6(3), 0, never).unwrap().0 = 7;
        let index = table.keys.iter().position(|key| *key != EMPTY).unwrap();
        table.ipv6_addresses[index][0] ^= 1;
        let (value, admission) = table.get_or_insert(&key6(3), 0, never).unwrap();
        assert_eq!((*value, admission), (0, Admission::Created));
        let mut stale = [0u8; 32];
        stale[15] = 9;
        assert_eq!(key6(3).words().flow_v6(&stale), None, "addresses that do not fold to the slot's words");
    }

    #[test]
    fn a_clock_that_went_back_ages_nothing() {
        let mut table: FlowTable<u32> = FlowTable::new(10);
        table.get_or_insert(&key(1), 5_000_000_000, never).unwrap();
        table.get_or_insert(&key(2), 5_000_000_000, never).unwrap();
        let (_, admission) = table.get_or_insert(&key(1), 4_000_000_000, never).unwrap();
        assert_eq!(admission, Admission::Existing { idle_ms: 0 });
        let mut idles = Vec::new();
        let removed = table.sweep(usize::MAX, 3_000_000_000, |_, _, idle| {
            idles.push(idle);
            idle > 1000
        });
        assert_eq!((removed, idles), (0, vec![0, 0]));
    }

    fn key6(i: u32) -> FlowKey {
        let src = std::net::Ipv6Addr::from((0x2001_0db8_u128 << 96) | u128::from(i));
        FlowKey {
            src: src.into(),
            dst: "2001:db8::1:1".parse().unwrap(),
            protocol: 6,
            src_port: 7,
            dst_port: 80,
        }
    }

    /// Random inserts and sweeps of IPv4 and IPv6 flows checked against a
    /// HashMap; the sweep names every flow it removes by its full key, IPv6
    /// addresses and all, however far backward shifts moved its slot.
    #[test]
    fn matches_a_hashmap_under_churn() {
        let mut table: FlowTable<u32> = FlowTable::with_ipv6_keys(64);
        let mut model: HashMap<FlowKey, u32> = HashMap::new();
        let mut rng = 0x1234_5678u64;
        for step in 0..20_000u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let n = (rng % 150) as u32;
            let k = if n.is_multiple_of(2) { key(n) } else { key6(n) };
            if rng.is_multiple_of(5) {
                // Remove every flow whose value is odd, via the sweep.
                let mut removed = Vec::new();
                table.sweep(usize::MAX, 0, |k, v, _| {
                    let gone = *v % 2 == 1;
                    if gone {
                        removed.push(k.flow().expect("a full key"));
                    }
                    gone
                });
                for k in removed {
                    assert!(model.remove(&k).is_some(), "{k}");
                }
            } else if let Some((value, _)) = table.get_or_insert(&k, 0, never) {
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
