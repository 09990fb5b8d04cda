//! collect's IPFIX exporter (`--ipfix udp://HOST:PORT` or `tcp://...`,
//! RFC 7011): per export interval (`--ipfix-interval`) a data record per
//! flow, per hop, per link and per node's drop reason (docs/ipfix.md). The receivers only queue,
//! as for InfluxDB: a full queue costs counted drops, never a stall; the
//! figures are added up, and the messages written, on the exporter's own
//! thread.

mod exporter;
mod interval;
mod message;
mod templates;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use int_core::flow::FlowKey;
use int_core::int21::HopMetadata;

use super::metrics::counter_family;
use crate::collect::books::hops::{PathChange, Seen};
use crate::collect::books::ledger::Observed;
use crate::collect::outputs::{Counted, Output, Running};

/// The enterprise number our own elements are under by default: RFC
/// 5612's, for documentation and examples. The project has none of its
/// own; an operator with one gives it with `--ipfix-pen`.
pub const DEFAULT_PEN: u32 = 32473;

/// How messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: SocketAddr,
    pub transport: Transport,
    pub interval: Duration,
    pub domain: u32,
    pub pen: u32,
    /// Observations waiting at most; beyond, new ones are dropped and counted.
    pub buffer: usize,
    /// Flows, hops and links each kept per interval at most.
    pub limit: usize,
}

impl Settings {
    /// Reads `udp://HOST:PORT`, `tcp://HOST:PORT` or `HOST:PORT` (UDP).
    pub fn parse_target(target: &str) -> Result<(SocketAddr, Transport), TargetError> {
        let error = |cause| TargetError { target: target.to_string(), cause };
        let (transport, rest) = match target.split_once("://") {
            Some(("udp", rest)) => (Transport::Udp, rest),
            Some(("tcp", rest)) => (Transport::Tcp, rest),
            Some((other, _)) => return Err(error(TargetCause::Scheme(other.to_string()))),
            None => (Transport::Udp, target),
        };
        let server = rest
            .to_socket_addrs()
            .map_err(|e| error(TargetCause::Address(e)))?
            .next()
            .ok_or_else(|| error(TargetCause::NoAddress))?;
        Ok((server, transport))
    }
}

/// An `--ipfix` target the exporter cannot send to.
#[derive(Debug, thiserror::Error)]
#[error("--ipfix {target:?}: {cause}")]
pub struct TargetError {
    pub target: String,
    pub cause: TargetCause,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetCause {
    #[error("{0}:// is not spoken, udp:// or tcp://")]
    Scheme(String),
    #[error("{0}; give it as udp://HOST:PORT or tcp://HOST:PORT")]
    Address(std::io::Error),
    #[error("the host has no address")]
    NoAddress,
}

/// What the exporter did, shared with the summary.
#[derive(Debug, Default)]
pub struct Counts {
    pub messages: AtomicU64,
    /// Data records sent.
    pub records: AtomicU64,
    /// Template records sent (each template, each time).
    pub templates: AtomicU64,
    /// Observations the full queue refused.
    pub dropped: AtomicU64,
    /// Data records not sent: no connection, or the send failed.
    pub failed: AtomicU64,
    /// Flows, hops and links beyond an interval's limit.
    pub unrecorded: AtomicU64,
    pub connections: AtomicU64,
}

/// What the receivers hand over, with its arrival time.
enum Item {
    Observed(Observed),
    Hops { flow: FlowKey, sink: Option<u32>, sink_ingress_ns: Option<u64>, hops: Vec<HopMetadata> },
    PathChange(FlowKey),
    Drop { node: u32, reason: u8 },
}

/// The receivers' end.
#[derive(Clone)]
pub struct Queue {
    sender: SyncSender<(Item, u64)>,
    counts: Arc<Counts>,
}

impl Output for Queue {
    fn observed(&self, observed: &Observed) {
        self.send(Item::Observed(*observed));
    }

    fn hops(&self, seen: &Seen<'_>) {
        let (flow, sink, sink_ingress_ns) = (seen.flow, seen.sink, seen.sink_ingress_ns);
        self.send(Item::Hops { flow, sink, sink_ingress_ns, hops: seen.hops.to_vec() });
    }

    fn path_change(&self, change: &PathChange) {
        self.send(Item::PathChange(change.flow));
    }

    fn drop_reported(&self, node: u32, reason: u8) {
        self.send(Item::Drop { node, reason });
    }
}

impl Queue {
    fn send(&self, item: Item) {
        let now_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.sender.try_send((item, now_ns))
        {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("ipfix", "IPFIX records")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        vec![
            ("records", get(&self.records)),
            ("templates", get(&self.templates)),
            ("messages", get(&self.messages)),
            ("dropped", get(&self.dropped)),
            ("failed", get(&self.failed)),
            ("unrecorded", get(&self.unrecorded)),
            ("connections", get(&self.connections)),
        ]
    }

    fn metrics(&self, out: &mut String) {
        let counts = self.counts();
        let pick = |names: &[&str]| {
            counts.iter().filter(|(name, _)| names.contains(name)).copied().collect::<Vec<_>>()
        };
        counter_family(
            out,
            "int_collect_ipfix_records_total",
            "IPFIX data records by outcome (records: sent).",
            pick(&["records", "failed", "unrecorded"]).into_iter(),
        );
        counter_family(
            out,
            "int_collect_ipfix_observations_total",
            "Observations the IPFIX exporter's queue refused.",
            pick(&["dropped"]).into_iter(),
        );
    }
}

/// Starts the exporter's thread; it exports the last interval and ends
/// once every [`Queue`] is dropped.
pub fn start(settings: Settings) -> Running {
    let (sender, receiver) = mpsc::sync_channel(settings.buffer.max(1));
    let counts = Arc::new(Counts::default());
    let exporter = exporter::Exporter::new(settings, Arc::clone(&counts));
    let thread = std::thread::spawn(move || exporter.run(&receiver));
    Running { output: Arc::new(Queue { sender, counts: Arc::clone(&counts) }), counted: counts, thread }
}
