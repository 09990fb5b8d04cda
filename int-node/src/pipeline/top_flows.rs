//! The busiest and the slowest flows of a pipeline's flow table, for DPDK
//! telemetry (`/int_node/top_flows`).
//!
//! The table is the worker's alone, so the worker ranks its flows while its
//! sweep visits them anyway (two comparisons per flow) and, each time the
//! sweep completes a pass over the table, publishes the two rankings
//! through a seqlock: the worker never waits, and a reader retries the rare
//! read that overlapped a publication. A ranking is as old as one sweep
//! pass (the sink's sweep interval, or a second for very large tables).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use int_core::flow::FlowKey;

/// Flows in each ranking.
pub const TOP_FLOWS: usize = 10;

/// One ranked flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopFlow {
    pub key: FlowKey,
    /// The flow's packet number: packets a source has numbered in it (at a
    /// sink, the highest number seen; for flows whose packets carry none,
    /// the packets seen, up to 65535).
    pub packets: u32,
    /// At a sink, the flow's latency as last reported (within the change
    /// threshold of its current latency, refreshed every refresh period).
    pub latency_ns: Option<u64>,
    /// At a sink, the node that put INT into the flow (0 if unknown).
    pub source_node: u32,
}

/// A ranking kept in descending order of its score.
#[derive(Debug, Clone, Copy)]
struct Ranking {
    flows: [Option<(u64, TopFlow)>; TOP_FLOWS],
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking { flows: [None; TOP_FLOWS] }
    }
}

impl Ranking {
    /// Whether a flow scoring `score` would enter.
    #[inline]
    fn admits(&self, score: u64) -> bool {
        match self.flows.last() {
            Some(Some((lowest, _))) => score > *lowest,
            _ => true,
        }
    }

    fn insert(&mut self, score: u64, flow: TopFlow) {
        let at = self.flows.iter().position(|f| f.is_none_or(|(s, _)| score > s)).unwrap_or(TOP_FLOWS);
        if let Some(tail) = self.flows.get_mut(at..) {
            tail.rotate_right(1);
            if let Some(slot) = tail.first_mut() {
                *slot = Some((score, flow));
            }
        }
    }

    fn ranked(&self) -> impl Iterator<Item = &TopFlow> {
        self.flows.iter().map_while(|f| f.as_ref().map(|(_, flow)| flow))
    }
}

/// The worker's side: rankings built over the current pass, and the last
/// complete ones' destination.
pub struct TopFlows {
    by_packets: Ranking,
    by_latency: Ranking,
    visited: u64,
    /// The table's pass count at the last publication.
    published_pass: u64,
    shared: Arc<SharedTopFlows>,
}

impl Default for TopFlows {
    /// Rankings nobody reads (tests, tools).
    fn default() -> Self {
        TopFlows::new(Arc::default())
    }
}

impl TopFlows {
    pub fn new(shared: Arc<SharedTopFlows>) -> Self {
        TopFlows {
            by_packets: Ranking::default(),
            by_latency: Ranking::default(),
            visited: 0,
            published_pass: 0,
            shared,
        }
    }

    /// A flow the sweep visits: `flow` names it and is called only when it
    /// enters a ranking (`None`: a flow the table cannot name, left out).
    #[inline]
    pub fn offer(
        &mut self,
        packets: u32,
        latency_ns: Option<u64>,
        flow: impl FnOnce() -> Option<(FlowKey, u32)>,
    ) {
        self.visited += 1;
        let by_packets = self.by_packets.admits(u64::from(packets));
        let by_latency = latency_ns.is_some_and(|l| self.by_latency.admits(l));
        if !(by_packets || by_latency) {
            return;
        }
        let Some((key, source_node)) = flow() else { return };
        let top = TopFlow { key, packets, latency_ns, source_node };
        if by_packets {
            self.by_packets.insert(u64::from(packets), top);
        }
        if let (true, Some(latency)) = (by_latency, latency_ns) {
            self.by_latency.insert(latency, top);
        }
    }

    /// After a sweep step: when the table has completed a pass since the
    /// last publication (`passes`, its pass count), publishes the pass's
    /// rankings and starts new ones.
    pub fn after_sweep(&mut self, passes: u64) {
        if passes == self.published_pass {
            return;
        }
        self.published_pass = passes;
        self.shared.publish(&self.by_packets, &self.by_latency, self.visited, passes);
        self.by_packets = Ranking::default();
        self.by_latency = Ranking::default();
        self.visited = 0;
    }
}

/// Words per published flow: addresses (4), ports, protocol and family
/// (1), packets and source node (1), latency (1).
const FLOW_WORDS: usize = 7;
/// Words of the header: flows in each ranking, flows visited, when, and
/// the pass's number.
const HEADER_WORDS: usize = 5;
const WORDS: usize = HEADER_WORDS + 2 * TOP_FLOWS * FLOW_WORDS;

/// The last complete rankings, published by one worker and read by the
/// telemetry thread.
pub struct SharedTopFlows {
    /// Odd while the worker writes.
    sequence: AtomicU64,
    words: [AtomicU64; WORDS],
}

impl Default for SharedTopFlows {
    fn default() -> Self {
        SharedTopFlows { sequence: AtomicU64::new(0), words: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

/// What a reader gets: the rankings of the last complete pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopSnapshot {
    pub by_packets: Vec<TopFlow>,
    pub by_latency: Vec<TopFlow>,
    /// Flows the pass visited.
    pub flows: u64,
    /// Since the pass was published (`None`: none yet).
    pub age_ms: Option<u64>,
    /// The pass's number, counted from 1 since the table was made: a pass
    /// numbered two more than the last one published when something
    /// happened began after it.
    pub pass: u64,
}

/// Milliseconds since the first call in this process, plus one (0 means
/// never).
fn process_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

impl SharedTopFlows {
    fn publish(&self, by_packets: &Ranking, by_latency: &Ranking, visited: u64, pass: u64) {
        let start = self.sequence.load(Ordering::Relaxed);
        self.sequence.store(start.wrapping_add(1), Ordering::Relaxed);
        // The odd sequence is visible before any word changes.
        fence(Ordering::Release);
        let header = [
            by_packets.ranked().count() as u64,
            by_latency.ranked().count() as u64,
            visited,
            process_ms(),
            pass,
        ];
        let flows = by_packets.ranked().chain(by_latency.ranked()).map(to_words);
        let words = header.into_iter().chain(flows.flatten());
        for (word, value) in self.words.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
        self.sequence.store(start.wrapping_add(2), Ordering::Release);
    }

    /// The last published rankings; `None` if every attempt overlapped a
    /// publication (a worker publishing non-stop).
    pub fn snapshot(&self) -> Option<TopSnapshot> {
        for _ in 0..1000 {
            let before = self.sequence.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let mut words = [0u64; WORDS];
            for (word, shared) in words.iter_mut().zip(&self.words) {
                *word = shared.load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.sequence.load(Ordering::Relaxed) == before {
                return Some(decode(&words));
            }
        }
        None
    }
}

fn decode(words: &[u64; WORDS]) -> TopSnapshot {
    let (header, flows) = words.split_at(HEADER_WORDS);
    let &[packets_len, latency_len, visited, published, pass] = header else { return TopSnapshot::default() };
    let mut flows = flows.chunks_exact(FLOW_WORDS).filter_map(from_words);
    let by_packets = flows.by_ref().take(packets_len.min(TOP_FLOWS as u64) as usize).collect();
    let by_latency = flows.take(latency_len.min(TOP_FLOWS as u64) as usize).collect();
    let age_ms = (published != 0).then(|| process_ms().saturating_sub(published));
    TopSnapshot { by_packets, by_latency, flows: visited, age_ms, pass }
}

fn address_words(address: IpAddr) -> [u64; 2] {
    let bytes = match address {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    };
    let value = u128::from_be_bytes(bytes);
    [(value >> 64) as u64, value as u64]
}

fn address(words: &[u64], v4: bool) -> Option<IpAddr> {
    let value = (u128::from(*words.first()?) << 64) | u128::from(*words.get(1)?);
    let v6 = Ipv6Addr::from(value);
    Some(match (v4, v6.to_ipv4_mapped()) {
        (true, Some(v4)) => IpAddr::V4(v4),
        (true, None) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (false, _) => IpAddr::V6(v6),
    })
}

fn to_words(flow: &TopFlow) -> [u64; FLOW_WORDS] {
    let key = &flow.key;
    let [src_high, src_low] = address_words(key.src);
    let [dst_high, dst_low] = address_words(key.dst);
    let meta = u64::from(key.src_port) << 48
        | u64::from(key.dst_port) << 32
        | u64::from(key.protocol) << 24
        | u64::from(key.src.is_ipv4()) << 16
        | u64::from(flow.latency_ns.is_some()) << 8;
    let packets = u64::from(flow.packets) | u64::from(flow.source_node) << 32;
    [src_high, src_low, dst_high, dst_low, meta, packets, flow.latency_ns.unwrap_or(0)]
}

fn from_words(words: &[u64]) -> Option<TopFlow> {
    let meta = *words.get(4)?;
    let v4 = (meta >> 16) & 1 == 1;
    let key = FlowKey {
        src: address(words.get(0..2)?, v4)?,
        dst: address(words.get(2..4)?, v4)?,
        protocol: (meta >> 24) as u8,
        src_port: (meta >> 48) as u16,
        dst_port: (meta >> 32) as u16,
    };
    let packets = *words.get(5)?;
    Some(TopFlow {
        key,
        packets: packets as u32,
        latency_ns: ((meta >> 8) & 1 == 1).then_some(*words.get(6)?),
        source_node: (packets >> 32) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(i: u32) -> FlowKey {
        FlowKey::v4((0x0a00_0000 + i).into(), 0x0a01_0001.into(), 17, i as u16, 5000)
    }

    #[test]
    fn ranks_the_largest_and_publishes_per_pass() {
        let shared = Arc::new(SharedTopFlows::default());
        let mut top = TopFlows::new(Arc::clone(&shared));
        assert_eq!(shared.snapshot(), Some(TopSnapshot::default()), "nothing before the first pass");
        // Packets 0..100 in a shuffled order; latency only for even flows.
        for i in (0..100u32).map(|i| (i * 37) % 100) {
            let latency = (i % 2 == 0).then_some(1000 * u64::from(100 - i));
            top.offer(i, latency, || Some((flow(i), 7)));
        }
        top.after_sweep(0);
        assert_eq!(shared.snapshot().map(|s| s.flows), Some(0), "no pass completed yet");
        top.after_sweep(1);
        let snapshot = shared.snapshot().unwrap();
        let packets: Vec<u32> = snapshot.by_packets.iter().map(|f| f.packets).collect();
        assert_eq!(packets, (90..100).rev().collect::<Vec<_>>());
        let latencies: Vec<u64> = snapshot.by_latency.iter().filter_map(|f| f.latency_ns).collect();
        assert_eq!(latencies, (0..10).map(|i| 1000 * (100 - 2 * i)).collect::<Vec<_>>());
        assert_eq!(snapshot.by_latency[0].key, flow(0));
        assert_eq!(snapshot.by_latency[0].source_node, 7);
        assert_eq!(snapshot.flows, 100);
        assert!(snapshot.age_ms.is_some_and(|age| age < 60_000));
        // The next pass starts afresh: one flow.
        top.offer(5, None, || Some((flow(5), 0)));
        top.after_sweep(2);
        let snapshot = shared.snapshot().unwrap();
        assert_eq!(snapshot.by_packets.len(), 1);
        assert!(snapshot.by_latency.is_empty());
    }

    #[test]
    fn ipv6_flows_and_unnamed_flows() {
        let shared = Arc::new(SharedTopFlows::default());
        let mut top = TopFlows::new(Arc::clone(&shared));
        let v6 = FlowKey {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            protocol: 6,
            src_port: 1,
            dst_port: 2,
        };
        top.offer(10, Some(u64::MAX), || Some((v6, u32::MAX)));
        top.offer(20, None, || None);
        top.after_sweep(1);
        let snapshot = shared.snapshot().unwrap();
        assert_eq!(snapshot.by_packets.len(), 1);
        assert_eq!(
            snapshot.by_packets[0],
            TopFlow { key: v6, packets: 10, latency_ns: Some(u64::MAX), source_node: u32::MAX }
        );
        assert_eq!(snapshot.flows, 2);
    }

    #[test]
    fn readers_never_see_a_torn_publication() {
        let shared = Arc::new(SharedTopFlows::default());
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let mut top = TopFlows::new(shared);
                for pass in 1..=20_000u64 {
                    // Every flow of a pass carries the pass number.
                    let n = (pass % 1000) as u32 + 1;
                    for i in 0..TOP_FLOWS as u32 {
                        top.offer(n, Some(u64::from(n)), || Some((flow(n), n + i)));
                    }
                    top.after_sweep(pass);
                }
            })
        };
        let mut read = 0;
        while !writer.is_finished() || read == 0 {
            let Some(snapshot) = shared.snapshot() else { continue };
            read += 1;
            let packets: Vec<u32> =
                snapshot.by_packets.iter().chain(&snapshot.by_latency).map(|f| f.packets).collect();
            assert!(packets.windows(2).all(|w| w[0] == w[1]), "a torn snapshot: {packets:?}");
            assert!(snapshot.by_packets.iter().all(|f| f.key == flow(f.packets)));
        }
        writer.join().unwrap();
        assert!(read > 0);
    }
}
