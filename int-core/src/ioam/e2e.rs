//! The IOAM Edge-to-Edge Option-Type (RFC 9197 section 4.6; the last
//! draft, ippm-ioam-data-17 section 5.6): data the encapsulating node adds
//! and only the decapsulating node reads, a packet number for loss above
//! all. A 4-byte header, then the fields the E2E-Type's bits name, in the
//! bits' order, each 4-octet aligned.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Namespace-ID           |         IOAM-E2E-Type         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |       E2E Option data field determined by IOAM-E2E-Type       |
//! ```

use bitflags::bitflags;

use crate::error::{EmitError, Layer, ParseError};

/// Namespace-ID and IOAM-E2E-Type.
pub const HEADER_LEN: usize = 4;

bitflags! {
    /// IOAM-E2E-Type, 16 bits; bit 0 is the most significant. Bits 4-15
    /// are undefined: zero on transmission, ignored on receipt (they name
    /// no field, so they add no bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct E2eType: u16 {
        /// bit 0: a 64-bit sequence number of the packet's group.
        const SEQUENCE_64 = 1 << 15;
        /// bit 1: a 32-bit sequence number (never with bit 0).
        const SEQUENCE_32 = 1 << 14;
        /// bit 2: timestamp seconds, the time the packet entered the domain.
        const TIMESTAMP_SECONDS = 1 << 13;
        /// bit 3: timestamp fraction.
        const TIMESTAMP_FRACTION = 1 << 12;
        const _ = 0xffff;
    }
}

impl E2eType {
    /// Bytes of data the defined bits ask for.
    pub fn data_len(self) -> usize {
        let mut len = 0;
        for (bit, bytes) in [
            (E2eType::SEQUENCE_64, 8),
            (E2eType::SEQUENCE_32, 4),
            (E2eType::TIMESTAMP_SECONDS, 4),
            (E2eType::TIMESTAMP_FRACTION, 4),
        ] {
            if self.contains(bit) {
                len += bytes;
            }
        }
        len
    }

    /// The bits with a meaning.
    pub fn defined(self) -> E2eType {
        self & (E2eType::SEQUENCE_64
            | E2eType::SEQUENCE_32
            | E2eType::TIMESTAMP_SECONDS
            | E2eType::TIMESTAMP_FRACTION)
    }
}

/// An Edge-to-Edge option's header and fields. A field its type names
/// but the node could not fill is all ones (RFC 9197: "If a node is not
/// capable of populating this field, it assigns the value 0xFFFFFFFF").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct E2eRepr {
    pub namespace: u16,
    pub e2e_type: E2eType,
    pub sequence: Option<u64>,
    pub timestamp_seconds: Option<u32>,
    pub timestamp_fraction: Option<u32>,
}

impl E2eRepr {
    /// Bytes of the header and its fields.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.e2e_type.defined().data_len()
    }

    /// Never empty: the header is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The option's data (`bytes`, all of it). Refused: both sequence bits,
    /// fewer bytes than the type asks for, data that is not whole words.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let word = |at: usize| -> Result<u32, ParseError> {
            let field = bytes.get(at..at + 4).and_then(|b| <[u8; 4]>::try_from(b).ok());
            field.map(u32::from_be_bytes).ok_or(ParseError::truncated(Layer::IoamOption, at, 4, bytes.len()))
        };
        let head = word(0)?;
        let namespace = (head >> 16) as u16;
        let e2e_type = E2eType::from_bits_retain(head as u16);
        if e2e_type.contains(E2eType::SEQUENCE_64 | E2eType::SEQUENCE_32) {
            return Err(ParseError::UnknownType { layer: Layer::IoamOption, offset: 2, value: 0xc0 });
        }
        if !bytes.len().is_multiple_of(4) || bytes.len() < HEADER_LEN + e2e_type.data_len() {
            return Err(ParseError::BadLength { layer: Layer::IoamOption, offset: 0, value: bytes.len() });
        }
        let mut at = HEADER_LEN;
        let mut next = |bit: E2eType, len: usize| -> Option<usize> {
            let here = at;
            at += len * usize::from(e2e_type.contains(bit));
            e2e_type.contains(bit).then_some(here)
        };
        let long = next(E2eType::SEQUENCE_64, 8);
        let short = next(E2eType::SEQUENCE_32, 4);
        let (seconds, fraction) = (next(E2eType::TIMESTAMP_SECONDS, 4), next(E2eType::TIMESTAMP_FRACTION, 4));
        let sequence = match (long, short) {
            (Some(at), _) => Some((u64::from(word(at)?) << 32) | u64::from(word(at + 4)?)),
            (None, Some(at)) => Some(u64::from(word(at)?)),
            (None, None) => None,
        };
        Ok(E2eRepr {
            namespace,
            e2e_type,
            sequence,
            timestamp_seconds: seconds.map(word).transpose()?,
            timestamp_fraction: fraction.map(word).transpose()?,
        })
    }

    /// Writes the header and the fields its defined bits name (undefined
    /// bits zero); returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let e2e_type = self.e2e_type.defined();
        if e2e_type.contains(E2eType::SEQUENCE_64 | E2eType::SEQUENCE_32) {
            return Err(EmitError::Unrepresentable { layer: Layer::IoamOption, value: 0xc0 });
        }
        let len = self.len();
        let room = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::no_room(Layer::IoamOption, len, room))?;
        let mut words: [u32; 5] = [0; 5];
        let mut n = 0;
        let mut push = |value: u32| {
            if let Some(word) = words.get_mut(n) {
                *word = value;
            }
            n += 1;
        };
        push((u32::from(self.namespace) << 16) | u32::from(e2e_type.bits()));
        let sequence = self.sequence.unwrap_or(u64::MAX);
        if e2e_type.contains(E2eType::SEQUENCE_64) {
            push((sequence >> 32) as u32);
            push(sequence as u32);
        }
        if e2e_type.contains(E2eType::SEQUENCE_32) {
            push(sequence as u32);
        }
        if e2e_type.contains(E2eType::TIMESTAMP_SECONDS) {
            push(self.timestamp_seconds.unwrap_or(u32::MAX));
        }
        if e2e_type.contains(E2eType::TIMESTAMP_FRACTION) {
            push(self.timestamp_fraction.unwrap_or(u32::MAX));
        }
        for (chunk, word) in out.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Namespace 123, a 32-bit sequence number and both timestamp words:
    /// packet 7, entered at 1700000000 s and 250 000 µs.
    const OPTION_DATA: [u8; 16] =
        [0x00, 0x7b, 0x70, 0x00, 0, 0, 0, 7, 0x65, 0x53, 0xf1, 0x00, 0x00, 0x03, 0xd0, 0x90];

    fn repr() -> E2eRepr {
        E2eRepr {
            namespace: 123,
            e2e_type: E2eType::SEQUENCE_32 | E2eType::TIMESTAMP_SECONDS | E2eType::TIMESTAMP_FRACTION,
            sequence: Some(7),
            timestamp_seconds: Some(1_700_000_000),
            timestamp_fraction: Some(250_000),
        }
    }

    #[test]
    fn golden_option_data_round_trips() {
        assert_eq!(E2eRepr::parse(&OPTION_DATA), Ok(repr()));
        let mut out = [0xa5; 16];
        assert_eq!(repr().emit(&mut out), Ok(16));
        assert_eq!(out, OPTION_DATA);
    }

    #[test]
    fn a_64_bit_sequence_is_two_words_high_first() {
        let wide = E2eRepr { e2e_type: E2eType::SEQUENCE_64, sequence: Some(0x1_0000_0002), ..repr() };
        let mut out = [0; 12];
        assert_eq!(wide.emit(&mut out), Ok(12));
        assert_eq!(out, [0, 0x7b, 0x80, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
        let read = E2eRepr::parse(&out).unwrap();
        assert_eq!(read.sequence, Some(0x1_0000_0002));
        assert_eq!(read.timestamp_seconds, None);
    }

    /// Undefined bits are ignored on receipt and zero on transmission;
    /// fields the node cannot fill are all ones.
    #[test]
    fn undefined_bits_and_unfilled_fields() {
        let read = E2eRepr::parse(&[0, 1, 0x40, 0x0f, 0, 0, 0, 9]).unwrap();
        assert_eq!((read.sequence, read.len()), (Some(9), 8));
        let unfilled =
            E2eRepr { sequence: None, timestamp_fraction: None, e2e_type: read.e2e_type, ..repr() };
        let mut out = [0; 8];
        unfilled.emit(&mut out).unwrap();
        assert_eq!(out, [0, 0x7b, 0x40, 0x00, 0xff, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn lies_are_refused() {
        assert!(E2eRepr::parse(&[0, 1, 0xc0, 0, 0, 0, 0, 1, 0, 0, 0, 2]).is_err(), "both sequence bits");
        assert!(E2eRepr::parse(&OPTION_DATA[..12]).is_err(), "a field short");
        assert!(E2eRepr::parse(&OPTION_DATA[..15]).is_err(), "not whole words");
        for cut in 0..OPTION_DATA.len() {
            assert!(E2eRepr::parse(&OPTION_DATA[..cut]).is_err());
        }
    }
}
