//! IPFIX's wire format (RFC 7011): the message header, set headers,
//! template records with their field specifiers, variable-length fields,
//! and RFC 6313's basicList. Only what an exporter writes: each function
//! appends to a buffer; [`MessageBuilder`] keeps a message within a size
//! and fills its header's length last.

/// The framing is int-core's (`int_core::wire::ipfix`), shared with the
/// IFA terminator's records; RFC 7011 section 3.1, the Message Header:
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |       Version Number          |            Length             |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                           Export Time                         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                       Sequence Number                         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                    Observation Domain ID                      |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
pub use int_core::wire::ipfix::{
    Field, MESSAGE_HEADER_LEN, OPTIONS_TEMPLATE_SET_ID, SET_HEADER_LEN, TEMPLATE_SET_ID, VARIABLE_LENGTH,
};
/// RFC 6313 section 4.5.1, basicList's semantic "ordered": the list is
/// the path in order, the source first.
pub const SEMANTIC_ORDERED: u8 = 0x04;
/// IANA's basicList element (RFC 6313).
pub const BASIC_LIST: u16 = 291;

/// RFC 7011 section 3.2, a Field Specifier (int-core's framing writes it):
///
/// ```text
/// |E|  Information Element ident. |        Field Length           |
/// |                      Enterprise Number (where E is 1)         |
/// ```
pub fn emit_field(out: &mut Vec<u8>, field: &Field) {
    let mut bytes = [0u8; 8];
    if let Ok(len) = field.emit(&mut bytes) {
        out.extend_from_slice(bytes.get(..len).unwrap_or_default());
    }
}

/// RFC 7011 section 3.4.1, a Template Record: Template ID and Field Count,
/// then each field specifier.
pub fn emit_template(out: &mut Vec<u8>, template_id: u16, fields: &[Field]) {
    out.extend_from_slice(&template_id.to_be_bytes());
    out.extend_from_slice(&(fields.len() as u16).to_be_bytes());
    for field in fields {
        emit_field(out, field);
    }
}

/// A template record's bytes.
pub fn template_len(fields: &[Field]) -> usize {
    4 + fields.iter().map(|f| if f.enterprise.is_some() { 8 } else { 4 }).sum::<usize>()
}

/// RFC 7011 section 3.4.2.2, an Options Template Record: Template ID,
/// Field Count, Scope Field Count (`scope`, at least 1: the first fields
/// are the keys the others describe), then each field specifier.
///
/// ```text
/// |         Template ID           |         Field Count           |
/// |      Scope Field Count        |  Scope 1 Information Elem. id | ...
/// ```
pub fn emit_options_template(out: &mut Vec<u8>, template_id: u16, scope: u16, fields: &[Field]) {
    out.extend_from_slice(&template_id.to_be_bytes());
    out.extend_from_slice(&(fields.len() as u16).to_be_bytes());
    out.extend_from_slice(&scope.to_be_bytes());
    for field in fields {
        emit_field(out, field);
    }
}

/// An options template record's bytes.
pub fn options_template_len(fields: &[Field]) -> usize {
    template_len(fields) + 2
}

/// RFC 7011 section 7: a variable-length value's length, one octet below
/// 255, else 255 and two octets.
pub fn emit_variable_length(out: &mut Vec<u8>, length: usize) {
    let mut bytes = [0u8; 3];
    let length = length.min(usize::from(u16::MAX));
    if let Ok(len) = int_core::wire::ipfix::emit_variable_length(&mut bytes, length) {
        out.extend_from_slice(bytes.get(..len).unwrap_or_default());
    }
}

/// RFC 6313 section 4.5.1, a basicList of 32-bit values of `element`
/// (as a variable-length field, its length first):
///
/// ```text
/// |    Semantic   |E|  Field ID  |   Element Length  | [Enterprise Number] | values...
/// ```
pub fn emit_basic_list_u32(out: &mut Vec<u8>, element: &Field, values: &[u32]) {
    let header = if element.enterprise.is_some() { 9 } else { 5 };
    emit_variable_length(out, header + 4 * values.len());
    out.push(SEMANTIC_ORDERED);
    emit_field(out, element);
    for value in values {
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// One message at a time, at most `max_len` bytes: sets are opened and
/// closed, records appended while they fit.
pub struct MessageBuilder {
    buffer: Vec<u8>,
    max_len: usize,
    /// Where the open set's header is.
    open_set: Option<usize>,
}

/// What the header of a finished message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub export_time: u32,
    pub sequence: u32,
    pub domain: u32,
}

impl MessageBuilder {
    pub fn new(max_len: usize) -> MessageBuilder {
        MessageBuilder { buffer: Vec::with_capacity(max_len), max_len, open_set: None }
    }

    /// Starts a message; the header is written at [`Self::finish`].
    pub fn start(&mut self) {
        self.buffer.clear();
        self.buffer.resize(MESSAGE_HEADER_LEN, 0);
        self.open_set = None;
    }

    /// Whether `record_len` more bytes fit in a set of `set_id`.
    pub fn fits(&self, set_id: u16, record_len: usize) -> bool {
        let header = if self.open_set_id() == Some(set_id) { 0 } else { SET_HEADER_LEN };
        self.buffer.len() + header + record_len <= self.max_len
    }

    /// Whether the message holds no set yet.
    pub fn is_empty(&self) -> bool {
        self.buffer.len() <= MESSAGE_HEADER_LEN
    }

    fn open_set_id(&self) -> Option<u16> {
        let at = self.open_set?;
        let id = self.buffer.get(at..at + 2)?;
        Some(u16::from_be_bytes(id.try_into().ok()?))
    }

    /// The buffer to append a record of `set_id` to, its set opened if
    /// another (or none) is open.
    pub fn record(&mut self, set_id: u16) -> &mut Vec<u8> {
        if self.open_set_id() != Some(set_id) {
            self.close_set();
            self.open_set = Some(self.buffer.len());
            self.buffer.extend_from_slice(&set_id.to_be_bytes());
            self.buffer.extend_from_slice(&[0, 0]);
        }
        &mut self.buffer
    }

    /// The buffer to append a record of `set_id` to, in a set of its own
    /// (nfdump 1.7 reads one options template per set).
    pub fn record_alone(&mut self, set_id: u16) -> &mut Vec<u8> {
        self.close_set();
        self.record(set_id)
    }

    /// Whether a record of `record_len` bytes fits in a set of its own.
    pub fn fits_alone(&self, record_len: usize) -> bool {
        self.buffer.len() + SET_HEADER_LEN + record_len <= self.max_len
    }

    /// RFC 7011 section 3.3.1: a set's length counts its header and its
    /// records (no padding is written).
    fn close_set(&mut self) {
        if let Some(at) = self.open_set.take() {
            let len = (self.buffer.len() - at) as u16;
            if let Some(field) = self.buffer.get_mut(at + 2..at + 4) {
                field.copy_from_slice(&len.to_be_bytes());
            }
        }
    }

    /// The message with its header written.
    pub fn finish(&mut self, header: Header) -> &[u8] {
        self.close_set();
        let length = self.buffer.len() as u16;
        let head = int_core::wire::ipfix::MessageHeader {
            length,
            export_time: header.export_time,
            sequence: header.sequence,
            domain: header.domain,
        };
        // The buffer holds the header's 16 bytes from `start`.
        let _ = head.emit(&mut self.buffer);
        &self.buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder's template message is what int-core's framing writes
    /// (its own test holds RFC 7011's figures byte by byte): the header
    /// with the message's length, a Template Set, the template record.
    #[test]
    fn a_template_message_is_int_cores_framing() {
        use int_core::wire::ipfix as wire;
        let fields = [
            Field { id: 8, length: 4, enterprise: None },
            Field { id: 1, length: 8, enterprise: Some(32473) },
        ];
        let mut builder = MessageBuilder::new(1400);
        builder.start();
        assert!(builder.is_empty());
        emit_template(builder.record(TEMPLATE_SET_ID), 256, &fields);
        let header = Header { export_time: 0x6000_0001, sequence: 7, domain: 0x0102_0304 };
        let message = builder.finish(header).to_vec();
        let mut expected = [0u8; 36];
        let head =
            wire::MessageHeader { length: 36, export_time: 0x6000_0001, sequence: 7, domain: 0x0102_0304 };
        head.emit(&mut expected).unwrap();
        wire::emit_set_header(&mut expected[16..], TEMPLATE_SET_ID, 20).unwrap();
        assert_eq!(wire::emit_template(&mut expected[20..], 256, &fields), Ok(16));
        assert_eq!(message, expected);
        assert_eq!(template_len(&fields), 16);
    }

    /// RFC 7011 section 3.4.2.2's options template record, each in a set
    /// of its own (Set ID 3): Template ID, Field Count, Scope Field Count,
    /// the scope's specifiers first.
    #[test]
    fn options_templates_are_laid_out_as_rfc_7011_draws_them_one_per_set() {
        let fields = [
            Field { id: 7, length: 4, enterprise: Some(32473) },
            Field { id: 10, length: 4, enterprise: None },
        ];
        let mut builder = MessageBuilder::new(1400);
        builder.start();
        for id in [258, 259] {
            assert!(builder.fits_alone(options_template_len(&fields)));
            emit_options_template(builder.record_alone(OPTIONS_TEMPLATE_SET_ID), id, 1, &fields);
        }
        let message = builder.finish(Header { export_time: 0, sequence: 0, domain: 1 });
        #[rustfmt::skip]
        let set = |id: u8| vec![
            0x00, 0x03, 0x00, 0x16,             // set id 3 (options templates), length 22
            0x01, id, 0x00, 0x02,               // template 258 or 259, 2 fields
            0x00, 0x01,                         // 1 scope field
            0x80, 0x07, 0x00, 0x04,             // scope: E=1, element 7, 4 bytes
            0x00, 0x00, 0x7e, 0xd9,             // enterprise 32473
            0x00, 0x0a, 0x00, 0x04,             // ingressInterface, 4 bytes
        ];
        assert_eq!(&message[16..], [set(2), set(3)].concat());
        assert_eq!(&message[2..4], &[0, 16 + 44]);
        assert_eq!(options_template_len(&fields), 18);
    }

    /// RFC 6313 section 4.5.1's basicList inside a variable-length field:
    /// the length octet, semantic "ordered", the element's specifier
    /// with its enterprise number, then the values.
    #[test]
    fn a_path_is_a_basic_list_as_rfc_6313_draws_it() {
        let node = Field { id: 7, length: 4, enterprise: Some(32473) };
        let mut out = Vec::new();
        emit_basic_list_u32(&mut out, &node, &[1, 0x0a00_0002]);
        #[rustfmt::skip]
        let expected = [
            17,                                 // variable length: 9 + 2 * 4
            0x04,                               // semantic: ordered
            0x80, 0x07, 0x00, 0x04,             // E=1, element 7, 4 bytes each
            0x00, 0x00, 0x7e, 0xd9,             // enterprise 32473
            0, 0, 0, 1, 10, 0, 0, 2,            // the values
        ];
        assert_eq!(out, expected);
    }

    /// RFC 7011 section 7: 255 and more take three octets.
    #[test]
    fn long_variable_lengths_take_three_octets() {
        let mut out = Vec::new();
        emit_variable_length(&mut out, 254);
        emit_variable_length(&mut out, 255);
        emit_variable_length(&mut out, 1000);
        assert_eq!(out, [254, 255, 0, 255, 255, 0x03, 0xe8]);
    }

    /// Sets of one id share a header; another id opens a new set; a
    /// record that does not fit is refused before it is written.
    #[test]
    fn sets_are_shared_and_messages_kept_within_their_size() {
        let mut builder = MessageBuilder::new(MESSAGE_HEADER_LEN + SET_HEADER_LEN + 8);
        builder.start();
        assert!(builder.fits(256, 8));
        builder.record(256).extend_from_slice(&[1; 4]);
        assert!(builder.fits(256, 4));
        builder.record(256).extend_from_slice(&[2; 4]);
        assert!(!builder.fits(256, 1));
        assert!(!builder.fits(257, 0));
        let message = builder.finish(Header { export_time: 0, sequence: 0, domain: 0 });
        assert_eq!(&message[2..4], &[0, 28]);
        assert_eq!(&message[16..20], &[1, 0, 0, 12]);
    }
}
