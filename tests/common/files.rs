//! Test files: a fresh directory per test, pcap files in and out. Shared by
//! the workspace's end-to-end tests (int-node's and int-tools').
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};

/// A fresh directory for one test's files.
pub fn workdir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let file = File::create(path).unwrap();
    let mut writer = PcapWriter::with_header(file, PcapHeader::default()).unwrap();
    for (i, frame) in frames.iter().enumerate() {
        let ts = Duration::from_micros(1_700_000_000_000_000 + i as u64 * 10);
        writer.write_packet(&PcapPacket::new(ts, frame.len() as u32, frame)).unwrap();
    }
}

/// Frames with their capture times (ns since the epoch).
pub fn write_pcap_at(path: &Path, frames: &[(u64, Vec<u8>)]) {
    let file = File::create(path).unwrap();
    let mut writer = PcapWriter::with_header(file, PcapHeader::default()).unwrap();
    for (ns, frame) in frames {
        writer.write_packet(&PcapPacket::new(Duration::from_nanos(*ns), frame.len() as u32, frame)).unwrap();
    }
}

pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = PcapReader::new(file).unwrap();
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        frames.push(packet.unwrap().data.into_owned());
    }
    frames
}

/// The UDP payload of each IPv4 frame of a capture (reports as their
/// sender wrote them).
pub fn udp_payloads(pcap: &Path) -> Vec<Vec<u8>> {
    read_pcap(pcap)
        .into_iter()
        .map(|frame| {
            let ihl = usize::from(frame[14] & 0x0f) * 4;
            frame[14 + ihl + 8..].to_vec()
        })
        .collect()
}
