//! collect run as a service for months: SIGHUP reloads the names and never
//! ends it, the probes (`/healthz`, `/readyz`) on both servers, `--log`
//! levels, and a periodic summary the journal can hold. The real binary,
//! no DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};

use files::workdir;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// A running collect and the lines it writes, as they come.
struct Collect {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Everything read so far from stderr, for the failure's message.
    said: String,
}

fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    receive
}

impl Collect {
    fn start(args: &[&str]) -> Collect {
        let mut child = Command::new(BIN)
            .arg("collect")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Collect { child, stdout, stderr, said: String::new() }
    }

    /// The first line on stderr that contains `text` (the lines before it
    /// kept in `said`); fails if collect ends first.
    fn said(&mut self, text: &str) -> String {
        loop {
            let Ok(line) = self.stderr.recv() else {
                panic!("collect ended before it said {text:?}; it said:\n{}", self.said)
            };
            self.said.push_str(&line);
            self.said.push('\n');
            if line.contains(text) {
                return line;
            }
        }
    }

    /// The address a line on stderr gives after `text`.
    fn address(&mut self, text: &str) -> String {
        let line = self.said(text);
        let rest = line.split(text).nth(1).unwrap();
        rest.split([' ', '/']).next().unwrap().to_string()
    }

    /// The first line on stdout that has `text`.
    fn printed(&mut self, text: &str) -> String {
        loop {
            let Ok(line) = self.stdout.recv() else { panic!("collect ended before it printed {text:?}") };
            if line.contains(text) {
                return line;
            }
        }
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([name, &pid]).status().unwrap().success());
    }

    /// SIGINT; collect must end 0. Its stdout's lines left, and stderr's.
    fn stop(mut self) -> (Vec<String>, String) {
        self.signal("-INT");
        let status = self.child.wait().unwrap();
        let out: Vec<String> = self.stdout.iter().collect();
        let err: Vec<String> = self.stderr.iter().collect();
        let said = format!("{}{}", self.said, err.join("\n"));
        assert!(status.success(), "{status}: {said}");
        (out, said)
    }
}

/// Status and body of `GET path` at `server`.
fn get(server: &str, path: &str) -> (u16, String) {
    let (status, whole) = ask(server, path, None);
    (status, whole.split_once("\r\n\r\n").unwrap().1.to_string())
}

/// Status and the whole answer of `GET path` at `server`, with an
/// `Authorization` header where given.
fn ask(server: &str, path: &str, authorization: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(server).unwrap();
    let header = authorization.map_or(String::new(), |value| format!("Authorization: {value}\r\n"));
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {server}\r\n{header}Connection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    (response.split(' ').nth(1).unwrap().parse().unwrap(), response)
}

/// SIGHUP reads `--names` again: the next records and the summary carry
/// the new name; a file that does not read keeps the names before and
/// says why; collect goes on and ends on SIGINT with its summary (SIGHUP
/// ended it, with no summary).
#[test]
fn sighup_reloads_the_names_and_never_ends_collect() {
    let dir = workdir("service-sighup");
    let names = dir.join("names.yaml");
    std::fs::write(&names, "nodes: {2: old-two}\n").unwrap();
    let mut collect = Collect::start(&[
        "--json",
        "--interval",
        "0",
        "--listen",
        "127.0.0.1:0",
        "--names",
        names.to_str().unwrap(),
    ]);
    let listen = collect.address("listening on ");
    let reports = collector::switch_reports();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(&reports[0], &listen).unwrap();
    collect.printed("\"old-two\"");

    std::fs::write(&names, "nodes: {2: new-two}\n").unwrap();
    collect.signal("-HUP");
    let line = collect.said("SIGHUP");
    assert!(line.contains("reloaded --names") && line.contains("1 node(s)"), "{line}");
    sender.send_to(&reports[1], &listen).unwrap();
    let record: serde_json::Value = serde_json::from_str(&collect.printed("\"new-two\"")).unwrap();
    assert_eq!(record["hop_metadata"][1]["node_id_name"], "new-two", "{record}");

    std::fs::write(&names, "nodes: [2, 3\n").unwrap();
    collect.signal("-HUP");
    let line = collect.said("SIGHUP");
    assert!(line.contains("keeping the names before (1 node(s))"), "{line}");
    assert!(line.contains(names.to_str().unwrap()), "names the file: {line}");
    sender.send_to(&reports[2], &listen).unwrap();
    collect.printed("\"new-two\"");

    let (out, said) = collect.stop();
    let summary: serde_json::Value = serde_json::from_str(out.last().unwrap()).unwrap();
    let nodes = summary["summary"]["nodes"].as_array().unwrap();
    let two = nodes.iter().find(|n| n["node"] == 2).unwrap();
    assert_eq!(two["node_name"], "new-two", "{said}");
}

/// The probes on the web view and the metrics server: healthz 200 while
/// collect runs; readyz 200 with its receivers bound, 503 saying what is
/// missing while `--from-nats`'s consumer is not attached (no server
/// answers), 200 once it is (a nats-server). The probes answer a host the
/// view is not told of.
#[test]
fn healthz_and_readyz_on_both_servers() {
    let mut collect = Collect::start(&[
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let metrics = collect.address("metrics on http://");
    let view = collect.address("view on http://");
    for server in [&view, &metrics] {
        assert_eq!(get(server, "/healthz"), (200, "ok\n".to_string()), "{server}");
        assert_eq!(get(server, "/readyz"), (200, "ready\n".to_string()), "{server}");
    }
    let mut stream = TcpStream::connect(&view).unwrap();
    write!(stream, "GET /readyz HTTP/1.1\r\nHost: probe.example\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    collect.stop();

    // An aggregator whose stream's server is away: alive, not ready.
    let mut collect = Collect::start(&[
        "--quiet",
        "--from-nats",
        "nats://127.0.0.1:1",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let metrics = collect.address("metrics on http://");
    let view = collect.address("view on http://");
    for server in [&view, &metrics] {
        assert_eq!(get(server, "/healthz").0, 200, "{server}");
        let (status, body) = get(server, "/readyz");
        assert_eq!(status, 503, "{server}: {body}");
        assert!(body.contains("consumer is not attached"), "{body}");
    }
    collect.stop();

    let dir = workdir("service-readyz-nats");
    let port = servers::free_port();
    let nats = servers::start_nats(&dir, port, &[]);
    let url = format!("nats://127.0.0.1:{port}");
    let mut collect = Collect::start(&["--quiet", "--from-nats", &url, "--metrics", "127.0.0.1:0"]);
    let metrics = collect.address("metrics on http://");
    // Ready once the consumer is made: a state, asked until it comes.
    while get(&metrics, "/readyz").0 == 503 {
        assert!(collect.child.try_wait().unwrap().is_none(), "collect ended: {}", collect.said);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(get(&metrics, "/readyz"), (200, "ready\n".to_string()));
    collect.stop();
    servers::stop(nats);
}

/// `--log warn`: the info lines ("listening on", "view on") are not
/// written, the warnings are; the default (info) writes both.
#[test]
fn log_warn_hides_the_info_lines() {
    let args = ["--quiet", "--from-nats", "nats://127.0.0.1:1", "--http", "127.0.0.1:0"];
    let mut collect = Collect::start(&args);
    collect.said("view on http://");
    collect.said("(trying again)");
    let (_, said) = collect.stop();
    assert!(said.contains("aggregating stream"), "{said}");

    let mut collect = Collect::start(&[&args[..], &["--log", "warn"]].concat());
    collect.said("(trying again)");
    let (_, said) = collect.stop();
    assert!(!said.contains("view on") && !said.contains("aggregating"), "{said}");

    let refused = Command::new(BIN).args(["collect", "--log", "loud"]).output().unwrap();
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && text.contains("[possible values: error, warn, info, debug]"),
        "{text}"
    );
}

/// The packaged unit prints a summary a minute to the journal: at 50
/// nodes the periodic one stays about 30 lines (it was 155), naming the
/// worst node (the highest hop latency), link and flow (the slowest),
/// then how many more; the summary at exit lists every node.
#[test]
fn the_periodic_summary_is_bounded_and_names_the_worst() {
    use int_core::int21::HopMetadata;
    // 49 flows (UDP ports 1-49), each from its own node (101-149) to the
    // sink (node 9): 50 nodes, 49 links. Node 107 holds packets 900 µs,
    // the others 1-49 µs; flow 21's link to the sink takes 5 ms, the
    // others' 2 µs.
    let mut datagrams = Vec::new();
    for round in 0..3u64 {
        for port in 1..=49u16 {
            let node = 100 + u32::from(port);
            let latency = if node == 107 { 900_000 } else { 1000 * u32::from(port) };
            let t = 1_000_000_000 * round + 10_000_000 * u64::from(port);
            let egress = t + u64::from(latency);
            let hop = HopMetadata {
                node_id: Some(node),
                hop_latency: Some(latency),
                queue: Some((0, 1)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(egress),
                ..HopMetadata::default()
            };
            let link = if port == 21 { 5_000_000 } else { 2000 };
            let sequence = datagrams.len() as u32 + 1;
            datagrams.push(collector::stack_report(sequence, 9, port, &[hop], egress + link));
        }
    }
    let mut collect = Collect::start(&["--quiet", "--interval", "0.1", "--listen", "127.0.0.1:0"]);
    let listen = collect.address("listening on ");
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let header = format!("== summary: {} report(s)", datagrams.len());
    collect.printed(&header);
    let mut periodic = vec![header];
    loop {
        let line = collect.stdout.recv().unwrap();
        if line.starts_with("== summary") {
            break;
        }
        periodic.push(line);
    }
    let text = periodic.join("\n");
    println!("{text}");
    assert!(periodic.len() <= 30, "{} lines:\n{text}", periodic.len());
    let flows: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  udp ")).collect();
    assert!(flows[0].starts_with("  udp 10.0.0.1:21 -> "), "the slowest flow first:\n{text}");
    let nodes: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  node ")).collect();
    assert!(nodes[0].starts_with("  node 107: 3 hop(s)"), "the slowest node first:\n{text}");
    let links: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  link ")).collect();
    assert!(links[0].starts_with("  link 121 > 9: "), "the slowest link first:\n{text}");
    assert!(text.contains("  ... and 42 more node(s)"), "{text}");
    assert!(text.contains("  ... and 41 more link(s)"), "{text}");
    assert!(text.contains("  ... and 41 more flow(s)"), "{text}");

    let (out, said) = collect.stop();
    let last = out.iter().rposition(|l| l.starts_with("== summary")).unwrap();
    let at_exit = &out[last..];
    let nodes = at_exit.iter().filter(|l| l.starts_with("  node ")).count();
    assert_eq!(nodes, 50, "{said}\n{}", at_exit.join("\n"));
}

/// Status and head of `GET path` at `server` with `authorization`.
fn get_with(server: &str, path: &str, authorization: Option<&str>) -> (u16, String) {
    let (status, whole) = ask(server, path, authorization);
    (status, whole.split_once("\r\n\r\n").unwrap().0.to_string())
}

/// `--http-token-file`: the view's pages and API ask for the token (a
/// bearer token, or Basic's password with any user: 401 with the
/// challenge a browser answers); the probes do not; an empty token file
/// stops collect at start, saying what to write.
#[test]
fn the_view_asks_for_its_token_and_the_probes_do_not() {
    let dir = workdir("service-token");
    let file = dir.join("token");
    std::fs::write(&file, "  0123456789abcdef0123 \n").unwrap();
    let mut collect = Collect::start(&[
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--http-token-file",
        file.to_str().unwrap(),
    ]);
    let view = collect.address("view on http://");
    for path in ["/", "/api/overview"] {
        let (status, head) = get_with(&view, path, None);
        assert_eq!(status, 401, "{path}: {head}");
        assert!(head.to_lowercase().contains("www-authenticate: basic realm="), "{head}");
        assert_eq!(get_with(&view, path, Some("Bearer 0123456789abcdef012")).0, 401, "{path}");
        assert_eq!(get_with(&view, path, Some("Bearer 0123456789abcdef0123")).0, 200, "{path}");
        // ops:0123456789abcdef0123
        let basic = "Basic b3BzOjAxMjM0NTY3ODlhYmNkZWYwMTIz";
        assert_eq!(get_with(&view, path, Some(basic)).0, 200, "{path}");
    }
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(get_with(&view, probe, None).0, 200, "{probe}");
    }
    collect.stop();

    std::fs::write(&file, "\n").unwrap();
    let args = ["collect", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-token-file"];
    let refused = Command::new(BIN).args(args).arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && text.contains("its first line is empty"), "{text}");
}
