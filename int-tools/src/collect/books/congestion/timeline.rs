//! One queue's occupancy and hop latency over time, in three tiers: 1 ms
//! cells for the last [`FINE_MS`] (at most [`FINE_CELLS`] of them: a queue
//! reported on every millisecond keeps its last 16 s at 1 ms, one reported
//! less often keeps the whole two minutes), 1 s cells for the hour
//! before, 1 min cells for the day before that. A cell keeps the most the
//! queue held and the longest hop latency in its span: a microburst
//! stays visible however coarse its cell has become.
//!
//! Memory, per queue, at most: (16,384 + 4,096 + 2,048) cells (the
//! tiers' ring capacities) of 16 bytes: 352 KiB ([`MAX_BYTES`]); a queue
//! reported on rarely holds a few cells. A test holds the bound.

use std::collections::VecDeque;

/// The fine tier's span, ms.
pub const FINE_MS: u64 = 120_000;
/// The fine tier's cells, at most.
pub const FINE_CELLS: usize = 16_384;
/// The second tier: 1 s cells, an hour of them.
const COARSE_WIDTH_MS: u64 = 1_000;
const COARSE_CELLS: usize = 3_600;
/// The third: 1 min cells, a day of them.
const LONG_WIDTH_MS: u64 = 60_000;
const LONG_CELLS: usize = 1_440;
/// The most one queue's timeline takes (ring capacities round up to
/// powers of two).
pub const MAX_BYTES: usize = (FINE_CELLS + 4_096 + 2_048) * std::mem::size_of::<Cell>();

/// The most a queue held, and the longest hop latency, in a span from
/// `at_ms` (ms since the epoch) on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    pub at_ms: u64,
    pub occupancy: u32,
    pub latency: u32,
}

impl Cell {
    fn take(&mut self, other: &Cell) {
        self.occupancy = self.occupancy.max(other.occupancy);
        self.latency = self.latency.max(other.latency);
    }
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct QueueTimeline {
    fine: VecDeque<Cell>,
    coarse: VecDeque<Cell>,
    long: VecDeque<Cell>,
    /// Day-old cells let go.
    pub forgotten: u64,
}

impl QueueTimeline {
    /// A figure at `at_ms`: into its millisecond's cell. A figure older
    /// than the fine tier's newest goes into its own cell there if that
    /// cell is still fine, else into the oldest fine cell (reports from
    /// several sinks arrive a little out of order).
    pub fn add(&mut self, at_ms: u64, occupancy: u32, latency: u32) {
        let cell = Cell { at_ms, occupancy, latency };
        match self.fine.back_mut() {
            Some(last) if last.at_ms == at_ms => return last.take(&cell),
            Some(last) if last.at_ms > at_ms => return self.add_late(cell),
            _ => {}
        }
        while self.fine.front().is_some_and(|c| c.at_ms + FINE_MS <= at_ms) || self.fine.len() == FINE_CELLS {
            let old = self.fine.pop_front().unwrap_or_default();
            self.fold(old);
        }
        self.fine.push_back(cell);
    }

    fn add_late(&mut self, cell: Cell) {
        let at = self.fine.partition_point(|c| c.at_ms < cell.at_ms);
        let exact = self.fine.get(at).is_some_and(|found| found.at_ms == cell.at_ms);
        let into = if exact || at == 0 {
            at
        } else if self.fine.len() < FINE_CELLS {
            return self.fine.insert(at, cell);
        } else {
            at - 1
        };
        if let Some(found) = self.fine.get_mut(into) {
            found.take(&cell);
        }
    }

    /// A fine cell leaving its tier: into its second's cell, and a second
    /// leaving its hour into its minute's.
    fn fold(&mut self, cell: Cell) {
        if let Some(old) = into(&mut self.coarse, cell, COARSE_WIDTH_MS, COARSE_CELLS) {
            if into(&mut self.long, old, LONG_WIDTH_MS, LONG_CELLS).is_some() {
                self.forgotten += 1;
            }
        }
    }

    /// Every cell, oldest first, each with its width in ms.
    pub fn cells(&self) -> impl Iterator<Item = (Cell, u64)> + '_ {
        let long = self.long.iter().map(|c| (*c, LONG_WIDTH_MS));
        let coarse = self.coarse.iter().map(|c| (*c, COARSE_WIDTH_MS));
        long.chain(coarse).chain(self.fine.iter().map(|c| (*c, 1)))
    }

    /// The cells from `since_ms` on, oldest first, with their widths.
    pub fn since(&self, since_ms: u64) -> impl Iterator<Item = (Cell, u64)> + '_ {
        self.cells().filter(move |(cell, width)| cell.at_ms + width > since_ms)
    }

    /// The 1 ms cells from `since_ms` on, oldest first (a search, not a
    /// walk: what a view copies every second).
    pub fn fine_since(&self, since_ms: u64) -> impl Iterator<Item = &Cell> {
        let from = self.fine.partition_point(|c| c.at_ms < since_ms);
        self.fine.range(from..)
    }

    /// What the rings hold room for, bytes.
    pub fn bytes(&self) -> usize {
        (self.fine.capacity() + self.coarse.capacity() + self.long.capacity()) * std::mem::size_of::<Cell>()
    }
}

/// `cell` into `tier`'s cell of `width` ms; the tier's oldest cell, if
/// one had to leave for room.
fn into(tier: &mut VecDeque<Cell>, cell: Cell, width: u64, most: usize) -> Option<Cell> {
    let start = cell.at_ms - cell.at_ms % width;
    match tier.back_mut() {
        Some(last) if last.at_ms == start => {
            last.take(&cell);
            return None;
        }
        _ => {}
    }
    let old = (tier.len() == most).then(|| tier.pop_front()).flatten();
    tier.push_back(Cell { at_ms: start, ..cell });
    old
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More than a day of figures (the last 20 s on every millisecond): the memory stays
    /// within MAX_BYTES, the newest two-minute-or-less is at 1 ms, the
    /// hour before at 1 s, and a burst 25 h ago still shows its peak.
    #[test]
    fn memory_is_bounded_and_the_past_coarser() {
        let mut timeline = QueueTimeline::default();
        let day_ms = 26 * 3_600_000;
        timeline.add(0, 5, 1);
        for ms in (60_000..day_ms).step_by(61) {
            let burst = (2 * 3_600_000..2 * 3_600_000 + 61).contains(&ms);
            timeline.add(ms, if burst { 9_000 } else { 10 }, 2);
        }
        for ms in day_ms..day_ms + 20_000 {
            timeline.add(ms, 10, 2);
        }
        assert!(timeline.bytes() <= MAX_BYTES, "{} > {MAX_BYTES}", timeline.bytes());
        let widths: Vec<u64> = timeline.cells().map(|(_, width)| width).collect();
        assert_eq!(widths.iter().filter(|w| **w == 1).count(), FINE_CELLS);
        assert_eq!(widths.iter().filter(|w| **w == COARSE_WIDTH_MS).count(), COARSE_CELLS);
        assert!(timeline.cells().any(|(cell, width)| width == LONG_WIDTH_MS && cell.occupancy == 9_000));
        assert!(timeline.forgotten > 0, "the first minute is let go");
        let times: Vec<u64> = timeline.cells().map(|(cell, _)| cell.at_ms).collect();
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "oldest first, no overlap");
    }

    /// A millisecond's cell keeps its most; a late figure goes into its
    /// own millisecond's cell.
    #[test]
    fn a_cell_keeps_its_most_and_late_figures_their_place() {
        let mut timeline = QueueTimeline::default();
        timeline.add(100, 5, 50);
        timeline.add(100, 3, 70);
        timeline.add(103, 1, 1);
        timeline.add(101, 8, 2);
        timeline.add(103, 2, 0);
        let cells: Vec<(u64, u32, u32)> =
            timeline.cells().map(|(c, _)| (c.at_ms, c.occupancy, c.latency)).collect();
        assert_eq!(cells, [(100, 5, 70), (101, 8, 2), (103, 2, 1)]);
        assert_eq!(timeline.since(101).count(), 2);
    }
}
