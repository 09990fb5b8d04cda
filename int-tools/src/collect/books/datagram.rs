//! A datagram as a reader took it: what came (its bytes, sender, arrival)
//! and what it was (its reports, its sender's accounting, its kind): what
//! the stream's batches carry, and what an aggregator reads back.

use std::net::SocketAddr;

use int_core::flow::FlowKey;

use super::sender::Accounting;
use crate::records::Record;

/// What a datagram was, for the subject its batch goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Refused = 0,
    Tr20 = 1,
    Latency = 2,
    Tr05 = 3,
}

impl Kind {
    /// The subject's word.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Refused => "refused",
            Kind::Tr20 => "tr20",
            Kind::Latency => "hostint",
            Kind::Tr05 => "tr05",
        }
    }

    pub fn of(byte: u8) -> Option<Kind> {
        [Kind::Refused, Kind::Tr20, Kind::Latency, Kind::Tr05].into_iter().find(|k| *k as u8 == byte)
    }
}

/// What one datagram was: the reports it counts for, what its sender's
/// accounting found, its kind and reporting node (the stream's subject).
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    pub reports: u64,
    pub accounting: Accounting,
    pub kind: Kind,
    pub node: u32,
    /// The flow of its (first) report, where one is read: the stream's
    /// partition (`nats::partition`).
    pub flow: Option<FlowKey>,
}

impl Taken {
    /// A refused datagram: one report, no kind, node or flow.
    pub fn refused() -> Taken {
        Taken { reports: 1, accounting: Accounting::default(), kind: Kind::Refused, node: 0, flow: None }
    }
}

/// A datagram as it came: its bytes, sender, whether the kernel cut it.
#[derive(Debug, Clone, Copy)]
pub struct Came<'a> {
    pub payload: &'a [u8],
    pub from: SocketAddr,
    pub truncated: bool,
    pub at_ns: u64,
}

/// Where and when a report arrived, and how many of its sender's reports
/// went missing just before it.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub from: SocketAddr,
    pub at_ns: u64,
    pub missing: u32,
}

impl Arrival {
    /// The record, then where and when it arrived.
    pub fn record(&self, record: impl Into<Record>) -> Record {
        let mut record = record.into();
        record.arrived(self.from.to_string(), self.at_ns, self.missing);
        record
    }
}
