//! What any TCP client can do to collect's web view (`--http`), against
//! the real binary: pipeline requests and vanish. collect stays alive and
//! ends with its summary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};

use collector::summary_of;

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
    stop(child);
}
