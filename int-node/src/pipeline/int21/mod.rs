//! The INT 2.1 stages: INT-MD and INT-MX over TCP/UDP and in tunnels, and
//! INT-XD postcards, with Telemetry Report 2.0.

pub mod postcard;
pub mod sink;
pub mod source;
pub mod transit;

/// An INT 2.1 pipeline's stage, by role (the postcard node: INT-XD).
pub enum Int21 {
    Source(Box<source::Source21Stage>),
    Transit(Box<transit::Transit21Stage>),
    Sink(Box<sink::Sink21Stage>),
    Postcard(Box<postcard::PostcardStage>),
}
