//! `collect --from-nats URL`: the records of many collectors, read from
//! the JetStream stream they publish to (`--nats`), into the same ledger,
//! per-hop view and outputs as reports off a socket. A durable pull
//! consumer: aggregators with the same `--nats-consumer` share the stream's
//! records, one with a name of its own reads them all. A message that is
//! not a record, or a record of another schema, is counted and skipped.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;
use serde_json::{json, Value};

use super::hops::Seen;
use super::stream::{ensure_stream, Settings, SCHEMA};
use super::{Books, Measure, Observed, Print, Shared};
use crate::nats::{Connection, Message};

/// Records asked for per fetch.
const BATCH: usize = 256;

/// The aggregator's thread.
pub fn spawn(
    settings: Settings,
    consumer: String,
    shared: &std::sync::Arc<Shared>,
    output: Print,
) -> std::thread::JoinHandle<Result<(), String>> {
    let shared = std::sync::Arc::clone(shared);
    std::thread::spawn(move || match shared.books.first() {
        Some(books) => run(&settings, &consumer, books, &shared, output),
        None => Ok(()),
    })
}

/// Reads the stream until the collector stops; reconnects while the
/// server is away.
pub fn run(
    settings: &Settings,
    consumer: &str,
    books: &Mutex<Books>,
    shared: &Shared,
    output: Print,
) -> Result<(), String> {
    while !shared.quit.load(Ordering::Relaxed) {
        let Ok(mut connection) = open(settings, consumer) else {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        };
        while !shared.quit.load(Ordering::Relaxed) {
            if fetch(&mut connection, settings, consumer, books, shared, output).is_err() {
                break;
            }
        }
    }
    Ok(())
}

/// A connection with the stream and the durable consumer in place.
fn open(settings: &Settings, consumer: &str) -> std::io::Result<Connection> {
    let mut connection =
        Connection::connect(&settings.server, "int-tools collect --from-nats", Duration::from_secs(2))?;
    ensure_stream(&mut connection, settings)?;
    let config = json!({"stream_name": settings.stream, "config": {"durable_name": consumer, "ack_policy": "explicit",
                        "deliver_policy": "all", "max_ack_pending": 20_000, "ack_wait": 30_000_000_000u64}});
    let subject = format!("$JS.API.CONSUMER.DURABLE.CREATE.{}.{consumer}", settings.stream);
    let answer = connection.request(&subject, &config, Duration::from_secs(3), &mut |_| {})?;
    if let Some(error) = answer.get("error") {
        return Err(std::io::Error::other(format!("consumer {consumer}: {error}")));
    }
    connection.set_wait(Duration::from_millis(600))?;
    let inbox = connection.inbox("f");
    connection.subscribe(&inbox)?;
    Ok(connection)
}

/// One batch: asked for, taken into the books, acknowledged.
fn fetch(
    connection: &mut Connection,
    settings: &Settings,
    consumer: &str,
    books: &Mutex<Books>,
    shared: &Shared,
    output: Print,
) -> std::io::Result<()> {
    let inbox = connection.inbox("f");
    let request = json!({"batch": BATCH, "expires": 500_000_000u64}).to_string();
    let next = format!("$JS.API.CONSUMER.MSG.NEXT.{}.{consumer}", settings.stream);
    connection.publish(&next, Some(&inbox), &[], request.as_bytes())?;
    connection.flush()?;
    for _ in 0..BATCH {
        let Some(message) = connection.next_message()? else { break };
        if message.status.is_some() {
            // 404 no messages, 408 the request expired: the batch is over.
            break;
        }
        if let Ok(mut books) = books.lock() {
            take(&message, &mut books, output);
        }
        shared.reports.fetch_add(1, Ordering::Relaxed);
        if let Some(reply) = &message.reply {
            connection.publish(reply, None, &[], b"")?;
        }
    }
    connection.flush()
}

/// One message: a record into the books, or counted as what it is not.
fn take(message: &Message, books: &mut Books, output: Print) {
    books.totals.received += 1;
    books.totals.reports += 1;
    let refuse = |books: &mut Books, reason: String| *books.totals.malformed.entry(reason).or_default() += 1;
    let Ok(record) = serde_json::from_slice::<Value>(&message.payload) else {
        return refuse(books, "stream: not a JSON record".into());
    };
    match message.header("Int-Schema") {
        Some(SCHEMA) => {}
        other => return refuse(books, format!("stream: record schema {}", other.unwrap_or("none"))),
    }
    if !observe(&record, books) {
        let kind = record.get("type").cloned().unwrap_or_default();
        return refuse(books, format!("stream: a record of type {kind}"));
    }
    super::print::print(&record, output);
}

/// The observations a record carries, as when its report came in;
/// `false` for a record that is none collect publishes.
fn observe(record: &Value, books: &mut Books) -> bool {
    let flow = flow_of(&record["flow"]);
    let at_ns = record["time_ns"].as_u64();
    let node = |key: &str| record[key].as_u64().and_then(|n| u32::try_from(n).ok());
    let sink_node = node("sink_node").or_else(|| node("report_node"));
    let observed = |measure| {
        flow.map(|flow| Observed { flow, source_node: node("source_node"), sink_node, measure, at_ns })
    };
    match record["type"].as_str() {
        Some("latency" | "tr05-flow" | "tr20") => {
            let flow_seq = record["flow_seq"].as_u64().and_then(|s| u32::try_from(s).ok());
            let hops = record["hops"].as_u64().and_then(|h| u8::try_from(h).ok());
            let latency = record["latency_ns"].as_i64().map(|ns| Measure::Latency { ns, flow_seq, hops });
            if let Some(observed) = latency.and_then(observed) {
                books.observe(&observed);
            }
            if record["type"] == "tr20" {
                observe_hops(record, flow, books);
            }
            true
        }
        Some("drop-summary" | "tr20-loss") => {
            let lost = record["lost_packets"].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
            if let Some(observed) = observed(Measure::Lost(lost)) {
                books.observe(&observed);
            }
            true
        }
        Some("joined") => {
            observe_joined(record, flow, books);
            true
        }
        // Path changes are worked out again from the tr20 and joined
        // records.
        Some("path-change" | "tr05") => true,
        _ => false,
    }
}

/// A TR 2.0 record's hops into the per-hop view, and its drop.
fn observe_hops(record: &Value, flow: Option<FlowKey>, books: &mut Books) {
    let report_node = record["report_node"].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    let reason = record.get("drop").and_then(|d| d.get("reason")).and_then(Value::as_u64);
    if let Some(reason) = reason.and_then(|r| u8::try_from(r).ok()) {
        books.hops.observe_drop(report_node, reason);
    }
    let (Some(flow), Some(hops)) = (flow, record["hop_metadata"].as_array()) else { return };
    let hops: Vec<HopMetadata> = hops.iter().map(hop_of).collect();
    if hops.is_empty() {
        return;
    }
    let at_ms = books.ledger.time_ms(record["time_ns"].as_u64());
    let seen = Seen {
        flow,
        hops: &hops,
        sink: Some(report_node),
        sink_ingress_ns: record["time_ns"].as_u64(),
        at_ms,
    };
    books.observe_path(&seen);
}

/// A joined record's hops into the per-hop view, as when its postcards
/// were joined.
fn observe_joined(record: &Value, flow: Option<FlowKey>, books: &mut Books) {
    let (Some(flow), Some(hops)) = (flow, record["hop_metadata"].as_array()) else { return };
    let hops: Vec<HopMetadata> = hops.iter().map(hop_of).collect();
    let at_ms = books.ledger.time_ms(hops.first().and_then(|hop| hop.ingress_timestamp));
    // A group the publisher could not order, or found part of its flow's
    // path, gives its nodes' figures only here too.
    let ordered = record["ordered"].as_bool().unwrap_or(false) && !record["path"].is_null();
    let joined = super::join::Joined { flow, hops, ordered, at_ms };
    books.observe_joined(&joined, Print::Quiet);
}

fn flow_of(flow: &Value) -> Option<FlowKey> {
    let address = |key: &str| flow[key].as_str().and_then(|a| a.parse::<IpAddr>().ok());
    let number = |key: &str| flow[key].as_u64();
    Some(FlowKey {
        src: address("src")?,
        dst: address("dst")?,
        protocol: u8::try_from(number("protocol")?).ok()?,
        src_port: u16::try_from(number("src_port")?).ok()?,
        dst_port: u16::try_from(number("dst_port")?).ok()?,
    })
}

/// A hop of `hop_metadata` (records::hop21's form).
fn hop_of(hop: &Value) -> HopMetadata {
    let n = |key: &str| hop[key].as_u64();
    let small = |key: &str| n(key).and_then(|v| u32::try_from(v).ok());
    let pair = |id: &str, occupancy: &str| Some((u8::try_from(n(id)?).ok()?, small(occupancy)?));
    HopMetadata {
        node_id: small("node_id"),
        l1_ingress_port: n("l1_ingress_port").and_then(|v| u16::try_from(v).ok()),
        l1_egress_port: n("l1_egress_port").and_then(|v| u16::try_from(v).ok()),
        hop_latency: small("hop_latency"),
        queue: pair("queue_id", "queue_occupancy"),
        ingress_timestamp: n("ingress_timestamp"),
        egress_timestamp: n("egress_timestamp"),
        l2_ingress_port: small("l2_ingress_port"),
        l2_egress_port: small("l2_egress_port"),
        egress_tx_utilization: small("egress_tx_utilization"),
        buffer: pair("buffer_id", "buffer_occupancy"),
        checksum_complement: small("checksum_complement"),
    }
}
