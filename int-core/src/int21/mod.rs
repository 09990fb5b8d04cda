//! INT 2.1 (P4.org In-band Network Telemetry, version 2.1, 2020) over
//! TCP/UDP: the shim (section 5.7.2), the INT-MD metadata header and stack
//! (section 5.8) and the INT-MX header (section 5.9).
//!
//! An INT-MD block is the shim, the 12-byte header and the stack: Hop ML
//! words per hop, the newest first, after any 'source-only' domain specific
//! metadata the source put at the bottom. INT 2.1 has no hop count: hops =
//! (shim Length - 3 - source-only words) / Hop ML.
//!
//! The text slips once here: section 5.3 speaks of "12 bytes of fixed INT
//! headers" at the source but defines a 12-byte header after a 4-byte shim;
//! the fixed part is 16 bytes, as section 5.3's own MTU formula says (12 B
//! header + 4 B shim).

pub mod fast_sink;
pub mod fast_source;
pub mod fast_transit;
pub mod find;
pub mod hop;
pub mod in_tunnel;
pub mod instruction;
pub mod md_header;
pub mod mx_header;
pub mod postcard;
pub mod push;
pub mod shim;
pub mod sink;
pub mod source;
pub mod source_only;
pub mod transit;
pub mod tunnel;

pub use find::{find, find_in_report, reported_flow, reported_packet, Arrival, Domain, Found, Marking};
pub use hop::HopMetadata;
pub use instruction::Instructions;
pub use md_header::MdHeaderRepr;
pub use mx_header::MxHeaderRepr;
pub use shim::{HeaderType, Next, ShimRepr};
pub use source_only::SourceOnly;

use crate::bytes::be32;
use crate::error::{EmitError, Layer, ParseError};
use crate::hop_rule::{Digest, HopDigest, HopFigures, HopRule, Untold, MAX_HOPS};

/// The shim and the MD or MX header: 16 bytes.
pub const FIXED_LEN: usize = shim::HEADER_LEN + md_header::HEADER_LEN;
/// The longest block a shim Length can describe.
pub const MAX_BLOCK_LEN: usize = shim::HEADER_LEN + 255 * 4;

/// An INT 2.1 block parsed in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block<'a> {
    Md(MdBlock<'a>),
    Mx(MxBlock<'a>),
}

impl<'a> Block<'a> {
    /// Parses the block at the start of `bytes`: an INT-MD block, whose
    /// stack holds below the hops the source-only metadata its header
    /// announces as `source_only` defines it, or an INT-MX block.
    /// Destination-type headers are not spoken here.
    pub fn parse(bytes: &'a [u8], source_only: SourceOnly) -> Result<Self, ParseError> {
        let shim = ShimRepr::parse(bytes)?;
        let len = shim::HEADER_LEN + usize::from(shim.length_words) * 4;
        let block =
            bytes.get(..len).ok_or_else(|| ParseError::truncated(Layer::IntShim, 0, len, bytes.len()))?;
        if len < FIXED_LEN {
            return Err(ParseError::BadLength {
                layer: Layer::IntShim,
                offset: 1,
                value: usize::from(shim.length_words),
            });
        }
        let body = Body::parse(
            shim.header_type,
            crate::bytes::after(block, shim::HEADER_LEN, Layer::IntShim, 0)?,
            source_only,
        )
        .map_err(|e| e.shifted(shim::HEADER_LEN))?;
        Ok(match body {
            Body::Md(md) => Block::Md(MdBlock {
                shim,
                header: md.header,
                stack: md.stack,
                source_only_words: md.source_only_words,
                len,
            }),
            Body::Mx { header, source_inserted } => Block::Mx(MxBlock { shim, header, source_inserted, len }),
        })
    }

    /// The INT-MD or INT-MX header and what follows it, without the shim.
    pub fn body(&self) -> Body<'a> {
        match self {
            Block::Md(md) => Body::Md(md.as_stack()),
            Block::Mx(mx) => Body::Mx { header: mx.header, source_inserted: mx.source_inserted },
        }
    }

    pub fn shim(&self) -> ShimRepr {
        match self {
            Block::Md(md) => md.shim,
            Block::Mx(mx) => mx.shim,
        }
    }

    /// Bytes from the shim to the end of the block.
    pub fn len(&self) -> usize {
        match self {
            Block::Md(md) => md.len,
            Block::Mx(mx) => mx.len,
        }
    }

    /// Never: a block holds at least its shim and header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// An INT-MD or INT-MX header and what follows it, whatever carries it
/// (the TCP/UDP shim, VXLAN-GPE's INT shim, a Geneve option): the carrier
/// gives the header type and the Length words that are the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    Md(MdStack<'a>),
    Mx { header: MxHeaderRepr, source_inserted: &'a [u8] },
}

impl<'a> Body<'a> {
    /// Parses `body`, exactly the words the carrier announces. Offsets in
    /// errors count from the body's start.
    pub fn parse(
        header_type: HeaderType,
        body: &'a [u8],
        source_only: SourceOnly,
    ) -> Result<Self, ParseError> {
        let after_header = body.get(md_header::HEADER_LEN..).ok_or(ParseError::BadLength {
            layer: Layer::IntShim,
            offset: 0,
            value: body.len(),
        })?;
        match header_type {
            HeaderType::Md => {
                let header = MdHeaderRepr::parse(body)?;
                let source_only_words = source_only.words(header.domain_id, header.ds_instructions);
                MdBlock::check(&header, after_header.len(), source_only_words)?;
                Ok(Body::Md(MdStack { header, stack: after_header, source_only_words }))
            }
            HeaderType::Mx => {
                let header = MxHeaderRepr::parse(body)?;
                Ok(Body::Mx { header, source_inserted: after_header })
            }
            HeaderType::Destination => {
                Err(ParseError::UnknownType { layer: Layer::IntShim, offset: 0, value: 2 })
            }
        }
    }
}

/// An INT-MD header and its metadata stack, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdStack<'a> {
    pub header: MdHeaderRepr,
    /// The hops, newest first, then the source-only metadata.
    pub stack: &'a [u8],
    pub source_only_words: u8,
}

impl<'a> MdStack<'a> {
    /// Hops that pushed their metadata.
    pub fn hop_count(&self) -> usize {
        let hop_words = (self.stack.len() / 4).saturating_sub(usize::from(self.source_only_words));
        hop_words.checked_div(usize::from(self.header.hop_ml)).unwrap_or(0)
    }

    /// Each hop's metadata, newest first.
    pub fn hops(&self) -> impl Iterator<Item = HopMetadata> + 'a {
        let (instructions, hop_ml) = (self.header.instructions, self.header.hop_ml);
        let hop_len = usize::from(hop_ml) * 4;
        let stack = self.stack;
        (0..self.hop_count()).filter_map(move |i| {
            let bytes = stack.get(i * hop_len..(i + 1) * hop_len)?;
            HopMetadata::parse(instructions, hop_ml, bytes).ok()
        })
    }

    /// The source-only metadata at the bottom of the stack.
    pub fn source_only(&self) -> &'a [u8] {
        let start = self.stack.len().saturating_sub(usize::from(self.source_only_words) * 4);
        self.stack.get(start..).unwrap_or_default()
    }

    /// The hops as the sink's hop rule reads them (node id, hop latency,
    /// queue occupancy), newest first, read in place: what
    /// [`HopRule::digest`] defines.
    #[inline]
    pub fn hop_digest(&self, rule: &HopRule) -> Result<HopDigest, Untold> {
        let instructions = self.header.instructions;
        let node_at = instructions.word_offset(Instructions::NODE_ID).ok_or(Untold::Unnamed)? * 4;
        // Figures the rule does not look at are not read.
        let latency_at =
            instructions.word_offset(Instructions::HOP_LATENCY).filter(|_| !rule.latency.is_empty());
        let queue_at = instructions
            .word_offset(Instructions::QUEUE_OCCUPANCY)
            .filter(|_| !rule.queue.is_empty() || rule.queue_alert.is_some());
        let (latency_at, queue_at) = (latency_at.map(|w| w * 4), queue_at.map(|w| w * 4));
        let (hop_len, count) = (usize::from(self.header.hop_ml) * 4, self.hop_count());
        if count > MAX_HOPS {
            return Err(Untold::TooMany);
        }
        let stack = self.stack;
        // A word of the stack; all ones (not known) and past the end alike
        // read as `None`.
        let word = |at: usize| stack.get(at..at + 4).map(|w| be32(w, 0)).filter(|&v| v != hop::INVALID);
        let mut digest = Digest::new(rule);
        for at in (0..count).map(|hop| hop * hop_len) {
            let figures = HopFigures {
                node: word(at + node_at).ok_or(Untold::Unnamed)?,
                latency: latency_at.and_then(|offset| word(at + offset)),
                // The low 24 bits; the queue id is the hop's own business.
                queue: queue_at.and_then(|offset| word(at + offset)).map(|w| w & 0x00ff_ffff),
            };
            digest.push(rule, &figures);
        }
        if digest.maybe_twice() {
            let node = |hop: usize| word(hop * hop_len + node_at);
            if (0..count).any(|i| (i + 1..count).any(|j| node(i) == node(j))) {
                return Err(Untold::Repeated);
            }
        }
        digest.finish()
    }

    /// The oldest hop's metadata (the source's, when it pushed): the last
    /// of [`MdStack::hops`], read without reading the others.
    pub fn bottom_hop(&self) -> Option<HopMetadata> {
        let hop_len = usize::from(self.header.hop_ml) * 4;
        let at = self.hop_count().checked_sub(1)? * hop_len;
        let bytes = self.stack.get(at..at + hop_len)?;
        HopMetadata::parse(self.header.instructions, self.header.hop_ml, bytes).ok()
    }
}

/// An INT-MD block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdBlock<'a> {
    pub shim: ShimRepr,
    pub header: MdHeaderRepr,
    /// The metadata stack: the hops, newest first, then the source-only
    /// metadata.
    pub stack: &'a [u8],
    pub source_only_words: u8,
    /// Bytes from the shim to the end of the stack.
    pub len: usize,
}

impl<'a> MdBlock<'a> {
    /// A stack of whole hops above the source-only words, each hop long
    /// enough for the bitmap (offsets from the MD header's start).
    pub(crate) fn check(
        header: &MdHeaderRepr,
        stack_len: usize,
        source_only_words: u8,
    ) -> Result<(), ParseError> {
        let stack_words = stack_len / 4;
        let bad = |value: usize| ParseError::BadLength {
            layer: Layer::IntStack,
            offset: md_header::HEADER_LEN,
            value,
        };
        let hop_words =
            stack_words.checked_sub(usize::from(source_only_words)).ok_or_else(|| bad(stack_len))?;
        if header.hop_ml == 0 {
            return if hop_words == 0 { Ok(()) } else { Err(bad(stack_len)) };
        }
        if usize::from(header.hop_ml) < header.instructions.words() {
            return Err(ParseError::BadLength {
                layer: Layer::IntMetadataHeader,
                offset: 2,
                value: usize::from(header.hop_ml),
            });
        }
        if !hop_words.is_multiple_of(usize::from(header.hop_ml)) {
            return Err(bad(stack_len));
        }
        Ok(())
    }

    /// The header and stack, as any carrier's INT-MD body reads.
    pub fn as_stack(&self) -> MdStack<'a> {
        MdStack { header: self.header, stack: self.stack, source_only_words: self.source_only_words }
    }

    /// Hops that pushed their metadata.
    pub fn hop_count(&self) -> usize {
        self.as_stack().hop_count()
    }

    /// Each hop's metadata, newest first.
    pub fn hops(&self) -> impl Iterator<Item = HopMetadata> + 'a {
        self.as_stack().hops()
    }

    /// The source-only metadata at the bottom of the stack.
    pub fn source_only(&self) -> &'a [u8] {
        self.as_stack().source_only()
    }
}

/// An INT-MX block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MxBlock<'a> {
    pub shim: ShimRepr,
    pub header: MxHeaderRepr,
    /// Domain specific 'source-inserted' metadata after the header.
    pub source_inserted: &'a [u8],
    pub len: usize,
}

/// Writes an INT-MD block: the shim (its Length computed), the header, the
/// hops (newest first) and the source-only metadata. Returns its length.
pub fn emit_md_block(
    buf: &mut [u8],
    next: Next,
    header: &MdHeaderRepr,
    hops: &[HopMetadata],
    source_only: &[u8],
) -> Result<usize, EmitError> {
    let hop_len = usize::from(header.hop_ml) * 4;
    let len = FIXED_LEN + hops.len() * hop_len + source_only.len();
    if len > MAX_BLOCK_LEN || !source_only.len().is_multiple_of(4) {
        return Err(EmitError::Unrepresentable { layer: Layer::IntShim, value: len });
    }
    let available = buf.len();
    let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::IntShim, len, available))?;
    let shim =
        ShimRepr { header_type: HeaderType::Md, next, length_words: ((len - shim::HEADER_LEN) / 4) as u8 };
    let mut at = shim.emit(out)?;
    at += header.emit(crate::bytes::after_mut(out, at, Layer::IntMetadataHeader, md_header::HEADER_LEN)?)?;
    for hop in hops {
        let hop_len = usize::from(header.hop_ml) * 4;
        at += hop.emit(
            header.instructions,
            header.hop_ml,
            crate::bytes::after_mut(out, at, Layer::IntStack, hop_len)?,
        )?;
    }
    if let Some(slot) = out.get_mut(at..at + source_only.len()) {
        slot.copy_from_slice(source_only);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hop_rule::{Bounds, HopChange};

    /// INT 2.1 section 6.1, from the shim to the end of the stack, as the
    /// sink receives it (node ids 2 and 1, queue ids 0, occupancies 0x20
    /// and 0x10 chosen here; the text leaves the values out).
    const SPEC_MD_BLOCK: [u8; 32] = [
        0x10, 0x07, 0x00, 0x00, // shim: MD, NPT 0, Length 7
        0x20, 0x00, 0x02, 0x06, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
        0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x20, // hop 2
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, // hop 1
    ];

    /// The spec's stack as the hop rule reads it: the same digest for the
    /// same node ids and classes, a path change for another node or order,
    /// a hop's change for another queue class, untold where a hop names no
    /// node.
    #[test]
    fn the_hop_digest_reads_node_ids_and_queues() {
        let rule = HopRule { queue: Bounds::new(&[0x18]).unwrap(), ..HopRule::default() };
        let digest = |block: &[u8]| match Block::parse(block, SourceOnly::NONE).unwrap().body() {
            Body::Md(md) => md.hop_digest(&rule),
            Body::Mx { .. } => Err(Untold::NoHops),
        };
        let spec = digest(&SPEC_MD_BLOCK).unwrap();
        assert_eq!(digest(&SPEC_MD_BLOCK), Ok(spec));
        let change = |block: &[u8]| digest(block).unwrap().change_from(spec.hops(), spec.path());
        let mut other = SPEC_MD_BLOCK;
        other[19] = 3;
        assert_eq!(change(&other), Some(HopChange::Path), "another middle node");
        let mut swapped = SPEC_MD_BLOCK;
        (swapped[19], swapped[27]) = (1, 2);
        assert_eq!(change(&swapped), Some(HopChange::Path), "the same nodes in another order");
        let mut calmer = SPEC_MD_BLOCK;
        calmer[23] = 0x17;
        assert_eq!(change(&calmer), Some(HopChange::Hop), "hop 2's queue under the bound");
        // The queue id is not the occupancy.
        let mut queue_id = SPEC_MD_BLOCK;
        queue_id[20] = 7;
        assert_eq!(change(&queue_id), None);
        let mut unnamed = SPEC_MD_BLOCK;
        unnamed[16..20].copy_from_slice(&[0xff; 4]);
        assert_eq!(digest(&unnamed), Err(Untold::Unnamed));
    }

    fn spec_hops() -> [HopMetadata; 2] {
        [
            HopMetadata { node_id: Some(2), queue: Some((0, 0x20)), ..HopMetadata::default() },
            HopMetadata { node_id: Some(1), queue: Some((0, 0x10)), ..HopMetadata::default() },
        ]
    }

    #[test]
    fn golden_md_block() {
        let Block::Md(block) = Block::parse(&SPEC_MD_BLOCK, SourceOnly::NONE).unwrap() else {
            panic!("not MD")
        };
        assert_eq!(block.len, 32);
        assert_eq!(block.hop_count(), 2);
        assert_eq!(block.header.remaining_hop_cnt, 6);
        assert_eq!(block.hops().collect::<Vec<_>>(), spec_hops());
        assert_eq!(block.as_stack().bottom_hop(), Some(spec_hops()[1]));
        let mut out = [0u8; 32];
        let len = emit_md_block(&mut out, Next::Dscp(0), &block.header, &spec_hops(), &[]).unwrap();
        assert_eq!(out[..len], SPEC_MD_BLOCK);
    }

    #[test]
    fn source_only_words_sit_below_the_hops() {
        let header = MdHeaderRepr { hop_ml: 2, remaining_hop_cnt: 7, ..MdHeaderRepr::default() };
        let header = MdHeaderRepr {
            instructions: Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY,
            domain_id: 0x4944,
            ds_instructions: source_only::SEQUENCE,
            ..header
        };
        let mut out = [0u8; 64];
        let len =
            emit_md_block(&mut out, Next::IpProtocol(6), &header, &spec_hops()[..1], &[1, 2, 3, 4]).unwrap();
        assert_eq!(len, 16 + 8 + 4);
        assert_eq!(out[1], 6, "Length counts the source-only word");
        let known = SourceOnly::sequence(0x4944);
        let Block::Md(block) = Block::parse(&out[..len], known).unwrap() else { panic!("not MD") };
        assert_eq!(block.hop_count(), 1);
        assert_eq!(block.source_only(), [1, 2, 3, 4]);
        assert_eq!(known.sequence_of(&block.as_stack()), Some(0x0102_0304));
        // Read without knowing of them (another ID, or none), the stack
        // does not divide into hops.
        for unknown in [SourceOnly::NONE, SourceOnly::sequence(0x4945)] {
            assert!(matches!(
                Block::parse(&out[..len], unknown),
                Err(ParseError::BadLength { layer: Layer::IntStack, .. })
            ));
        }
        // A block that does not announce the word has none.
        let mut silent = out;
        silent[12] = 0;
        assert!(matches!(
            Block::parse(&silent[..len], known),
            Err(ParseError::BadLength { layer: Layer::IntStack, .. })
        ));
    }

    /// INT 2.1 section 6.17, from the MD header on (the shim in front, NPT
    /// 0 and Length 8, is ours; the node ids 3, 2 and 1 are chosen here):
    /// the Transparent Security domain (ID 0x5453, DS Flags bit 1) whose
    /// gateway puts Host1's MAC below the stack as source-only metadata.
    /// The text slips once: it calls the field "16 bit" where it draws 8
    /// bytes (the 6-byte MAC and 2 reserved); we read the drawing.
    #[test]
    fn golden_source_only_metadata_example() {
        #[rustfmt::skip]
        let bytes = [
            0x10, 0x08, 0x00, 0x00, // shim: MD, NPT 0, Length 8
            0x20, 0x00, 0x01, 0x05, // Ver 2, Hop ML 1, Remaining Hop Count 5
            0x80, 0x00, 0x54, 0x53, // bitmap: node id; Domain Specific ID 'TS'
            0x80, 0x00, 0x40, 0x00, // DS Instruction bit 0; DS Flags bit 1
            0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, // hop2, hop1, the gateway
            0xa6, 0x1a, 0xf6, 0xb1, 0x64, 0x7d, 0x00, 0x00, // Host1's MAC
        ];
        let transparent_security = SourceOnly { domain_id: 0x5453, bits: 0x8000, wide: 0x8000 };
        let Block::Md(block) = Block::parse(&bytes, transparent_security).unwrap() else { panic!("not MD") };
        assert_eq!(
            (block.header.domain_id, block.header.ds_instructions, block.header.ds_flags),
            (0x5453, 0x8000, 0x4000)
        );
        assert_eq!(block.hops().map(|h| h.node_id.unwrap()).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(block.as_stack().bottom_hop().and_then(|h| h.node_id), Some(1), "above the MAC");
        assert_eq!(block.source_only(), [0xa6, 0x1a, 0xf6, 0xb1, 0x64, 0x7d, 0x00, 0x00]);
        assert_eq!(transparent_security.sequence_of(&block.as_stack()), None, "not int-node's packet number");
        let hops: Vec<_> = block.hops().collect();
        let mut out = [0u8; 40];
        let len = emit_md_block(&mut out, Next::Dscp(0), &block.header, &hops, block.source_only()).unwrap();
        assert_eq!(out[..len], bytes);
        // With Hop ML 1, a node that does not know the domain reads the MAC
        // as two more hops: source-only metadata needs the domain known.
        let Block::Md(unknown) = Block::parse(&bytes, SourceOnly::NONE).unwrap() else { panic!("not MD") };
        assert_eq!(unknown.hop_count(), 5);
    }

    #[test]
    fn lying_blocks_are_refused() {
        let mut short_ml = SPEC_MD_BLOCK;
        short_ml[6] = 0x01;
        assert!(matches!(
            Block::parse(&short_ml, SourceOnly::NONE),
            Err(ParseError::BadLength { layer: Layer::IntMetadataHeader, .. })
        ));
        let mut odd = SPEC_MD_BLOCK;
        odd[1] = 6;
        assert!(matches!(
            Block::parse(&odd[..28], SourceOnly::NONE),
            Err(ParseError::BadLength { layer: Layer::IntStack, .. })
        ));
        let mut tiny = SPEC_MD_BLOCK;
        tiny[1] = 2;
        assert!(matches!(
            Block::parse(&tiny, SourceOnly::NONE),
            Err(ParseError::BadLength { layer: Layer::IntShim, .. })
        ));
        for cut in 0..SPEC_MD_BLOCK.len() {
            assert!(
                matches!(
                    Block::parse(&SPEC_MD_BLOCK[..cut], SourceOnly::NONE),
                    Err(ParseError::Truncated { .. })
                ),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn golden_mx_block() {
        let bytes = [0x30, 0x03, 0x00, 0x00, 0x20, 0, 0, 0, 0x90, 0x00, 0, 0, 0, 0, 0, 0];
        let Block::Mx(block) = Block::parse(&bytes, SourceOnly::NONE).unwrap() else { panic!("not MX") };
        assert_eq!(block.len, 16);
        assert!(block.source_inserted.is_empty());
        assert_eq!(block.header.instructions, Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY);
    }
}
