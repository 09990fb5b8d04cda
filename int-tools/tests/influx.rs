//! collect's InfluxDB writes against what influxd makes of them: hostile
//! node names (a newline, a trailing backslash, line protocol's own
//! separators) stored each once as docs/counters.md says, no point lost
//! and no measurement made up; a partial write counted as influxd stored
//! it; influxd's error text, sent chunked, in collect's log. A real
//! influxd (Debian's influxdb, 1.x) where one is installed; a server of
//! the test's own for the chunked answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use collector::switch_reports;
use files::workdir;
use servers::*;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// collect, run to its end: its summary and everything it said on
/// standard error.
struct Run {
    summary: serde_json::Value,
    said: String,
}

/// collect writing to InfluxDB at `url` with `args`, fed the multi-hop
/// stream ([`switch_reports`]) and ended by `--count`.
fn collect_into(url: &str, args: &[&str]) -> Run {
    let datagrams = switch_reports();
    let count = datagrams.len().to_string();
    let mut child = Command::new(BIN)
        .args(["collect", "--listen", "127.0.0.1:0", "--json", "--quiet", "--interval", "0"])
        .args(["--count", &count, "--duration", "120", "--influx", url])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, said) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|l| lines.send(l).unwrap()));
    let mut stdout = child.stdout.take().unwrap();
    let output = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let listen = said
        .iter()
        .find_map(|line: String| Some(line.split("listening on ").nth(1)?.split(' ').next()?.to_string()))
        .expect("collect says where it listens");
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    assert!(child.wait().unwrap().success());
    let output = output.join().unwrap();
    let summary: serde_json::Value = serde_json::from_str(output.lines().last().unwrap()).unwrap();
    Run { summary: summary["summary"].clone(), said: said.iter().collect::<Vec<_>>().join("\n") }
}

/// influxd on a free port with database `int`, or none where it is not
/// installed.
fn influxd(test: &str) -> Option<(Child, u16)> {
    if !Path::new(INFLUXD).exists() {
        eprintln!("skipped: {INFLUXD} missing (apt-get install influxdb; scripts/install-deps.sh does)");
        return None;
    }
    let dir = workdir(test);
    let port = free_port();
    let influxd = start_influxd(&dir, port, false);
    let (status, text) = http(port, "POST", "/query", "q=CREATE+DATABASE+int").unwrap();
    assert_eq!(status, 200, "{text}");
    Some((influxd, port))
}

/// Every point influxd holds, by measurement (counted by a field every
/// point of ours has; none for a measurement not ours).
fn stored(port: u16) -> Vec<(String, Option<u64>)> {
    let fields = [
        ("int_latency", "latency_ns"),
        ("int_loss", "lost"),
        ("int_hop", "hop_latency"),
        ("int_link", "latency_ns"),
        ("int_path_change", "new_path"),
    ];
    let measurements = influx_query(port, "SHOW MEASUREMENTS");
    let names = measurements.as_array().unwrap().iter().map(|m| m[0].as_str().unwrap().to_string());
    names
        .map(|name| {
            let field = fields.iter().find(|(m, _)| *m == name).map(|(_, f)| f);
            let count = field.and_then(|field| {
                influx_query(port, &format!("SELECT count(\"{field}\") FROM \"{name}\""))[0][1].as_u64()
            });
            (name, count)
        })
        .collect()
}

/// A tag's values in a measurement, sorted.
fn tag_values(port: u16, measurement: &str, key: &str) -> Vec<String> {
    let values = influx_query(port, &format!("SHOW TAG VALUES FROM {measurement} WITH KEY = \"{key}\""));
    let values = values.as_array().into_iter().flatten();
    let mut values: Vec<String> = values.map(|v| v[1].as_str().unwrap().to_string()).collect();
    values.sort();
    values
}

/// Names that line protocol cannot take as they are: a newline that
/// would start a line of its own (a made-up measurement), a trailing
/// backslash that would swallow the separator after it, separators,
/// quotes, a backslash before a comma. Each is stored once, as
/// docs/counters.md says: a newline as the two characters `\n`, a
/// trailing backslash left out, the rest as it is; every point collect
/// counted written is in influxd, no other measurement.
#[test]
fn hostile_names_are_stored_once_each_and_every_point_counted() {
    let Some((mut influxd, port)) = influxd("influx-hostile-names") else { return };
    let dir = workdir("influx-hostile-names-files");
    let names = dir.join("names.yaml");
    std::fs::write(
        &names,
        "nodes:\n  1: \"edge\\nfake_measurement value=1i\"\n  2: \"core b\\\\\"\n  3: \"c,d=e f\"\n  4: \"say \\\"hi\\\" \\\\ there\"\n  9: \"sink\\\\,z\"\n",
    )
    .unwrap();
    let run = collect_into(&format!("http://127.0.0.1:{port}"), &["--names", names.to_str().unwrap()]);
    let stored = stored(port);
    let nodes = tag_values(port, "int_hop", "node_name");
    let links = tag_values(port, "int_link", "from_name");
    let sinks = tag_values(port, "int_latency", "sink_node_name");
    let path = influx_query(port, "SELECT new_path FROM int_path_change");
    let _ = influxd.kill();
    let _ = influxd.wait();
    let measurements: Vec<&str> = stored.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(measurements, ["int_hop", "int_latency", "int_link", "int_path_change"], "{stored:?}");
    let edge = "edge\\nfake_measurement value=1i";
    // Sorted: each once, as written.
    let wanted = ["c,d=e f", "core b", edge, "say \"hi\" \\ there"];
    assert_eq!(nodes, wanted);
    assert_eq!(links, wanted);
    assert_eq!(sinks, ["sink\\,z"]);
    assert_eq!(path[0][1], format!("{edge}>say \"hi\" \\ there>c,d=e f>sink\\,z"), "{path}");
    let influx = &run.summary["influx"];
    assert_eq!((influx["failed"].as_u64(), influx["refused"].as_u64()), (Some(0), Some(0)), "{influx}");
    let total: Option<u64> = stored.iter().map(|(_, n)| *n).sum();
    assert_eq!(influx["written"].as_u64(), total, "{influx} vs {stored:?}");
}

/// influxd stores a batch in part when a field's type conflicts (here
/// `int_link.latency_ns`, once written as a string): it answers 400
/// "partial write: ... dropped=N". collect counts those N refused and the
/// rest written, as influxd stored them, and says influxd's reason.
#[test]
fn a_partial_write_is_counted_as_influxd_stored_it() {
    let Some((mut influxd, port)) = influxd("influx-partial-write") else { return };
    let (status, text) = http(port, "POST", "/write?db=int", "int_link,from=0 latency_ns=\"text\"").unwrap();
    assert_eq!(status, 204, "{text}");
    let run = collect_into(&format!("http://127.0.0.1:{port}"), &[]);
    let stored = stored(port);
    let _ = influxd.kill();
    let _ = influxd.wait();
    let influx = &run.summary["influx"];
    let links = run.summary["links"].as_array().unwrap();
    let link_points: u64 = links.iter().map(|l| l["latency_ns"]["count"].as_u64().unwrap()).sum();
    assert_eq!(influx["refused"].as_u64(), Some(link_points), "{influx}");
    // Ours and the string the test wrote: int_link's count is of that one.
    let total: Option<u64> = stored.iter().filter(|(m, _)| m != "int_link").map(|(_, n)| *n).sum();
    assert_eq!(influx["written"].as_u64(), total, "{influx} vs {stored:?}");
    assert_eq!(influx["failed"].as_u64(), Some(0), "{influx}");
    assert!(run.said.contains("HTTP 400: partial write: field type conflict"), "{}", run.said);
}

/// An InfluxDB of the test's own that answers each write as influxd 1.6
/// answers a long refusal: 400, chunked (1,000 bytes a chunk), every
/// other line named unparsable. collect logs the text (never a chunk's
/// size) and counts the lines named refused and the others written.
#[test]
fn a_chunked_refusal_is_read_and_counted() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (named, lines) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (named_, lines_) = (Arc::clone(&named), Arc::clone(&lines));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let (refused, all) = refuse_every_other_line(&mut stream.unwrap());
            named_.fetch_add(refused, Ordering::Relaxed);
            lines_.fetch_add(all, Ordering::Relaxed);
        }
    });
    let run = collect_into(&url, &[]);
    let influx = &run.summary["influx"];
    let (named, lines) = (named.load(Ordering::Relaxed), lines.load(Ordering::Relaxed));
    assert!(named > 10, "{named} of {lines}");
    assert!(run.said.contains("HTTP 400: partial write: unable to parse 'int_"), "{}", run.said);
    assert_eq!(influx["refused"].as_u64(), Some(named), "{influx}");
    assert_eq!(influx["written"].as_u64(), Some(lines - named), "{influx}");
}

/// Reads one write and answers it as influxd 1.6 answers lines it cannot
/// parse: (lines named, lines in the write).
fn refuse_every_other_line(stream: &mut TcpStream) -> (u64, u64) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let body = String::from_utf8(body).unwrap();
    let refused: Vec<String> = body
        .lines()
        .step_by(2)
        .map(|line| format!("unable to parse '{line}': invalid field format"))
        .collect();
    let error = format!("partial write: {} dropped=0", refused.join("\n"));
    let json = serde_json::json!({ "error": error }).to_string();
    let mut answer = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_string();
    for chunk in json.as_bytes().chunks(1000) {
        answer += &format!("{:x}\r\n{}\r\n", chunk.len(), std::str::from_utf8(chunk).unwrap());
    }
    answer += "0\r\n\r\n";
    stream.write_all(answer.as_bytes()).unwrap();
    (refused.len() as u64, body.lines().count() as u64)
}
