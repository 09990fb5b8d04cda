//! pcap files in and out (classic format, microsecond or nanosecond
//! timestamps on read, microseconds on write).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};

pub struct Writer {
    inner: PcapWriter<BufWriter<File>>,
}

impl Writer {
    pub fn create(path: &Path) -> Result<Writer, String> {
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let inner = PcapWriter::with_header(BufWriter::new(file), PcapHeader::default())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Writer { inner })
    }

    pub fn write(&mut self, time_ns: u64, frame: &[u8]) -> Result<(), String> {
        let packet = PcapPacket::new(Duration::from_nanos(time_ns), frame.len() as u32, frame);
        self.inner.write_packet(&packet).map(|_| ()).map_err(|e| e.to_string())
    }
}

/// Every frame of a pcap with its capture time in ns.
pub fn read_all(path: &Path) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = PcapReader::new(BufReader::new(file))
        .map_err(|e| format!("{}: not a pcap file: {e}", path.display()))?;
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|e| format!("{}: packet {}: {e}", path.display(), frames.len() + 1))?;
        frames.push((packet.timestamp.as_nanos() as u64, packet.data.into_owned()));
    }
    Ok(frames)
}
