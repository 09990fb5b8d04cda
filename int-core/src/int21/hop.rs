//! One hop's INT 2.1 metadata (INT 2.1 sections 4 and 5.8): Hop ML words in
//! this order: the baseline metadata of the set bits 0-14, in bit order
//! (bits 4-6 take 8 bytes), then the domain specific metadata, then the
//! checksum complement (bit 15). A value a node cannot provide, and a
//! reserved bit's word, is all ones; so is the domain specific metadata of
//! a domain this node does not know (section 5.8's padding rule).

use super::instruction::Instructions;
use crate::error::{EmitError, Layer, ParseError};
pub use crate::hop::Hop as HopMetadata;

/// The word written for a value that is not available.
pub const INVALID: u32 = 0xffff_ffff;

/// A 16-bit half of a port word, all ones when unknown.
fn half(port: Option<u16>) -> u32 {
    u32::from(port.unwrap_or(0xffff))
}

/// An 8-bit id and a 24-bit value in one word.
fn id_and_value(pair: Option<(u8, u32)>) -> u32 {
    pair.map_or(INVALID, |(id, value)| (u32::from(id) << 24) | (value & 0x00ff_ffff))
}

impl HopMetadata {
    /// The one or two words this hop writes for one baseline bit.
    #[inline]
    pub fn words(&self, bit: Instructions) -> [u32; 2] {
        let split = |value: Option<u64>| value.map_or([INVALID; 2], |v| [(v >> 32) as u32, v as u32]);
        match bit {
            Instructions::NODE_ID => [self.node_id.unwrap_or(INVALID), INVALID],
            Instructions::L1_PORT_IDS => match (self.l1_ingress_port, self.l1_egress_port) {
                (None, None) => [INVALID; 2],
                (ingress, egress) => [(half(ingress) << 16) | half(egress), INVALID],
            },
            Instructions::HOP_LATENCY => [self.hop_latency.unwrap_or(INVALID), INVALID],
            Instructions::QUEUE_OCCUPANCY => [id_and_value(self.queue), INVALID],
            Instructions::INGRESS_TIMESTAMP => split(self.ingress_timestamp),
            Instructions::EGRESS_TIMESTAMP => split(self.egress_timestamp),
            Instructions::L2_PORT_IDS => {
                [self.l2_ingress_port.unwrap_or(INVALID), self.l2_egress_port.unwrap_or(INVALID)]
            }
            Instructions::EGRESS_TX_UTILIZATION => [self.egress_tx_utilization.unwrap_or(INVALID), INVALID],
            Instructions::BUFFER_OCCUPANCY => [id_and_value(self.buffer), INVALID],
            Instructions::CHECKSUM_COMPLEMENT => [self.checksum_complement.unwrap_or(INVALID), INVALID],
            _ => [INVALID; 2],
        }
    }

    /// Writes `hop_ml` words for `instructions`; returns the bytes written.
    /// Hop ML must cover the bitmap's words (the rest is domain specific
    /// metadata, written as all ones).
    pub fn emit(&self, instructions: Instructions, hop_ml: u8, buf: &mut [u8]) -> Result<usize, EmitError> {
        let words = usize::from(hop_ml);
        if words < instructions.words() {
            return Err(EmitError::Unrepresentable { layer: Layer::IntStack, value: words });
        }
        let len = words * 4;
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::IntStack, len, available))?;
        out.fill(0xff);
        let mut slots = out.chunks_exact_mut(4);
        for bit in (instructions - Instructions::CHECKSUM_COMPLEMENT).each() {
            let values = self.words(bit);
            for (slot, value) in slots.by_ref().take(bit.bit_words()).zip(values) {
                slot.copy_from_slice(&value.to_be_bytes());
            }
        }
        if instructions.contains(Instructions::CHECKSUM_COMPLEMENT) {
            if let Some(slot) = out.chunks_exact_mut(4).last() {
                slot.copy_from_slice(&self.words(Instructions::CHECKSUM_COMPLEMENT)[0].to_be_bytes());
            }
        }
        Ok(len)
    }

    /// Reads one hop's `hop_ml` words. All ones read back as `None`;
    /// reserved bits' and domain specific words are skipped.
    pub fn parse(instructions: Instructions, hop_ml: u8, bytes: &[u8]) -> Result<Self, ParseError> {
        let len = usize::from(hop_ml) * 4;
        let words =
            bytes.get(..len).ok_or_else(|| ParseError::truncated(Layer::IntStack, 0, len, bytes.len()))?;
        let word = |index: usize| match words.get(index * 4..index * 4 + 4) {
            Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
            _ => INVALID,
        };
        let mut hop = HopMetadata::default();
        let mut at = 0;
        for bit in (instructions - Instructions::CHECKSUM_COMPLEMENT).each() {
            hop.set(bit, [word(at), word(at + 1)]);
            at += bit.bit_words();
        }
        if instructions.contains(Instructions::CHECKSUM_COMPLEMENT) {
            hop.set(
                Instructions::CHECKSUM_COMPLEMENT,
                [word(usize::from(hop_ml).saturating_sub(1)), INVALID],
            );
        }
        Ok(hop)
    }

    /// Stores one bit's words, all ones as `None`.
    pub fn set(&mut self, bit: Instructions, [first, second]: [u32; 2]) {
        let valid = |value: u32| (value != INVALID).then_some(value);
        let pair = |value: u32| valid(value).map(|v| ((v >> 24) as u8, v & 0x00ff_ffff));
        let wide =
            (first != INVALID || second != INVALID).then_some((u64::from(first) << 32) | u64::from(second));
        match bit {
            Instructions::NODE_ID => self.node_id = valid(first),
            Instructions::L1_PORT_IDS => {
                self.l1_ingress_port = ((first >> 16) != 0xffff).then_some((first >> 16) as u16);
                self.l1_egress_port = ((first & 0xffff) != 0xffff).then_some(first as u16);
            }
            Instructions::HOP_LATENCY => self.hop_latency = valid(first),
            Instructions::QUEUE_OCCUPANCY => self.queue = pair(first),
            Instructions::INGRESS_TIMESTAMP => self.ingress_timestamp = wide,
            Instructions::EGRESS_TIMESTAMP => self.egress_timestamp = wide,
            Instructions::L2_PORT_IDS => {
                self.l2_ingress_port = valid(first);
                self.l2_egress_port = valid(second);
            }
            Instructions::EGRESS_TX_UTILIZATION => self.egress_tx_utilization = valid(first),
            Instructions::BUFFER_OCCUPANCY => self.buffer = pair(first),
            Instructions::CHECKSUM_COMPLEMENT => self.checksum_complement = valid(first),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_hop_is_node_id_then_queue_occupancy() {
        let hop = HopMetadata { node_id: Some(2), queue: Some((1, 0x000200)), ..HopMetadata::default() };
        let bits = Instructions::NODE_ID | Instructions::QUEUE_OCCUPANCY;
        let mut out = [0; 8];
        assert_eq!(hop.emit(bits, 2, &mut out), Ok(8));
        assert_eq!(out, [0, 0, 0, 2, 0x01, 0x00, 0x02, 0x00]);
        assert_eq!(HopMetadata::parse(bits, 2, &out), Ok(hop));
    }

    #[test]
    fn wide_words_domain_padding_and_the_complement_last() {
        let bits = Instructions::NODE_ID
            | Instructions::INGRESS_TIMESTAMP
            | Instructions::L2_PORT_IDS
            | Instructions::CHECKSUM_COMPLEMENT;
        let hop = HopMetadata {
            node_id: Some(9),
            ingress_timestamp: Some(0x0102_0304_0506_0708),
            l2_ingress_port: Some(7),
            l2_egress_port: None,
            checksum_complement: Some(0xabcd),
            ..HopMetadata::default()
        };
        // 6 words of bitmap, 2 of unknown domain metadata before the complement.
        let mut out = [0; 32];
        assert_eq!(hop.emit(bits, 8, &mut out), Ok(32));
        let words: Vec<u32> = out.chunks(4).map(|w| u32::from_be_bytes(w.try_into().unwrap())).collect();
        assert_eq!(words, [9, 0x0102_0304, 0x0506_0708, 7, INVALID, INVALID, INVALID, 0xabcd]);
        assert_eq!(HopMetadata::parse(bits, 8, &out), Ok(hop));
        assert_eq!(
            hop.emit(bits, 5, &mut out),
            Err(EmitError::Unrepresentable { layer: Layer::IntStack, value: 5 })
        );
    }

    #[test]
    fn unknown_values_are_all_ones_and_read_back_as_none() {
        // Every defined bit: 10 bits, three of them 8 bytes long.
        let bits = Instructions::from_bits_retain(0xff81);
        let mut out = [0; 52];
        let len = HopMetadata::default().emit(bits, bits.words() as u8, &mut out).unwrap();
        assert_eq!(len, 52);
        assert!(out.iter().all(|b| *b == 0xff));
        assert_eq!(HopMetadata::parse(bits, 13, &out), Ok(HopMetadata::default()));
        assert!(matches!(HopMetadata::parse(bits, 13, &out[..51]), Err(ParseError::Truncated { .. })));
    }
}
