//! One hop's IFA metadata in Broadcom's format, LNS 1: 32 bytes, the only
//! format Broadcom's SDK programs (OpenBCM sdk-6.5.20
//! `src/bcm/esw/xgs5/ifa2.c`, `_bcm_xgs5_ifa2_uc_msg_md_fmt_set`:
//! `msg.namespace = 1` and the element widths below, in this order).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  LNS  |              Device ID                |    IP TTL     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Speed  |Cg |  Queue ID |        RX timestamp seconds           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Egress system port       |      Ingress system port      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  RX timestamp nanoseconds                     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  Residence time nanoseconds                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Opaque data 0                          |
//! |                        Opaque data 1                          |
//! |                        Opaque data 2                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The SDK's first element, `LNS_DEVICE_ID` (24 bits), is LNS (4) and
//! Device ID (20), as scapy's `IFAMd` splits it. The last three words are
//! opaque in the SDK; scapy pull request 4235 (`scapy/contrib/ifa.py`,
//! `IFAMd`) names them `qbytes`, `rsvd0`/`qcells` and `rsvd1`, and
//! gopacket `Reserved`: this crate follows the SDK and reads them as
//! opaque words. scapy's `dport`/`sport` are the egress/ingress system
//! ports. Every hop of a GNS-15 stack is read with this layout whatever its
//! LNS (scapy's and gopacket's hops are 32 bytes of it too); the LNS is
//! reported, for the reader to judge.

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{EmitError, Layer, ParseError};
use crate::locate::{IpLocation, IpVersion};

pub const HOP_LEN: usize = 32;
/// Broadcom's local name space.
pub const LNS_BROADCOM: u8 = 1;
pub const MAX_DEVICE_ID: u32 = 0x000f_ffff;
pub const MAX_RX_SECONDS: u32 = 0x000f_ffff;

/// The egress port speed code (scapy's `_ifa_speed`; gopacket's comment
/// lists the same codes, its constants skip 50G).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PortSpeed {
    #[default]
    G10,
    G25,
    G40,
    G50,
    G100,
    G200,
    G400,
    /// A code no peer names; kept as read.
    Unknown(u8),
}

impl PortSpeed {
    pub fn from_code(code: u8) -> PortSpeed {
        match code {
            0 => PortSpeed::G10,
            1 => PortSpeed::G25,
            2 => PortSpeed::G40,
            3 => PortSpeed::G50,
            4 => PortSpeed::G100,
            5 => PortSpeed::G200,
            6 => PortSpeed::G400,
            other => PortSpeed::Unknown(other),
        }
    }

    pub fn code(self) -> u8 {
        match self {
            PortSpeed::G10 => 0,
            PortSpeed::G25 => 1,
            PortSpeed::G40 => 2,
            PortSpeed::G50 => 3,
            PortSpeed::G100 => 4,
            PortSpeed::G200 => 5,
            PortSpeed::G400 => 6,
            PortSpeed::Unknown(code) => code,
        }
    }

    /// Gigabits per second; `None` for an unknown code.
    pub fn gbps(self) -> Option<u32> {
        match self {
            PortSpeed::G10 => Some(10),
            PortSpeed::G25 => Some(25),
            PortSpeed::G40 => Some(40),
            PortSpeed::G50 => Some(50),
            PortSpeed::G100 => Some(100),
            PortSpeed::G200 => Some(200),
            PortSpeed::G400 => Some(400),
            PortSpeed::Unknown(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Lns1Hop {
    /// LNS (4) | Device ID (20) | IP TTL (8).
    pub lns_device_ttl: U32,
    /// Egress port speed (4) | congestion (2) | queue id (6) | RX seconds (20).
    pub port_queue_seconds: U32,
    pub egress_system_port: U16,
    pub ingress_system_port: U16,
    pub rx_nanoseconds: U32,
    pub residence_ns: U32,
    pub opaque: [U32; 3],
}
const _: () = assert!(size_of::<Lns1Hop>() == HOP_LEN);

impl Lns1Hop {
    #[inline]
    pub fn lns(&self) -> u8 {
        (self.lns_device_ttl.get() >> 28) as u8
    }

    #[inline]
    pub fn device_id(&self) -> u32 {
        (self.lns_device_ttl.get() >> 8) & MAX_DEVICE_ID
    }
}

/// What one hop reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HopRepr {
    /// Local name space (4 bits).
    pub lns: u8,
    /// 20 bits.
    pub device_id: u32,
    pub ip_ttl: u8,
    pub egress_port_speed: PortSpeed,
    /// 2 bits.
    pub congestion: u8,
    /// 6 bits.
    pub queue_id: u8,
    /// The low 20 bits of the RX timestamp's seconds.
    pub rx_seconds: u32,
    pub egress_system_port: u16,
    pub ingress_system_port: u16,
    pub rx_nanoseconds: u32,
    pub residence_ns: u32,
    pub opaque: [u32; 3],
}

impl HopRepr {
    /// Reads one 32-byte hop; refuses only a hop cut short.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let (hop, _) = Lns1Hop::ref_from_prefix(bytes)
            .map_err(|_| ParseError::truncated(Layer::IfaStack, 0, HOP_LEN, bytes.len()))?;
        let first = hop.lns_device_ttl.get();
        let second = hop.port_queue_seconds.get();
        let [o0, o1, o2] = hop.opaque;
        Ok(HopRepr {
            lns: hop.lns(),
            device_id: hop.device_id(),
            ip_ttl: first as u8,
            egress_port_speed: PortSpeed::from_code((second >> 28) as u8),
            congestion: ((second >> 26) & 0x3) as u8,
            queue_id: ((second >> 20) & 0x3f) as u8,
            rx_seconds: second & MAX_RX_SECONDS,
            egress_system_port: hop.egress_system_port.get(),
            ingress_system_port: hop.ingress_system_port.get(),
            rx_nanoseconds: hop.rx_nanoseconds.get(),
            residence_ns: hop.residence_ns.get(),
            opaque: [o0.get(), o1.get(), o2.get()],
        })
    }

    /// Writes the 32 bytes; a field wider than its bits is refused.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let speed = self.egress_port_speed.code();
        for (value, max) in [
            (u32::from(self.lns), 0x0f),
            (self.device_id, MAX_DEVICE_ID),
            (u32::from(speed), 0x0f),
            (u32::from(self.congestion), 0x03),
            (u32::from(self.queue_id), 0x3f),
            (self.rx_seconds, MAX_RX_SECONDS),
        ] {
            if value > max {
                return Err(EmitError::Unrepresentable { layer: Layer::IfaStack, value: value as usize });
            }
        }
        let hop = Lns1Hop {
            lns_device_ttl: U32::new(
                (u32::from(self.lns) << 28) | (self.device_id << 8) | u32::from(self.ip_ttl),
            ),
            port_queue_seconds: U32::new(
                (u32::from(speed) << 28)
                    | (u32::from(self.congestion) << 26)
                    | (u32::from(self.queue_id) << 20)
                    | self.rx_seconds,
            ),
            egress_system_port: U16::new(self.egress_system_port),
            ingress_system_port: U16::new(self.ingress_system_port),
            rx_nanoseconds: U32::new(self.rx_nanoseconds),
            residence_ns: U32::new(self.residence_ns),
            opaque: self.opaque.map(U32::new),
        };
        hop.write_to_prefix(buf).map_err(|_| EmitError::no_room(Layer::IfaStack, HOP_LEN, buf.len()))?;
        Ok(HOP_LEN)
    }
}

impl HopRepr {
    /// This hop with the IP TTL (IPv4) or Hop Limit (IPv6) of the packet
    /// whose IP header `ip` locates in `frame`, as it arrived: what every
    /// IFA node writes in the field (int-node forwards without routing,
    /// so it does not lower it). 0 where the frame has no such byte.
    #[inline(always)]
    pub fn with_ttl(&self, frame: &[u8], ip: &IpLocation) -> HopRepr {
        let at = match ip.version {
            IpVersion::V4 => ip.l3 + 8,
            IpVersion::V6 => ip.l3 + 7,
        };
        HopRepr { ip_ttl: frame.get(at).copied().unwrap_or(0), ..*self }
    }
}

impl HopRepr {
    /// The RX time this hop wrote, in ns since the epoch, read near
    /// `near_ns` (a time after it: the reader's clock): the hop keeps the
    /// low 20 bits of the seconds (12 days), the reader's clock gives the
    /// rest, the latest such time not after `near_ns` plus a second of
    /// clocks that disagree.
    pub fn rx_ns(&self, near_ns: u64) -> u64 {
        const NS: u64 = 1_000_000_000;
        let wrap = u64::from(MAX_RX_SECONDS) + 1;
        let near = near_ns / NS + 1;
        let mut seconds = (near & !(wrap - 1)) | u64::from(self.rx_seconds);
        if seconds > near {
            seconds = seconds.saturating_sub(wrap);
        }
        seconds * NS + u64::from(self.rx_nanoseconds)
    }

    /// This hop in the shape every protocol's hop converts into (the sinks'
    /// hop rule and the collector read it): Device ID as the node id, the
    /// system ports as level 1 ports, residence time as hop latency, queue
    /// id with the congestion bits as the queue (IFA tells no occupancy),
    /// the RX time ([`HopRepr::rx_ns`] near `near_ns`) as the ingress
    /// time and it plus residence as the egress time.
    pub fn as_hop(&self, near_ns: u64) -> crate::hop::Hop {
        let ingress = self.rx_ns(near_ns);
        crate::hop::Hop {
            node_id: Some(self.device_id),
            l1_ingress_port: Some(self.ingress_system_port),
            l1_egress_port: Some(self.egress_system_port),
            hop_latency: Some(self.residence_ns),
            queue: Some((self.queue_id, u32::from(self.congestion))),
            ingress_timestamp: Some(ingress),
            egress_timestamp: Some(ingress + u64::from(self.residence_ns)),
            ..crate::hop::Hop::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scapy pull request 4235's `tri_md = IFAMd(lns=1, device_id=2850,
    /// ttl=63, speed=4, dport=25, sport=24)`: 2850 is 0xb22.
    const SCAPY_TRI_MD: [u8; 32] = [
        0x10, 0x0b, 0x22, 0x3f, // LNS 1, Device ID 0x00b22, TTL 63
        0x40, 0x00, 0x00, 0x00, // speed 4 (100G), the rest 0
        0x00, 0x19, 0x00, 0x18, // egress port 25, ingress port 24
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    /// Every field non-zero, each at its place in the figure.
    const EVERY_FIELD: [u8; 32] = [
        0x1a, 0xbc, 0xde, 0x40, // LNS 1, Device ID 0xabcde, TTL 64
        0x6e, 0xaf, 0x12, 0x34, // 0110 11 101010 0xf1234: 400G, congestion 3, queue 42
        0x01, 0x02, 0x03, 0x04, // egress 0x0102, ingress 0x0304
        0x05, 0x06, 0x07, 0x08, // RX ns
        0x09, 0x0a, 0x0b, 0x0c, // residence ns
        0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x33,
    ];

    fn every_field() -> HopRepr {
        HopRepr {
            lns: 1,
            device_id: 0xabcde,
            ip_ttl: 64,
            egress_port_speed: PortSpeed::G400,
            congestion: 3,
            queue_id: 42,
            rx_seconds: 0xf1234,
            egress_system_port: 0x0102,
            ingress_system_port: 0x0304,
            rx_nanoseconds: 0x0506_0708,
            residence_ns: 0x090a_0b0c,
            opaque: [0x1111_1111, 0x2222_2222, 0x3333_3333],
        }
    }

    #[test]
    fn golden_hops() {
        let tri = HopRepr {
            lns: 1,
            device_id: 2850,
            ip_ttl: 63,
            egress_port_speed: PortSpeed::G100,
            egress_system_port: 25,
            ingress_system_port: 24,
            ..HopRepr::default()
        };
        for (bytes, expected) in [(SCAPY_TRI_MD, tri), (EVERY_FIELD, every_field())] {
            assert_eq!(HopRepr::parse(&bytes), Ok(expected));
            let mut out = [0xa5; 32];
            assert_eq!(expected.emit(&mut out), Ok(32));
            assert_eq!(out, bytes);
        }
        let (hop, _) = Lns1Hop::ref_from_prefix(&EVERY_FIELD[..]).unwrap();
        assert_eq!((hop.lns(), hop.device_id()), (1, 0xabcde));
    }

    #[test]
    fn every_short_prefix_is_refused_as_truncated() {
        for len in 0..HOP_LEN {
            assert_eq!(
                HopRepr::parse(&EVERY_FIELD[..len]),
                Err(ParseError::Truncated { layer: Layer::IfaStack, offset: 0, needed: 32, available: len })
            );
            let mut out = vec![0xa5; len];
            assert!(matches!(every_field().emit(&mut out), Err(EmitError::NoRoom { .. })));
        }
    }

    #[test]
    fn fields_wider_than_their_bits_are_refused() {
        let mut out = [0; 32];
        for (hop, value) in [
            (HopRepr { lns: 16, ..every_field() }, 16),
            (HopRepr { device_id: 0x10_0000, ..every_field() }, 0x10_0000),
            (HopRepr { egress_port_speed: PortSpeed::Unknown(16), ..every_field() }, 16),
            (HopRepr { congestion: 4, ..every_field() }, 4),
            (HopRepr { queue_id: 64, ..every_field() }, 64),
            (HopRepr { rx_seconds: 0x10_0000, ..every_field() }, 0x10_0000),
        ] {
            assert_eq!(hop.emit(&mut out), Err(EmitError::Unrepresentable { layer: Layer::IfaStack, value }));
        }
    }

    #[test]
    fn speed_codes_round_trip() {
        for code in 0..16 {
            assert_eq!(PortSpeed::from_code(code).code(), code);
        }
        assert_eq!(PortSpeed::from_code(3).gbps(), Some(50));
        assert_eq!(PortSpeed::from_code(7), PortSpeed::Unknown(7));
        assert_eq!(PortSpeed::Unknown(7).gbps(), None);
    }

    /// The RX time comes back whole near the reader's clock, across the
    /// 20-bit seconds' wrap, and not after the reader's time.
    #[test]
    fn rx_time_is_read_near_the_readers_clock() {
        const NS: u64 = 1_000_000_000;
        let wrap = (u64::from(MAX_RX_SECONDS) + 1) * NS;
        for written in [5 * wrap + 7 * NS + 123, 6 * wrap - NS + 999, 6 * wrap + 3] {
            let hop = HopRepr {
                rx_seconds: ((written / NS) & u64::from(MAX_RX_SECONDS)) as u32,
                rx_nanoseconds: (written % NS) as u32,
                ..HopRepr::default()
            };
            for later in [0, 1, 2 * NS, 3600 * NS] {
                assert_eq!(hop.rx_ns(written + later), written, "{written} read {later} ns later");
            }
            let hop = hop.as_hop(written + NS);
            assert_eq!(hop.ingress_timestamp, Some(written));
        }
    }
}
