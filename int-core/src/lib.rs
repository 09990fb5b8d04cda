//! int-core: everything an INT source, transit hop, sink and collector do
//! to bytes, in INT 0.5 (with Host-INT's dialect) and INT 2.1, without DPDK.
//!
//! By version:
//! - [`int05`]: INT 0.5's headers (shim, metadata header, instructions, hop
//!   metadata, tail) and its transforms: [`int05::source`],
//!   [`int05::transit`], [`int05::sink`].
//! - [`int21`]: INT 2.1's headers (shim, INT-MD and INT-MX headers, hop
//!   metadata, source-only metadata, tunnels) and its transforms, over
//!   TCP/UDP and in VXLAN-GPE and Geneve.
//! - [`ioam`]: IOAM (RFC 9197, RFC 9486): the Pre-allocated Trace in an
//!   IPv6 Hop-by-Hop option.
//! - [`report`]: Telemetry Report 0.5 (with Host-INT's latency and
//!   Drop-Summary reports) and 2.0.
//!
//! Shared by both versions:
//! - [`wire`]: Ethernet (802.1Q), IPv4, IPv6, TCP, UDP, VXLAN-GPE, Geneve.
//! - [`locate`]: the header walk every transform starts with; [`fast`]: the
//!   fast path's frame; `carrier` (crate-private): the header whose length
//!   and checksum cover the INT bytes; [`marking`]: how a packet announces
//!   INT (the DSCP mark, the place in a TCP segment).
//! - [`hop`]: the one hop every protocol's reading converts into.
//! - [`flow`], [`loss`], [`latency`], [`hop_rule`], [`ticks`]: a sink's
//!   per-flow logic;
//!   [`outcome`]: why a source or a transit hop leaves a packet alone.
//! - [`reference`](mod@reference): the benchmark's yardstick stages; [`craft`],
//!   [`generate`]: frames for tools, tests and the generator.
//!
//! - [`checksum`]: the RFC 1071 sum and RFC 1624 update; [`frame`]: a frame
//!   with headroom; [`error`]: why a packet is refused, with its drop
//!   reason; [`names`]: the words configs and command lines use for values.
//!
//! Transforms work in place over a [`FrameBuf`] with headroom. No function
//! here panics on packet bytes: every malformed input is a [`ParseError`]
//! that names the layer, the offset and the value.

#![forbid(unsafe_code)]

mod bytes;
mod carrier;
pub mod checksum;
pub mod craft;
pub mod error;
pub mod fast;
pub mod flow;
pub mod frame;
pub mod generate;
pub mod hop;
pub mod hop_rule;
pub mod ifa;
pub mod int05;
pub mod int21;
pub mod ioam;
pub mod latency;
pub mod locate;
pub mod loss;
pub mod marking;
pub mod names;
pub mod outcome;
pub mod reference;
pub mod report;
pub mod ticks;
pub mod wire;

pub use error::{DropReason, EmitError, Layer, ParseError};
pub use frame::FrameBuf;
