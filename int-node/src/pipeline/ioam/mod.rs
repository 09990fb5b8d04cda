//! The stages of an IOAM domain (RFC 9197's Pre-allocated Trace in IPv6
//! Hop-by-Hop options), as the INT versions have theirs: the encapsulating
//! node ([`source`]), a transit node ([`transit`]) and the decapsulating
//! node ([`sink`]), over int-core's [`int_core::ioam`] by role; the
//! element the first two write for this node ([`element`]).

pub mod element;
pub mod sink;
pub mod source;
pub mod transit;

/// An IOAM pipeline's stage, by role in RFC 9197's words: the
/// encapsulating node (role `source`), a transit node, the decapsulating
/// node (role `sink`).
pub enum Ioam {
    Encap(Box<source::IoamSourceStage>),
    Transit(Box<transit::IoamTransitStage>),
    Decap(Box<sink::IoamSinkStage>),
}
