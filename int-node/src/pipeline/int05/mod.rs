//! The INT 0.5 stages: Host-INT's dialect and the INT 0.5 of the
//! specification, over TCP/UDP.

pub mod sink;
pub mod source;
pub mod transit;

/// An INT 0.5 pipeline's stage, by role.
pub enum Int05 {
    Source(Box<source::Source05Stage>),
    Transit(Box<transit::Transit05Stage>),
    Sink(Box<sink::Sink05Stage>),
}
