//! Packet capture into pcapng, the node's own: `dpdk-dumpcap` needs a
//! secondary process, which a node run with `--no-shconf` or `--no-huge`
//! cannot have. A pipeline taps its RX port as packets arrive and its TX
//! port as it hands them over (before the PMD takes them, as DPDK's pdump
//! does), copying up to the snap length into a ring of its own; a helper
//! thread per capture writes the file. A full ring costs the capture a
//! counted packet (`capture_dropped`), never the packet path a wait.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::dpdk::mbuf::Burst;
use crate::stats::{Counter, Counters};

/// A record in the ring: time (ns since the epoch), original length,
/// captured length, direction; then the captured bytes.
const HEADER: usize = 20;
/// pcapng's EPB flags: inbound and outbound.
const INBOUND: u32 = 0b01;
const OUTBOUND: u32 = 0b10;

/// A pipeline's tap on one direction of a port.
pub struct Tap {
    ring: HeapProd<u8>,
    snaplen: usize,
    direction: u32,
}

/// A pipeline's taps: on what it receives, on what it sends.
#[derive(Default)]
pub struct Taps {
    pub rx: Option<Tap>,
    pub tx: Option<Tap>,
}

impl Taps {
    pub fn any(&self) -> bool {
        self.rx.is_some() || self.tx.is_some()
    }
}

impl Tap {
    /// Copies the burst's packets into the ring, as far as it has room.
    pub fn take(&mut self, burst: &Burst, now_ns: u64, counters: &mut Counters) {
        for i in 0..burst.len() {
            // A multi-segment packet has no single slice to copy.
            let taken = burst.data(i).is_some_and(|frame| self.record(frame, now_ns));
            counters.inc(if taken { Counter::captured } else { Counter::capture_dropped });
        }
    }

    fn record(&mut self, frame: &[u8], now_ns: u64) -> bool {
        let captured = frame.len().min(self.snaplen);
        if self.ring.vacant_len() < HEADER + captured {
            return false;
        }
        let (time, original) = (now_ns.to_ne_bytes(), (frame.len() as u32).to_ne_bytes());
        let (length, direction) = ((captured as u32).to_ne_bytes(), self.direction.to_ne_bytes());
        let fields = [time.as_slice(), original.as_slice(), length.as_slice(), direction.as_slice()];
        let mut header = [0u8; HEADER];
        for (to, from) in header.iter_mut().zip(fields.iter().flat_map(|field| field.iter())) {
            *to = *from;
        }
        self.ring.push_slice(&header);
        // The first `captured` bytes: the snap length, or the whole frame.
        self.ring.push_slice(frame.get(..captured).unwrap_or(frame));
        true
    }
}

/// One capture: its file, and the rings of the pipelines that tap it.
pub struct Capture {
    file: PathBuf,
    port_name: String,
    snaplen: u32,
    buffer_bytes: usize,
    rings: Vec<HeapCons<u8>>,
}

impl Capture {
    pub fn new(file: PathBuf, port_name: String, snaplen: u32, buffer_bytes: usize) -> Capture {
        Capture { file, port_name, snaplen, buffer_bytes, rings: Vec::new() }
    }

    pub fn file(&self) -> &std::path::Path {
        &self.file
    }

    /// A tap for a pipeline, `rx` or not.
    pub fn tap(&mut self, rx: bool) -> Tap {
        let (ring, consumer) = HeapRb::<u8>::new(self.buffer_bytes).split();
        self.rings.push(consumer);
        Tap { ring, snaplen: self.snaplen as usize, direction: if rx { INBOUND } else { OUTBOUND } }
    }

    /// Opens the file; the returned closure writes it until `quit` and
    /// every tap is gone (the workers have stopped), then closes it.
    pub fn writer(mut self, quit: Arc<AtomicBool>) -> std::io::Result<impl FnOnce() + Send + 'static> {
        let file = BufWriter::new(File::create(&self.file)?);
        let mut writer = PcapNgWriter::new(file).map_err(std::io::Error::other)?;
        let interface = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: self.snaplen,
            options: vec![
                InterfaceDescriptionOption::IfName(self.port_name.clone().into()),
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        writer.write_pcapng_block(interface).map_err(std::io::Error::other)?;
        log::info!("capture: port {} into {}", self.port_name, self.file.display());
        Ok(move || {
            let mut buffer = vec![0u8; self.snaplen as usize];
            loop {
                let ended = quit.load(Ordering::Relaxed) && self.rings.iter().all(|r| !r.write_is_held());
                let written: usize =
                    self.rings.iter_mut().map(|ring| drain(ring, &mut writer, &mut buffer)).sum();
                if ended {
                    break;
                }
                if written == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            if let Err(error) = std::io::Write::flush(writer.get_mut()) {
                log::error!("capture {}: {error}", self.file.display());
            }
        })
    }
}

/// Writes what the ring holds; returns the packets written.
fn drain(ring: &mut HeapCons<u8>, writer: &mut PcapNgWriter<BufWriter<File>>, buffer: &mut [u8]) -> usize {
    let mut written = 0;
    let mut header = [0u8; HEADER];
    while ring.occupied_len() >= HEADER && ring.peek_slice(&mut header) == HEADER {
        let [t0, t1, t2, t3, t4, t5, t6, t7, o0, o1, o2, o3, c0, c1, c2, c3, d0, d1, d2, d3] = header;
        let captured = u32::from_ne_bytes([c0, c1, c2, c3]) as usize;
        // The tap pushes the header, then the bytes: wait for them.
        if ring.occupied_len() < HEADER + captured {
            break;
        }
        ring.skip(HEADER);
        let Some(bytes) = buffer.get_mut(..captured) else { break };
        ring.pop_slice(bytes);
        let ns = u64::from_ne_bytes([t0, t1, t2, t3, t4, t5, t6, t7]);
        let packet = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(ns),
            original_len: u32::from_ne_bytes([o0, o1, o2, o3]),
            data: bytes.as_ref().into(),
            options: vec![EnhancedPacketOption::Flags(u32::from_ne_bytes([d0, d1, d2, d3]))],
        };
        if let Err(error) = writer.write_pcapng_block(packet) {
            log::error!("capture: {error}");
        }
        written += 1;
    }
    written
}
