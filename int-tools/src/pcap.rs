//! Captures in and out: pcap and pcapng read as a stream (see
//! [`Capture`]), pcap written (microseconds).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, Endianness};

/// Why a capture cannot be read: the file named, and where it stopped.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{name}: a directory, not a capture file")]
    Directory { name: String },
    #[error("{name}: {source}")]
    Open { name: String, source: std::io::Error },
    #[error("{name}: empty, or shorter than a capture file's header")]
    Empty { name: String },
    #[error("{name}: a damaged capture header: {source}")]
    Header { name: String, source: pcap_file::PcapError },
    #[error("{name}: {source}")]
    Link { name: String, source: LinkError },
    #[error("{name}: not a capture file (its first bytes are {magic:02x?}; decode reads pcap and pcapng)")]
    NotCapture { name: String, magic: [u8; 4] },
    /// The file ends inside a packet: every packet before it was whole.
    #[error("{name}: cut {}: the next packet is incomplete", place(*.whole, *.offset))]
    Cut { name: String, whole: u64, offset: Option<u64> },
    #[error("{name}: damaged {}: {source}", place(*.whole, *.offset))]
    Damaged { name: String, whole: u64, offset: Option<u64>, source: pcap_file::PcapError },
}

/// Where reading stopped: after how many whole packets, and in a pcap
/// (whose records are found by counting) at which byte.
fn place(whole: u64, offset: Option<u64>) -> String {
    match offset {
        Some(byte) => format!("after packet {whole} (byte {byte})"),
        None => format!("after packet {whole}"),
    }
}

/// Why a packet's frame cannot be read as Ethernet.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    #[error(
        "link type {} ({link:?}) cannot be read: decode reads Ethernet, raw IP and Linux cooked (v1, v2) captures",
        u32::from(*.link)
    )]
    Unreadable { link: DataLink },
    #[error("interface {interface} is not described in the file")]
    Undescribed { interface: u32 },
}

/// Why a pcap cannot be written: the file and the system's answer.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {reason}", path.display())]
pub struct WriteError {
    path: PathBuf,
    reason: String,
}

impl WriteError {
    fn new(path: &Path, error: pcap_file::PcapError) -> WriteError {
        // pcap-file says "Error reading bytes" of any I/O error, writes too:
        // the system's own answer says what went wrong.
        let reason = match error {
            pcap_file::PcapError::IoError(io) => io.to_string(),
            other => other.to_string(),
        };
        WriteError { path: path.to_path_buf(), reason }
    }
}

pub struct Writer {
    path: PathBuf,
    inner: PcapWriter<BufWriter<File>>,
}

impl Writer {
    /// A new pcap at `path`, its folder made first if missing (a demo's
    /// first command writes into a folder of its own).
    pub fn create(path: &Path) -> Result<Writer, WriteError> {
        let failed = |reason: String| WriteError { path: path.to_path_buf(), reason };
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|e| failed(format!("cannot make its folder {}: {e}", folder.display())))?;
        }
        let file = File::create(path).map_err(|e| failed(e.to_string()))?;
        let inner = PcapWriter::with_header(BufWriter::new(file), PcapHeader::default())
            .map_err(|e| WriteError::new(path, e))?;
        Ok(Writer { path: path.to_path_buf(), inner })
    }

    pub fn write(&mut self, time_ns: u64, frame: &[u8]) -> Result<(), WriteError> {
        let packet = PcapPacket::new(Duration::from_nanos(time_ns), frame.len() as u32, frame);
        let written = self.inner.write_packet(&packet);
        written.map(|_| ()).map_err(|e| WriteError::new(&self.path, e))
    }
}

/// A capture being read, packet by packet (memory does not grow with the
/// file): pcap (either byte order, us or ns) or pcapng (every interface,
/// its link type and time resolution), from a file or `-` (stdin).
pub struct Capture {
    name: String,
    format: Format,
    /// Packets read so far.
    packets: u64,
    /// pcap: bytes read so far, to say where a cut file ends.
    offset: u64,
}

enum Format {
    Pcap(PcapReader<Box<dyn Read>>, DataLink),
    PcapNg(PcapNgReader<Box<dyn Read>>),
}

/// One captured packet: its capture time (ns since the epoch) and its
/// frame as Ethernet, or why its link type cannot be read.
pub struct Packet {
    pub time_ns: u64,
    pub frame: Result<Vec<u8>, LinkError>,
}

const PCAP_MAGICS: [[u8; 4]; 4] =
    [[0xd4, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4], [0x4d, 0x3c, 0xb2, 0xa1], [0xa1, 0xb2, 0x3c, 0x4d]];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

impl Capture {
    /// Opens `path` (`-`: standard input) and reads its header.
    pub fn open(path: &Path) -> Result<Capture, CaptureError> {
        let name = path.display().to_string();
        let mut source: Box<dyn Read> = if path == Path::new("-") {
            Box::new(std::io::stdin().lock())
        } else {
            if path.is_dir() {
                return Err(CaptureError::Directory { name });
            }
            match File::open(path) {
                Ok(file) => Box::new(file),
                Err(source) => return Err(CaptureError::Open { name, source }),
            }
        };
        let mut magic = [0u8; 4];
        match source.read_exact(&mut magic) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(CaptureError::Empty { name })
            }
            Err(source) => return Err(CaptureError::Open { name, source }),
        }
        let stream: Box<dyn Read> = Box::new(std::io::Cursor::new(magic).chain(BufReader::new(source)));
        let refused = |source| CaptureError::Header { name: name.clone(), source };
        let format = if PCAP_MAGICS.contains(&magic) {
            let reader = PcapReader::new(stream).map_err(refused)?;
            let link = reader.header().datalink;
            readable(link).map_err(|source| CaptureError::Link { name: name.clone(), source })?;
            Format::Pcap(reader, link)
        } else if magic == PCAPNG_MAGIC {
            Format::PcapNg(PcapNgReader::new(stream).map_err(refused)?)
        } else {
            return Err(CaptureError::NotCapture { name, magic });
        };
        Ok(Capture { name, format, packets: 0, offset: 24 })
    }

    /// The next packet; `Err` where the file is cut or damaged (the packets
    /// before it were whole).
    pub fn next_packet(&mut self) -> Option<Result<Packet, CaptureError>> {
        let packet = match &mut self.format {
            Format::Pcap(reader, link) => {
                let link = *link;
                reader.next_packet().map(|read| {
                    read.map(|p| {
                        self.offset += 16 + p.data.len() as u64;
                        Packet {
                            time_ns: p.timestamp.as_nanos() as u64,
                            frame: Ok(as_ethernet(link, &p.data)),
                        }
                    })
                })
            }
            Format::PcapNg(reader) => next_pcapng(reader),
        }?;
        Some(match packet {
            Ok(packet) => {
                self.packets += 1;
                Ok(packet)
            }
            Err(e) => Err(self.cut(e)),
        })
    }

    /// Where and why reading stopped.
    fn cut(&self, error: pcap_file::PcapError) -> CaptureError {
        let (name, whole) = (self.name.clone(), self.packets);
        let offset = match self.format {
            Format::Pcap(..) => Some(self.offset),
            Format::PcapNg(_) => None,
        };
        match error {
            pcap_file::PcapError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                CaptureError::Cut { name, whole, offset }
            }
            source => CaptureError::Damaged { name, whole, offset, source },
        }
    }
}

/// The next packet of a pcapng capture, its time at its interface's
/// resolution; blocks other than packets are read past.
fn next_pcapng(reader: &mut PcapNgReader<Box<dyn Read>>) -> Option<Result<Packet, pcap_file::PcapError>> {
    loop {
        // The section this block is in (a new section's header is a block
        // of its own, read past below).
        let order = reader.section().endianness;
        let block = match reader.next_block()? {
            Ok(block) => block,
            Err(e) => return Some(Err(e)),
        };
        let (interface, raw_time, data) = match block {
            Block::EnhancedPacket(epb) => {
                let raw = epb.timestamp.as_nanos() as u64;
                (epb.interface_id, raw, epb.data.into_owned())
            }
            Block::SimplePacket(spb) => (0, 0, spb.data.into_owned()),
            Block::Packet(pb) => {
                let raw = packet_block_ticks(pb.timestamp, order);
                (u32::from(pb.interface_id), raw, pb.data.into_owned())
            }
            _ => continue,
        };
        let described = reader.interfaces().get(interface as usize);
        let frame = match described {
            None => Err(LinkError::Undescribed { interface }),
            Some(idb) => readable(idb.linktype).map(|()| as_ethernet(idb.linktype, &data)),
        };
        let time_ns = described.map_or(0, |idb| time_ns(raw_time, resolution(idb)));
        return Some(Ok(Packet { time_ns, frame }));
    }
}

/// The obsolete Packet Block's timestamp as one number. The block holds
/// it as two 32-bit words, the high one first, each in the section's byte
/// order (pcapng 4.3, as in the Enhanced Packet Block); pcap-file 2.0 reads
/// the pair as one 64-bit integer, which in a little-endian section puts
/// the high word low.
fn packet_block_ticks(read: u64, order: Endianness) -> u64 {
    match order {
        Endianness::Little => read.rotate_left(32),
        Endianness::Big => read,
    }
}

/// An interface's time unit as if_tsresol gives it: 10^-n or 2^-n seconds
/// (default: microseconds).
fn resolution(idb: &InterfaceDescriptionBlock<'_>) -> u8 {
    idb.options
        .iter()
        .find_map(|option| match option {
            InterfaceDescriptionOption::IfTsResol(resolution) => Some(*resolution),
            _ => None,
        })
        .unwrap_or(6)
}

/// A timestamp of `ticks` units of `resolution` in ns.
fn time_ns(ticks: u64, resolution: u8) -> u64 {
    let ticks = u128::from(ticks);
    let ns = if resolution & 0x80 == 0 {
        let exponent = u32::from(resolution);
        if exponent <= 9 {
            ticks * 10u128.pow(9 - exponent)
        } else {
            ticks / 10u128.pow((exponent - 9).min(38))
        }
    } else {
        (ticks * 1_000_000_000) >> u32::from(resolution & 0x7f).min(127)
    };
    ns.min(u128::from(u64::MAX)) as u64
}

/// Whether decode reads link type `link`, said plainly where not.
fn readable(link: DataLink) -> Result<(), LinkError> {
    if matches!(
        link,
        DataLink::ETHERNET
            | DataLink::RAW
            | DataLink::IPV4
            | DataLink::IPV6
            | DataLink::LINUX_SLL
            | DataLink::LINUX_SLL2
    ) {
        return Ok(());
    }
    Err(LinkError::Unreadable { link })
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
