//! What any TCP client can do to collect's web view (`--http`), against
//! the real binary: pipeline requests and vanish, hold connections open
//! silent or half-sent, or name another host (DNS rebinding). collect
//! stays alive, books every report, keeps its descriptors, and ends with
//! its summary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use collector::{drop_summary, summary_of};

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// collect `--json` with a view on a free loopback port and `args`;
/// returns it, where it listens for reports and where its view is.
fn start(args: &[&str]) -> (Child, String, String) {
    let args = [&["--json", "--quiet", "--http", "127.0.0.1:0"], args].concat();
    let (child, mut said) =
        collector::start_collect_saying(Path::new(BIN), &args, &["listening on ", "view on http://"]);
    let view = said.pop().unwrap();
    (child, said.pop().unwrap(), view)
}

/// Stops collect as an operator does (SIGINT); its summary, once it has
/// exited 0.
fn stop(child: Child) -> serde_json::Value {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    summary_of(child)
}

/// One request's raw bytes, `Connection: close`: the status and body of
/// the answer.
fn ask(view: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(view).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_string())
}

fn get_with_host(view: &str, path: &str, host: &str) -> (u16, String) {
    ask(view, &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"))
}

/// Reads `stream` until the view closes it: EOF, or a reset. A view that
/// never closes fails the test at a bound far beyond any timeout used.
fn wait_closed(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the view kept a connection open: {e}"),
        }
    }
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

#[test]
fn pipelined_requests_on_connections_closed_unread_end_nothing() {
    let (mut child, _, view) = start(&[]);
    let requests = format!("GET /api/overview HTTP/1.1\r\nHost: {view}\r\n\r\n").repeat(1000);
    for _ in 0..20 {
        let mut stream = TcpStream::connect(&view).unwrap();
        // The view may reset the connection before it has read them all.
        let _ = stream.write_all(requests.as_bytes());
        // Closed with answers unread: the view's next writes meet a reset.
        drop(stream);
    }
    let answered = std::panic::catch_unwind(|| get_with_host(&view, "/api/overview", &view));
    let Ok((status, body)) = answered else { panic!("collect ended: {:?}", child.wait().unwrap()) };
    assert_eq!(status, 200, "{body}");
    let summary = stop(child);
    assert_eq!(summary["view"]["served"], 21, "{}", summary["view"]);
}

#[test]
fn idle_and_half_sent_connections_are_closed_and_capped_under_a_low_fd_limit() {
    const CAP: usize = 16;
    const HELD: usize = 100;
    let (child, listen, view) = start(&["--http-connections", "16", "--http-idle-ms", "1500"]);
    let pid = child.id();
    // Once it has answered, the server's runtime holds its descriptors.
    collector::http_get(&view, "/api/overview");
    let baseline = open_fds(pid);
    // Room for the cap and a few more; far from room for every client.
    let limit = format!("--nofile={}", baseline + CAP + 24);
    assert!(Command::new("prlimit").args(["--pid", &pid.to_string(), &limit]).status().unwrap().success());
    let mut held: Vec<TcpStream> = (0..HELD)
        .map(|i| {
            let mut stream = TcpStream::connect(&view).unwrap();
            if i % 2 == 1 {
                let _ = stream.write_all(b"GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
            }
            stream
        })
        .collect();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for sequence in 1..=50 {
        socket.send_to(&drop_summary(sequence, 1), &listen).unwrap();
    }
    // The cap's connections, one just accepted to be refused, and the
    // answered one's if its close is not through yet.
    assert!(open_fds(pid) <= baseline + CAP + 2, "{} descriptors, {baseline} before", open_fds(pid));
    held.iter_mut().for_each(wait_closed);
    // An idle keep-alive connection is closed too, after its answer.
    let mut kept = TcpStream::connect(&view).unwrap();
    write!(kept, "GET /api/overview HTTP/1.1\r\nHost: {view}\r\n\r\n").unwrap();
    wait_closed(&mut kept);
    while collector::http_get(&view, "/api/overview").contains("\"reports\":0,") {
        std::thread::yield_now();
    }
    let summary = stop(child);
    assert_eq!(summary["datagrams"], 50);
    let counts = &summary["view"];
    let count = |name: &str| counts[name].as_u64().unwrap();
    assert_eq!(count("refused") + count("timed_out"), HELD as u64 + 1, "{counts}");
    assert!(count("refused") > 0, "{counts}");
    eprintln!("view: {counts}");
}

#[test]
fn a_request_naming_another_host_is_refused() {
    let (child, _, view) = start(&["--http-host", "View.Example"]);
    let port = view.rsplit_once(':').unwrap().1;
    for path in ["/", "/api/overview", "/api/nodes/1", "/no/such/page"] {
        for host in
            ["evil.example".to_string(), format!("evil.example:{port}"), "127.0.0.1.evil.example".into()]
        {
            let (status, body) = get_with_host(&view, path, &host);
            assert_eq!(status, 421, "{path} for {host}: {body}");
            assert!(body.contains("--http-host"), "{body}");
        }
    }
    // The absolute form names its host in the request line.
    let (status, _) = ask(
        &view,
        &format!(
            "GET http://evil.example/api/overview HTTP/1.1\r\nHost: {view}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 421);
    let (status, _) = ask(&view, "GET /api/overview HTTP/1.0\r\n\r\n");
    assert_eq!(status, 421, "no Host at all");
    for host in
        [view.clone(), format!("localhost:{port}"), "view.example".into(), format!("VIEW.example.:{port}")]
    {
        let (status, body) = get_with_host(&view, "/api/overview", &host);
        assert_eq!(status, 200, "{host}: {body}");
    }
    let summary = stop(child);
    assert_eq!(summary["view"]["wrong_host"], 14, "{}", summary["view"]);
}
