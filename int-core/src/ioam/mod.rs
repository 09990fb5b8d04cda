//! IOAM, the IETF's in-situ OAM (RFC 9197 data fields, RFC 9486 in IPv6
//! options), beside INT: [`trace`] the Pre-allocated and Incremental
//! Trace header, [`node`] a node's data element, [`e2e`] the Edge-to-Edge
//! option (a packet number for loss), [`ipv6`] both in IPv6 options (find,
//! fill a slot, read every node, emit); the three nodes' work by role,
//! as INT 2.1's, with INT's verbs: [`source`] the encapsulating node
//! (`source::insert`), [`transit`] a transit node (`transit::push`),
//! [`sink`] the decapsulating node (`sink::find` where a trace lies,
//! `sink::strip` returning the bytes removed as INT's `strip` does).
//!
//! The texts are the last drafts before publication
//! (`../shared/specs/ioam-*`); where they leave a value to IANA, the RFC's
//! value is used and its module says so.

pub mod e2e;
pub mod fast_sink;
pub mod fast_source;
pub mod fast_transit;
pub mod ipv6;
pub mod node;
pub mod sink;
pub mod source;
pub mod time;
pub mod trace;
pub mod transit;

#[cfg(test)]
mod tests;

pub use time::TimestampFormat;

use e2e::E2eType;
use trace::TraceType;

/// An IOAM domain as its nodes share it: the namespace they fill, what
/// each node writes, and how many slots the encapsulating node allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Domain {
    pub namespace: u16,
    pub trace_type: TraceType,
    /// Slots, the encapsulating node's included.
    pub nodes: u8,
    pub timestamps: TimestampFormat,
    /// What the encapsulating node's Edge-to-Edge option carries; empty:
    /// no such option.
    pub e2e: E2eType,
}

/// The trace type's bits 0-11 by the names a configuration gives them.
pub const FIELD_NAMES: [(&str, TraceType); 12] = [
    ("hop_limit_node_id", TraceType::HOP_LIM_NODE_ID),
    ("interfaces", TraceType::INTERFACES),
    ("timestamp_seconds", TraceType::TIMESTAMP_SECONDS),
    ("timestamp_fraction", TraceType::TIMESTAMP_FRACTION),
    ("transit_delay", TraceType::TRANSIT_DELAY),
    ("namespace_data", TraceType::NAMESPACE_DATA),
    ("queue_depth", TraceType::QUEUE_DEPTH),
    ("checksum_complement", TraceType::CHECKSUM_COMPLEMENT),
    ("hop_limit_node_id_wide", TraceType::HOP_LIM_NODE_ID_WIDE),
    ("interfaces_wide", TraceType::INTERFACES_WIDE),
    ("namespace_data_wide", TraceType::NAMESPACE_DATA_WIDE),
    ("buffer_occupancy", TraceType::BUFFER_OCCUPANCY),
];
