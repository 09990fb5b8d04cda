//! collect's line per report: the record (crate::records) with where and
//! when it arrived, as a JSON line or as text for people (times as dates,
//! durations in their unit, node ids as in the JSON).

pub mod args;

use std::net::Ipv4Addr;

use serde_json::Value;

use crate::collect::books::datagram::Arrival;
use crate::collect::books::export::Exporter;
use crate::collect::names::Naming;
use crate::records::{MalformedRecord, Record, RecordType};
use crate::schema;

/// How reports are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Text,
    Json,
    /// Summaries only.
    Quiet,
}

/// Standard output as an exporter: a line per record, and per refused
/// datagram, as text or JSON. Every reader shares it: each line is one
/// write of a locked stdout.
pub struct Stdout {
    pub print: Print,
    pub names: Naming,
}

impl Exporter for Stdout {
    fn wants_records(&self) -> bool {
        self.print != Print::Quiet
    }

    fn record(&self, record: &Record) {
        print(record, self.print, &self.names);
    }

    fn read_back(&self, record: &Record) {
        print(record, self.print, &self.names);
    }

    fn refused(&self, arrival: &Arrival, error: &str, len: Option<usize>) {
        match self.print {
            Print::Json => {
                let record = MalformedRecord {
                    kind: RecordType::Malformed,
                    error: error.to_string(),
                    length: len,
                    from: None,
                    arrival: None,
                    arrival_ns: None,
                    missing_reports_before: None,
                };
                print(&arrival.record(record), Print::Json, &self.names);
            }
            Print::Text => {
                let length = len.map_or(String::new(), |len| format!(" ({len} bytes)"));
                println!("From {}: malformed report{length}: {error}", arrival.from);
            }
            Print::Quiet => {}
        }
    }
}

/// One record as `output` asks.
pub fn print(record: &Record, output: Print, names: &Naming) {
    match output {
        Print::Json => {
            if let Ok(line) = serde_json::to_string(record) {
                println!("{line}");
            }
        }
        // The text reads the record's fields by name, as the JSON has them.
        Print::Text => print_text(&serde_json::to_value(record).unwrap_or_default(), names),
        Print::Quiet => {}
    }
}

/// A congestion episode on one line: where, when, how much, whose.
fn congestion(r: &Value, names: &Naming) -> String {
    let ms = |ns: &Value| ns.as_u64().map_or("-".into(), |ns| format!("{:.1} ms", ns as f64 / 1e6));
    let first = r.get("culprits").and_then(|c| c.get(0));
    let culprit = match first {
        Some(first) => format!(
            "{} ({:.0}% of {} packets)",
            flow(&first["flow"]),
            first["share"].as_f64().unwrap_or(0.0) * 100.0,
            r["packets"]
        ),
        None => "-".into(),
    };
    let victims = r["victims"].as_array().map_or(0, Vec::len);
    format!(
        "Congestion at node {} queue {}: {} for {} ({}), peak {} {} / {} ns hop latency; culprit {culprit}; {victims} victim(s)",
        node(&r["node"], true, names),
        r["queue_id"],
        r["start"].as_str().unwrap_or("-"),
        ms(&r["duration_ns"]),
        r["ended"].as_str().unwrap_or("open"),
        r["peak_occupancy"],
        r["unit"].as_str().unwrap_or("?"),
        r["peak_hop_latency_ns"],
    )
}

fn print_text(r: &Value, names: &Naming) {
    let kind = r["type"].as_str().unwrap_or("?");
    match kind {
        "path-change" => return path_change(r, names),
        "joined" => return print!("{}", joined(r, names)),
        "congestion" => return println!("{}", congestion(r, names)),
        _ => {}
    }
    let title = match kind {
        "latency" => "Latency",
        "drop-summary" => "Drop Summary",
        "tr05" => "Telemetry Report 0.5",
        "tr05-flow" => "Telemetry Report 0.5 flow report",
        "tr20" => "Telemetry Report 2.0",
        "tr20-loss" => "Telemetry Report 2.0 (loss)",
        other => other,
    };
    let time = r["time"].as_str().unwrap_or("-");
    println!(
        "Seq: {} Time: {time} Type: {title}{}",
        r["report_seq"],
        missing_note(&r["missing_reports_before"])
    );
    match kind {
        "latency" | "tr05-flow" => print_latency(r, names),
        "drop-summary" => println!(
            "  Source node: {} port: {}  Sink node: {} port: {}\n  Flow: {}  gap at {}  flow seq: {}  lost: {} packet(s)",
            node(&r["source_node"], true, names),
            r["source_port"],
            node(&r["sink_node"], true, names),
            r["sink_port"],
            flow(&r["flow"]),
            r["gap_time"].as_str().unwrap_or("-"),
            r["flow_seq"],
            r["lost_packets"]
        ),
        "tr05" => println!(
            "  NProto {} ({} bytes of frame), timestamp {} (low 32 bits of ns)",
            r["nproto"], r["inner_frame_length"], r["timestamp_ns"]
        ),
        "tr20-loss" => println!(
            "  Report node: {}  Flow: {}  lost {} packet(s) from number {}",
            node(&r["report_node"], false, names),
            flow(&r["flow"]),
            r["lost_packets"],
            r["first_flow_seq"]
        ),
        _ => print_tr20(r, names),
    }
}

fn print_latency(r: &Value, names: &Naming) {
    let ipv4 = r["type"] == "latency";
    println!(
        "  Source node: {} port: {} ts: {}  Sink node: {} port: {} ts: {}",
        node(&r["source_node"], ipv4, names),
        dash(&r["source_port"]),
        dash(&r["source_timestamp_ns"]),
        node(&r["sink_node"], ipv4, names),
        dash(&r["sink_port"]),
        dash(&r["sink_timestamp_ns"])
    );
    println!(
        "  Flow: {}  flow seq: {}  latency: {}",
        flow(&r["flow"]),
        dash(&r["flow_seq"]),
        duration(&r["latency_ns"])
    );
}

fn print_tr20(r: &Value, names: &Naming) {
    let what = match (r["hops"].is_null(), r["flow"].is_object()) {
        (false, _) => {
            format!(
                "Flow: {}  hops: {}  latency: {}",
                flow(&r["flow"]),
                r["hops"],
                duration(&r["latency_ns"])
            )
        }
        (true, true) => format!("(no INT 2.1 packet inside; its flow {})", flow(&r["flow"])),
        (true, false) => "(no INT 2.1 packet inside)".to_string(),
    };
    println!("  Report node: {}  {what}", node(&r["report_node"], false, names));
    for (i, hop) in r["hop_metadata"].as_array().into_iter().flatten().enumerate() {
        println!("  hop {}: {}", i + 1, describe_hop(hop, names));
    }
    if let Some(drop) = r["drop"].as_object() {
        let name = drop.get("reason_name").and_then(Value::as_str).unwrap_or("?");
        println!("  Dropped here: reason {} ({name}), queue {}", drop["reason"], drop["queue_id"]);
    }
}

/// "node 2, ports 1 > 2, latency 4.00 µs, queue 0: 12".
fn describe_hop(hop: &Value, names: &Naming) -> String {
    let mut parts = vec![format!("node {}", node(&hop["node_id"], false, names))];
    if hop["l1_ingress_port"].is_u64() {
        parts.push(format!("ports {} > {}", hop["l1_ingress_port"], hop["l1_egress_port"]));
    }
    if hop["hop_latency"].is_u64() {
        parts.push(format!("latency {}", duration(&hop["hop_latency"])));
    }
    if hop["queue_id"].is_u64() {
        parts.push(format!("queue {}: {}", hop["queue_id"], hop["queue_occupancy"]));
    }
    parts.join(", ")
}

/// A packet's postcards joined, in text: its path (or why it has none),
/// each node's hop, and the links between them.
fn joined(r: &Value, names: &Naming) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let nodes = |list: &Value| {
        list.as_array().into_iter().flatten().map(|id| node(id, false, names)).collect::<Vec<_>>()
    };
    let path = match (r["ordered"].as_bool(), r["complete"].as_bool()) {
        (Some(true), Some(true)) => format!("path {}", nodes(&r["path"]).join(" > ")),
        (Some(true), _) => {
            format!("nodes {} (part of the flow's path: no path yet)", nodes(&r["nodes"]).join(" > "))
        }
        _ => format!("nodes {} (their order cannot be told from their times)", nodes(&r["nodes"]).join(", ")),
    };
    let _ = writeln!(text, "Joined postcards: Flow: {}  {path}", flow(&r["flow"]));
    let hops: Vec<&Value> = r["hop_metadata"].as_array().into_iter().flatten().collect();
    for (i, hop) in hops.iter().enumerate() {
        let _ = writeln!(text, "  hop {}: {}", i + 1, describe_hop(hop, names));
    }
    if r["ordered"] != true {
        return text;
    }
    for pair in hops.windows(2) {
        let [from, to] = pair else { continue };
        let gap = to["ingress_timestamp"].as_i64().zip(from["egress_timestamp"].as_i64()).map(|(i, e)| i - e);
        if let Some(gap) = gap {
            let (a, b) = (node(&from["node_id"], false, names), node(&to["node_id"], false, names));
            let _ = writeln!(text, "  link {a} > {b}: {}", schema::human_ns(gap));
        }
    }
    text
}

/// A path change in text.
fn path_change(record: &Value, names: &Naming) {
    let path = |ids: &Value| {
        ids.as_array().into_iter().flatten().map(|id| node(id, false, names)).collect::<Vec<_>>().join(" > ")
    };
    println!(
        "Path change: Flow: {}  {}  ->  {}",
        flow(&record["flow"]),
        path(&record["old_path"]),
        path(&record["new_path"])
    );
}

/// A node id as the JSON gives it, after its name where it has one; a
/// Host-INT one (an IPv4 address by Host-INT's convention) with its dotted
/// form beside.
fn node(id: &Value, ipv4: bool, names: &Naming) -> String {
    let Some(id) = id.as_u64().and_then(|id| u32::try_from(id).ok()) else { return "-".to_string() };
    match (names.node(id), ipv4.then_some(Ipv4Addr::from(id))) {
        (Some(name), Some(ip)) => format!("{name} ({id}, {ip})"),
        (Some(name), None) => format!("{name} ({id})"),
        (None, Some(ip)) => format!("{id} ({ip})"),
        (None, None) => id.to_string(),
    }
}

fn flow(flow: &Value) -> String {
    let protocol = match flow["protocol"].as_u64() {
        Some(6) => "tcp".to_string(),
        Some(17) => "udp".to_string(),
        other => other.map_or("-".to_string(), |p| p.to_string()),
    };
    let end = |addr: &str, port: &str| {
        let addr = flow[addr].as_str().unwrap_or("?");
        if addr.contains(':') {
            format!("[{addr}]:{}", flow[port])
        } else {
            format!("{addr}:{}", flow[port])
        }
    };
    format!("{protocol} {} -> {}", end("src", "src_port"), end("dst", "dst_port"))
}

fn duration(ns: &Value) -> String {
    ns.as_i64().map_or("-".to_string(), schema::human_ns)
}

fn dash(value: &Value) -> String {
    if value.is_null() {
        "-".to_string()
    } else {
        value.to_string()
    }
}

pub fn missing_note(missing: &Value) -> String {
    match missing.as_u64() {
        None | Some(0) => String::new(),
        Some(n) => format!("  ({n} report(s) lost before this one)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A joined packet reads as what it is: its path, each hop, each link
    /// (issue 45: it printed as "Seq: null Time: - Type: joined ... (no INT
    /// 2.1 packet inside; ...)", which read as an error).
    #[test]
    fn joined_postcards_read_as_a_path() {
        let hop = |node: u32, ingress: u64, egress: u64| json!({"node_id": node, "hop_latency": egress - ingress, "ingress_timestamp": ingress, "egress_timestamp": egress});
        let flow =
            json!({"src": "10.0.0.1", "dst": "10.0.0.2", "protocol": 17, "src_port": 1, "dst_port": 2});
        let record = json!({"type": "joined", "flow": flow, "nodes": [1, 2], "ordered": true, "complete": true,
                            "path": [1, 2], "hop_metadata": [hop(1, 1000, 3000), hop(2, 5000, 5500)]});
        let text = joined(&record, &Naming::default());
        assert_eq!(
            text,
            "Joined postcards: Flow: udp 10.0.0.1:1 -> 10.0.0.2:2  path 1 > 2\n  hop 1: node 1, latency 2.00 µs\n  hop 2: node 2, latency 500 ns\n  link 1 > 2: 2.00 µs\n"
        );
        let unordered = json!({"type": "joined", "flow": flow, "nodes": [2, 1], "ordered": false, "complete": null,
                               "path": null, "hop_metadata": []});
        assert!(joined(&unordered, &Naming::default())
            .contains("nodes 2, 1 (their order cannot be told from their times)"));
    }
}
