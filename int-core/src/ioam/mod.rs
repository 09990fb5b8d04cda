//! IOAM, the IETF's in-situ OAM (RFC 9197 data fields, RFC 9486 in IPv6
//! options), beside INT: [`trace`] the Pre-allocated and Incremental
//! Trace header, [`node`] a node's data element, [`ipv6`] the trace in an
//! IPv6 Hop-by-Hop option (find, fill a slot, read every node, emit).
//!
//! The texts are the last drafts before publication
//! (`../shared/specs/ioam-*`); where they leave a value to IANA, the RFC's
//! value is used and its module says so.

pub mod ipv6;
pub mod node;
pub mod trace;
