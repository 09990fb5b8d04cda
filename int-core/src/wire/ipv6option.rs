//! IPv6 options headers (RFC 8200 sections 4.3 and 4.6): the Hop-by-Hop
//! and Destination Options headers' type-length-value options, Pad1 and
//! PadN, and where such headers lie in a packet. A protocol's own options
//! (IOAM's: `crate::ioam::ipv6`) are read through [`each_option`].
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - - - - - - -
//! |  Option Type  |  Opt Data Len |  Option Data
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+- - - - - - - - -
//! ```
//!
//! The packet-level helpers take offsets a walk already proved in range
//! (`crate::locate`); out of range, they read 0 and write nothing.

use crate::bytes::byte;
use crate::error::{Layer, ParseError};
use crate::wire::ipv6::{DESTINATION_OPTIONS, FRAGMENT, HEADER_LEN as IPV6_LEN};

/// Pad1: one byte of padding, no length.
pub const PAD1: u8 = 0;
/// PadN: two or more bytes of padding.
pub const PADN: u8 = 1;

/// An options header in a packet: its offset and length, and the offset
/// of the Next Header that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionsHeader {
    pub at: usize,
    pub len: usize,
    pub chain_at: usize,
}

/// `each(at, type, end)` for every option but Pad1 of an options header
/// (Hop-by-Hop or Destination, its whole length); an option past the
/// header refused.
pub fn each_option(
    header: &[u8],
    mut each: impl FnMut(usize, u8, usize) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let mut at = 2;
    while at < header.len() {
        let kind = header.get(at).copied().unwrap_or(PAD1);
        if kind == PAD1 {
            at += 1;
            continue;
        }
        let len = usize::from(*header.get(at + 1).ok_or(ParseError::truncated(
            Layer::Ipv6Extension,
            at,
            2,
            header.len(),
        ))?);
        let end = at + 2 + len;
        if end > header.len() {
            return Err(ParseError::BadLength { layer: Layer::Ipv6Extension, offset: at + 1, value: len });
        }
        each(at, kind, end)?;
        at = end;
    }
    Ok(())
}

/// Whether an options header's options walk to its end (none past it).
pub fn options_walk(header: &[u8]) -> bool {
    each_option(header, |_, _, _| Ok(())).is_ok()
}

/// Options padding over `out` (zeroed): PadN over two or more bytes, Pad1
/// over a single one.
pub fn write_padding(out: &mut [u8]) {
    if out.len() >= 2 {
        let len = out.len() - 2;
        out.get_mut(..2).into_iter().for_each(|p| p.copy_from_slice(&[PADN, len as u8]));
    }
}

/// Whether `bytes` are Pad1 and PadN options only.
pub fn is_padding(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = bytes.get(at) {
        at += match kind {
            PAD1 => 1,
            PADN => 2 + usize::from(byte(bytes, at + 1)),
            _ => return false,
        };
    }
    at == bytes.len()
}

/// The length of the extension header at `at` whose Hdr Ext Len counts
/// 8-byte units after the first (Hop-by-Hop, Routing, Destination
/// Options).
pub fn extension_len(frame: &[u8], at: usize) -> usize {
    (usize::from(byte(frame, at + 1)) + 1) * 8
}

/// The extension headers between the IPv6 header at `l3` and the upper
/// layer at `l4`, walked again (the walk that found `l4` checked the
/// chain): how many, and the last if it is a Destination Options header.
pub fn extension_chain(frame: &[u8], l3: usize, l4: usize) -> (usize, Option<OptionsHeader>) {
    let (mut kind, mut chain_at, mut at) = (byte(frame, l3 + 6), l3 + 6, l3 + IPV6_LEN);
    let (mut count, mut last) = (0, None);
    while at < l4 {
        let len = if kind == FRAGMENT { 8 } else { extension_len(frame, at) };
        last = (kind == DESTINATION_OPTIONS).then_some(OptionsHeader { at, len, chain_at });
        (kind, chain_at, at, count) = (byte(frame, at), at, at + len, count + 1);
    }
    (count, last.filter(|doh| doh.at + doh.len == l4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_pad1_and_padn_only() {
        let mut out = [0u8; 6];
        write_padding(&mut out);
        assert_eq!(out, [PADN, 4, 0, 0, 0, 0]);
        assert!(is_padding(&out));
        assert!(is_padding(&[PAD1, PAD1]));
        assert!(!is_padding(&[PADN, 4, 0])); // PadN past the end
        assert!(!is_padding(&[0x31, 0]));
    }

    #[test]
    fn options_past_the_header_are_refused() {
        // Next Header, Hdr Ext Len, then an option of 2 + 4 bytes: whole.
        let header = [17, 0, 0x31, 4, 0, 0, 0, 0];
        let mut seen = Vec::new();
        each_option(&header, |at, kind, end| {
            seen.push((at, kind, end));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(2, 0x31, 8)]);
        assert!(!options_walk(&[17, 0, 0x31, 5, 0, 0, 0, 0]));
        assert!(!options_walk(&[17, 0, PAD1, PAD1, PAD1, PAD1, PAD1, 0x31]));
    }
}
