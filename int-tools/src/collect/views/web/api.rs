//! The JSON behind every page of the view (`/api/...`, docs/output.md):
//! built from the view's board, never from the books. Node ids are
//! numbers, as in the summary; durations are ns; times are ms since the
//! view started (`now_ms` says where that is).

use crate::collect::names::{self, Naming};
use serde_json::{json, Value};

use std::collections::BTreeSet;

use super::board::{path_text, Board, FlowRow, NodeRow};
use super::events::{self, Cause, Event, EventKind, Filter};
use super::flow_query::{FlowQuery, Sort};
use super::ranks::ranks;
use super::sample::Stats;

fn stats(stats: &Stats) -> Value {
    let mean = (stats.count > 0).then(|| (stats.sum / i128::from(stats.count)) as i64);
    json!({"count": stats.count, "min": stats.min, "avg": mean, "max": stats.max,
           "p50": stats.p50, "p99": stats.p99})
}

/// A node's name, where `--names` gives one.
fn node_name(names: &Naming, id: u32) -> Option<String> {
    names.node(id)
}

fn node_brief(names: &Naming, id: u32, row: &NodeRow, now_ms: u64) -> Value {
    json!({"node": id, "node_name": node_name(names, id), "hops": row.now.hops, "stale": row.stale,
           "seen_ms_ago": now_ms.saturating_sub(row.seen_ms),
           "hop_latency": stats(&row.now.latency), "queue_occupancy": stats(&row.now.queue),
           "drops": row.now.drops.values().sum::<u64>()})
}

pub fn overview(board: &Board) -> Value {
    json!({"now_ms": board.now_ms, "stale_after_ms": board.stale_after_ms, "reports": board.reports,
           "nodes": board.nodes.len(), "stale_nodes": board.nodes.values().filter(|n| n.stale).count(),
           "links": links(board).len(), "flows": board.flows.len(), "events": board.events.len()})
}

/// The links the view knows: those with a latency and those of current
/// paths.
fn links(board: &Board) -> BTreeSet<(u32, u32)> {
    board.links.keys().chain(board.adjacency.keys()).copied().collect()
}

/// Nodes and links, each link with its latency (p50 and p99 to colour
/// by). A node's `rank` places it from sources (0) to sinks over the paths
/// flows take now ([`ranks`]); a node on none has no rank and is `idle`
/// since it was last on one. Links are those with a latency and those of
/// current paths (`flows` over them now; `measured` false where no
/// timestamps tell their latency).
pub fn topology(board: &Board) -> Value {
    let rank = ranks(board.adjacency.keys().copied());
    let nodes: Vec<Value> = board
        .nodes
        .iter()
        .map(|(id, row)| {
            let mut value = node_brief(&board.names, *id, row, board.now_ms);
            if let Some(object) = value.as_object_mut() {
                object.insert("rank".into(), json!(rank.get(id)));
                object.insert("idle".into(), json!(!rank.contains_key(id)));
                object.insert("on_path_ms".into(), json!(row.on_path_ms));
            }
            value
        })
        .collect();
    let links: Vec<Value> = links(board)
        .into_iter()
        .map(|(from, to)| {
            let latency = board.links.get(&(from, to)).map(|row| row.latency).unwrap_or_default();
            json!({"from": from, "to": to, "from_name": board.names.node(from), "to_name": board.names.node(to),
                   "latency_ns": stats(&latency), "measured": latency.count > 0,
                   "flows": board.adjacency.get(&(from, to)).copied().unwrap_or(0)})
        })
        .collect();
    json!({"now_ms": board.now_ms, "nodes": nodes, "links": links, "ranks": rank.values().max().map_or(0, |r| r + 1)})
}

pub fn node(board: &Board, id: u32) -> Option<Value> {
    let row = board.nodes.get(&id)?;
    let mut value = node_brief(&board.names, id, row, board.now_ms);
    let points: Vec<Value> = row
        .points
        .iter()
        .map(|p| json!({"t_ms": p.t_ms, "hop_latency": p.latency, "queue": p.queue}))
        .collect();
    let drops: serde_json::Map<String, Value> =
        row.now.drops.iter().map(|(reason, n)| (reason.to_string(), json!(n))).collect();
    let links: Vec<Value> = board
        .links
        .iter()
        .filter(|((from, to), _)| *from == id || *to == id)
        .map(|((from, to), row)| json!({"from": from, "to": to, "from_name": board.names.node(*from), "to_name": board.names.node(*to), "latency_ns": stats(&row.latency)}))
        .collect();
    if let Some(object) = value.as_object_mut() {
        object.insert("over_time".into(), json!(points));
        object.insert("drops_by_reason".into(), json!(drops));
        object.insert("links".into(), json!(links));
        let filter = Filter { kind: None, node: Some(id) };
        let events: Vec<Value> =
            filter.newest(&board.events, OWN_EVENTS).0.into_iter().map(|e| event(board, e)).collect();
        object.insert("events".into(), json!(events));
    }
    Some(value)
}

pub fn link(board: &Board, from: u32, to: u32) -> Option<Value> {
    let row = board.links.get(&(from, to))?;
    let points: Vec<Value> = row.points.iter().map(|(t, mean)| json!({"t_ms": t, "latency": mean})).collect();
    Some(
        json!({"from": from, "to": to, "from_name": board.names.node(from), "to_name": board.names.node(to), "latency_ns": stats(&row.latency),
                "seen_ms_ago": board.now_ms.saturating_sub(row.seen_ms), "over_time": points}),
    )
}

fn flow_brief(names: &Naming, row: &FlowRow, now_ms: u64) -> Value {
    json!({"id": row.id, "flow": crate::schema::flow(&row.key), "name": row.key.to_string(),
           "latency_ns": stats(&row.latency), "lost_packets": row.lost,
           "changed_ms_ago": now_ms.saturating_sub(row.changed_ms), "path": row.path(),
           "path_names": row.path().map(|p| labels(names, p)), "percentiles": row.latency.p99.is_some()})
}

/// Each node of a path by name (or id).
fn labels(names: &Naming, path: &[u32]) -> Vec<String> {
    path.iter().map(|id| names.label(*id)).collect()
}

/// The flows table: the flows `query` asks for, sorted by its sort
/// (latency: p99 where the flow has percentiles, else its max, then the
/// mean, highest first; loss: most lost first; change: latest first; else
/// by id), `limit` rows from `offset`. The work is one pass over the
/// flows and a sort of the rows up to the page's end.
pub fn flows(board: &Board, query: &FlowQuery) -> Value {
    let mut rows: Vec<&FlowRow> = if query.filters() {
        board.flows.values().filter(|row| query.matches(&row.key, row.path())).collect()
    } else {
        board.flows.values().collect()
    };
    let matched = rows.len();
    let end = query.offset.saturating_add(query.limit).min(matched);
    sort_first(&mut rows, query.sort, end);
    let shown: Vec<Value> = rows
        .get(query.offset..end)
        .unwrap_or_default()
        .iter()
        .map(|row| flow_brief(&board.names, row, board.now_ms))
        .collect();
    let with_percentiles = board.flows.values().filter(|row| row.latency.p99.is_some()).count();
    json!({"now_ms": board.now_ms, "total": board.flows.len(), "matched": matched,
           "offset": query.offset, "limit": query.limit, "sort": query.sort.name(),
           "with_percentiles": with_percentiles, "flows": shown})
}

/// Sorts the first `end` of `rows` by `sort` (ties by id), the rest after
/// them in no order: a page costs a pass and a sort of its rows and those
/// before it, not of every flow.
fn sort_first(rows: &mut [&FlowRow], sort: Sort, end: usize) {
    let latency = |row: &FlowRow| {
        (row.latency.p99.or(row.latency.max), row.latency.sum / i128::from(row.latency.count.max(1)))
    };
    let order = |a: &&FlowRow, b: &&FlowRow| {
        match sort {
            Sort::Latency => latency(b).cmp(&latency(a)),
            Sort::Loss => b.lost.cmp(&a.lost),
            Sort::Change => b.changed_ms.cmp(&a.changed_ms),
            Sort::Id => std::cmp::Ordering::Equal,
        }
        .then(a.id.cmp(&b.id))
    };
    if end == 0 {
        return;
    }
    if end < rows.len() {
        rows.select_nth_unstable_by(end - 1, order);
    }
    if let Some(first) = rows.get_mut(..end) {
        first.sort_unstable_by(order);
    }
}

pub fn flow(board: &Board, id: u64) -> Option<Value> {
    let row = board.ids.get(&id).and_then(|key| board.flows.get(key))?;
    let mut value = flow_brief(&board.names, row, board.now_ms);
    let paths: Vec<Value> = row
        .paths
        .iter()
        .map(
            |(t, path)| json!({"t_ms": t, "path": path, "path_names": labels(&board.names, path), "text": path_text(&board.names, path)}),
        )
        .collect();
    let points: Vec<Value> =
        row.points.iter().map(|p| json!({"t_ms": p.t_ms, "latency": p.latency, "lost": p.lost})).collect();
    if let Some(object) = value.as_object_mut() {
        object.insert("path_history".into(), json!(paths));
        object.insert("over_time".into(), json!(points));
        object.insert("events".into(), json!(flow_events(board, row)));
    }
    Some(value)
}

/// Events on a node's page at most, the newest.
const OWN_EVENTS: usize = 200;

fn node_ref(names: &Naming, id: u32) -> Value {
    json!({"node": id, "node_name": node_name(names, id)})
}

fn flow_name(board: &Board, id: u64) -> Option<String> {
    board.ids.get(&id).map(ToString::to_string)
}

/// An event: every node of it with its name, its flows counted (`flow`:
/// the one flow, where it names one).
fn event(board: &Board, event: &Event) -> Value {
    let node = event.cause.node();
    let nodes: Vec<Value> = event.cause.nodes().into_iter().map(|id| node_ref(&board.names, id)).collect();
    let mut value = json!({"id": event.id, "t_ms": event.t_ms, "last_ms": event.last_ms,
        "kind": event.kind().name(), "node": node, "node_name": node.and_then(|id| node_name(&board.names, id)), "nodes": nodes,
        "count": event.count, "flows": event.flow_count, "flows_listed": event.flows.len(), "flow": event.flow(),
        "text": events::text(event, &board.names, |id| flow_name(board, id))});
    if let Some(object) = value.as_object_mut() {
        match &event.cause {
            Cause::Moved { from, to } => {
                object.insert("from".into(), json!(from));
                object.insert("from_names".into(), json!(labels(&board.names, from)));
                object.insert("to".into(), json!(to));
                object.insert("to_names".into(), json!(labels(&board.names, to)));
            }
            Cause::Drops { reason, .. } => {
                object.insert("reason".into(), json!(reason));
            }
            _ => {}
        }
    }
    value
}

/// A flow's events, newest first: each change of its path history (with
/// `event`, the id of the event of its cause that names the flow), then
/// the other events that name it.
fn flow_events(board: &Board, row: &FlowRow) -> Vec<Value> {
    let naming: Vec<&Event> =
        board.events.newest().into_iter().filter(|e| e.flows.contains(&row.id)).collect();
    let mut linked = BTreeSet::new();
    let mut shown: Vec<(u64, Value)> = Vec::new();
    let history: Vec<&(u64, Vec<u32>)> = row.paths.iter().collect();
    for pair in history.windows(2) {
        let [(_, old), (t, new)] = pair else { continue };
        let cause = Cause::moved(old, new);
        let of = naming.iter().find(|e| e.cause == cause && e.t_ms <= *t && *t <= e.last_ms);
        linked.extend(of.map(|e| e.id));
        let node = cause.node();
        let nodes: Vec<Value> = cause.nodes().into_iter().map(|id| node_ref(&board.names, id)).collect();
        let text = format!("path {} -> {}", path_text(&board.names, old), path_text(&board.names, new));
        shown.push((
            *t,
            json!({"t_ms": t, "kind": EventKind::PathChange.name(), "node": node, "node_name": node.and_then(|id| node_name(&board.names, id)),
                   "nodes": nodes, "flow": row.id, "event": of.map(|e| e.id), "event_flows": of.map(|e| e.flow_count),
                   "old_path": old, "new_path": new, "text": text}),
        ));
    }
    shown.extend(naming.iter().filter(|e| !linked.contains(&e.id)).map(|e| (e.t_ms, event(board, e))));
    shown.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    shown.into_iter().map(|(_, value)| value).collect()
}

/// A kind no event has, asked of `/api/events` (answered 400).
#[derive(Debug, thiserror::Error)]
#[error("kind {given:?}: not one of {known}")]
pub struct UnknownKind {
    given: String,
    known: String,
}

/// A page's filter from its query: `kind` a kind's name (else `Err`),
/// `node` a node id (a number, 0x hex or a dotted quad) or a name
/// `--names` gives; `Ok(None)`: a node no id or name tells.
pub fn filter(kind: Option<&str>, node: Option<&str>, names: &Naming) -> Result<Option<Filter>, UnknownKind> {
    let kind = match kind.filter(|k| !k.is_empty()) {
        None => None,
        Some(text) => Some(EventKind::parse(text).ok_or_else(|| UnknownKind {
            given: text.to_string(),
            known: EventKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        })?),
    };
    let node = match node.map(str::trim).filter(|n| !n.is_empty()) {
        None => None,
        Some(text) => match names::parse_node_id(text).ok().or_else(|| names.named(text)) {
            Some(id) => Some(id),
            None => return Ok(None),
        },
    };
    Ok(Some(Filter { kind, node }))
}

/// The newest `limit` events `filter` keeps (`None`: a node asked for
/// that no id or name tells, so none), newest first.
pub fn events(board: &Board, filter: Option<Filter>, asked: Option<&str>, limit: usize) -> Value {
    let (shown, total) = filter.map_or((Vec::new(), 0), |f| f.newest(&board.events, limit));
    let shown: Vec<Value> = shown.into_iter().map(|e| event(board, e)).collect();
    let node = filter.and_then(|f| f.node);
    let kinds: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
    json!({"now_ms": board.now_ms, "total": total, "kept": board.events.len(), "kinds": kinds,
           "filter": {"kind": filter.and_then(|f| f.kind).map(EventKind::name), "node": node,
                      "node_name": node.and_then(|id| node_name(&board.names, id)), "unknown_node": filter.is_none().then_some(asked)},
           "events": shown})
}

/// One event.
pub fn event_of(board: &Board, id: u64) -> Option<Value> {
    board.events.get(id).map(|e| event(board, e))
}

/// The flows an event names, `limit` from `offset`, each with its path now.
pub fn event_flows(board: &Board, id: u64, offset: usize, limit: usize) -> Option<Value> {
    let event = board.events.get(id)?;
    let flows: Vec<Value> = event
        .flows
        .iter()
        .skip(offset)
        .take(limit.min(super::flow_query::MAX_LIMIT))
        .map(|flow| {
            let row = board.ids.get(flow).and_then(|key| board.flows.get(key));
            let path = row.and_then(FlowRow::path);
            json!({"id": flow, "name": row.map(|r| r.key.to_string()), "path": path, "path_names": path.map(|p| labels(&board.names, p))})
        })
        .collect();
    Some(
        json!({"event": id, "kind": event.kind().name(), "text": events::text(event, &board.names, |f| flow_name(board, f)),
                "total": event.flow_count, "listed": event.flows.len(), "offset": offset, "flows": flows}),
    )
}
