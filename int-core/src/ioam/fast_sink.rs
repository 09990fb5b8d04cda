//! The decapsulating node's fast path: the frame the encapsulating node
//! writes (Ethernet without tags, IPv6, a Hop-by-Hop header of its own
//! holding PadN and the namespace's trace, perhaps a Destination Options
//! header of its own holding the Edge-to-Edge option, then UDP or TCP),
//! checked once at fixed offsets. The trace is read in place, only the
//! words the sink's rules read; the flow key comes from fixed offsets; the
//! two headers go in one move of the 54 bytes in front of them. Every
//! other frame is left to [`super::sink::find`], which gives the frames
//! this path takes the same answer and [`super::sink::strip`] the same
//! bytes (a test holds them together over every one-byte change and cut).

use super::e2e::E2eRepr;
use super::ipv6::{self, TraceAt, EDGE_TO_EDGE, OPTION_IOAM, OPTION_IOAM_STATIC, PREALLOCATED_TRACE};
use super::sink::added_shape;
use super::time::TimestampFormat;
use super::trace::TraceType;
use crate::bytes::{be16, be32, byte, put, put_u8};
use crate::fast::{L3_AT, L4_AT_V6};
use crate::flow::FlowKey;
use crate::frame::FrameBuf;
use crate::hop_rule::HopFigures;
use crate::locate::{PROTO_TCP, PROTO_UDP};
use crate::wire::ipv6::{DESTINATION_OPTIONS, HOP_BY_HOP};
use crate::wire::ipv6option::is_padding;

/// The Hop-by-Hop header's offset, and its trace option's (after PadN).
pub(super) const HBH_AT: usize = L4_AT_V6;
const OPTION_AT: usize = HBH_AT + 4;
/// Through the trace's namespace: what the first look reads.
const HEAD_LEN: usize = OPTION_AT + 6;
const NEXT_HEADER_AT: usize = L3_AT + 6;
const PAYLOAD_LEN_AT: usize = L3_AT + 4;
/// All-ones: a field not populated.
const UNSET: u32 = u32::MAX;

/// A traced packet of the fast path's shape: what the sink reads of it
/// and what it removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSink {
    /// The trace, its offsets counted from the Hop-by-Hop header.
    pub trace: TraceAt,
    /// The Edge-to-Edge option, where the packet has one.
    pub e2e: Option<E2eRepr>,
    pub flow: FlowKey,
    /// Bytes of the two headers, the upper layer's offset and protocol,
    /// and where the IP packet ends.
    removed: u16,
    l4: u16,
    protocol: u8,
    end: u16,
}

impl FastSink {
    /// The frame's trace of `namespace`, if the frame has the fast path's
    /// shape; `None`: the general path decides.
    #[inline(always)]
    pub fn find(frame: &[u8], namespace: u16) -> Option<FastSink> {
        let OwnHopByHop { trace, hbh_end, end } = OwnHopByHop::find(frame, namespace)?;
        let head: &[u8; HEAD_LEN] = frame.first_chunk()?;
        let (l4, protocol, e2e) = match head[HBH_AT] {
            DESTINATION_OPTIONS => read_e2e(frame, hbh_end, end, namespace)?,
            protocol => (hbh_end, protocol, None),
        };
        let ports = upper_ports(frame, l4, end, protocol)?;
        let flow = flow_key(head, protocol, ports)?;
        Some(FastSink {
            trace,
            e2e,
            flow,
            removed: (l4 - HBH_AT) as u16,
            l4: l4 as u16,
            protocol,
            end: end as u16,
        })
    }

    /// Where a report's copy of the packet ends (as [`super::sink::Found::report_end`]).
    pub fn report_end(&self) -> usize {
        (usize::from(self.l4) + 8).min(usize::from(self.end))
    }

    /// Bytes the decapsulating node removes.
    pub fn removed_len(&self) -> usize {
        usize::from(self.removed)
    }

    /// The packet's number in its group, from the Edge-to-Edge option.
    pub fn sequence(&self) -> Option<u64> {
        self.e2e.and_then(|e2e| e2e.sequence)
    }

    /// What the hop rule reads of every slot, newest first, as
    /// [`super::node::NodeData::as_hop`] reads it: `None` for a slot
    /// without a node id.
    #[inline(always)]
    pub fn hops<'a>(&self, frame: &'a [u8]) -> impl Iterator<Item = Option<HopFigures>> + 'a {
        let fields = Fields::of(self.trace.header.trace_type);
        let slots = self.slots(frame);
        slots.map(move |at| {
            let node = fields.node_id(frame, at)?;
            let latency = fields.word(frame, at, fields.delay).filter(|delay| delay >> 31 == 0);
            Some(HopFigures { node, latency, queue: fields.word(frame, at, fields.queue) })
        })
    }

    /// The oldest slot's (the encapsulating node's) node id and time; the
    /// time, where that slot has none, the Edge-to-Edge option's.
    #[inline(always)]
    pub fn source(&self, frame: &[u8], timestamps: TimestampFormat) -> (Option<u32>, Option<u64>) {
        let fields = Fields::of(self.trace.header.trace_type);
        let oldest = self.slots(frame).last();
        let node = oldest.and_then(|at| fields.node_id(frame, at));
        let time = oldest.and_then(|at| {
            let seconds = fields.word(frame, at, fields.seconds)?;
            timestamps.join(seconds, fields.word(frame, at, fields.fraction)?)
        });
        let entered = || {
            let e2e = self.e2e?;
            timestamps.join(e2e.timestamp_seconds?, e2e.timestamp_fraction?)
        };
        (node, time.or_else(entered))
    }

    /// The frame offset of every filled slot, newest first.
    fn slots(&self, frame: &[u8]) -> impl Iterator<Item = usize> {
        let header = self.trace.header;
        let element = usize::from(header.node_len.max(1)) * 4;
        let first = HBH_AT + self.trace.data + usize::from(header.remaining_len) * 4;
        let end = (HBH_AT + self.trace.data + self.trace.data_len).min(frame.len());
        (first..end).step_by(element).take_while(move |at| at + element <= end)
    }

    /// Removes both headers by moving the 54 bytes in front of them (the
    /// bytes [`super::sink::strip`] leaves). `None`, changing nothing, if
    /// the frame is not the one this was read from.
    #[inline(always)]
    pub fn strip(&self, frame: &mut FrameBuf<'_>) -> Option<usize> {
        let removed = self.removed_len();
        let payload_len = usize::from(self.end) - L4_AT_V6 - removed;
        if frame.frame().len() < usize::from(self.end) || !frame.close_gap(HBH_AT, removed) {
            return None;
        }
        let out = frame.frame_mut();
        put_u8(out, NEXT_HEADER_AT, self.protocol);
        put(out, PAYLOAD_LEN_AT, &(payload_len as u16).to_be_bytes());
        Some(removed)
    }
}

/// The encapsulating node's Hop-by-Hop header, first after the IPv6
/// header of a frame without VLAN tags: PadN, the namespace's trace and
/// padding only, within the IP packet, which lies within the frame. Read
/// at fixed offsets, what the general paths' walks would find of it: the
/// options walk finds this trace and no other, and the extension headers'
/// walk passes this header (what follows it is the caller's to check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OwnHopByHop {
    /// The trace, its offsets counted from the Hop-by-Hop header.
    pub(super) trace: TraceAt,
    /// Where the Hop-by-Hop header ends, and where the IP packet does.
    pub(super) hbh_end: usize,
    pub(super) end: usize,
}

impl OwnHopByHop {
    /// The header, if the frame has it with a trace of `namespace` that
    /// does not contradict itself; `None`: the general path decides.
    #[inline(always)]
    pub(super) fn find(frame: &[u8], namespace: u16) -> Option<OwnHopByHop> {
        let head: &[u8; HEAD_LEN] = frame.first_chunk()?;
        let shaped = be16(head, 12) == 0x86dd
            && head[L3_AT] >> 4 == 6
            && head[NEXT_HEADER_AT] == HOP_BY_HOP
            && head[HBH_AT + 2..OPTION_AT] == [1, 0]
            && head[OPTION_AT] == OPTION_IOAM
            && head[OPTION_AT + 3] == PREALLOCATED_TRACE
            && be16(head, OPTION_AT + 4) == namespace;
        let end = L4_AT_V6 + usize::from(be16(head, PAYLOAD_LEN_AT));
        let hbh_end = HBH_AT + (usize::from(head[HBH_AT + 1]) + 1) * 8;
        if !shaped || end > frame.len() || hbh_end > end {
            return None;
        }
        let hbh = frame.get(HBH_AT..hbh_end)?;
        let option_end = OPTION_AT - HBH_AT + 2 + usize::from(head[OPTION_AT + 1]);
        if added_shape(hbh, OPTION_AT - HBH_AT, option_end) != Some(true) {
            return None;
        }
        let trace = ipv6::trace_at(hbh, OPTION_AT - HBH_AT, option_end).ok()?;
        Some(OwnHopByHop { trace, hbh_end, end })
    }
}

/// The Edge-to-Edge option in a Destination Options header of the
/// encapsulating node's at `doh` (PadN, the option, padding; the upper
/// layer after it), read at fixed offsets: the upper layer's offset and
/// protocol, and the option; `None` for any other header.
#[inline(always)]
fn read_e2e(frame: &[u8], doh: usize, end: usize, namespace: u16) -> Option<(usize, u8, Option<E2eRepr>)> {
    let head: &[u8; 10] = frame.get(doh..)?.first_chunk()?;
    let len = (usize::from(head[1]) + 1) * 8;
    let option_end = 6 + usize::from(head[5]);
    let shaped = head[2..4] == [1, 0]
        && head[4] == OPTION_IOAM_STATIC
        && head[7] == EDGE_TO_EDGE
        && be16(head, 8) == namespace
        && option_end <= len
        && doh + len <= end;
    let bytes = frame.get(doh..doh + len).filter(|_| shaped)?;
    if !is_padding(bytes.get(option_end..)?) {
        return None;
    }
    let repr = E2eRepr::parse(bytes.get(8..option_end)?).ok()?;
    Some((doh + len, head[0], Some(repr)))
}

/// The ports of the UDP datagram (its Length the rest of the packet) or
/// TCP segment (its header within it) at `l4`.
#[inline(always)]
fn upper_ports(frame: &[u8], l4: usize, end: usize, protocol: u8) -> Option<(u16, u16)> {
    let upper = frame.get(l4..end)?;
    let fits = match protocol {
        PROTO_UDP => upper.len() >= 8 && usize::from(be16(upper, 4)) == upper.len(),
        PROTO_TCP => upper.len() >= 20 && (5..=upper.len() / 4).contains(&usize::from(byte(upper, 12) >> 4)),
        _ => false,
    };
    fits.then(|| (be16(upper, 0), be16(upper, 2)))
}

/// The flow, its addresses read from the IPv6 header.
#[inline(always)]
fn flow_key(head: &[u8; HEAD_LEN], protocol: u8, ports: (u16, u16)) -> Option<FlowKey> {
    let src: [u8; 16] = *head.get(L3_AT + 8..L3_AT + 24)?.first_chunk()?;
    let dst: [u8; 16] = *head.get(L3_AT + 24..L3_AT + 40)?.first_chunk()?;
    Some(FlowKey {
        src: core::net::Ipv6Addr::from(src).into(),
        dst: core::net::Ipv6Addr::from(dst).into(),
        protocol,
        src_port: ports.0,
        dst_port: ports.1,
    })
}

/// The word offsets in an element of the fields the sink reads (`None`:
/// the trace type has no such field), worked out once per packet.
#[derive(Debug, Clone, Copy)]
struct Fields {
    node: Option<usize>,
    node_wide: Option<usize>,
    seconds: Option<usize>,
    fraction: Option<usize>,
    delay: Option<usize>,
    queue: Option<usize>,
}

impl Fields {
    #[inline(always)]
    fn of(trace_type: TraceType) -> Fields {
        // A field's words follow those of every bit above it.
        let at = |bit: TraceType| {
            let above = trace_type.bits() & !((bit.bits() << 1) - 1);
            trace_type.contains(bit).then(|| TraceType::from_bits_retain(above).node_len())
        };
        Fields {
            node: at(TraceType::HOP_LIM_NODE_ID),
            node_wide: at(TraceType::HOP_LIM_NODE_ID_WIDE),
            seconds: at(TraceType::TIMESTAMP_SECONDS),
            fraction: at(TraceType::TIMESTAMP_FRACTION),
            delay: at(TraceType::TRANSIT_DELAY),
            queue: at(TraceType::QUEUE_DEPTH),
        }
    }

    /// The word at `field` of the element at `at`, all-ones as `None`.
    #[inline(always)]
    fn word(&self, frame: &[u8], at: usize, field: Option<usize>) -> Option<u32> {
        field.map(|words| be32(frame, at + words * 4)).filter(|&word| word != UNSET)
    }

    /// The short node id, else the wide one's low 32 bits.
    #[inline(always)]
    fn node_id(&self, frame: &[u8], at: usize) -> Option<u32> {
        let short = self.word(frame, at, self.node).map(|word| word & 0xff_ffff);
        short.or_else(|| {
            let words = self.node_wide?;
            let (high, low) = (be32(frame, at + words * 4), be32(frame, at + words * 4 + 4));
            (high != UNSET || low != UNSET).then_some(low)
        })
    }
}
