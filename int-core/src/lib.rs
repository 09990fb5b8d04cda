//! int-core: everything an INT 0.5 source, transit hop, sink and collector
//! do to bytes, without DPDK.
//!
//! - [`wire`]: Ethernet (802.1Q), IPv4, TCP, UDP headers.
//! - [`int05`]: INT 0.5 shim, metadata header, instruction bitmap, hop
//!   metadata, tail (INT over TCP/UDP, and Host-INT's shim Type 3).
//! - [`int21`]: INT 2.1 over TCP/UDP: shim with NPT, INT-MD header and
//!   stack, INT-MX header.
//! - [`report`]: Telemetry Report 0.5 headers and Host-INT's latency and
//!   Drop-Summary reports.
//! - [`source`], [`transit`], [`sink`]: the packet transforms, in place over a
//!   [`FrameBuf`] with headroom.
//! - [`flow`], [`loss`], [`latency`], [`ticks`]: the sink's per-flow logic.
//!
//! No function here panics on packet bytes: every malformed input is a
//! [`ParseError`] that names the layer, the offset and the value.

#![forbid(unsafe_code)]

mod bytes;
mod carrier;
pub mod checksum;
pub mod craft;
pub mod encap;
pub mod error;
pub mod fast;
pub mod flow;
pub mod frame;
pub mod generate;
pub mod int05;
pub mod int21;
pub mod latency;
pub mod locate;
pub mod loss;
pub mod names;
pub mod reference;
pub mod report;
pub mod skip;
pub mod ticks;
pub mod wire;

pub use error::{DropReason, EmitError, Layer, ParseError};
pub use frame::FrameBuf;
