//! IOAM with the Linux kernel's own, in network namespaces:
//!
//! ```text
//! client --- e1 (int-node: encapsulates) --- router (the kernel: transit)
//!        --- e2 (int-node: transit, then decapsulates) --- server
//! ```
//!
//! The router is a namespace whose kernel forwards IPv6 with
//! `ioam6_enabled` on its ingress link, its own node id and interface ids,
//! and namespace 123 known: it fills its slot of the trace e1 adds. e2
//! fills the next, takes the trace out and reports to a socket of this
//! test over a management link. A 10 MB TCP transfer and UDP datagrams
//! reach the server as sent (SHA-256); every report's trace reads, newest
//! first, e2, the kernel (its node id, its interface ids, Hop Limit 63
//! after its decrement, a timestamp between e1's and e2's), e1; the
//! kernel's counters show no error. Each packet carries its flow's number
//! in an Edge-to-Edge option, which the kernel forwards untouched: e2
//! counts no loss but packets that ended at the router. Once the router no longer knows the
//! namespace, it forwards the trace untouched: e2 reads e1's slot and its
//! own. The nodes' ports are af_packet vdevs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use int_core::ioam::{ipv6, sink, TimestampFormat};
use int_core::report::tr20;

const PREFIX: &str = "ioamk";
const HOSTS: [&str; 5] = ["client", "e1", "router", "e2", "server"];
const KERNEL_ID: u32 = 0xab_cdef;
/// e1's and e2's node ids (10.10.255.1, .2): their short ids, the low 24 bits.
const E1_ID: u32 = 0x0a_ff01;
const E2_ID: u32 = 0x0a_ff02;
const MGMT: (&str, &str) = ("10.99.7.1", "10.99.7.2");

fn ns(host: &str) -> String {
    format!("{PREFIX}-{host}")
}

fn sh(args: &[&str]) -> String {
    let output = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(output.status.success(), "{}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn exec(host: &str, args: &[&str]) -> String {
    let ns = ns(host);
    sh(&[&["ip", "netns", "exec", ns.as_str()], args].concat())
}

/// The namespaces and links, removed again on drop (and before, if an
/// earlier run left them).
struct Topology;

impl Topology {
    fn up() -> Topology {
        Topology::down();
        for host in HOSTS {
            sh(&["ip", "netns", "add", &ns(host)]);
            exec(host, &["ip", "link", "set", "lo", "up"]);
            exec(host, &["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"]);
            exec(host, &["sysctl", "-qw", "net.ipv6.conf.default.accept_ra=0"]);
        }
        // Edges at 1500, the traced middle at 1600.
        link(("client", "eth0"), ("e1", "c"), 1500);
        link(("e1", "k"), ("router", "r1"), 1600);
        link(("router", "r2"), ("e2", "k"), 1600);
        link(("e2", "a"), ("e2", "b"), 1600);
        link(("e2", "s"), ("server", "eth0"), 1500);
        exec("client", &["ip", "-6", "addr", "add", "2001:db8:1::1/64", "dev", "eth0", "nodad"]);
        exec("client", &["ip", "-6", "route", "add", "default", "via", "2001:db8:1::fe"]);
        exec("server", &["ip", "-6", "addr", "add", "2001:db8:2::2/64", "dev", "eth0", "nodad"]);
        exec("server", &["ip", "-6", "route", "add", "default", "via", "2001:db8:2::fe"]);
        exec("router", &["ip", "-6", "addr", "add", "2001:db8:1::fe/64", "dev", "r1", "nodad"]);
        exec("router", &["ip", "-6", "addr", "add", "2001:db8:2::fe/64", "dev", "r2", "nodad"]);
        for setting in [
            "net.ipv6.conf.all.forwarding=1",
            "net.ipv6.conf.r1.ioam6_enabled=1",
            "net.ipv6.conf.r1.ioam6_id=11",
            "net.ipv6.conf.r2.ioam6_id=12",
            &format!("net.ipv6.ioam6_id={KERNEL_ID}"),
        ] {
            exec("router", &["sysctl", "-qw", setting]);
        }
        exec("router", &["ip", "ioam", "namespace", "add", "123"]);
        // Reports leave e2 over a management link to this test.
        sh(&["ip", "link", "add", "ioamk-m0", "type", "veth", "peer", "name", "ioamk-m1"]);
        sh(&["ip", "link", "set", "ioamk-m1", "netns", &ns("e2"), "name", "mgmt"]);
        sh(&["ip", "addr", "add", &format!("{}/30", MGMT.0), "dev", "ioamk-m0"]);
        sh(&["ip", "link", "set", "ioamk-m0", "up"]);
        exec("e2", &["ip", "addr", "add", &format!("{}/30", MGMT.1), "dev", "mgmt"]);
        exec("e2", &["ip", "link", "set", "dev", "mgmt", "up"]);
        Topology
    }

    fn down() {
        for host in HOSTS {
            let _ = Command::new("ip").args(["netns", "del", &ns(host)]).stderr(Stdio::null()).status();
        }
        let _ = Command::new("ip").args(["link", "del", "ioamk-m0"]).stderr(Stdio::null()).status();
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        Topology::down();
    }
}

/// A veth pair between `a` and `b` (host, interface), up, MTU `mtu`, its
/// offloads off (af_packet reads finished frames).
fn link(a: (&str, &str), b: (&str, &str), mtu: u32) {
    let (tmp_a, tmp_b) = (format!("{PREFIX}{}{}", a.0, a.1), format!("{PREFIX}{}{}", b.0, b.1));
    sh(&["ip", "link", "add", &tmp_a, "type", "veth", "peer", "name", &tmp_b]);
    for (tmp, (host, ifname)) in [(tmp_a, a), (tmp_b, b)] {
        sh(&["ip", "link", "set", &tmp, "netns", &ns(host), "name", ifname]);
        exec(host, &["ip", "link", "set", "dev", ifname, "mtu", &mtu.to_string(), "up"]);
        let offloads = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"];
        exec(host, &[&["ethtool", "-K", ifname][..], &offloads].concat());
    }
}

/// An int-node in `host` on `config`, its log and counters in `dir`.
fn node(dir: &Path, host: &str, config: &str) -> Child {
    let path = dir.join(format!("{host}.yaml"));
    std::fs::write(&path, config).unwrap();
    let log = std::fs::File::create(dir.join(format!("{host}.log"))).unwrap();
    Command::new("ip")
        .args(["netns", "exec", &ns(host), BIN, "run", "--config"])
        .arg(&path)
        .args(["--duration", "300", "--stats-json"])
        .arg(dir.join(format!("{host}.json")))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

const TRACE: &str = "{version: ioam, namespace: 123, nodes: 4, trace_type: [hop_limit_node_id, interfaces, timestamp_seconds, timestamp_fraction], sequence: true}";

fn e1_config() -> String {
    format!(
        "node_id: 10.10.255.1
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, --file-prefix, ioamk-e1, --lcores, '0@0,1@1', --log-level, 'lib.eal:error']
idle_sleep_us: 20
ports:
  - {{name: c, device: 'net_af_packet0,iface=c,qdisc_bypass=0,framecnt=4096', int_port: 1}}
  - {{name: k, device: 'net_af_packet1,iface=k,qdisc_bypass=0,framecnt=4096', int_port: 2, mtu: 1600}}
pipelines:
  - {{name: source, role: source, lcore: 1, rx: {{port: c}}, tx: {{port: k}}, int: {TRACE}}}
  - {{name: back, role: forward, lcore: 1, rx: {{port: k}}, tx: {{port: c}}}}
"
    )
}

fn e2_config(collector: &str) -> String {
    format!(
        "node_id: 10.10.255.2
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, --file-prefix, ioamk-e2, --lcores, '0@1,1@0', --log-level, 'lib.eal:error']
idle_sleep_us: 20
ports:
  - {{name: k, device: 'net_af_packet0,iface=k,qdisc_bypass=0,framecnt=4096', int_port: 3, mtu: 1600}}
  - {{name: a, device: 'net_af_packet1,iface=a,qdisc_bypass=0,framecnt=4096', int_port: 4, mtu: 1600}}
  - {{name: b, device: 'net_af_packet2,iface=b,qdisc_bypass=0,framecnt=4096', int_port: 5, mtu: 1600}}
  - {{name: s, device: 'net_af_packet3,iface=s,qdisc_bypass=0,framecnt=4096', int_port: 6}}
pipelines:
  - {{name: transit, role: transit, lcore: 1, rx: {{port: k}}, tx: {{port: a}}, int: {TRACE}}}
  - name: sink
    role: sink
    lcore: 1
    rx: {{port: b}}
    tx: {{port: s}}
    int: {TRACE}
    sink: {{latency: {{mode: buckets, buckets_ns: [1000000000], refresh_ms: 60000}}}}
  - {{name: back, role: forward, lcore: 1, rx: {{port: s}}, tx: {{port: k}}}}
export: {{collector: '{collector}'}}
"
    )
}

/// Waits until the client reaches the server through both nodes and the
/// router (the nodes are up and forwarding).
fn wait_for_the_path() {
    let started = Instant::now();
    let ns = ns("client");
    loop {
        let reached = Command::new("ip")
            .args(["netns", "exec", &ns, "ping", "-6", "-c", "1", "-W", "1", "2001:db8:2::2"])
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        if reached {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the client never reached the server");
    }
}

/// What the server received of a transfer from the client on `port`,
/// once `len` bytes are in (UDP has no end the receiver sees).
fn receive(dir: &Path, port: &str, udp: bool, send: impl FnOnce(), len: usize) -> Vec<u8> {
    let received = dir.join(format!("received-{port}"));
    let protocol: &[&str] = if udp { &["-u"] } else { &[] };
    let mut server = Command::new("ip")
        .args(["netns", "exec", &ns("server"), "nc", "-6", "-l"])
        .args(protocol)
        .args(["2001:db8:2::2", port])
        .stdout(std::fs::File::create(&received).unwrap())
        .spawn()
        .unwrap();
    // The server listens once its socket is bound: `ss` shows it.
    let started = Instant::now();
    let listening = if udp { "-uln" } else { "-tln" };
    while !exec("server", &["ss", "-H", listening, "sport", "=", &format!(":{port}")]).contains(port) {
        assert!(started.elapsed() < Duration::from_secs(10), "nc never listened");
    }
    send();
    let started = Instant::now();
    while std::fs::metadata(&received).unwrap().len() < len as u64 {
        assert!(started.elapsed() < Duration::from_secs(30), "{port}: the data never all arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = server.kill();
    server.wait().unwrap();
    std::fs::read(&received).unwrap()
}

/// `data` from client to server over TCP with nc; what the server received.
fn tcp(dir: &Path, data: &[u8], port: &str) -> Vec<u8> {
    let sent = dir.join(format!("sent-{port}"));
    std::fs::write(&sent, data).unwrap();
    let send = || {
        let status = Command::new("ip")
            .args(["netns", "exec", &ns("client"), "nc", "-6", "-N", "2001:db8:2::2", port])
            .stdin(std::fs::File::open(&sent).unwrap())
            .status()
            .unwrap();
        assert!(status.success());
    };
    receive(dir, port, false, send, data.len())
}

/// `packets` UDP datagrams of 1000 bytes (their index, then zeros) from
/// client to server at 2000 a second (`int-lab send`); asserts the server
/// got each as sent.
fn udp(dir: &Path, port: &str, packets: usize) {
    let lab = Path::new(BIN).with_file_name("int-lab");
    let to = format!("[2001:db8:2::2]:{port}");
    let count = packets.to_string();
    let send = || {
        let status = Command::new("ip")
            .args(["netns", "exec", &ns("client")])
            .arg(&lab)
            .args([
                "send",
                "--from",
                "[::]:0",
                "--to",
                &to,
                "--packets",
                &count,
                "--rate",
                "2000",
                "--size",
                "1000",
            ])
            .status()
            .unwrap();
        assert!(status.success());
    };
    let received = receive(dir, port, true, send, packets * 1000);
    for (i, datagram) in received.chunks(1000).enumerate() {
        let mut expected = vec![0u8; 1000];
        expected[..8].copy_from_slice(&(i as u64).to_be_bytes());
        assert!(datagram == expected, "{port}: datagram {i} as sent");
    }
}

fn sha256(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), data).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

fn stop(mut child: Child, dir: &Path, host: &str) -> serde_json::Value {
    sh(&["kill", "-INT", &child.id().to_string()]);
    let status = child.wait().unwrap();
    let log = std::fs::read_to_string(dir.join(format!("{host}.log"))).unwrap_or_default();
    assert!(status.success(), "{host}: {status}\n{log}");
    serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{host}.json"))).unwrap()).unwrap()
}

#[test]
fn the_kernel_fills_its_slot_between_two_int_nodes() {
    let dir = workdir("ioam-kernel");
    let _topology = Topology::up();
    let reports = UdpSocket::bind((MGMT.0, 0)).unwrap();
    reports.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let collector = reports.local_addr().unwrap().to_string();
    let e1 = node(&dir, "e1", &e1_config());
    let e2 = node(&dir, "e2", &e2_config(&collector));
    wait_for_the_path();
    let data: Vec<u8> = (0..10_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    assert_eq!(sha256(&tcp(&dir, &data, "5001")), sha256(&data), "10 MB over TCP as sent");
    udp(&dir, "5002", 1000);
    // A namespace the kernel does not know: it forwards the trace untouched.
    exec("router", &["ip", "ioam", "namespace", "del", "123"]);
    udp(&dir, "5003", 200);
    let e2_stats = stop(e2, &dir, "e2");
    let e1_stats = stop(e1, &dir, "e1");
    let (source, transit, sink) =
        (&e1_stats["pipelines"]["source"], &e2_stats["pipelines"]["transit"], &e2_stats["pipelines"]["sink"]);
    eprintln!("e1 source: {source}\ne2 transit: {transit}\ne2 sink: {sink}");
    assert!(source["instrumented"].as_u64().unwrap() > 7000, "every packet of 10 MB traced");
    // The few addressed to the router itself (neighbour discovery) end there.
    let (traced, filled) =
        (source["instrumented"].as_u64().unwrap(), transit["slots_filled"].as_u64().unwrap());
    assert!(filled <= traced && traced - filled < 20, "the traced packets reached e2 and were filled");
    assert_eq!(sink["stripped"], transit["slots_filled"], "and taken out again");
    // Numbered in an Edge-to-Edge option the kernel forwards as it is: the
    // only gaps are the packets that ended at the router.
    assert_eq!(sink["no_sequence"].as_u64().unwrap_or(0), 0, "every packet numbered");
    assert!(sink["lost_packets"].as_u64().unwrap_or(0) <= traced - filled, "{sink}");
    for counter in ["malformed_forwarded", "malformed_dropped", "trace_overflow", "too_big"] {
        assert_eq!(sink.get(counter).and_then(|v| v.as_u64()).unwrap_or(0), 0, "{counter}");
        assert_eq!(source.get(counter).and_then(|v| v.as_u64()).unwrap_or(0), 0, "{counter}");
    }
    check_reports(&reports);
    check_kernel_counters();
}

/// Every report's trace: e2, the kernel, e1, newest first, each as it
/// should read.
fn check_reports(socket: &UdpSocket) {
    let mut buf = [0u8; 2048];
    let (mut traces, mut unknown) = (0, 0);
    while let Ok(n) = socket.recv(&mut buf) {
        let report = tr20::Report::parse(&buf[..n]).unwrap();
        for individual in report.reports() {
            let individual = individual.unwrap();
            if int_core::report::tr20_loss::LossReport::parse(&individual, 0x4944).is_some() {
                continue; // a neighbour discovery packet that ended at the router
            }
            let (trace, hbh) = sink::trace_in_packet(individual.inner).unwrap();
            let e2e = sink::e2e_in_packet(individual.inner, 123).expect("the Edge-to-Edge option");
            assert!(e2e.sequence.is_some_and(|n| n >= 1), "{e2e:?}");
            let nodes: Vec<_> = ipv6::nodes(hbh, &trace).collect();
            let ids: Vec<_> = nodes.iter().map(|n| n.node_id.unwrap()).collect();
            let flow = int_core::int21::reported_flow(individual.inner, false).unwrap();
            if flow.dst_port == 5003 {
                assert_eq!(ids, [E2_ID, E1_ID], "the kernel passed a namespace it does not know");
                unknown += 1;
                continue;
            }
            assert_eq!(ids, [E2_ID, KERNEL_ID, E1_ID], "newest first");
            let hop_limits: Vec<_> = nodes.iter().map(|n| n.hop_limit.unwrap()).collect();
            let sent = hop_limits[2];
            assert_eq!(
                hop_limits,
                [sent - 1, sent - 1, sent],
                "the kernel lowered it; the nodes do not route"
            );
            assert_eq!(
                (nodes[1].ingress_if, nodes[1].egress_if),
                (Some(11), Some(12)),
                "the kernel's interfaces"
            );
            let time = |i: usize| nodes[i].as_hop(TimestampFormat::Posix).ingress_timestamp.unwrap();
            let sink_ns = individual.int.unwrap().metadata.ingress_timestamp.unwrap();
            assert!(
                time(2) <= time(1) + 1000 && time(1) <= time(0) + 1000,
                "{:?}",
                (time(2), time(1), time(0))
            );
            // One clock for the three: the sink's time is not before the
            // nodes', and within seconds of the encapsulating node's. The
            // bound is about clocks (TAI against UTC is 37 s apart, a wrong
            // epoch years), not delay: a flow's first packet, held by
            // neighbour discovery with a CPU kept busy, took 1.05 s once.
            assert!(time(0) <= sink_ns + 1000 && sink_ns - time(2) < 10_000_000_000, "one host's clock");
            traces += 1;
        }
    }
    assert!(traces >= 2, "a report per flow at least (TCP, UDP): {traces}");
    assert_eq!(unknown, 1, "the flow through the kernel without its namespace, reported once");
}

/// The router's kernel saw no header it refused and dropped nothing.
fn check_kernel_counters() {
    let nstat = exec("router", &["nstat", "-az", "--json"]);
    let counters: serde_json::Value = serde_json::from_str(&nstat).unwrap();
    let kernel = &counters["kernel"];
    for counter in
        ["Ip6InHdrErrors", "Ip6InAddrErrors", "Ip6InDiscards", "Ip6OutDiscards", "Ip6InTooBigErrors"]
    {
        assert_eq!(kernel[counter], 0, "{counter}: {kernel}");
    }
    assert!(kernel["Ip6OutForwDatagrams"].as_u64().unwrap() > 7000, "{kernel}");
    for link in ["r1", "r2"] {
        let stats = exec("router", &["ip", "-j", "-s", "link", "show", link]);
        let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
        let stats = &stats[0]["stats64"];
        for way in ["rx", "tx"] {
            assert_eq!(stats[way]["errors"], 0, "{link} {way}: {stats}");
            assert_eq!(stats[way]["dropped"], 0, "{link} {way}: {stats}");
        }
    }
}
