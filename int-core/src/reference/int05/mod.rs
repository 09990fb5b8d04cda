//! The INT 0.5 reference stages: Host-INT's dialect, DSCP marking.

mod sink;
mod source;
mod transit;

pub use sink::{Sink, SinkFlow};
pub use source::Source;
pub use transit::Transit;
