//! Where collect's reports come in, each reader writing into its own
//! [`Books`](crate::collect::books::Books): UDP sockets read in batches
//! (`udp`) and the readers of each report version: Host-INT's and INT
//! 0.5's (`hostint`), Telemetry Report 0.5 (`tr05`) and 2.0 (`tr20`); or,
//! for an aggregator, a NATS JetStream stream (`nats`) of the receiving
//! collectors' batches of datagrams or their JSON records (`records`).
//! IFA terminators' IPFIX (`ipfix`, `--listen-ipfix`) is one more reader
//! writing into the books; the books, exporters and views do not change.

pub mod args;
pub(super) mod hostint;
pub mod ipfix;
pub mod nats;
pub mod partitions;
pub mod records;
pub(super) mod tr05;
pub(super) mod tr20;
pub mod udp;

use int_core::report::SinkIdWord;

/// How datagrams are read: what the reports' senders leave implicit.
pub struct How {
    pub sink_id: SinkIdWord,
    pub int21_domain: int_core::int21::Domain,
    pub ioam_timestamps: int_core::ioam::TimestampFormat,
    /// The IFA zone whose packets an IFA terminator's TR 2.0 reports carry.
    pub ifa_domain: int_core::ifa::Domain,
}
