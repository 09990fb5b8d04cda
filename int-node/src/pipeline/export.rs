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
    Socket(UdpSocket),
    Port { port: PortId, queue: QueueId, pool: *mut dpdk_sys::rte_mempool, template: [u8; 42] },
}

#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct ExportStats {
    pub reports_sent: u64,
    pub send_errors: u64,
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
                Path::Socket(socket)
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
    /// storm; returns how many were taken.
    pub fn drain(&mut self, limit: usize) -> usize {
        let mut sent = 0;
        let mut burst = Burst::default();
        for index in 0..self.consumers.len() {
            let mut taken = 0;
            while taken < limit {
                let Some(mut msg) = self.consumers.get_mut(index).and_then(|c| c.try_pop()) else { break };
                taken += 1;
                let sequence = self.next_sequence;
                self.next_sequence = self.next_sequence.wrapping_add(1);
                if let Some(field) = msg.bytes.get_mut(4..8) {
                    field.copy_from_slice(&sequence.to_be_bytes());
                }
                let ok = match &self.path {
                    Path::Socket(socket) => socket.send(msg.payload()).is_ok(),
                    Path::Port { pool, template, port, queue } => {
                        let ok = frame_into(&mut burst, *pool, template, msg.payload());
                        if burst.len() == crate::dpdk::mbuf::BURST {
                            let (_, dropped) = burst.tx(*port, *queue);
                            self.stats.send_errors += dropped as u64;
                        }
                        ok
                    }
                };
                if ok {
                    self.stats.reports_sent += 1;
                } else {
                    self.stats.send_errors += 1;
                }
            }
            sent += taken;
        }
        if let Path::Port { port, queue, .. } = &self.path {
            let (_, dropped) = burst.tx(*port, *queue);
            self.stats.send_errors += dropped as u64;
        }
        sent
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
