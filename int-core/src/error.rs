//! One error type for every packet this crate refuses, with a drop reason
//! per variant so that the node can count refusals by cause.

use core::fmt;

/// The header in which a problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Ipv4,
    Ipv6,
    Ipv6Extension,
    VxlanGpe,
    Geneve,
    Tcp,
    Udp,
    IntShim,
    IntMetadataHeader,
    IntStack,
    IntSequence,
    IntTail,
    ReportHeader,
    DropHeader,
    SwitchLocalHeader,
    DropSummary,
    LatencyReport,
    IntMxHeader,
    ReportGroupHeader,
    IndividualReport,
    IoamOption,
    IoamTrace,
    Gre,
    IfaHeader,
    IfaMetadataHeader,
    IfaStack,
    Ipfix,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "802.1q",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Extension => "ipv6 extension header",
            Layer::VxlanGpe => "vxlan-gpe",
            Layer::Geneve => "geneve",
            Layer::Tcp => "tcp",
            Layer::Udp => "udp",
            Layer::IntShim => "int shim",
            Layer::IntMetadataHeader => "int metadata header",
            Layer::IntStack => "int metadata stack",
            Layer::IntSequence => "int sequence number",
            Layer::IntTail => "int tail",
            Layer::ReportHeader => "report header",
            Layer::DropHeader => "report drop header",
            Layer::SwitchLocalHeader => "report switch-local header",
            Layer::DropSummary => "drop-summary report",
            Layer::LatencyReport => "latency report",
            Layer::IntMxHeader => "int-mx header",
            Layer::ReportGroupHeader => "report group header",
            Layer::IndividualReport => "individual report",
            Layer::IoamOption => "ioam option",
            Layer::IoamTrace => "ioam trace",
            Layer::Gre => "gre",
            Layer::IfaHeader => "ifa header",
            Layer::IfaMetadataHeader => "ifa metadata header",
            Layer::Ipfix => "ipfix",
            Layer::IfaStack => "ifa metadata stack",
        };
        f.write_str(name)
    }
}

/// Why a header could not be written: never a fault of a packet, always of
/// the caller's buffer or values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitError {
    /// The header needs `needed` bytes; the buffer has `available`.
    NoRoom { layer: Layer, needed: usize, available: usize },
    /// A length the header's field cannot hold (options past their maximum,
    /// a block beyond 255 words).
    Unrepresentable { layer: Layer, value: usize },
}

impl EmitError {
    pub fn no_room(layer: Layer, needed: usize, available: usize) -> Self {
        EmitError::NoRoom { layer, needed, available }
    }
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::NoRoom { layer, needed, available } => {
                write!(f, "{layer}: {needed} bytes to write, room for {available}")
            }
            EmitError::Unrepresentable { layer, value } => {
                write!(f, "{layer}: length {value} cannot be written")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// Why a packet (or report) could not be parsed or transformed.
///
/// `offset` is always counted from the start of the buffer handed to the
/// function that failed (the frame for transforms, the UDP payload for
/// reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The header needs `needed` bytes at `offset`; only `available` exist.
    Truncated { layer: Layer, offset: usize, needed: usize, available: usize },
    /// A version field holds a value this crate does not speak.
    UnknownVersion { layer: Layer, offset: usize, value: u8 },
    /// A type field holds a value this crate does not speak.
    UnknownType { layer: Layer, offset: usize, value: u8 },
    /// A length field contradicts the header or the bytes around it.
    BadLength { layer: Layer, offset: usize, value: usize },
    /// Instruction Count does not match the bitmap, or Ins Cnt x Total Hop
    /// Count does not match the shim Length.
    StackMismatch { offset: usize, ins_cnt: u8, total_hop_cnt: u8, stack_bytes: usize },
    /// Total Hop Count above Max Hop Count.
    HopCountExceeded { offset: usize, total_hop_cnt: u8, max_hop_cnt: u8 },
    /// Bits the format reserves (zero on the wire) are set, or a field
    /// holds a value the format fixes (a synthesised header's zeros, a
    /// report kind's flags): what a collector refuses from a sender it
    /// cannot trust.
    Reserved { layer: Layer, offset: usize, value: u8 },
}

impl ParseError {
    pub fn layer(&self) -> Layer {
        match *self {
            ParseError::Truncated { layer, .. }
            | ParseError::UnknownVersion { layer, .. }
            | ParseError::UnknownType { layer, .. }
            | ParseError::BadLength { layer, .. }
            | ParseError::Reserved { layer, .. } => layer,
            ParseError::StackMismatch { .. } | ParseError::HopCountExceeded { .. } => Layer::IntStack,
        }
    }

    /// The counter this refusal is added to.
    pub fn drop_reason(&self) -> DropReason {
        match self {
            ParseError::Truncated { layer, .. } if is_int(*layer) => DropReason::IntTruncated,
            ParseError::Truncated { .. } => DropReason::PacketTruncated,
            ParseError::UnknownVersion { .. } => DropReason::IntUnknownVersion,
            ParseError::UnknownType { layer, .. } if is_int(*layer) => DropReason::IntUnknownType,
            ParseError::UnknownType { .. } => DropReason::PacketMalformed,
            ParseError::BadLength { layer, .. } if is_int(*layer) => DropReason::IntBadLength,
            ParseError::BadLength { .. } | ParseError::Reserved { .. } => DropReason::PacketMalformed,
            ParseError::StackMismatch { .. } | ParseError::HopCountExceeded { .. } => {
                DropReason::IntStackMismatch
            }
        }
    }

    /// The same error with its offset counted from `base` bytes earlier (a
    /// header parsed inside a bigger buffer).
    pub fn shifted(self, base: usize) -> ParseError {
        match self {
            ParseError::Truncated { layer, offset, needed, available } => {
                ParseError::Truncated { layer, offset: offset + base, needed, available }
            }
            ParseError::UnknownVersion { layer, offset, value } => {
                ParseError::UnknownVersion { layer, offset: offset + base, value }
            }
            ParseError::UnknownType { layer, offset, value } => {
                ParseError::UnknownType { layer, offset: offset + base, value }
            }
            ParseError::BadLength { layer, offset, value } => {
                ParseError::BadLength { layer, offset: offset + base, value }
            }
            ParseError::StackMismatch { offset, ins_cnt, total_hop_cnt, stack_bytes } => {
                ParseError::StackMismatch { offset: offset + base, ins_cnt, total_hop_cnt, stack_bytes }
            }
            ParseError::HopCountExceeded { offset, total_hop_cnt, max_hop_cnt } => {
                ParseError::HopCountExceeded { offset: offset + base, total_hop_cnt, max_hop_cnt }
            }
            ParseError::Reserved { layer, offset, value } => {
                ParseError::Reserved { layer, offset: offset + base, value }
            }
        }
    }

    pub(crate) fn truncated(layer: Layer, offset: usize, needed: usize, buf_len: usize) -> Self {
        ParseError::Truncated { layer, offset, needed, available: buf_len.saturating_sub(offset) }
    }
}

fn is_int(layer: Layer) -> bool {
    matches!(
        layer,
        Layer::IntShim
            | Layer::IntMetadataHeader
            | Layer::IntMxHeader
            | Layer::IntStack
            | Layer::IntSequence
            | Layer::IntTail
            | Layer::IoamOption
            | Layer::IoamTrace
            | Layer::IfaHeader
            | Layer::IfaMetadataHeader
            | Layer::IfaStack
    )
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::Truncated { layer, offset, needed, available } => {
                write!(f, "{layer} truncated at offset {offset}: needs {needed} bytes, {available} left")
            }
            ParseError::UnknownVersion { layer, offset, value } => {
                write!(f, "{layer} at offset {offset}: unknown version {value}")
            }
            ParseError::UnknownType { layer, offset, value } => {
                write!(f, "{layer} at offset {offset}: unknown type {value}")
            }
            ParseError::BadLength { layer, offset, value } => {
                write!(f, "{layer} at offset {offset}: inconsistent length {value}")
            }
            ParseError::StackMismatch { offset, ins_cnt, total_hop_cnt, stack_bytes } => write!(
                f,
                "int stack at offset {offset}: ins cnt {ins_cnt} x total hop cnt {total_hop_cnt} \
                 does not match {stack_bytes} stack bytes"
            ),
            ParseError::Reserved { layer, offset, value } => {
                write!(f, "{layer} at offset {offset}: reserved or fixed bits hold {value:#04x}")
            }
            ParseError::HopCountExceeded { offset, total_hop_cnt, max_hop_cnt } => write!(
                f,
                "int metadata header at offset {offset}: total hop cnt {total_hop_cnt} \
                 above max hop cnt {max_hop_cnt}"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Counter index for every way a packet can be refused. The node keeps one
/// counter per variant; [`DropReason::ALL`] lists them in a stable order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The Ethernet/IPv4/L4 headers are shorter than they claim.
    PacketTruncated,
    /// A non-INT header is inconsistent (IHL, total length, data offset).
    PacketMalformed,
    /// The INT block ends before its shim Length, stack or tail.
    IntTruncated,
    /// Shim Length inconsistent with the headers or the L4 length.
    IntBadLength,
    /// Instruction Count or Total Hop Count does not match the stack.
    IntStackMismatch,
    /// Metadata header version other than 0.
    IntUnknownVersion,
    /// Shim Type other than 1, 2 or 3.
    IntUnknownType,
}

impl DropReason {
    pub const ALL: [DropReason; 7] = [
        DropReason::PacketTruncated,
        DropReason::PacketMalformed,
        DropReason::IntTruncated,
        DropReason::IntBadLength,
        DropReason::IntStackMismatch,
        DropReason::IntUnknownVersion,
        DropReason::IntUnknownType,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::PacketTruncated => "packet_truncated",
            DropReason::PacketMalformed => "packet_malformed",
            DropReason::IntTruncated => "int_truncated",
            DropReason::IntBadLength => "int_bad_length",
            DropReason::IntStackMismatch => "int_stack_mismatch",
            DropReason::IntUnknownVersion => "int_unknown_version",
            DropReason::IntUnknownType => "int_unknown_type",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_a_distinct_name() {
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DropReason::ALL.len());
    }

    #[test]
    fn int_layers_map_to_int_reasons() {
        let e = ParseError::truncated(Layer::IntTail, 60, 4, 62);
        assert_eq!(e, ParseError::Truncated { layer: Layer::IntTail, offset: 60, needed: 4, available: 2 });
        assert_eq!(e.drop_reason(), DropReason::IntTruncated);
        let e = ParseError::truncated(Layer::Ipv4, 14, 20, 20);
        assert_eq!(e.drop_reason(), DropReason::PacketTruncated);
        assert_eq!(e.to_string(), "ipv4 truncated at offset 14: needs 20 bytes, 6 left");
    }
}
