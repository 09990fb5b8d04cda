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

/// Which packets of a flow feed the hop rules: every packet, one in N
/// (those whose packet number N divides), or none (no rule reads hops).
/// A packet without a number feeds them unless they are off: without a
/// number there is no per-flow count to sample by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// 0: none; 1: every packet.
    every: u32,
    /// `ceil(2^64 / every)`: `n` is a multiple of `every` where
    /// `n * magic` (mod 2^64) is below it (Lemire, Kaser and Kurz, "Faster
    /// remainder by direct computation", 2019): a multiply, not a division,
    /// per packet.
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

    /// Whether the packet numbered `sequence` (`None`: not numbered)
    /// feeds the rules.
    #[inline(always)]
    pub fn takes(&self, sequence: Option<u32>) -> bool {
        match (self.every, sequence) {
            (0, _) => false,
            (_, None) => true,
            // every = 1: magic is 0 and the bound all ones.
            (_, Some(n)) => u64::from(n).wrapping_mul(self.magic) <= self.magic.wrapping_sub(1),
        }
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

    /// One in N by packet number, for any N, checked against `%`; none
    /// when off; unnumbered packets fed unless off.
    #[test]
    fn a_sample_takes_the_multiples_of_n() {
        for every in [1, 2, 3, 7, 10, 64, 100, 1000, 65_537, u32::MAX - 1, u32::MAX] {
            let sample = Sample::every(every);
            let numbers =
                (0..3000).chain(u32::MAX - 3000..=u32::MAX).chain((0..32).map(|k| every.wrapping_mul(k)));
            for n in numbers {
                assert_eq!(sample.takes(Some(n)), n % every == 0, "{n} in {every}");
            }
            assert!(sample.takes(None));
        }
        assert_eq!(Sample::every(0), Sample::NONE);
        assert!(!Sample::NONE.takes(Some(0)) && !Sample::NONE.takes(None));
        assert_eq!(Sample::default().get(), 1);
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
