//! Telemetry Report 0.5 headers (telemetry-report-v0.5.md section 3.2).
//!
//! Fixed header (12 octets):
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Ver  |NProto |D|Q|F|         Reserved            |   hw_id   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Ingress Timestamp                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! Drop header (12 octets): Switch id; Ingress port id | Egress port id;
//! Queue id | Drop reason | Pad. Switch-local header (16 octets): Switch
//! id; Ingress port id | Egress port id; Queue id | Queue occupancy (24);
//! Egress timestamp.

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};

pub const HEADER_LEN: usize = 12;
pub const DROP_HEADER_LEN: usize = 12;
pub const SWITCH_LOCAL_LEN: usize = 16;

/// NProto: what follows the fixed header. 0-2 are Telemetry Report 0.5's;
/// 3 and 4 are Host-INT's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextProto {
    Ethernet,
    DropEthernet,
    SwitchLocalEthernet,
    /// Host-INT's Drop-Summary.
    DropSummary,
    /// Host-INT's INT/IPv4 report (an IPv4 header follows).
    Ipv4,
    Unknown(u8),
}

impl From<u8> for NextProto {
    fn from(value: u8) -> Self {
        match value {
            0 => NextProto::Ethernet,
            1 => NextProto::DropEthernet,
            2 => NextProto::SwitchLocalEthernet,
            3 => NextProto::DropSummary,
            4 => NextProto::Ipv4,
            other => NextProto::Unknown(other),
        }
    }
}

impl From<NextProto> for u8 {
    fn from(value: NextProto) -> Self {
        match value {
            NextProto::Ethernet => 0,
            NextProto::DropEthernet => 1,
            NextProto::SwitchLocalEthernet => 2,
            NextProto::DropSummary => 3,
            NextProto::Ipv4 => 4,
            NextProto::Unknown(other) => other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ReportHeader {
    pub ver_nproto: u8,
    /// D | Q | F | reserved (5).
    pub flags: u8,
    pub reserved: u8,
    /// reserved (2) | hw_id (6).
    pub hw_id: u8,
    pub sequence: U32,
    pub timestamp: U32,
}
const _: () = assert!(size_of::<ReportHeader>() == HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportHeaderRepr {
    pub version: u8,
    pub next_proto: NextProto,
    pub dropped: bool,
    pub congested_queue: bool,
    pub tracked_flow: bool,
    pub hw_id: u8,
    pub sequence: u32,
    pub timestamp: u32,
}

impl ReportHeaderRepr {
    /// Host-INT's latency report header: NProto 4 (INT/IPv4), F set.
    pub fn latency(sequence: u32, timestamp: u32, hw_id: u8) -> Self {
        ReportHeaderRepr {
            version: 0,
            next_proto: NextProto::Ipv4,
            dropped: false,
            congested_queue: false,
            tracked_flow: true,
            hw_id,
            sequence,
            timestamp,
        }
    }

    /// Host-INT's Drop-Summary header: NProto 3, D and F set.
    pub fn drop_summary(sequence: u32, timestamp: u32, hw_id: u8) -> Self {
        ReportHeaderRepr {
            next_proto: NextProto::DropSummary,
            dropped: true,
            ..Self::latency(sequence, timestamp, hw_id)
        }
    }

    /// Version 0 is the only one Telemetry Report 0.5 defines; reserved bits
    /// must be zero.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (h, _) = ReportHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::ReportHeader, 0, HEADER_LEN, bytes.len()))?;
        let version = h.ver_nproto >> 4;
        if version != 0 {
            return Err(ParseError::UnknownVersion { layer: Layer::ReportHeader, offset: 0, value: version });
        }
        // Reserved: the low five flag bits, byte 2, and the top two bits of
        // byte 3. Zero from every sender that follows the format.
        for (offset, value) in [(1, h.flags & 0x1f), (2, h.reserved), (3, h.hw_id & 0xc0)] {
            if value != 0 {
                return Err(ParseError::Reserved { layer: Layer::ReportHeader, offset, value });
            }
        }
        Ok(ReportHeaderRepr {
            version,
            next_proto: NextProto::from(h.ver_nproto & 0x0f),
            dropped: h.flags & 0x80 != 0,
            congested_queue: h.flags & 0x40 != 0,
            tracked_flow: h.flags & 0x20 != 0,
            hw_id: h.hw_id & 0x3f,
            sequence: h.sequence.get(),
            timestamp: h.timestamp.get(),
        })
    }

    /// The D, Q and F flags as the header's byte 1.
    pub fn flags(&self) -> u8 {
        (u8::from(self.dropped) << 7)
            | (u8::from(self.congested_queue) << 6)
            | (u8::from(self.tracked_flow) << 5)
    }

    /// Refuses a header whose flags are not `expected` (byte 1): a report
    /// kind fixes them (latency: F; Drop-Summary: D and F).
    pub fn expect_flags(&self, expected: u8) -> Result<(), ParseError> {
        if self.flags() != expected {
            return Err(ParseError::Reserved { layer: Layer::ReportHeader, offset: 1, value: self.flags() });
        }
        Ok(())
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let h = ReportHeader {
            ver_nproto: (self.version << 4) | (u8::from(self.next_proto) & 0x0f),
            flags: self.flags(),
            reserved: 0,
            hw_id: self.hw_id & 0x3f,
            sequence: U32::new(self.sequence),
            timestamp: U32::new(self.timestamp),
        };
        h.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::ReportHeader, HEADER_LEN, buf.len()))?;
        Ok(HEADER_LEN)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct DropHeader {
    pub switch_id: U32,
    pub ingress_port: U16,
    pub egress_port: U16,
    pub queue_id: u8,
    pub drop_reason: u8,
    pub pad: U16,
}
const _: () = assert!(size_of::<DropHeader>() == DROP_HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DropHeaderRepr {
    pub switch_id: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    pub queue_id: u8,
    pub drop_reason: u8,
}

impl DropHeaderRepr {
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (h, _) = DropHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::DropHeader, 0, DROP_HEADER_LEN, bytes.len()))?;
        Ok(DropHeaderRepr {
            switch_id: h.switch_id.get(),
            ingress_port: h.ingress_port.get(),
            egress_port: h.egress_port.get(),
            queue_id: h.queue_id,
            drop_reason: h.drop_reason,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let h = DropHeader {
            switch_id: U32::new(self.switch_id),
            ingress_port: U16::new(self.ingress_port),
            egress_port: U16::new(self.egress_port),
            queue_id: self.queue_id,
            drop_reason: self.drop_reason,
            pad: U16::new(0),
        };
        h.write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::DropHeader, DROP_HEADER_LEN, buf.len()))?;
        Ok(DROP_HEADER_LEN)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SwitchLocalHeader {
    pub switch_id: U32,
    pub ingress_port: U16,
    pub egress_port: U16,
    pub queue_id: u8,
    pub queue_occupancy: [u8; 3],
    pub egress_timestamp: U32,
}
const _: () = assert!(size_of::<SwitchLocalHeader>() == SWITCH_LOCAL_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchLocalRepr {
    pub switch_id: u32,
    pub ingress_port: u16,
    pub egress_port: u16,
    pub queue_id: u8,
    /// 24 bits.
    pub queue_occupancy: u32,
    pub egress_timestamp: u32,
}

impl SwitchLocalRepr {
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (h, _) = SwitchLocalHeader::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::SwitchLocalHeader, 0, SWITCH_LOCAL_LEN, bytes.len()))?;
        let [a, b, c] = h.queue_occupancy;
        Ok(SwitchLocalRepr {
            switch_id: h.switch_id.get(),
            ingress_port: h.ingress_port.get(),
            egress_port: h.egress_port.get(),
            queue_id: h.queue_id,
            queue_occupancy: u32::from_be_bytes([0, a, b, c]),
            egress_timestamp: h.egress_timestamp.get(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let [_, a, b, c] = self.queue_occupancy.to_be_bytes();
        let h = SwitchLocalHeader {
            switch_id: U32::new(self.switch_id),
            ingress_port: U16::new(self.ingress_port),
            egress_port: U16::new(self.egress_port),
            queue_id: self.queue_id,
            queue_occupancy: [a, b, c],
            egress_timestamp: U32::new(self.egress_timestamp),
        };
        h.write_to_prefix(buf)
            .map_err(|_| EmitError::no_room(Layer::SwitchLocalHeader, SWITCH_LOCAL_LEN, buf.len()))?;
        Ok(SWITCH_LOCAL_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host-INT latency report header: NProto 4, F, seq 7, time 1700000000 s.
    static LATENCY_HEADER: [u8; 12] = [0x04, 0x20, 0x00, 0x00, 0, 0, 0, 7, 0x65, 0x53, 0xf1, 0x00];
    /// Host-INT Drop-Summary header: NProto 3, D and F, seq 8.
    static DROP_SUMMARY_HEADER: [u8; 12] = [0x03, 0xa0, 0x00, 0x00, 0, 0, 0, 8, 0x65, 0x53, 0xf1, 0x00];
    /// TR 0.5 NProto 0, F, hw_id 5, seq 1, ts 0x01020304 ns.
    static ETHERNET_HEADER: [u8; 12] = [0x00, 0x20, 0x00, 0x05, 0, 0, 0, 1, 1, 2, 3, 4];
    /// TR 0.5 NProto 1 (drop), D, seq 2.
    static DROP_HEADER_FIXED: [u8; 12] = [0x01, 0x80, 0x00, 0x00, 0, 0, 0, 2, 0, 0, 0, 9];
    /// TR 0.5 NProto 2 (switch local), Q, seq 3.
    static LOCAL_HEADER_FIXED: [u8; 12] = [0x02, 0x40, 0x00, 0x3f, 0, 0, 0, 3, 0, 0, 0, 9];

    fn header(
        next_proto: NextProto,
        d: bool,
        q: bool,
        f: bool,
        hw_id: u8,
        sequence: u32,
        timestamp: u32,
    ) -> ReportHeaderRepr {
        ReportHeaderRepr {
            version: 0,
            next_proto,
            dropped: d,
            congested_queue: q,
            tracked_flow: f,
            hw_id,
            sequence,
            timestamp,
        }
    }

    #[test]
    fn golden_fixed_headers() {
        let cases = [
            (LATENCY_HEADER, header(NextProto::Ipv4, false, false, true, 0, 7, 1_700_000_000)),
            (DROP_SUMMARY_HEADER, header(NextProto::DropSummary, true, false, true, 0, 8, 1_700_000_000)),
            (ETHERNET_HEADER, header(NextProto::Ethernet, false, false, true, 5, 1, 0x0102_0304)),
            (DROP_HEADER_FIXED, header(NextProto::DropEthernet, true, false, false, 0, 2, 9)),
            (LOCAL_HEADER_FIXED, header(NextProto::SwitchLocalEthernet, false, true, false, 63, 3, 9)),
        ];
        for (bytes, repr) in cases {
            assert_eq!(ReportHeaderRepr::parse(&bytes).unwrap(), repr);
            let mut buf = vec![0xa5; 14];
            assert_eq!(repr.emit(&mut buf).unwrap(), 12);
            assert_eq!(&buf[..12], &bytes);
            assert_eq!(&buf[12..], &[0xa5, 0xa5]);
            for len in 0..12 {
                assert!(ReportHeaderRepr::parse(&bytes[..len]).is_err());
                assert!(repr.emit(&mut vec![0; len]).is_err());
            }
        }
    }

    #[test]
    fn unknown_version_refused() {
        let mut bytes = LATENCY_HEADER;
        bytes[0] = 0x14;
        assert!(matches!(ReportHeaderRepr::parse(&bytes), Err(ParseError::UnknownVersion { value: 1, .. })));
    }

    #[test]
    fn drop_and_switch_local_golden() {
        let drop_bytes = [0, 0, 0, 1, 0, 2, 0, 3, 4, 71, 0, 0];
        let drop =
            DropHeaderRepr { switch_id: 1, ingress_port: 2, egress_port: 3, queue_id: 4, drop_reason: 71 };
        assert_eq!(DropHeaderRepr::parse(&drop_bytes).unwrap(), drop);
        let mut buf = vec![0xa5; 12];
        drop.emit(&mut buf).unwrap();
        assert_eq!(buf, drop_bytes);
        let local_bytes = [0, 0, 0, 1, 0, 2, 0, 3, 4, 0x12, 0x34, 0x56, 0xde, 0xad, 0xbe, 0xef];
        let local = SwitchLocalRepr {
            switch_id: 1,
            ingress_port: 2,
            egress_port: 3,
            queue_id: 4,
            queue_occupancy: 0x12_3456,
            egress_timestamp: 0xdead_beef,
        };
        assert_eq!(SwitchLocalRepr::parse(&local_bytes).unwrap(), local);
        let mut buf = vec![0xa5; 16];
        local.emit(&mut buf).unwrap();
        assert_eq!(buf, local_bytes);
        for len in 0..12 {
            assert!(DropHeaderRepr::parse(&drop_bytes[..len]).is_err());
        }
        for len in 0..16 {
            assert!(SwitchLocalRepr::parse(&local_bytes[..len]).is_err());
        }
    }
}
