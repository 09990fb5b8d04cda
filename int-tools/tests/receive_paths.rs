//! collect's two ways of reading its sockets keep the same books: the
//! same datagrams read one a system call without UDP GRO (`--gro off
//! --receive-batch 1`, the kernel's plain socket path) and in GRO trains,
//! many messages a call (the default path, and a larger batch) give the
//! same summary, field for field, but for what depends on the clock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;

use std::net::UdpSocket;
use std::path::Path;

use collector::{coalesced, drop_summary, start_collector, summary_of, switch_reports};
use int_os::udp::BatchSender;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// What the senders send: Host-INT drop summaries in runs of one size (GSO
/// trains), Telemetry Report 2.0 stacks of several sizes, a coalesced TR
/// 2.0 datagram, junk, and datagrams longer than collect's buffer.
fn datagrams() -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = (1..=300).map(|sequence| drop_summary(sequence, sequence % 3)).collect();
    let switch = switch_reports();
    all.extend(switch.iter().cloned());
    all.push(coalesced(100, &switch[..6]));
    all.extend((0..40u8).map(|i| vec![i; 20 + usize::from(i % 4)]));
    all.extend((0..3).map(|i| vec![0x20 + i; 10_000]));
    all.extend((301..=600).map(|sequence| drop_summary(sequence, 0)));
    all
}

/// The reports in [`datagrams`]: one each, but six in the coalesced one.
const REPORTS: u64 = 300 + 65 + 6 + 40 + 3 + 300;

/// One collect with `args`, fed every datagram from one sender (64 a
/// system call, runs of one size as GSO sends); its summary.
fn summary_with(args: &[&str]) -> Value {
    // collect stops once it has counted every report (SIGINT could come
    // before it listens for it).
    let count = REPORTS.to_string();
    let fixed = ["--rcvbuf", "33554432", "--duration", "600", "--count", &count];
    let (child, listen) = start_collector(Path::new(BIN), &[&fixed[..], args].concat());
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(&listen).unwrap();
    let mut sender = BatchSender::new(socket);
    let all = datagrams();
    for batch in all.chunks(64) {
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        assert_eq!(sender.send(&refs), refs.len());
    }
    let mut summary = summary_of(child);
    assert_eq!(summary["kernel_drops"], 0, "{summary}");
    forget_the_clock(&mut summary);
    summary
}

/// Drops the fields that depend on when a datagram was read (arrival
/// times, rates, the run's length) and the sender's port: what is left is
/// what the datagrams said.
fn forget_the_clock(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, _| {
                !["seconds", "per_second", "first_ns", "last_ns", "at_ns", "since_ns", "elapsed_s", "time"]
                    .iter()
                    .any(|word| key.contains(word))
            });
            for (_, inner) in map.iter_mut() {
                forget_the_clock(inner);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(forget_the_clock),
        Value::String(text) if text.starts_with("127.0.0.1:") => *text = "127.0.0.1".into(),
        _ => {}
    }
}

#[test]
fn gro_trains_and_single_datagrams_keep_the_same_books() {
    let plain = summary_with(&["--gro", "off", "--receive-batch", "1"]);
    assert_eq!(plain["datagrams"].as_u64(), Some(datagrams().len() as u64), "{plain}");
    assert_eq!(plain["reports"].as_u64(), Some(REPORTS), "{plain}");
    assert!(plain["malformed"].as_u64().unwrap() >= 43, "junk and long datagrams refused: {plain}");
    let reasons = plain["malformed_by_reason"].as_object().unwrap();
    assert_eq!(reasons.get("longer than 9216 bytes"), Some(&Value::from(3)), "{reasons:?}");
    assert!(!plain["flows"].as_array().unwrap().is_empty() && !plain["links"].as_array().unwrap().is_empty());
    assert!(plain["lost_reports"].as_u64().unwrap() > 0, "the drop summaries' gaps: {plain}");
    for args in [&[][..], &["--receive-batch", "256"][..], &["--gro", "off"][..]] {
        let other = summary_with(args);
        assert_eq!(other, plain, "{args:?}");
    }
}
