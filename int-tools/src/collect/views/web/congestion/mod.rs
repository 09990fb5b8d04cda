//! The view's congestion pages (docs/congestion.md, docs/output.md): what
//! the sampler copies out of each socket's congestion books, and what the
//! board keeps of it from sample to sample. Each sample copies the
//! episodes closed since the last one and those under way (their flows
//! ranked so far), each with its queue's occupancy curve across it
//! ([`CURVE_POINTS`] points at most), and every queue's new 1 ms cells,
//! folded per node (the most any of its queues held) into a timeline of
//! the books' own tiers (1 ms, 1 s, 1 min): the heatmap's rows. The JSON
//! of the pages is [`api`].
//!
//! The copy is made in the sampler's one hold of each socket's books
//! (beside the episode counts of the events): each queue's new cells are
//! found by a search, not a walk (a queue reported every millisecond
//! gives about a sample's length of them), and each episode under way is
//! ranked as the summary ranks it.
//!
//! Memory: at most [`KEPT`] episodes of at most [`CURVE_POINTS`] points
//! (and five culprits and victims) each, and per node one timeline of at
//! most `timeline::MAX_BYTES`. Not kept with `--state` (the congestion
//! books are not either).

pub mod api;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::collect::books::congestion::episode::Episode;
use crate::collect::books::congestion::figure::Unit;
use crate::collect::books::congestion::timeline::{Cell, QueueTimeline};
use crate::collect::books::congestion::Congestion;

/// Episodes the board keeps, the newest (those under way always).
pub const KEPT: usize = 2_000;
/// Points of an episode's occupancy curve, at most.
pub const CURVE_POINTS: usize = 300;
/// Cells copied again at each sample, ms before the last copy: a late
/// figure lands in a cell already copied.
const RECOPY_MS: u64 = 1_000;

/// An episode's identity: its queue and start.
pub type EpisodeKey = (u32, u8, u64);

fn key_of(episode: &Episode) -> EpisodeKey {
    (episode.node, episode.queue, episode.start_ns)
}

/// Where the last sample of one socket's books stopped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mark {
    /// Episodes that socket's books had closed.
    pub closed: u64,
    /// The newest cell copied, ms since the epoch.
    pub copied_ms: u64,
}

/// What one sample copied of the congestion books.
#[derive(Debug, Default)]
pub struct Taken {
    /// The newest figure's time, ms since the epoch (the reports' clock).
    pub clock_ms: u64,
    pub closed: Vec<(Episode, Vec<Cell>)>,
    pub open: Vec<(Episode, Vec<Cell>)>,
    /// Per socket, where this sample stopped.
    pub marks: Vec<Mark>,
    /// Per node: its queues' new cells (unsorted), units and lowest
    /// occupancy threshold.
    pub nodes: BTreeMap<u32, NodeTaken>,
}

#[derive(Debug, Default)]
pub struct NodeTaken {
    pub cells: Vec<Cell>,
    pub unit: Unit,
    pub threshold: Option<f64>,
    pub queues: BTreeSet<u8>,
}

impl Taken {
    /// One socket's books (the `socket`th), from where the board's last
    /// sample of it stopped.
    pub fn add(&mut self, socket: usize, books: &Congestion, mark: Mark) {
        let clock_ms = books.clock_ns() / 1_000_000;
        self.clock_ms = self.clock_ms.max(clock_ms);
        let closed: Vec<Episode> = books.closed_after(mark.closed).cloned().collect();
        self.closed.extend(closed.into_iter().map(|e| {
            let curve = curve(books, &e, clock_ms);
            (e, curve)
        }));
        self.open.extend(books.open_episodes().into_iter().map(|e| {
            let curve = curve(books, &e, clock_ms);
            (e, curve)
        }));
        let since = mark.copied_ms.saturating_sub(RECOPY_MS);
        for (key, unit) in books.queue_units() {
            let node = self.nodes.entry(key.0).or_default();
            node.unit = unit;
            node.queues.insert(key.1);
            if let Some(threshold) = books.occupancy_threshold(key) {
                node.threshold = Some(node.threshold.map_or(threshold, |t: f64| t.min(threshold)));
            }
            if let Some(timeline) = books.timeline(key) {
                node.cells.extend(timeline.fine_since(since).copied());
            }
        }
        set(&mut self.marks, socket, Mark { closed: books.counts.episodes, copied_ms: clock_ms });
    }
}

/// The `socket`th mark, the list grown to hold it.
fn set(marks: &mut Vec<Mark>, socket: usize, mark: Mark) {
    if marks.len() <= socket {
        marks.resize(socket + 1, Mark::default());
    }
    if let Some(slot) = marks.get_mut(socket) {
        *slot = mark;
    }
}

/// The episode's queue across it: from half its length before to half
/// after (20 ms to a minute), [`CURVE_POINTS`] points at most, each the
/// most of the cells it covers.
fn curve(books: &Congestion, episode: &Episode, clock_ms: u64) -> Vec<Cell> {
    let Some(timeline) = books.timeline((episode.node, episode.queue)) else { return Vec::new() };
    let (start, end) = (episode.start_ns / 1_000_000, episode.end_ns.map_or(clock_ms, |e| e / 1_000_000));
    let pad = (end.saturating_sub(start) / 2).clamp(20, 60_000);
    let (from, to) = (start.saturating_sub(pad), end.saturating_add(pad));
    let width = (to - from).div_ceil(CURVE_POINTS as u64).max(1);
    let mut points: Vec<Cell> = Vec::new();
    for (cell, _) in timeline.since(from).take_while(|(cell, _)| cell.at_ms <= to) {
        let at_ms = from + (cell.at_ms.max(from) - from) / width * width;
        match points.last_mut() {
            Some(last) if last.at_ms == at_ms => {
                last.occupancy = last.occupancy.max(cell.occupancy);
                last.latency = last.latency.max(cell.latency);
            }
            _ => points.push(Cell { at_ms, ..cell }),
        }
    }
    points
}

/// An episode as the board keeps it: its number in the pages
/// (`#/episode/ID`), the episode and its queue's curve.
#[derive(Debug, Clone)]
pub struct EpisodeRow {
    pub id: u64,
    pub episode: Episode,
    pub curve: Vec<Cell>,
}

/// One node's row of the heatmap: the most any of its queues held.
#[derive(Debug, Clone, Default)]
pub struct NodeHeat {
    pub timeline: QueueTimeline,
    pub unit: Unit,
    /// The lowest occupancy threshold of its queues (what the heatmap
    /// colours against), where one is known.
    pub threshold: Option<f64>,
    pub queues: BTreeSet<u8>,
}

/// The board's congestion part.
#[derive(Debug, Clone, Default)]
pub struct Episodes {
    pub rows: BTreeMap<u64, EpisodeRow>,
    ids: HashMap<EpisodeKey, u64>,
    pub nodes: BTreeMap<u32, NodeHeat>,
    /// The reports' clock, ms since the epoch.
    pub clock_ms: u64,
    marks: Vec<Mark>,
    next_id: u64,
}

impl Episodes {
    /// Where the last sample of the `socket`th books stopped.
    pub fn mark(&self, socket: usize) -> Mark {
        self.marks.get(socket).copied().unwrap_or_default()
    }

    /// Books a sample's copy.
    pub fn apply(&mut self, taken: Taken) {
        self.clock_ms = self.clock_ms.max(taken.clock_ms);
        for (socket, mark) in taken.marks.into_iter().enumerate() {
            set(&mut self.marks, socket, mark);
        }
        // An episode seen under way keeps its number once closed (its
        // queue and start are its key), the closed copy replacing it.
        for (episode, curve) in taken.open.into_iter().chain(taken.closed) {
            self.book(episode, curve);
        }
        for (id, node) in taken.nodes {
            self.heat(id, node);
        }
        while self.rows.len() > KEPT {
            let Some(oldest) = self.rows.values().find(|row| row.episode.end_ns.is_some()).map(|row| row.id)
            else {
                break;
            };
            if let Some(row) = self.rows.remove(&oldest) {
                self.ids.remove(&key_of(&row.episode));
            }
        }
    }

    fn book(&mut self, episode: Episode, curve: Vec<Cell>) -> u64 {
        let next = self.next_id + 1;
        let id = *self.ids.entry(key_of(&episode)).or_insert(next);
        self.next_id = self.next_id.max(id);
        self.rows.insert(id, EpisodeRow { id, episode, curve });
        id
    }

    fn heat(&mut self, id: u32, mut taken: NodeTaken) {
        let node = self.nodes.entry(id).or_default();
        (node.unit, node.threshold) = (taken.unit, taken.threshold);
        node.queues.append(&mut taken.queues);
        taken.cells.sort_unstable_by_key(|cell| cell.at_ms);
        for cell in taken.cells {
            node.timeline.add(cell.at_ms, cell.occupancy, cell.latency);
        }
    }
}

#[cfg(test)]
mod tests;
