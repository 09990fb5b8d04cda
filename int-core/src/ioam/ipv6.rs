//! IOAM in IPv6 options (RFC 9486; the last draft, ippm-ioam-ipv6-options-12):
//! an IOAM option in the Hop-by-Hop header carries the Pre-allocated
//! Trace, one in a Destination Options header the Edge-to-Edge option,
//! each 4n aligned from the start of its header.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Option Type  |  Opt Data Len |   Reserved    | IOAM-Opt-Type |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   Option Data (the trace)                    |
//! ```
//!
//! The draft leaves the option type to IANA (TBD_1_1 for options whose
//! data changes en route). RFC 9486 got 0x31 (and 0x11 for data that does
//! not change), the value Linux (`IPV6_TLV_IOAM`) and Wireshark use: this
//! module follows the RFC.

use super::e2e::E2eRepr;
use super::node::NodeData;
use super::trace::{TraceHeaderRepr, TraceType, FLAG_OVERFLOW, HEADER_LEN};
use crate::bytes::{after_mut, span};
use crate::error::{EmitError, Layer, ParseError};
use crate::wire::ipv6option::{each_option, write_padding};

/// The IPv6 option type of IOAM options whose data changes en route.
pub const OPTION_IOAM: u8 = 0x31;
/// The IPv6 option type of IOAM options whose data does not (the
/// Edge-to-Edge option, in a Destination Options header).
pub const OPTION_IOAM_STATIC: u8 = 0x11;
/// IOAM-Option-Types (RFC 9197 section 7.1).
pub const PREALLOCATED_TRACE: u8 = 0;
pub const INCREMENTAL_TRACE: u8 = 1;
pub const PROOF_OF_TRANSIT: u8 = 2;
pub const EDGE_TO_EDGE: u8 = 3;
/// The option's own header: type, length, reserved, IOAM-Opt-Type.
pub const OPTION_HEADER_LEN: usize = 4;

/// Where a Pre-allocated Trace lies in a Hop-by-Hop header: its option's
/// offset, the trace header and the data space's offset and length (from
/// the start of the Hop-by-Hop header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceAt {
    pub option: usize,
    pub header: TraceHeaderRepr,
    pub data: usize,
    pub data_len: usize,
}

/// The Pre-allocated Trace of `namespace` in a Hop-by-Hop header
/// (`hbh`, its whole length), if there is one; other options, and IOAM
/// options of other namespaces, are passed over. An IOAM option that is
/// misaligned, cut short or contradicts itself, or a second trace of the
/// namespace, is refused.
pub fn find_trace(hbh: &[u8], namespace: u16) -> Result<Option<TraceAt>, ParseError> {
    find_where(hbh, |ns| ns == namespace)
}

/// The first Pre-allocated Trace in a Hop-by-Hop header, of whatever
/// namespace (for readers outside the domain, as a collector is).
pub fn first_trace(hbh: &[u8]) -> Result<Option<TraceAt>, ParseError> {
    find_where(hbh, |_| true)
}

/// The trace whose namespace `wanted` takes; a second one refused. A
/// trace `wanted` does not take is passed over unread (its namespace is
/// judged by its own nodes, as Linux does): only an option past the
/// header refuses the header.
fn find_where(hbh: &[u8], wanted: impl Fn(u16) -> bool) -> Result<Option<TraceAt>, ParseError> {
    let mut found = None;
    each_option(hbh, |at, kind, end| {
        if kind != OPTION_IOAM || hbh.get(at + 3) != Some(&PREALLOCATED_TRACE) {
            return Ok(());
        }
        // Too short to name its namespace, the option is refused by
        // every namespace's nodes.
        if !namespace_of(hbh, at, end).is_none_or(&wanted) {
            return Ok(());
        }
        let trace = trace_at(hbh, at, end)?;
        if found.is_some() {
            return Err(ParseError::UnknownType { layer: Layer::IoamOption, offset: at, value: kind });
        }
        found = Some(trace);
        Ok(())
    })?;
    Ok(found)
}

/// The namespace of the trace option from `at` to `end` (the trace
/// header's first field), if the option is long enough to hold one.
fn namespace_of(hbh: &[u8], at: usize, end: usize) -> Option<u16> {
    let data = hbh.get(at + OPTION_HEADER_LEN..end)?;
    data.first_chunk::<2>().map(|ns| u16::from_be_bytes(*ns))
}

/// `each(namespace)` for every Pre-allocated Trace option of a Hop-by-Hop
/// header, in order (`None`: too short to name one), up to an option that
/// runs past the header: a reader's list of the namespaces to ask
/// [`find_trace`] about.
pub fn trace_namespaces(hbh: &[u8], mut each: impl FnMut(Option<u16>)) {
    let _ = each_option(hbh, |at, kind, end| {
        if kind == OPTION_IOAM && hbh.get(at + 3) == Some(&PREALLOCATED_TRACE) {
            each(namespace_of(hbh, at, end));
        }
        Ok(())
    });
}

/// Where an Edge-to-Edge option lies in a Destination Options header: its
/// option's offset and end, and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct E2eAt {
    pub option: usize,
    pub end: usize,
    pub repr: E2eRepr,
}

/// The Edge-to-Edge option of `namespace` in a Destination Options header
/// (`doh`, its whole length), if there is one. Refused, for the
/// namespace: an option misaligned or lying, and a second one.
pub fn find_e2e(doh: &[u8], namespace: u16) -> Result<Option<E2eAt>, ParseError> {
    let mut found = None;
    each_option(doh, |at, kind, end| {
        if kind != OPTION_IOAM_STATIC || doh.get(at + 3) != Some(&EDGE_TO_EDGE) {
            return Ok(());
        }
        let data = span(doh, at + OPTION_HEADER_LEN, end, Layer::IoamOption)?;
        let ours = data.get(..2) == Some(&namespace.to_be_bytes()[..]);
        if !ours {
            return Ok(());
        }
        if !at.is_multiple_of(4) || found.is_some() {
            return Err(ParseError::BadLength { layer: Layer::IoamOption, offset: at, value: at % 4 });
        }
        let repr = E2eRepr::parse(data).map_err(|e| e.shifted(at + OPTION_HEADER_LEN))?;
        found = Some(E2eAt { option: at, end, repr });
        Ok(())
    })?;
    Ok(found)
}

/// The trace in the IOAM option from `at` to `end`. Inlined into both its
/// callers (the walk and the decapsulating node's fast path): out of line,
/// the transit node's walk paid a call per packet.
#[inline(always)]
pub(crate) fn trace_at(hbh: &[u8], at: usize, end: usize) -> Result<TraceAt, ParseError> {
    if !at.is_multiple_of(4) {
        return Err(ParseError::BadLength { layer: Layer::IoamOption, offset: at, value: at % 4 });
    }
    let data = at + OPTION_HEADER_LEN + HEADER_LEN;
    if end < data {
        return Err(ParseError::BadLength { layer: Layer::IoamOption, offset: at + 1, value: end - at - 2 });
    }
    let header = TraceHeaderRepr::parse(span(hbh, at + OPTION_HEADER_LEN, end, Layer::IoamOption)?)
        .map_err(|e| e.shifted(at + OPTION_HEADER_LEN))?;
    // The Opaque State Snapshot makes elements of varying length: where
    // each slot lies cannot be told from NodeLen.
    if header.trace_type.contains(TraceType::OPAQUE_STATE) {
        return Err(ParseError::UnknownType {
            layer: Layer::IoamTrace,
            offset: at + OPTION_HEADER_LEN + 6,
            value: 2,
        });
    }
    header.check(end - data).map_err(|e| e.shifted(at + OPTION_HEADER_LEN))?;
    Ok(TraceAt { option: at, header, data, data_len: end - data })
}

/// What a node's fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    /// Its element written at this offset of the Hop-by-Hop header.
    At(usize),
    /// No room: Overflow set (or already set), nothing written.
    Overflow,
}

/// Writes `node`'s element into the trace at `trace` of `hbh` (the next
/// free slot: word RemainingLen - NodeLen of the data space) and lowers
/// RemainingLen; without room, sets Overflow.
pub fn fill(hbh: &mut [u8], trace: &TraceAt, node: &NodeData) -> Result<Filled, EmitError> {
    let header = trace.header;
    let at = trace.option + OPTION_HEADER_LEN;
    if header.overflow() || header.remaining_len < header.node_len {
        let overflowed = TraceHeaderRepr { flags: header.flags | FLAG_OVERFLOW, ..header };
        overflowed.emit(after_mut(hbh, at, Layer::IoamTrace, HEADER_LEN)?)?;
        return Ok(Filled::Overflow);
    }
    let slot = trace.data + usize::from(header.remaining_len - header.node_len) * 4;
    let room = hbh.len();
    node.emit(
        header.trace_type,
        hbh.get_mut(slot..).ok_or(EmitError::no_room(Layer::IoamTrace, slot, room))?,
    )?;
    let remaining = TraceHeaderRepr { remaining_len: header.remaining_len - header.node_len, ..header };
    remaining.emit(after_mut(hbh, at, Layer::IoamTrace, HEADER_LEN)?)?;
    Ok(Filled::At(slot))
}

/// The elements the nodes wrote, newest first.
pub fn nodes<'a>(hbh: &'a [u8], trace: &TraceAt) -> impl DoubleEndedIterator<Item = NodeData> + 'a {
    let header = trace.header;
    let element = header.node_len.max(1) as usize * 4;
    let filled = hbh.get(trace.data + usize::from(header.remaining_len) * 4..trace.data + trace.data_len);
    filled
        .unwrap_or_default()
        .chunks_exact(element)
        .filter_map(move |bytes| NodeData::parse(header.trace_type, bytes).ok())
}

/// Writes a Hop-by-Hop header holding only a Pre-allocated Trace with
/// room for `nodes` elements (PadN first, so that the option is 4n
/// aligned, and padding to a multiple of 8 after it); returns its length.
pub fn emit_hop_by_hop(
    buf: &mut [u8],
    next_header: u8,
    header: &TraceHeaderRepr,
    nodes: usize,
) -> Result<usize, EmitError> {
    let option_len = OPTION_HEADER_LEN + HEADER_LEN + nodes * usize::from(header.node_len) * 4;
    let total = (4 + option_len).next_multiple_of(8);
    if total / 8 - 1 > 255 {
        return Err(EmitError::Unrepresentable { layer: Layer::IoamOption, value: option_len });
    }
    let room = buf.len();
    let out = buf.get_mut(..total).ok_or(EmitError::no_room(Layer::IoamOption, total, room))?;
    out.get_mut(..4)
        .into_iter()
        .for_each(|head| head.copy_from_slice(&[next_header, (total / 8 - 1) as u8, 1, 0]));
    write_option(after_mut(out, 4, Layer::IoamOption, option_len)?, header, nodes)?;
    Ok(total)
}

/// Writes the IOAM option with a Pre-allocated Trace of `nodes` empty
/// slots at the start of `out`, and padding (Pad1 or PadN) over the rest
/// of `out`.
pub fn write_option(out: &mut [u8], header: &TraceHeaderRepr, nodes: usize) -> Result<(), EmitError> {
    let data_len = nodes * usize::from(header.node_len) * 4;
    let option_len = OPTION_HEADER_LEN + HEADER_LEN + data_len;
    if option_len - 2 > 255 || data_len / 4 > 0x7f {
        return Err(EmitError::Unrepresentable { layer: Layer::IoamOption, value: option_len });
    }
    let room = out.len();
    if room < option_len {
        return Err(EmitError::no_room(Layer::IoamOption, option_len, room));
    }
    out.fill(0);
    out.get_mut(..4)
        .into_iter()
        .for_each(|head| head.copy_from_slice(&[OPTION_IOAM, (option_len - 2) as u8, 0, PREALLOCATED_TRACE]));
    let trace = TraceHeaderRepr { remaining_len: (data_len / 4) as u8, ..*header };
    trace.emit(after_mut(out, OPTION_HEADER_LEN, Layer::IoamTrace, HEADER_LEN)?)?;
    write_padding(after_mut(out, option_len, Layer::IoamOption, 0)?);
    Ok(())
}

/// Bytes of an Edge-to-Edge option carrying `repr`, its own header
/// counted.
pub fn e2e_option_len(repr: &E2eRepr) -> usize {
    OPTION_HEADER_LEN + repr.len()
}

/// Writes a Destination Options header holding only the Edge-to-Edge
/// option (PadN first, so that the option is 4n aligned, and padding to a
/// multiple of 8 after it); returns its length.
pub fn emit_destination_options(buf: &mut [u8], next_header: u8, repr: &E2eRepr) -> Result<usize, EmitError> {
    let total = (4 + e2e_option_len(repr)).next_multiple_of(8);
    let room = buf.len();
    let out = buf.get_mut(..total).ok_or(EmitError::no_room(Layer::IoamOption, total, room))?;
    out.get_mut(..4)
        .into_iter()
        .for_each(|head| head.copy_from_slice(&[next_header, (total / 8 - 1) as u8, 1, 0]));
    write_e2e_option(after_mut(out, 4, Layer::IoamOption, e2e_option_len(repr))?, repr)?;
    Ok(total)
}

/// Writes the Edge-to-Edge option carrying `repr` at the start of `out`
/// (in option type 0x11: its data does not change en route), and padding
/// over the rest of `out`.
pub fn write_e2e_option(out: &mut [u8], repr: &E2eRepr) -> Result<(), EmitError> {
    let option_len = e2e_option_len(repr);
    let room = out.len();
    if room < option_len {
        return Err(EmitError::no_room(Layer::IoamOption, option_len, room));
    }
    out.fill(0);
    out.get_mut(..4).into_iter().for_each(|head| {
        head.copy_from_slice(&[OPTION_IOAM_STATIC, (option_len - 2) as u8, 0, EDGE_TO_EDGE])
    });
    repr.emit(after_mut(out, OPTION_HEADER_LEN, Layer::IoamOption, repr.len())?)?;
    write_padding(after_mut(out, option_len, Layer::IoamOption, 0)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Hop-by-Hop header of the issue's kernel check: PadN, then the
    /// IOAM option with a Pre-allocated Trace of namespace 123, NodeLen 1,
    /// RemainingLen 2, trace type 0x800000 (Hop_Lim and short node id),
    /// room for two nodes; UDP next.
    const SENT: [u8; 24] =
        [17, 2, 1, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x02, 0x80, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
    /// The same after the Linux kernel (6.18, `ioam6_enabled`, node id
    /// 0xABCDEF) forwarded it with Hop Limit 63: RemainingLen 1, its
    /// element in the last slot.
    const AFTER_KERNEL: [u8; 24] = [
        17, 2, 1, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x01, 0x80, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0x3f, 0xab,
        0xcd, 0xef,
    ];

    fn header() -> TraceHeaderRepr {
        TraceHeaderRepr {
            namespace: 123,
            node_len: 1,
            trace_type: TraceType::HOP_LIM_NODE_ID,
            ..Default::default()
        }
    }

    #[test]
    fn emits_the_kernel_s_hop_by_hop_header() {
        let mut out = [0xa5; 32];
        assert_eq!(emit_hop_by_hop(&mut out, 17, &header(), 2), Ok(24));
        assert_eq!(out[..24], SENT);
        let trace = find_trace(&SENT, 123).unwrap().unwrap();
        assert_eq!(
            trace,
            TraceAt {
                option: 4,
                header: TraceHeaderRepr { remaining_len: 2, ..header() },
                data: 16,
                data_len: 8
            }
        );
        assert_eq!(nodes(&SENT, &trace).count(), 0);
    }

    #[test]
    fn a_node_fills_the_slot_the_kernel_fills() {
        let mut hbh = SENT;
        let trace = find_trace(&hbh, 123).unwrap().unwrap();
        let node = NodeData { hop_limit: Some(63), node_id: Some(0xab_cdef), ..Default::default() };
        assert_eq!(fill(&mut hbh, &trace, &node), Ok(Filled::At(20)));
        assert_eq!(hbh, AFTER_KERNEL);
        let after = find_trace(&AFTER_KERNEL, 123).unwrap().unwrap();
        assert_eq!(nodes(&AFTER_KERNEL, &after).collect::<Vec<_>>(), [node]);
        // The second slot, then no room: Overflow, nothing written.
        let second = NodeData { hop_limit: Some(62), node_id: Some(7), ..Default::default() };
        assert_eq!(fill(&mut hbh, &after, &second), Ok(Filled::At(16)));
        let full = find_trace(&hbh, 123).unwrap().unwrap();
        assert_eq!(nodes(&hbh, &full).collect::<Vec<_>>(), [second, node], "newest first");
        let before = hbh;
        assert_eq!(fill(&mut hbh, &full, &second), Ok(Filled::Overflow));
        let overflowed = find_trace(&hbh, 123).unwrap().unwrap();
        assert!(overflowed.header.overflow());
        assert_eq!(hbh[16..], before[16..], "no data written");
        assert_eq!(hbh[10] & 0x04, 0x04, "the O bit: the flags' first");
    }

    #[test]
    fn other_namespaces_are_left_alone() {
        assert_eq!(find_trace(&SENT, 124), Ok(None));
    }

    /// Another namespace's trace is its nodes' business: one whose NodeLen
    /// disagrees with its trace type (or that lies otherwise) is passed
    /// over by our namespace's nodes, read as wrong by a reader of any.
    #[test]
    fn another_namespace_s_lies_are_not_ours_to_judge() {
        let mut node_len = SENT;
        node_len[9] = 124;
        node_len[10] = 0x10; // NodeLen 2 for a one-word trace type
        assert_eq!(find_trace(&node_len, 123), Ok(None));
        assert!(first_trace(&node_len).is_err());
        let mut remaining = SENT;
        remaining[9] = 124;
        remaining[11] = 3; // RemainingLen past the two slots
        assert_eq!(find_trace(&remaining, 123), Ok(None));
    }

    /// Lengths that lie and misplaced options are refused, never read.
    #[test]
    fn lies_are_refused() {
        let refused = |bytes: &[u8]| find_trace(bytes, 123).is_err();
        let mut remaining = SENT;
        remaining[11] = 3; // RemainingLen past the two slots
        assert!(refused(&remaining));
        let mut node_len = SENT;
        node_len[10] = 0x10; // NodeLen 2 for a one-word trace type
        assert!(refused(&node_len));
        let mut zero = SENT;
        zero[10] = 0;
        assert!(refused(&zero));
        let mut option_len = SENT;
        option_len[5] = 40; // past the header
        assert!(refused(&option_len));
        let mut short = SENT;
        short[5] = 9; // a data space of one byte
        short[14..].fill(0);
        assert!(refused(&short));
        // Misaligned: the option at offset 3 after a Pad1.
        let misaligned =
            [17, 2, 0, 0x31, 18, 0, 0, 0x00, 0x7b, 0x08, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(refused(&misaligned));
        // Two traces of one namespace.
        let mut twice = [0u8; 48];
        twice[..24].copy_from_slice(&SENT);
        twice[1] = 5;
        twice[24..44].copy_from_slice(&SENT[4..]);
        assert!(refused(&twice));
    }

    /// Cut anywhere, the header is refused or read as far as it goes;
    /// never a panic, never a trace past the bytes.
    #[test]
    fn every_cut_is_safe() {
        for cut in 0..SENT.len() {
            if let Ok(Some(trace)) = find_trace(&SENT[..cut], 123) {
                assert!(trace.data + trace.data_len <= cut);
            }
        }
    }
}
