//! The INT 2.1 stages: INT-MD and INT-MX over TCP/UDP and in tunnels, and
//! INT-XD postcards, with Telemetry Report 2.0.

pub mod clones;
pub mod postcard;
pub mod report;
pub mod sink;
pub mod source;
pub mod transit;
