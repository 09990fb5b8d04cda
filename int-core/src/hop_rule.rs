//! What a sink compares of a flow's hops from one packet to the next,
//! without keeping anything per hop (the way switch pipelines do it: a
//! digest per flow). Each hop's latency and queue occupancy are put in
//! classes by bounds the operator sets; the path (node ids in order) and
//! the classes go into a 16-bit digest, the path alone into an 8-bit one.
//! A flow whose hops' digest changes is reported: as a path change where
//! the path's digest changed too, else as a hop's change. A hop's queue
//! at or over an alert threshold is flagged on every packet (the sink
//! reports those under a quota).
//!
//! A stack is compared only when it tells its path: at least one hop, at
//! most [`MAX_HOPS`], every hop naming its node (not all ones) and no node
//! twice. Anything else is [`Untold`]: the flow's last digest is kept, so a
//! lying stack is never reported as a new path.

/// Most hops a compared stack may have.
pub const MAX_HOPS: usize = 16;

/// Most class bounds per figure.
pub const MAX_BOUNDS: usize = 8;

/// Ascending bounds: a value's class is how many bounds it reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bounds {
    edges: [u32; MAX_BOUNDS],
    len: u8,
}

impl Bounds {
    /// `None` for more than [`MAX_BOUNDS`] or bounds not strictly ascending.
    pub fn new(list: &[u32]) -> Option<Bounds> {
        if list.len() > MAX_BOUNDS || list.windows(2).any(|w| matches!(w, [a, b] if a >= b)) {
            return None;
        }
        let mut edges = [0; MAX_BOUNDS];
        edges.get_mut(..list.len())?.copy_from_slice(list);
        Some(Bounds { edges, len: list.len() as u8 })
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u32] {
        self.edges.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// The value's class; a value not told (`None`) has its own; without
    /// bounds, every value is class 0.
    #[inline]
    pub fn class(&self, value: Option<u32>) -> u8 {
        if self.len == 0 {
            return 0;
        }
        let Some(value) = value else { return 0xff };
        // All eight compared, branch-free; the unused ones masked out.
        let mut class = 0;
        for (i, edge) in self.edges.iter().enumerate() {
            class += u8::from(i < usize::from(self.len)) & u8::from(value >= *edge);
        }
        class
    }
}

/// Which packets of a flow feed the hop rules: every packet, one in N, or
/// none (no rule reads hops). One in N is exactly one number in each
/// block of N consecutive packet numbers (`bN .. bN+N-1`), at a position
/// drawn for the block and the flow ([`Sample::position`]): a change that
/// only some numbers take (odd ones, three in four: per-packet spraying)
/// is taken in each block with the chance of its share of the block's
/// numbers, whatever the pattern, unless the pattern knows the draw. A
/// change every packet takes is taken within 2N-1 packets (the block's
/// rest, then the next whole block); where the 32-bit number wraps, the
/// last block is short and may hold no sample (within 3N-2). A packet
/// without a number feeds the rules unless they are off: without a number
/// there is no per-flow count to sample by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// 0: none; 1: every packet.
    every: u32,
    /// `ceil(2^64 / every)` (wrapped to 0 for 1): a number's block is the
    /// high word of `n * magic` (Lemire, Kaser and Kurz, "Faster remainder
    /// by direct computation", 2019, exact for 32-bit numbers): a multiply,
    /// not a division, per packet.
    magic: u64,
}

impl Sample {
    /// No packet: the rules read nothing (no path rule, no class, no alert).
    pub const NONE: Sample = Sample { every: 0, magic: 0 };

    /// One packet in `every` per flow; 0 is [`Sample::NONE`].
    pub fn every(every: u32) -> Sample {
        let magic = (u64::MAX / u64::from(every.max(1))).wrapping_add(1);
        Sample { every, magic }
    }

    pub fn get(&self) -> u32 {
        self.every
    }

    /// Whether the packet numbered `sequence` (`None`: not numbered) of
    /// the flow whose [`crate::flow::FlowKey::phase`] is `flow` feeds the
    /// rules.
    #[inline(always)]
    pub fn takes(&self, sequence: Option<u32>, flow: u32) -> bool {
        match (self.every, sequence) {
            (0, _) => false,
            (1, _) | (_, None) => true,
            (every, Some(n)) => {
                let block = ((u128::from(n) * u128::from(self.magic)) >> 64) as u32;
                let at = n.wrapping_sub(block.wrapping_mul(every));
                at == Sample::position(every, block, flow)
            }
        }
    }

    /// The position (`0..every`) of the taken number in block `block` of
    /// the flow whose phase is `flow`: a multiply-xorshift mix of the two
    /// (the high half of the 64-bit word), scaled to the block by a
    /// multiply (Lemire's range reduction).
    #[inline(always)]
    pub fn position(every: u32, block: u32, flow: u32) -> u32 {
        let x = ((u64::from(flow) << 32) | u64::from(block)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (((x >> 32) * u64::from(every)) >> 32) as u32
    }
}

impl Default for Sample {
    fn default() -> Self {
        Sample::every(1)
    }
}

/// The sink's hop rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HopRule {
    /// Classes of a hop's latency (ns, as hops write it); empty: not compared.
    pub latency: Bounds,
    /// Classes of a hop's queue occupancy (the hop's units); empty: not
    /// compared.
    pub queue: Bounds,
    /// A hop's queue occupancy at or over this is flagged; `None`: off.
    pub queue_alert: Option<u32>,
    /// Which packets are digested (the INT 2.1 sink's and the IOAM
    /// decapsulating node's; others digest all).
    pub sample: Sample,
}

/// One hop as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopFigures {
    pub node: u32,
    pub latency: Option<u32>,
    pub queue: Option<u32>,
}

/// What a told stack comes to, in one word (so that it is made and read
/// in a register: as three fields it went through memory, 8 ns a packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopDigest(u32);

impl HopDigest {
    fn new(hops: u16, path: u8, queue_alert: bool) -> Self {
        HopDigest(u32::from(hops) | (u32::from(path) << 16) | (u32::from(queue_alert) << 24))
    }

    /// Path and classes; never 0 (a flow's slot keeps 0 for "none yet").
    #[inline(always)]
    pub fn hops(self) -> u16 {
        self.0 as u16
    }

    /// The path alone, to tell a path change from a hop's change.
    #[inline(always)]
    pub fn path(self) -> u8 {
        (self.0 >> 16) as u8
    }

    /// A hop's queue is at or over the alert threshold.
    #[inline(always)]
    pub fn queue_alert(self) -> bool {
        self.0 >> 24 != 0
    }
}

/// Why a stack's path is not compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untold {
    /// No hop pushed.
    NoHops,
    /// The instructions ask for no node id, or a hop wrote all ones.
    Unnamed,
    /// A node id twice: a loop or a lie, not told apart here.
    Repeated,
    /// More than [`MAX_HOPS`].
    TooMany,
    /// Not read: a packet the sampled rules pass over, or the rules are
    /// off ([`Sample`]). Not counted; the flow keeps its digest.
    Skipped,
}

/// What changed between a flow's last digest and this packet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopChange {
    Path,
    Hop,
}

impl HopDigest {
    /// Compared with the flow's last digest (`hops` 0: none yet).
    #[inline]
    pub fn change_from(&self, hops: u16, path: u8) -> Option<HopChange> {
        if hops == 0 || hops == self.hops() {
            None
        } else if path != self.path() {
            Some(HopChange::Path)
        } else {
            Some(HopChange::Hop)
        }
    }
}

impl HopRule {
    /// Whether any class is compared (else only the path is).
    #[inline(always)]
    pub fn has_classes(&self) -> bool {
        self.latency.len != 0 || self.queue.len != 0
    }

    /// A hop's latency and queue classes, as one value.
    #[inline(always)]
    fn classes(&self, latency: Option<u32>, queue: Option<u32>) -> u64 {
        (u64::from(self.latency.class(latency)) << 8) | u64::from(self.queue.class(queue))
    }

    /// The hop rule's answer for a packet: `digest`'s, where the rule's
    /// [`Sample`] takes the packet (`sequence`: its number; `phase`: its
    /// flow's [`crate::flow::FlowKey::phase`]), else [`Untold::Skipped`], and
    /// `digest` is never called: a sampled-out packet reads no hop. Every
    /// sink decides its sample here, each protocol digesting its own hops.
    #[inline(always)]
    pub fn sampled(
        &self,
        sequence: Option<u32>,
        phase: u32,
        digest: impl FnOnce(&HopRule) -> Result<HopDigest, Untold>,
    ) -> Result<HopDigest, Untold> {
        if self.sample.takes(sequence, phase) {
            digest(self)
        } else {
            Err(Untold::Skipped)
        }
    }

    /// The digest of a stack's hops, newest first: the definition, which
    /// [`crate::int21::MdStack::hop_digest`] computes in place (a fuzz
    /// target holds the two together).
    pub fn digest(&self, hops: impl Iterator<Item = Option<HopFigures>>) -> Result<HopDigest, Untold> {
        let mut told = [None; MAX_HOPS];
        let mut count = 0;
        for hop in hops {
            *told.get_mut(count).ok_or(Untold::TooMany)? = hop;
            count += 1;
        }
        let told = told.get(..count).unwrap_or_default();
        let mut nodes = [0u32; MAX_HOPS];
        for (hop, node) in told.iter().zip(&mut nodes) {
            *node = hop.filter(|hop| hop.node != u32::MAX).ok_or(Untold::Unnamed)?.node;
        }
        let nodes = nodes.get(..count).unwrap_or_default();
        if nodes.iter().enumerate().any(|(i, node)| nodes.get(i + 1..).unwrap_or_default().contains(node)) {
            return Err(Untold::Repeated);
        }
        let mut digest = Digest::new(self);
        for hop in told.iter().flatten() {
            digest.push(self, hop);
        }
        digest.finish()
    }
}

/// A digest under way, hop by hop.
#[derive(Debug)]
pub struct Digest {
    /// Classes are compared: the hops' digest is not the path's.
    classes: bool,
    all: u64,
    path: u64,
    /// One bit per node id's hash: a bit set twice may be a node twice.
    seen: u64,
    twice: bool,
    count: usize,
    queue_alert: bool,
}

impl Digest {
    pub fn new(rule: &HopRule) -> Self {
        Digest {
            classes: rule.has_classes(),
            all: 0,
            path: 0,
            seen: 0,
            twice: false,
            count: 0,
            queue_alert: false,
        }
    }

    #[inline(always)]
    pub fn push(&mut self, rule: &HopRule, hop: &HopFigures) {
        let node = u64::from(hop.node);
        if self.classes {
            self.all = mix(self.all, (node << 16) | rule.classes(hop.latency, hop.queue));
        }
        self.path = mix(self.path, node);
        let bit = 1u64 << (node.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58);
        self.twice |= self.seen & bit != 0;
        self.seen |= bit;
        self.count += 1;
        self.queue_alert |=
            matches!((rule.queue_alert, hop.queue), (Some(alert), Some(queue)) if queue >= alert);
    }

    /// Whether a node id may have come twice (its hash bit was set before):
    /// then, and only then, the caller looks for it.
    pub fn maybe_twice(&self) -> bool {
        self.twice
    }

    pub fn finish(&self) -> Result<HopDigest, Untold> {
        if self.count == 0 {
            return Err(Untold::NoHops);
        }
        let all = if self.classes { self.all } else { self.path };
        let folded = ((all >> 48) ^ (all >> 32) ^ (all >> 16) ^ all) as u16;
        let path = (self.path >> 56) as u8 ^ (self.path >> 24) as u8;
        Ok(HopDigest::new(folded.max(1), path, self.queue_alert))
    }
}

/// One step of a multiplicative hash: the high bits mix well, and the
/// digests are folded from all of them.
#[inline(always)]
fn mix(hash: u64, value: u64) -> u64 {
    (hash ^ value).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(node: u32, latency: u32, queue: u32) -> Option<HopFigures> {
        Some(HopFigures { node, latency: Some(latency), queue: Some(queue) })
    }

    fn rule() -> HopRule {
        HopRule {
            latency: Bounds::new(&[10_000, 100_000]).unwrap(),
            queue: Bounds::new(&[1000]).unwrap(),
            queue_alert: Some(5000),
            sample: Sample::default(),
        }
    }

    /// Exactly one number in each block of N, for any N, whatever the
    /// flow; its position uniform over the block; none when off;
    /// unnumbered packets fed unless off; N = 1 takes every number.
    #[test]
    fn a_sample_takes_one_number_in_each_block_of_n() {
        for every in [1, 2, 3, 4, 7, 10, 16, 64, 100, 1000, 65_537, u32::MAX - 1, u32::MAX] {
            let sample = Sample::every(every);
            for flow in [0, 1, 0x1f90_1388, u32::MAX] {
                let last = u32::MAX / every;
                let blocks = (0..300u32).chain(last.saturating_sub(300)..last);
                for block in blocks.filter(|b| u64::from(*b + 1) * u64::from(every) <= 1 << 32) {
                    let start = block * every;
                    let position = Sample::position(every, block, flow);
                    assert!(position < every);
                    // Every number of a small block; around the taken one
                    // and at both ends of a large one.
                    let near = [0, 1, every - 1, position.saturating_sub(1), position, position + 1];
                    let ats = (0..every.min(1000)).chain(near.into_iter().filter(|&at| at < every));
                    let taken: Vec<u32> = ats.filter(|at| sample.takes(Some(start + at), flow)).collect();
                    assert!(
                        !taken.is_empty() && taken.iter().all(|&at| at == position),
                        "block {block} of {every}"
                    );
                }
                assert!(sample.takes(None, flow));
            }
        }
        assert_eq!(Sample::every(0), Sample::NONE);
        assert!(!Sample::NONE.takes(Some(0), 0) && !Sample::NONE.takes(None, 0));
        assert_eq!(Sample::default().get(), 1);
        for every in [2, 3, 4, 7, 16] {
            let mut at = vec![0u32; every as usize];
            for block in 0..20_000 {
                at[Sample::position(every, block, 0x1f90_1388) as usize] += 1;
            }
            let mean = 20_000 / every;
            assert!(at.iter().all(|&c| c.abs_diff(mean) < mean / 10), "{every}: {at:?}");
        }
    }

    /// No fixed pattern of packet numbers hides a change (by multiples of
    /// N, odd numbers were never read at N = 2, nor three in four at N =
    /// 4). For odd and even numbers, three in four, one in four, every
    /// k-th (k up to 2N, each offset) and random halves, from many starts
    /// and for several flows, a member is taken within 20Nk numbers, where
    /// the pattern holds one number in k: each block of N takes a member
    /// with the chance of the members' share of it, so a member waits
    /// about Nk numbers, and a draw as good as random misses 20 times that
    /// with a chance of e^-20. A change every packet takes is taken
    /// within 2N-1, always.
    #[test]
    fn no_pattern_of_numbers_hides_a_change() {
        type Pattern = (String, u32, Box<dyn Fn(u32) -> bool>);
        let flows = [0u32, 1, 2, 0x1f90_1388, 0x1f91_1388, 0xc350_0035, u32::MAX];
        let mut random = 0x2545_f491_4f6c_dd1du64;
        for every in [2, 3, 4, 5, 7, 8, 16] {
            let sample = Sample::every(every);
            let mut patterns: Vec<Pattern> = vec![
                ("odd".into(), 2, Box::new(|n| n % 2 == 1)),
                ("even".into(), 2, Box::new(|n| n % 2 == 0)),
                ("3 of 4".into(), 2, Box::new(|n| n % 4 != 0)),
                ("1 of 4".into(), 4, Box::new(|n| n % 4 == 3)),
            ];
            for k in 1..=2 * every {
                for offset in 0..k {
                    patterns.push((format!("{offset} mod {k}"), k, Box::new(move |n| n % k == offset)));
                }
            }
            for i in 0..8 {
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                let bits = random;
                let half = move |n: u32| (u64::from(n) ^ bits).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63 == 1;
                patterns.push((format!("random half {i}"), 2, Box::new(half)));
            }
            for (name, k, pattern) in &patterns {
                let bound = 20 * every * k;
                let starts = (0..2000).step_by(97).chain([u32::MAX / 2, u32::MAX - 2 * bound]);
                for (flow, from) in
                    flows.iter().flat_map(|&flow| starts.clone().map(move |from| (flow, from)))
                {
                    let found = (from..from + bound).find(|&n| pattern(n) && sample.takes(Some(n), flow));
                    assert!(found.is_some(), "{name} in {every}, flow {flow:#x}, from {from}");
                }
            }
            for (flow, from) in flows.iter().flat_map(|&flow| (0..2000).map(move |from| (flow, from))) {
                let found = (from..from + 2 * every - 1).find(|&n| sample.takes(Some(n), flow));
                assert!(found.is_some(), "every packet, {every}, flow {flow:#x}, from {from}");
            }
        }
    }

    #[test]
    fn classes_count_the_bounds_reached() {
        let bounds = Bounds::new(&[10, 20]).unwrap();
        assert_eq!(
            [Some(0), Some(9), Some(10), Some(19), Some(20), Some(u32::MAX), None].map(|v| bounds.class(v)),
            [0, 0, 1, 1, 2, 2, 0xff]
        );
        assert!(Bounds::new(&[10, 10]).is_none());
        assert!(Bounds::new(&[1, 2, 3, 4, 5, 6, 7, 8, 9]).is_none());
        assert_eq!(Bounds::default().class(Some(u32::MAX)), 0);
    }

    #[test]
    fn a_class_change_is_a_hop_change_and_a_new_node_a_path_change() {
        let rule = rule();
        let base = rule.digest([hop(3, 5_000, 10), hop(2, 5_000, 10), hop(1, 0, 0)].into_iter()).unwrap();
        let jitter = rule.digest([hop(3, 9_000, 900), hop(2, 1, 10), hop(1, 0, 0)].into_iter()).unwrap();
        assert_eq!(jitter.change_from(base.hops(), base.path()), None, "same classes, same digest");
        let slower = rule.digest([hop(3, 5_000, 10), hop(2, 50_000, 10), hop(1, 0, 0)].into_iter()).unwrap();
        assert_eq!(slower.change_from(base.hops(), base.path()), Some(HopChange::Hop));
        let moved = rule.digest([hop(3, 5_000, 10), hop(4, 5_000, 10), hop(1, 0, 0)].into_iter()).unwrap();
        assert_eq!(moved.change_from(base.hops(), base.path()), Some(HopChange::Path));
        assert_eq!(moved.change_from(0, 0), None, "a flow's first digest is no change");
        assert!(!base.queue_alert());
        let congested = rule.digest([hop(3, 5_000, 5000), hop(2, 5_000, 10)].into_iter()).unwrap();
        assert!(congested.queue_alert());
        // The order of the hops is part of the path.
        let reversed = rule.digest([hop(1, 0, 0), hop(2, 5_000, 10), hop(3, 5_000, 10)].into_iter()).unwrap();
        assert_eq!(reversed.change_from(base.hops(), base.path()), Some(HopChange::Path));
    }

    #[test]
    fn without_classes_only_the_path_counts() {
        let rule = HopRule::default();
        let a = rule.digest([hop(3, 5, 10), hop(1, 0, 0)].into_iter()).unwrap();
        let b = rule.digest([hop(3, 5_000_000, 1 << 20), hop(1, 7, 7)].into_iter()).unwrap();
        assert_eq!(b.change_from(a.hops(), a.path()), None);
        assert!(!b.queue_alert());
    }

    #[test]
    fn stacks_that_do_not_tell_their_path_are_not_compared() {
        let rule = rule();
        assert_eq!(rule.digest(core::iter::empty()), Err(Untold::NoHops));
        assert_eq!(rule.digest([hop(3, 0, 0), None].into_iter()), Err(Untold::Unnamed));
        assert_eq!(rule.digest([hop(u32::MAX, 0, 0)].into_iter()), Err(Untold::Unnamed));
        assert_eq!(
            rule.digest([hop(3, 0, 0), hop(2, 0, 0), hop(3, 0, 0)].into_iter()),
            Err(Untold::Repeated)
        );
        let long = (1..=MAX_HOPS as u32 + 1).map(|node| hop(node, 0, 0));
        assert_eq!(rule.digest(long), Err(Untold::TooMany));
        assert!(rule.digest((1..=MAX_HOPS as u32).map(|node| hop(node, 0, 0))).is_ok());
    }

    /// Digests of distinct paths differ as often as 16 and 8 bits allow:
    /// over 20,000 three-hop paths, few share a digest.
    #[test]
    fn digests_spread() {
        let rule = HopRule::default();
        let mut hops = std::collections::HashSet::new();
        let mut paths = [0u32; 256];
        let n = 20_000u32;
        for i in 0..n {
            let d = rule.digest([hop(1, 0, 0), hop(100 + i, 0, 0), hop(7, 0, 0)].into_iter()).unwrap();
            hops.insert(d.hops());
            paths[usize::from(d.path())] += 1;
        }
        // 20,000 draws from 65,535 values leave about 17,700 distinct.
        assert!(hops.len() > 17_000, "{}", hops.len());
        // About 78 a value; none far off.
        assert!(paths.iter().all(|&c| (40..130).contains(&c)), "{paths:?}");
    }
}
