//! The sinks' and sources' reports, in the Telemetry Report format each
//! speaks, belonging to no protocol: TR 0.5 (Host-INT's forms) for INT
//! 0.5, TR 2.0 for INT 2.1 and IOAM; and IPFIX for IFA's terminator, as
//! Broadcom's terminators export it (`ifa_ipfix`).

pub mod ifa_ipfix;
pub mod tr05;
pub mod tr20;

/// int-node's Domain Specific ID ("ID"): an INT 2.1 domain's, unless the
/// config names one, and that of the IOAM sink's TR 2.0 loss reports (IOAM
/// has none of its own). Kept in this room, which imports nothing, so that
/// the config reads it without a path back to the pipeline's types.
pub const NODE_DOMAIN_ID: u16 = 0x4944;
