//! The sinks' and sources' reports, in the Telemetry Report format each
//! speaks, belonging to no protocol: TR 0.5 (Host-INT's forms) for INT
//! 0.5, TR 2.0 for INT 2.1 and IOAM.

pub mod tr05;
pub mod tr20;
