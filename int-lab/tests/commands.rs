//! int-lab's commands as the labs and benchmarks use them. These tests
//! also make cargo build the int-lab binary, which the workspace's
//! documentation tests (tests/deployment.rs) ask for its --help.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::UdpSocket;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_int-lab");

/// `send` puts exactly the datagrams it is asked for on the wire: this
/// many, of this size, from one source port (one flow).
#[test]
fn send_sends_what_it_is_asked_for() {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Only a guard against a hang: the test waits for 50 datagrams.
    receiver.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let to = receiver.local_addr().unwrap().to_string();
    let status = Command::new(BIN)
        .args(["send", "--to", &to, "--packets", "50", "--rate", "100000", "--size", "64"])
        .status()
        .unwrap();
    assert!(status.success());
    let mut buffer = [0u8; 2048];
    let mut sources = Vec::new();
    for _ in 0..50 {
        let (length, from) = receiver.recv_from(&mut buffer).unwrap();
        assert_eq!(length, 64);
        sources.push(from);
    }
    sources.dedup();
    assert_eq!(sources.len(), 1, "one flow: {sources:?}");
}

/// A topology that is not there is an error that names it, not a panic.
#[test]
fn a_missing_topology_is_an_error() {
    let output = Command::new(BIN).args(["lab", "--topology", "/nonexistent/lab.yaml"]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.starts_with("error:") && said.contains("/nonexistent/lab.yaml"), "{said}");
}
