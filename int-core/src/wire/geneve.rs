//! Geneve header and options (RFC 8926 section 3), UDP port 6081.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Virtual Network Identifier (VNI)       |    Reserved   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Variable-Length Options                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Option:
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Option Class         |      Type     |R|R|R| Length  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Variable-Length Option Data                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Opt Len counts the options in 4-byte words, each option's 4-byte header
//! included; an option's Length counts its data only.

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const UDP_PORT: u16 = 6081;
pub const HEADER_LEN: usize = 8;
pub const OPTION_HEADER_LEN: usize = 4;
/// The option class INT 2.1 section 5.7.4 uses (tentatively assigned).
pub const INT_OPTION_CLASS: u16 = 0x0103;
/// Transparent Ethernet Bridging: an Ethernet frame follows.
pub const PROTOCOL_ETHERNET: u16 = 0x6558;
/// The most option data one option carries: 31 words.
pub const MAX_OPTION_DATA: usize = 31 * 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GeneveHeader {
    /// Ver (2) and Opt Len (6).
    pub ver_opt_len: u8,
    /// O, C and 6 reserved bits.
    pub flags: u8,
    pub protocol_type: U16,
    /// VNI (24) and a reserved byte.
    pub vni_reserved: U32,
}
const _: () = assert!(size_of::<GeneveHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GeneveRepr {
    /// Words of options after the 8-byte header.
    pub options_words: u8,
    pub oam: bool,
    pub critical: bool,
    pub protocol_type: u16,
    pub vni: u32,
}

impl GeneveRepr {
    /// Refuses a version other than 0.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (header, _) = GeneveHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::Geneve, 0, HEADER_LEN, bytes.len()))?;
        let version = header.ver_opt_len >> 6;
        if version != 0 {
            return Err(ParseError::UnknownVersion { layer: Layer::Geneve, offset: 0, value: version });
        }
        Ok(GeneveRepr {
            options_words: header.ver_opt_len & 0x3f,
            oam: header.flags & 0x80 != 0,
            critical: header.flags & 0x40 != 0,
            protocol_type: header.protocol_type.get(),
            vni: header.vni_reserved.get() >> 8,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.options_words > 0x3f || self.vni > 0x00ff_ffff {
            let value = usize::from(self.options_words).max(self.vni as usize);
            return Err(EmitError::Unrepresentable { layer: Layer::Geneve, value });
        }
        let header = GeneveHeader {
            ver_opt_len: self.options_words,
            flags: (u8::from(self.oam) << 7) | (u8::from(self.critical) << 6),
            protocol_type: U16::new(self.protocol_type),
            vni_reserved: U32::new(self.vni << 8),
        };
        header.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::Geneve, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }

    /// Bytes of the header and its options.
    pub fn len(&self) -> usize {
        HEADER_LEN + usize::from(self.options_words) * 4
    }

    /// Never: the header is at least 8 bytes.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// One option's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GeneveOptionRepr {
    pub class: u16,
    pub option_type: u8,
    /// Words of option data after this 4-byte header.
    pub length_words: u8,
}

impl GeneveOptionRepr {
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let &[class_high, class_low, option_type, length] = bytes
            .first_chunk::<OPTION_HEADER_LEN>()
            .ok_or_else(|| ParseError::truncated(Layer::Geneve, 0, OPTION_HEADER_LEN, bytes.len()))?;
        Ok(GeneveOptionRepr {
            class: u16::from_be_bytes([class_high, class_low]),
            option_type,
            length_words: length & 0x1f,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        if self.length_words > 0x1f {
            return Err(EmitError::Unrepresentable {
                layer: Layer::Geneve,
                value: usize::from(self.length_words),
            });
        }
        let available = buf.len();
        let out = buf
            .get_mut(..OPTION_HEADER_LEN)
            .ok_or_else(|| EmitError::no_room(Layer::Geneve, OPTION_HEADER_LEN, available))?;
        let [class_hi, class_lo] = self.class.to_be_bytes();
        out.copy_from_slice(&[class_hi, class_lo, self.option_type, self.length_words]);
        Ok(OPTION_HEADER_LEN)
    }

    /// Bytes of the option, its header included.
    pub fn len(&self) -> usize {
        OPTION_HEADER_LEN + usize::from(self.length_words) * 4
    }

    /// Never: an option is at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The options of a Geneve header (`bytes` from the base header on): each
/// option's header and its offset from the base header. They must fill
/// Opt Len exactly.
pub fn options(bytes: &[u8], header: &GeneveRepr) -> Result<Vec<(GeneveOptionRepr, usize)>, ParseError> {
    let mut found = Vec::new();
    walk_options(bytes, header, |option, at| found.push((option, at)))?;
    Ok(found)
}

/// The first option of `class`, if any: its header and offset (see
/// [`options`]); without allocating.
pub fn find_option(
    bytes: &[u8],
    header: &GeneveRepr,
    class: u16,
) -> Result<Option<(GeneveOptionRepr, usize)>, ParseError> {
    let mut first = None;
    walk_options(bytes, header, |option, at| {
        if option.class == class && first.is_none() {
            first = Some((option, at));
        }
    })?;
    Ok(first)
}

/// Shows `visit` every option in order, checking that they fill Opt Len
/// exactly.
fn walk_options(
    bytes: &[u8],
    header: &GeneveRepr,
    mut visit: impl FnMut(GeneveOptionRepr, usize),
) -> Result<(), ParseError> {
    let end = header.len();
    if bytes.len() < end {
        return Err(ParseError::truncated(Layer::Geneve, 0, end, bytes.len()));
    }
    let mut at = HEADER_LEN;
    while at < end {
        let option = GeneveOptionRepr::parse(
            bytes
                .get(at..end)
                .ok_or_else(|| ParseError::truncated(Layer::Geneve, at, end - at, bytes.len()))?,
        )
        .map_err(|e| e.shifted(at))?;
        if at + option.len() > end {
            return Err(ParseError::BadLength { layer: Layer::Geneve, offset: at + 3, value: option.len() });
        }
        visit(option, at);
        at += option.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_with(options: &[(u16, u8, &[u8])]) -> Vec<u8> {
        let words: usize = options.iter().map(|(_, _, data)| 1 + data.len() / 4).sum();
        let repr = GeneveRepr {
            options_words: words as u8,
            oam: false,
            critical: false,
            protocol_type: PROTOCOL_ETHERNET,
            vni: 7,
        };
        let mut out = vec![0u8; repr.len()];
        let mut at = repr.emit(&mut out).unwrap();
        for (class, option_type, data) in options {
            let option = GeneveOptionRepr {
                class: *class,
                option_type: *option_type,
                length_words: (data.len() / 4) as u8,
            };
            at += option.emit(&mut out[at..]).unwrap();
            out[at..at + data.len()].copy_from_slice(data);
            at += data.len();
        }
        out
    }

    #[test]
    fn header_and_options_round_trip() {
        let bytes = header_with(&[(0x0102, 0x80, &[1, 2, 3, 4]), (INT_OPTION_CLASS, 1, &[0; 12])]);
        assert_eq!(bytes[..8], [0x06, 0x00, 0x65, 0x58, 0, 0, 7, 0]);
        let header = GeneveRepr::parse(&bytes).unwrap();
        assert_eq!((header.options_words, header.len()), (6, 32));
        let found = options(&bytes, &header).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[1],
            (GeneveOptionRepr { class: INT_OPTION_CLASS, option_type: 1, length_words: 3 }, 16)
        );
        assert_eq!(find_option(&bytes, &header, INT_OPTION_CLASS).unwrap(), Some(found[1]));
        for cut in 0..bytes.len() {
            let parsed = GeneveRepr::parse(&bytes[..cut]).and_then(|h| options(&bytes[..cut], &h));
            assert!(parsed.is_err(), "cut {cut}");
        }
    }

    #[test]
    fn options_must_fill_opt_len() {
        let mut bytes = header_with(&[(INT_OPTION_CLASS, 1, &[0; 12])]);
        bytes[11] = 5; // the option claims 5 words of data in a 4-word space
        let header = GeneveRepr::parse(&bytes).unwrap();
        assert!(matches!(options(&bytes, &header), Err(ParseError::BadLength { .. })));
        let mut version_1 = header_with(&[]);
        version_1[0] = 0x40;
        assert!(matches!(GeneveRepr::parse(&version_1), Err(ParseError::UnknownVersion { .. })));
    }
}
