//! One hop's INT metadata: one 4-byte word per instruction bit, in bit order
//! (INT 0.5 section 3.3). Host-INT's 16-byte entry is the 0xCC00 case:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                            node ID                            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         ingress port          |          egress port          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       ingress timestamp                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        egress timestamp                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! A value a hop cannot provide is written as 0xFFFFFFFF ("invalid").

use super::instruction::Instructions;
use crate::error::{EmitError, Layer, ParseError};

/// The word written for a value that is not available.
pub const INVALID: u32 = 0xffff_ffff;

/// What one hop reports. `None` is written as [`INVALID`]; for the port
/// word, a missing half is written as 0xFFFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HopMetadata {
    pub switch_id: Option<u32>,
    pub ingress_port: Option<u16>,
    pub egress_port: Option<u16>,
    pub hop_latency: Option<u32>,
    pub queue_occupancy: Option<u32>,
    pub ingress_timestamp: Option<u32>,
    pub egress_timestamp: Option<u32>,
    pub queue_congestion: Option<u32>,
    pub egress_tx_utilization: Option<u32>,
}

impl HopMetadata {
    /// The word this hop writes for one instruction bit. Reserved bits get
    /// [`INVALID`].
    #[inline]
    pub fn word(&self, bit: Instructions) -> u32 {
        let value = match bit.bits() {
            0x8000 => self.switch_id,
            0x4000 => match (self.ingress_port, self.egress_port) {
                (None, None) => None,
                (ingress, egress) => {
                    Some((u32::from(ingress.unwrap_or(0xffff)) << 16) | u32::from(egress.unwrap_or(0xffff)))
                }
            },
            0x2000 => self.hop_latency,
            0x1000 => self.queue_occupancy,
            0x0800 => self.ingress_timestamp,
            0x0400 => self.egress_timestamp,
            0x0200 => self.queue_congestion,
            0x0100 => self.egress_tx_utilization,
            _ => None,
        };
        value.unwrap_or(INVALID)
    }

    /// Writes the words `instructions` asks for; returns the bytes written.
    #[inline]
    pub fn emit(&self, instructions: Instructions, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = instructions.hop_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or_else(|| EmitError::no_room(Layer::IntStack, len, available))?;
        for (bit, slot) in instructions.each().zip(out.chunks_exact_mut(4)) {
            slot.copy_from_slice(&self.word(bit).to_be_bytes());
        }
        Ok(len)
    }

    /// [`HopMetadata::emit`], returning the words' sum for an incremental
    /// checksum. Host-INT's four words (instructions 0xCC00) are written and
    /// summed straight, without walking the bitmap.
    #[inline(always)]
    pub fn emit_summed(&self, instructions: Instructions, buf: &mut [u8]) -> Result<u32, EmitError> {
        if instructions == Instructions::HOST_INT {
            if let Some(out) = buf.first_chunk_mut::<16>() {
                let bits = [
                    Instructions::SWITCH_ID,
                    Instructions::PORT_IDS,
                    Instructions::INGRESS_TIMESTAMP,
                    Instructions::EGRESS_TIMESTAMP,
                ];
                let words = bits.map(|bit| self.word(bit));
                for (slot, word) in out.chunks_exact_mut(4).zip(words) {
                    slot.copy_from_slice(&word.to_be_bytes());
                }
                return Ok(words.iter().map(|word| (word >> 16) + (word & 0xffff)).sum());
            }
        }
        let len = self.emit(instructions, buf)?;
        let available = buf.len();
        Ok(crate::checksum::sum(
            0,
            buf.get(..len).ok_or(EmitError::no_room(Layer::IntStack, len, available))?,
        ))
    }

    /// Reads one hop's words. [`INVALID`] reads back as `None`; words for
    /// reserved bits are skipped.
    pub fn parse(instructions: Instructions, bytes: &[u8]) -> Result<Self, ParseError> {
        let len = instructions.hop_len();
        let words =
            bytes.get(..len).ok_or_else(|| ParseError::truncated(Layer::IntStack, 0, len, bytes.len()))?;
        let mut hop = HopMetadata::default();
        for (bit, word) in instructions.each().zip(words.chunks_exact(4)) {
            let value = match *word {
                [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
                _ => INVALID,
            };
            let valid = (value != INVALID).then_some(value);
            if bit == Instructions::SWITCH_ID {
                hop.switch_id = valid;
            } else if bit == Instructions::PORT_IDS {
                hop.ingress_port = ((value >> 16) != 0xffff).then_some((value >> 16) as u16);
                hop.egress_port = ((value & 0xffff) != 0xffff).then_some(value as u16);
            } else if bit == Instructions::HOP_LATENCY {
                hop.hop_latency = valid;
            } else if bit == Instructions::QUEUE_OCCUPANCY {
                hop.queue_occupancy = valid;
            } else if bit == Instructions::INGRESS_TIMESTAMP {
                hop.ingress_timestamp = valid;
            } else if bit == Instructions::EGRESS_TIMESTAMP {
                hop.egress_timestamp = valid;
            } else if bit == Instructions::QUEUE_CONGESTION {
                hop.queue_congestion = valid;
            } else if bit == Instructions::EGRESS_TX_UTILIZATION {
                hop.egress_tx_utilization = valid;
            }
        }
        Ok(hop)
    }

    /// Host-INT's source or sink entry: node id, the port as both ingress
    /// and egress, the time as both ingress and egress timestamp.
    pub fn host_int(node_id: u32, port: u16, timestamp: u32) -> Self {
        HopMetadata {
            switch_id: Some(node_id),
            ingress_port: Some(port),
            egress_port: Some(port),
            ingress_timestamp: Some(timestamp),
            egress_timestamp: Some(timestamp),
            ..HopMetadata::default()
        }
    }
}

/// The metadata stack: Total Hop Count entries of Ins Cnt words, the most
/// recent hop first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopStack<'a> {
    pub instructions: Instructions,
    bytes: &'a [u8],
}

impl<'a> HopStack<'a> {
    /// `bytes` must be exactly the stack (a multiple of the hop length).
    pub fn new(instructions: Instructions, bytes: &'a [u8]) -> Self {
        HopStack { instructions, bytes }
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// One word of hop `index` (0 = top of the stack) without parsing the
    /// hop whole; `None` if the bitmap does not ask for it or there is no
    /// such hop. 0xFFFFFFFF is returned as it is.
    #[inline(always)]
    pub fn word(&self, index: usize, bit: Instructions) -> Option<u32> {
        let at = index * self.instructions.hop_len() + self.instructions.word_offset(bit)?;
        match self.bytes.get(at..at + 4)? {
            &[a, b, c, d] => Some(u32::from_be_bytes([a, b, c, d])),
            _ => None,
        }
    }

    pub fn hop_count(&self) -> usize {
        match self.instructions.hop_len() {
            0 => 0,
            hop_len => self.bytes.len() / hop_len,
        }
    }

    /// Hops from the most recent (top of stack) to the first (the source's).
    pub fn hops(&self) -> impl Iterator<Item = HopMetadata> + 'a {
        let instructions = self.instructions;
        let hop_len = instructions.hop_len().max(1);
        self.bytes.chunks_exact(hop_len).filter_map(move |hop| HopMetadata::parse(instructions, hop).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Host-INT source entry: node 0x0a000001, port 3, time 0x11223344.
    static HOST_INT_ENTRY: [u8; 16] = [
        0x0a, 0x00, 0x00, 0x01, // node id
        0x00, 0x03, 0x00, 0x03, // ingress port, egress port
        0x11, 0x22, 0x33, 0x44, // ingress timestamp
        0x11, 0x22, 0x33, 0x44, // egress timestamp
    ];

    #[test]
    fn host_int_entry_golden() {
        let hop = HopMetadata::host_int(0x0a00_0001, 3, 0x1122_3344);
        let mut buf = vec![0xa5; 18];
        assert_eq!(hop.emit(Instructions::HOST_INT, &mut buf).unwrap(), 16);
        assert_eq!(&buf[..16], &HOST_INT_ENTRY);
        assert_eq!(&buf[16..], &[0xa5, 0xa5]);
        assert_eq!(HopMetadata::parse(Instructions::HOST_INT, &HOST_INT_ENTRY).unwrap(), hop);
    }

    #[test]
    fn unavailable_values_are_all_ones() {
        let hop = HopMetadata { switch_id: Some(7), ..HopMetadata::default() };
        let bits = Instructions::SWITCH_ID | Instructions::QUEUE_OCCUPANCY | Instructions::PORT_IDS;
        let mut buf = [0u8; 12];
        hop.emit(bits, &mut buf).unwrap();
        assert_eq!(buf, [0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(HopMetadata::parse(bits, &buf).unwrap(), hop);
    }

    #[test]
    fn truncation_rejected() {
        for len in 0..16 {
            assert!(HopMetadata::parse(Instructions::HOST_INT, &HOST_INT_ENTRY[..len]).is_err());
            assert!(HopMetadata::default().emit(Instructions::HOST_INT, &mut vec![0; len]).is_err());
        }
    }

    #[test]
    fn stack_iterates_top_first() {
        let mut bytes = [0u8; 16];
        HopMetadata { switch_id: Some(2), queue_occupancy: Some(20), ..Default::default() }
            .emit(Instructions::from_bits_retain(0x9000), &mut bytes[..8])
            .unwrap();
        HopMetadata { switch_id: Some(1), queue_occupancy: Some(10), ..Default::default() }
            .emit(Instructions::from_bits_retain(0x9000), &mut bytes[8..])
            .unwrap();
        let stack = HopStack::new(Instructions::from_bits_retain(0x9000), &bytes);
        assert_eq!(stack.hop_count(), 2);
        let ids: Vec<_> = stack.hops().map(|h| h.switch_id.unwrap()).collect();
        assert_eq!(ids, vec![2, 1]);
    }
}
