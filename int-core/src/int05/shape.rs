//! What a checked INT block's first 12 bytes (shim and metadata header) fix:
//! its length and where its sequence number, tail and bottom hop's words
//! lie. Every check [`IntBlock::parse`] makes, but the one against the bytes
//! there are, depends on these 12 bytes only.
//!
//! A sink sees the same 12 bytes on nearly every packet of a path, so
//! [`ShapeCache`] keeps the last shape that passed the checks: a block that
//! starts with the same bytes needs only its length checked against the
//! packet before its per-packet words are read. Any other block goes through
//! [`IntBlock::parse`], so errors and their order are the parser's.

use super::{Instructions, IntBlock, MetadataHeaderRepr, ShimType, Tail, TailRepr, INVALID};
use crate::error::{Layer, ParseError};

/// Bytes of the block that decide its shape: shim and metadata header.
pub const PREFIX_LEN: usize = IntBlock::STACK_OFFSET;

/// Where a checked block's parts lie, as offsets from the shim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockShape {
    shim_type: ShimType,
    header: MetadataHeaderRepr,
    /// The shim Length in bytes.
    len: u16,
    /// Offsets below [`NONE`]; the block is at most 1020 bytes.
    sequence_at: u16,
    tail_at: u16,
    /// The bottom hop's switch id, port ids and ingress timestamp words,
    /// when the stack has a hop and the bitmap asks for them.
    switch_id_at: u16,
    ports_at: u16,
    ingress_timestamp_at: u16,
    /// Whether the stack has a bottom hop at all.
    has_hop: bool,
}

/// An offset for a part the block does not have.
const NONE: u16 = u16::MAX;

fn offset(at: Option<usize>) -> u16 {
    at.map_or(NONE, |at| at as u16)
}

/// The words of the first hop (the source's) that a sink uses, as they
/// are on the wire: [`INVALID`] where the hop wrote it or the bitmap does
/// not ask for the word. Plain words: a burst of these waits between the
/// sink's two passes, and `Option` fields packed into them were read back
/// through the stack (a store-forwarding stall per packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceHop {
    switch_id: u32,
    port_ids: u32,
    ingress_timestamp: u32,
}

impl SourceHop {
    pub fn switch_id(&self) -> Option<u32> {
        Some(self.switch_id).filter(|w| *w != INVALID)
    }

    /// The ingress half of the port word; 0xFFFF means not available.
    pub fn ingress_port(&self) -> Option<u16> {
        Some((self.port_ids >> 16) as u16).filter(|p| *p != 0xffff)
    }

    pub fn ingress_timestamp(&self) -> Option<u32> {
        Some(self.ingress_timestamp).filter(|w| *w != INVALID)
    }
}

/// A checked block's fields that a sink reads per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockFields {
    pub shim_type: ShimType,
    pub header: MetadataHeaderRepr,
    /// The shim Length in bytes.
    pub len: usize,
    pub sequence: Option<u32>,
    /// All zero when the block has no tail.
    pub tail: TailRepr,
    pub source_hop: Option<SourceHop>,
}

impl BlockShape {
    /// The shape of a block [`IntBlock::parse`] accepted.
    fn of(block: &IntBlock<'_>, tail: Tail) -> BlockShape {
        let len = block.len();
        let tail_at = (tail == Tail::Present).then(|| len - super::tail::HEADER_LEN);
        let stack_end = tail_at.unwrap_or(len);
        let sequence_at = block.shim.int_type.has_sequence().then(|| stack_end - super::SEQUENCE_LEN);
        let instructions = block.header.instructions;
        let has_hop = block.header.total_hop_cnt > 0;
        let bottom_hop_at = IntBlock::STACK_OFFSET
            + usize::from(block.header.total_hop_cnt).saturating_sub(1) * instructions.hop_len();
        let word_at = |bit: Instructions| {
            instructions.word_offset(bit).filter(|_| has_hop).map(|offset| bottom_hop_at + offset)
        };
        BlockShape {
            shim_type: block.shim.int_type,
            header: block.header,
            len: len as u16,
            sequence_at: offset(sequence_at),
            tail_at: offset(tail_at),
            switch_id_at: offset(word_at(Instructions::SWITCH_ID)),
            ports_at: offset(word_at(Instructions::PORT_IDS)),
            ingress_timestamp_at: offset(word_at(Instructions::INGRESS_TIMESTAMP)),
            has_hop,
        }
    }

    /// Reads the per-packet words of a block of this shape; `block` is the
    /// block's `len` bytes.
    #[inline(always)]
    fn read(&self, block: &[u8]) -> BlockFields {
        let word = |at: u16, absent: u32| match at {
            NONE => absent,
            at => crate::bytes::be32(block, usize::from(at)),
        };
        let tail = word(self.tail_at, 0);
        let tail = TailRepr { protocol: (tail >> 24) as u8, dst_port: (tail >> 8) as u16, dscp: tail as u8 };
        // Not `has_hop.then(|| ..)`: that closure was compiled out of line,
        // and reading its result back from the stack stalled the sink.
        let source_hop = if self.has_hop {
            Some(SourceHop {
                switch_id: word(self.switch_id_at, INVALID),
                port_ids: word(self.ports_at, INVALID),
                ingress_timestamp: word(self.ingress_timestamp_at, INVALID),
            })
        } else {
            None
        };
        BlockFields {
            shim_type: self.shim_type,
            header: self.header,
            len: usize::from(self.len),
            sequence: (self.sequence_at != NONE).then(|| word(self.sequence_at, 0)),
            tail,
            source_hop,
        }
    }
}

/// The last block shape that passed the checks, keyed by its 12 bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShapeCache {
    prefix: [u8; PREFIX_LEN],
    shape: Option<(BlockShape, Tail)>,
}

impl ShapeCache {
    /// Checks the block at the front of `bytes` as [`IntBlock::parse`] does
    /// (same result, same error) and reads its per-packet fields; a block
    /// whose 12 bytes equal the last good block's skips the header checks.
    #[inline(always)]
    pub fn parse(&mut self, bytes: &[u8], tail: Tail) -> Result<BlockFields, ParseError> {
        let cached = match (bytes.get(..PREFIX_LEN), &self.shape) {
            (Some(prefix), Some((_, cached_tail))) => prefix == self.prefix && *cached_tail == tail,
            _ => false,
        };
        if !cached {
            // Out of line and returning no fields: the usual path builds
            // them in registers (a merged result went through the stack,
            // and its reads stalled on store forwarding).
            self.check(bytes, tail)?;
        }
        // Never taken: a block that passed `check` has left its shape.
        let Some((shape, _)) = &self.shape else {
            return Err(ParseError::truncated(Layer::IntShim, 0, PREFIX_LEN, bytes.len()));
        };
        let len = usize::from(shape.len);
        match bytes.get(..len) {
            Some(block) => Ok(shape.read(block)),
            None => Err(ParseError::truncated(Layer::IntShim, 0, len, bytes.len())),
        }
    }

    /// Checks a block of a new shape with [`IntBlock::parse`] and keeps its
    /// shape.
    #[inline(never)]
    fn check(&mut self, bytes: &[u8], tail: Tail) -> Result<(), ParseError> {
        let block = IntBlock::parse(bytes, tail)?;
        // Always there: the parser accepts no block shorter than 16 bytes.
        if let Some(prefix) = bytes.get(..PREFIX_LEN) {
            self.prefix.copy_from_slice(prefix);
            self.shape = Some((BlockShape::of(&block, tail), tail));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int05::tests::HOST_INT_SOURCE_BLOCK;

    fn uncached(bytes: &[u8], tail: Tail) -> Result<BlockFields, ParseError> {
        ShapeCache::default().parse(bytes, tail)
    }

    #[test]
    fn host_int_block_fields() {
        let fields = uncached(&HOST_INT_SOURCE_BLOCK, Tail::Present).unwrap();
        assert_eq!(fields.len, 36);
        assert_eq!(fields.shim_type, ShimType::HostIntSequence);
        assert_eq!(fields.sequence, Some(1));
        assert_eq!(fields.tail, TailRepr { protocol: 0, dst_port: 0, dscp: 0 });
        let hop = fields.source_hop.unwrap();
        assert_eq!(hop.switch_id(), Some(0x0a00_0001));
        assert_eq!(hop.ingress_port(), Some(1));
        assert_eq!(hop.ingress_timestamp(), Some(0x5e00_0001));
    }

    /// Words a hop wrote as not available, and words the bitmap does not
    /// ask for, read as `None`; a stack without hops has no source hop.
    #[test]
    fn unavailable_and_absent_words_read_as_none() {
        let mut block = HOST_INT_SOURCE_BLOCK;
        block[12..16].copy_from_slice(&INVALID.to_be_bytes()); // switch id
        block[16..18].copy_from_slice(&[0xff, 0xff]); // ingress port
        let hop = uncached(&block, Tail::Present).unwrap().source_hop.unwrap();
        assert_eq!((hop.switch_id(), hop.ingress_port()), (None, None));
        assert_eq!(hop.ingress_timestamp(), Some(0x5e00_0001));
        // Bitmap 0xC000 (switch id, port ids): no timestamp word.
        let two_words = [
            0x03, 0x00, 0x07, 0x00, 0x00, 0x02, 0x02, 0x01, 0xc0, 0x00, 0x00, 0x00, //
            0x0a, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,
        ];
        let fields = uncached(&two_words, Tail::Present).unwrap();
        let hop = fields.source_hop.unwrap();
        assert_eq!(
            (hop.switch_id(), hop.ingress_port(), hop.ingress_timestamp()),
            (Some(0x0a00_0001), Some(1), None)
        );
        assert_eq!(fields.sequence, Some(5));
        // No hop on the stack (Total Hop Count 0).
        let no_hops = [
            0x03, 0x00, 0x05, 0x00, 0x00, 0x04, 0x02, 0x00, 0xcc, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x07, 0x11, 0x13, 0x89, 0x00,
        ];
        let fields = uncached(&no_hops, Tail::Present).unwrap();
        assert_eq!(fields.source_hop, None);
        assert_eq!(fields.sequence, Some(7));
        assert_eq!(fields.tail, TailRepr { protocol: 17, dst_port: 5001, dscp: 0 });
    }

    #[test]
    fn a_warm_cache_answers_as_the_parser_over_every_change_and_cut() {
        let mut cache = ShapeCache::default();
        cache.parse(&HOST_INT_SOURCE_BLOCK, Tail::Present).unwrap();
        let mut hits = 0;
        for at in 0..HOST_INT_SOURCE_BLOCK.len() {
            for value in [0x00, 0x01, 0x03, 0x09, 0x10, 0x7f, 0xcc, 0xff] {
                let mut changed = HOST_INT_SOURCE_BLOCK;
                changed[at] = value;
                for len in [changed.len(), changed.len() - 1, 20, 12, 11, 3, 0] {
                    let bytes = &changed[..len];
                    hits +=
                        usize::from(bytes.get(..PREFIX_LEN) == Some(&HOST_INT_SOURCE_BLOCK[..PREFIX_LEN]));
                    assert_eq!(
                        cache.parse(bytes, Tail::Present),
                        uncached(bytes, Tail::Present),
                        "byte {at} = {value:#x}, {len} bytes"
                    );
                    // A good block the cache has not seen replaces the entry;
                    // the next packet of the usual shape restores it.
                    assert_eq!(
                        cache.parse(&HOST_INT_SOURCE_BLOCK, Tail::Present),
                        uncached(&HOST_INT_SOURCE_BLOCK, Tail::Present)
                    );
                }
            }
        }
        // At least every change behind the prefix, cut to 12 bytes or more.
        assert!(hits >= 24 * 8 * 4, "the cache was hit {hits} times");
        // The same bytes without a tail (a report's copy) are another shape.
        let report = &HOST_INT_SOURCE_BLOCK[..32];
        assert_eq!(cache.parse(report, Tail::Absent), uncached(report, Tail::Absent));
    }
}
