//! A traffic generator's frames: UDP over IPv4 from a template, each packet
//! of the next flow in turn (its source address the template's plus the
//! flow's index), plain or carrying Host-INT's INT 0.5 block with the
//! flow's next sequence number and the time in the source hop, as a live
//! link would deliver them. Only the changed words are written per packet;
//! the checksums follow incrementally, so every frame is valid.
//!
//! The working set is the template and 4 bytes per flow: the generator
//! measures a node at a million flows without a pcap of a million packets
//! in the way.

use crate::checksum;
use crate::craft::PacketSpec;
use crate::fast::{FastFrame, L3_AT, L4_AT};
use crate::frame::FrameBuf;
use crate::int05::source::{self, SourceConfig};
use crate::int05::HopMetadata;

/// Where the source address lies in the frame.
const SRC_AT: usize = L3_AT + 12;
/// Where the UDP checksum lies.
const UDP_CHECKSUM_AT: usize = L4_AT + 6;
/// The IPv4 header checksum.
const IP_CHECKSUM_AT: usize = L3_AT + 10;
/// Host-INT's block after the UDP header: the source hop's timestamps and
/// the sequence number.
const INGRESS_AT: usize = L4_AT + 8 + 20;
const EGRESS_AT: usize = L4_AT + 8 + 24;
const SEQUENCE_AT: usize = L4_AT + 8 + 28;

/// What the generator sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorSpec {
    /// Flows, sent in turn.
    pub flows: u32,
    /// Bytes of the frame before any INT (at least 60).
    pub frame_size: usize,
    /// Host-INT's INT 0.5 block (36 bytes more), as a source `node_id`
    /// writes it; `None`: plain UDP.
    pub int_source: Option<u32>,
    /// Flows retired after each round over all of them, each replaced by a
    /// new one (a new source address, numbered from 1): flow churn, for
    /// soak runs. 0: the same flows for ever.
    pub churn: u32,
}

pub struct Generator {
    template: Vec<u8>,
    /// Each flow's last sequence number.
    sequences: Vec<u32>,
    /// Each flow's source address, less the template's.
    offsets: Vec<u32>,
    next_flow: u32,
    instrumented: bool,
    src_base: u32,
    churn: u32,
    /// The next flow to retire.
    next_retired: u32,
}

impl Generator {
    pub fn new(spec: &GeneratorSpec) -> Result<Generator, String> {
        if spec.flows == 0 || !(60..=1514).contains(&spec.frame_size) {
            return Err("flows must be at least 1 and frame_size 60-1514".into());
        }
        let src_base = u32::from(core::net::Ipv4Addr::new(10, 0, 0, 0)) + 1;
        let (src, dst) = (core::net::Ipv4Addr::from(src_base), core::net::Ipv4Addr::new(10, 255, 0, 1));
        let mut template = PacketSpec::udp(src, dst, 4000, 5000, spec.frame_size - 42).build();
        if let Some(node_id) = spec.int_source {
            template = instrumented(&template, node_id)?;
        }
        if FastFrame::read_ipv4(&template, 0).is_none() {
            return Err("the template is not a fast-path frame".into());
        }
        Ok(Generator {
            template,
            sequences: vec![0; spec.flows as usize],
            offsets: (0..spec.flows).collect(),
            next_flow: 0,
            instrumented: spec.int_source.is_some(),
            src_base,
            churn: spec.churn.min(spec.flows),
            next_retired: 0,
        })
    }

    /// After a round: `churn` flows, in turn, become new ones.
    fn retire(&mut self) {
        let flows = self.sequences.len() as u32;
        for _ in 0..self.churn {
            let flow = self.next_retired as usize;
            if let (Some(sequence), Some(offset)) = (self.sequences.get_mut(flow), self.offsets.get_mut(flow))
            {
                *sequence = 0;
                *offset = offset.wrapping_add(flows);
            }
            self.next_retired = if self.next_retired + 1 == flows { 0 } else { self.next_retired + 1 };
        }
    }

    pub fn frame_len(&self) -> usize {
        self.template.len()
    }

    /// Writes the next flow's next packet over `frame`, with `time` (low 32
    /// bits of ns) in the source hop. False (frame unchanged) when the
    /// buffer cannot hold it.
    #[inline(always)]
    pub fn write(&mut self, frame: &mut FrameBuf<'_>, time: u32) -> bool {
        let flow = self.next_flow;
        let Some(last) = self.sequences.get_mut(flow as usize) else { return false };
        if !frame.set_len(self.template.len()) {
            return false;
        }
        *last = last.wrapping_add(1);
        let sequence = *last;
        let offset = self.offsets.get(flow as usize).copied().unwrap_or(flow);
        self.next_flow = if flow + 1 == self.sequences.len() as u32 {
            self.retire();
            0
        } else {
            flow + 1
        };
        let bytes = frame.frame_mut();
        bytes.copy_from_slice(&self.template);
        let src = self.src_base.wrapping_add(offset);
        put32(bytes, SRC_AT, src);
        // The template holds the first flow's address, zero numbers and
        // times: what changes is summed against what was there.
        let (removed, added) = (crate::checksum::word_sum(self.src_base), crate::checksum::word_sum(src));
        adjust(bytes, IP_CHECKSUM_AT, removed, added);
        let mut udp_added = added;
        if self.instrumented {
            for (at, value) in [(INGRESS_AT, time), (EGRESS_AT, time), (SEQUENCE_AT, sequence)] {
                put32(bytes, at, value);
                udp_added += crate::checksum::word_sum(value);
            }
        }
        adjust(bytes, UDP_CHECKSUM_AT, removed, udp_added);
        true
    }
}

/// The template with Host-INT's block in, numbered 0 at time 0.
fn instrumented(frame: &[u8], node_id: u32) -> Result<Vec<u8>, String> {
    let config = SourceConfig::host_int(9000);
    let plan = source::plan(frame, &config).map_err(|skip| format!("template: {skip:?}"))?;
    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer.get_mut(64..).ok_or("template buffer")?.copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).ok_or("template buffer")?;
    let hop = HopMetadata::host_int(node_id, 1, 0);
    source::insert(&mut view, &plan, &config, 0, &hop).map_err(|skip| format!("template: {skip:?}"))?;
    Ok(view.frame().to_vec())
}

#[inline(always)]
fn put32(bytes: &mut [u8], at: usize, value: u32) {
    if let Some(word) = bytes.get_mut(at..at + 4) {
        word.copy_from_slice(&value.to_be_bytes());
    }
}

/// The checksum at `at` after words summing to `removed` became words
/// summing to `added` (a UDP checksum of 0 is computed as 0xFFFF).
#[inline(always)]
fn adjust(bytes: &mut [u8], at: usize, removed: u32, added: u32) {
    let old = crate::bytes::be16(bytes, at);
    let new = match checksum::adjust(old, removed, added) {
        0 if at == UDP_CHECKSUM_AT => 0xffff,
        sum => sum,
    };
    if let Some(word) = bytes.get_mut(at..at + 2) {
        word.copy_from_slice(&new.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int05::fast_sink::{FastArrival, FastSink};
    use crate::int05::{Domain, ShapeCache};
    use crate::marking::TcpPlacement;

    fn frames(spec: &GeneratorSpec, count: usize) -> Vec<Vec<u8>> {
        let mut generator = Generator::new(spec).unwrap();
        (0..count)
            .map(|i| {
                let mut buffer = vec![0u8; 2048];
                let mut frame = FrameBuf::new(&mut buffer, 128, 64).unwrap();
                assert!(generator.write(&mut frame, 1000 + i as u32));
                frame.frame().to_vec()
            })
            .collect()
    }

    /// Valid checksums: the IPv4 header's, and UDP's over the
    /// pseudo-header.
    fn checksums_hold(frame: &[u8]) -> bool {
        let header = &frame[L3_AT..L4_AT];
        let udp = &frame[L4_AT..];
        let pseudo = checksum::sum(0, &frame[SRC_AT..L4_AT]) + 17 + udp.len() as u32;
        checksum::checksum(header) == 0 && checksum::fold(checksum::sum(pseudo, udp)) == 0xffff
    }

    #[test]
    fn flows_take_turns_and_number_their_packets_in_order() {
        let spec = GeneratorSpec { flows: 3, frame_size: 64, int_source: Some(0x0a00_0001), churn: 0 };
        let domain = Domain {
            encapsulation: SourceConfig::host_int(1500).encapsulation,
            tcp_placement: TcpPlacement::BeforeOptions,
        };
        let mut seen = Vec::new();
        for (i, frame) in frames(&spec, 7).iter().enumerate() {
            assert_eq!(frame.len(), 100);
            assert!(checksums_hold(frame), "packet {i}");
            let FastArrival::Int(found) = FastSink::find(frame, &domain, &mut ShapeCache::default()) else {
                panic!("packet {i} is not INT");
            };
            let source = found.source_hop.unwrap();
            assert_eq!(
                (source.switch_id(), source.ingress_timestamp()),
                (Some(0x0a00_0001), Some(1000 + i as u32))
            );
            seen.push((found.frame.flow.key_v4().unwrap().src.to_string(), found.sequence.unwrap()));
        }
        let expected = [("10.0.0.1", 1), ("10.0.0.2", 1), ("10.0.0.3", 1), ("10.0.0.1", 2), ("10.0.0.2", 2)];
        for (i, (src, sequence)) in expected.iter().enumerate() {
            assert_eq!(seen[i], (src.to_string(), *sequence));
        }
        assert_eq!(seen[6], ("10.0.0.1".to_string(), 3));
    }

    #[test]
    fn plain_frames_are_valid_udp_of_the_size_asked() {
        let spec = GeneratorSpec { flows: 100_000, frame_size: 128, int_source: None, churn: 0 };
        for frame in frames(&spec, 300) {
            assert_eq!(frame.len(), 128);
            assert!(checksums_hold(&frame));
        }
        assert!(Generator::new(&GeneratorSpec { flows: 0, ..spec }).is_err());
        assert!(Generator::new(&GeneratorSpec { frame_size: 59, ..spec }).is_err());
    }

    /// With churn, each round retires flows in turn: new source addresses,
    /// numbered from 1, the others going on.
    #[test]
    fn churn_replaces_flows_after_each_round() {
        let spec = GeneratorSpec { flows: 3, frame_size: 64, int_source: Some(1), churn: 1 };
        let seen: Vec<(u32, u32)> = frames(&spec, 9)
            .iter()
            .map(|f| (crate::bytes::be32(f, SRC_AT) - 0x0a00_0001, crate::bytes::be32(f, SEQUENCE_AT)))
            .collect();
        // Round 1: flows 0-2. Round 2: flow 0 became 3. Round 3: flow 1
        // became 4.
        assert_eq!(seen, [(0, 1), (1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (3, 2), (4, 1), (2, 3)]);
    }
}
