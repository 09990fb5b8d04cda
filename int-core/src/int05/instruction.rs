//! INT 0.5 instruction bitmap (INT 0.5 section 3.3 "INT Metadata Header
//! Format"): bit 0 is the most significant bit of the 16-bit field, and each
//! set bit asks every hop for one 4-byte metadata word, in bit order.

use bitflags::bitflags;

bitflags! {
    /// The instruction bitmap. Bits 8-15 are reserved in INT 0.5; they are
    /// kept (`from_bits_retain`) so that a packet is never rewritten with
    /// fewer bits than it arrived with.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Instructions: u16 {
        /// bit 0: switch id.
        const SWITCH_ID = 0x8000;
        /// bit 1: ingress port id (16 bits) + egress port id (16 bits).
        const PORT_IDS = 0x4000;
        /// bit 2: hop latency.
        const HOP_LATENCY = 0x2000;
        /// bit 3: queue id (8 bits) + queue occupancy (24 bits).
        const QUEUE_OCCUPANCY = 0x1000;
        /// bit 4: ingress timestamp.
        const INGRESS_TIMESTAMP = 0x0800;
        /// bit 5: egress timestamp.
        const EGRESS_TIMESTAMP = 0x0400;
        /// bit 6: queue id (8 bits) + queue congestion status (24 bits).
        const QUEUE_CONGESTION = 0x0200;
        /// bit 7: egress port tx utilization.
        const EGRESS_TX_UTILIZATION = 0x0100;
        const _ = !0;
    }
}

/// The names used in configs and printed by the tools, in bit order.
pub const NAMES: [(&str, Instructions); 8] = [
    ("switch_id", Instructions::SWITCH_ID),
    ("port_ids", Instructions::PORT_IDS),
    ("hop_latency", Instructions::HOP_LATENCY),
    ("queue_occupancy", Instructions::QUEUE_OCCUPANCY),
    ("ingress_timestamp", Instructions::INGRESS_TIMESTAMP),
    ("egress_timestamp", Instructions::EGRESS_TIMESTAMP),
    ("queue_congestion", Instructions::QUEUE_CONGESTION),
    ("egress_tx_utilization", Instructions::EGRESS_TX_UTILIZATION),
];

impl Instructions {
    /// Host-INT's bitmap 0xCC00: switch id, ports, ingress and egress
    /// timestamps.
    pub const HOST_INT: Instructions = Instructions::SWITCH_ID
        .union(Instructions::PORT_IDS)
        .union(Instructions::INGRESS_TIMESTAMP)
        .union(Instructions::EGRESS_TIMESTAMP);

    /// Instruction Count: one word per set bit.
    #[inline]
    pub fn count(self) -> u8 {
        self.bits().count_ones() as u8
    }

    /// Bytes one hop adds.
    #[inline]
    pub fn hop_len(self) -> usize {
        usize::from(self.count()) * 4
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

    /// Byte offset of `bit`'s word inside one hop's metadata, if the bitmap
    /// asks for it: 4 x the set bits above it.
    #[inline(always)]
    pub fn word_offset(self, bit: Instructions) -> Option<usize> {
        if !self.contains(bit) || bit.is_empty() {
            return None;
        }
        let above = self.bits() & !(bit.bits() | (bit.bits() - 1));
        Some(above.count_ones() as usize * 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_int_bitmap_is_0xcc00() {
        assert_eq!(Instructions::HOST_INT.bits(), 0xcc00);
        assert_eq!(Instructions::HOST_INT.count(), 4);
        assert_eq!(Instructions::HOST_INT.hop_len(), 16);
    }

    /// INT 0.5 section 4.1's example: switch id and queue occupancy.
    #[test]
    fn spec_example_bitmap() {
        let bits = Instructions::from_bits_retain(0x9000);
        assert_eq!(bits, Instructions::SWITCH_ID | Instructions::QUEUE_OCCUPANCY);
        assert_eq!(bits.count(), 2);
    }

    #[test]
    fn each_is_in_bit_order_and_keeps_reserved_bits() {
        let bits = Instructions::from_bits_retain(0x8801);
        let order: Vec<u16> = bits.each().map(|b| b.bits()).collect();
        assert_eq!(order, vec![0x8000, 0x0800, 0x0001]);
        assert_eq!(bits.count(), 3);
    }

    #[test]
    fn word_offsets() {
        let bits = Instructions::HOST_INT;
        assert_eq!(bits.word_offset(Instructions::SWITCH_ID), Some(0));
        assert_eq!(bits.word_offset(Instructions::PORT_IDS), Some(4));
        assert_eq!(bits.word_offset(Instructions::INGRESS_TIMESTAMP), Some(8));
        assert_eq!(bits.word_offset(Instructions::EGRESS_TIMESTAMP), Some(12));
        assert_eq!(bits.word_offset(Instructions::HOP_LATENCY), None);
        assert_eq!(
            Instructions::from_bits_retain(0x0801).word_offset(Instructions::from_bits_retain(1)),
            Some(4)
        );
    }

    #[test]
    fn names_round_trip() {
        for (name, bit) in NAMES {
            assert_eq!(Instructions::from_config_name(name), Some(bit));
            assert_eq!(bit.name(), Some(name));
        }
        assert_eq!(Instructions::from_config_name("queue"), None);
    }
}
