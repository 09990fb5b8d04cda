//! INT 2.1 in tunnels (sections 5.7.3 and 5.7.4): after a VXLAN-GPE header
//! whose Next Protocol is INT (0x82), a 4-byte INT shim of its own; in a
//! Geneve option of class 0x0103 whose Type is the INT header type. Either
//! way the INT-MD or INT-MX header and stack follow, Length words of them.
//!
//! INT shim for VXLAN-GPE:
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type |  Rsvd |    Length     |G|  Reserved   | Next Protocol |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! G: the original packet used plain VXLAN (1) or VXLAN-GPE (0).
//!
//! A Geneve option's Length is 5 bits: an INT-MD option holds at most 124
//! bytes, so a source sets Remaining Hop Count to what fits.

use crate::error::{EmitError, Layer, ParseError};
use crate::wire::geneve::{self, GeneveOptionRepr, GeneveRepr, INT_OPTION_CLASS, MAX_OPTION_DATA};
use crate::wire::vxlan_gpe::{self, VxlanGpeRepr};

use super::md_header;
use super::shim::HeaderType;
use super::{Body, SourceOnly};

pub const GPE_SHIM_LEN: usize = 4;

/// The INT shim after a VXLAN-GPE header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GpeShimRepr {
    pub header_type: HeaderType,
    /// Words of INT header and metadata after the shim.
    pub length_words: u8,
    /// G: the original packet used plain VXLAN.
    pub from_vxlan: bool,
    /// What follows the INT data (the original VXLAN-GPE Next Protocol).
    pub next_protocol: u8,
}

impl GpeShimRepr {
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let &[type_rsvd, length, g_reserved, next_protocol] = bytes
            .get(..GPE_SHIM_LEN)
            .and_then(|b| <&[u8; 4]>::try_from(b).ok())
            .ok_or_else(|| ParseError::truncated(Layer::IntShim, 0, GPE_SHIM_LEN, bytes.len()))?;
        let header_type = HeaderType::from_bits(type_rsvd >> 4).ok_or(ParseError::UnknownType {
            layer: Layer::IntShim,
            offset: 0,
            value: type_rsvd >> 4,
        })?;
        Ok(GpeShimRepr {
            header_type,
            length_words: length,
            from_vxlan: g_reserved & 0x80 != 0,
            next_protocol,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let available = buf.len();
        let out = buf
            .get_mut(..GPE_SHIM_LEN)
            .ok_or_else(|| EmitError::no_room(Layer::IntShim, GPE_SHIM_LEN, available))?;
        let g = if self.from_vxlan { 0x80 } else { 0 };
        out.copy_from_slice(&[self.header_type.bits() << 4, self.length_words, g, self.next_protocol]);
        Ok(GPE_SHIM_LEN)
    }
}

/// The INT header type a Geneve option of class 0x0103 carries, by its
/// Type (the critical bit, 0x80, is not part of it).
pub fn geneve_header_type(option_type: u8) -> Result<HeaderType, ParseError> {
    HeaderType::from_bits(option_type & 0x7f).ok_or(ParseError::UnknownType {
        layer: Layer::Geneve,
        offset: 2,
        value: option_type,
    })
}

/// The most hops an INT-MD option can hold at `hop_ml` words per hop:
/// what a source's Remaining Hop Count may be in a Geneve domain.
pub fn geneve_max_hops(hop_ml: u8) -> u8 {
    let room = MAX_OPTION_DATA - md_header::HEADER_LEN;
    (room / (usize::from(hop_ml).max(1) * 4)).min(usize::from(u8::MAX)) as u8
}

/// INT 2.1 in a VXLAN-GPE packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpeInt<'a> {
    pub gpe: VxlanGpeRepr,
    pub shim: GpeShimRepr,
    pub body: Body<'a>,
    /// Bytes from the VXLAN-GPE header to the end of the INT data.
    pub len: usize,
}

/// Reads INT 2.1 in a VXLAN-GPE UDP payload. `Ok(None)`: the Next
/// Protocol is not INT.
pub fn gpe_int(payload: &[u8], source_only: SourceOnly) -> Result<Option<GpeInt<'_>>, ParseError> {
    // A header that is no VXLAN-GPE header announces no INT.
    let Ok(gpe) = VxlanGpeRepr::parse(payload) else { return Ok(None) };
    if gpe.next_protocol != vxlan_gpe::NEXT_INT {
        return Ok(None);
    }
    let at = vxlan_gpe::HEADER_LEN;
    let shim = GpeShimRepr::parse(crate::bytes::after(payload, at, Layer::IntShim, GPE_SHIM_LEN)?)
        .map_err(|e| e.shifted(at))?;
    let body_at = at + GPE_SHIM_LEN;
    let len = body_at + usize::from(shim.length_words) * 4;
    let bytes = payload
        .get(body_at..len)
        .ok_or_else(|| ParseError::truncated(Layer::IntShim, at, len - at, payload.len() - at))?;
    let body = Body::parse(shim.header_type, bytes, source_only).map_err(|e| e.shifted(body_at))?;
    Ok(Some(GpeInt { gpe, shim, body, len }))
}

/// INT 2.1 in a Geneve packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneveInt<'a> {
    pub geneve: GeneveRepr,
    pub option: GeneveOptionRepr,
    /// Offset of the INT option from the Geneve header.
    pub option_at: usize,
    pub body: Body<'a>,
}

/// Reads the INT option (class 0x0103) of a Geneve UDP payload. `Ok(None)`:
/// the header has no INT option.
pub fn geneve_int(payload: &[u8], source_only: SourceOnly) -> Result<Option<GeneveInt<'_>>, ParseError> {
    // A header that is no Geneve header announces no INT.
    let Ok(geneve) = GeneveRepr::parse(payload) else { return Ok(None) };
    let Some((option, option_at)) = geneve::find_option(payload, &geneve, INT_OPTION_CLASS)? else {
        return Ok(None);
    };
    let header_type = geneve_header_type(option.option_type).map_err(|e| e.shifted(option_at))?;
    let body_at = option_at + geneve::OPTION_HEADER_LEN;
    let end = option_at + option.len();
    let bytes = payload
        .get(body_at..end)
        .ok_or_else(|| ParseError::truncated(Layer::Geneve, body_at, end - body_at, payload.len()))?;
    let body = Body::parse(header_type, bytes, source_only).map_err(|e| e.shifted(body_at))?;
    Ok(Some(GeneveInt { geneve, option, option_at, body }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int21::{HopMetadata, Instructions, MdHeaderRepr, MxHeaderRepr};
    use crate::wire::geneve::PROTOCOL_ETHERNET;

    /// The INT-MD header and stack of sections 6.12 and 6.14: Hop ML 2,
    /// Remaining Hop Count 5, bitmap 0x9000 (node id, queue occupancy),
    /// hops 3, 2 and 1 (node ids and occupancies chosen here, queue id 0).
    #[rustfmt::skip]
    const MD: [u8; 36] = [
        0x20, 0x00, 0x02, 0x05, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0, 0, 0, 3, 0, 0, 0, 0x30, // hop3
        0, 0, 0, 2, 0, 0, 0, 0x20, // hop2
        0, 0, 0, 1, 0, 0, 0, 0x10, // hop1
    ];
    /// The INT-MX header of sections 6.13 and 6.15: bitmap 0x9000.
    const MX: [u8; 12] = [0x20, 0, 0, 0, 0x90, 0x00, 0, 0, 0, 0, 0, 0];

    fn hops() -> Vec<HopMetadata> {
        (1..=3)
            .rev()
            .map(|n| HopMetadata { node_id: Some(n), queue: Some((0, n * 0x10)), ..HopMetadata::default() })
            .collect()
    }

    fn md_bytes() -> Vec<u8> {
        let header = MdHeaderRepr::parse(&MD).unwrap();
        assert_eq!((header.hop_ml, header.remaining_hop_cnt), (2, 5));
        assert_eq!(header.instructions, Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY);
        let mut out = vec![0u8; 36];
        let mut at = header.emit(&mut out).unwrap();
        for hop in hops() {
            at += hop.emit(header.instructions, header.hop_ml, &mut out[at..]).unwrap();
        }
        out
    }

    /// Section 6.12: VXLAN-GPE (I, P, Next Protocol 0x82), the INT shim
    /// (Type 1, Length 9, G 0, Next Protocol 3: Ethernet), the stack. The
    /// VNI (0x000abc) is chosen here.
    #[test]
    fn golden_md_over_vxlan_gpe() {
        let mut expected = vec![0x0c, 0, 0, 0x82, 0x00, 0x0a, 0xbc, 0x00, 0x10, 0x09, 0x00, 0x03];
        expected.extend(MD);
        let mut out = vec![0u8; expected.len()];
        let gpe = VxlanGpeRepr { flags: vxlan_gpe::FLAG_I, next_protocol: vxlan_gpe::NEXT_INT, vni: 0xabc };
        let mut at = gpe.emit(&mut out).unwrap();
        let shim = GpeShimRepr {
            header_type: HeaderType::Md,
            length_words: 9,
            from_vxlan: false,
            next_protocol: vxlan_gpe::NEXT_ETHERNET,
        };
        at += shim.emit(&mut out[at..]).unwrap();
        out[at..].copy_from_slice(&md_bytes());
        assert_eq!(out, expected);
        let read = gpe_int(&out, SourceOnly::NONE).unwrap().unwrap();
        assert_eq!((read.gpe, read.shim, read.len), (gpe, shim, out.len()));
        let Body::Md(md) = read.body else { panic!("not MD") };
        assert_eq!(md.hops().map(|h| h.node_id.unwrap()).collect::<Vec<_>>(), [3, 2, 1]);
        // A cut VXLAN-GPE header announces nothing; a cut after it is a
        // lie about INT.
        for cut in 0..vxlan_gpe::HEADER_LEN {
            assert_eq!(gpe_int(&out[..cut], SourceOnly::NONE), Ok(None), "cut {cut}");
        }
        for cut in vxlan_gpe::HEADER_LEN..out.len() {
            assert!(gpe_int(&out[..cut], SourceOnly::NONE).is_err(), "cut {cut}");
        }
        for cut in 0..GPE_SHIM_LEN {
            assert!(GpeShimRepr::parse(&out[8..8 + cut]).is_err());
        }
    }

    /// Section 6.13: the same with an INT-MX shim (Type 3, Length 3).
    #[test]
    fn golden_mx_over_vxlan_gpe() {
        let shim = GpeShimRepr {
            header_type: HeaderType::Mx,
            length_words: 3,
            from_vxlan: false,
            next_protocol: vxlan_gpe::NEXT_ETHERNET,
        };
        let mut out = [0u8; 16];
        shim.emit(&mut out).unwrap();
        MxHeaderRepr::parse(&MX).unwrap().emit(&mut out[4..]).unwrap();
        assert_eq!(out[..4], [0x30, 0x03, 0x00, 0x03]);
        assert_eq!(out[4..], MX);
    }

    /// Section 6.14: Geneve with the INT option (class 0x0103, Type 1,
    /// Length 9). The text gives the base header's Opt Len as 9; RFC 8926
    /// counts the option's 4-byte header too: 10. We follow the RFC.
    #[test]
    fn golden_md_over_geneve() {
        let mut expected = vec![0x0a, 0x00, 0x65, 0x58, 0x00, 0x0a, 0xbc, 0x00, 0x01, 0x03, 0x01, 0x09];
        expected.extend(MD);
        let base = GeneveRepr {
            options_words: 10,
            oam: false,
            critical: false,
            protocol_type: PROTOCOL_ETHERNET,
            vni: 0xabc,
        };
        let option = GeneveOptionRepr { class: INT_OPTION_CLASS, option_type: 1, length_words: 9 };
        let mut out = vec![0u8; expected.len()];
        let mut at = base.emit(&mut out).unwrap();
        at += option.emit(&mut out[at..]).unwrap();
        out[at..].copy_from_slice(&md_bytes());
        assert_eq!(out, expected);
        let read = geneve_int(&out, SourceOnly::NONE).unwrap().unwrap();
        assert_eq!((read.option, read.option_at), (option, 8));
        let Body::Md(md) = read.body else { panic!("not MD") };
        assert_eq!(md.hops().map(|h| h.queue.unwrap().1).collect::<Vec<_>>(), [0x30, 0x20, 0x10]);
        // Read with the text's Opt Len of 9, the option overruns the header.
        let mut as_printed = out.clone();
        as_printed[0] = 0x09;
        let parsed = GeneveRepr::parse(&as_printed).unwrap();
        assert!(geneve::find_option(&as_printed, &parsed, INT_OPTION_CLASS).is_err());
    }

    /// Section 6.15: INT-MX in Geneve (Type 3, Length 3); Opt Len 4 by RFC
    /// 8926 (the text again prints 9).
    #[test]
    fn golden_mx_over_geneve() {
        let base = GeneveRepr {
            options_words: 4,
            oam: false,
            critical: false,
            protocol_type: PROTOCOL_ETHERNET,
            vni: 0xabc,
        };
        let option = GeneveOptionRepr { class: INT_OPTION_CLASS, option_type: 3, length_words: 3 };
        let mut out = [0u8; 24];
        let at = base.emit(&mut out).unwrap();
        let at = at + option.emit(&mut out[at..]).unwrap();
        out[at..].copy_from_slice(&MX);
        assert_eq!(out[..12], [0x04, 0x00, 0x65, 0x58, 0x00, 0x0a, 0xbc, 0x00, 0x01, 0x03, 0x03, 0x03]);
        let read = geneve_int(&out, SourceOnly::NONE).unwrap().unwrap();
        let Body::Mx { header, source_inserted } = read.body else { panic!("not MX") };
        assert_eq!((header.instructions.bits(), source_inserted.len()), (0x9000, 0));
    }

    #[test]
    fn a_geneve_option_bounds_the_hops() {
        // 124 bytes: the 12-byte header and 28 words of hops.
        assert_eq!(geneve_max_hops(2), 14);
        assert_eq!(geneve_max_hops(6), 4);
        assert_eq!(geneve_max_hops(31), 0);
    }
}
