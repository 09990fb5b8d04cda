//! Each receiver's books ([`Books`]): its ledger, per-hop view, postcard
//! joins and report gaps per sender (kept in `books/`), and the outputs it
//! feeds each observation (`outputs/`). Here, not in `books/`, so that the
//! books never import the outputs that read them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::collect::books::ledger::{Ledger, Limits, Measure, Observed};
use crate::collect::books::sender::Sender;
use crate::collect::books::{hops, join, timeline};

use crate::collect::input::tr20;
use crate::collect::outputs::{ipfix, print, Output};
use crate::collect::{names, stream, Print};

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
    /// InfluxDB, a NATS stream: what the receivers hand findings to.
    pub outputs: Vec<Arc<dyn Output>>,
    /// The stream's batch format: this receiver's datagrams as they came.
    pub feed: Option<stream::publish::Feed>,
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
    pub(in crate::collect) fn new(
        sizes: Sizes,
        join: join::Join,
        outputs: Vec<Arc<dyn Output>>,
        base: Arc<timeline::TimeBase>,
    ) -> Books {
        let limits = Limits { flows: sizes.flows, detailed: sizes.detailed_flows };
        let hop_limits = hops::Limits { nodes: sizes.nodes, links: sizes.links, flows: sizes.flows };
        Books {
            ledger: Ledger::new(limits, base),
            hops: hops::Hops::new(hop_limits),
            senders: BTreeMap::new(),
            totals: Totals::default(),
            join,
            outputs,
            feed: None,
        }
    }

    /// Empty books of at most `sizes`, with the join's defaults and no
    /// outputs (for tests and fuzz targets).
    pub fn bounded(sizes: Sizes) -> Books {
        Books::new(sizes, join::Join::new(1000, Vec::new(), 32), Vec::new(), Default::default())
    }

    /// [`Books::bounded`] with the IPFIX export's recorder, its intervals
    /// taken by no exporter (for tests: what the export costs a reader).
    pub fn bounded_exporting(sizes: Sizes) -> Books {
        let mut books = Books::bounded(sizes);
        books.outputs.push(ipfix::detached(sizes.flows));
        books
    }

    /// A record: built only when it is printed or published.
    pub fn emit(&self, print: Print, record: impl FnOnce() -> crate::records::Record) {
        if print == Print::Quiet && !self.outputs.iter().any(|o| o.wants_records()) {
            return;
        }
        let mut record = record();
        names::annotate(&mut record);
        for output in self.outputs.iter().filter(|o| o.wants_records()) {
            output.record(&record);
        }
        print::print(&record, print);
    }

    /// The batch taken next arrived at `at_ns`, ns since the epoch.
    pub fn arrived(&mut self, at_ns: u64) {
        for output in &self.outputs {
            output.arrived(at_ns);
        }
    }

    pub fn observe(&mut self, observed: &Observed) {
        self.ledger.observe(observed);
        let lost = match observed.measure {
            Measure::Lost(count) => count,
            Measure::Latency { .. } => 0,
        };
        self.hops.observe_sink(&observed.flow, observed.sink_node, lost);
        for output in &self.outputs {
            output.observed(observed);
        }
    }

    /// A drop report of `node` for `reason`: into the per-hop view and the
    /// outputs.
    pub fn observe_drop(&mut self, node: u32, reason: u8) {
        self.hops.observe_drop(node, reason);
        for output in &self.outputs {
            output.drop_reported(node, reason);
        }
    }

    /// A report's hops and path: into the per-hop view and the outputs;
    /// returns the flow's path change, if any.
    pub fn observe_path(&mut self, seen: &hops::Seen<'_>) -> Option<hops::PathChange> {
        let change = self.hops.observe(seen);
        for output in &self.outputs {
            output.hops(seen);
            if let Some(change) = &change {
                output.path_change(change);
            }
        }
        change
    }

    /// A packet's postcards put together: its nodes' figures, and where
    /// their order can be told, its links and path; printed as a `joined`
    /// record, and a path change as for a stack.
    pub fn observe_joined(&mut self, joined: &join::Joined, print: Print) {
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
        let complete = fit.map(|fit| fit != join::Fit::Part);
        self.emit(print, || join::record(joined, complete).into());
        if let Some(change) = change {
            self.emit(print, || tr20::path_change_record(&change, None).into());
        }
    }

    /// The groups of postcards the collector's clock, at `now_ms`, has
    /// closed, joined: the reports may have stopped.
    pub fn close_passed_joins(&mut self, now_ms: u64, print: Print) {
        for joined in self.join.tick(now_ms) {
            self.observe_joined(&joined, print);
        }
    }

    /// Every postcard still waiting, joined (collect is stopping).
    pub fn close_joins(&mut self, print: Print) {
        for joined in self.join.close_all() {
            self.observe_joined(&joined, print);
        }
    }

    /// Each sender's report sequence.
    pub fn sender(&mut self, from: SocketAddr) -> &mut Sender {
        self.senders.entry(from).or_default()
    }
}
