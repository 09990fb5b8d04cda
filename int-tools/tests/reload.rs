//! SIGHUP with `--config`: the edited file takes effect live (new names,
//! an exporter started) without losing a booked report, a change that
//! needs a restart is named and kept, and a file with problems is said
//! problem by problem while collect goes on with the settings before.
//! The real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;
#[path = "../../tests/common/running.rs"]
mod running;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use files::workdir;
use running::Collect;

/// An IPFIX message (version 10) on `socket`; the read timeout only
/// bounds a failure.
fn ipfix_message(socket: &UdpSocket) -> Vec<u8> {
    let mut buffer = vec![0; 65_536];
    let (len, _) = socket.recv_from(&mut buffer).expect("an IPFIX message");
    buffer.truncate(len);
    assert_eq!(buffer[..2], [0, 10], "IPFIX version 10");
    buffer
}

/// Every datagram already on `socket`, dropped.
fn drain(socket: &UdpSocket) {
    socket.set_nonblocking(true).unwrap();
    let mut buffer = vec![0; 65_536];
    while socket.recv_from(&mut buffer).is_ok() {}
    socket.set_nonblocking(false).unwrap();
}

/// The file edited to name nodes anew and export IPFIX to a socket the
/// test owns, SIGHUP: the next records carry the new name, IPFIX messages
/// come, the new listen address is said to need a restart and kept (the
/// reports still arrive on the old one). Then a file with two problems:
/// both said with their paths, collect goes on exporting with the
/// settings before. At exit the books hold every report sent.
#[test]
fn sighup_applies_the_edited_file_and_keeps_the_books() {
    let dir = workdir("reload-config");
    std::fs::write(dir.join("names-a.yaml"), "nodes: {2: old-two}\n").unwrap();
    std::fs::write(dir.join("names-b.yaml"), "nodes: {2: new-two}\n").unwrap();
    let config = dir.join("collect.yaml");
    let first =
        "listen: {address: 127.0.0.1:0}\nnames: names-a.yaml\nstdout: {json: true, summary_interval_s: 0}\n";
    std::fs::write(&config, first).unwrap();
    let ipfix = UdpSocket::bind("127.0.0.1:0").unwrap();
    ipfix.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let target = ipfix.local_addr().unwrap();

    let mut collect = Collect::start(&["--config", config.to_str().unwrap()]);
    let listen = collect.address("listening on ");
    let reports = collector::switch_reports();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(&reports[0], &listen).unwrap();
    collect.printed("\"old-two\"");

    let second = format!(
        "listen: {{address: 127.0.0.1:1}}\nnames: names-b.yaml\nstdout: {{json: true, summary_interval_s: 0}}\n\
         ipfix: {{url: udp://{target}, interval_s: 0.1}}\n"
    );
    std::fs::write(&config, second).unwrap();
    collect.signal("-HUP");
    let restart = collect.said("needs a restart");
    assert!(restart.contains("--listen needs a restart; kept"), "{restart}");
    collect.said("reloaded --names");
    collect.said("IPFIX started");
    collect.said("read --config");
    sender.send_to(&reports[1], &listen).unwrap();
    let record: serde_json::Value = serde_json::from_str(&collect.printed("\"new-two\"")).unwrap();
    assert_eq!(record["hop_metadata"][1]["node_id_name"], "new-two", "{record}");
    ipfix_message(&ipfix);

    std::fs::write(&config, "ipfix: {url: udp://127.0.0.1:9, intervl_s: 1}\nbogus: 1\n").unwrap();
    collect.signal("-HUP");
    collect.said("keeping the settings before");
    assert!(collect.heard().contains("ipfix.intervl_s: unknown key"), "{}", collect.heard());
    assert!(collect.heard().contains("bogus: unknown key"), "{}", collect.heard());
    drain(&ipfix);
    sender.send_to(&reports[2], &listen).unwrap();
    collect.printed("\"new-two\"");
    ipfix_message(&ipfix);

    let (out, said) = collect.stop();
    let summary: serde_json::Value = serde_json::from_str(out.last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["reports"], 3, "{said}");
    assert!(
        summary["summary"].to_string().contains("ipfix"),
        "the summary counts the new exporter: {summary}"
    );
}

/// A stand-in for InfluxDB: every write's request line (`POST
/// /write?db=...`), answered 204.
fn fake_influx() -> (String, Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (send, writes) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let send = send.clone();
            std::thread::spawn(move || answer_writes(stream.unwrap(), &send));
        }
    });
    (url, writes)
}

/// The request on `stream` read whole and answered 204 (the connection
/// closed, as the writer expects), its request line sent on.
fn answer_writes(mut stream: TcpStream, send: &Sender<String>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).unwrap_or(0) == 0 {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let _ = send.send(request.trim_end().to_string());
    let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

/// The first write whose request line has `text`.
fn written(writes: &Receiver<String>, text: &str) -> String {
    loop {
        let line = writes.recv_timeout(Duration::from_secs(60)).expect("a write to InfluxDB");
        if line.contains(text) {
            return line;
        }
    }
}

/// The InfluxDB keys edited (another database), SIGHUP: the writer is
/// restarted and the next report is written into the new database;
/// stdout turned quiet prints no more records. The keys removed, SIGHUP:
/// the writer stops, the summary at exit (`run.count`: the third report)
/// counts no InfluxDB and every report sent.
#[test]
fn sighup_restarts_and_stops_an_exporter_and_quiets_stdout() {
    let dir = workdir("reload-influx");
    let (url, writes) = fake_influx();
    let config = dir.join("collect.yaml");
    let keys = |db: &str, quiet: bool| {
        let influx =
            if db.is_empty() { String::new() } else { format!("influx: {{url: \"{url}\", db: {db}}}\n") };
        format!(
            "listen: {{address: 127.0.0.1:0}}\nrun: {{count: 3}}\n\
             stdout: {{json: true, quiet: {quiet}, summary_interval_s: 0}}\n{influx}"
        )
    };
    std::fs::write(&config, keys("one", false)).unwrap();
    let mut collect = Collect::start(&["--config", config.to_str().unwrap()]);
    let listen = collect.address("listening on ");
    let reports = collector::switch_reports();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(&reports[0], &listen).unwrap();
    collect.printed("\"hop_metadata\"");
    written(&writes, "db=one");

    std::fs::write(&config, keys("two", true)).unwrap();
    collect.signal("-HUP");
    collect.said("InfluxDB restarted with its new settings");
    collect.said("read --config");
    sender.send_to(&reports[1], &listen).unwrap();
    written(&writes, "db=two");

    std::fs::write(&config, keys("", true)).unwrap();
    collect.signal("-HUP");
    collect.said("InfluxDB stopped");
    collect.said("read --config");
    sender.send_to(&reports[2], &listen).unwrap();

    // --count 3: collect ends once it booked the third report.
    let (out, said) = collect.ended();
    assert_eq!(out.len(), 1, "quiet: the summary only, no record: {out:?}");
    let summary: serde_json::Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(summary["summary"]["reports"], 3, "{said}");
    assert!(summary["summary"]["influx"].is_null(), "no InfluxDB counted: {summary}");
}

/// One report of a three-hop stack whose middle hop (node 2, queue 3)
/// holds `occupancy`, at `ms` after an arbitrary start.
fn queue_report(sequence: u32, ms: u64, occupancy: u32) -> Vec<u8> {
    let t = 1_700_000_000_000_000_000 + ms * 1_000_000;
    let hop = |node: u32, at: u64, queue: (u8, u32)| int_core::int21::HopMetadata {
        node_id: Some(node),
        hop_latency: Some(500),
        queue: Some(queue),
        ingress_timestamp: Some(at),
        egress_timestamp: Some(at + 500),
        ..int_core::int21::HopMetadata::default()
    };
    let stack = [hop(3, t + 20_000, (0, 5)), hop(2, t + 10_000, (3, occupancy)), hop(1, t, (0, 5))];
    collector::stack_report(sequence, 9, 7, &stack, t + 30_000)
}

/// The congestion thresholds reload: a rise to 600 under the file's 1000
/// is no episode; SIGHUP with 500, the same rise is one, closed by the fall;
/// a new number of queues is said to need a restart and kept.
#[test]
fn sighup_applies_new_congestion_thresholds_to_the_figures_after_it() {
    let dir = workdir("reload-congestion");
    let config = dir.join("collect.yaml");
    let file = |occupancy: u32, queues: u32| {
        format!(
            "listen: {{address: 127.0.0.1:0}}\nstdout: {{json: true, summary_interval_s: 0}}\n\
             congestion: {{occupancy: {occupancy}, queues: {queues}}}\n"
        )
    };
    std::fs::write(&config, file(1000, 1024)).unwrap();
    let mut collect = Collect::start(&["--config", config.to_str().unwrap()]);
    let listen = collect.address("listening on ");
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rise_and_fall = |first: u32, ms: u64| {
        for (n, occupancy) in [600, 600, 600, 40].into_iter().enumerate() {
            sender.send_to(&queue_report(first + n as u32, ms + n as u64, occupancy), &listen).unwrap();
        }
    };
    rise_and_fall(0, 0);
    collect.printed("\"report_seq\":3");

    std::fs::write(&config, file(500, 10)).unwrap();
    collect.signal("-HUP");
    let restart = collect.said("needs a restart");
    assert!(restart.contains("--congestion-queues needs a restart; kept"), "{restart}");
    collect.said("congestion thresholds applied");
    collect.said("read --config");
    rise_and_fall(4, 100);
    let episode: serde_json::Value =
        serde_json::from_str(&collect.printed("\"type\":\"congestion\"")).unwrap();
    assert_eq!((episode["node"].as_u64(), episode["queue_id"].as_u64()), (Some(2), Some(3)), "{episode}");
    assert_eq!(episode["peak_occupancy"], 600, "{episode}");

    let (out, said) = collect.stop();
    let summary: serde_json::Value = serde_json::from_str(out.last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["reports"], 8, "{said}");
    assert_eq!(summary["summary"]["congestion"]["episodes"], 1, "{said}");
}
