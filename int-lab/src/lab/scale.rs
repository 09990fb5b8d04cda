//! Scale-out: receiving collectors publish what they take into NATS
//! JetStream and an aggregator reads the stream; its summary at exit must
//! equal the summary of the lab's collector, fed the same reports (the
//! report frames mirrored to the receivers by tc, config/lab/scaleout21.yaml).

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::fs;
use std::path::Path;

use super::figures::summary;
use super::namespaces::{stop_nodes, Lab};
use super::states::wait_for;
use super::topology::ScaleOut;
use super::verdicts::Checks;

/// The records that are reports (docs/scale-out.md: a path change or a
/// joined packet is worked out from reports, and is none).
const REPORT_TYPES: [&str; 6] = ["latency", "drop-summary", "tr05", "tr05-flow", "tr20", "tr20-loss"];

/// The summary's parts that must be equal: what the reports said, not how
/// they came (datagrams, the stream's own counts).
const COMPARED: [&str; 4] = ["reports", "all_flows", "flows", "path_changes"];

/// Report records in a collector's JSON lines so far.
fn booked(log: &Path) -> usize {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["type"].as_str().is_some_and(|t| REPORT_TYPES.contains(&t)))
        .count()
}

fn aggregator_log(workdir: &Path, spec: &ScaleOut) -> std::path::PathBuf {
    workdir.join(format!("{}.log", spec.aggregator))
}

/// The nodes stopped (their last reports sent), then until the aggregator
/// has booked as many reports as the lab's collector took.
pub fn settle(lab: &mut Lab, workdir: &Path, spec: &ScaleOut) {
    stop_nodes(lab);
    let (reference, aggregator) = (workdir.join("collector.jsonl"), aggregator_log(workdir, spec));
    // A shortfall is the check's to show.
    let _ = wait_for("the aggregator booking every report", || {
        let taken = booked(&reference);
        Ok(taken > 0 && booked(&aggregator) >= taken)
    });
}

/// The aggregator's summary equals the lab's collector's in what the
/// reports said: reports, every flow's latency and loss, path changes.
pub fn check(workdir: &Path, spec: &ScaleOut, checks: &mut Checks) {
    let reference = summary(&workdir.join("collector.jsonl")).unwrap_or_default();
    let aggregated = summary(&aggregator_log(workdir, spec)).unwrap_or_default();
    let differ: Vec<&str> = COMPARED
        .into_iter()
        .filter(|part| comparable(&reference[*part]) != comparable(&aggregated[*part]))
        .collect();
    let flows = |s: &serde_json::Value| s["flows"].as_array().map_or(0, Vec::len);
    check_shared(workdir, spec, reference["reports"].as_u64().unwrap_or(0), checks);
    checks.check(
        "aggregator equals one collector",
        reference["reports"].as_u64().is_some_and(|n| n > 0) && differ.is_empty(),
        format!(
            "one collector: {} reports, {} flows, {} lost, latency p50 {} ns; the aggregator over the stream: {} reports, {} flows, {} lost, latency p50 {} ns{}",
            reference["reports"],
            flows(&reference),
            reference["all_flows"]["lost_packets"],
            reference["all_flows"]["latency_p50_ns"],
            aggregated["reports"],
            flows(&aggregated),
            aggregated["all_flows"]["lost_packets"],
            aggregated["all_flows"]["latency_p50_ns"],
            if differ.is_empty() { String::new() } else { format!("; differ: {}", differ.join(", ")) }
        ),
    );
}

/// Each receiving collector took some of the reports, and together all
/// that the lab's collector took: its text summary at exit,
/// `== summary: N report(s) in ...`.
fn check_shared(workdir: &Path, spec: &ScaleOut, all: u64, checks: &mut Checks) {
    let taken: Vec<(&str, u64)> = spec
        .receivers
        .iter()
        .map(|name| {
            let log = fs::read_to_string(workdir.join(format!("{name}.log"))).unwrap_or_default();
            let reports = log
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("== summary: ")?.split(' ').next()?.parse().ok())
                .unwrap_or(0);
            (name.as_str(), reports)
        })
        .collect();
    let sum: u64 = taken.iter().map(|(_, n)| n).sum();
    checks.check(
        "receivers shared the reports",
        taken.len() > 1 && taken.iter().all(|(_, n)| *n > 0) && sum == all,
        format!(
            "{} of the {all} reports the one collector took ({sum} in all)",
            taken.iter().map(|(name, n)| format!("{name} {n}")).collect::<Vec<_>>().join(", ")
        ),
    );
}

/// A summary part as text, lists sorted: the order of flows is the order
/// they came, which two collectors need not share.
fn comparable(part: &serde_json::Value) -> String {
    match part.as_array() {
        Some(items) => {
            let mut texts: Vec<String> = items.iter().map(ToString::to_string).collect();
            texts.sort();
            texts.join("\n")
        }
        None => part.to_string(),
    }
}
