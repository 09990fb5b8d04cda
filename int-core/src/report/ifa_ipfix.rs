//! What an IFA terminator exports in IPFIX, as Broadcom's terminators do
//! (OpenBCM sdk-6.5.20 `src/bcm/esw/xgs5/ifa2.c`; docs/ifa.md, "IPFIX
//! from a terminator", cites every line): one template of three elements,
//! and a data record per packet:
//!
//! - the IFA headers: the IFA header and the metadata header, 8 bytes
//!   (`_BCM_XGS5_IFA2_TEMPLATE_HEADERS_LENGTH`);
//! - the metadata stack, variable length (`0xFFFF`);
//! - the packet without its IFA, variable length, cut to the terminator's
//!   `rx_packet_export_max_length`.
//!
//! The element ids are the exporter's choice (the SDK takes them from its
//! caller, its example uses 100, 101, 102 under the enterprise bit), so
//! they are [`Elements`], configured at both ends. The Template ID on the
//! wire is the SDK's `set_id` (at least 256; its example 257): the SDK's
//! "template ID 1" is its own handle, never sent.
//!
//! Writers take a caller's buffer; readers ([`Layout`]) borrow the
//! datagram. Framing is [`crate::wire::ipfix`]'s.

use crate::error::{EmitError, Layer};
use crate::wire::ipfix::{self, Field, Malformed, MessageHeader, TemplateRecord};

/// The IFA header and the metadata header.
pub const HEADERS_LEN: usize = 8;
/// The SDK example's `set_id`.
pub const DEFAULT_TEMPLATE_ID: u16 = 257;
/// The most fields a template of the three elements may have (others are
/// skipped as they are read).
pub const MAX_FIELDS: usize = 16;

/// The three elements' ids: enterprise-specific under `enterprise`, or
/// IANA's when it is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elements {
    pub headers: u16,
    pub stack: u16,
    pub packet: u16,
    pub enterprise: Option<u32>,
}

impl Default for Elements {
    /// The SDK example's (`td3_ifa_l3_term.c`, `ifa_template_create`):
    /// 100, 101, 102, each with `BCM_IFA_EXPORT_ELEMENT_FLAGS_ENTERPRISE`
    /// and the collector's `enterprise_number`, which the example leaves
    /// at 0.
    fn default() -> Self {
        Elements { headers: 100, stack: 101, packet: 102, enterprise: Some(0) }
    }
}

/// Which of the three an element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Headers,
    Stack,
    Packet,
}

impl Elements {
    /// The template's fields, in the SDK example's order.
    pub fn fields(&self) -> [Field; 3] {
        let field = |id, length| Field { id, length, enterprise: self.enterprise };
        [
            field(self.headers, HEADERS_LEN as u16),
            field(self.stack, ipfix::VARIABLE_LENGTH),
            field(self.packet, ipfix::VARIABLE_LENGTH),
        ]
    }

    fn part(&self, field: &Field) -> Option<Part> {
        if field.enterprise != self.enterprise {
            return None;
        }
        [(self.headers, Part::Headers), (self.stack, Part::Stack), (self.packet, Part::Packet)]
            .into_iter()
            .find(|(id, _)| *id == field.id)
            .map(|(_, part)| part)
    }
}

/// One packet's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaRecord<'a> {
    /// The IFA header and the metadata header.
    pub headers: &'a [u8],
    pub stack: &'a [u8],
    /// The packet without its IFA (as far as the exporter cut it).
    pub packet: &'a [u8],
}

impl IfaRecord<'_> {
    /// Its bytes in a data set.
    pub fn len(&self) -> usize {
        let variable = |len: usize| ipfix::variable_length_len(len) + len;
        HEADERS_LEN + variable(self.stack.len()) + variable(self.packet.len())
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the record in [`Elements::fields`]' order.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.headers.len() != HEADERS_LEN {
            return Err(EmitError::Unrepresentable { layer: Layer::Ipfix, value: self.headers.len() });
        }
        let (needed, available) = (self.len(), buf.len());
        let out = buf.get_mut(..needed).ok_or(EmitError::no_room(Layer::Ipfix, needed, available))?;
        let mut at = 0;
        for (value, prefixed) in [(self.headers, false), (self.stack, true), (self.packet, true)] {
            if prefixed {
                at += ipfix::emit_variable_length(ipfix::tail_mut(out, at), value.len())?;
            }
            ipfix::tail_mut(out, at).get_mut(..value.len()).unwrap_or_default().copy_from_slice(value);
            at += value.len();
        }
        Ok(at)
    }
}

/// A message holding the template: its header (`head`'s length is
/// written) and a Template Set of one record.
pub fn emit_template_message(
    buf: &mut [u8],
    head: MessageHeader,
    template_id: u16,
    elements: &Elements,
) -> Result<usize, EmitError> {
    let at = ipfix::MESSAGE_HEADER_LEN + ipfix::SET_HEADER_LEN;
    let record =
        ipfix::emit_template(buf.get_mut(at..).unwrap_or_default(), template_id, &elements.fields())?;
    finish(buf, head, ipfix::TEMPLATE_SET_ID, record)
}

/// A message holding one packet's record in a Data Set of `template_id`.
pub fn emit_data_message(
    buf: &mut [u8],
    head: MessageHeader,
    template_id: u16,
    record: &IfaRecord<'_>,
) -> Result<usize, EmitError> {
    let at = ipfix::MESSAGE_HEADER_LEN + ipfix::SET_HEADER_LEN;
    let len = record.emit(buf.get_mut(at..).unwrap_or_default())?;
    finish(buf, head, template_id, len)
}

/// Writes the set and message headers around `records` bytes of records.
fn finish(buf: &mut [u8], head: MessageHeader, set_id: u16, records: usize) -> Result<usize, EmitError> {
    let set_len = ipfix::SET_HEADER_LEN + records;
    let len = ipfix::MESSAGE_HEADER_LEN + set_len;
    let length =
        u16::try_from(len).map_err(|_| EmitError::Unrepresentable { layer: Layer::Ipfix, value: len })?;
    MessageHeader { length, ..head }.emit(buf)?;
    ipfix::emit_set_header(ipfix::tail_mut(buf, ipfix::MESSAGE_HEADER_LEN), set_id, set_len)?;
    Ok(len)
}

/// Why a template is not one of IFA's three elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotIfa {
    /// One of the three is absent (another exporter's template).
    Other,
    /// The IFA headers' element is not 8 bytes, the stack or packet is
    /// not variable-length, or one of them appears twice.
    Lengths,
    /// More than [`MAX_FIELDS`] fields.
    TooManyFields,
}

impl NotIfa {
    pub fn name(self) -> &'static str {
        match self {
            NotIfa::Other => "ifa_ipfix_other_template",
            NotIfa::Lengths => "ifa_ipfix_template_lengths",
            NotIfa::TooManyFields => "ifa_ipfix_template_fields",
        }
    }
}

/// Where a template puts the three elements among its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    fields: [Field; MAX_FIELDS],
    count: usize,
    parts: [Option<Part>; MAX_FIELDS],
    min_record_len: usize,
}

impl Layout {
    pub fn of(template: &TemplateRecord<'_>, elements: &Elements) -> Result<Layout, NotIfa> {
        let empty = Field { id: 0, length: 0, enterprise: None };
        let mut layout =
            Layout { fields: [empty; MAX_FIELDS], count: 0, parts: [None; MAX_FIELDS], min_record_len: 0 };
        let mut seen = [false; 3];
        let mut slots = layout.fields.iter_mut().zip(layout.parts.iter_mut());
        for field in template.fields() {
            let Some((slot, slot_part)) = slots.next() else { return Err(NotIfa::TooManyFields) };
            let part = elements.part(&field);
            let lengths_right = match part {
                Some(Part::Headers) => usize::from(field.length) == HEADERS_LEN,
                Some(Part::Stack | Part::Packet) => field.is_variable(),
                None => true,
            };
            if let Some(part) = part {
                let twice = seen.get_mut(part as usize).is_none_or(|seen| core::mem::replace(seen, true));
                if !lengths_right || twice {
                    return Err(NotIfa::Lengths);
                }
            }
            (*slot, *slot_part) = (field, part);
            layout.count += 1;
        }
        if seen != [true; 3] {
            return Err(NotIfa::Other);
        }
        layout.min_record_len = ipfix::min_record_len(layout.fields.iter().take(layout.count).copied());
        Ok(layout)
    }

    /// The records of a Data Set's body; bytes too few for a record at
    /// its end are padding. The first refusal ends them.
    pub fn records<'a>(&self, body: &'a [u8]) -> impl Iterator<Item = Result<IfaRecord<'a>, Malformed>> + 'a {
        let layout = *self;
        let mut rest = body;
        core::iter::from_fn(move || {
            // A template of fixed fields of 0 bytes would never advance.
            if rest.len() < layout.min_record_len.max(1) {
                return None;
            }
            let item = layout.record(rest);
            rest = match item {
                Ok((_, len)) => rest.get(len..).unwrap_or_default(),
                Err(_) => &[],
            };
            Some(item.map(|(record, _)| record))
        })
    }

    fn record<'a>(&self, bytes: &'a [u8]) -> Result<(IfaRecord<'a>, usize), Malformed> {
        let mut record = IfaRecord { headers: &[], stack: &[], packet: &[] };
        let mut at = 0;
        for (field, part) in self.fields.iter().zip(&self.parts).take(self.count) {
            let (value, len) = ipfix::read_value(bytes.get(at..).unwrap_or_default(), field)?;
            at += len;
            match part {
                Some(Part::Headers) => record.headers = value,
                Some(Part::Stack) => record.stack = value,
                Some(Part::Packet) => record.packet = value,
                None => {}
            }
        }
        Ok((record, at))
    }
}

#[cfg(test)]
mod tests;
