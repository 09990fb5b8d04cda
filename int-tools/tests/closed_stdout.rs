//! int-tools writing into a pipe whose reader went away (`| head`): it
//! ends quietly, by SIGPIPE, as any Unix filter ends; collect included,
//! while a closed socket ends nothing (tests/view_clients.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");
/// SIGPIPE's number on Linux.
const SIGPIPE: i32 = 13;

#[test]
fn decode_into_a_closed_pipe_ends_quietly() {
    let pcap = Path::new(env!("CARGO_TARGET_TMPDIR")).join("closed-stdout.pcap");
    let gen = Command::new(BIN).args(["gen", "--packets", "20000", "--out"]).arg(&pcap).output().unwrap();
    assert!(gen.status.success());
    let mut decode = Command::new(BIN)
        .arg("decode")
        .arg(&pcap)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: one line read, then the reader gone.
    BufReader::new(decode.stdout.take().unwrap()).read_line(&mut String::new()).unwrap();
    let mut said = String::new();
    decode.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    let status = decode.wait().unwrap();
    assert_eq!(status.signal(), Some(SIGPIPE), "{status:?}");
    assert_eq!(said, "");
}

/// collect's own stdout closed (`collect --json | head -1`): the next line
/// it prints ends it by SIGPIPE, quietly.
#[test]
fn a_closed_stdout_ends_collect_quietly() {
    let (mut child, listen) = collector::start_collect(Path::new(BIN), &["--json"]);
    drop(child.stdout.take());
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let report = collector::drop_summary(1, 5);
    let status = loop {
        socket.send_to(&report, &listen).unwrap();
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        // Pacing only: the test waits for the exit, whenever it comes.
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.signal(), Some(SIGPIPE), "{status:?}");
}
