//! decode on the captures operators have, made by other programs: pcapng
//! from editcap and mergecap (nanosecond time, several interfaces), a pipe
//! from tcpdump, a file cut at every byte of its last two packets, a GSO
//! send of several reports in one datagram, an empty file, a directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use files::*;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

fn decode(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).arg("decode").args(args).current_dir(dir).output().unwrap()
}

/// decode --json's records, the command having succeeded.
fn records(dir: &Path, file: &str) -> Vec<serde_json::Value> {
    let output = decode(dir, &["--json", file]);
    assert!(output.status.success(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "{program} {args:?}");
}

/// INT 2.1 packets, 7 of them, 1.5 us apart (gen), in `dir/a.pcap`.
fn capture(dir: &Path) -> Vec<serde_json::Value> {
    let gen = ["gen", "--out", "a.pcap", "--packets", "7", "--flows", "3", "--instrument", "int21-md"];
    let status = Command::new(BIN).args(gen).current_dir(dir).status().unwrap();
    assert!(status.success());
    records(dir, "a.pcap")
}

/// editcap's pcapng at nanosecond resolution reads as the pcap did, time
/// to the ns; mergecap's pcapng of two interfaces gives every packet of
/// both.
#[test]
fn pcapng_of_several_interfaces_and_resolutions() {
    let dir = workdir("captures-pcapng");
    let pcap = capture(&dir);
    run(&dir, "editcap", &["-F", "nsecpcap", "a.pcap", "ns.pcap"]);
    run(&dir, "editcap", &["-F", "pcapng", "ns.pcap", "ns.pcapng"]);
    run(&dir, "editcap", &["-F", "pcapng", "a.pcap", "us.pcapng"]);
    assert_eq!(records(&dir, "ns.pcapng"), pcap);
    assert_eq!(records(&dir, "us.pcapng"), pcap);
    run(&dir, "mergecap", &["-w", "two.pcapng", "a.pcap", "ns.pcapng"]);
    let merged = records(&dir, "two.pcapng");
    assert_eq!(merged.len(), 2 * pcap.len());
    let without_index = |v: &serde_json::Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("index");
        v
    };
    // Same times from both interfaces: each packet twice, in time order.
    for (i, record) in merged.iter().enumerate() {
        assert_eq!(without_index(record), without_index(&pcap[i / 2]), "{i}");
    }
}

/// `-` reads standard input: a pipe from tcpdump prints every packet.
#[test]
fn a_pipe_from_tcpdump() {
    let dir = workdir("captures-pipe");
    let pcap = capture(&dir);
    let mut tcpdump = Command::new("tcpdump")
        .args(["-r", "a.pcap", "-w", "-"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = Command::new(BIN)
        .args(["decode", "--json", "-"])
        .stdin(tcpdump.stdout.take().unwrap())
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(tcpdump.wait().unwrap().success());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let piped: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(piped, pcap);
}

/// A file cut anywhere in its last two packets: every whole packet is
/// printed, then where it was cut, and decode fails.
#[test]
fn a_cut_file_prints_its_whole_packets() {
    let dir = workdir("captures-cut");
    let pcap = capture(&dir);
    let bytes = std::fs::read(dir.join("a.pcap")).unwrap();
    let frames = read_pcap(&dir.join("a.pcap"));
    let last_two = 2 * 16 + frames[5].len() + frames[6].len();
    let start = bytes.len() - last_two;
    for cut in start..bytes.len() {
        std::fs::write(dir.join("cut.pcap"), &bytes[..cut]).unwrap();
        let output = decode(&dir, &["--json", "cut.pcap"]);
        let whole = if cut < start + 16 + frames[5].len() { 5 } else { 6 };
        let printed = String::from_utf8(output.stdout).unwrap().lines().count();
        let said = String::from_utf8_lossy(&output.stderr).to_string();
        // A cut between two packets is a shorter file, not a cut one.
        if cut == start || cut == start + 16 + frames[5].len() {
            assert!(output.status.success(), "{cut}: {said}");
            assert_eq!(printed, whole, "cut at byte {cut}");
            continue;
        }
        assert!(!output.status.success(), "cut at byte {cut}");
        assert_eq!(printed, whole, "cut at byte {cut}");
        assert!(said.contains(&format!("cut after packet {whole}")), "{cut}: {said}");
    }
    assert_eq!(pcap.len(), 7);
}

/// Nothing to read: said plainly, and decode fails.
#[test]
fn an_empty_file_a_directory_and_not_a_capture() {
    let dir = workdir("captures-none");
    std::fs::write(dir.join("empty.pcap"), b"").unwrap();
    std::fs::write(dir.join("text.pcap"), b"hello, world\n").unwrap();
    std::fs::create_dir_all(dir.join("folder")).unwrap();
    for (file, expected) in [
        ("empty.pcap", "empty, or shorter than a capture file's header"),
        ("folder", "a directory, not a capture file"),
        ("text.pcap", "not a capture file"),
        ("missing.pcap", "No such file or directory"),
    ] {
        let output = decode(&dir, &[file]);
        assert!(!output.status.success());
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains(expected), "{file}: {said}");
    }
}

/// A GSO send caught before the kernel cut it: one UDP datagram holding
/// several reports back to back is read as those reports, one record
/// each (Host-INT Drop-Summaries, Telemetry Report 2.0 groups).
#[test]
fn a_gso_datagram_is_read_as_its_reports() {
    let dir = workdir("captures-gso");
    let datagram = |payloads: &[Vec<u8>]| collector::report_frame(&payloads.concat());
    let summaries: Vec<Vec<u8>> = (1..=5).map(|sequence| collector::drop_summary(sequence, 7)).collect();
    let group = collector::switch_reports()[0].clone();
    write_pcap(&dir.join("gso.pcap"), &[datagram(&summaries), datagram(&[group.clone(), group.clone()])]);
    let values = records(&dir, "gso.pcap");
    assert_eq!(values.len(), 7, "{values:?}");
    for (i, value) in values.iter().take(5).enumerate() {
        assert_eq!(
            (value["index"].as_u64(), value["segment"].as_u64(), value["segments"].as_u64()),
            (Some(1), Some(i as u64 + 1), Some(5))
        );
        assert_eq!(value["kind"], "report", "{value}");
        assert_eq!(value["report"]["report_seq"], i + 1, "{value}");
    }
    for value in &values[5..] {
        assert_eq!((value["index"].as_u64(), value["segments"].as_u64()), (Some(2), Some(2)), "{value}");
        assert_eq!(value["report"]["report_node"], 9, "{value}");
    }
}

/// gen refuses each bad argument with a message naming it, all of them at
/// once, and writes nothing.
#[test]
fn gen_refuses_bad_arguments() {
    let dir = workdir("gen-refuses");
    let cases: [(&[&str], &str); 9] = [
        (&["--loss", "1.5"], "--loss 1.5: a share, from 0.0 to 1.0"),
        (&["--vlan", "2"], "--vlan 2: a share"),
        (&["--reorder=-0.1"], "--reorder -0.1: a share"),
        (&["--ipv6", "3"], "--ipv6 3: a share"),
        (&["--jitter-us", "5"], "--jitter-us: only with --latency-us"),
        (&["--latency-us", "5"], "--latency-us: only with --instrument"),
        (&["--proto", "udp", "--tcp-options"], "--tcp-options: no TCP flows"),
        (&["--rate", "0"], "--rate 0: packets per second, above 0"),
        (&["--sizes", "64,20000"], "\"20000\" is not a frame size"),
    ];
    for (args, expected) in cases {
        let output =
            Command::new(BIN).args(["gen", "--out", "x.pcap"]).args(args).current_dir(&dir).output().unwrap();
        assert!(!output.status.success(), "{args:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains(expected), "{args:?}: {said}");
        assert!(!dir.join("x.pcap").exists(), "{args:?} wrote a file");
    }
    // All but --latency-us (which would give --jitter-us its latency).
    let all: Vec<&str> = cases
        .iter()
        .filter(|(args, _)| args[0] != "--latency-us")
        .flat_map(|(args, _)| args.iter().copied())
        .collect();
    let output =
        Command::new(BIN).args(["gen", "--out", "x.pcap"]).args(&all).current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(said.lines().count(), 8, "every problem at once: {said}");
}

/// A pcapng file of one section in either byte order: an Ethernet
/// interface at microseconds and one obsolete Packet Block (type 2) whose
/// timestamp words are `high` and `low`.
fn pcapng_with_packet_block(big_endian: bool, high: u32, low: u32, frame: &[u8]) -> Vec<u8> {
    let u16b = |v: u16| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let u32b = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let block = |kind: u32, body: &[u8]| {
        let len = 12 + body.len() as u32;
        [&u32b(kind)[..], &u32b(len), body, &u32b(len)].concat()
    };
    let header = [&u32b(0x1a2b_3c4d)[..], &u16b(1), &u16b(0), &[0xff; 8]].concat();
    let interface = [&u16b(1)[..], &u16b(0), &u32b(0)].concat();
    let mut data = frame.to_vec();
    data.resize(frame.len().div_ceil(4) * 4, 0);
    let len = u32b(frame.len() as u32);
    let packet = [&u16b(0)[..], &u16b(0), &u32b(high), &u32b(low), &len, &len, &data].concat();
    [block(0x0a0d_0d0a, &header), block(1, &interface), block(2, &packet)].concat()
}

/// pcapng's obsolete Packet Block: its timestamp is the high word then the
/// low one, in either byte order; decode reads the time tshark does
/// (high 1, low 5 at microseconds: 4294.967301 s).
#[test]
fn pcapng_packet_block_times_read_as_tshark_reads_them() {
    let dir = workdir("captures-packet-block");
    let frame = collector::report_frame(&collector::drop_summary(1, 7));
    for (name, big_endian) in [("le.pcapng", false), ("be.pcapng", true)] {
        std::fs::write(dir.join(name), pcapng_with_packet_block(big_endian, 1, 5, &frame)).unwrap();
        let tshark = Command::new("tshark")
            .args(["-r", name, "-T", "fields", "-e", "frame.time_epoch"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(tshark.status.success(), "{}", String::from_utf8_lossy(&tshark.stderr));
        let seconds: f64 = String::from_utf8(tshark.stdout).unwrap().trim().parse().unwrap();
        assert_eq!((seconds * 1e6).round() as u64, (1 << 32) + 5, "tshark, {name}");
        let values = records(&dir, name);
        assert_eq!(values.len(), 1, "{name}: {values:?}");
        assert_eq!(values[0]["time_ns"].as_u64(), Some(((1 << 32) + 5) * 1000), "{name}: {}", values[0]);
        assert_eq!(values[0]["kind"], "report", "{name}: {}", values[0]);
    }
}

/// decode takes time linear in a datagram's length: one of 0x20 and zeros
/// whose last report is cut (no report, no GSO send) took over an hour at
/// 64 KB, when the search for a GSO send's segment size read each size's
/// first segment whole (16 s at 1 KB). Judged against the same binary on
/// the datagram one byte shorter, whose reports are whole, in this run:
/// the cut one may take 8 times as long (2 s more at the least).
#[test]
fn a_64_kb_datagram_decodes_in_linear_time() {
    let dir = workdir("captures-linear");
    let datagram = |len: usize| {
        let mut payload = vec![0u8; len];
        payload[0] = 0x20;
        collector::report_frame(&payload)
    };
    // A group header and 16,248 empty reports of 4 bytes; then one byte more.
    write_pcap(&dir.join("whole.pcap"), &[datagram(65_000)]);
    write_pcap(&dir.join("cut.pcap"), &[datagram(65_001)]);
    let started = Instant::now();
    assert_eq!(records(&dir, "whole.pcap").len(), 1);
    let baseline = started.elapsed();
    let deadline = baseline * 8 + Duration::from_secs(2);
    let mut child = Command::new(BIN)
        .args(["decode", "--json", "cut.pcap"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            child.kill().unwrap();
            panic!(
                "decode of the cut 64 KB still running after {deadline:?} (the whole one took {baseline:?})"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

/// A GSO send whose last segment is shorter (Linux cuts every gso_size
/// bytes and lets the last be less): three TR 2.0 datagrams, of two, two
/// and one reports, in one UDP payload, read as those three.
#[test]
fn a_gso_datagram_with_a_shorter_last_segment() {
    let dir = workdir("captures-gso-short");
    let reports = collector::switch_reports();
    let groups = [1..3, 3..5, 5..6].map(|range| collector::coalesced(range.start as u32, &reports[range]));
    assert!(groups[2].len() < groups[0].len() && groups[0].len() == groups[1].len());
    write_pcap(&dir.join("gso.pcap"), &[collector::report_frame(&groups.concat())]);
    let values = records(&dir, "gso.pcap");
    assert_eq!(values.len(), 3, "{values:?}");
    for (i, value) in values.iter().enumerate() {
        assert_eq!((value["segment"].as_u64(), value["segments"].as_u64()), (Some(i as u64 + 1), Some(3)));
        assert_eq!(value["kind"], "report", "{value}");
        assert!(value["report"]["error"].is_null(), "{value}");
        assert_eq!(value["report"]["reports"].as_array().map(Vec::len), Some([2, 2, 1][i]), "{value}");
    }
}

/// `gen` with what its file cannot hold: a trillion packets (80 TB at
/// the least) or a last packet past 2106 (a pcap's 32-bit seconds) is
/// refused at once, saying why, and nothing is written. (Before, it ran
/// silently on: a guard stops a gen that is still running after a minute,
/// so that a regression fails here instead of filling the disk.)
#[test]
fn gen_refuses_what_cannot_fit() {
    let dir = workdir("gen-cannot-fit");
    let cases: [(&[&str], &str); 3] = [
        (&["--packets", "1000000000000"], "--packets 1000000000000: the pcap takes at least 80000.0 GB"),
        (&["--packets", "10", "--start-ns", "4294967296000000000"], "past what a pcap holds"),
        (
            &["--packets", "1000000", "--rate", "0.0001"],
            "the last packet's time, 11699990000 s since the epoch",
        ),
    ];
    for (args, expected) in cases {
        let mut child = Command::new(BIN)
            .args(["gen", "--out", "x.pcap"])
            .args(args)
            .current_dir(&dir)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                child.kill().unwrap();
                child.wait().unwrap();
                std::fs::remove_file(dir.join("x.pcap")).ok();
                panic!("{args:?}: gen still running after a minute");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let output = child.wait_with_output().unwrap();
        assert!(!output.status.success(), "{args:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains(expected), "{args:?}: {said}");
        assert!(!dir.join("x.pcap").exists(), "{args:?} wrote a file");
    }
}
