//! The stages of an IFA 2.0 zone (draft-kumar-ippm-ifa-08), as the other
//! protocols have theirs: the initiator ([`source`]), a transit node
//! ([`transit`]) and the terminator ([`sink`]), over int-core's
//! [`int_core::ifa`] by role; the hop the first two write for this node
//! ([`hop`]).

pub mod hop;
pub mod sink;
pub mod source;
pub mod transit;

/// An IFA pipeline's stage, by role as the YAML names it: the source
/// (IFA's initiator), a transit node, the sink (the terminator).
pub enum Ifa {
    Source(Box<source::IfaSourceStage>),
    Transit(Box<transit::IfaTransitStage>),
    Sink(Box<sink::IfaSinkStage>),
}
