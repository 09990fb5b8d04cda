//! int-tools from the tests' side: a command run to its end, a collector
//! (int-tools collect) on loopback, and hand-made reports for it. Shared
//! by int-node's and int-tools' end-to-end tests, each passing its path to
//! the binary (int-node's tests find it beside int-node, int-tools' from
//! Cargo).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};

use int_core::flow::FlowKey;
use int_core::report::{DropSummaryReport, DropSummaryRepr, ReportHeaderRepr};

/// Runs int-tools at `tools` with `args` in `dir`; asserts it succeeds and
/// returns its standard output.
pub fn int_tools_in(tools: &Path, dir: &Path, args: &[&str]) -> String {
    let output = Command::new(tools).args(args).current_dir(dir).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Starts `collect --json` on a free loopback port with `extra` arguments;
/// returns it (listening) and its address.
pub fn start_collector(tools: &Path, extra: &[&str]) -> (std::process::Child, String) {
    start_collect(tools, &[&["--json"], extra].concat())
}

/// Starts `collect` on a free loopback port (IPv4, unless `args` give a
/// `--listen`) with `args` (text unless they say `--json`); returns it
/// (listening) and its address.
pub fn start_collect(tools: &Path, args: &[&str]) -> (std::process::Child, String) {
    let (child, mut said) = start_collect_saying(tools, args, &["listening on "]);
    (child, said.remove(0))
}

/// [`start_collect`], reading what collect says until it has named an
/// address after each of `words` (`"listening on "`, `"view on http://"`,
/// ...: servers on port 0); returns them in that order.
pub fn start_collect_saying(
    tools: &Path,
    args: &[&str],
    words: &[&str],
) -> (std::process::Child, Vec<String>) {
    // Port 0: the collector takes a free port itself and says which (a port
    // found free here could be taken by another test before it binds).
    let listen: &[&str] = if args.contains(&"--listen") { &[] } else { &["--listen", "127.0.0.1:0"] };
    let mut child = Command::new(tools)
        .args(["collect", "--interval", "0"])
        .args(listen)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut found: Vec<Option<String>> = vec![None; words.len()];
    let mut said = String::new();
    while found.iter().any(Option::is_none) {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).unwrap();
        said.push_str(&line);
        assert!(read > 0, "collect ended before it said {words:?}: {said}");
        for (word, address) in words.iter().zip(&mut found) {
            let after = line.split(word).nth(1).and_then(|rest| rest.split([' ', '/']).next());
            *address = address.take().or_else(|| after.map(str::to_string));
        }
    }
    // Keep reading what it says later (a closed pipe would end it), into
    // the test's output: a failing test shows why the collector failed.
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
    (child, found.into_iter().flatten().collect())
}

/// Where a browser test's screenshots go: `INT_VIEW_SHOTS`, a folder of
/// the repository (docs/view refreshes the docs' ones), else `fallback`
/// under target/. `manifest` is the test's crate's folder.
pub fn shots_dir(manifest: &str, fallback: std::path::PathBuf) -> std::path::PathBuf {
    let dir = match std::env::var_os("INT_VIEW_SHOTS") {
        Some(dir) => Path::new(manifest).join("..").join(dir),
        None => fallback,
    };
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The body of `GET path` from the HTTP server at `server` (collect's
/// view or metrics).
pub fn http_get(server: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(server).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The collector's closing summary (the last JSON line).
pub fn summary_of(child: std::process::Child) -> serde_json::Value {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let last = text.lines().last().unwrap();
    serde_json::from_str::<serde_json::Value>(last).unwrap()["summary"].clone()
}

/// The links of a collector's summary: (from, to, count).
pub fn link_counts(summary: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    let links = summary["links"].as_array().unwrap().iter();
    links
        .map(|l| {
            (
                l["from"].as_u64().unwrap(),
                l["to"].as_u64().unwrap(),
                l["latency_ns"]["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A Drop-Summary report from node 1 to node 2 for one UDP flow.
pub fn drop_summary(sequence: u32, gap_count: u32) -> Vec<u8> {
    let report = DropSummaryReport {
        header: ReportHeaderRepr::drop_summary(sequence, 1_700_000_000, 0),
        summary: DropSummaryRepr {
            source_node: 1,
            sink_node: 2,
            gap_sequence: 100,
            gap_count,
            ..Default::default()
        },
        flow: FlowKey::v4(Ipv4Addr::new(10, 9, 9, 9), Ipv4Addr::new(10, 8, 8, 8), 17, 1, 2),
    };
    let mut buf = [0u8; 64];
    let len = report.emit(&mut buf).unwrap();
    buf[..len].to_vec()
}

/// A bottleneck queue's occupancy at `ms`: 40 when calm, rising 100 a
/// millisecond while a burst lasts (one from each of `bursts`, ms, for
/// `burst_ms`), draining 200 a millisecond after.
pub fn burst_occupancy(ms: u64, bursts: &[u64], burst_ms: u64) -> u32 {
    let mut level = 40i64;
    for &start in bursts {
        let end = start + burst_ms - 1;
        if (start..=end).contains(&ms) {
            level = 40 + 100 * (ms - start) as i64;
        } else if ms > end {
            let peak = 40 + 100 * (burst_ms - 1) as i64;
            level = level.max(peak - 200 * (ms - end) as i64);
        }
    }
    level.max(40) as u32
}

/// One Telemetry Report 2.0 datagram of sink `sink`, group sequence
/// `sequence`: a UDP packet 10.0.0.1:`port` > 10.0.0.2:5000 whose INT 2.1
/// stack holds `stack` (newest hop first), the sink's ingress at `sink_in`.
pub fn stack_report(
    sequence: u32,
    sink: u32,
    port: u16,
    stack: &[int_core::int21::HopMetadata],
    sink_in: u64,
) -> Vec<u8> {
    use int_core::int21::Instructions;
    let instructions = Instructions::NODE_ID
        | Instructions::HOP_LATENCY
        | Instructions::QUEUE_OCCUPANCY
        | Instructions::INGRESS_TIMESTAMP
        | Instructions::EGRESS_TIMESTAMP;
    stack_report_of(sequence, sink, port, stack, sink_in, (instructions, 7))
}

/// [`stack_report`] with the stack's instruction bitmap and hop length in
/// words (`bitmap`): e.g. node id, ports, hop latency and queue, no
/// timestamps (4 words), as many fabrics send.
pub fn stack_report_of(
    sequence: u32,
    sink: u32,
    port: u16,
    stack: &[int_core::int21::HopMetadata],
    sink_in: u64,
    bitmap: (int_core::int21::Instructions, u8),
) -> Vec<u8> {
    let flow = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), port, 5000);
    udp_stack_report(sequence, sink, flow, stack, sink_in, bitmap)
}

/// [`stack_report_of`] for the UDP flow `(src, dst, sport, dport)`.
pub fn udp_stack_report(
    sequence: u32,
    sink: u32,
    (src, dst, sport, dport): (Ipv4Addr, Ipv4Addr, u16, u16),
    stack: &[int_core::int21::HopMetadata],
    sink_in: u64,
    bitmap: (int_core::int21::Instructions, u8),
) -> Vec<u8> {
    use int_core::craft::PacketSpec;
    use int_core::int21::{emit_md_block, HopMetadata, MdHeaderRepr, Next};
    use int_core::report::tr20::*;
    let (instructions, hop_ml) = bitmap;
    let header = MdHeaderRepr { hop_ml, remaining_hop_cnt: 5, instructions, ..MdHeaderRepr::default() };
    let mut block = [0u8; 256];
    let len = emit_md_block(&mut block, Next::Dscp(0), &header, stack, &[]).unwrap();
    let mut packet = PacketSpec::udp(src, dst, sport, dport, 32).build()[14..].to_vec();
    packet.splice(28..28, block[..len].iter().copied());
    packet[1] = 0x17 << 2;
    let total = packet.len() as u16;
    packet[2..4].copy_from_slice(&total.to_be_bytes());
    packet[24..26].copy_from_slice(&(total - 20).to_be_bytes());
    let metadata = HopMetadata {
        l1_ingress_port: Some(1),
        l1_egress_port: Some(2),
        ingress_timestamp: Some(sink_in),
        egress_timestamp: Some(sink_in),
        ..HopMetadata::default()
    };
    let int = IntContents { rep_md_bits: 0x4c00, metadata, ..IntContents::default() };
    tr20_report(sequence, sink, InType::Ipv4, &packet, int)
}

/// One report of flow `port` over `path` (source first, the sink last),
/// each hop with node id, hop latency, queue and timestamps.
pub fn path_report(sequence: u32, port: u16, path: &[u32]) -> Vec<u8> {
    use int_core::int21::HopMetadata;
    let (sink, hops) = path.split_last().unwrap();
    let stack: Vec<HopMetadata> = hops
        .iter()
        .enumerate()
        .rev()
        .map(|(i, node)| {
            let t = 1_000_000 + i as u64 * 10_000 + u64::from(port) * 10;
            HopMetadata {
                node_id: Some(*node),
                hop_latency: Some(1000 + u32::from(port) * 7),
                queue: Some((0, 3)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(t + 1000 + u64::from(port) * 7),
                ..HopMetadata::default()
            }
        })
        .collect();
    stack_report(sequence, *sink, port, &stack, 1_000_000 + hops.len() as u64 * 10_000)
}

/// Sink `sink`'s Telemetry Report 2.0 loss report (domain 0x4944,
/// collect's default): `count` packets of stack_report's flow from UDP
/// port `port` lost.
pub fn loss_report(sequence: u32, sink: u32, port: u16, count: u32) -> Vec<u8> {
    use int_core::report::tr20::GroupHeaderRepr;
    use int_core::report::tr20_loss::LossReport;
    let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, port, 5000);
    let loss = LossReport {
        flow,
        first_sequence: 100,
        count,
        source_node: None,
        declared_ns: 1_700_000_000_000_000_000,
    };
    let mut datagram = vec![0u8; 512];
    let mut len = GroupHeaderRepr { hw_id: 0, sequence, node_id: sink }.emit(&mut datagram).unwrap();
    len += loss.emit(0x4944, &mut datagram[len..]).unwrap();
    datagram.truncate(len);
    datagram
}

/// A Telemetry Report 2.0 datagram: group header, one individual report.
pub fn tr20_report(
    sequence: u32,
    sink: u32,
    in_type: int_core::report::tr20::InType,
    inner: &[u8],
    int: int_core::report::tr20::IntContents<'_>,
) -> Vec<u8> {
    use int_core::report::tr20::*;
    let mut payload = vec![0u8; 512];
    let mut len = GroupHeaderRepr { hw_id: 0, sequence, node_id: sink }.emit(&mut payload).unwrap();
    let individual = IndividualReport {
        in_type,
        int: Some(int),
        inner,
        flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
        ..IndividualReport::default()
    };
    len += individual.emit(&mut payload[len..]).unwrap();
    payload.truncate(len);
    payload
}

/// Telemetry Report 2.0 datagrams as INT 2.1 switches send them: a sink
/// (node 9) reports three flows (UDP ports 1-3 to 5000) over nodes 1 > 2 >
/// 3, 20 rounds, node 2's hop latency rising from 4 µs to 90 µs and its
/// queue from 0 to 950; from round 10 flow 1 goes 1 > 4 > 3. Then node 2
/// reports 5 drops (reason 71) of a UDP packet to port 7777.
pub fn switch_reports() -> Vec<Vec<u8>> {
    use int_core::craft::PacketSpec;
    use int_core::int21::HopMetadata;
    use int_core::report::tr20::*;
    // Hop n of a path, its times from `t`: in at t + 10 µs x position,
    // out after its latency; 1 µs on each link, 2.5 µs to the sink.
    let hop = |node: u32, position: u64, latency: u32, queue: u32, t: u64| HopMetadata {
        node_id: Some(node),
        hop_latency: Some(latency),
        queue: Some((0, queue)),
        ingress_timestamp: Some(t + position * 100_000),
        egress_timestamp: Some(t + position * 100_000 + u64::from(latency)),
        ..HopMetadata::default()
    };
    let mut datagrams = Vec::new();
    for round in 0..20u32 {
        for port in 1..=3u16 {
            let t = 1_000_000 * u64::from(round) + 10_000 * u64::from(port);
            let middle = if port == 1 && round >= 10 { 4 } else { 2 };
            let latency = if middle == 2 { 4000 + 86_000 * round / 19 } else { 3000 };
            // Newest first: hop 3, the middle one, hop 1.
            let first = hop(1, 0, 1000, 0, t);
            let second = HopMetadata {
                ingress_timestamp: Some(first.egress_timestamp.unwrap() + 1000),
                egress_timestamp: Some(first.egress_timestamp.unwrap() + 1000 + u64::from(latency)),
                ..hop(middle, 1, latency, round * 50, t)
            };
            let third = HopMetadata {
                ingress_timestamp: Some(second.egress_timestamp.unwrap() + 1000),
                egress_timestamp: Some(second.egress_timestamp.unwrap() + 1000 + 500),
                ..hop(3, 2, 500, 1, t)
            };
            let sink_in = third.egress_timestamp.unwrap() + 2500;
            datagrams.push(stack_report(
                datagrams.len() as u32 + 1,
                9,
                port,
                &[third, second, first],
                sink_in,
            ));
        }
    }
    // Node 2's drops: a plain UDP packet's first bytes, reason 71.
    let dropped = PacketSpec::udp([10, 0, 0, 5].into(), [10, 0, 0, 2].into(), 4444, 7777, 200).build()
        [14..14 + 64]
        .to_vec();
    for i in 0..5u32 {
        let int = IntContents {
            rep_md_bits: DROP_BIT,
            drop: Some(DropInfo { queue_id: 3, reason: 71 }),
            ..IntContents::default()
        };
        datagrams.push(tr20_report(i + 1, 2, InType::Ipv4, &dropped, int));
    }
    datagrams
}

/// One Telemetry Report 2.0 datagram numbered `sequence` holding the
/// individual reports of `datagrams` (switch_reports' one-report
/// datagrams, node 9's): its group header, then each one's report.
pub fn coalesced(sequence: u32, datagrams: &[Vec<u8>]) -> Vec<u8> {
    let mut out = datagrams[0][..8].to_vec();
    out[..4].copy_from_slice(&((2 << 28) | (sequence & 0x3f_ffff)).to_be_bytes());
    for datagram in datagrams {
        out.extend_from_slice(&datagram[8..]);
    }
    out
}

/// An Ethernet/IPv4/UDP frame from 10.0.0.9:40000 to a collector at
/// 10.0.0.100:32766 carrying `payload` (reports, as a capture shows them).
pub fn report_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = int_core::craft::PacketSpec::udp(
        [10, 0, 0, 9].into(),
        [10, 0, 0, 100].into(),
        40000,
        32766,
        payload.len(),
    )
    .build();
    let at = frame.len() - payload.len();
    frame[at..].copy_from_slice(payload);
    frame
}

/// Node `node`'s INT-XD postcard on `packet` (an IP packet as the node saw
/// it), stamped in and out as given: one Telemetry Report 2.0 datagram,
/// numbered `sequence`.
pub fn postcard_report(node: u32, sequence: u32, packet: &[u8], ingress_ns: u64, egress_ns: u64) -> Vec<u8> {
    postcards_report(node, sequence, &[(packet.to_vec(), ingress_ns, egress_ns)])
}

/// Node `node`'s postcards on `cards` (packet, ingress, egress), in one
/// Telemetry Report 2.0 datagram numbered `sequence`.
pub fn postcards_report(node: u32, sequence: u32, cards: &[(Vec<u8>, u64, u64)]) -> Vec<u8> {
    use int_core::int21::HopMetadata;
    use int_core::report::tr20::{GroupHeaderRepr, InType, IndividualReport, IntContents, ReportFlags};
    let mut datagram = vec![0u8; 512 * cards.len()];
    let mut len = GroupHeaderRepr { hw_id: 0, sequence, node_id: node }.emit(&mut datagram).unwrap();
    for (packet, ingress_ns, egress_ns) in cards {
        let metadata = HopMetadata {
            l1_ingress_port: Some(1),
            l1_egress_port: Some(2),
            ingress_timestamp: Some(*ingress_ns),
            egress_timestamp: Some(*egress_ns),
            ..HopMetadata::default()
        };
        let int = IntContents { rep_md_bits: 0x4c00, metadata, ..IntContents::default() };
        let report = IndividualReport {
            in_type: InType::Ipv4,
            int: Some(int),
            inner: packet,
            flags: ReportFlags { tracked_flow: true, ..ReportFlags::default() },
            ..IndividualReport::default()
        };
        len += report.emit(&mut datagram[len..]).unwrap();
    }
    datagram.truncate(len);
    datagram
}

/// A collect with `--listen-ipfix` on a free port, printing JSON (the
/// IFA terminator's IPFIX: int-tools' tests send it messages, int-node's
/// point a terminator at `ipfix`).
pub struct Collect {
    child: std::process::Child,
    pub ipfix: String,
    socket: std::net::UdpSocket,
    /// Its standard output, read as it comes (a full pipe would stop it).
    stdout: std::thread::JoinHandle<String>,
}

impl Collect {
    /// `tools`: the int-tools binary; `extra`: more arguments.
    pub fn start(tools: &Path, extra: &[&str]) -> Collect {
        let args = [&["--json", "--listen-ipfix", "127.0.0.1:0"], extra].concat();
        let words = ["listening on ", "IFA IPFIX on "];
        let (mut child, mut said) = start_collect_saying(tools, &args, &words);
        let ipfix = said.pop().unwrap();
        let mut pipe = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut out = String::new();
            std::io::Read::read_to_string(&mut pipe, &mut out).unwrap();
            out
        });
        Collect { child, ipfix, socket: std::net::UdpSocket::bind("127.0.0.1:0").unwrap(), stdout }
    }

    pub fn send(&self, datagram: &[u8]) {
        self.socket.send_to(datagram, &self.ipfix).unwrap();
    }

    /// Waits for collect to end by itself (`--count`): its records and
    /// summary.
    pub fn end(mut self) -> (Vec<serde_json::Value>, serde_json::Value) {
        let started = std::time::Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < std::time::Duration::from_secs(120), "collect did not end");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(self.child.wait().unwrap().success());
        let out = self.stdout.join().unwrap();
        let mut records: Vec<serde_json::Value> = BufReader::new(out.as_bytes())
            .lines()
            .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
            .collect();
        let summary = records.pop().unwrap()["summary"].clone();
        (records, summary)
    }
}

pub fn of_type<'a>(records: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// The counts of the IPFIX receiver in the summary, wherever it puts them.
pub fn ipfix_in(summary: &serde_json::Value) -> serde_json::Value {
    fn find(value: &serde_json::Value) -> Option<serde_json::Value> {
        match value {
            serde_json::Value::Object(map) => {
                map.get("ipfix_in").cloned().or_else(|| map.values().find_map(find))
            }
            serde_json::Value::Array(list) => list.iter().find_map(find),
            _ => None,
        }
    }
    find(summary).unwrap_or_else(|| panic!("no ipfix_in in {summary}"))
}

/// tshark's own IPFIX dissector (cflow) on the UDP `port` of the pcap
/// `file`: its `-V` text, asserted free of malformed or expert notes.
pub fn tshark_ipfix(file: &Path, port: u16) -> String {
    let decode = format!("udp.port=={port},cflow");
    let output = Command::new("tshark")
        .args(["-r", file.to_str().unwrap(), "-V", "-d", &decode])
        .output()
        .expect("tshark");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!text.contains("Malformed"), "{text}");
    assert!(!text.contains("Expert Info"), "{text}");
    text
}
/// `promtool check metrics` on `page` (Prometheus' own linter): its
/// complaints, empty when none.
pub fn promtool_check(page: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    child.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        String::new()
    } else {
        format!("promtool: {said}")
    }
}
