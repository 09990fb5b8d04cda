//! Reference stages: the least work an INT 0.5 source, transit hop and sink
//! can do for the benchmark's frame (Ethernet without VLAN tags, IPv4
//! without options, not fragmented, UDP or TCP without options, Host-INT's
//! dialect: DSCP marking, shim Type 3, instructions 0xCC00, a zero tail).
//! Fixed offsets, fixed-size loads and stores, no checks beyond that shape,
//! no watchlist, no edge guard, no ageing and no reports.
//!
//! For INT 2.1 the source and sink of a DSCP-marked INT-MD domain have
//! references of the same kind (IPv4 frames of the same shape).
//!
//! They are the benchmark's yardstick, not a product: each real stage's work
//! per packet is given as a multiple of its reference's, measured on the
//! same host in the same run, so that the figure moves with the code and
//! not with the host. For every frame they take they write the same bytes
//! as the real stage (`tests/reference05.rs`, `tests/reference21.rs`);
//! every other frame they leave alone.

pub mod int05;
pub mod int21;
mod table;

pub use int05::{Sink, SinkFlow, Source, Transit};
pub use int21::{Sink21, Sink21Flow, Source21};
pub use table::FlowSlots;

/// The shim and the metadata header.
const BLOCK_HEAD_LEN: usize = 12;
/// Host-INT's hop: switch id, port ids, ingress and egress timestamps.
const HOP_LEN: usize = 16;
/// Host-INT's instruction bitmap for that hop.
const HOST_INT_BITMAP: [u8; 2] = [0xcc, 0x00];

/// The flow's two words as one key.
#[inline(always)]
fn key(frame: &crate::fast::FastFrame) -> [u64; 2] {
    [frame.flow.addresses, frame.flow.rest]
}
