//! collect's live web view (`--http`) in a real browser: headless Chromium
//! driven by selenium (tests/view/browser.py) loads the view of a collect
//! fed Telemetry Report 2.0 reports of a multi-hop INT 2.1 path, and finds
//! every node, the link latencies of collect's own JSON summary, the path
//! change in the events and in the flow's drill-down, and a node that
//! stops reporting shown stale. Screenshots of each page go to
//! `INT_VIEW_SHOTS` (docs/view to refresh the docs' ones), else to a
//! folder under target/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use collector::{summary_of, switch_reports};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// collect with `args` on free loopback ports; returns it, where it
/// listens for reports and where its view is.
fn start_collect_with_view(args: &[&str]) -> (Child, String, String) {
    let mut child = Command::new(BIN)
        .args(["collect", "--interval", "0", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let after = |line: &str, word: &str| {
        line.split(word).nth(1).map(|r| r.split([' ', '/']).next().unwrap().to_string())
    };
    let (mut listen, mut view) = (None, None);
    while listen.is_none() || view.is_none() {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "collect ended before it said where it listens");
        listen = listen.or_else(|| after(&line, "listening on "));
        view = view.or_else(|| after(&line, "view on http://"));
    }
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|line| eprintln!("{line}")));
    (child, listen.unwrap(), view.unwrap())
}

/// GET `path` of the view: its JSON.
fn get(view: &str, path: &str) -> serde_json::Value {
    let mut stream = TcpStream::connect(view).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {view}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {response}"))
}

/// Waits for the view to have booked `reports` datagrams.
fn wait_for_reports(view: &str, reports: u64) {
    while get(view, "/api/overview")["reports"].as_u64() < Some(reports) {
        std::thread::yield_now();
    }
}

fn shots_dir() -> PathBuf {
    let dir = match std::env::var_os("INT_VIEW_SHOTS") {
        Some(dir) => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir),
        None => Path::new(env!("CARGO_TARGET_TMPDIR")).join("view-shots"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The reports of flows 2 and 3 (over nodes 1 > 2 > 3 > 9) again and
/// again, from another socket, until `done`: every node but 4 (only on
/// flow 1's new path) keeps reporting.
fn keep_reporting(listen: String, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let again: Vec<Vec<u8>> = switch_reports()[58..60].to_vec();
    std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        while !done.load(Ordering::Relaxed) {
            for datagram in &again {
                socket.send_to(datagram, &listen).unwrap();
            }
            // Pacing only: the test waits for the page's state, not for this.
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    })
}

#[test]
fn the_view_shows_the_fleet_in_a_browser() {
    for binary in ["chromium", "chromedriver", "python3"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {binary} >/dev/null")])
            .status()
            .unwrap()
            .success();
        assert!(
            found,
            "{binary} is missing: run scripts/install-deps.sh (chromium, chromium-driver, selenium)"
        );
    }
    let (child, listen, view) =
        start_collect_with_view(&["--json", "--quiet", "--view-sample-ms", "100", "--view-stale-s", "4"]);
    let datagrams = switch_reports();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        socket.send_to(datagram, &listen).unwrap();
    }
    wait_for_reports(&view, datagrams.len() as u64);
    let done = Arc::new(AtomicBool::new(false));
    let reporter = keep_reporting(listen, Arc::clone(&done));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/view/browser.py");
    let links = "1-2,1-4,2-3,3-9,4-3";
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", &format!("http://{view}/"), "--shots", shots_dir().to_str().unwrap()])
        .args(["--nodes", "1,2,3,4,9", "--links", links, "--stale", "4"])
        .args(["--old-path", "1 > 2 > 3 > 9", "--new-path", "1 > 4 > 3 > 9"])
        .output()
        .unwrap();
    done.store(true, Ordering::Relaxed);
    reporter.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser test failed: {stderr}");
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("browser: {seen}");
    // SIGINT: collect stops as an operator stops it, and prints its summary.
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let summary = summary_of(child);
    // What the page drew is collect's own summary, link by link.
    let summary_links = summary["links"].as_array().unwrap();
    assert_eq!(summary_links.len(), links.split(',').count());
    for link in summary_links {
        let key = format!("{}-{}", link["from"], link["to"]);
        for q in ["p50", "p99"] {
            assert_eq!(seen["links"][&key][q], link["latency_ns"][q], "link {key} {q}");
        }
    }
    let history = seen["path_history"].as_array().unwrap();
    assert!(history[0].as_str().unwrap().ends_with("1 › 4 › 3 › 9"), "{history:?}");
    assert!(history[1].as_str().unwrap().ends_with("1 › 2 › 3 › 9"), "{history:?}");
}
