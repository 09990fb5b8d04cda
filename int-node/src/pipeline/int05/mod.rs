//! The INT 0.5 stages: Host-INT's dialect and the INT 0.5 of the
//! specification, over TCP/UDP.

pub mod report;
pub mod sink;
pub mod source;
pub mod transit;
