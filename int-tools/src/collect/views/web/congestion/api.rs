//! The JSON of the congestion pages (docs/output.md): the episodes
//! timeline (`/api/congestion`), the node x time heatmap
//! (`/api/congestion/heatmap`) and one episode (`/api/congestion/episodes/ID`).
//! Times are ms since the epoch by the reports' clock (`clock_ms`: the
//! newest figure's). Every answer is bounded whatever the fleet: at most
//! [`MAX_EPISODES`] episodes on [`TIMELINE_ROWS`] queues, [`HEAT_ROWS`]
//! nodes of [`HEAT_COLUMNS`] cells, an episode's [`super::CURVE_POINTS`]
//! points (the test `answers_are_bounded_at_a_fleets_size` holds them).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::collect::books::congestion::episode::{Episode, Part};
use crate::collect::books::congestion::timeline::FINE_MS;
use crate::collect::views::web::board::Board;

use super::{EpisodeRow, NodeHeat};

/// Episodes on the timeline at most, the newest.
pub const MAX_EPISODES: usize = 1_000;
/// Queues on the timeline at most (those of the newest episodes).
pub const TIMELINE_ROWS: usize = 200;
/// Episodes in the timeline's table, the newest.
pub const NEWEST: usize = 50;
/// Nodes in the heatmap at most: those whose queues came nearest their
/// threshold (or held the most) in the span.
pub const HEAT_ROWS: usize = 100;
/// Columns of the heatmap at most.
pub const HEAT_COLUMNS: usize = 120;
/// The longest span asked for: the books' tiers hold a day and two hours.
const LONGEST_MS: u64 = 26 * 3_600_000;
/// The coarse tier's reach beyond the fine one.
const HOUR_MS: u64 = 3_600_000;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn node_name(board: &Board, node: u32) -> Option<String> {
    board.names.node(node)
}

/// A flow as the pages name it, with its page's number where the view has it.
fn flow_ref(board: &Board, part: &Part) -> Value {
    let id = board.flows.get(&part.flow).map(|row| row.id);
    json!({"name": part.flow.to_string(), "flow": id, "key": crate::schema::flow(&part.flow)})
}

/// The episodes of the `span_ms` before the reports' clock: each queue
/// with an episode in it on a row, each episode `[id, start_ms, end_ms
/// (null: under way), peak occupancy]`; the newest [`NEWEST`] with their
/// top culprit.
pub fn timeline(board: &Board, span_ms: u64, limit: usize) -> Value {
    let episodes = &board.congestion;
    let span_ms = span_ms.clamp(1, LONGEST_MS);
    let to = episodes.clock_ms;
    let from = to.saturating_sub(span_ms);
    let mut shown: Vec<&EpisodeRow> = episodes
        .rows
        .values()
        .filter(|row| row.episode.end_ns.is_none_or(|end| end / 1_000_000 >= from))
        .collect();
    let in_span = shown.len();
    shown.sort_by_key(|row| std::cmp::Reverse((row.episode.start_ns, row.id)));
    // The newest first, on the queues of the newest (a queue's row once
    // TIMELINE_ROWS are taken shows no more).
    let mut queues: BTreeSet<(u32, u8)> = BTreeSet::new();
    shown.retain(|row| {
        let key = (row.episode.node, row.episode.queue);
        let room = queues.contains(&key) || queues.len() < TIMELINE_ROWS;
        if room {
            queues.insert(key);
        }
        room
    });
    shown.truncate(limit.min(MAX_EPISODES));
    let queues: BTreeSet<(u32, u8)> = shown.iter().map(|row| (row.episode.node, row.episode.queue)).collect();
    let rows: Vec<Value> = queues
        .iter()
        .map(|&(node, queue)| {
            let bars: Vec<Value> = shown
                .iter()
                .filter(|row| (row.episode.node, row.episode.queue) == (node, queue))
                .map(|row| {
                    let e = &row.episode;
                    json!([row.id, ms(e.start_ns), e.end_ns.map(ms), e.peak_occupancy])
                })
                .collect();
            let unit = shown.iter().find(|r| (r.episode.node, r.episode.queue) == (node, queue));
            json!({"node": node, "node_name": node_name(board, node), "queue": queue,
                   "unit": unit.map(|r| r.episode.unit.name()), "episodes": bars})
        })
        .collect();
    let newest: Vec<Value> = shown.iter().take(NEWEST).map(|row| brief(board, row)).collect();
    let open = episodes.rows.values().filter(|row| row.episode.end_ns.is_none()).count();
    json!({"clock_ms": to, "from_ms": from, "span_ms": span_ms, "kept": episodes.rows.len(), "open": open,
           "in_span": in_span, "shown": shown.len(), "queues": rows, "newest": newest})
}

fn brief(board: &Board, row: &EpisodeRow) -> Value {
    let e = &row.episode;
    json!({"id": row.id, "node": e.node, "node_name": node_name(board, e.node), "queue": e.queue,
           "start_ms": ms(e.start_ns), "end_ms": e.end_ns.map(ms), "duration_ns": e.duration_ns(),
           "peak_occupancy": e.peak_occupancy, "peak_latency_ns": e.peak_latency_ns, "unit": e.unit.name(),
           "trigger": e.trigger, "packets": e.packets, "flows": e.flows,
           "culprit": e.culprits.first().map(|part| flow_ref(board, part))})
}

/// The finest tier the books keep for a span beginning at `from_ms`:
/// 1 ms within their last two minutes, 1 s within the hour before, 1 min
/// beyond.
pub fn resolution(from_ms: u64, clock_ms: u64) -> u64 {
    match clock_ms.saturating_sub(from_ms) {
        back if back <= FINE_MS => 1,
        back if back <= FINE_MS + HOUR_MS => 1_000,
        _ => 60_000,
    }
}

/// One node's cells: the most any of its queues held in each column
/// (`None`: no figure there).
fn cells(heat: &NodeHeat, from: u64, column: u64, columns: usize) -> Vec<Option<u32>> {
    let mut cells = vec![None; columns];
    let to = from + column * columns as u64;
    for (cell, width) in heat.timeline.since(from) {
        if cell.at_ms >= to {
            break;
        }
        let first = (cell.at_ms.max(from) - from) / column;
        let last = ((cell.at_ms + width).min(to) - 1 - from) / column;
        for at in first..=last {
            if let Some(slot) = cells.get_mut(at as usize) {
                *slot = Some(slot.map_or(cell.occupancy, |v: u32| v.max(cell.occupancy)));
            }
        }
    }
    cells
}

/// The heatmap of the `span_ms` up to `end_ms` (else the reports'
/// clock): a row per node, a column per [`resolution`] or more (at most
/// [`HEAT_COLUMNS`]), each cell the most the node's queues held.
pub fn heatmap(board: &Board, span_ms: u64, end_ms: Option<u64>) -> Value {
    let episodes = &board.congestion;
    let clock = episodes.clock_ms;
    let to = end_ms.unwrap_or(clock);
    let span = span_ms.clamp(HEAT_COLUMNS as u64, LONGEST_MS);
    let resolution = resolution(to.saturating_sub(span), clock);
    let column = span.div_ceil(HEAT_COLUMNS as u64).div_ceil(resolution) * resolution;
    let columns = span.div_ceil(column) as usize;
    // Columns on multiples of their width: a live page's columns stay
    // put from one poll to the next.
    let to = to.div_ceil(column) * column;
    let from = to.saturating_sub(column * columns as u64);
    let mut rows: Vec<(f64, u32, &NodeHeat, Vec<Option<u32>>)> = episodes
        .nodes
        .iter()
        .map(|(node, heat)| {
            let cells = cells(heat, from, column, columns);
            let peak = cells.iter().flatten().max().copied().unwrap_or(0);
            let rank = heat.threshold.map_or(f64::from(peak) / 1e12, |t| f64::from(peak) / t.max(1.0));
            (rank, *node, heat, cells)
        })
        .collect();
    let total = rows.len();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    rows.truncate(HEAT_ROWS);
    rows.sort_by_key(|row| row.1);
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|(_, node, heat, cells)| {
            json!({"node": node, "node_name": node_name(board, node), "unit": heat.unit.name(),
                   "threshold": heat.threshold.map(f64::ceil), "queues": heat.queues.len(),
                   "peak": cells.iter().flatten().max(), "cells": cells})
        })
        .collect();
    json!({"clock_ms": clock, "from_ms": from, "to_ms": to, "span_ms": span, "resolution_ms": resolution,
           "column_ms": column, "columns": columns, "nodes": total, "rows": rows})
}

/// One episode: its figures, its queue's curve across it (`[t_ms,
/// occupancy, hop latency]`), its culprits and victims, each flow with
/// its page's number where the view has the flow.
pub fn episode(board: &Board, id: u64) -> Option<Value> {
    let row = board.congestion.rows.get(&id)?;
    let e: &Episode = &row.episode;
    let mut value = brief(board, row);
    let culprits: Vec<Value> = e
        .culprits
        .iter()
        .map(|p| {
            let mut flow = flow_ref(board, p);
            if let Some(object) = flow.as_object_mut() {
                object.insert("packets".into(), json!(p.packets));
                object.insert("bytes".into(), json!(p.bytes));
                object.insert("share".into(), json!(p.share));
            }
            flow
        })
        .collect();
    let victims: Vec<Value> = e
        .victims
        .iter()
        .map(|p| {
            let mut flow = flow_ref(board, p);
            let rise = match (p.latency_before_ns, p.latency_max_ns) {
                (Some(before), Some(most)) if before > 0 => Some(most as f64 / before as f64),
                _ => None,
            };
            if let Some(object) = flow.as_object_mut() {
                object.insert("packets".into(), json!(p.packets));
                object.insert("latency_before_ns".into(), json!(p.latency_before_ns));
                object.insert("latency_max_ns".into(), json!(p.latency_max_ns));
                object.insert("rise".into(), json!(rise));
            }
            flow
        })
        .collect();
    let curve: Vec<Value> = row.curve.iter().map(|c| json!([c.at_ms, c.occupancy, c.latency])).collect();
    if let Some(object) = value.as_object_mut() {
        for (key, field) in [
            ("bytes", json!(e.bytes)),
            ("other_packets", json!(e.other_packets)),
            ("queue_alerts", json!(e.queue_alerts)),
            ("ended", json!(e.ended)),
            ("threshold_occupancy", json!(e.threshold_occupancy)),
            ("threshold_latency_ns", json!(e.threshold_latency_ns)),
            ("culprits", json!(culprits)),
            ("victims", json!(victims)),
            ("curve", json!(curve)),
            ("clock_ms", json!(board.congestion.clock_ms)),
        ] {
            object.insert(key.into(), field);
        }
    }
    Some(value)
}
