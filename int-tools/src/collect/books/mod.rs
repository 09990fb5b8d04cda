//! What collect books of the reports it takes, one [`Books`] per reader:
//! per flow a ledger (latency distributions, packets lost, a timeline),
//! per sender its report gaps, per hop, link and path a view, postcards
//! joined into packets; and what the books hand on ([`export`]). The
//! books import no receiver, exporter or view: receivers write into them,
//! views read copies of them ([`snapshot`]), exporters take what they hand
//! on (tools/module-graph holds this).

pub mod args;
pub mod congestion;
pub mod datagram;
pub mod export;
pub mod hops;
pub mod join;
pub mod latency;
pub mod ledger;
pub mod moves;
pub mod sender;
mod sketch;
pub mod snapshot;
pub mod timeline;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use congestion::figure::Carrier;
use congestion::{Packet, When};
use export::{Datagrams, Exporter};
use int_core::hop::Hop;
use ledger::{Ledger, Limits, Measure, Observed};
use sender::Sender;

use crate::collect::names::Naming;
use crate::records::Record;

/// What the collector received, refused and missed.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub received: u64,
    /// Reports received: a Telemetry Report 2.0 datagram may hold several.
    pub reports: u64,
    /// Refused reports by reason (the parser's error kind and layer).
    pub malformed: BTreeMap<String, u64>,
    /// Datagrams the kernel dropped for want of buffer room.
    pub kernel_drops: u64,
}

impl Totals {
    pub fn malformed(&self) -> u64 {
        self.malformed.values().sum()
    }
}

/// One receiving socket's books.
pub struct Books {
    pub ledger: Ledger,
    /// Every hop's story: nodes, links, paths (INT 2.1 reports).
    pub hops: hops::Hops,
    pub senders: BTreeMap<SocketAddr, Sender>,
    pub totals: Totals,
    /// INT-MX and INT-XD postcards waiting for the rest of their packet's.
    pub join: join::Join,
    /// Standard output, InfluxDB, IPFIX, a NATS stream: what the books
    /// hand findings to.
    pub exporters: Vec<Arc<dyn Exporter>>,
    /// The stream's batch format: this reader's datagrams as they came.
    pub datagrams: Option<Box<dyn Datagrams>>,
    /// What the records call each node.
    pub names: Naming,
    /// Every queue's figures and congestion episodes.
    pub congestion: congestion::Congestion,
    /// Room for a report's path as it is read: taken and given back, so
    /// that reading a report allocates nothing once the room has grown.
    pub path_room: Vec<Hop>,
}

/// What the books keep at most: `--max-flows`, `--detailed-flows`,
/// `--max-nodes`, `--max-links`.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub flows: usize,
    pub detailed_flows: usize,
    pub nodes: usize,
    pub links: usize,
}

impl Books {
    pub fn new(
        sizes: Sizes,
        join: join::Join,
        exporters: Vec<Arc<dyn Exporter>>,
        base: Arc<timeline::TimeBase>,
        names: Naming,
    ) -> Books {
        let limits = Limits { flows: sizes.flows, detailed: sizes.detailed_flows };
        let hop_limits = hops::Limits { nodes: sizes.nodes, links: sizes.links, flows: sizes.flows };
        Books {
            ledger: Ledger::new(limits, base),
            hops: hops::Hops::new(hop_limits),
            senders: BTreeMap::new(),
            totals: Totals::default(),
            join,
            exporters,
            datagrams: None,
            names,
            congestion: congestion::Congestion::default(),
            path_room: Vec::new(),
        }
    }

    /// Empty books of at most `sizes`, with the join's defaults and no
    /// exporters (for tests and fuzz targets).
    pub fn bounded(sizes: Sizes) -> Books {
        Books::new(
            sizes,
            join::Join::new(1000, Vec::new(), 32),
            Vec::new(),
            Default::default(),
            Naming::default(),
        )
    }

    /// A record: built only when an exporter (standard output, the
    /// stream's JSON) takes records.
    pub fn emit(&self, record: impl FnOnce() -> Record) {
        if !self.exporters.iter().any(|e| e.wants_records()) {
            return;
        }
        let mut record = record();
        self.names.annotate(&mut record);
        for exporter in self.exporters.iter().filter(|e| e.wants_records()) {
            exporter.record(&record);
        }
    }

    /// A record read back off the stream (an aggregator's), with this
    /// collector's names, to the exporters that say it again.
    pub fn read_back(&self, mut record: Record) {
        self.names.annotate(&mut record);
        for exporter in &self.exporters {
            exporter.read_back(&record);
        }
    }

    /// The batch taken next arrived at `at_ns`, ns since the epoch.
    pub fn arrived(&mut self, at_ns: u64) {
        for exporter in &self.exporters {
            exporter.arrived(at_ns);
        }
    }

    pub fn observe(&mut self, observed: &Observed) {
        self.ledger.observe(observed);
        let lost = match observed.measure {
            Measure::Lost(count) => count,
            Measure::Latency { ns, .. } => {
                self.congestion.latency(&observed.flow, ns);
                0
            }
        };
        self.hops.observe_sink(&observed.flow, observed.sink_node, lost);
        for exporter in &self.exporters {
            exporter.observed(observed);
        }
    }

    /// A datagram refused for `error`: said by the exporters that say so
    /// (standard output).
    pub fn refused(&self, arrival: &datagram::Arrival, error: &str, len: Option<usize>) {
        for exporter in &self.exporters {
            exporter.refused(arrival, error, len);
        }
    }

    /// A drop report of `node` for `reason`: into the per-hop view and the
    /// exporters.
    pub fn observe_drop(&mut self, node: u32, reason: u8) {
        self.hops.observe_drop(node, reason);
        for exporter in &self.exporters {
            exporter.drop_reported(node, reason);
        }
    }

    /// A report's queue figures (its hops) and the packet that crossed
    /// those queues: into the congestion books; the episodes they close
    /// are handed on as records.
    pub fn observe_queues(&mut self, hops: &[Hop], carrier: Carrier, when: When, packet: Option<&Packet>) {
        self.congestion.hops(hops, carrier, when, packet);
        self.hand_on_episodes();
    }

    /// An INT 0.5 or Host-INT stack's queue figures.
    pub fn observe_int05_queues(
        &mut self,
        hops: impl Iterator<Item = int_core::int05::HopMetadata>,
        when: When,
        packet: Option<&Packet>,
    ) {
        self.congestion.int05_hops(hops, when, packet);
        self.hand_on_episodes();
    }

    fn hand_on_episodes(&mut self) {
        if !self.congestion.has_closed() {
            return;
        }
        for episode in self.congestion.take_closed() {
            self.emit(|| congestion::record::record(&episode).into());
        }
    }

    /// A report's hops and path: into the per-hop view and the exporters;
    /// returns the flow's path change, if any.
    pub fn observe_path(&mut self, seen: &hops::Seen<'_>) -> Option<hops::PathChange> {
        let change = self.hops.observe(seen);
        for exporter in &self.exporters {
            exporter.hops(seen);
            if let Some(change) = &change {
                exporter.path_change(change);
            }
        }
        change
    }

    /// A packet's postcards put together: its nodes' figures, and where
    /// their order can be told, its links and path; handed on as a
    /// `joined` record, and a path change as for a stack.
    pub fn observe_joined(&mut self, joined: &join::Joined) {
        let (complete, change) = self.book_joined(joined);
        self.emit(|| join::record(joined, complete).into());
        if let Some(change) = change {
            self.emit(|| hops::path_change_record(&change, None).into());
        }
    }

    /// [`Books::observe_joined`] without its records (an aggregator reads
    /// them off the stream): whether the packet's path is whole, if its
    /// order could be told, and the flow's path change.
    pub fn book_joined(&mut self, joined: &join::Joined) -> (Option<bool>, Option<hops::PathChange>) {
        let seen = hops::Seen {
            flow: joined.flow,
            hops: &joined.hops,
            sink: None,
            sink_ingress_ns: None,
            at_ms: joined.at_ms,
        };
        // An order that cannot be told, or part of the flow's path: its
        // nodes' figures only.
        let fit = joined.ordered.then(|| self.join.fit(joined, self.hops.followed(&joined.flow)));
        let change = match fit {
            Some(join::Fit::Whole) => self.observe_path(&seen),
            Some(join::Fit::Confirmed) => {
                let change = self.observe_path(&seen);
                self.hops.settle(&joined.flow);
                change
            }
            // The path its first packets gave lacked a node: replaced, no
            // path change.
            Some(join::Fit::Grown) => {
                self.hops.forget_path(&joined.flow);
                self.observe_path(&seen)
            }
            Some(join::Fit::Part) | None => {
                self.hops.observe_nodes(&seen);
                None
            }
        };
        (fit.map(|fit| fit != join::Fit::Part), change)
    }

    /// The groups of postcards the collector's clock, at `now_ms`, has
    /// closed, joined: the reports may have stopped.
    pub fn close_passed_joins(&mut self, now_ms: u64) {
        for joined in self.join.tick(now_ms) {
            self.observe_joined(&joined);
        }
    }

    /// Every postcard still waiting, joined (collect is stopping).
    pub fn close_joins(&mut self) {
        for joined in self.join.close_all() {
            self.observe_joined(&joined);
        }
    }

    /// Each sender's report sequence.
    pub fn sender(&mut self, from: SocketAddr) -> &mut Sender {
        self.senders.entry(from).or_default()
    }
}
