//! pcap files in and out (classic format, microsecond or nanosecond
//! timestamps on read, microseconds on write).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::DataLink;

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

/// Every frame of a pcap with its capture time in ns, as an Ethernet
/// frame: captures of raw IP (link types 101, 228, 229) and Linux cooked
/// ones (`tcpdump -i any`: 113, 276) get an Ethernet header of zero
/// addresses and their EtherType; any other link type is refused by name,
/// never read as Ethernet.
pub fn read_all(path: &Path) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = PcapReader::new(BufReader::new(file))
        .map_err(|e| format!("{}: not a pcap file: {e}", path.display()))?;
    let link = reader.header().datalink;
    if !matches!(
        link,
        DataLink::ETHERNET
            | DataLink::RAW
            | DataLink::IPV4
            | DataLink::IPV6
            | DataLink::LINUX_SLL
            | DataLink::LINUX_SLL2
    ) {
        return Err(format!(
            "{}: link type {} ({link:?}) cannot be read: decode reads Ethernet, raw IP and Linux cooked captures",
            path.display(),
            u32::from(link)
        ));
    }
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|e| format!("{}: packet {}: {e}", path.display(), frames.len() + 1))?;
        frames.push((packet.timestamp.as_nanos() as u64, as_ethernet(link, &packet.data)));
    }
    Ok(frames)
}

/// A captured packet of link type `link` as an Ethernet frame.
fn as_ethernet(link: DataLink, data: &[u8]) -> Vec<u8> {
    let by_version = |ip: &[u8]| match ip.first().map(|b| b >> 4) {
        Some(6) => 0x86dd_u16,
        _ => 0x0800,
    };
    let ether_type =
        |at: usize| data.get(at..at + 2).and_then(|b| b.try_into().ok()).map_or(0, u16::from_be_bytes);
    let (ether_type, payload) = match link {
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => (by_version(data), data),
        // struct sll_header: the protocol in bytes 14-15, 16 bytes in all.
        DataLink::LINUX_SLL => (ether_type(14), data.get(16..).unwrap_or_default()),
        // struct sll2_header: the protocol first, 20 bytes in all.
        DataLink::LINUX_SLL2 => (ether_type(0), data.get(20..).unwrap_or_default()),
        _ => return data.to_vec(),
    };
    let mut frame = vec![0u8; 12];
    frame.extend_from_slice(&ether_type.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_become_ethernet() {
        let ipv4 = [0x45u8, 0, 0, 20];
        let raw = as_ethernet(DataLink::RAW, &ipv4);
        assert_eq!((&raw[12..14], &raw[14..]), (&[0x08, 0x00][..], &ipv4[..]));
        let ipv6 = [0x60u8, 0, 0, 0];
        assert_eq!(&as_ethernet(DataLink::IPV6, &ipv6)[12..14], &[0x86, 0xdd]);
        let mut sll = vec![0u8; 16];
        sll[14..16].copy_from_slice(&[0x86, 0xdd]);
        sll.extend_from_slice(&ipv6);
        assert_eq!(as_ethernet(DataLink::LINUX_SLL, &sll)[12..], [0x86, 0xdd, 0x60, 0, 0, 0]);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0u8; 18]);
        sll2.extend_from_slice(&ipv4);
        assert_eq!(as_ethernet(DataLink::LINUX_SLL2, &sll2)[12..], [0x08, 0x00, 0x45, 0, 0, 20]);
    }
}
