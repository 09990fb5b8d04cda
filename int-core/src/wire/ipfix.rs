//! IPFIX's framing (RFC 7011): the message header, set headers, template
//! records and their field specifiers, and variable-length values; read
//! from a datagram without allocation and written into a caller's buffer.
//! What a message carries is its user's: collect's exporter
//! (int-tools `collect/exporters/ipfix`) and the IFA terminator's records
//! ([`crate::report::ifa_ipfix`]).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |       Version Number          |            Length             |
//! |                           Export Time                         |
//! |                       Sequence Number                         |
//! |                    Observation Domain ID                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Set ID               |          Length               |  (a set)
//! |          Template ID          |         Field Count           |  (a template record)
//! |E|  Information Element ident. |        Field Length           |
//! |                      Enterprise Number (where E is 1)         |
//! ```
//!
//! A reader trusts no length: every refusal is a [`Malformed`] reason,
//! named for a counter.

use crate::error::{EmitError, Layer};

pub const VERSION: u16 = 0x000a;
pub const MESSAGE_HEADER_LEN: usize = 16;
pub const SET_HEADER_LEN: usize = 4;
/// Section 3.3.2: Set ID 2 is a Template Set, 3 an Options Template Set,
/// 256 and above Data Sets; 0, 1 and 4-255 are not to be used.
pub const TEMPLATE_SET_ID: u16 = 2;
pub const OPTIONS_TEMPLATE_SET_ID: u16 = 3;
pub const MIN_DATA_SET_ID: u16 = 256;
/// Section 7: a template's field length for a variable-length value.
pub const VARIABLE_LENGTH: u16 = 65535;
/// A template record's header: Template ID and Field Count.
pub const TEMPLATE_HEADER_LEN: usize = 4;

/// Why a message is refused; [`Malformed::name`] is its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// Fewer bytes than the message header.
    Truncated,
    /// A version other than 10.
    Version,
    /// The header's Length is not the datagram's.
    MessageLength,
    /// A set's Length below its header or past the message.
    SetLength,
    /// A Set ID RFC 7011 reserves (0, 1, 4-255).
    SetId,
    /// A template record whose field specifiers run past its set.
    TemplateRecord,
    /// A Template ID below 256.
    TemplateId,
    /// A data record's value runs past its set.
    FieldLength,
}

impl Malformed {
    pub fn name(self) -> &'static str {
        match self {
            Malformed::Truncated => "ipfix_truncated",
            Malformed::Version => "ipfix_version",
            Malformed::MessageLength => "ipfix_message_length",
            Malformed::SetLength => "ipfix_set_length",
            Malformed::SetId => "ipfix_set_id",
            Malformed::TemplateRecord => "ipfix_template_record",
            Malformed::TemplateId => "ipfix_template_id",
            Malformed::FieldLength => "ipfix_field_length",
        }
    }
}

impl core::fmt::Display for Malformed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Writes `bytes` at `at`, or says there is no room.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> Result<(), EmitError> {
    let available = buf.len();
    let out = buf.get_mut(at..at + bytes.len());
    out.ok_or(EmitError::no_room(Layer::Ipfix, at + bytes.len(), available))?.copy_from_slice(bytes);
    Ok(())
}

/// The bytes from `at` on (none past the end).
fn tail(bytes: &[u8], at: usize) -> &[u8] {
    bytes.get(at..).unwrap_or_default()
}

/// The buffer from `at` on (none past the end).
pub fn tail_mut(buf: &mut [u8], at: usize) -> &mut [u8] {
    buf.get_mut(at..).unwrap_or_default()
}

/// Section 3.1, the message header (the version is always 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MessageHeader {
    /// The message's bytes, this header included.
    pub length: u16,
    /// Seconds since the epoch.
    pub export_time: u32,
    pub sequence: u32,
    pub domain: u32,
}

impl MessageHeader {
    pub fn parse(bytes: &[u8]) -> Result<MessageHeader, Malformed> {
        let version = u16_at(bytes, 0).ok_or(Malformed::Truncated)?;
        let domain = u32_at(bytes, 12).ok_or(Malformed::Truncated)?;
        if version != VERSION {
            return Err(Malformed::Version);
        }
        Ok(MessageHeader {
            length: u16_at(bytes, 2).unwrap_or(0),
            export_time: u32_at(bytes, 4).unwrap_or(0),
            sequence: u32_at(bytes, 8).unwrap_or(0),
            domain,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        put(buf, 12, &self.domain.to_be_bytes())?;
        put(buf, 0, &VERSION.to_be_bytes())?;
        put(buf, 2, &self.length.to_be_bytes())?;
        put(buf, 4, &self.export_time.to_be_bytes())?;
        put(buf, 8, &self.sequence.to_be_bytes())?;
        Ok(MESSAGE_HEADER_LEN)
    }
}

/// A message whose Length is its datagram's, and its sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub header: MessageHeader,
    body: &'a [u8],
}

impl<'a> Message<'a> {
    /// Over UDP a datagram is one message (section 10.3.3): a Length
    /// other than the datagram's is a lie either way.
    pub fn parse(datagram: &'a [u8]) -> Result<Message<'a>, Malformed> {
        let header = MessageHeader::parse(datagram)?;
        if usize::from(header.length) != datagram.len() {
            return Err(Malformed::MessageLength);
        }
        Ok(Message { header, body: tail(datagram, MESSAGE_HEADER_LEN) })
    }

    pub fn sets(&self) -> Sets<'a> {
        Sets { rest: self.body }
    }
}

/// One set: its id and the records after its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Set<'a> {
    pub id: u16,
    pub body: &'a [u8],
}

/// A message's sets in order; the first refusal ends them.
pub struct Sets<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Sets<'a> {
    type Item = Result<Set<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = read_set(self.rest);
        self.rest = match item {
            Ok((_, len)) => tail(self.rest, len),
            Err(_) => &[],
        };
        Some(item.map(|(set, _)| set))
    }
}

fn read_set(bytes: &[u8]) -> Result<(Set<'_>, usize), Malformed> {
    let (id, len) = (u16_at(bytes, 0), u16_at(bytes, 2));
    let (Some(id), Some(len)) = (id, len) else { return Err(Malformed::SetLength) };
    let len = usize::from(len);
    if len < SET_HEADER_LEN || len > bytes.len() {
        return Err(Malformed::SetLength);
    }
    if id != TEMPLATE_SET_ID && id != OPTIONS_TEMPLATE_SET_ID && id < MIN_DATA_SET_ID {
        return Err(Malformed::SetId);
    }
    let body = bytes.get(SET_HEADER_LEN..len).unwrap_or_default();
    Ok((Set { id, body }, len))
}

/// Writes a set header; `len` counts the header and its records.
pub fn emit_set_header(buf: &mut [u8], id: u16, len: usize) -> Result<usize, EmitError> {
    let len =
        u16::try_from(len).map_err(|_| EmitError::Unrepresentable { layer: Layer::Ipfix, value: len })?;
    put(buf, 2, &len.to_be_bytes())?;
    put(buf, 0, &id.to_be_bytes())?;
    Ok(SET_HEADER_LEN)
}

/// Section 3.2, a field specifier: an IANA element, or one under an
/// enterprise number (the E bit set, the number after the length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    /// 15 bits.
    pub id: u16,
    pub length: u16,
    pub enterprise: Option<u32>,
}

impl Field {
    /// Its bytes in a template record.
    pub fn specifier_len(&self) -> usize {
        if self.enterprise.is_some() {
            8
        } else {
            4
        }
    }

    pub fn is_variable(&self) -> bool {
        self.length == VARIABLE_LENGTH
    }

    /// One specifier from the front of `bytes`, and its length.
    pub fn parse(bytes: &[u8]) -> Result<(Field, usize), Malformed> {
        let (id, length) = (u16_at(bytes, 0), u16_at(bytes, 2));
        let (Some(id), Some(length)) = (id, length) else { return Err(Malformed::TemplateRecord) };
        if id & 0x8000 == 0 {
            return Ok((Field { id, length, enterprise: None }, 4));
        }
        let number = u32_at(bytes, 4).ok_or(Malformed::TemplateRecord)?;
        Ok((Field { id: id & 0x7fff, length, enterprise: Some(number) }, 8))
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let id = match self.enterprise {
            Some(_) => self.id | 0x8000,
            None => self.id & 0x7fff,
        };
        if let Some(number) = self.enterprise {
            put(buf, 4, &number.to_be_bytes())?;
        }
        put(buf, 0, &id.to_be_bytes())?;
        put(buf, 2, &self.length.to_be_bytes())?;
        Ok(self.specifier_len())
    }
}

/// Section 3.4.1, a template record; Field Count 0 is a withdrawal
/// (section 8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRecord<'a> {
    pub id: u16,
    pub field_count: u16,
    /// The specifiers' bytes, checked whole.
    specifiers: &'a [u8],
}

impl<'a> TemplateRecord<'a> {
    pub fn is_withdrawal(&self) -> bool {
        self.field_count == 0
    }

    pub fn fields(&self) -> impl Iterator<Item = Field> + 'a {
        let mut rest = self.specifiers;
        core::iter::from_fn(move || {
            let (field, len) = Field::parse(rest).ok()?;
            rest = tail(rest, len);
            Some(field)
        })
    }
}

/// Writes a template record: its header and each specifier.
pub fn emit_template(buf: &mut [u8], id: u16, fields: &[Field]) -> Result<usize, EmitError> {
    let count = u16::try_from(fields.len())
        .map_err(|_| EmitError::Unrepresentable { layer: Layer::Ipfix, value: fields.len() })?;
    put(buf, 2, &count.to_be_bytes())?;
    put(buf, 0, &id.to_be_bytes())?;
    let mut len = TEMPLATE_HEADER_LEN;
    for field in fields {
        len += field.emit(tail_mut(buf, len))?;
    }
    Ok(len)
}

/// The template records of a Template Set's body. Fewer bytes than a
/// record header at the end are padding (section 3.3.1).
pub fn templates(body: &[u8]) -> impl Iterator<Item = Result<TemplateRecord<'_>, Malformed>> {
    let mut rest = body;
    core::iter::from_fn(move || {
        if rest.len() < TEMPLATE_HEADER_LEN {
            return None;
        }
        let item = read_template(rest);
        rest = match item {
            Ok((_, len)) => tail(rest, len),
            Err(_) => &[],
        };
        Some(item.map(|(record, _)| record))
    })
}

fn read_template(bytes: &[u8]) -> Result<(TemplateRecord<'_>, usize), Malformed> {
    let (id, field_count) = (u16_at(bytes, 0).unwrap_or(0), u16_at(bytes, 2).unwrap_or(0));
    // An all-templates withdrawal names the set's id (section 8.1).
    if id < MIN_DATA_SET_ID && !(field_count == 0 && id == TEMPLATE_SET_ID) {
        return Err(Malformed::TemplateId);
    }
    let mut len = TEMPLATE_HEADER_LEN;
    for _ in 0..field_count {
        let (_, field_len) = Field::parse(tail(bytes, len))?;
        len += field_len;
    }
    let specifiers = bytes.get(TEMPLATE_HEADER_LEN..len).unwrap_or_default();
    Ok((TemplateRecord { id, field_count, specifiers }, len))
}

/// Section 7: a variable-length value's length, one octet below 255,
/// else 255 and two octets.
pub fn emit_variable_length(buf: &mut [u8], length: usize) -> Result<usize, EmitError> {
    match u8::try_from(length) {
        Ok(short) if short < 255 => {
            put(buf, 0, &[short])?;
            Ok(1)
        }
        _ => {
            let long = u16::try_from(length)
                .map_err(|_| EmitError::Unrepresentable { layer: Layer::Ipfix, value: length })?;
            let [high, low] = long.to_be_bytes();
            put(buf, 0, &[255, high, low])?;
            Ok(3)
        }
    }
}

/// The bytes a variable-length value's prefix takes.
pub fn variable_length_len(length: usize) -> usize {
    if length < 255 {
        1
    } else {
        3
    }
}

/// One field's value from the front of a data record's bytes, and the
/// bytes it took (its length prefix included).
pub fn read_value<'a>(bytes: &'a [u8], field: &Field) -> Result<(&'a [u8], usize), Malformed> {
    let (prefix, len) = if field.is_variable() {
        match bytes.first() {
            Some(255) => (3, usize::from(u16_at(bytes, 1).ok_or(Malformed::FieldLength)?)),
            Some(&short) => (1, usize::from(short)),
            None => return Err(Malformed::FieldLength),
        }
    } else {
        (0, usize::from(field.length))
    };
    let value = bytes.get(prefix..prefix + len).ok_or(Malformed::FieldLength)?;
    Ok((value, prefix + len))
}

/// The fewest bytes a data record of these fields takes: records shorter
/// than this at the end of a set are its padding.
pub fn min_record_len(fields: impl Iterator<Item = Field>) -> usize {
    fields.map(|f| if f.is_variable() { 1 } else { usize::from(f.length) }).sum()
}

#[cfg(test)]
mod tests;
