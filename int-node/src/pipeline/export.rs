//! The exporter, on the main lcore: drains every sink's report ring, stamps
//! the report sequence number (one counter per exporter, from 1, shared by
//! both report kinds, as Host-INT does) and sends each report to the
//! collector: through one kernel UDP socket, or as Ethernet/IPv4/UDP frames
//! on its own DPDK TX queue.

use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use int_core::checksum;
use int_core::wire::{EtherType, EthernetRepr, IpProtocol, Ipv4Repr, UdpRepr};
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::config::{ExportConfig, ExportPath, PortExport};
use crate::dpdk::mbuf::Burst;
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port::{PortId, QueueId};
use int_os::udp::{BatchSender, BATCH};

/// Writes the exporter's report sequence number into a report: in a
/// Telemetry Report 2.0 group header, its low 22 bits after the version
/// and hw_id; in a 0.5 (and Host-INT) header, the 32-bit field at byte 4.
/// An IPFIX message (version 10: bytes 0 and 1 are 0x000a, which a 0.5
/// header's reserved flag bits never are) numbers its records itself and
/// is left alone. Returns whether it stamped.
fn stamp_sequence(report: &mut [u8], sequence: u32) -> bool {
    if report.get(..2) == Some(&IPFIX_VERSION) {
        return false;
    }
    if report.first().is_some_and(|byte| byte >> 4 == int_core::report::tr20::VERSION) {
        if let Some(field) = report.get_mut(..4).and_then(|f| <&mut [u8; 4]>::try_from(f).ok()) {
            let word = u32::from_be_bytes(*field);
            *field = ((word & !0x003f_ffff) | (sequence & 0x003f_ffff)).to_be_bytes();
        }
    } else if let Some(field) = report.get_mut(4..8) {
        field.copy_from_slice(&sequence.to_be_bytes());
    }
    true
}

/// The first two bytes of an IPFIX message (RFC 7011: version 10).
const IPFIX_VERSION: [u8; 2] = [0, 10];

/// Largest report a sink hands over (Host-INT's are 64 to 104 bytes; deep
/// stacks with many instructions need more).
pub const REPORT_MAX: usize = 1024;

/// Ring bytes per report of `export.ring_size`: a ring of N holds N reports
/// of up to 126 bytes (all of Host-INT's); bigger ones take more room.
pub const RECORD_ROOM: usize = 128;

/// Each record in a ring: its length (2 bytes, native order), then the
/// report.
const LEN_PREFIX: usize = 2;

/// Why a report did not go into the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueError {
    /// Longer than [`REPORT_MAX`], or the builder failed.
    TooBig,
    /// Not enough room in the ring now.
    Full,
}

/// A sink's end of its report ring. The ring holds bytes: each report is
/// built in a scratch buffer and pushed as one length-prefixed record (one
/// copy of its own length, not a fixed 1 KB slot), and the exporter only
/// ever sees whole records, since the write index moves once per push.
pub struct ReportSender {
    ring: HeapProd<u8>,
    scratch: Box<[u8; LEN_PREFIX + REPORT_MAX]>,
}

impl ReportSender {
    /// Queues a report of at most `max_len` bytes that `build` writes at the
    /// start of the buffer it is given, returning its length. Nothing is
    /// built when `max_len` bytes do not fit.
    #[inline]
    pub fn queue<E>(
        &mut self,
        max_len: usize,
        build: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<(), QueueError> {
        if max_len > REPORT_MAX {
            return Err(QueueError::TooBig);
        }
        if self.ring.vacant_len() < LEN_PREFIX + max_len {
            return Err(QueueError::Full);
        }
        let (prefix, body) = self.scratch.split_at_mut(LEN_PREFIX);
        let len = build(body).map_err(|_| QueueError::TooBig)?;
        prefix.copy_from_slice(&(len as u16).to_ne_bytes());
        let record = self.scratch.get(..LEN_PREFIX + len).ok_or(QueueError::TooBig)?;
        // A partial push would tear the record stream: all or nothing.
        if self.ring.vacant_len() < record.len() {
            return Err(QueueError::Full);
        }
        self.ring.push_slice(record);
        Ok(())
    }

    /// Whether a report of up to [`RECORD_ROOM`] bytes fits now.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.ring.vacant_len() >= LEN_PREFIX + RECORD_ROOM
    }
}

/// The exporter's end of a sink's report ring.
pub struct ReportReceiver {
    ring: HeapCons<u8>,
}

impl ReportReceiver {
    /// Moves the oldest report into `out` (at least [`REPORT_MAX`] bytes);
    /// returns its length, or `None` when the ring is empty.
    #[inline]
    pub fn pop_into(&mut self, out: &mut [u8]) -> Option<usize> {
        let mut prefix = [0u8; LEN_PREFIX];
        // Checked before anything is taken: a record half taken would leave
        // the ring out of step.
        if out.len() < REPORT_MAX
            || self.ring.occupied_len() < LEN_PREFIX
            || self.ring.pop_slice(&mut prefix) < LEN_PREFIX
        {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes(prefix));
        // The whole record was pushed at once: its body is there.
        let body = out.get_mut(..len)?;
        Some(self.ring.pop_slice(body))
    }
}

/// One ring per sink pipeline, made before the lcores start: room for
/// `reports` reports of up to [`RECORD_ROOM`] bytes, and always for one of
/// [`REPORT_MAX`].
/// Bytes of a report ring of `reports` records.
pub fn ring_bytes(reports: u32) -> usize {
    (reports as usize).saturating_mul(LEN_PREFIX + RECORD_ROOM).max(LEN_PREFIX + REPORT_MAX)
}

pub fn report_ring(reports: u32) -> (ReportSender, ReportReceiver) {
    let bytes = ring_bytes(reports);
    let (ring, consumer) = HeapRb::<u8>::new(bytes).split();
    (
        ReportSender { ring, scratch: Box::new([0; LEN_PREFIX + REPORT_MAX]) },
        ReportReceiver { ring: consumer },
    )
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

/// [`ExportStats`] as the exporter last published them, for readers on
/// other threads (DPDK telemetry).
#[derive(Debug, Default)]
pub struct SharedExportStats {
    pub reports_sent: std::sync::atomic::AtomicU64,
    pub send_errors: std::sync::atomic::AtomicU64,
    pub gso: std::sync::atomic::AtomicBool,
}

impl SharedExportStats {
    fn publish(&self, stats: &ExportStats) {
        use std::sync::atomic::Ordering::Relaxed;
        self.reports_sent.store(stats.reports_sent, Relaxed);
        self.send_errors.store(stats.send_errors, Relaxed);
        self.gso.store(stats.gso, Relaxed);
    }
}

/// The exporter's pace: a token bucket of reports, refilled with time,
/// holding at most one batch.
struct Pacer {
    per_second: u64,
    tokens: u64,
    last: Instant,
}

impl Pacer {
    fn new(per_second: u32) -> Option<Pacer> {
        (per_second > 0).then(|| Pacer {
            per_second: u64::from(per_second),
            tokens: BATCH as u64,
            last: Instant::now(),
        })
    }

    /// Reports that may go now (at most `wanted`), taken from the bucket.
    fn take(&mut self, wanted: usize) -> usize {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_nanos() as u64 * self.per_second / 1_000_000_000;
        if refill > 0 {
            self.tokens = (self.tokens + refill).min(BATCH as u64);
            self.last = now;
        }
        let granted = (wanted as u64).min(self.tokens);
        self.tokens -= granted;
        granted as usize
    }

    /// Gives back what was granted and not sent.
    fn give_back(&mut self, unused: usize) {
        self.tokens = (self.tokens + unused as u64).min(BATCH as u64);
    }
}

pub struct Exporter {
    receivers: Vec<ReportReceiver>,
    pacer: Option<Pacer>,
    path: Path,
    collector: SocketAddr,
    next_sequence: u32,
    pub stats: ExportStats,
    pub shared: std::sync::Arc<SharedExportStats>,
    /// A batch of reports, back to back, as they go out.
    staging: Box<[u8; BATCH * REPORT_MAX]>,
}

/// The Ethernet, IPv4 and UDP headers of every report frame a DPDK port
/// sends, lengths and checksum left for each frame.
fn frame_template(export: &PortExport, collector: std::net::SocketAddrV4) -> [u8; 42] {
    let PortExport { src_mac, dst_mac, src_ip, src_port, .. } = *export;
    let mut template = [0u8; 42];
    let ethernet =
        EthernetRepr { dst: dst_mac, src: src_mac, vlans: [None, None], ethertype: EtherType::Ipv4 };
    let _ = ethernet.emit(&mut template);
    let ip = Ipv4Repr {
        tos: 0,
        total_len: 0,
        ident: 0,
        flags_frag: 0x4000,
        ttl: 64,
        protocol: IpProtocol::Udp,
        checksum: 0,
        src: src_ip,
        dst: *collector.ip(),
        options: [0; 40],
        options_len: 0,
    };
    let (_, ip_udp) = template.split_at_mut(14);
    let _ = ip.emit(ip_udp, false);
    let udp = UdpRepr { src_port, dst_port: collector.port(), length: 0, checksum: 0 };
    let (_, udp_header) = template.split_at_mut(34);
    let _ = udp.emit(udp_header);
    template
}

impl Exporter {
    /// An exporter on the main lcore; `port` is the DPDK port and the pool
    /// its frames come from when `config.path` is a port.
    pub fn new(
        config: &ExportConfig,
        receivers: Vec<ReportReceiver>,
        port: Option<(PortId, &Mempool)>,
    ) -> std::io::Result<Exporter> {
        let path = match (&config.path, port) {
            (ExportPath::Socket, _) => {
                let any = if config.collector.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" };
                let socket = UdpSocket::bind(any)?;
                socket.connect(config.collector)?;
                Path::Socket(BatchSender::new(socket))
            }
            (ExportPath::Port(export), Some((id, pool))) => {
                // `check` refuses an IPv6 collector for a port path.
                let SocketAddr::V4(collector) = config.collector else {
                    return Err(std::io::Error::other("a DPDK port sends reports over IPv4 only"));
                };
                let template = frame_template(export, collector);
                Path::Port { port: id, queue: QueueId(export.queue), pool: pool.as_ptr(), template }
            }
            (ExportPath::Port(_), None) => {
                return Err(std::io::Error::other("no DPDK port for the exporter"))
            }
        };
        Ok(Exporter {
            receivers,
            pacer: Pacer::new(config.pace),
            staging: Box::new([0; BATCH * REPORT_MAX]),
            path,
            collector: config.collector,
            next_sequence: 1,
            stats: ExportStats::default(),
            shared: std::sync::Arc::default(),
        })
    }

    pub fn collector(&self) -> SocketAddr {
        self.collector
    }

    /// Sends what is waiting in the rings, at most `limit` reports (so that
    /// the main lcore still gets to its other duties under a report storm)
    /// and no faster than the pace; returns how many were taken. Up to
    /// [`BATCH`] reports go out per system call (or TX burst).
    pub fn drain(&mut self, limit: usize) -> usize {
        let taken = self.drain_paced(limit);
        if taken > 0 {
            self.shared.publish(&self.stats);
        }
        taken
    }

    fn drain_paced(&mut self, limit: usize) -> usize {
        let Some(pacer) = self.pacer.as_mut() else { return self.drain_unpaced(limit) };
        let granted = pacer.take(limit);
        if granted == 0 {
            return 0;
        }
        let taken = self.drain_unpaced(granted);
        if let Some(pacer) = self.pacer.as_mut() {
            pacer.give_back(granted.saturating_sub(taken));
        }
        taken
    }

    /// Whether reports are waiting in a ring.
    pub fn pending(&self) -> bool {
        self.receivers.iter().any(|r| r.ring.occupied_len() > 0)
    }

    fn drain_unpaced(&mut self, limit: usize) -> usize {
        let mut taken_total = 0;
        let Exporter { receivers, path, next_sequence, stats, staging, .. } = self;
        for receiver in receivers.iter_mut() {
            let limit = limit - taken_total;
            let mut taken = 0;
            while taken < limit {
                // (offset, length) of each report in `staging`.
                let mut spans = [(0usize, 0usize); BATCH];
                let mut count = 0;
                let mut used = 0;
                while count < BATCH.min(limit - taken) {
                    let Some(len) = staging.get_mut(used..).and_then(|rest| receiver.pop_into(rest)) else {
                        break;
                    };
                    let stamped =
                        staging.get_mut(used..used + len).is_some_and(|r| stamp_sequence(r, *next_sequence));
                    if stamped {
                        *next_sequence = next_sequence.wrapping_add(1);
                    }
                    if let Some(span) = spans.get_mut(count) {
                        *span = (used, len);
                    }
                    used += len;
                    count += 1;
                }
                if count == 0 {
                    break;
                }
                let mut payloads: [&[u8]; BATCH] = [&[]; BATCH];
                let mut ready = 0;
                for (payload, &(at, len)) in payloads.iter_mut().zip(spans.iter().take(count)) {
                    if let Some(report) = staging.get(at..at + len) {
                        *payload = report;
                        ready += 1;
                    }
                }
                let (batch, _) = payloads.split_at(ready);
                send_batch(path, stats, batch);
                taken += count;
            }
            taken_total += taken;
        }
        taken_total
    }
}

fn send_batch(path: &mut Path, stats: &mut ExportStats, payloads: &[&[u8]]) {
    match path {
        Path::Socket(sender) => {
            let sent = sender.send(payloads);
            stats.gso = sender.uses_gso();
            stats.reports_sent += sent as u64;
            stats.send_errors += (payloads.len() - sent) as u64;
        }
        Path::Port { pool, template, port, queue } => {
            let mut burst = Burst::default();
            for payload in payloads {
                if burst.len() == crate::dpdk::mbuf::BURST {
                    let (sent, dropped) = burst.tx(*port, *queue);
                    stats.reports_sent += sent as u64;
                    stats.send_errors += dropped as u64;
                }
                if !frame_into(&mut burst, *pool, template, payload) {
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
    let Some(ip_header) = headers.get(14..34) else { return false };
    let ip_sum = checksum::checksum(ip_header);
    if let Some(field) = headers.get_mut(24..26) {
        field.copy_from_slice(&ip_sum.to_be_bytes());
    }
    if let Some(field) = headers.get_mut(38..40) {
        field.copy_from_slice(&(ip_len - 20).to_be_bytes());
    }
    crate::dpdk::mbuf::alloc_into(burst, pool, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pace: a batch at once, then the rate; what was not sent is given
    /// back.
    #[test]
    fn the_pacer_lets_a_batch_go_then_the_rate() {
        let mut pacer = Pacer::new(10_000).unwrap();
        assert_eq!(pacer.take(1000), BATCH);
        assert_eq!(pacer.take(1000), 0);
        pacer.give_back(10);
        assert_eq!(pacer.take(1000), 10);
        std::thread::sleep(std::time::Duration::from_millis(3));
        let granted = pacer.take(1000);
        assert!((20..=BATCH).contains(&granted), "{granted} after 3 ms at 10k/s");
        assert!(Pacer::new(0).is_none(), "0: unpaced");
    }

    /// TR 2.0 and 0.5 headers take the number; an IPFIX message keeps its
    /// bytes (its export time is where a 0.5 header's number goes).
    #[test]
    fn the_sequence_goes_into_tr_headers_and_never_into_ipfix() {
        let mut tr20 = [0x20u8, 0, 0, 0, 9, 9, 9, 9];
        assert!(stamp_sequence(&mut tr20, 0x40_0005));
        assert_eq!(tr20, [0x20, 0, 0, 5, 9, 9, 9, 9]);
        let mut tr05 = [0x00u8, 0x20, 0, 0, 9, 9, 9, 9];
        assert!(stamp_sequence(&mut tr05, 7));
        assert_eq!(tr05, [0x00, 0x20, 0, 0, 0, 0, 0, 7]);
        let mut ipfix = [0u8, 10, 0, 8, 0x65, 1, 2, 3];
        assert!(!stamp_sequence(&mut ipfix, 7));
        assert_eq!(ipfix, [0, 10, 0, 8, 0x65, 1, 2, 3]);
    }

    fn report(i: usize) -> Vec<u8> {
        // 60 to 199 bytes: some records wrap around the ring's end.
        (0..60 + i * 37 % 140).map(|b| (i + b) as u8).collect()
    }

    #[test]
    fn records_arrive_whole_and_in_order_across_the_wrap() {
        let (mut sender, mut receiver) = report_ring(16);
        let mut out = [0u8; REPORT_MAX];
        let mut next_expected = 0;
        for i in 0..5000 {
            let bytes = report(i);
            // The ring is kept full, so that it wraps again and again.
            loop {
                let queued = sender.queue(bytes.len(), |buf| {
                    buf[..bytes.len()].copy_from_slice(&bytes);
                    Ok::<_, ()>(bytes.len())
                });
                if queued == Ok(()) {
                    break;
                }
                assert_eq!(queued, Err(QueueError::Full), "report {i}");
                let len = receiver.pop_into(&mut out).unwrap();
                assert_eq!(&out[..len], report(next_expected).as_slice(), "report {next_expected}");
                next_expected += 1;
            }
        }
        while let Some(len) = receiver.pop_into(&mut out) {
            assert_eq!(&out[..len], report(next_expected).as_slice());
            next_expected += 1;
        }
        assert_eq!(next_expected, 5000);
    }

    #[test]
    fn full_and_too_big_leave_the_ring_intact() {
        let (mut sender, mut receiver) = report_ring(16);
        let mut queued = 0;
        let fill = |buf: &mut [u8]| {
            buf[..100].fill(7);
            Ok::<_, ()>(100)
        };
        while sender.queue(100, fill) == Ok(()) {
            queued += 1;
        }
        assert!(queued >= 16, "room for 16 reports of 128 bytes: {queued}");
        assert_eq!(sender.queue(100, fill), Err(QueueError::Full));
        assert_eq!(sender.queue(REPORT_MAX + 1, fill), Err(QueueError::TooBig));
        assert_eq!(sender.queue(100, |_| Err::<usize, ()>(())), Err(QueueError::Full), "checked first");
        assert_eq!(receiver.pop_into(&mut [0u8; 100]), None, "too small a buffer takes nothing");
        let mut out = [0u8; REPORT_MAX];
        let mut popped = 0;
        while let Some(len) = receiver.pop_into(&mut out) {
            assert_eq!(&out[..len], &[7u8; 100][..]);
            popped += 1;
        }
        assert_eq!(popped, queued);
        assert_eq!(sender.queue(10, |_| Err::<usize, ()>(())), Err(QueueError::TooBig));
        assert_eq!(receiver.pop_into(&mut out), None, "a failed build queues nothing");
    }
}
