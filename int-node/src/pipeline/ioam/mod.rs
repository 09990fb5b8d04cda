//! The stages of an IOAM domain (RFC 9197's Pre-allocated Trace in IPv6
//! Hop-by-Hop options), as the INT versions have theirs: the encapsulating
//! node ([`source`]), a transit node ([`transit`]) and the decapsulating
//! node ([`sink`]), over int-core's [`int_core::ioam`] by role; the
//! element the first two write for this node ([`element`]).

pub mod element;
pub mod sink;
pub mod source;
pub mod transit;

/// An IOAM pipeline's stage, by role as the YAML names it: the source
/// (RFC 9197's encapsulating node), a transit node, the sink (the
/// decapsulating node).
pub enum Ioam {
    Source(Box<source::IoamSourceStage>),
    Transit(Box<transit::IoamTransitStage>),
    Sink(Box<sink::IoamSinkStage>),
}
