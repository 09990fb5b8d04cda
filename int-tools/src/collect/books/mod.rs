//! What collect books of the reports it takes: per flow a ledger
//! (latency distributions, packets lost, a timeline), per sender its
//! report gaps, per hop, link and path a view, postcards joined into
//! packets, and the summary made of them.

pub(super) mod hops;
pub mod join;
pub(super) mod latency;
pub(super) mod ledger;
pub(super) mod moves;
pub mod sender;
mod sketch;
pub(super) mod summary;
pub(super) mod timeline;
