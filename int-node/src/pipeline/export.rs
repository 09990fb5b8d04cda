//! The exporter, on the main lcore: drains every sink's report ring, stamps
//! the report sequence number (one counter per exporter, from 1, shared by
//! both report kinds, as Host-INT does) and sends each report to the
//! collector: through one kernel UDP socket, or as Ethernet/IPv4/UDP frames
//! on its own DPDK TX queue.

use std::net::{SocketAddrV4, UdpSocket};

use int_core::checksum;
use int_core::wire::{EtherType, EthernetRepr, IpProtocol, Ipv4Repr, UdpRepr};
use ringbuf::traits::{Consumer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::config::{ExportConfig, ExportPath};
use crate::dpdk::mbuf::Burst;
use crate::dpdk::mempool::Mempool;
use crate::dpdk::os::{BatchSender, BATCH};
use crate::dpdk::port::{PortId, QueueId};

/// Largest report a sink hands over (Host-INT's are 64 to 104 bytes; deep
/// stacks with many instructions need more).
pub const REPORT_MAX: usize = 1024;

#[derive(Clone, Copy)]
pub struct ReportMsg {
    pub len: u16,
    pub bytes: [u8; REPORT_MAX],
}

impl ReportMsg {
    pub fn empty() -> Self {
        ReportMsg { len: 0, bytes: [0; REPORT_MAX] }
    }

    pub fn payload(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

pub type ReportProducer = HeapProd<ReportMsg>;
pub type ReportConsumer = HeapCons<ReportMsg>;

/// One ring per sink pipeline, made before the lcores start.
pub fn report_ring(size: u32) -> (ReportProducer, ReportConsumer) {
    HeapRb::<ReportMsg>::new(size as usize).split()
}

enum Path {
    Socket(BatchSender),
    Port { port: PortId, queue: QueueId, pool: *mut dpdk_sys::rte_mempool, template: [u8; 42] },
}

#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct ExportStats {
    pub reports_sent: u64,
    pub send_errors: u64,
    /// Whether the socket path still sends runs of equal-size reports as
    /// UDP GSO messages.
    pub gso: bool,
}

pub struct Exporter {
    consumers: Vec<ReportConsumer>,
    path: Path,
    collector: SocketAddrV4,
    next_sequence: u32,
    pub stats: ExportStats,
}

impl Exporter {
    pub fn new(
        config: &ExportConfig,
        consumers: Vec<ReportConsumer>,
        port_ids: &[PortId],
        port_macs: &[[u8; 6]],
        pool: &Mempool,
    ) -> std::io::Result<Exporter> {
        let path = match &config.path {
            ExportPath::Socket => {
                let socket = UdpSocket::bind("0.0.0.0:0")?;
                socket.connect(config.collector)?;
                Path::Socket(BatchSender::new(socket))
            }
            ExportPath::Port { port, queue, src_mac, dst_mac, src_ip, src_port } => {
                let _ = port_macs;
                let id = port_ids.get(*port).copied().unwrap_or(PortId(0));
                let mut template = [0u8; 42];
                let ethernet = EthernetRepr {
                    dst: *dst_mac,
                    src: *src_mac,
                    vlans: [None, None],
                    ethertype: EtherType::Ipv4,
                };
                let _ = ethernet.emit(&mut template);
                let ip = Ipv4Repr {
                    tos: 0,
                    total_len: 0,
                    ident: 0,
                    flags_frag: 0x4000,
                    ttl: 64,
                    protocol: IpProtocol::Udp,
                    checksum: 0,
                    src: *src_ip,
                    dst: *config.collector.ip(),
                    options: [0; 40],
                    options_len: 0,
                };
                let _ = ip.emit(template.get_mut(14..).unwrap_or(&mut []), false);
                let udp = UdpRepr {
                    src_port: *src_port,
                    dst_port: config.collector.port(),
                    length: 0,
                    checksum: 0,
                };
                let _ = udp.emit(template.get_mut(34..).unwrap_or(&mut []));
                Path::Port { port: id, queue: QueueId(*queue), pool: pool.as_ptr(), template }
            }
        };
        Ok(Exporter {
            consumers,
            path,
            collector: config.collector,
            next_sequence: 1,
            stats: ExportStats::default(),
        })
    }

    pub fn collector(&self) -> SocketAddrV4 {
        self.collector
    }

    /// Sends what is waiting in the rings, at most `limit` reports per ring
    /// so that the main lcore still gets to its other duties under a report
    /// storm; returns how many were taken. Reports are sent from the ring's
    /// own memory (no copy), up to [`BATCH`] per system call.
    pub fn drain(&mut self, limit: usize) -> usize {
        let mut taken_total = 0;
        let Exporter { consumers, path, next_sequence, stats, .. } = self;
        for consumer in consumers.iter_mut() {
            let mut taken = 0;
            while taken < limit {
                let (oldest, _) = consumer.as_mut_slices();
                let count = oldest.len().min(BATCH).min(limit - taken);
                if count == 0 {
                    break;
                }
                let batch = oldest.get_mut(..count).unwrap_or(&mut []);
                for msg in batch.iter_mut() {
                    if let Some(field) = msg.bytes.get_mut(4..8) {
                        field.copy_from_slice(&next_sequence.to_be_bytes());
                    }
                    *next_sequence = next_sequence.wrapping_add(1);
                }
                send_batch(path, stats, batch);
                consumer.skip(count);
                taken += count;
            }
            taken_total += taken;
        }
        taken_total
    }
}

fn send_batch(path: &mut Path, stats: &mut ExportStats, batch: &[ReportMsg]) {
    match path {
        Path::Socket(sender) => {
            let mut payloads: [&[u8]; BATCH] = [&[]; BATCH];
            for (slot, msg) in payloads.iter_mut().zip(batch.iter()) {
                *slot = msg.payload();
            }
            let count = batch.len().min(BATCH);
            let sent = sender.send(payloads.get(..count).unwrap_or(&[]));
            stats.gso = sender.uses_gso();
            stats.reports_sent += sent as u64;
            stats.send_errors += (count - sent) as u64;
        }
        Path::Port { pool, template, port, queue } => {
            let mut burst = Burst::default();
            for msg in batch {
                if burst.len() == crate::dpdk::mbuf::BURST {
                    let (sent, dropped) = burst.tx(*port, *queue);
                    stats.reports_sent += sent as u64;
                    stats.send_errors += dropped as u64;
                }
                if !frame_into(&mut burst, *pool, template, msg.payload()) {
                    stats.send_errors += 1;
                }
            }
            let (sent, dropped) = burst.tx(*port, *queue);
            stats.reports_sent += sent as u64;
            stats.send_errors += dropped as u64;
        }
    }
}

/// Builds one report frame in a fresh mbuf and appends it to `burst`.
fn frame_into(
    burst: &mut Burst,
    pool: *mut dpdk_sys::rte_mempool,
    template: &[u8; 42],
    payload: &[u8],
) -> bool {
    let mut frame = [0u8; 42 + REPORT_MAX];
    let Some(out) = frame.get_mut(..42 + payload.len()) else { return false };
    let (headers, body) = out.split_at_mut(42);
    headers.copy_from_slice(template);
    body.copy_from_slice(payload);
    let ip_len = (20 + 8 + payload.len()) as u16;
    if let Some(field) = headers.get_mut(16..18) {
        field.copy_from_slice(&ip_len.to_be_bytes());
    }
    let ip_sum = checksum::checksum(headers.get(14..34).unwrap_or(&[]));
    if let Some(field) = headers.get_mut(24..26) {
        field.copy_from_slice(&ip_sum.to_be_bytes());
    }
    if let Some(field) = headers.get_mut(38..40) {
        field.copy_from_slice(&(ip_len - 20).to_be_bytes());
    }
    crate::dpdk::mbuf::alloc_into(burst, pool, out)
}
