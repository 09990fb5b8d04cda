//! collect's IPFIX side (`--listen-ipfix`): IFA terminators' exports, as
//! Broadcom's Trident and Juniper's QFX terminators send them and
//! int-node's reporter writes them (docs/ifa.md, "IPFIX from a
//! terminator"). Templates are remembered per exporter, observation domain
//! and Template ID, at most [`MAX_TEMPLATES`]; each data record of an IFA
//! template is read with int-core's IFA checks of its headers and stack
//! and booked as a TR 2.0 report's hops are: the per-hop view, the web
//! view, the metrics, the IPFIX export and the NATS stream take them alike.
//!
//! A hostile exporter cannot hold the receiver: every length is checked
//! against the datagram before it is trusted, a datagram is at most 64 KB,
//! the templates kept are bounded, and whatever is refused is counted by
//! reason (`ipfix: <reason>` among the malformed reports).

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use int_core::flow::FlowKey;
use int_core::ifa::{self, HopRepr};
use int_core::int21;
use int_core::report::ifa_ipfix::{Elements, IfaRecord, Layout, NotIfa};
use int_core::wire::ipfix::{self, Message, MessageHeader, Set};

use super::udp::ReceiveError;
use crate::collect::books::congestion::figure::{ip_length, Carrier};
use crate::collect::books::congestion::{Packet, When};
use crate::collect::books::datagram::Arrival;
use crate::collect::books::hops::{path_change_record, Seen};
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::books::Books;
use crate::collect::counts::{counter, counts_of, Counted};
use crate::collect::shared::Shared;
use crate::records::{IfaIpfixRecord, IpfixSource};

/// Templates kept at once, over every exporter: a storm of new ones past
/// this is counted (`template_limit`), not kept.
pub const MAX_TEMPLATES: usize = 4096;
/// A template not sent again for this long is forgotten when room is
/// needed (RFC 7011 section 8.4: over UDP templates expire; an exporter
/// that restarted on another port leaves its old ones behind). The SDK's
/// example resends every 30 s.
pub const TEMPLATE_LIFETIME_NS: u64 = 1800 * 1_000_000_000;
/// How often, at most, the kept templates are swept for expired ones
/// while none has room: a storm costs one sweep a second, not one each.
const SWEEP_EVERY_NS: u64 = 1_000_000_000;
/// IFA's RX seconds are 20 bits: they wrap every 2^20 s.
const RX_PERIOD_NS: i64 = (1 << 20) * 1_000_000_000;

/// What the IPFIX receiver counted.
#[derive(Debug, Default)]
pub struct Counts {
    pub messages: AtomicU64,
    pub templates: AtomicU64,
    pub withdrawn: AtomicU64,
    /// Templates without the three IFA elements (kept out).
    pub other_templates: AtomicU64,
    pub template_limit: AtomicU64,
    /// Data sets of a template this exporter never sent, or withdrew.
    pub unknown_template: AtomicU64,
    pub options_templates: AtomicU64,
    pub records: AtomicU64,
    pub refused: AtomicU64,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("ipfix_in", "IFA IPFIX in")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(
            self,
            messages,
            templates,
            withdrawn,
            other_templates,
            template_limit,
            unknown_template,
            options_templates,
            records,
            refused
        )
    }

    fn metrics(&self, out: &mut String) {
        for (name, value) in self.counts() {
            let family = format!("int_collect_ipfix_in_{name}_total");
            counter(out, &family, "IFA IPFIX receiver: see docs/ifa.md.", value);
        }
    }
}

/// The socket `--listen-ipfix` names, bound, with `rcvbuf` bytes of
/// receive buffer (`--rcvbuf`): a template storm's messages are 64 KB
/// each.
pub fn open(listen: &str, rcvbuf: usize) -> Result<UdpSocket, ReceiveError> {
    let address: SocketAddr = listen
        .to_socket_addrs()
        .map_err(|source| ReceiveError::Resolve { listen: listen.to_string(), source })?
        .next()
        .ok_or_else(|| ReceiveError::NoAddress { listen: listen.to_string() })?;
    let socket = UdpSocket::bind(address)
        .map_err(|source| ReceiveError::Bind { listen: listen.to_string(), source })?;
    let timeout = socket.set_read_timeout(Some(Duration::from_millis(50)));
    timeout.map_err(|source| ReceiveError::Socket { what: "a read timeout", source })?;
    let granted = int_os::udp::set_receive_buffer(&socket, rcvbuf)
        .map_err(|source| ReceiveError::ReceiveBuffer { source })?;
    if let Ok(local) = socket.local_addr() {
        log::info!("collect: listening for IFA IPFIX on {local} (receive buffer {granted} bytes)");
    }
    Ok(socket)
}

/// The receiver's thread, booking into the first receiver's books.
pub fn spawn(
    socket: UdpSocket,
    shared: &Arc<Shared>,
    elements: Elements,
    counts: Arc<Counts>,
) -> std::thread::JoinHandle<Result<(), ReceiveError>> {
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let Some(books) = shared.books.first().cloned() else { return Ok(()) };
        let mut reader = Reader::new(elements, counts);
        let mut buf = vec![0u8; 65_536];
        while !shared.quit.load(Ordering::Relaxed) {
            match socket.recv_from(&mut buf) {
                Ok((len, from)) => {
                    let at_ns = crate::schema::now_ns();
                    let mut books = books.lock().map_err(|_| ReceiveError::Poisoned)?;
                    let datagram = buf.get(..len).unwrap_or_default();
                    let booked = reader.take(datagram, Arrival { from, at_ns, missing: 0 }, &mut books);
                    // Records are reports: `--count` counts them.
                    shared.reports.fetch_add(booked, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => return Err(ReceiveError::Receive { source }),
            }
        }
        Ok(())
    })
}

/// A template's key: its exporter, observation domain and id.
type Key = (SocketAddr, u32, u16);

pub struct Reader {
    /// Each template and when it was last sent.
    templates: HashMap<Key, (Layout, u64)>,
    swept_ns: u64,
    elements: Elements,
    counts: Arc<Counts>,
}

impl Reader {
    pub fn new(elements: Elements, counts: Arc<Counts>) -> Reader {
        Reader { templates: HashMap::new(), swept_ns: 0, elements, counts }
    }

    /// One datagram: its templates learnt, its records booked, a lie
    /// counted by reason (what came before it in the message stands).
    /// Returns the records booked.
    pub fn take(&mut self, datagram: &[u8], arrival: Arrival, books: &mut Books) -> u64 {
        let before = self.counts.records.load(Ordering::Relaxed);
        self.read(datagram, arrival, books);
        self.counts.records.load(Ordering::Relaxed) - before
    }

    fn read(&mut self, datagram: &[u8], arrival: Arrival, books: &mut Books) {
        self.counts.messages.fetch_add(1, Ordering::Relaxed);
        books.totals.received += 1;
        let message = match Message::parse(datagram) {
            Ok(message) => message,
            Err(reason) => return self.refuse(reason.name(), &arrival, datagram.len(), books),
        };
        for set in message.sets() {
            let result = match set {
                Ok(set) => self.set(&message.header, set, &arrival, books),
                Err(reason) => Err(reason.name()),
            };
            if let Err(reason) = result {
                return self.refuse(reason, &arrival, datagram.len(), books);
            }
        }
    }

    fn set(
        &mut self,
        head: &MessageHeader,
        set: Set<'_>,
        arrival: &Arrival,
        books: &mut Books,
    ) -> Result<(), &'static str> {
        match set.id {
            ipfix::TEMPLATE_SET_ID => {
                for template in ipfix::templates(set.body) {
                    self.learn((arrival.from, head.domain), arrival.at_ns, &template.map_err(|r| r.name())?);
                }
            }
            ipfix::OPTIONS_TEMPLATE_SET_ID => {
                self.counts.options_templates.fetch_add(1, Ordering::Relaxed);
            }
            id => {
                let Some((layout, _)) = self.templates.get(&(arrival.from, head.domain, id)).copied() else {
                    self.counts.unknown_template.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                };
                let source = IpfixSource {
                    export_time: head.export_time,
                    sequence: head.sequence,
                    domain: head.domain,
                    template_id: id,
                };
                for record in layout.records(set.body) {
                    let record = record.map_err(|r| r.name())?;
                    self.record(&record, source, arrival, books)?;
                }
            }
        }
        Ok(())
    }

    /// A template (or its withdrawal) from an exporter's domain, at
    /// `now_ns`.
    fn learn(
        &mut self,
        (from, domain): (SocketAddr, u32),
        now_ns: u64,
        template: &ipfix::TemplateRecord<'_>,
    ) {
        let key = (from, domain, template.id);
        if !template.is_withdrawal()
            && !self.templates.contains_key(&key)
            && self.templates.len() >= MAX_TEMPLATES
        {
            self.sweep(now_ns);
        }
        let counts = &self.counts;
        if template.is_withdrawal() {
            counts.withdrawn.fetch_add(1, Ordering::Relaxed);
            if template.id == ipfix::TEMPLATE_SET_ID {
                self.templates.retain(|(f, d, _), _| (*f, *d) != (from, domain));
            } else {
                self.templates.remove(&(from, domain, template.id));
            }
            return;
        }
        match Layout::of(template, &self.elements) {
            Ok(layout) if self.templates.len() < MAX_TEMPLATES || self.templates.contains_key(&key) => {
                counts.templates.fetch_add(1, Ordering::Relaxed);
                self.templates.insert(key, (layout, now_ns));
            }
            Ok(_) => {
                counts.template_limit.fetch_add(1, Ordering::Relaxed);
            }
            Err(not) => {
                // A redefinition as another template replaces the old.
                self.templates.remove(&key);
                let other = matches!(not, NotIfa::Other | NotIfa::TooManyFields);
                let count = if other { &counts.other_templates } else { &counts.refused };
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Forgets the templates not sent for [`TEMPLATE_LIFETIME_NS`], at
    /// most once every [`SWEEP_EVERY_NS`].
    fn sweep(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.swept_ns) < SWEEP_EVERY_NS {
            return;
        }
        self.swept_ns = now_ns;
        self.templates.retain(|_, (_, sent_ns)| now_ns.saturating_sub(*sent_ns) < TEMPLATE_LIFETIME_NS);
    }

    /// One packet's record: checked as IFA, booked, printed.
    fn record(
        &mut self,
        record: &IfaRecord<'_>,
        source: IpfixSource,
        arrival: &Arrival,
        books: &mut Books,
    ) -> Result<(), &'static str> {
        let exported = ifa::exported(record.headers, record.stack).map_err(|r| r.reason.name())?;
        self.counts.records.fetch_add(1, Ordering::Relaxed);
        books.totals.reports += 1;
        let hops: Vec<HopRepr> = exported.stack.hops().collect();
        let carried = carried(record.packet);
        let flow = carried.map(|(flow, _)| flow);
        let latency_ns = latency_ns(&hops, arrival.at_ns);
        // Source first, as every protocol's path.
        let path: Vec<int_core::hop::Hop> = hops.iter().rev().map(|hop| hop.as_hop(arrival.at_ns)).collect();
        let (source_node, report_node) =
            (hops.last().map(|h| h.device_id), hops.first().map(|h| h.device_id));
        if let Some(flow) = flow {
            if let Some(ns) = latency_ns {
                let measure = Measure::Latency { ns, flow_seq: None, hops: u8::try_from(hops.len()).ok() };
                books.observe(&Observed { flow, source_node, sink_node: report_node, measure, at_ns: None });
            }
            if !path.is_empty() {
                let at_ms = books.ledger.time_ms(None);
                let seen = Seen { flow, hops: &path, sink: None, sink_ingress_ns: None, at_ms };
                if let Some(change) = books.observe_path(&seen) {
                    books.emit(|| arrival.record(path_change_record(&change, report_node)));
                }
            }
        }
        // IFA's queue figure is its congestion level; the time is the
        // arrival's, as an IPFIX record carries no report time.
        let packet = carried.map(|(flow, ip)| Packet { flow, bytes: ip_length(ip), queue_alert: false });
        let when = When { report_ns: None, arrival_ns: arrival.at_ns };
        books.observe_queues(&path, Carrier::Ifa, when, packet.as_ref());
        let packet_len = record.packet.len();
        books.emit(|| {
            arrival.record(IfaIpfixRecord::new(
                source,
                &exported,
                flow,
                packet_len,
                latency_ns,
                arrival.at_ns,
            ))
        });
        Ok(())
    }

    fn refuse(&self, reason: &str, arrival: &Arrival, len: usize, books: &mut Books) {
        self.counts.refused.fetch_add(1, Ordering::Relaxed);
        let reason = format!("ipfix: {reason}");
        *books.totals.malformed.entry(reason.clone()).or_default() += 1;
        books.refused(arrival, &reason, Some(len));
    }
}

/// The flow of the exported packet and its IP packet: from its Ethernet
/// header, else (an exporter that sends it from the IP header) from its IP
/// header.
fn carried(packet: &[u8]) -> Option<(FlowKey, &[u8])> {
    [true, false].into_iter().find_map(|ethernet| {
        let ip = int21::reported_packet(packet, ethernet)?;
        Some((int21::reported_flow(ip, false)?, ip))
    })
}

/// The newest hop's RX time minus the oldest's, each read near `near_ns`
/// (the arrival), the seconds' 20 bits unwrapped once: `None` for a
/// single hop.
fn latency_ns(hops: &[HopRepr], near_ns: u64) -> Option<i64> {
    let (newest, oldest) = (hops.first()?, hops.last()?);
    if hops.len() < 2 {
        return None;
    }
    let span = newest.rx_ns(near_ns) as i64 - oldest.rx_ns(near_ns) as i64;
    Some(span.rem_euclid(RX_PERIOD_NS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(seconds: u32, nanoseconds: u32) -> HopRepr {
        HopRepr { rx_seconds: seconds, rx_nanoseconds: nanoseconds, ..HopRepr::default() }
    }

    fn template(id: u16) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let len = ipfix::emit_template(&mut buf, id, &Elements::default().fields()).unwrap();
        buf[..len].to_vec()
    }

    /// A full store refuses new templates (a storm evicts nothing fresh);
    /// past the lifetime, the old ones go and the new one is kept; a
    /// template sent again is refreshed, not refused.
    #[test]
    fn a_full_store_forgets_only_expired_templates() {
        let mut reader = Reader::new(Elements::default(), Arc::new(Counts::default()));
        let exporter = (SocketAddr::from(([127, 0, 0, 1], 4739)), 7);
        for id in 0..MAX_TEMPLATES as u16 {
            let bytes = template(256 + id);
            let record = ipfix::templates(&bytes).next().unwrap().unwrap();
            reader.learn(exporter, 1_000, &record);
        }
        let newer = template(256 + MAX_TEMPLATES as u16);
        let newer = ipfix::templates(&newer).next().unwrap().unwrap();
        reader.learn(exporter, 2_000_000_000, &newer);
        assert_eq!(reader.counts.template_limit.load(Ordering::Relaxed), 1);
        let again = template(256);
        let again = ipfix::templates(&again).next().unwrap().unwrap();
        reader.learn(exporter, TEMPLATE_LIFETIME_NS, &again);
        assert_eq!(reader.counts.template_limit.load(Ordering::Relaxed), 1, "a known one is refreshed");
        reader.learn(exporter, TEMPLATE_LIFETIME_NS + 2_000_000_000, &newer);
        assert_eq!(reader.counts.template_limit.load(Ordering::Relaxed), 1);
        // The refreshed one and the new one are left.
        assert_eq!(reader.templates.len(), 2);
        assert!(reader.templates.contains_key(&(exporter.0, 7, 256)));
    }

    /// Newest first: 3.5 s after 2 s is 1.5 s; across the 20-bit wrap the
    /// span stays the short one.
    #[test]
    fn latency_is_the_span_of_the_rx_timestamps() {
        // The arrival, some 36 days after the epoch: the hops' 20 bits
        // of seconds are read in the window before it.
        const NEAR: u64 = ((3 << 20) + 5) * 1_000_000_000;
        assert_eq!(latency_ns(&[hop(3, 500_000_000), hop(2, 0)], NEAR), Some(1_500_000_000));
        assert_eq!(latency_ns(&[hop(0, 100), hop(0x000f_ffff, 999_999_900)], NEAR), Some(200));
        assert_eq!(latency_ns(&[hop(1, 0)], NEAR), None);
        assert_eq!(latency_ns(&[], NEAR), None);
    }
}
