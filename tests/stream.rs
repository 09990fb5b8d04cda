//! Beyond one collector: collectors publish their records to a real NATS
//! JetStream (Debian's nats-server, started and stopped here on a free
//! port), and an aggregating collector reads them back into the same
//! summary one collector fed everything gives; an outage of the server
//! loses only what the bounded buffer could not hold, counted; bad stream
//! contents are counted, not fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::collector::{http_get, start_collect_saying, start_collector, switch_reports};
use common::servers;
use common::servers::free_port;
use common::*;
use serde_json::Value;

const NATS: &str = "/usr/sbin/nats-server";

fn nats_missing() -> bool {
    let missing = !Path::new(NATS).exists();
    if missing {
        eprintln!("skipped: {NATS} missing (apt-get install nats-server; scripts/install-deps.sh does)");
    }
    missing
}

/// nats-server with JetStream, its store and log in `dir`, until
/// JetStream answers (it starts without it, or turns it off, when the
/// store's disk is too full: the log then says so).
fn start_nats(dir: &Path, port: u16) -> Child {
    start_nats_with(dir, port, &[])
}

/// nats-server as `start_nats` starts it, with more `args`.
fn start_nats_with(dir: &Path, port: u16, args: &[&str]) -> Child {
    let child = servers::start_nats(dir, port, args);
    let said = || std::fs::read_to_string(dir.join("nats.log")).unwrap_or_default();
    let account = Raw::connect(port).request("$JS.API.INFO", "");
    assert!(account.get("error").is_none(), "JetStream is off: {account}\n{}", said());
    child
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The stream's size in every test: the default (1 GiB) needs 1.4 GB of
/// free disk where the server keeps its store.
const STREAM_BYTES: &str = "67108864";

/// A collect with `args` fed `datagrams` holding `reports` reports: its
/// JSON lines, the summary last.
fn collect(args: &[&str], datagrams: &[Vec<u8>], reports: usize) -> Vec<Value> {
    let count = reports.to_string();
    let (child, listen) = start_collector(
        &tools_bin(),
        &[&["--quiet", "--count", &count, "--duration", "60", "--nats-max-bytes", STREAM_BYTES], args]
            .concat(),
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in datagrams {
        sender.send_to(datagram, &listen).unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    lines_of(child)
}

fn lines_of(child: Child) -> Vec<Value> {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// What a collect serving metrics on `port` says the stream acknowledged.
fn acked(port: u16) -> u64 {
    let page = servers::http_get(port, "/metrics").unwrap_or_default();
    let line = page.lines().find(|l| l.starts_with("int_collect_nats_records_total{outcome=\"acked\"}"));
    line.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Waits until the collect serving metrics on `port` has `count`
/// datagrams (or records) acknowledged.
fn wait_acked(port: u16, count: u64, what: &str) {
    let started = Instant::now();
    while acked(port) < count {
        assert!(started.elapsed() < Duration::from_secs(60), "{what}: {} acknowledged", acked(port));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An aggregating collect reading `records` records off the stream.
fn aggregate(url: &str, consumer: &str, records: u64) -> Value {
    let output = Command::new(tools_bin())
        .args([
            "collect",
            "--from-nats",
            url,
            "--nats-consumer",
            consumer,
            "--quiet",
            "--json",
            "--interval",
            "0",
            "--nats-max-bytes",
            STREAM_BYTES,
        ])
        .args(["--count", &records.to_string(), "--duration", "60"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["summary"].clone()
}

/// An aggregator's web view (`--from-nats --http`) shows what the
/// collectors publish: every node and link of the switches' reports, and
/// flow 1's path change.
#[test]
fn an_aggregators_web_view_shows_the_fleet() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-view");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let datagrams = switch_reports();
    collect(&["--nats", &url], &datagrams, datagrams.len());
    let args = ["--from-nats", &url, "--quiet", "--http", "127.0.0.1:0", "--nats-max-bytes", STREAM_BYTES];
    let (mut aggregator, view) = start_collect_saying(&tools_bin(), &args, &["view on http://"]);
    let get = |path: &str| serde_json::from_str::<Value>(&http_get(&view[0], path)).unwrap();
    let count = |value: &Value, list: &str| value[list].as_array().map_or(0, Vec::len);
    loop {
        assert!(aggregator.try_wait().unwrap().is_none(), "the aggregator ended");
        let (topology, events) = (get("/api/topology"), get("/api/events"));
        let changed = events["events"].as_array().unwrap().iter().any(|e| e["kind"] == "path_change");
        if count(&topology, "nodes") == 5 && count(&topology, "links") == 5 && changed {
            break;
        }
        std::thread::yield_now();
    }
    stop(aggregator);
    stop(nats);
}

/// Host-INT reports of a real sink (latency and drop summaries), and TR
/// 2.0 reports as switches send them.
fn two_feeds(dir: &Path) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    run_port_exporter_sink(dir, 600);
    (udp_payloads(&dir.join("reports.pcap")), switch_reports())
}

/// Two collectors publish into one stream; an aggregator's summary of the
/// stream equals one collector's fed both feeds: per flow and over all
/// flows, reports, latency percentiles and loss.
#[test]
fn an_aggregator_over_two_collectors_sums_up_as_one_collector() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-aggregate");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let (hostint, tr20) = two_feeds(&dir);
    let individuals: usize =
        tr20.iter().map(|d| int_core::report::tr20::Report::parse(d).unwrap().reports().count()).sum();
    let a = collect(&["--nats", &url], &hostint, hostint.len());
    let b = collect(&["--nats", &url], &tr20, individuals);
    let published: u64 =
        [&a, &b].iter().map(|lines| lines.last().unwrap()["summary"]["reports"].as_u64().unwrap()).sum();
    let acked: u64 = [&a, &b]
        .iter()
        .map(|lines| lines.last().unwrap()["summary"]["nats"]["acked"].as_u64().unwrap())
        .sum();
    assert_eq!(acked as usize, hostint.len() + tr20.len(), "every datagram in the stream");
    let summary = aggregate(&url, "all", published);
    stop(nats);
    let both: Vec<Vec<u8>> = hostint.iter().chain(&tr20).cloned().collect();
    let direct = collect(&[], &both, hostint.len() + individuals);
    let direct = &direct.last().unwrap()["summary"];
    assert!(published > 0);
    assert_eq!(summary["all_flows"], direct["all_flows"], "over all flows");
    assert_eq!(summary["flows"], direct["flows"], "per flow");
    assert_eq!(summary["path_changes"], direct["path_changes"]);
    assert_eq!(summary["malformed"], 0, "{summary}");
}

/// A bare NATS connection for what the test does itself: publish raw
/// messages, ask JetStream for a stream's message count.
struct Raw {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Raw {
    fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut raw = Raw { reader: BufReader::new(stream.try_clone().unwrap()), stream };
        let mut info = String::new();
        raw.reader.read_line(&mut info).unwrap();
        assert!(info.starts_with("INFO"), "{info}");
        write!(raw.stream, "CONNECT {{\"verbose\":false,\"headers\":true}}\r\n").unwrap();
        raw
    }

    fn publish(&mut self, subject: &str, headers: &str, payload: &str) {
        if headers.is_empty() {
            write!(self.stream, "PUB {subject} {}\r\n{payload}\r\n", payload.len()).unwrap();
        } else {
            let block = format!("NATS/1.0\r\n{headers}\r\n\r\n");
            let total = block.len() + payload.len();
            write!(self.stream, "HPUB {subject} {} {total}\r\n{block}{payload}\r\n", block.len()).unwrap();
        }
    }

    /// One request's JSON answer.
    fn request(&mut self, subject: &str, payload: &str) -> Value {
        write!(
            self.stream,
            "SUB _INBOX.test 1\r\nPUB {subject} _INBOX.test {}\r\n{payload}\r\n",
            payload.len()
        )
        .unwrap();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if let Some(rest) = line.strip_prefix("MSG _INBOX.test 1 ") {
                let len: usize = rest.trim().parse().unwrap();
                let mut body = vec![0u8; len + 2];
                self.reader.read_exact(&mut body).unwrap();
                write!(self.stream, "UNSUB 1\r\n").unwrap();
                return serde_json::from_slice(&body[..len]).unwrap();
            }
            if line.starts_with("PING") {
                write!(self.stream, "PONG\r\n").unwrap();
            }
        }
    }

    fn messages(&mut self, stream: &str) -> u64 {
        self.request(&format!("$JS.API.STREAM.INFO.{stream}"), "")["state"]["messages"].as_u64().unwrap_or(0)
    }
}

/// The server stopped mid-run and started again: the collector does not
/// stop, the records before and after reach the stream, and what its
/// bounded buffer could not hold is counted: exactly what the stream
/// lacks. In the JSON format, one record a message, the stream's message
/// count tells; the batch format's outage is the cluster's test
/// (tests/stream_cluster.rs).
#[test]
fn an_outage_of_the_server_loses_only_what_is_counted() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-outage");
    let port = free_port();
    let mut nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let reports: Vec<Vec<u8>> = (1..=600).map(|n| common::collector::drop_summary(n, 1)).collect();
    let count = reports.len().to_string();
    let (child, listen) = start_collector(
        &tools_bin(),
        &[
            "--quiet",
            "--count",
            &count,
            "--duration",
            "120",
            "--nats",
            &url,
            "--nats-buffer",
            "50",
            "--nats-format",
            "json",
            "--nats-max-bytes",
            STREAM_BYTES,
        ],
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |range: std::ops::Range<usize>| {
        for report in &reports[range] {
            sender.send_to(report, &listen).unwrap();
            std::thread::sleep(Duration::from_micros(300));
        }
    };
    // With the server up, records go in 25 at a time, each 25 waited for
    // in the stream: a loaded machine's slow publisher drops nothing
    // there (the buffer is 50), so only the outage can.
    let in_steps = |range: std::ops::Range<usize>| {
        for start in range.clone().step_by(25) {
            let before = Raw::connect(port).messages("INT");
            send(start..(start + 25).min(range.end));
            let started = Instant::now();
            while Raw::connect(port).messages("INT") < before + 25 {
                assert!(started.elapsed() < Duration::from_secs(30), "records {start}.. reach the stream");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    in_steps(0..200);
    stop(nats);
    send(200..500);
    nats = start_nats(&dir, port);
    // Once the collector is back (the buffered 50 are in the stream), the
    // last 100 go straight through.
    let started = Instant::now();
    while Raw::connect(port).messages("INT") < 250 {
        assert!(started.elapsed() < Duration::from_secs(30), "the buffered records reach the stream");
        std::thread::sleep(Duration::from_millis(50));
    }
    in_steps(500..600);
    let lines = lines_of(child);
    let counts = &lines.last().unwrap()["summary"]["nats"];
    let in_stream = Raw::connect(port).messages("INT");
    stop(nats);
    eprintln!("stream outage: {counts}, {in_stream} records in the stream");
    let (acked, dropped, lost) = (
        counts["acked"].as_u64().unwrap(),
        counts["dropped"].as_u64().unwrap(),
        counts["lost"].as_u64().unwrap(),
    );
    assert!(dropped > 0, "the outage outlasted the buffer of 50: {counts}");
    assert_eq!(acked + dropped + lost, 600, "every record acknowledged or counted: {counts}");
    assert_eq!(in_stream, acked, "the stream holds what was acknowledged, each once");
    assert!(
        in_stream >= 200 + 50 + 100,
        "records before, buffered during, and after the outage: {in_stream}"
    );
}

/// Messages in the stream that are not records, or records of another
/// schema, are counted by the aggregator, which goes on.
#[test]
fn bad_stream_contents_are_counted_not_fatal() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-bad");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let reports: Vec<Vec<u8>> = (1..=20).map(|n| common::collector::drop_summary(n, 2)).collect();
    let good = collect(&["--nats", &url], &reports, reports.len());
    assert_eq!(good.last().unwrap()["summary"]["nats"]["acked"], 20);
    let mut raw = Raw::connect(port);
    raw.publish("int.latency.0", "", "not json at all");
    raw.publish("int.latency.0", "Int-Schema: 9", "{\"type\":\"latency\"}");
    raw.publish("int.latency.0", "Int-Schema: 1", "{\"type\":\"unheard-of\"}");
    raw.publish("int.batch.hostint.0", "Int-Format: batch-1", "a batch entry cut short");
    // 20 reports in batches, 4 messages refused (each counts one).
    let summary = aggregate(&url, "checker", 24);
    stop(nats);
    assert_eq!(summary["all_flows"]["lost_packets"], 40, "the 20 records: {summary}");
    let reasons = &summary["malformed_by_reason"];
    assert_eq!(reasons["stream: not a JSON record"], 1, "{summary}");
    assert_eq!(reasons["stream: record schema 9"], 1, "{summary}");
    assert_eq!(reasons["stream: a record of type \"unheard-of\""], 1, "{summary}");
    assert_eq!(reasons["stream: a batch entry cut short"], 1, "{summary}");
}

/// Aggregators under one consumer name share the stream: each record goes
/// to exactly one of them, and together they account for every one.
#[test]
fn aggregators_sharing_a_consumer_share_the_records() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-shared");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let spawn_aggregator = || {
        Command::new(tools_bin())
            .args(["collect", "--from-nats", &url, "--nats-consumer", "shared", "--quiet", "--json"])
            .args(["--interval", "0", "--duration", "300", "--nats-max-bytes", STREAM_BYTES])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let aggregators = [spawn_aggregator(), spawn_aggregator()];
    // Both wait for records before any is published.
    let info = |raw: &mut Raw| raw.request("$JS.API.CONSUMER.INFO.INT.shared", "");
    let started = Instant::now();
    while info(&mut Raw::connect(port))["num_waiting"].as_u64().unwrap_or(0) < 2 {
        assert!(started.elapsed() < Duration::from_secs(60), "both aggregators pull");
        std::thread::sleep(Duration::from_millis(20));
    }
    let reports: Vec<Vec<u8>> = (1..=2000).map(|n| common::collector::drop_summary(n, 3)).collect();
    let published = collect(&["--nats", &url], &reports, reports.len());
    let published = published.last().unwrap()["summary"]["nats"]["acked"].as_u64().unwrap();
    assert_eq!(published, 2000);
    let messages = Raw::connect(port).messages("INT");
    // Every message delivered and acknowledged, then the aggregators stop.
    let started = Instant::now();
    loop {
        let state = info(&mut Raw::connect(port));
        let done = state["delivered"]["stream_seq"] == messages
            && state["num_pending"] == 0
            && state["num_ack_pending"] == 0;
        if done {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the aggregators take every record: {state}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let summaries: Vec<Value> = aggregators
        .into_iter()
        .map(|child| {
            Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
            lines_of(child).last().unwrap()["summary"].clone()
        })
        .collect();
    stop(nats);
    let taken: Vec<u64> = summaries.iter().map(|s| s["reports"].as_u64().unwrap()).collect();
    eprintln!("shared consumer: the aggregators took {taken:?} of {published}");
    assert_eq!(taken.iter().sum::<u64>(), published, "each record once: {taken:?}");
    assert!(taken.iter().all(|n| *n > 0), "both took some: {taken:?}");
    let lost: u64 = summaries.iter().map(|s| s["all_flows"]["lost_packets"].as_u64().unwrap()).sum();
    assert_eq!(lost, 3 * published, "{summaries:?}");
    assert!(summaries.iter().all(|s| s["malformed"] == 0), "{summaries:?}");
}

/// A stream that refuses records (made beforehand holding at most 10,
/// `discard: new`; JSON records, one a message): collect says the server's reason once, counts the
/// refusals, stops on time all the same, and counts what never got in as
/// lost.
#[test]
fn a_stream_that_refuses_records_is_said_counted_and_does_not_hold_collect() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-refusing");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let config = r#"{"name":"INT","subjects":["int.>"],"storage":"file","max_msgs":10,"discard":"new"}"#;
    let made = Raw::connect(port).request("$JS.API.STREAM.CREATE.INT", config);
    assert!(made.get("error").is_none(), "{made}");
    let mut child = Command::new(tools_bin())
        .args(["collect", "--listen", "127.0.0.1:0", "--interval", "0", "--quiet", "--json"])
        .args(["--count", "20", "--duration", "60", "--nats", &url, "--nats-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("listening on ") {
        assert_ne!(stderr.read_line(&mut said).unwrap(), 0, "{said}");
    }
    let listen =
        said.split("listening on ").nth(1).and_then(|rest| rest.split(' ').next()).unwrap().to_string();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for n in 1..=20 {
        sender.send_to(&common::collector::drop_summary(n, 1), &listen).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    }
    let stopped = Instant::now();
    stderr.read_to_string(&mut said).unwrap();
    let lines = lines_of(child);
    let took = stopped.elapsed();
    let in_stream = Raw::connect(port).messages("INT");
    stop(nats);
    let counts = &lines.last().unwrap()["summary"]["nats"];
    eprintln!("refusing stream: {counts} in {took:?}; collect said:\n{said}");
    assert_eq!(in_stream, 10);
    assert_eq!(counts["acked"], 10, "{counts}");
    assert_eq!(counts["lost"], 10, "the refused records, counted at the end: {counts}");
    assert!(counts["refused"].as_u64().unwrap() >= 10, "every refused publish counted: {counts}");
    let reasons: Vec<&str> = said.lines().filter(|l| l.contains("refused a publish")).collect();
    assert_eq!(reasons.len(), 1, "the reason said once: {said}");
    assert!(reasons[0].contains("maximum messages exceeded"), "the server's reason: {said}");
}

/// A server with less room than the stream asks for: collect refuses to
/// start and says what to change.
#[test]
fn a_server_with_too_little_room_is_named_at_start() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-small");
    let port = free_port();
    let config = dir.join("nats.conf");
    std::fs::write(&config, "jetstream { max_file_store: 10485760 }\n").unwrap();
    let nats = start_nats_with(&dir, port, &["-c", config.to_str().unwrap()]);
    let url = format!("nats://127.0.0.1:{port}");
    let output = Command::new(tools_bin())
        .args(["collect", "--listen", "127.0.0.1:0", "--quiet", "--duration", "10", "--nats", &url])
        .output()
        .unwrap();
    stop(nats);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("insufficient storage resources available"), "{said}");
    assert!(said.contains("--nats-max-bytes 1073741824: lower it"), "{said}");
}

/// The server gone before collect stops, and not back: collect ends its
/// patience (5 s) after it stops, with its summary, and counts what the
/// server never acknowledged as lost.
#[test]
fn a_server_gone_at_the_end_does_not_hold_collect() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-gone");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let reports: Vec<Vec<u8>> = (1..=300).map(|n| common::collector::drop_summary(n, 1)).collect();
    let metrics = free_port();
    let metrics_at = format!("127.0.0.1:{metrics}");
    let (mut child, listen) = start_collector(
        &tools_bin(),
        &["--quiet", "--count", "300", "--duration", "60", "--nats", &url, "--nats-max-bytes", STREAM_BYTES]
            .into_iter()
            .chain(["--metrics", &metrics_at])
            .collect::<Vec<_>>(),
    );
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |range: std::ops::Range<usize>| {
        for report in &reports[range] {
            sender.send_to(report, &listen).unwrap();
            std::thread::sleep(Duration::from_micros(300));
        }
    };
    send(0..100);
    wait_acked(metrics, 100, "the first 100 datagrams reach the stream");
    stop(nats);
    // Its count reached, collect stops with the server away.
    send(100..300);
    let sent = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if sent.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("collect still running 60 s after its last report, its server gone");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = sent.elapsed();
    let lines = lines_of(child);
    let counts = &lines.last().unwrap()["summary"]["nats"];
    eprintln!("server gone at the end: {counts}, collect ended {took:?} after its last report");
    let (acked, dropped, lost) = (
        counts["acked"].as_u64().unwrap(),
        counts["dropped"].as_u64().unwrap(),
        counts["lost"].as_u64().unwrap(),
    );
    assert_eq!(acked, 100, "{counts}");
    assert!(lost > 0, "what the server never took is lost: {counts}");
    assert_eq!(acked + dropped + lost, 300, "every record acknowledged or counted: {counts}");
}

/// A record published to the stream as a collector publishes it.
fn publish_record(raw: &mut Raw, record: &str) {
    raw.publish("int.test.0", "Int-Schema: 1", record);
}

/// A drop-summary record of the flow 10.9.9.9:1 > 10.8.8.8:2 with `lost`
/// (JSON text) packets lost.
fn loss_record(lost: &str) -> String {
    let flow = r#"{"src":"10.9.9.9","dst":"10.8.8.8","protocol":17,"src_port":1,"dst_port":2}"#;
    format!(r#"{{"type":"drop-summary","flow":{flow},"source_node":1,"sink_node":2,"lost_packets":{lost}}}"#)
}

/// An aggregating collect with `args`, reading `records` records: its
/// summary.
fn aggregate_with(url: &str, args: &[&str], records: u64) -> Value {
    let output = Command::new(tools_bin())
        .args(["collect", "--from-nats", url, "--quiet", "--json", "--interval", "0"])
        .args(["--nats-max-bytes", STREAM_BYTES, "--count", &records.to_string()])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["summary"].clone()
}

/// A message larger than NATS's default payload (2 MiB, the server
/// allowing 8) and no record among 450 records: counted malformed,
/// acknowledged, and every record after it read, each once.
#[test]
fn an_oversized_message_is_counted_and_the_records_after_it_read() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-oversized");
    let port = free_port();
    let config = dir.join("nats.conf");
    std::fs::write(&config, "max_payload: 8388608\n").unwrap();
    let nats = start_nats_with(&dir, port, &["-c", config.to_str().unwrap()]);
    let url = format!("nats://127.0.0.1:{port}");
    let made = Raw::connect(port).request(
        "$JS.API.STREAM.CREATE.INT",
        r#"{"name":"INT","subjects":["int.>"],"storage":"file","max_bytes":67108864}"#,
    );
    assert!(made.get("error").is_none(), "{made}");
    let mut raw = Raw::connect(port);
    for n in 0..450 {
        if n == 200 {
            raw.publish("int.test.0", "Int-Schema: 1", &"x".repeat(2 << 20));
        }
        publish_record(&mut raw, &loss_record("2"));
    }
    let started = Instant::now();
    while Raw::connect(port).messages("INT") < 451 {
        assert!(started.elapsed() < Duration::from_secs(30), "451 messages in the stream");
        std::thread::sleep(Duration::from_millis(50));
    }
    let summary = aggregate_with(&url, &["--nats-consumer", "big", "--duration", "60"], 451);
    stop(nats);
    let reasons = &summary["malformed_by_reason"];
    assert_eq!(reasons["stream: not a JSON record"], 1, "{summary}");
    assert_eq!(summary["reports"], 451, "{summary}");
    assert_eq!(summary["all_flows"]["lost_packets"], 900, "each record once: {summary}");
}

/// Values no report carries are refused by reason, and book nothing: a
/// loss beyond 32 bits, negative, a fraction or a string; a latency beyond
/// a minute either way; a joined record of more postcards than a
/// receiver joins (64). A 32-bit loss (4294967295) is booked, as a
/// receiver books it.
#[test]
fn values_no_report_carries_are_refused_by_reason() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-absurd");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let made = Raw::connect(port).request(
        "$JS.API.STREAM.CREATE.INT",
        r#"{"name":"INT","subjects":["int.>"],"storage":"file","max_bytes":67108864}"#,
    );
    assert!(made.get("error").is_none(), "{made}");
    let mut raw = Raw::connect(port);
    let losses =
        ["4294967295", "9223372036854775808", "18446744073709551616", "-1", "1e300", "12.5", "\"12\""];
    for lost in losses {
        publish_record(&mut raw, &loss_record(lost));
    }
    let flow = r#"{"src":"10.9.9.9","dst":"10.8.8.8","protocol":17,"src_port":1,"dst_port":2}"#;
    for ns in ["9223372036854775807", "-9223372036854775807", "1000"] {
        publish_record(&mut raw, &format!(r#"{{"type":"latency","flow":{flow},"latency_ns":{ns}}}"#));
    }
    let hops: Vec<String> = (1..=200)
        .map(|n| {
            format!(
                r#"{{"node_id":{n},"hop_latency":10,"ingress_timestamp":{},"egress_timestamp":{}}}"#,
                n * 100,
                n * 100 + 10
            )
        })
        .collect();
    let nodes: Vec<String> = (1..=200).map(|n: u32| n.to_string()).collect();
    publish_record(
        &mut raw,
        &format!(
            r#"{{"type":"joined","flow":{flow},"nodes":[{}],"ordered":true,"complete":true,"path":[{}],"hop_metadata":[{}]}}"#,
            nodes.join(","),
            nodes.join(","),
            hops.join(",")
        ),
    );
    assert_eq!(raw.messages("INT"), 11);
    let summary = aggregate_with(&url, &["--nats-consumer", "absurd", "--duration", "60"], 11);
    stop(nats);
    assert_eq!((&summary["reports"], &summary["malformed"]), (&11.into(), &9.into()));
    let reasons = &summary["malformed_by_reason"];
    let all = &summary["all_flows"];
    let summary = format!("{reasons} {all} nodes: {}", summary["nodes"].as_array().map_or(0, Vec::len));
    assert_eq!(reasons["stream: lost_packets out of range"], 2, "2^63 and -1: {summary}");
    assert_eq!(reasons["stream: lost_packets not an integer"], 4, "2^64, 1e300, 12.5, \"12\": {summary}");
    assert_eq!(reasons["stream: latency_ns out of range"], 2, "{summary}");
    assert_eq!(reasons["stream: hop_metadata over 64 hops"], 1, "{summary}");
    assert_eq!(all["lost_packets"], 4_294_967_295u64, "{summary}");
    assert_eq!((&all["latency_min_ns"], &all["latency_max_ns"]), (&1000.into(), &1000.into()), "{summary}");
    assert!(summary.ends_with("nodes: 0"), "{summary}");
}

/// An aggregator counts the reports a receiving collector counted, and
/// books what it booked (every flow, node, link and path), in either
/// format: batches of the datagrams as they came, or JSON records read
/// back into the record types (the path change records the collector
/// published beside them are no reports).
#[test]
fn an_aggregator_counts_the_reports_its_collector_counted() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-counts");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    let mut datagrams = switch_reports();
    let individuals: usize =
        datagrams.iter().map(|d| int_core::report::tr20::Report::parse(d).unwrap().reports().count()).sum();
    // Host-INT's drop summaries beside: each record type's books.
    datagrams.extend((1..=5).map(|n| common::collector::drop_summary(n, 3)));
    let individuals = individuals + 5;
    for format in ["batch", "json"] {
        let stream = format!("INT-{format}");
        let prefix = format!("int-{format}");
        let on = ["--nats-stream", stream.as_str(), "--nats-prefix", prefix.as_str()];
        let lines =
            collect(&[&["--nats", &url, "--nats-format", format], &on[..]].concat(), &datagrams, individuals);
        let collector = &lines.last().unwrap()["summary"];
        let published = collector["nats"]["acked"].as_u64().unwrap();
        let reports = collector["reports"].as_u64().unwrap();
        let args = [&["--nats-consumer", "counts", "--duration", "60"], &on[..]].concat();
        let summary = aggregate_with(&url, &args, reports);
        eprintln!(
            "{format}: the collector {reports} reports, the aggregator {} ({published} published)",
            summary["reports"]
        );
        assert!(collector["path_changes"].as_u64().unwrap() > 0, "path changes among the reports");
        let expected =
            if format == "json" { published > reports } else { published == datagrams.len() as u64 };
        assert!(expected, "{format}: {published} published of {reports} reports");
        let books = ["flows", "untracked_observations", "paths_followed"];
        for key in
            ["reports", "malformed", "path_changes", "all_flows", "nodes", "links"].iter().chain(&books)
        {
            assert_eq!(summary[key], collector[key], "{format}: {key}");
        }
    }
    stop(nats);
}

/// Packet `i` of one UDP flow as a node saw it (IP header on).
fn flow_packet(i: u32) -> Vec<u8> {
    let mut spec =
        int_core::craft::PacketSpec::udp([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1000, 5000, 16);
    spec.ident = i as u16;
    spec.build()[14..].to_vec()
}

/// Postcards of one packet that reach two different receiving collectors
/// are joined by the aggregator: nodes 1 and 2 report to one collector,
/// nodes 3 and 4 to the other; 40 packets a millisecond apart, the first
/// 20 through 1, 2, 3, the rest through 1, 4, 3. Each receiver sees part
/// of every path; the aggregator sees the whole of each and exactly the
/// one path change, whether the far nodes' export keeps pace or lags
/// 50 ms behind the near ones'.
#[test]
fn postcards_at_two_collectors_join_at_the_aggregator() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-postcards");
    let port = free_port();
    let nats = start_nats(&dir, port);
    let url = format!("nats://127.0.0.1:{port}");
    for lag in [0usize, 50] {
        let (receivers, summary) = postcards_through_two_collectors(&url, lag);
        let near: Vec<(u64, u64, u64)> = links_of(&receivers[0]);
        assert_eq!(near, [(1, 2, 20)], "lag {lag} ms: the near collector sees nodes 1 and 2 only");
        let all = links_of(&summary);
        assert_eq!(all, [(1, 2, 20), (1, 4, 20), (2, 3, 20), (4, 3, 20)], "lag {lag} ms: {summary}");
        assert_eq!(summary["path_changes"], 1, "lag {lag} ms: {summary}");
        assert_eq!(summary["postcards"]["incomplete"], 0, "lag {lag} ms: {}", summary["postcards"]);
    }
    stop(nats);
}

/// A summary's links: (from, to, latencies), sorted.
fn links_of(summary: &Value) -> Vec<(u64, u64, u64)> {
    let mut links: Vec<(u64, u64, u64)> = summary["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["from"].as_u64().unwrap(),
                l["to"].as_u64().unwrap(),
                l["latency_ns"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    links.sort_unstable();
    links
}

/// The 40 packets' postcards through two receiving collectors publishing
/// to a stream of their own, the far nodes' (3, 4) sent `lag` ms after
/// the near ones' (1, 2), a packet every millisecond; then an aggregator
/// over the stream. The receivers' summaries, and the aggregator's.
fn postcards_through_two_collectors(url: &str, lag: usize) -> (Vec<Value>, Value) {
    let start_ns = 1_700_000_000_000_000_000u64;
    let (mut near, mut far) = (Vec::new(), Vec::new());
    for i in 0..40u32 {
        let path = if i < 20 { [1, 2, 3] } else { [1, 4, 3] };
        let (mut n, mut f) = (Vec::new(), Vec::new());
        for (hop, node) in path.into_iter().enumerate() {
            let ingress = start_ns + u64::from(i) * 1_000_000 + hop as u64 * 10_000;
            let card = common::collector::postcard_report(node, i, &flow_packet(i), ingress, ingress + 1000);
            if node <= 2 {
                n.push(card)
            } else {
                f.push(card)
            }
        }
        near.push(n);
        far.push(f);
    }
    let (stream, prefix) = (format!("CARDS{lag}"), format!("cards{lag}"));
    let on =
        ["--nats", url, "--nats-stream", &stream, "--nats-prefix", &prefix, "--nats-max-bytes", STREAM_BYTES];
    let start = |count: usize| {
        let count = count.to_string();
        start_collector(
            &tools_bin(),
            &[&["--quiet", "--count", &count, "--duration", "60"], &on[..]].concat(),
        )
    };
    let ((a, a_at), (b, b_at)) = (start(near.iter().flatten().count()), start(far.iter().flatten().count()));
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for step in 0..40 + lag {
        for card in near.get(step).into_iter().flatten() {
            sender.send_to(card, &a_at).unwrap();
        }
        for card in step.checked_sub(lag).and_then(|i| far.get(i)).into_iter().flatten() {
            sender.send_to(card, &b_at).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let receivers: Vec<Value> =
        [a, b].into_iter().map(|c| lines_of(c).last().unwrap()["summary"].clone()).collect();
    let reports: u64 = receivers.iter().map(|s| s["reports"].as_u64().unwrap()).sum();
    assert_eq!(reports, 120);
    let args = [
        "--nats-consumer",
        "postcards",
        "--nats-stream",
        &stream,
        "--nats-prefix",
        &prefix,
        "--duration",
        "60",
    ];
    (receivers, aggregate_with(url, &args, reports))
}

/// A CA and a certificate for 127.0.0.1 signed by it, in `dir` (openssl):
/// `ca.pem`, `server.pem`, `server.key`.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| {
        let output = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
}

/// A server that speaks only TLS and takes one user: collect publishes
/// with the server's CA (--nats-ca) and the user in the URL; without the
/// CA, or with a wrong password, it refuses to start and says why.
#[test]
fn tls_and_a_user_are_what_the_server_asks() {
    if nats_missing() {
        return;
    }
    let dir = workdir("stream-tls");
    let _ = std::fs::remove_dir_all(dir.join("store"));
    certificates(&dir);
    let config = dir.join("nats.conf");
    let text = format!(
        "tls {{ cert_file: \"{0}/server.pem\", key_file: \"{0}/server.key\" }}\n\
         authorization {{ user: int, password: s3cret }}\n",
        dir.display()
    );
    std::fs::write(&config, text).unwrap();
    let port = free_port();
    let nats = servers::start_nats(&dir, port, &["-c", config.to_str().unwrap()]);
    let ca = dir.join("ca.pem");
    let ca = ca.to_str().unwrap();
    let try_collect = |url: &str, ca: Option<&str>| {
        let mut command = Command::new(tools_bin());
        command.args([
            "collect",
            "--listen",
            "127.0.0.1:0",
            "--quiet",
            "--json",
            "--interval",
            "0",
            "--duration",
            "3",
        ]);
        command.args(["--nats", url, "--nats-max-bytes", STREAM_BYTES]);
        if let Some(ca) = ca {
            command.args(["--nats-ca", ca]);
        }
        command.output().unwrap()
    };
    let good = format!("tls://int:s3cret@127.0.0.1:{port}");
    let published = try_collect(&good, Some(ca));
    let without_ca = try_collect(&good, None);
    let wrong = try_collect(&format!("tls://int:wrong@127.0.0.1:{port}"), Some(ca));
    stop(nats);
    let said = |output: &std::process::Output| String::from_utf8_lossy(&output.stderr).to_string();
    assert!(published.status.success(), "{}", said(&published));
    assert!(said(&published).contains("publishing to NATS JetStream"), "{}", said(&published));
    assert!(!without_ca.status.success(), "a server's certificate of an unknown CA is refused");
    assert!(said(&without_ca).contains("tls://int:s3cret@127.0.0.1"), "{}", said(&without_ca));
    assert!(!wrong.status.success(), "a wrong password is refused");
    assert!(said(&wrong).to_lowercase().contains("author"), "{}", said(&wrong));
}
