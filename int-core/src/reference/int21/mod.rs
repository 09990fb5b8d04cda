//! The INT 2.1 reference stages: a DSCP-marked INT-MD domain.

mod sink;
mod source;

pub use sink::{Sink21, Sink21Flow};
pub use source::Source21;
