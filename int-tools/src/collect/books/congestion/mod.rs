//! Congestion episodes and microbursts, with the flows that caused them
//! and the flows that paid (docs/congestion.md). Every queue figure a
//! report carries, whatever the protocol, becomes one [`Figure`]; each
//! queue keeps a timeline of them ([`timeline`]) and a watch that opens
//! and closes its episodes ([`episode`]); each packet a report shows
//! crossing a congested queue counts for its flow in the episode.
//!
//! Memory is bounded: at most `Settings::queues` queues (each at most
//! [`timeline::MAX_BYTES`] of timeline, and while congested at most
//! [`episode::EPISODE_FLOWS`] flows of its episode), [`FLOWS`] flows'
//! latency baselines, [`RECENT`] closed episodes. A new queue beyond the
//! limit takes the place of the one silent the longest that is not
//! congested (counted `evicted_queues`); if every queue is congested, it
//! is not followed (counted `untracked_queues`).

pub mod args;
pub mod episode;
pub mod figure;
pub mod record;
pub mod settings;
pub mod timeline;

use std::collections::{BTreeMap, HashMap, VecDeque};

use foldhash::fast::RandomState;

use int_core::flow::FlowKey;
use int_core::hop::Hop;

use episode::{Baseline, Crossing, Ended, Episode, Watch};
use figure::{Carrier, Figure, QueueKey, Unit};
use settings::Settings;
use timeline::QueueTimeline;

/// Flows whose latency baseline is kept, at most.
pub const FLOWS: usize = 65_536;
/// Closed episodes kept for the views, the newest.
pub const RECENT: usize = 1_000;
/// Open episodes are checked for silence once per this much report time.
const SWEEP_NS: u64 = 10_000_000;

/// What the bookkeeping counted.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub figures: u64,
    pub episodes: u64,
    pub evicted_queues: u64,
    pub untracked_queues: u64,
    pub untracked_flows: u64,
    /// Sinks' congested-queue flags (TR 2.0 and 0.5 Q), by reporting node.
    pub queue_alerts: BTreeMap<u32, u64>,
}

/// One queue's books.
#[derive(Debug, Clone)]
struct Queue {
    unit: Unit,
    timeline: QueueTimeline,
    watch: Watch,
    last_ns: u64,
    last: (Option<u32>, Option<u32>),
    episodes: u64,
    congested_ns: u64,
}

impl Queue {
    fn new(unit: Unit) -> Queue {
        Queue {
            unit,
            timeline: QueueTimeline::default(),
            watch: Watch::default(),
            last_ns: 0,
            last: (None, None),
            episodes: 0,
            congested_ns: 0,
        }
    }
}

/// A packet a report shows, for the queues it crossed: its flow and IP
/// length, whether the report raised Q.
#[derive(Debug, Clone, Copy)]
pub struct Packet {
    pub flow: FlowKey,
    pub bytes: Option<u32>,
    pub queue_alert: bool,
}

/// When a report's hops were: the report's time (a sink's ingress
/// timestamp), and the arrival's, ns since the epoch.
#[derive(Debug, Clone, Copy)]
pub struct When {
    pub report_ns: Option<u64>,
    pub arrival_ns: u64,
}

impl When {
    /// A hop's time: its own 64-bit stamp (the queue's own clock) where
    /// it has one, else the report's, else the arrival's. A 32-bit stamp
    /// (INT 0.5's, wrapping every 4.3 s) is no time of its own.
    fn of(&self, hop_ns: Option<u64>) -> u64 {
        let full = |ns: &u64| *ns > u64::from(u32::MAX);
        hop_ns.filter(full).or(self.report_ns.filter(full)).unwrap_or(self.arrival_ns)
    }
}

#[derive(Debug, Clone)]
pub struct Congestion {
    settings: Settings,
    queues: HashMap<QueueKey, Queue, RandomState>,
    /// Each flow's baseline (without its latest latency) and its latest
    /// (foldhash, randomly seeded, as the ledger's flows).
    latencies: HashMap<FlowKey, (Baseline, Option<i64>), RandomState>,
    /// Closed episodes, the newest last.
    pub recent: VecDeque<Episode>,
    /// Closed since the books last handed them on.
    closed: Vec<Episode>,
    pub counts: Counts,
    now_ns: u64,
    swept_ns: u64,
    /// Queues and episodes booked elsewhere and shown here: the fleet
    /// view's merge of its aggregators' (empty in any other collector).
    adopted: View,
}

impl Default for Congestion {
    fn default() -> Congestion {
        Congestion::new(Settings::default())
    }
}

impl Congestion {
    pub fn new(settings: Settings) -> Congestion {
        Congestion {
            settings,
            queues: HashMap::default(),
            latencies: HashMap::default(),
            recent: VecDeque::new(),
            closed: Vec::new(),
            counts: Counts::default(),
            now_ns: 0,
            swept_ns: 0,
            adopted: View::default(),
        }
    }

    /// New thresholds, units, idle time and victim rise (SIGHUP): they
    /// judge the figures from now on; an open episode still closes by the
    /// threshold it opened against. The number of queues followed stays
    /// (it bounds what is already kept).
    pub fn reset_settings(&mut self, settings: Settings) {
        self.settings = Settings { queues: self.settings.queues, ..settings };
    }

    /// A report's hops (INT 2.1 stack or postcards, IOAM trace): each
    /// hop's queue figure, and its packet crossing each queue.
    pub fn hops(&mut self, hops: &[Hop], carrier: Carrier, when: When, packet: Option<&Packet>) {
        if self.settings.queues == 0 {
            return;
        }
        for hop in hops {
            let at_ns = when.of(hop.egress_timestamp.or(hop.ingress_timestamp));
            if let Some(figure) = Figure::of_hop(hop, carrier, at_ns) {
                self.figure(figure, packet);
            }
        }
    }

    /// An INT 0.5 or Host-INT stack's hops.
    pub fn int05_hops(
        &mut self,
        hops: impl Iterator<Item = int_core::int05::HopMetadata>,
        when: When,
        packet: Option<&Packet>,
    ) {
        if self.settings.queues == 0 {
            return;
        }
        for hop in hops {
            if let Some(figure) = Figure::of_int05(&hop, when.of(None)) {
                self.figure(figure, packet);
            }
        }
    }

    /// A flow's end-to-end latency, ns: its baseline, and what its next
    /// packets across a congested queue are judged by.
    pub fn latency(&mut self, flow: &FlowKey, ns: i64) {
        if self.settings.queues == 0 {
            return;
        }
        if self.latencies.len() >= FLOWS && !self.latencies.contains_key(flow) {
            self.counts.untracked_flows += 1;
            return;
        }
        // The latest stays out of the baseline until the next: a packet
        // crossing a congested queue is judged against the flow before.
        let (baseline, last) = self.latencies.entry(*flow).or_default();
        if let Some(before) = last.replace(ns) {
            baseline.take(before as f64);
        }
    }

    /// A sink's congested-queue flag (Q) on a report of `node`.
    pub fn queue_alert(&mut self, node: u32) {
        let known = self.counts.queue_alerts.contains_key(&node);
        if known || self.counts.queue_alerts.len() < self.settings.queues {
            *self.counts.queue_alerts.entry(node).or_default() += 1;
        }
    }

    /// Episodes closed since the last call, oldest first.
    pub fn take_closed(&mut self) -> Vec<Episode> {
        std::mem::take(&mut self.closed)
    }

    /// Whether an episode closed since [`Congestion::take_closed`].
    pub fn has_closed(&self) -> bool {
        !self.closed.is_empty()
    }

    fn figure(&mut self, mut figure: Figure, packet: Option<&Packet>) {
        self.counts.figures += 1;
        figure.unit = self.settings.units.get(&figure.node).copied().unwrap_or(figure.unit);
        // One lookup for a queue followed: room is made only when the
        // books are full and the queue is new.
        let full = self.queues.len() >= self.settings.queues;
        if full && !self.queues.contains_key(&figure.key()) && !self.make_room() {
            return;
        }
        let queue = self.queues.entry(figure.key()).or_insert_with(|| Queue::new(figure.unit));
        queue.unit = figure.unit;
        // A queue's figures arrive a little out of order (several sinks):
        // its watch sees its own clock go forward only.
        figure.at_ns = figure.at_ns.max(queue.last_ns);
        queue.last_ns = figure.at_ns;
        queue.last = (figure.occupancy, figure.hop_latency);
        let at_ms = figure.at_ns / 1_000_000;
        queue.timeline.add(at_ms, figure.occupancy.unwrap_or(0), figure.hop_latency.unwrap_or(0));
        // The packet's flow is looked up only where it counts: in an
        // episode (most figures are of calm queues).
        let latencies = &self.latencies;
        let crossing = |packet: &Packet| Crossing {
            flow: packet.flow,
            bytes: packet.bytes,
            latency: latencies
                .get(&packet.flow)
                .and_then(|(baseline, last)| Some((baseline.ready(), (*last)?))),
            queue_alert: packet.queue_alert,
        };
        let closed = queue.watch.figure(&figure, &self.settings, || packet.map(crossing));
        if let Some(episode) = closed {
            self.book(episode);
        }
        self.now_ns = self.now_ns.max(figure.at_ns);
        if self.now_ns >= self.swept_ns + SWEEP_NS {
            self.sweep();
        }
    }

    fn book(&mut self, episode: Episode) {
        if let Some(queue) = self.queues.get_mut(&(episode.node, episode.queue)) {
            queue.episodes += 1;
            queue.congested_ns += episode.duration_ns().unwrap_or(0);
        }
        self.counts.episodes += 1;
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(episode.clone());
        self.closed.push(episode);
    }

    /// Every episode whose queue has been silent for `idle_ns` ends at
    /// its last figure.
    fn sweep(&mut self) {
        self.swept_ns = self.now_ns;
        let (idle, rise) = (self.settings.idle_ns, self.settings.victim_rise);
        let mut ended = Vec::new();
        for queue in self.queues.values_mut() {
            if queue.watch.open.as_ref().is_some_and(|open| open.last_ns + idle <= self.now_ns) {
                ended.extend(queue.watch.close(queue.last_ns, Ended::Silent, rise));
            }
        }
        ended.sort_by_key(|episode| episode.start_ns);
        ended.into_iter().for_each(|episode| self.book(episode));
    }

    /// Room for a new queue in full books: the one calm and silent the
    /// longest goes; none calm, none goes (the new one is not followed).
    fn make_room(&mut self) -> bool {
        let calm = self.queues.iter().filter(|(_, q)| q.watch.open.is_none());
        match calm.min_by_key(|(k, q)| (q.last_ns, **k)).map(|(k, _)| *k) {
            Some(old) => {
                self.queues.remove(&old);
                self.counts.evicted_queues += 1;
                true
            }
            None => {
                self.counts.untracked_queues += 1;
                false
            }
        }
    }

    /// A queue's episode under way, its flows ranked so far (no end).
    fn ranked(&self, queue: &Queue) -> Option<Episode> {
        queue.watch.open.as_ref().map(|open| {
            let mut watch = Watch { open: Some(open.clone()), ..Watch::default() };
            let mut episode = watch
                .close(open.last_ns, Ended::Fell, self.settings.victim_rise)
                .unwrap_or_else(|| open.episode.clone());
            (episode.end_ns, episode.ended) = (None, None);
            episode
        })
    }

    /// Every episode under way, its flows ranked so far.
    pub fn open_episodes(&self) -> Vec<Episode> {
        self.queues.values().filter_map(|queue| self.ranked(queue)).collect()
    }

    /// The closed episodes after the first `seen` this books closed (as
    /// many of them as [`RECENT`] still holds), oldest first.
    pub fn closed_after(&self, seen: u64) -> impl Iterator<Item = &Episode> {
        let new = usize::try_from(self.counts.episodes.saturating_sub(seen)).unwrap_or(usize::MAX);
        self.recent.iter().skip(self.recent.len().saturating_sub(new))
    }

    /// The occupancy threshold a figure of `key` opens an episode at now:
    /// the absolute one, else the relative one over its baseline.
    pub fn occupancy_threshold(&self, key: QueueKey) -> Option<f64> {
        let absolute = self.settings.thresholds(key.0).occupancy.map(f64::from);
        let relative = self.settings.relative;
        let queue = self.queues.get(&key)?;
        absolute.or_else(|| {
            (relative > 0.0).then(|| queue.watch.occupancy.ready()).flatten().map(|b| b * relative)
        })
    }

    /// Every followed queue and its unit.
    pub fn queue_units(&self) -> impl Iterator<Item = (QueueKey, Unit)> + '_ {
        self.queues.iter().map(|(key, queue)| (*key, queue.unit))
    }

    /// The newest figure's time, ns since the epoch (the reports' clock).
    pub fn clock_ns(&self) -> u64 {
        self.now_ns
    }

    /// What the views read: every queue's figures and open episode (its
    /// flows ranked so far), the closed episodes, the counts.
    pub fn view(&self) -> View {
        let queues = self
            .queues
            .iter()
            .map(|(key, queue)| {
                let open = self.ranked(queue);
                let view = QueueView {
                    unit: queue.unit,
                    last_ns: queue.last_ns,
                    occupancy: queue.last.0,
                    hop_latency_ns: queue.last.1,
                    baseline_occupancy: queue.watch.occupancy.ready(),
                    baseline_latency_ns: queue.watch.latency.ready(),
                    episodes: queue.episodes,
                    congested_ns: queue.congested_ns,
                    open,
                };
                (*key, view)
            })
            .collect();
        let mut view = View { queues, recent: self.recent.clone(), counts: self.counts.clone() };
        view.merge(&self.adopted);
        view
    }

    /// Queues and episodes booked elsewhere, shown by [`Congestion::view`]
    /// with this collector's own (the fleet view's merge, in place of the
    /// last one).
    pub fn adopt(&mut self, view: View) {
        self.adopted = view;
    }

    /// One queue's timeline, cells from `since_ms` on (ms since the epoch).
    pub fn timeline(&self, key: QueueKey) -> Option<&QueueTimeline> {
        self.queues.get(&key).map(|queue| &queue.timeline)
    }

    /// Each followed queue's episodes so far (the web view's events).
    pub fn episodes_by_queue(&self) -> impl Iterator<Item = (QueueKey, u64)> + '_ {
        self.queues.iter().map(|(key, queue)| (*key, queue.episodes))
    }

    /// Queues followed.
    pub fn queues(&self) -> usize {
        self.queues.len()
    }
}

/// One queue as the views show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueView {
    pub unit: Unit,
    pub last_ns: u64,
    pub occupancy: Option<u32>,
    pub hop_latency_ns: Option<u32>,
    pub baseline_occupancy: Option<f64>,
    pub baseline_latency_ns: Option<f64>,
    pub episodes: u64,
    pub congested_ns: u64,
    /// The episode under way, its flows ranked so far.
    pub open: Option<Episode>,
}

/// Every queue and episode, for the views (merged over readers, and
/// over a fleet's aggregators in CBOR).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct View {
    pub queues: BTreeMap<QueueKey, QueueView>,
    pub recent: VecDeque<Episode>,
    pub counts: Counts,
}

impl View {
    /// Another reader's: a queue whose reports reach two sockets is
    /// followed by each (docs/congestion.md); its counts add up.
    pub fn merge(&mut self, other: &View) {
        for (key, theirs) in &other.queues {
            match self.queues.get_mut(key) {
                Some(ours) => {
                    ours.episodes += theirs.episodes;
                    ours.congested_ns += theirs.congested_ns;
                    if theirs.last_ns > ours.last_ns {
                        (ours.last_ns, ours.occupancy, ours.hop_latency_ns) =
                            (theirs.last_ns, theirs.occupancy, theirs.hop_latency_ns);
                    }
                    ours.open = ours.open.take().or_else(|| theirs.open.clone());
                }
                None => {
                    self.queues.insert(*key, theirs.clone());
                }
            }
        }
        let mut recent: Vec<Episode> = self.recent.drain(..).chain(other.recent.iter().cloned()).collect();
        recent.sort_by_key(|episode| episode.start_ns);
        let skip = recent.len().saturating_sub(RECENT);
        self.recent = recent.into_iter().skip(skip).collect();
        let (ours, theirs) = (&mut self.counts, &other.counts);
        ours.figures += theirs.figures;
        ours.episodes += theirs.episodes;
        ours.evicted_queues += theirs.evicted_queues;
        ours.untracked_queues += theirs.untracked_queues;
        ours.untracked_flows += theirs.untracked_flows;
        for (node, count) in &theirs.queue_alerts {
            *ours.queue_alerts.entry(*node).or_default() += count;
        }
    }
}

#[cfg(test)]
mod tests;
