//! `int-tools collect --listen ADDR:PORT`: a small collector. One record per
//! report (what Host-INT's collector prints: sequence, time, type, source
//! and sink node ids, ports and timestamps, the 5-tuple; for drops the gap
//! timestamp, flow sequence number and gap count) plus the one-way latency
//! it implies; lost reports found from report sequence gaps per sender; a
//! per-flow summary (reports, latency min/avg/max, packets lost) at an
//! interval and on exit.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use clap::Args;
use int_core::flow::FlowKey;

use int_core::report::{self, tr20, Report, SinkIdWord};
use int_os::{signals, udp};
use serde_json::json;

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Address and UDP port to receive reports on.
    #[arg(long, default_value = "0.0.0.0:32766")]
    pub listen: String,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Exit after this many reports (each individual report of a Telemetry
    /// Report 2.0 datagram counts; a refused datagram counts as one).
    #[arg(long)]
    pub count: Option<u64>,
    /// Exit after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Print the per-flow summary every this many seconds (0: only at exit).
    #[arg(long, default_value_t = 10.0)]
    pub interval: f64,
    /// Whether latency reports carry the sink id word: present, absent or
    /// detect.
    #[arg(long, default_value = "detect")]
    pub sink_id: String,
    /// Receive buffer to ask the kernel for, in bytes (as root, beyond
    /// net.core.rmem_max): room for a burst of reports while a line prints.
    #[arg(long, default_value_t = 8 << 20)]
    pub rcvbuf: usize,
    /// DSCP value and mask of the INT 2.1 domain whose packets Telemetry
    /// Report 2.0 reports carry.
    #[arg(long, default_value = "0x17/0x3f")]
    pub int21_dscp: int_core::encap::DscpMatch,
    /// UDP port of the INT 2.1 domain, if it is marked by port.
    #[arg(long)]
    pub int21_port: Option<u16>,
    /// The INT 2.1 domain's Domain Specific ID: its packet numbers and
    /// loss reports (0: none).
    #[arg(long, default_value = "0x4944", value_parser = crate::decode::parse_u16)]
    pub int21_domain_id: u16,
}

/// The largest report sequence gap believed as lost reports (a sink's
/// report ring holds 4096 by default). A larger jump, ahead or back, is a
/// sender that restarted or a forged number: counted, and the sender's
/// sequence starts again from it, so a forger can claim at most this many
/// lost reports per datagram.
const MAX_REPORT_GAP: u32 = 4096;

#[derive(Debug, Default, Clone)]
pub struct FlowSummary {
    reports: u64,
    latency_min: i64,
    latency_max: i64,
    latency_sum: i64,
    lost: u64,
}

impl FlowSummary {
    /// Packets a loss report declared lost.
    pub fn add_lost(&mut self, count: u32) {
        self.lost += u64::from(count);
    }

    /// One latency report's one-way latency, ns.
    pub fn add_latency(&mut self, latency: i64) {
        if self.reports == 0 || latency < self.latency_min {
            self.latency_min = latency;
        }
        if self.reports == 0 || latency > self.latency_max {
            self.latency_max = latency;
        }
        self.latency_sum += latency;
        self.reports += 1;
    }
}

/// Report sequence accounting for one sender.
#[derive(Default)]
struct Sender {
    next_sequence: Option<u32>,
    lost_reports: u64,
    /// Jumps by more than [`MAX_REPORT_GAP`] either way, and sequence 1
    /// again: the sequence starts again from the new number.
    resyncs: u64,
    /// Numbers up to [`MAX_REPORT_GAP`] behind the next expected one:
    /// duplicates or reordering.
    late: u64,
}

impl Sender {
    /// [`Sender::account`] for Telemetry Report 2.0's 22-bit numbers: they
    /// are widened across wraps first.
    fn account_22(&mut self, sequence: u32) -> u32 {
        const MASK: u32 = 0x003f_ffff;
        let widened = match self.next_sequence {
            // The 22-bit difference, signed, from the number expected.
            Some(expected) => {
                let difference = (sequence.wrapping_sub(expected) & MASK) << 10;
                expected.wrapping_add(((difference as i32) >> 10) as u32)
            }
            None => sequence,
        };
        self.account(widened)
    }

    /// Accounts for one report's sequence number; returns how many reports
    /// are believed lost right before it.
    fn account(&mut self, sequence: u32) -> u32 {
        let Some(expected) = self.next_sequence else {
            self.next_sequence = Some(sequence.wrapping_add(1));
            return 0;
        };
        let gap = sequence.wrapping_sub(expected);
        let behind = expected.wrapping_sub(sequence);
        if (1..=MAX_REPORT_GAP).contains(&behind) && sequence != 1 {
            self.late += 1;
            return 0;
        }
        self.next_sequence = Some(sequence.wrapping_add(1));
        if gap > MAX_REPORT_GAP {
            self.resyncs += 1;
            return 0;
        }
        self.lost_reports += u64::from(gap);
        gap
    }
}

/// What the collector received, refused and missed.
#[derive(Default)]
struct Totals {
    received: u64,
    /// Reports received: a Telemetry Report 2.0 datagram may hold several.
    reports: u64,
    /// Refused reports by reason (the parser's error kind and layer).
    malformed: BTreeMap<String, u64>,
    /// Datagrams the kernel dropped for want of buffer room.
    kernel_drops: u64,
}

impl Totals {
    fn malformed(&self) -> u64 {
        self.malformed.values().sum()
    }
}

/// A short reason for a refused report: what was wrong, and where.
fn reason(error: &int_core::ParseError) -> String {
    use int_core::ParseError as E;
    let kind = match error {
        E::Truncated { .. } => "truncated",
        E::UnknownVersion { .. } => "unknown version",
        E::UnknownType { .. } => "unknown type",
        E::BadLength { .. } => "bad length",
        E::StackMismatch { .. } | E::HopCountExceeded { .. } => "stack mismatch",
        E::Reserved { .. } => "reserved bits",
    };
    format!("{}: {kind}", error.layer())
}

pub fn run(args: &CollectArgs) -> Result<(), String> {
    let int21_domain = int_core::int21::Domain {
        marking: match args.int21_port {
            Some(port) => int_core::int21::Marking::UdpPort(port),
            None => int_core::int21::Marking::Dscp(args.int21_dscp),
        },
        tcp_placement: int_core::encap::TcpPlacement::BeforeOptions,
        source_only: int_core::int21::SourceOnly::sequence(args.int21_domain_id),
    };
    let sink_id = match args.sink_id.as_str() {
        "present" => SinkIdWord::Present,
        "absent" => SinkIdWord::Absent,
        "detect" => SinkIdWord::Detect,
        other => return Err(format!("--sink-id {other:?}: present, absent or detect")),
    };
    let how = How { sink_id, int21_domain, json: args.json };
    let socket = UdpSocket::bind(&args.listen).map_err(|e| format!("--listen {}: {e}", args.listen))?;
    socket.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| e.to_string())?;
    let rcvbuf = udp::set_receive_buffer(&socket, args.rcvbuf).map_err(|e| format!("--rcvbuf: {e}"))?;
    udp::socket_drops(&socket).map_err(|e| format!("the kernel's drop count (SO_MEMINFO): {e}"))?;
    signals::catch_stop_signals();
    let local = socket.local_addr().map_err(|e| e.to_string())?;
    eprintln!("collect: listening on {local} (receive buffer {rcvbuf} bytes)");
    let started = Instant::now();
    let mut next_summary = started + Duration::from_secs_f64(args.interval.max(0.001));
    let mut flows: BTreeMap<FlowKey, FlowSummary> = BTreeMap::new();
    let mut senders: BTreeMap<SocketAddr, Sender> = BTreeMap::new();
    let mut totals = Totals::default();
    let mut buf = [0u8; 65536];
    while !int_os::signals::stop_requested() {
        if args.count.is_some_and(|n| totals.reports >= n)
            || args.duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d)
        {
            break;
        }
        if args.interval > 0.0 && Instant::now() >= next_summary {
            totals.kernel_drops = udp::socket_drops(&socket).unwrap_or(totals.kernel_drops);
            print_summary(&flows, &senders, &totals, args.json);
            next_summary = Instant::now() + Duration::from_secs_f64(args.interval);
        }
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                continue
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        totals.received += 1;
        let payload = buf.get(..n).unwrap_or(&[]);
        take(
            payload,
            from,
            &mut Books { flows: &mut flows, senders: &mut senders, totals: &mut totals },
            &how,
        );
    }
    totals.kernel_drops = udp::socket_drops(&socket).unwrap_or(totals.kernel_drops);
    print_summary(&flows, &senders, &totals, args.json);
    Ok(())
}

/// How datagrams are read and printed.
struct How {
    sink_id: SinkIdWord,
    int21_domain: int_core::int21::Domain,
    json: bool,
}

/// What the collector has learnt so far.
struct Books<'a> {
    flows: &'a mut BTreeMap<FlowKey, FlowSummary>,
    senders: &'a mut BTreeMap<SocketAddr, Sender>,
    totals: &'a mut Totals,
}

/// One datagram: a Telemetry Report 2.0 (by its version) or a 0.5 or
/// Host-INT report, accounted, recorded and printed; refused by reason.
fn take(payload: &[u8], from: SocketAddr, books: &mut Books<'_>, how: &How) {
    if payload.first().is_some_and(|byte| byte >> 4 == tr20::VERSION) {
        match tr20::Report::parse(payload)
            .and_then(|report| crate::collect21::check(&report).map(|n| (report, n)))
        {
            Ok((report, count)) => {
                books.totals.reports += count as u64;
                let missing = books.senders.entry(from).or_default().account_22(report.group.sequence);
                crate::collect21::record(&report, &how.int21_domain, from, missing, books.flows, how.json);
            }
            Err(error) => {
                books.totals.reports += 1;
                refuse(&error, from, payload.len(), books.totals, how.json);
            }
        }
        return;
    }
    books.totals.reports += 1;
    let parsed = match report::parse(payload, how.sink_id) {
        Ok(parsed) => parsed,
        Err(error) => return refuse(&error, from, payload.len(), books.totals, how.json),
    };
    let sequence = match &parsed {
        Report::Latency(l) => l.header.sequence,
        Report::DropSummary(d) => d.header.sequence,
        Report::Tr05 { header, .. } => header.sequence,
    };
    let missing = books.senders.entry(from).or_default().account(sequence);
    if let Report::Tr05 { switch_local: Some(_), .. } = parsed {
        // A sink's own TR 0.5 flow report reads as one; any other NProto 2
        // report is printed as TR 0.5.
        if let Ok(flow_report) = int_core::report::tr05_flow::FlowReport::parse(payload) {
            return crate::collect_tr05::record(&flow_report, from, missing, books.flows, how.json);
        }
    }
    record(&parsed, from, missing, books.flows, how.json);
}

/// A refused datagram: counted by reason and said.
fn refuse(error: &int_core::ParseError, from: SocketAddr, len: usize, totals: &mut Totals, json_out: bool) {
    *totals.malformed.entry(reason(error)).or_default() += 1;
    if json_out {
        println!("{}", json!({"from": from.to_string(), "error": error.to_string(), "length": len}));
    } else {
        println!("From {from}: malformed report ({len} bytes): {error}");
    }
}

fn record(
    parsed: &Report<'_>,
    from: SocketAddr,
    missing: u32,
    flows: &mut BTreeMap<FlowKey, FlowSummary>,
    json_out: bool,
) {
    match parsed {
        Report::Latency(l) => record_latency(l, from, missing, flows, json_out),
        Report::DropSummary(d) => {
            flows.entry(d.flow).or_default().add_lost(d.summary.gap_count);
            if json_out {
                println!("{}", drop_summary_json(d, from, missing));
            } else {
                print_drop_summary(d, missing);
            }
        }
        Report::Tr05 { header, frame, .. } => {
            if json_out {
                println!(
                    "{}",
                    json!({"from": from.to_string(), "seq": header.sequence, "time": header.timestamp, "type": "tr05",
                           "nproto": u8::from(header.next_proto), "inner_frame_length": frame.len()})
                );
            } else {
                println!(
                    "Seq: {} Time: {} Type: Telemetry Report NProto {} ({} bytes of frame){}",
                    header.sequence,
                    header.timestamp,
                    u8::from(header.next_proto),
                    frame.len(),
                    missing_note(missing)
                );
            }
        }
    }
}

/// A latency report: into its flow's summary, then printed.
fn record_latency(
    l: &report::LatencyReport<'_>,
    from: SocketAddr,
    missing: u32,
    flows: &mut BTreeMap<FlowKey, FlowSummary>,
    json_out: bool,
) {
    let flow = FlowKey::v4(l.ip.src, l.ip.dst, u8::from(l.ip.protocol), l.src_port, l.dst_port);
    let latency = l.latency_ns();
    if let Some(latency) = latency {
        flows.entry(flow).or_default().add_latency(i64::from(latency));
    }
    if json_out {
        println!("{}", latency_json(l, &flow, from, missing));
    } else {
        print_latency(l, &flow, missing);
    }
}

fn latency_json(
    l: &report::LatencyReport<'_>,
    flow: &FlowKey,
    from: SocketAddr,
    missing: u32,
) -> serde_json::Value {
    let (sink, source) = l.sink_and_source().unzip();
    json!({"from": from.to_string(), "seq": l.header.sequence, "time": l.header.timestamp, "type": "latency",
           "missing_reports_before": missing,
           "source_node": source.and_then(|h| h.switch_id), "source_port": source.and_then(|h| h.ingress_port),
           "source_ts": source.and_then(|h| h.ingress_timestamp),
           "sink_node": sink.and_then(|h| h.switch_id), "sink_port": sink.and_then(|h| h.egress_port),
           "sink_ts": sink.and_then(|h| h.ingress_timestamp),
           "flow_seq": l.block.sequence, "hops": l.block.header.total_hop_cnt, "e": l.block.header.max_hop_exceeded,
           "src": flow.src.to_string(), "dst": flow.dst.to_string(), "protocol": flow.protocol,
           "src_port": flow.src_port, "dst_port": flow.dst_port, "latency_ns": l.latency_ns()})
}

fn print_latency(l: &report::LatencyReport<'_>, flow: &FlowKey, missing: u32) {
    let (sink, source) = l.sink_and_source().unzip();
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let node = |v: Option<u32>| v.map_or("-".to_string(), |v| std::net::Ipv4Addr::from(v).to_string());
    println!(
        "Seq: {} Time: {} Type: Latency{}",
        l.header.sequence,
        l.header.timestamp,
        missing_note(missing)
    );
    println!(
        "  Source node: {} port: {} ts: {}  Sink node: {} port: {} ts: {}",
        node(source.and_then(|h| h.switch_id)),
        opt(source.and_then(|h| h.ingress_port.map(u32::from))),
        opt(source.and_then(|h| h.ingress_timestamp)),
        node(sink.and_then(|h| h.switch_id)),
        opt(sink.and_then(|h| h.egress_port.map(u32::from))),
        opt(sink.and_then(|h| h.ingress_timestamp)),
    );
    let signed = l.latency_ns().map_or("-".to_string(), |v| v.to_string());
    println!("  Flow: {flow}  flow seq: {}  latency: {signed} ns", opt(l.block.sequence));
}

fn drop_summary_json(d: &report::DropSummaryReport, from: SocketAddr, missing: u32) -> serde_json::Value {
    let s = &d.summary;
    json!({"from": from.to_string(), "seq": d.header.sequence, "time": d.header.timestamp, "type": "drop-summary",
           "missing_reports_before": missing,
           "source_node": s.source_node, "source_port": s.source_port, "sink_node": s.sink_node,
           "sink_port": s.sink_port, "gap_timestamp": s.gap_timestamp, "flow_seq": s.gap_sequence,
           "gap_count": s.gap_count, "src": d.flow.src.to_string(), "dst": d.flow.dst.to_string(),
           "protocol": d.flow.protocol, "src_port": d.flow.src_port, "dst_port": d.flow.dst_port})
}

fn print_drop_summary(d: &report::DropSummaryReport, missing: u32) {
    let s = &d.summary;
    println!(
        "Seq: {} Time: {} Type: Drop Summary{}",
        d.header.sequence,
        d.header.timestamp,
        missing_note(missing)
    );
    println!(
        "  Source node: {} port: {}  Sink node: {} port: {}",
        std::net::Ipv4Addr::from(s.source_node),
        s.source_port,
        std::net::Ipv4Addr::from(s.sink_node),
        s.sink_port
    );
    println!(
        "  Flow: {}  gap timestamp: {}  flow seq: {}  gap count: {}",
        d.flow, s.gap_timestamp, s.gap_sequence, s.gap_count
    );
}

pub fn missing_note(missing: u32) -> String {
    if missing == 0 {
        String::new()
    } else {
        format!("  ({missing} report(s) lost before this one)")
    }
}

fn print_summary(
    flows: &BTreeMap<FlowKey, FlowSummary>,
    senders: &BTreeMap<SocketAddr, Sender>,
    totals: &Totals,
    json_out: bool,
) {
    let lost_reports: u64 = senders.values().map(|s| s.lost_reports).sum();
    let resyncs: u64 = senders.values().map(|s| s.resyncs).sum();
    let late: u64 = senders.values().map(|s| s.late).sum();
    let (received, malformed, kernel_drops) = (totals.received, totals.malformed(), totals.kernel_drops);
    if json_out {
        let flows: Vec<_> = flows
            .iter()
            .map(|(k, s)| {
                json!({"src": k.src.to_string(), "dst": k.dst.to_string(), "protocol": k.protocol, "src_port": k.src_port,
                       "dst_port": k.dst_port, "latency_reports": s.reports,
                       "latency_min_ns": (s.reports > 0).then_some(s.latency_min),
                       "latency_avg_ns": (s.reports > 0).then(|| s.latency_sum / s.reports as i64),
                       "latency_max_ns": (s.reports > 0).then_some(s.latency_max), "lost_packets": s.lost})
            })
            .collect();
        println!(
            "{}",
            json!({"summary": {"reports": received, "malformed": malformed, "malformed_by_reason": totals.malformed,
                               "lost_reports": lost_reports, "sequence_resyncs": resyncs, "late_reports": late,
                               "kernel_drops": kernel_drops, "flows": flows}})
        );
        return;
    }
    println!("== summary: {received} report(s), {malformed} malformed, {lost_reports} lost (report sequence gaps) ==");
    if resyncs + late + kernel_drops > 0 {
        println!("   {resyncs} sequence resync(s), {late} late or duplicate report(s), {kernel_drops} dropped by the kernel (receive buffer full)");
    }
    for (reason, count) in &totals.malformed {
        println!("   malformed: {reason}: {count}");
    }
    for (flow, s) in flows {
        if s.reports > 0 {
            println!(
                "  {flow}: {} latency report(s), latency min/avg/max {}/{}/{} ns, {} packet(s) lost",
                s.reports,
                s.latency_min,
                s.latency_sum / s.reports as i64,
                s.latency_max,
                s.lost
            );
        } else {
            println!("  {flow}: no latency report, {} packet(s) lost", s.lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_gaps_are_believed_only_when_plausible() {
        let mut sender = Sender::default();
        let seen: Vec<u32> =
            [1, 2, 5, 4, 4_000_000_000, 6, 7, 1, 2].iter().map(|s| sender.account(*s)).collect();
        assert_eq!(seen, vec![0, 0, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!((sender.lost_reports, sender.late, sender.resyncs), (2, 1, 3));
        // Forged numbers, one after another: never more than the window
        // each, and random ones almost never count at all.
        let mut forged = Sender::default();
        let mut x = 0x9e37_79b9u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            forged.account(x);
        }
        assert!(forged.lost_reports <= 10_000 * u64::from(MAX_REPORT_GAP));
        assert!(forged.lost_reports < 50_000, "{}", forged.lost_reports);
    }
}
