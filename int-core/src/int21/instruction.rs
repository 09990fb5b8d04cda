//! INT 2.1 instruction bitmap (INT 2.1 section 5.8, "Instruction Bitmap"):
//! bit 0 is the most significant bit of the 16-bit field. Each set bit
//! asks every hop for one 4-byte word, except bits 4, 5 and 6, which ask
//! for 8 bytes; bit 15 (Checksum Complement) is always the last word.

use bitflags::bitflags;

bitflags! {
    /// The instruction bitmap. Reserved bits (9-14) are kept
    /// (`from_bits_retain`): a transit hop writes all-ones for them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Instructions: u16 {
        /// bit 0: node id.
        const NODE_ID = 0x8000;
        /// bit 1: level 1 ingress interface id (16 bits) + egress interface
        /// id (16 bits).
        const L1_PORT_IDS = 0x4000;
        /// bit 2: hop latency.
        const HOP_LATENCY = 0x2000;
        /// bit 3: queue id (8 bits) + queue occupancy (24 bits).
        const QUEUE_OCCUPANCY = 0x1000;
        /// bit 4: ingress timestamp (8 bytes).
        const INGRESS_TIMESTAMP = 0x0800;
        /// bit 5: egress timestamp (8 bytes).
        const EGRESS_TIMESTAMP = 0x0400;
        /// bit 6: level 2 ingress interface id + egress interface id (4
        /// bytes each).
        const L2_PORT_IDS = 0x0200;
        /// bit 7: egress interface tx utilization.
        const EGRESS_TX_UTILIZATION = 0x0100;
        /// bit 8: buffer id (8 bits) + buffer occupancy (24 bits).
        const BUFFER_OCCUPANCY = 0x0080;
        /// bit 15: checksum complement, the last word of a hop.
        const CHECKSUM_COMPLEMENT = 0x0001;
        const _ = !0;
    }
}

/// The bits whose metadata is 8 bytes long.
const EIGHT_BYTES: u16 = 0x0e00;

/// The names used in configs and printed by the tools, in bit order.
pub const NAMES: [(&str, Instructions); 10] = [
    ("node_id", Instructions::NODE_ID),
    ("l1_port_ids", Instructions::L1_PORT_IDS),
    ("hop_latency", Instructions::HOP_LATENCY),
    ("queue_occupancy", Instructions::QUEUE_OCCUPANCY),
    ("ingress_timestamp", Instructions::INGRESS_TIMESTAMP),
    ("egress_timestamp", Instructions::EGRESS_TIMESTAMP),
    ("l2_port_ids", Instructions::L2_PORT_IDS),
    ("egress_tx_utilization", Instructions::EGRESS_TX_UTILIZATION),
    ("buffer_occupancy", Instructions::BUFFER_OCCUPANCY),
    ("checksum_complement", Instructions::CHECKSUM_COMPLEMENT),
];

impl Instructions {
    /// 4-byte words the bitmap asks each hop for (the baseline metadata).
    #[inline]
    pub fn words(self) -> usize {
        (self.bits().count_ones() + (self.bits() & EIGHT_BYTES).count_ones()) as usize
    }

    /// Words of one set bit's metadata: 1, or 2 for bits 4-6.
    #[inline]
    pub fn bit_words(self) -> usize {
        if self.bits() & EIGHT_BYTES != 0 {
            2
        } else {
            1
        }
    }

    /// Word offset of `bit`'s metadata inside one hop, if the bitmap asks
    /// for it. The checksum complement comes after the domain specific
    /// words, so it has no offset here.
    #[inline]
    pub fn word_offset(self, bit: Instructions) -> Option<usize> {
        if !self.contains(bit) || bit.is_empty() || bit == Instructions::CHECKSUM_COMPLEMENT {
            return None;
        }
        let above = Instructions::from_bits_retain(self.bits() & !(bit.bits() | (bit.bits() - 1)));
        Some(above.words())
    }

    /// Looks a name from [`NAMES`] up.
    pub fn from_config_name(name: &str) -> Option<Instructions> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, bit)| *bit)
    }

    /// The name of a single defined bit.
    pub fn name(self) -> Option<&'static str> {
        NAMES.iter().find(|(_, bit)| *bit == self).map(|(n, _)| *n)
    }

    /// The set bits, one `Instructions` each, most significant first.
    #[inline]
    pub fn each(self) -> impl Iterator<Item = Instructions> {
        let mut rest = self.bits();
        core::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let top = 0x8000u16 >> rest.leading_zeros();
            rest &= !top;
            Some(Instructions::from_bits_retain(top))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT 2.1 section 6's examples: node id and queue occupancy, Hop ML 2.
    #[test]
    fn spec_example_bitmap() {
        let bits = Instructions::from_bits_retain(0x9000);
        assert_eq!(bits, Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY);
        assert_eq!(bits.words(), 2);
    }

    #[test]
    fn timestamps_and_level_2_ports_take_two_words() {
        let bits = Instructions::NODE_ID
            | Instructions::INGRESS_TIMESTAMP
            | Instructions::EGRESS_TIMESTAMP
            | Instructions::L2_PORT_IDS
            | Instructions::CHECKSUM_COMPLEMENT;
        assert_eq!(bits.words(), 1 + 2 + 2 + 2 + 1);
        assert_eq!(bits.word_offset(Instructions::NODE_ID), Some(0));
        assert_eq!(bits.word_offset(Instructions::INGRESS_TIMESTAMP), Some(1));
        assert_eq!(bits.word_offset(Instructions::EGRESS_TIMESTAMP), Some(3));
        assert_eq!(bits.word_offset(Instructions::L2_PORT_IDS), Some(5));
        assert_eq!(bits.word_offset(Instructions::CHECKSUM_COMPLEMENT), None);
        assert_eq!(Instructions::from_bits_retain(0x7e80).words(), 7 + 3);
    }

    #[test]
    fn reserved_bits_are_kept_and_count_one_word() {
        let bits = Instructions::from_bits_retain(0x8040);
        assert_eq!(bits.words(), 2);
        let order: Vec<u16> = bits.each().map(|b| b.bits()).collect();
        assert_eq!(order, vec![0x8000, 0x0040]);
    }

    #[test]
    fn names_round_trip() {
        for (name, bit) in NAMES {
            assert_eq!(Instructions::from_config_name(name), Some(bit));
            assert_eq!(bit.name(), Some(name));
        }
    }
}
