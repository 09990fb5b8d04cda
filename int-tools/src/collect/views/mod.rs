//! What reads the books, each on its own thread or at its own time, from
//! copies ([`Snapshot`](crate::collect::books::snapshot::Snapshot)) or a
//! brief lock per reader: the summary at an interval and at exit
//! (`summary`, its congestion section in `congestion`), the Prometheus page (`metrics`), the plot (`plot`), the
//! web view (`web`), and the readiness they share (`health`). A view
//! never writes the books and never slows a receiver beyond its lock.

pub mod congestion;
pub mod health;
pub mod metrics;
pub mod plot;
pub mod summary;
pub mod web;
