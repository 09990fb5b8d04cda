//! The multi-hop check: a delay on one link of the path shows on that
//! link, from one hop's egress timestamp to the next hop's ingress
//! timestamp, and on no other link: in the sink's reports of INT-MD
//! stacks, or in the packets the collector joined from INT-MX and INT-XD
//! postcards.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::topology::{node_id, node_name};
use super::verdicts::Checks;
use crate::error::Error;

/// A link by its ends' node ids.
type Link = (u32, u32);

/// The delay check's flow: its UDP source port, the first of its packet
/// numbers sent with the delay on, and when the delay was set (ns since
/// the epoch; joined packets carry no packet number).
#[derive(Debug, Clone, Copy)]
pub struct DelayFlow {
    pub port: u16,
    pub from_sequence: u64,
    pub on_ns: u64,
}

/// Each link's latencies (ns) on the delay check's flow, before the delay
/// and with it.
#[derive(Default)]
struct Phases {
    before: BTreeMap<Link, Vec<i64>>,
    after: BTreeMap<Link, Vec<i64>>,
}

fn phases(workdir: &Path, flow: DelayFlow) -> Phases {
    let mut phases = Phases::default();
    let text = fs::read_to_string(workdir.join("collector.jsonl")).unwrap_or_default();
    let records = text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    for record in records.filter(|r| r["flow"]["src_port"] == flow.port) {
        let Some(hops) = record["hop_metadata"].as_array() else { continue };
        let Some(delayed) = delayed(&record, flow) else { continue };
        let phase = if delayed { &mut phases.after } else { &mut phases.before };
        // Source first: each pair of neighbours is a link.
        for pair in hops.windows(2) {
            let [a, b] = pair else { continue };
            let (Some(from), Some(to)) = (a["node_id"].as_u64(), b["node_id"].as_u64()) else { continue };
            let (Some(egress), Some(ingress)) =
                (a["egress_timestamp"].as_i64(), b["ingress_timestamp"].as_i64())
            else {
                continue;
            };
            phase.entry((from as u32, to as u32)).or_default().push(ingress - egress);
        }
    }
    phases
}

/// Whether the collector has written joined packets of the delay flow
/// sent with the delay on.
pub fn joined_after(workdir: &Path, flow: DelayFlow) -> bool {
    !phases(workdir, flow).after.is_empty()
}

/// Whether a record's packet went with the delay on: a stack's as
/// [`stack_delayed`] tells, a joined packet's by when it reached its first
/// node; `None` for other records, and for joined packets without a path
/// (unordered or incomplete: no links to tell).
fn delayed(record: &serde_json::Value, flow: DelayFlow) -> Option<bool> {
    match record["type"].as_str()? {
        "tr20" => stack_delayed(record, flow),
        "joined" if !record["path"].is_null() => first_node_delayed(record, flow),
        _ => None,
    }
}

/// Whether a report's stack went with the delay on: by its packet
/// number, or for a stack without one (IFA numbers no packet) by when it
/// reached its first node.
pub fn stack_delayed(record: &serde_json::Value, flow: DelayFlow) -> Option<bool> {
    match record["flow_seq"].as_u64() {
        Some(sequence) => Some(sequence > flow.from_sequence),
        None => first_node_delayed(record, flow),
    }
}

/// Whether the record's packet reached its first node after the delay was
/// set (every node reads the one host clock).
fn first_node_delayed(record: &serde_json::Value, flow: DelayFlow) -> Option<bool> {
    Some(record["hop_metadata"][0]["ingress_timestamp"].as_u64()? > flow.on_ns)
}

/// `delayed`'s latency steps up by the delay (each phase judged by its
/// least latency, as a loaded machine may hold a packet back but never
/// speed one up; within a millisecond plus the path's noise: the link's
/// spread before, or the round trips' spread `noise_ns` where it is
/// larger, as the flow's latency change is judged); every other link
/// stays under half the delay.
pub fn check_link_delay(
    workdir: &Path,
    delayed: &[String; 2],
    delay_ms: u64,
    flow: DelayFlow,
    noise_ns: i64,
    checks: &mut Checks,
) -> Result<(), Error> {
    let node = |text: &String| node_id(text).map(|id| id as u32);
    let delayed = (node(&delayed[0])?, node(&delayed[1])?);
    let phases = phases(workdir, flow);
    let delay_ns = delay_ms as i64 * 1_000_000;
    let least =
        |map: &BTreeMap<Link, Vec<i64>>, link: &Link| map.get(link).and_then(|l| l.iter().min().copied());
    let spread = phases
        .before
        .get(&delayed)
        .map_or(0, |l| l.iter().max().copied().unwrap_or(0) - l.iter().min().copied().unwrap_or(0));
    let step = least(&phases.after, &delayed).zip(least(&phases.before, &delayed)).map(|(a, b)| a - b);
    let tolerance = noise_ns.max(spread) + 1_000_000;
    let stepped = step.is_some_and(|s| s > delay_ns / 2 && (s - delay_ns).abs() <= tolerance);
    let others: Vec<(Link, i64)> = phases
        .after
        .keys()
        .filter(|link| **link != delayed)
        .filter_map(|link| Some((*link, least(&phases.after, link)?)))
        .collect();
    let flat = !others.is_empty() && others.iter().all(|(_, l)| *l < delay_ns / 2);
    let name = |(a, b): Link| format!("{} > {}", node_name(a.into()), node_name(b.into()));
    checks.check(
        "link delay",
        stepped && flat,
        format!(
            "link {}: step {} ms for a {delay_ms} ms delay (tolerance {:.3} ms); the other links with it: {}",
            name(delayed),
            step.map_or("none".into(), |s| format!("{:.3}", s as f64 / 1e6)),
            tolerance as f64 / 1e6,
            others
                .iter()
                .map(|(l, ns)| format!("{} {:.3} ms", name(*l), *ns as f64 / 1e6))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    Ok(())
}
