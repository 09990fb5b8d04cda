//! The summary's `congestion` section (docs/output.md, docs/congestion.md):
//! every queue followed, its figures and episodes, the newest episodes as
//! the records collect prints, the sinks' queue alerts and the
//! bookkeeping's counts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::collect::books::congestion::record::record;
use crate::collect::books::congestion::View;
use crate::collect::names::Naming;
use crate::records::{CongestionRecord, Record};

/// The newest episodes the summary lists.
pub const SUMMARY_EPISODES: usize = 20;

#[derive(Serialize)]
pub struct CongestionLine {
    queues: Vec<QueueLine>,
    episodes: u64,
    recent_episodes: Vec<CongestionRecord>,
    queue_alerts: BTreeMap<u32, u64>,
    figures: u64,
    evicted_queues: u64,
    untracked_queues: u64,
    untracked_flows: u64,
}

#[derive(Serialize)]
struct QueueLine {
    node: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
    queue_id: u8,
    unit: &'static str,
    occupancy: Option<u32>,
    hop_latency_ns: Option<u32>,
    baseline_occupancy: Option<f64>,
    baseline_hop_latency_ns: Option<f64>,
    episodes: u64,
    congested_ns: u64,
    /// The episode under way, its flows ranked so far.
    open: Option<CongestionRecord>,
}

/// An episode's record with the node's name.
fn named(episode: &crate::collect::books::congestion::episode::Episode, names: &Naming) -> CongestionRecord {
    let mut named = Record::Congestion(record(episode));
    names.annotate(&mut named);
    match named {
        Record::Congestion(r) => r,
        _ => record(episode),
    }
}

pub fn summary(view: &View, names: &Naming) -> CongestionLine {
    let queues = view.queues.iter().map(|((node, queue_id), queue)| QueueLine {
        node: *node,
        node_name: names.node(*node),
        queue_id: *queue_id,
        unit: queue.unit.name(),
        occupancy: queue.occupancy,
        hop_latency_ns: queue.hop_latency_ns,
        baseline_occupancy: queue.baseline_occupancy,
        baseline_hop_latency_ns: queue.baseline_latency_ns,
        episodes: queue.episodes,
        congested_ns: queue.congested_ns,
        open: queue.open.as_ref().map(|episode| named(episode, names)),
    });
    let skip = view.recent.len().saturating_sub(SUMMARY_EPISODES);
    let counts = &view.counts;
    CongestionLine {
        queues: queues.collect(),
        episodes: counts.episodes,
        recent_episodes: view.recent.iter().skip(skip).map(|episode| named(episode, names)).collect(),
        queue_alerts: counts.queue_alerts.clone(),
        figures: counts.figures,
        evicted_queues: counts.evicted_queues,
        untracked_queues: counts.untracked_queues,
        untracked_flows: counts.untracked_flows,
    }
}
