//! INT-XD (INT 2.1, "INT Application Modes"): for the packets of the flows
//! its watchlist names, this node sends Telemetry Report 2.0 reports of its
//! own metadata ("postcards": RepType INT, InType 4 or 5, the packet's
//! headers as [`int_core::int21::postcard`] cuts them, RepMdBits from the
//! instructions), and forwards every packet byte for byte.
//!
//! Which packets get a postcard is the `report` rule's: `every` N packets
//! of a flow (its 1st, N+1st, ...: sampling, or each packet with N = 1), or
//! on `change`: a flow's first packet, then each whose hop latency or queue
//! class (the sink's `hops` bounds) differs from the last one reported.
//! Either way within the export rate limit (`reports_suppressed` beyond).

use std::net::SocketAddr;
use std::ops::Range;

use int_core::fast::FastFrame;
use int_core::hop_rule::HopRule;
use int_core::int21::{postcard, HopMetadata, Instructions};
use int_core::locate::IpVersion;
use int_core::report::tr20::InType;

use crate::clock::Clock;
use crate::config::{PostcardReport, PostcardSettings, Rule};
use crate::dpdk::mbuf::{Burst, BURST};
use crate::flow_table::{Admission, FlowRef, FlowTable};
use crate::pipeline::hop_figures::{BurstFigures, HopFigures};
use crate::pipeline::report::tr20::{in_type_of, Reporter21, Subject};
use crate::pipeline::setup::Hop;
use crate::pipeline::source_flow::{fast_flow_watched, skip_counter, to_collector, Ageing};
use crate::pipeline::top_flows::TopFlows;
use crate::stats::{Counter, Counters};

/// A watched flow: its packets, and the classes of its last postcard.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watched {
    pub packets: u32,
    pub latency_class: u8,
    pub queue_class: u8,
}

pub struct PostcardStage {
    pub watchlist: Vec<Rule>,
    pub instructions: Instructions,
    pub report: PostcardReport,
    pub every: u32,
    pub classes: HopRule,
    pub hop: Hop,
    /// The collector this node's own reports go to: never reported on.
    pub own_reports_to: Option<SocketAddr>,
    pub reporter: Reporter21,
    pub flows: FlowTable<Watched>,
    pub idle_timeout_ns: u64,
    pub last_sweep_ns: u64,
    pub top: TopFlows,
    figures: HopFigures,
}

impl PostcardStage {
    pub fn new(
        settings: &PostcardSettings,
        hop: Hop,
        own_reports_to: Option<SocketAddr>,
        reporter: Reporter21,
    ) -> Self {
        PostcardStage {
            watchlist: settings.watchlist.clone(),
            instructions: settings.instructions,
            report: settings.report,
            every: settings.every.max(1),
            classes: settings.hops,
            hop,
            own_reports_to,
            reporter,
            flows: FlowTable::with_ipv6_keys(settings.flow_capacity as usize),
            idle_timeout_ns: settings.idle_timeout_ms * 1_000_000,
            last_sweep_ns: 0,
            top: TopFlows::default(),
            figures: HopFigures::new(hop.rx_queue),
        }
    }

    /// Two passes: the first reads each frame's shape and starts loading
    /// its flow's slot, so that the second's lookups do not wait on one
    /// cache miss after another (half the stage's time went to that wait).
    #[inline(never)]
    pub fn process(&mut self, burst: &mut Burst, clock: &mut Clock, counters: &mut Counters) {
        let now_ns = clock.now_ns();
        let figures = self.figures.burst(now_ns, burst.len());
        let mut fast = [None; BURST];
        for (i, fast) in fast.iter_mut().enumerate().take(burst.len()) {
            burst.prefetch(i + 1);
            *fast = burst.data(i).and_then(|frame| self.fast_read(frame));
        }
        for (i, fast) in fast.iter().enumerate().take(burst.len()) {
            let Some(frame) = burst.data(i) else { continue };
            let ingress = burst.arrival_ns(i, self.hop.rx_timestamps, figures.burst_ns);
            match fast {
                Some(fast) => {
                    let cut = postcard::read_fast(frame, fast);
                    self.watched(frame, FlowRef::Words(&fast.flow), cut, ingress, &figures, counters);
                }
                None => self.look_at_general(frame, ingress, &figures, counters),
            }
        }
        self.figures.done(&figures);
        self.reporter.flush(counters);
        self.age(now_ns, counters);
    }

    /// A frame the fast path takes: of its shape, IPv4 (an IPv6 flow is
    /// looked up by its whole key), watched and not this node's own
    /// report; its flow's slot starts loading. Any other frame takes the
    /// general walk, which also counts why a packet is not watched.
    #[inline(always)]
    fn fast_read(&self, frame: &[u8]) -> Option<FastFrame> {
        let fast = FastFrame::read_ipv4(frame, 0)?;
        if !fast_flow_watched(&fast, frame, &self.watchlist, self.own_reports_to) {
            return None;
        }
        self.flows.prefetch(crate::flow_table::hash(&fast.flow));
        Some(fast)
    }

    /// A packet [`Self::fast_read`] does not take, by the general walk:
    /// counted by why it gets no postcard, or made one where the rule says.
    fn look_at_general(
        &mut self,
        frame: &[u8],
        ingress: u64,
        figures: &BurstFigures,
        counters: &mut Counters,
    ) {
        let card = match postcard::read(frame) {
            Ok(card) => card,
            Err(skip) => return counters.inc(skip_counter(skip)),
        };
        if self.own_reports_to.is_some_and(|collector| to_collector(&card.flow, collector)) {
            return counters.inc(Counter::own_reports);
        }
        if !self.watchlist.is_empty() && !self.watchlist.iter().any(|rule| rule.matches(&card.flow)) {
            return counters.inc(Counter::not_watched);
        }
        let flow = FlowRef::Key(&card.flow);
        self.watched(frame, flow, (card.version, card.contents), ingress, figures, counters);
    }

    /// A watched packet: counted, and its postcard (`cut`: the IP version
    /// and the bytes it carries of `frame`) sent if due.
    #[inline(always)]
    fn watched(
        &mut self,
        frame: &[u8],
        flow: FlowRef<'_>,
        (version, contents): (IpVersion, Range<usize>),
        ingress: u64,
        figures: &BurstFigures,
        counters: &mut Counters,
    ) {
        counters.inc(Counter::watched);
        // What the change rule reads; the whole metadata only for a postcard.
        let hop_latency = u32::try_from(figures.egress_ns.saturating_sub(ingress)).ok();
        let figures_read = (hop_latency, figures.queue.map(|(_, depth)| depth));
        let Some(due) = self.due(flow, figures_read, figures.burst_ns, counters) else { return };
        if !due {
            return counters.inc(Counter::postcards_not_due);
        }
        let metadata = self.metadata(ingress, figures);
        let Some(packet) = frame.get(contents) else { return };
        let subject = Subject {
            packet,
            in_type: in_type_of(version),
            rep_md_bits: self.instructions.bits(),
            metadata,
            drop: None,
        };
        debug_assert!(matches!(subject.in_type, InType::Ipv4 | InType::Ipv6));
        self.reporter.report(subject, figures.burst_ns, Counter::reports_xd, counters);
    }

    /// This node's metadata on a packet, as a transit hop would push it.
    fn metadata(&self, ingress: u64, figures: &BurstFigures) -> HopMetadata {
        HopMetadata {
            node_id: Some(self.hop.node_id),
            l1_ingress_port: Some(self.hop.rx_int_port),
            l1_egress_port: Some(self.hop.tx_int_port),
            hop_latency: u32::try_from(figures.egress_ns.saturating_sub(ingress)).ok(),
            queue: figures.queue,
            ingress_timestamp: Some(ingress),
            egress_timestamp: Some(figures.egress_ns),
            ..HopMetadata::default()
        }
    }

    /// Whether the flow's packet gets a postcard (by its hop latency and
    /// queue depth, on change); `None` (counted) when the flow table has no
    /// room: no rule can be kept for it.
    fn due(
        &mut self,
        flow: FlowRef<'_>,
        (hop_latency, queue): (Option<u32>, Option<u32>),
        now_ns: u64,
        counters: &mut Counters,
    ) -> Option<bool> {
        let Some((watched, admission)) = self.flows.get_or_insert_flow(flow, now_ns, |_| true) else {
            counters.inc(Counter::flow_table_full);
            return None;
        };
        let new = !matches!(admission, Admission::Existing { .. });
        if new {
            counters.inc(Counter::flows_created);
            *watched = Watched::default();
        }
        if admission == Admission::Evicted {
            counters.inc(Counter::flows_evicted);
        }
        let packet = watched.packets;
        watched.packets = packet.wrapping_add(1);
        Some(match self.report {
            PostcardReport::Every => packet % self.every == 0,
            PostcardReport::Change => {
                let latency_class = self.classes.latency.class(hop_latency);
                let queue_class = self.classes.queue.class(queue);
                let changed = (latency_class, queue_class) != (watched.latency_class, watched.queue_class);
                watched.latency_class = latency_class;
                watched.queue_class = queue_class;
                new || changed
            }
        })
    }

    /// A step of the ageing sweep (see [`crate::pipeline::int05::source::Source05Stage::age`]).
    #[inline]
    pub fn age(&mut self, now_ns: u64, counters: &mut Counters) {
        let ageing = Ageing { last_sweep_ns: &mut self.last_sweep_ns, idle_timeout_ns: self.idle_timeout_ns };
        ageing.age(&mut self.flows, &mut self.top, now_ns, counters, |watched| watched.packets);
    }
}
