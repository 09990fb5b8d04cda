//! Pipelines: one RX queue to one TX queue through a stage, run to
//! completion on a worker lcore, a burst at a time. The stage is chosen once
//! at start (an enum, no dynamic dispatch in the loop).

pub mod capture;
pub mod clones;
pub mod export;
pub mod factory;
pub mod frames;
pub mod generate;
pub mod hop_figures;
pub mod ifa;
#[cfg(feature = "lab")]
pub mod impair;
pub mod int05;
pub mod int21;
pub mod ioam;
pub mod rate_limit;
pub mod reference;
pub mod reload;
pub mod report;
pub mod setup;
pub mod sink_core;
pub mod sink_flow;
pub mod source_flow;
pub mod stage;
pub mod top_flows;
pub mod worker;

#[cfg(test)]
mod shared_mbufs;

pub use worker::{run_worker, Pipeline};
