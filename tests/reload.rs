//! SIGHUP reloads a running node's watchlist: a source replaying ten
//! flows instruments one of them, then three after the reload, with no
//! packet lost or counted twice and its flow state kept; a config that is
//! invalid, or that changes what needs a restart, is refused and the
//! running watchlist stays.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::servers::free_port;
use common::*;

/// The node's config with a watchlist of these flows (by source address
/// 10.0.0.N) and `mbufs` in its pool.
fn config(port: u16, flows: &[u8], mbufs: &str) -> String {
    let rules: Vec<String> = flows.iter().map(|n| format!("{{src: 10.0.0.{n}/32}}")).collect();
    replay_source_config(
        "--no-telemetry, --file-prefix, int-node-reload",
        &format!("stats: {{metrics: '127.0.0.1:{port}'}}"),
    )
    .replace(
        "tx: {port: out}}",
        &format!("tx: {{port: out}}, source: {{watchlist: [{}]}}}}", rules.join(", ")),
    )
    .replace("mbufs: 4095", mbufs)
}

/// The node's /metrics page.
fn metrics(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut page = String::new();
    stream.read_to_string(&mut page).unwrap();
    page
}

/// A counter of pipeline `src` on a /metrics page: `name` is a family,
/// with its label where it has one (`reports{kind="hop_change"}`).
fn read(page: &str, name: &str) -> u64 {
    let (family, label) = name.split_once('{').map_or((name, ""), |(f, l)| (f, l.trim_end_matches('}')));
    let prefix = format!("int_node_{family}_total{{pipeline=\"src\",");
    let line = page
        .lines()
        .find(|l| l.starts_with(&prefix) && l.contains(label))
        .unwrap_or_else(|| panic!("{name}: {page}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

fn counter(port: u16, name: &str) -> u64 {
    read(&metrics(port), name)
}

/// The share of packets instrumented over half a second, both counters
/// read from one page each time (a page is not a snapshot: they may be a
/// burst apart).
fn instrumented_share(port: u16) -> f64 {
    let page = metrics(port);
    let (rx, instrumented) = (read(&page, "rx_packets"), read(&page, "instrumented"));
    std::thread::sleep(Duration::from_millis(500));
    let page = metrics(port);
    let (rx2, instrumented2) = (read(&page, "rx_packets"), read(&page, "instrumented"));
    assert!(rx2 > rx + 1000, "the node replays");
    (instrumented2 - instrumented) as f64 / (rx2 - rx) as f64
}

/// Sends SIGHUP and waits until the node's log says `expected`.
fn reload(node: &Child, log: &std::path::Path, expected: &str) {
    let before = std::fs::read_to_string(log).unwrap().matches(expected).count();
    Command::new("kill").args(["-HUP", &node.id().to_string()]).status().unwrap();
    let started = Instant::now();
    while std::fs::read_to_string(log).unwrap().matches(expected).count() == before {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {expected:?} in {}",
            std::fs::read_to_string(log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a reload must not read: a device that never ends, a FIFO that
/// blocks until a writer comes, a file past the size bound, YAML nested
/// 100k deep. Each is refused at once and logged; the node goes on.
fn hostile_files_are_refused(node: &Child, path: &std::path::Path, log: &std::path::Path) {
    let refusals = [
        ("/dev/zero", "a character device, not a regular file"),
        ("fifo", "a FIFO, not a regular file"),
        ("big", "more than a config's 1048576"),
        ("nested", "nest more than 32 deep"),
    ];
    for (kind, expected) in refusals {
        std::fs::remove_file(path).unwrap();
        match kind {
            "fifo" => assert!(Command::new("mkfifo").arg(path).status().unwrap().success()),
            "big" => std::fs::write(path, format!("# {}\n", "x".repeat(2 << 20))).unwrap(),
            "nested" => std::fs::write(path, "[".repeat(100_000)).unwrap(),
            device => std::os::unix::fs::symlink(device, path).unwrap(),
        }
        reload(node, log, expected);
    }
    std::fs::remove_file(path).unwrap();
}

/// The node on `dir/node.yaml` for at most a minute, its log in `log`.
fn start(dir: &std::path::Path, log: &std::path::Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_int-node"))
        .args(["run", "--config", "node.yaml", "--duration", "60"])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn sighup_reloads_the_watchlist_without_losing_a_packet() {
    let dir = workdir("reload");
    ten_flows_pcap(&dir);
    let port = free_port();
    let path = dir.join("node.yaml");
    std::fs::write(&path, config(port, &[1], "mbufs: 4095")).unwrap();
    let log = dir.join("node.log");
    let mut node = start(&dir, &log, &["--stats-json", "stats.json"]);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() || counter(port, "rx_packets") == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "{}", std::fs::read_to_string(&log).unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    let one = instrumented_share(port);

    // Invalid: refused with the problem and its path; nothing changes.
    std::fs::write(&path, config(port, &[1], "mbufs: 4095").replace("10.0.0.1/32", "10.0.0.300/32")).unwrap();
    reload(&node, &log, "reload refused");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("is invalid") && text.contains("pipelines[0].source.watchlist[0].src"), "{text}");
    let after_invalid = instrumented_share(port);
    // Needs a restart: refused, naming what changed.
    std::fs::write(&path, config(port, &[1, 2, 3], "mbufs: 8191")).unwrap();
    reload(&node, &log, "needs a restart");
    assert!(std::fs::read_to_string(&log).unwrap().contains("mempool.mbufs changed"));
    let after_restart_needed = instrumented_share(port);
    assert_eq!(counter(port, "settings_updates"), 0);
    hostile_files_are_refused(&node, &path, &log);
    assert_eq!(counter(port, "settings_updates"), 0);

    // Valid: three flows of ten from the next burst on.
    std::fs::write(&path, config(port, &[1, 2, 3], "mbufs: 4095")).unwrap();
    reload(&node, &log, "posted to 1 pipeline");
    let started = Instant::now();
    while counter(port, "settings_updates") == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the worker never took the settings");
        std::thread::sleep(Duration::from_millis(10));
    }
    let three = instrumented_share(port);
    Command::new("kill").args(["-INT", &node.id().to_string()]).status().unwrap();
    assert!(node.wait().unwrap().success(), "{}", std::fs::read_to_string(&log).unwrap());

    eprintln!("instrumented share: {one:.4} before, {after_invalid:.4} and {after_restart_needed:.4} after the refusals, {three:.4} after the reload");
    for share in [one, after_invalid, after_restart_needed] {
        assert!((share - 0.1).abs() < 0.01, "{share}");
    }
    assert!((three - 0.3).abs() < 0.01, "{three}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let src = &stats["pipelines"]["src"];
    let get = |name: &str| src[name].as_u64().unwrap();
    assert_eq!(get("settings_updates"), 1);
    // The worker took the new watchlist and gave the old one back to be
    // freed elsewhere: no heap call on the packet path.
    assert_eq!(stats["packet_path_allocations"], 0);
    // Every packet received left, each counted once: instrumented or not
    // watched.
    assert_eq!(get("rx_packets"), get("tx_packets"));
    assert_eq!(get("tx_dropped"), 0);
    assert_eq!(get("instrumented") + get("not_watched"), get("rx_packets"));
    // Flow state kept: flow 1's entry lived on, flows 2 and 3 joined it.
    assert_eq!(get("flows_created"), 3, "{src}");
    assert_eq!(get("flows_expired") + get("flows_evicted"), 0, "{src}");
}

/// A sink replaying three-hop stacks forever ([`common::hops`]), its hop
/// rule `rules`, reporting to `collector`.
fn hop_sink_config(port: u16, rules: &str, collector: &str) -> String {
    replay_source_config(
        "--no-telemetry, --file-prefix, int-node-reload-hops",
        &format!("stats: {{metrics: '127.0.0.1:{port}'}}\nexport: {{collector: '{collector}'}}"),
    )
    .replace("role: source,", &format!("role: sink, int: {{version: 2.1}}, sink: {rules},"))
}

/// Waits until the sink has received `packets` more than `from`.
fn wait_for_packets(port: u16, from: u64, packets: u64) -> u64 {
    let started = Instant::now();
    loop {
        let rx = counter(port, "rx_packets");
        if rx >= from + packets {
            return rx;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the node replays: {rx} packets");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGHUP gives a running INT 2.1 sink latency classes for its hops: no
/// hop change is reported before (the stacks' one path never changes),
/// and each replay's step of the middle hop is reported after, while the
/// three flows live on (none created again).
#[test]
fn sighup_changes_the_hop_rules_and_keeps_the_flows() {
    let dir = workdir("reload-hops");
    common::hops::three_hop_stacks(&dir);
    std::fs::copy(dir.join("hops.pcap"), dir.join("in.pcap")).unwrap();
    let collector = Collector::new();
    let port = free_port();
    let path = dir.join("node.yaml");
    std::fs::write(&path, hop_sink_config(port, "{}", &collector.addr())).unwrap();
    let log = dir.join("node.log");
    let mut node = start(&dir, &log, &[]);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "{}", std::fs::read_to_string(&log).unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    let replay = common::hops::PACKETS as u64;
    let rx = wait_for_packets(port, 0, 3 * replay);
    assert_eq!(counter(port, "reports{kind=\"hop_change\"}"), 0);
    assert_eq!(counter(port, "flows_created"), 3);

    std::fs::write(&path, hop_sink_config(port, "{hops: {latency_ns: [10000]}}", &collector.addr())).unwrap();
    reload(&node, &log, "posted to 1 pipeline");
    while counter(port, "settings_updates") == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the worker never took the settings");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Two whole replays after the one under way: each flow's middle hop
    // slows and speeds up again at least once.
    wait_for_packets(port, rx.max(counter(port, "rx_packets")), 3 * replay);
    let changes = counter(port, "reports{kind=\"hop_change\"}");
    assert!(changes >= 2 * common::hops::FLOWS as u64, "{changes} hop changes");
    assert_eq!(counter(port, "flows_created"), 3, "the flows were kept");
    Command::new("kill").args(["-INT", &node.id().to_string()]).status().unwrap();
    assert!(node.wait().unwrap().success(), "{}", std::fs::read_to_string(&log).unwrap());
}
