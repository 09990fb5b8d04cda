//! An episode as the record collect prints and publishes (`congestion`,
//! docs/output.md).

use super::episode::{Ended, Episode, Part, Trigger};
use crate::records::{CongestionRecord, FlowPart, RecordType};
use crate::schema::rfc3339;

pub fn record(episode: &Episode) -> CongestionRecord {
    let part = |p: &Part| FlowPart {
        flow: Some(p.flow),
        packets: p.packets,
        bytes: p.bytes,
        share: p.share,
        latency_before_ns: p.latency_before_ns,
        latency_max_ns: p.latency_max_ns,
    };
    let trigger = match episode.trigger {
        Trigger::Occupancy => "occupancy",
        Trigger::HopLatency => "hop_latency",
    };
    let ended = episode.ended.map(|ended| match ended {
        Ended::Fell => "fell",
        Ended::Silent => "silent",
    });
    CongestionRecord {
        kind: RecordType::Congestion,
        node: episode.node,
        queue_id: episode.queue,
        unit: episode.unit.name().to_string(),
        trigger: trigger.to_string(),
        start: Some(rfc3339(episode.start_ns)),
        start_ns: episode.start_ns,
        end: episode.end_ns.map(rfc3339),
        end_ns: episode.end_ns,
        duration_ns: episode.duration_ns(),
        ended: ended.map(str::to_string),
        peak_occupancy: episode.peak_occupancy,
        peak_hop_latency_ns: episode.peak_latency_ns,
        threshold_occupancy: episode.threshold_occupancy,
        threshold_hop_latency_ns: episode.threshold_latency_ns,
        packets: episode.packets,
        bytes: episode.bytes,
        flows: episode.flows,
        other_packets: episode.other_packets,
        queue_alerts: episode.queue_alerts,
        culprits: episode.culprits.iter().map(part).collect(),
        victims: episode.victims.iter().map(part).collect(),
        node_name: None,
    }
}
