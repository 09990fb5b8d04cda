//! 'Source-only' domain specific metadata (INT 2.1 section 5.8): words an
//! INT-MD source adds below its own hop, announced by bits of the DS
//! Instruction under a Domain Specific ID the domain defines. Hop ML does
//! not count them; the shim's Length does.
//!
//! int-node's domains define one such bit: DS Instruction bit 0 (the MSB),
//! a 4-byte per-flow packet number counted from 1, so that a sink counts
//! losses as it does in an INT 0.5 domain with Host-INT's sequence block.

use super::MdStack;

/// DS Instruction bit 0: the flow's packet number, 4 bytes, source-only.
pub const SEQUENCE: u16 = 0x8000;

/// The source-only metadata a domain knows: under `domain_id`, each of
/// `bits` set in a packet's DS Instruction is one word below the hops (two
/// for those also in `wide`), in bit order (bit 0 first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceOnly {
    pub domain_id: u16,
    pub bits: u16,
    /// Bits whose metadata is 8 bytes.
    pub wide: u16,
}

impl SourceOnly {
    /// No source-only metadata: every stack is whole hops.
    pub const NONE: SourceOnly = SourceOnly { domain_id: 0, bits: 0, wide: 0 };

    /// int-node's packet numbers under `domain_id`.
    pub const fn sequence(domain_id: u16) -> Self {
        SourceOnly { domain_id, bits: SEQUENCE, wide: 0 }
    }

    /// Words of source-only metadata a block whose header carries this
    /// Domain Specific ID and DS Instruction has. The default ID 0 defines
    /// none (its DS Instruction bits are reserved), nor does an ID this
    /// domain does not know.
    pub fn words(&self, domain_id: u16, ds_instructions: u16) -> u8 {
        if self.domain_id == 0 || domain_id != self.domain_id {
            return 0;
        }
        let present = ds_instructions & self.bits;
        (present.count_ones() + (present & self.wide).count_ones()) as u8
    }

    /// The packet number a block carries, if the domain defines it and the
    /// block announces it.
    pub fn sequence_of(&self, block: &MdStack<'_>) -> Option<u32> {
        let header = &block.header;
        if self.bits & SEQUENCE == 0
            || self.wide & SEQUENCE != 0
            || self.words(header.domain_id, header.ds_instructions & SEQUENCE) == 0
        {
            return None;
        }
        let word = block.source_only().get(..4)?;
        Some(u32::from_be_bytes(word.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int21::source::SourceConfig;
    use crate::int21::{Domain, HeaderType, Instructions, Marking};
    use crate::marking::{DscpMatch, TcpPlacement};

    fn config(ds_instructions: u16) -> SourceConfig {
        SourceConfig {
            domain: Domain {
                marking: Marking::Dscp(DscpMatch::new(0x17, 0x3f).unwrap()),
                tcp_placement: TcpPlacement::BeforeOptions,
                source_only: SourceOnly { domain_id: 0x4944, bits: SEQUENCE | 0x4000, wide: 0 },
            },
            header_type: HeaderType::Md,
            instructions: Instructions::NODE_ID,
            ds_words: 0,
            max_hops: 4,
            own_hop: true,
            domain_id: 0x4944,
            ds_instructions,
            ds_flags: 0,
            discard: false,
            max_ip_len: 1500,
        }
    }

    /// A source writes the packet number and no other source-only word: a
    /// DS Instruction asking for another one the domain defines is refused.
    #[test]
    fn a_source_writes_only_the_packet_number() {
        assert!(config(SEQUENCE).check().is_ok());
        assert!(config(SEQUENCE).numbers_packets());
        assert!(config(SEQUENCE | 0x4000).check().is_err());
        assert!(!config(0).numbers_packets());
        // Under another ID the bits are the default domain's reserved ones.
        assert_eq!(SourceOnly::sequence(0x4944).words(0x4945, SEQUENCE), 0);
        assert_eq!(SourceOnly::sequence(0).words(0, SEQUENCE), 0);
        assert_eq!(SourceOnly { domain_id: 1, bits: 0xc000, wide: 0x4000 }.words(1, 0xc000), 3);
    }
}
