//! An IFA terminator's IPFIX export, as Broadcom's terminators send it
//! (docs/ifa.md, "IPFIX from a terminator"; the wire is int-core's
//! [`int_core::report::ifa_ipfix`]): a template of three elements (the IFA
//! headers, the metadata stack, the packet without its IFA), sent before
//! the first record and again every `template_every_ns`, then a message
//! per packet with its record. Each message is its own datagram on the
//! report ring; nothing is allocated per packet (the ring's scratch buffer
//! is written in place).
//!
//! The IFA terminator (`pipeline/ifa/sink.rs`, under `int.report: ipfix`)
//! calls it once per packet its rules report, with the headers and stack
//! copied before it strips them and the packet after.
//!
//! `report` returns what became of the packet's record ([`Sent`]) for the
//! stage's counters; a full ring loses the record, never waits.

use int_core::ifa::{IfaHeaderRepr, MdHeaderRepr};
use int_core::report::ifa_ipfix::{self, Elements, IfaRecord, HEADERS_LEN};
use int_core::wire::ipfix::{self as wire, MessageHeader};

use crate::pipeline::export::{QueueError, ReportSender, REPORT_MAX};

/// What the reporter is told once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaIpfixSettings {
    /// The Template ID on the wire (256 and above; the SDK's example 257).
    pub template_id: u16,
    pub elements: Elements,
    /// The observation domain: a node's id is a good one.
    pub domain: u32,
    /// The packet is cut to this many bytes (the SDK's
    /// `rx_packet_export_max_length`, its example 256), and to what the
    /// report ring takes.
    pub packet_max: usize,
    /// How often the template goes again (the SDK's example: 30 s).
    pub template_every_ns: u64,
}

impl Default for IfaIpfixSettings {
    fn default() -> Self {
        IfaIpfixSettings {
            template_id: ifa_ipfix::DEFAULT_TEMPLATE_ID,
            elements: Elements::default(),
            domain: 0,
            packet_max: 256,
            template_every_ns: 30_000_000_000,
        }
    }
}

/// One terminated packet's parts.
#[derive(Debug, Clone, Copy)]
pub struct Terminated<'a> {
    /// The IFA header and the metadata header, as [`headers`] writes them.
    pub headers: &'a [u8; HEADERS_LEN],
    pub stack: &'a [u8],
    /// The packet without its IFA, from its Ethernet header.
    pub packet: &'a [u8],
}

/// What [`IfaIpfixReporter::report`] queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// The template message, due before the record.
    pub template: bool,
    pub record: Record,
}

/// What became of a packet's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Queued,
    /// The ring had no room: the record is lost.
    RingFull,
    /// The stack alone does not fit a report: nothing is sent.
    TooBig,
}

/// The 8 bytes of IFA headers a record carries.
pub fn headers(header: &IfaHeaderRepr, md: &MdHeaderRepr) -> [u8; HEADERS_LEN] {
    let mut out = [0u8; HEADERS_LEN];
    // Both fit their 4 bytes; a header whose fields overflow writes zeros.
    let _ = header.emit(&mut out[..4]);
    let _ = md.emit(&mut out[4..]);
    out
}

/// The fixed bytes of a data message: the message and set headers, the
/// IFA headers and both values' longest length prefixes.
const DATA_OVERHEAD: usize = wire::MESSAGE_HEADER_LEN + wire::SET_HEADER_LEN + HEADERS_LEN + 3 + 3;
/// The template message with IANA elements; enterprise ones take 12 more.
const TEMPLATE_MESSAGE_LEN: usize =
    wire::MESSAGE_HEADER_LEN + wire::SET_HEADER_LEN + wire::TEMPLATE_HEADER_LEN + 3 * 4;

pub struct IfaIpfixReporter {
    settings: IfaIpfixSettings,
    /// When the template is due; `None`: before the first record.
    template_due_ns: Option<u64>,
    /// Data records sent (RFC 7011's Sequence Number).
    sequence: u32,
}

impl IfaIpfixReporter {
    pub fn new(settings: IfaIpfixSettings) -> Self {
        IfaIpfixReporter { settings, template_due_ns: None, sequence: 0 }
    }

    /// Queues `part`'s record, the template first when it is due.
    /// `now_ns`: nanoseconds since the epoch (the export time's seconds).
    pub fn report(&mut self, sender: &mut ReportSender, now_ns: u64, part: Terminated<'_>) -> Sent {
        if DATA_OVERHEAD + part.stack.len() > REPORT_MAX {
            return Sent { template: false, record: Record::TooBig };
        }
        let template = self.template_due(now_ns);
        if template {
            let len = TEMPLATE_MESSAGE_LEN + 12;
            if sender.queue(len, |buf| self.write_template(buf, now_ns)).is_err() {
                return Sent { template: false, record: Record::RingFull };
            }
            self.template_due_ns = Some(now_ns.saturating_add(self.settings.template_every_ns));
        }
        let record = self.cut(part, REPORT_MAX);
        let len = wire::MESSAGE_HEADER_LEN + wire::SET_HEADER_LEN + record.len();
        let record = match sender.queue(len, |buf| self.write_record(buf, now_ns, &record)) {
            Ok(()) => {
                self.sequence = self.sequence.wrapping_add(1);
                Record::Queued
            }
            Err(QueueError::Full) => Record::RingFull,
            Err(QueueError::TooBig) => Record::TooBig,
        };
        Sent { template, record }
    }

    fn template_due(&self, now_ns: u64) -> bool {
        self.template_due_ns.is_none_or(|due| now_ns >= due)
    }

    fn head(&self, now_ns: u64) -> MessageHeader {
        MessageHeader {
            length: 0,
            export_time: (now_ns / 1_000_000_000) as u32,
            sequence: self.sequence,
            domain: self.settings.domain,
        }
    }

    /// The template message.
    pub fn write_template(&self, buf: &mut [u8], now_ns: u64) -> Result<usize, int_core::EmitError> {
        let s = &self.settings;
        ifa_ipfix::emit_template_message(buf, self.head(now_ns), s.template_id, &s.elements)
    }

    /// `part`'s record, its packet cut to `packet_max` and so that its
    /// message takes at most `message_max` bytes.
    pub fn cut<'a>(&self, part: Terminated<'a>, message_max: usize) -> IfaRecord<'a> {
        let room = message_max.saturating_sub(DATA_OVERHEAD + part.stack.len());
        let packet = part.packet.get(..self.settings.packet_max.min(room)).unwrap_or(part.packet);
        IfaRecord { headers: part.headers, stack: part.stack, packet }
    }

    /// A data message with one record.
    pub fn write_record(
        &self,
        buf: &mut [u8],
        now_ns: u64,
        record: &IfaRecord<'_>,
    ) -> Result<usize, int_core::EmitError> {
        ifa_ipfix::emit_data_message(buf, self.head(now_ns), self.settings.template_id, record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::export::report_ring;
    use int_core::report::ifa_ipfix::Layout;
    use int_core::wire::ipfix::{templates, Message};

    const HEADERS: [u8; 8] = [0x2f, 17, 0x04, 0xff, 0, 0, 0xfe, 8];

    fn part<'a>(stack: &'a [u8], packet: &'a [u8]) -> Terminated<'a> {
        Terminated { headers: &HEADERS, stack, packet }
    }

    fn queued(template: bool) -> Sent {
        Sent { template, record: Record::Queued }
    }

    fn popped(receiver: &mut crate::pipeline::export::ReportReceiver) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; REPORT_MAX];
        while let Some(len) = receiver.pop_into(&mut buf) {
            out.push(buf[..len].to_vec());
        }
        out
    }

    /// The template goes first, then one message per record; again after
    /// `template_every_ns`; each record reads back with int-core's reader.
    #[test]
    fn the_template_goes_first_and_again_when_due() {
        let (mut sender, mut receiver) = report_ring(16);
        let settings =
            IfaIpfixSettings { domain: 7, template_every_ns: 1_000, ..IfaIpfixSettings::default() };
        let mut reporter = IfaIpfixReporter::new(settings);
        let stack = [0x11u8; 32];
        let packet = [0x45u8; 600];
        assert_eq!(reporter.report(&mut sender, 5_000_000_000, part(&stack, &packet)), queued(true));
        assert_eq!(reporter.report(&mut sender, 5_000_000_500, part(&stack, &packet)), queued(false));
        assert_eq!(reporter.report(&mut sender, 5_000_001_000, part(&stack, &packet)), queued(true));
        let messages = popped(&mut receiver);
        let ids: Vec<u16> = messages.iter().map(|m| u16::from_be_bytes([m[16], m[17]])).collect();
        assert_eq!(ids, [2, 257, 257, 2, 257]);
        let template = Message::parse(&messages[0]).unwrap();
        assert_eq!(
            (template.header.domain, template.header.export_time, template.header.sequence),
            (7, 5, 0)
        );
        let set = template.sets().next().unwrap().unwrap();
        let layout = Layout::of(&templates(set.body).next().unwrap().unwrap(), &Elements::default()).unwrap();
        let sequences: Vec<u32> =
            messages.iter().map(|m| Message::parse(m).unwrap().header.sequence).collect();
        assert_eq!(sequences, [0, 0, 1, 2, 2]);
        for data in [&messages[1], &messages[2], &messages[4]] {
            let message = Message::parse(data).unwrap();
            let body = message.sets().next().unwrap().unwrap().body;
            let record = layout.records(body).next().unwrap().unwrap();
            // Cut to the default 256 bytes.
            assert_eq!(record, IfaRecord { headers: &HEADERS, stack: &stack, packet: &packet[..256] });
        }
    }

    /// A long stack leaves less room for the packet; a stack that alone
    /// does not fit is refused before anything is queued.
    #[test]
    fn the_packet_is_cut_to_the_report_and_a_huge_stack_refused() {
        let (mut sender, mut receiver) = report_ring(16);
        let settings = IfaIpfixSettings { packet_max: 9000, ..IfaIpfixSettings::default() };
        let mut reporter = IfaIpfixReporter::new(settings);
        let stack = [0u8; 30 * 32];
        let packet = [0x45u8; 1500];
        assert_eq!(reporter.report(&mut sender, 0, part(&stack, &packet)), queued(true));
        let messages = popped(&mut receiver);
        assert!((REPORT_MAX - 4..=REPORT_MAX).contains(&messages[1].len()), "{}", messages[1].len());
        let huge = [0u8; REPORT_MAX];
        assert_eq!(
            reporter.report(&mut sender, 0, part(&huge, &packet)),
            Sent { template: false, record: Record::TooBig }
        );
        assert!(popped(&mut receiver).is_empty());
    }

    #[test]
    fn a_full_ring_loses_the_record_and_keeps_the_sequence() {
        let (mut sender, mut receiver) = report_ring(4);
        let mut reporter = IfaIpfixReporter::new(IfaIpfixSettings::default());
        let stack = [0u8; 32];
        let mut outcomes = Vec::new();
        while outcomes.last() != Some(&Record::RingFull) && outcomes.len() < 1000 {
            outcomes.push(reporter.report(&mut sender, 0, part(&stack, &[0x45; 64])).record);
        }
        let records = outcomes.iter().filter(|o| **o == Record::Queued).count();
        assert_eq!(outcomes.last(), Some(&Record::RingFull));
        assert!(records >= 1);
        assert_eq!(reporter.sequence as usize, records);
        // The lost record took no number: the next one goes on from it.
        assert_eq!(popped(&mut receiver).len(), records + 1);
        assert_eq!(reporter.report(&mut sender, 0, part(&stack, &[0x45; 64])), queued(false));
        let last = popped(&mut receiver).pop().unwrap();
        assert_eq!(Message::parse(&last).unwrap().header.sequence as usize, records);
    }

    #[test]
    fn headers_are_the_two_headers_bytes() {
        let header = IfaHeaderRepr { next_header: 17, max_length: 0xff, ..IfaHeaderRepr::default() };
        let md = MdHeaderRepr { hop_limit: 0xfe, current_length: 8, ..MdHeaderRepr::default() };
        assert_eq!(headers(&header, &md), [0x2f, 17, 0, 0xff, 0, 0, 0xfe, 8]);
    }
}
