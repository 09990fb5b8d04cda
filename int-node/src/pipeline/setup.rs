//! What a pipeline's stage is built from besides its domain, the same for
//! INT 0.5, INT 2.1 and IOAM: where it runs (its hop) and, for a sink,
//! where its reports go.

use crate::config::SinkSettings;
use crate::dpdk::mbuf::RxClock;
use crate::dpdk::port::{PortId, QueueId};
use crate::pipeline::export::ReportSender;

/// This node as one hop of a path.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    pub node_id: u32,
    /// The INT port numbers of the pipeline's RX and TX ports.
    pub rx_int_port: u16,
    pub tx_int_port: u16,
    /// The largest IP packet the TX port sends (its MTU).
    pub max_ip_len: u16,
    /// The RX timestamps the pipeline reads, where its clock is
    /// `rx-timestamp` and the driver gives them.
    pub rx_timestamps: Option<RxClock>,
    /// The pipeline's RX queue, whose depth a transit hop reports.
    pub rx_queue: Option<(PortId, QueueId)>,
}

/// A sink of any protocol: its settings, its hop and its reports' way
/// out.
pub struct SinkSetup {
    pub settings: SinkSettings,
    pub hop: Hop,
    pub reports: ReportSender,
}

/// Why a stage cannot be built from settings `check` accepted: what the
/// INT layer refuses of them.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Settings(&'static str),
    #[error("INT block: {0}")]
    Block(#[from] int_core::EmitError),
}
