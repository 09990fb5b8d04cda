//! The page's congestion series (docs/congestion.md): per queue its
//! episodes, congested time and last figures; the queues congested now
//! and those with an episode in the last [`RECENT_S`] seconds, each named
//! with its top culprit (what the `IntCongestion` alert fires on); the
//! sinks' queue alerts per node; the bookkeeping's own counts.
//!
//! Labels stay bounded: at most `--metrics-nodes` queues (the most
//! congested first), one culprit label per queue.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use int_core::flow::FlowKey;
use int_os::http;

use crate::collect::books::congestion::figure::QueueKey;
use crate::collect::books::congestion::{QueueView, View};
use crate::collect::counts::metric_head;
use crate::collect::names::Naming;

/// An episode ended this recently is "recent" (by the wall clock against
/// the reports' own times: the nodes' clocks in sync assumed).
pub const RECENT_S: u64 = 120;

fn queue_labels((node, queue): QueueKey, names: &Naming) -> String {
    format!("node=\"{node}\",node_name=\"{}\",queue=\"{queue}\"", http::prometheus_label(&names.label(node)))
}

/// A flow as one label's text: `src:port>dst:port/protocol`.
pub fn flow_label(flow: &FlowKey) -> String {
    let text = format!("{}:{}>{}:{}/{}", flow.src, flow.src_port, flow.dst, flow.dst_port, flow.protocol);
    http::prometheus_label(&text)
}

/// Every congestion series, for the `most` queues with the most episodes.
pub(super) fn congestion(out: &mut String, view: &View, most: usize, names: &Naming, now_ns: Option<u64>) {
    let mut queues: Vec<(&QueueKey, &QueueView)> = view.queues.iter().collect();
    queues.sort_by(|a, b| (b.1.episodes, b.1.congested_ns, a.0).cmp(&(a.1.episodes, a.1.congested_ns, b.0)));
    queues.truncate(most);
    per_queue(out, &queues, names);
    now(out, &queues, view, names, now_ns.unwrap_or_else(wall_ns));
    metric_head(
        out,
        "int_collect_congestion_queue_alerts_total",
        "Reports whose sink raised the congested-queue flag (TR 2.0 and 0.5 Q), by reporting node.",
        "counter",
    );
    for (node, count) in &view.counts.queue_alerts {
        let name = http::prometheus_label(&names.label(*node));
        let _ = writeln!(
            out,
            "int_collect_congestion_queue_alerts_total{{node=\"{node}\",node_name=\"{name}\"}} {count}"
        );
    }
    let counts = &view.counts;
    let own = [
        ("figures_total", "counter", "Queue figures taken (one per hop of every report).", counts.figures),
        (
            "evicted_queues_total",
            "counter",
            "Queues let go for a new one (--congestion-queues).",
            counts.evicted_queues,
        ),
        (
            "untracked_queues_total",
            "counter",
            "Figures of queues not followed: every followed queue was congested.",
            counts.untracked_queues,
        ),
        (
            "untracked_flows_total",
            "counter",
            "Latencies of flows beyond the baselines kept.",
            counts.untracked_flows,
        ),
        ("queues", "gauge", "Queues followed.", view.queues.len() as u64),
    ];
    for (name, kind, help, value) in own {
        metric_head(out, &format!("int_collect_congestion_{name}"), help, kind);
        let _ = writeln!(out, "int_collect_congestion_{name} {value}");
    }
}

fn per_queue(out: &mut String, queues: &[(&QueueKey, &QueueView)], names: &Naming) {
    metric_head(
        out,
        "int_collect_congestion_episodes_total",
        "Congestion episodes ended, per queue.",
        "counter",
    );
    for (key, queue) in queues {
        let _ = writeln!(
            out,
            "int_collect_congestion_episodes_total{{{}}} {}",
            queue_labels(**key, names),
            queue.episodes
        );
    }
    metric_head(
        out,
        "int_collect_congestion_seconds_total",
        "Time the queue spent in ended episodes, seconds.",
        "counter",
    );
    for (key, queue) in queues {
        let seconds = queue.congested_ns as f64 / 1e9;
        let _ =
            writeln!(out, "int_collect_congestion_seconds_total{{{}}} {seconds}", queue_labels(**key, names));
    }
    metric_head(
        out,
        "int_collect_congestion_occupancy",
        "The queue's last occupancy, in its node's unit (label unit).",
        "gauge",
    );
    for (key, queue) in queues {
        if let Some(occupancy) = queue.occupancy {
            let labels = format!("{},unit=\"{}\"", queue_labels(**key, names), queue.unit.name());
            let _ = writeln!(out, "int_collect_congestion_occupancy{{{labels}}} {occupancy}");
        }
    }
}

/// The queues congested now, and those with episodes that ended within
/// [`RECENT_S`], each with its top culprit.
fn now(out: &mut String, queues: &[(&QueueKey, &QueueView)], view: &View, names: &Naming, now_ns: u64) {
    let culprit = |flow: Option<&FlowKey>| flow.map_or("none".to_string(), flow_label);
    metric_head(
        out,
        "int_collect_congestion_active",
        "1 while the queue is congested, with its top culprit so far.",
        "gauge",
    );
    for (key, queue) in queues {
        if let Some(open) = &queue.open {
            let top = culprit(open.culprits.first().map(|p| &p.flow));
            let _ = writeln!(
                out,
                "int_collect_congestion_active{{{},culprit=\"{top}\"}} 1",
                queue_labels(**key, names)
            );
        }
    }
    metric_head(
        out,
        "int_collect_congestion_recent_episodes",
        "Episodes of the queue ended in the last 2 minutes, by their top culprit.",
        "gauge",
    );
    let since = now_ns.saturating_sub(RECENT_S * 1_000_000_000);
    let mut recent: std::collections::BTreeMap<(QueueKey, String), u64> = Default::default();
    let shown = |key: &QueueKey| queues.iter().any(|(k, _)| *k == key);
    for episode in view.recent.iter().filter(|e| e.end_ns.is_some_and(|end| end >= since)) {
        let key = (episode.node, episode.queue);
        if shown(&key) {
            *recent.entry((key, culprit(episode.culprits.first().map(|p| &p.flow)))).or_default() += 1;
        }
    }
    // A queue without recent episodes says so (0, culprit "none"): the
    // series is there before it is needed.
    for (key, _) in queues {
        if !recent.keys().any(|(k, _)| k == *key) {
            recent.insert((**key, "none".to_string()), 0);
        }
    }
    for ((key, top), count) in recent {
        let labels = queue_labels(key, names);
        let _ = writeln!(out, "int_collect_congestion_recent_episodes{{{labels},culprit=\"{top}\"}} {count}");
    }
}

fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
