//! Queue figures in one shape, whatever protocol carried them: one
//! [`Figure`] per (node, queue) observation, its occupancy in the unit the
//! node wrote it ([`Unit`], said, never converted), its hop latency, and
//! whether the report raised the sink's congested-queue flag.
//!
//! Where each protocol's figure comes from (docs/congestion.md has the
//! table):
//! - INT 2.1 hop (MD stack, postcard): queue id (8 bits) and occupancy
//!   (24 bits), hop latency; the unit is the node's (the spec allows
//!   bytes, cells or packets): unknown unless `--congestion-unit` says.
//! - INT 0.5 / Host-INT stack hop: occupancy (no queue id: queue 0), hop
//!   latency; unit the node's, as above.
//! - IOAM trace, bit 6 (queue depth): RFC 9197 says "memory buffers";
//!   Linux, the writer a lab has, writes the egress qdisc's backlog in
//!   bytes: bytes unless `--congestion-unit` says otherwise. No queue id
//!   (queue 0).
//! - IFA 2.0 hop (a terminator's TR 2.0 report with the packet): queue id
//!   (6 bits) and congestion (2 bits, the switch's own level: no count of
//!   anything) as the occupancy, residence time as hop latency: unit
//!   unknown unless `--congestion-unit` says.
//! - Telemetry Report 2.0 / 0.5 Q flag: the sink's "congestion on a
//!   monitored queue", counted per reporting node as a queue alert.

use int_core::hop::Hop;
use int_core::int05::HopMetadata as Int05Hop;

/// What a queue's occupancy counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Bytes,
    Cells,
    Packets,
    /// The node did not say and no `--congestion-unit` names it.
    #[default]
    Unknown,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Cells => "cells",
            Unit::Packets => "packets",
            Unit::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Unit> {
        [Unit::Bytes, Unit::Cells, Unit::Packets, Unit::Unknown].into_iter().find(|unit| unit.name() == text)
    }
}

/// Which protocol's hop a figure was read from: it sets the default unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// INT 2.1 MD stacks and postcards (MX, XD).
    Int21,
    /// INT 0.5 and Host-INT stacks.
    Int05,
    /// IOAM traces (queue depth, bit 6).
    Ioam,
    /// IFA 2.0 stacks (queue id and 2-bit congestion).
    Ifa,
}

impl Carrier {
    /// The unit a node writes when no `--congestion-unit` names it.
    pub fn default_unit(self) -> Unit {
        match self {
            Carrier::Int21 | Carrier::Int05 | Carrier::Ifa => Unit::Unknown,
            Carrier::Ioam => Unit::Bytes,
        }
    }
}

/// A queue: the node and its queue id (0 where the protocol has none).
pub type QueueKey = (u32, u8);

/// One observation of one queue, as one hop of one report wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    pub node: u32,
    pub queue: u8,
    /// Occupancy in `unit`; `None` where the hop wrote none.
    pub occupancy: Option<u32>,
    pub unit: Unit,
    /// The hop's latency as the node wrote it (ns for int-node, Linux
    /// IOAM's transit delay and most switches).
    pub hop_latency: Option<u32>,
    /// When, ns since the epoch (see [`Congestion::hops`](super::Congestion::hops)).
    pub at_ns: u64,
}

impl Figure {
    pub fn key(&self) -> QueueKey {
        (self.node, self.queue)
    }

    /// An INT 2.1, IOAM or IFA hop's figure, if it names its node and carries
    /// an occupancy or a hop latency.
    pub fn of_hop(hop: &Hop, carrier: Carrier, at_ns: u64) -> Option<Figure> {
        let node = hop.node_id?;
        if hop.queue.is_none() && hop.hop_latency.is_none() {
            return None;
        }
        let (queue, occupancy) = match hop.queue {
            Some((queue, occupancy)) => (queue, Some(occupancy)),
            None => (0, None),
        };
        let unit = carrier.default_unit();
        Some(Figure { node, queue, occupancy, unit, hop_latency: hop.hop_latency, at_ns })
    }

    /// An INT 0.5 or Host-INT hop's figure (no queue id: queue 0).
    pub fn of_int05(hop: &Int05Hop, at_ns: u64) -> Option<Figure> {
        let node = hop.switch_id?;
        if hop.queue_occupancy.is_none() && hop.hop_latency.is_none() {
            return None;
        }
        let unit = Carrier::Int05.default_unit();
        let (occupancy, hop_latency) = (hop.queue_occupancy, hop.hop_latency);
        Some(Figure { node, queue: 0, occupancy, unit, hop_latency, at_ns })
    }
}

/// The bytes of the packet a report carries, from its IP header's length
/// field (a report truncates the packet, never the header's figure):
/// what a report's packet weighs in its queue's episode. `None`: no IP
/// header whole.
pub fn ip_length(packet: &[u8]) -> Option<u32> {
    let word = |at: usize| Some(u32::from(u16::from_be_bytes(packet.get(at..at + 2)?.try_into().ok()?)));
    match packet.first()? >> 4 {
        4 if packet.len() >= 20 => word(2),
        6 if packet.len() >= 40 => word(4).map(|payload| payload + 40),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every carrier's hop gives one shape; the unit is the carrier's
    /// default and said, the queue id kept where the protocol has one.
    #[test]
    fn every_protocol_gives_one_shape() {
        let hop = Hop { node_id: Some(7), queue: Some((3, 900)), hop_latency: Some(40), ..Hop::default() };
        let int21 = Figure::of_hop(&hop, Carrier::Int21, 5).unwrap();
        assert_eq!(
            (int21.key(), int21.occupancy, int21.unit, int21.hop_latency),
            ((7, 3), Some(900), Unit::Unknown, Some(40))
        );
        let ioam = Hop { queue: Some((0, 1500)), ..hop };
        assert_eq!(Figure::of_hop(&ioam, Carrier::Ioam, 5).unwrap().unit, Unit::Bytes);
        let int05 = Int05Hop { switch_id: Some(2), queue_occupancy: Some(12), ..Int05Hop::default() };
        let figure = Figure::of_int05(&int05, 9).unwrap();
        assert_eq!(
            (figure.key(), figure.occupancy, figure.hop_latency, figure.at_ns),
            ((2, 0), Some(12), None, 9)
        );
        // A hop without its node, or with neither figure, is no figure.
        assert_eq!(Figure::of_hop(&Hop { node_id: None, ..hop }, Carrier::Int21, 5), None);
        assert_eq!(Figure::of_hop(&Hop { node_id: Some(1), ..Hop::default() }, Carrier::Int21, 5), None);
    }

    #[test]
    fn units_read_back_by_name() {
        for unit in [Unit::Bytes, Unit::Cells, Unit::Packets, Unit::Unknown] {
            assert_eq!(Unit::parse(unit.name()), Some(unit));
        }
        assert_eq!(Unit::parse("kb"), None);
    }

    #[test]
    fn a_packet_weighs_its_ip_length() {
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        v4[2..4].copy_from_slice(&1400u16.to_be_bytes());
        assert_eq!(ip_length(&v4), Some(1400));
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(ip_length(&v6), Some(140));
        assert_eq!(ip_length(&v4[..10]), None);
        assert_eq!(ip_length(&[]), None);
    }
}
