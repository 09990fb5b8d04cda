//! int-node's commands on EAL's telemetry socket (started by EAL unless
//! `--no-telemetry`), for `dpdk-telemetry.py` or any client of it.
//! `/int_node/pipelines` lists the pipelines; `/int_node/pipeline,NAME`
//! gives every counter of one, by the names `--stats-json` uses;
//! `/int_node/flows,NAME` its flow table (capacity, flows live, created,
//! expired, evicted, refused); `/int_node/top_flows,NAME` its flows with
//! the most packets and `/int_node/top_flows,NAME,latency` those with the
//! highest latency; `/int_node/exporter` the report exporter's counts. The
//! ports are DPDK's own `/ethdev/stats,PORT`.
//!
//! The handlers run on EAL's telemetry thread and read the counters the
//! workers publish (relaxed atomics): nothing on the packet path waits.
//! Each counter is read on its own, so an answer is no snapshot: two
//! counters of a running pipeline may be a burst or so apart.

use std::sync::{Arc, OnceLock};

use crate::dpdk::telemetry::{Answer, Command, Refusal, Value};
use crate::dpdk::DpdkError;
use crate::pipeline::export::SharedExportStats;
use crate::pipeline::top_flows::{SharedTopFlows, TopFlow};
use crate::stats::{Counter, SharedCounters};

/// What the commands answer for, set once at start.
pub struct Sources {
    pub pipelines: Vec<(String, Arc<SharedCounters>)>,
    /// Each pipeline's flow table capacity, where it keeps one.
    pub flow_capacity: Vec<Option<u32>>,
    /// Each pipeline's top flows, as its worker publishes them.
    pub top_flows: Vec<Arc<SharedTopFlows>>,
    pub exporter: Option<Arc<SharedExportStats>>,
}

static SOURCES: OnceLock<Sources> = OnceLock::new();

const COMMANDS: [Command; 5] = [
    Command {
        name: c"/int_node/pipelines",
        help: c"Returns the names of int-node's pipelines. Takes no parameters",
        answer: list_pipelines,
    },
    Command {
        name: c"/int_node/pipeline",
        help: c"Returns every counter of a pipeline. Parameter: the pipeline's name",
        answer: pipeline_counters,
    },
    Command {
        name: c"/int_node/flows",
        help: c"Returns a pipeline's flow table: capacity, live, created, expired, evicted, refused. Parameter: the pipeline's name",
        answer: pipeline_flows,
    },
    Command {
        name: c"/int_node/top_flows",
        help: c"Returns a pipeline's top flows by packets, or by latency. Parameters: name[,latency]",
        answer: top_flows,
    },
    Command {
        name: c"/int_node/exporter",
        help: c"Returns the report exporter's counts. Takes no parameters",
        answer: exporter_counts,
    },
];

/// Registers the commands (once per process: a second call keeps the
/// first sources).
pub fn register(sources: Sources) -> Result<(), DpdkError> {
    let _ = SOURCES.set(sources);
    crate::dpdk::telemetry::register(&COMMANDS)
}

/// The pipelines, as set at start.
fn pipelines() -> &'static [(String, Arc<SharedCounters>)] {
    SOURCES.get().map_or(&[][..], |s| s.pipelines.as_slice())
}

/// `/int_node/pipelines`: the names, as an array of strings.
fn list_pipelines(_params: &str) -> Result<Answer, Refusal> {
    Ok(Answer::Names(pipelines().iter().map(|(name, _)| name.clone()).collect()))
}

/// `/int_node/pipeline,NAME`: that pipeline's counters, as a dict; an
/// unknown or missing name is refused, as DPDK's own commands do.
fn pipeline_counters(params: &str) -> Result<Answer, Refusal> {
    let (_, counters) = find_pipeline(params).ok_or(Refusal::Invalid)?;
    Ok(Answer::Dict(Counter::ALL.iter().map(|c| (c.name(), Value::Number(counters.get(*c)))).collect()))
}

fn find_pipeline(name: &str) -> Option<(usize, &'static Arc<SharedCounters>)> {
    pipelines().iter().enumerate().find(|(_, (pipeline, _))| pipeline == name).map(|(i, (_, c))| (i, c))
}

/// `/int_node/flows,NAME`: the pipeline's flow table, from its counters
/// (the table itself is the worker's alone). Refused for an unknown
/// pipeline or one without a flow table.
fn pipeline_flows(params: &str) -> Result<Answer, Refusal> {
    let (index, counters) = find_pipeline(params).ok_or(Refusal::Invalid)?;
    let capacity = SOURCES.get().and_then(|s| s.flow_capacity.get(index).copied().flatten());
    let capacity = capacity.ok_or(Refusal::Invalid)?;
    let get = |c: Counter| counters.get(c);
    let (created, expired, evicted) =
        (get(Counter::flows_created), get(Counter::flows_expired), get(Counter::flows_evicted));
    let values = [
        ("capacity", u64::from(capacity)),
        ("live", created.saturating_sub(expired + evicted)),
        ("created", created),
        ("expired", expired),
        ("evicted", evicted),
        ("refused", get(Counter::flow_table_full)),
    ];
    Ok(Answer::Dict(values.into_iter().map(|(k, v)| (k, Value::Number(v))).collect()))
}

/// `/int_node/top_flows,NAME[,latency]`: the pipeline's ranked flows of
/// its flow table's last complete sweep pass, as a dict of columns (row i
/// of each is the i-th flow): `flow`, `packets` (the packets its source
/// numbered), `latency_ns` (at a sink; 0 for a flow with none reported yet)
/// and `source_node`, with `order`, `flows` (flows the pass visited),
/// `pass` (its number: a pass two past the one published when something
/// happened began after it) and `age_ms` (since the pass ended). Refused
/// for an unknown pipeline, one without a flow table, or an unknown order;
/// busy before the first pass is complete.
fn top_flows(params: &str) -> Result<Answer, Refusal> {
    let (name, order) = params.split_once(',').unwrap_or((params, "packets"));
    let by_latency = match order {
        "packets" => false,
        "latency" => true,
        _ => return Err(Refusal::Invalid),
    };
    let (index, _) = find_pipeline(name).ok_or(Refusal::Invalid)?;
    let sources = SOURCES.get().ok_or(Refusal::Invalid)?;
    sources.flow_capacity.get(index).copied().flatten().ok_or(Refusal::Invalid)?;
    let snapshot = sources.top_flows.get(index).and_then(|top| top.snapshot()).ok_or(Refusal::Busy)?;
    let ranked = if by_latency { &snapshot.by_latency } else { &snapshot.by_packets };
    let column = |value: fn(&TopFlow) -> u64| Value::Numbers(ranked.iter().map(value).collect());
    let mut dict = vec![
        ("flow", Value::Texts(ranked.iter().map(|f| f.key.to_string()).collect())),
        ("packets", column(|f| u64::from(f.packets))),
        ("latency_ns", column(|f| f.latency_ns.unwrap_or(0))),
        ("source_node", column(|f| u64::from(f.source_node))),
        ("order", Value::Text(order.to_string())),
        ("flows", Value::Number(snapshot.flows)),
        ("pass", Value::Number(snapshot.pass)),
    ];
    dict.extend(snapshot.age_ms.map(|age| ("age_ms", Value::Number(age))));
    Ok(Answer::Dict(dict))
}

/// `/int_node/exporter`: reports sent, send errors, whether UDP GSO is on;
/// refused on a node without an exporter.
fn exporter_counts(_params: &str) -> Result<Answer, Refusal> {
    use std::sync::atomic::Ordering::Relaxed;
    let stats = SOURCES.get().and_then(|s| s.exporter.as_ref()).ok_or(Refusal::Invalid)?;
    let values = [
        ("reports_sent", stats.reports_sent.load(Relaxed)),
        ("send_errors", stats.send_errors.load(Relaxed)),
        ("gso", u64::from(stats.gso.load(Relaxed))),
    ];
    Ok(Answer::Dict(values.into_iter().map(|(k, v)| (k, Value::Number(v))).collect()))
}
