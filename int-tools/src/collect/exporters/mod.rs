//! Where collect pushes what its books find: standard output (a line per
//! report, text or JSON), InfluxDB (`--influx`), IPFIX (`--ipfix`) and a
//! NATS JetStream stream (`--nats`). Another (Kafka) is one more folder
//! here implementing [`Exporter`] and [`Counted`], started in
//! [`super::start_exporters`]; the receivers and the books do not change.
//!
//! The books hand what they find to every exporter and never wait on
//! one: each exporter queues (IPFIX: each reader adds up an interval of
//! its own), writes on a thread of its own, and counts what it could not
//! write.

pub(super) mod influx;
pub mod ipfix;
pub(super) mod nats;
pub(super) mod stdout;

use std::sync::Arc;

use crate::collect::books::export::Exporter;
use crate::collect::counts::Counted;

/// A started exporter: the books' handle, its counts, its writer. The
/// writer ends, after writing what is queued, once every handle is gone.
pub struct Running {
    pub exporter: Arc<dyn Exporter>,
    pub counted: Arc<dyn Counted>,
    pub thread: std::thread::JoinHandle<()>,
}
