//! What each pipeline counter is on the Prometheus page: the metric family
//! it belongs to, the label value that tells it apart there, the roles
//! that count it, and what the family means. Reasons and kinds are labels
//! of one family (Prometheus' convention), so `sum by (reason)` works and
//! a new reason adds no metric.

use crate::config::RoleName::{self, *};
use crate::stats::Counter::{self, *};

/// How a family's samples are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count since start: `int_node_<name>_total`.
    Count,
    /// A time the pipeline keeps in ns, shown in seconds:
    /// `int_node_<name>_seconds`; no sample while it is 0 (none seen).
    Seconds,
}

/// One member of a family: the counter, its label value ("" in a family
/// of one), the roles whose pipelines count it.
pub struct Member(pub Counter, pub &'static str, pub &'static [RoleName]);

pub struct Family {
    pub name: &'static str,
    pub unit: Unit,
    pub help: &'static str,
    /// The label that tells the members apart ("" in a family of one).
    pub label: &'static str,
    pub members: &'static [Member],
}

const ALL: &[RoleName] = &[
    Source,
    Transit,
    Sink,
    Forward,
    Impair,
    ReferenceSource,
    ReferenceTransit,
    ReferenceSink,
    Generate,
    Postcard,
];
const SOURCE: &[RoleName] = &[Source];
const TRANSIT: &[RoleName] = &[Transit];
const SINK: &[RoleName] = &[Sink];
const INT: &[RoleName] = &[Source, Transit, Sink, Postcard];
/// Roles that choose packets by watchlist.
const WATCHING: &[RoleName] = &[Source, Postcard];
/// Roles that send reports (a transit: INT-MX).
const REPORTING: &[RoleName] = &[Source, Transit, Sink, Postcard];
/// Roles with a flow table.
const FLOWS: &[RoleName] = &[Source, Sink, Postcard];
const PUSHING: &[RoleName] = &[Source, Transit];
const WITH_CLOCK: &[RoleName] = &[Source, Transit, Sink, ReferenceSource, ReferenceTransit, ReferenceSink];

/// A family of one counter.
macro_rules! one {
    ($name:literal, $counter:ident, $roles:expr, $help:literal) => {
        Family {
            name: $name,
            unit: Unit::Count,
            help: $help,
            label: "",
            members: &[Member($counter, "", $roles)],
        }
    };
}

/// Every family, in page order.
pub const FAMILIES: &[Family] = &[
    one!("rx_packets", rx_packets, ALL, "Packets the pipeline read off its RX queue."),
    one!("tx_packets", tx_packets, ALL, "Packets the pipeline's TX queue accepted."),
    Family {
        name: "dropped_packets",
        unit: Unit::Count,
        help: "Packets the pipeline freed instead of sending, by reason.",
        label: "reason",
        members: &[
            Member(tx_dropped, "tx_queue_full", ALL),
            Member(marked_dropped, "marked_at_edge", SOURCE),
            Member(malformed_dropped, "malformed", SINK),
            Member(discarded, "discard_flag", SINK),
            Member(impaired_dropped, "impaired", &[Impair]),
        ],
    },
    Family {
        name: "malformed_packets",
        unit: Unit::Count,
        help: "Packets refused as malformed, by reason (the sink's malformed policy forwards or drops them).",
        label: "reason",
        members: &[
            Member(malformed_packet_truncated, "packet_truncated", INT),
            Member(malformed_packet_malformed, "packet_malformed", INT),
            Member(malformed_int_truncated, "int_truncated", INT),
            Member(malformed_int_bad_length, "int_bad_length", INT),
            Member(malformed_int_stack_mismatch, "int_stack_mismatch", INT),
            Member(malformed_int_unknown_version, "int_unknown_version", INT),
            Member(malformed_int_unknown_type, "int_unknown_type", INT),
        ],
    },
    Family {
        name: "ifa_refused_packets",
        unit: Unit::Count,
        help: "IFA 2.0: packets marked as IFA and refused, by reason (a transit passes them as they came; a terminator drops them).",
        label: "reason",
        members: &[
            Member(ifa_packet_malformed, "packet_malformed", INT),
            Member(ifa_truncated, "truncated", INT),
            Member(ifa_unknown_version, "unknown_version", INT),
            Member(ifa_global_name_space, "global_name_space", INT),
            Member(ifa_metadata_fragment, "metadata_fragment", INT),
            Member(ifa_tail_stamp, "tail_stamp", INT),
            Member(ifa_checksum_header, "checksum_header", INT),
            Member(ifa_next_header, "next_header", INT),
            Member(ifa_l4_malformed, "l4_malformed", INT),
            Member(ifa_length_not_hops, "length_not_hops", INT),
            Member(ifa_length_past_max, "length_past_max", INT),
            Member(ifa_stack_past_packet, "stack_past_packet", INT),
        ],
    },
    one!("hop_limit_reached", hop_limit_reached, TRANSIT, "IFA 2.0 transit: packets with Hop Limit 0, passed without this node's hop."),
    one!("max_length_reached", max_length_reached, TRANSIT, "IFA 2.0 transit: packets whose stack had no room for another hop under Max Length, passed without it."),
    one!("probes_dropped", probes_dropped, SINK, "IFA 2.0 terminator: probe copies (I clear) read, then dropped."),
    one!("ifa_ipfix_records", ifa_ipfix_records, SINK, "IFA 2.0 terminator (report: ipfix): IPFIX data messages queued, one record each."),
    one!("ifa_ipfix_templates", ifa_ipfix_templates, SINK, "IFA 2.0 terminator (report: ipfix): IPFIX template messages queued."),
    one!("malformed_forwarded", malformed_forwarded, SINK, "Malformed packets the sink forwarded as they came (policy forward)."),
    one!("multi_segment", multi_segment, ALL, "Multi-segment packets, passed untouched."),
    one!("shared_mbuf", shared_mbuf, PUSHING, "Packets in shared mbufs, passed untouched (never rewritten)."),
    one!("empty_polls", empty_polls, ALL, "Polls of the RX queue that found no packet."),
    one!("not_common", not_common, &[ReferenceSource, ReferenceTransit, ReferenceSink, Generate], "Reference stages: frames of another shape, passed untouched; the generator: mbufs too small for its frame."),
    one!("generated", generated, &[Generate], "Packets the generator wrote."),
    one!("clock_steps_back", clock_steps_back, WITH_CLOCK, "Times the pipeline's clock read earlier than before."),
    one!("settings_updates", settings_updates, ALL, "Reloaded settings the pipeline took in."),
    one!("captured", captured, ALL, "Packets copied to the capture file."),
    one!("capture_dropped", capture_dropped, ALL, "Packets the capture missed (its ring full, or multi-segment)."),
    one!("instrumented", instrumented, &[Source, ReferenceSource], "Packets the source added INT to."),
    one!("instrumented_in_tunnel", instrumented_in_tunnel, SOURCE, "Packets the source added INT to inside a tunnel (VXLAN-GPE, Geneve)."),
    one!("not_watched", not_watched, WATCHING, "Packets of flows not on the watchlist, passed untouched."),
    one!("not_ip", not_ip, WATCHING, "Packets without IPv4 or IPv6, passed untouched."),
    one!("not_ipv6", not_ipv6, SOURCE, "An IOAM domain's encapsulating node: packets other than IPv6, passed untouched."),
    one!("not_tcp_udp", not_tcp_udp, WATCHING, "IP packets neither TCP nor UDP, passed untouched."),
    one!("fragments", fragments, WATCHING, "IP fragments, passed untouched."),
    one!("own_reports", own_reports, WATCHING, "The node's own reports seen at the source, passed untouched."),
    one!("cloned", cloned, SOURCE, "INT 2.1 clones: copies of watched packets, instrumented with D set, sent beside the untouched originals."),
    one!("clones_refused", clones_refused, SOURCE, "INT 2.1 clones the copies' own pool had no mbuf for (the original was sent, uncopied; the flow's next packet is copied in its place, with the same number)."),
    one!("clones_dropped", clones_dropped, SOURCE, "INT 2.1 clones that did not leave: refused by the TX queue or held back for the originals (tx_dropped counts originals only)."),
    one!("already_marked", already_marked, SOURCE, "Packets arriving at the source with the domain's INT mark already set."),
    one!("foreign_int_stripped", foreign_int_stripped, SOURCE, "INT from outside the domain removed at its edge."),
    one!("marked_instrumented", marked_instrumented, SOURCE, "Marked packets the edge policy instrumented."),
    one!("mark_cleared", mark_cleared, SOURCE, "Marks the edge policy cleared."),
    one!("marked_passed", marked_passed, SOURCE, "Marked packets the edge policy passed untouched."),
    one!("too_big", too_big, PUSHING, "Packets left without INT because the port's MTU had no room for it."),
    one!("no_headroom", no_headroom, PUSHING, "Packets left without INT because the mbuf had no headroom."),
    one!("pushed", pushed, &[Transit, ReferenceTransit], "Hop metadata the transit pushed."),
    one!("max_hop_reached", max_hop_reached, TRANSIT, "INT packets whose hop count was used up: E set, no push."),
    one!("slots_filled", slots_filled, TRANSIT, "IOAM: trace slots this transit node filled with its data."),
    one!("trace_overflow", trace_overflow, &[Transit, Sink], "IOAM: traces with no slot left (Overflow set here, or found set at the decapsulating node)."),
    one!("destination_only", destination_only, TRANSIT, "INT 0.5 destination-only headers passed."),
    one!("mtu_exceeded", mtu_exceeded, PUSHING, "INT 2.1 pushes the MTU did not allow (M set)."),
    one!("mx_passed", mx_passed, TRANSIT, "INT-MX packets passed (their data is exported, not pushed)."),
    one!("watched", watched, &[Postcard], "INT-XD: packets of watched flows (each passed untouched)."),
    one!("postcards_not_due", postcards_not_due, &[Postcard], "INT-XD: packets of watched flows the report rule sent no postcard for (not the Nth, or no class changed)."),
    one!("not_int", not_int, &[Transit, Sink], "Packets without the domain's INT, passed untouched."),
    one!("marked_not_int", marked_not_int, SINK, "Packets marked for INT that carried none."),
    one!("stripped", stripped, &[Sink, ReferenceSink], "Packets the sink removed INT from (restored as sent)."),
    one!("no_sequence", no_sequence, SINK, "INT packets without a sequence number (loss not followed)."),
    Family {
        name: "sequence_anomalies",
        unit: Unit::Count,
        help: "Sequence numbers that did not follow their flow's last, by kind.",
        label: "kind",
        members: &[
            Member(seq_duplicates, "duplicate", SINK),
            Member(seq_reordered, "reordered", SINK),
            Member(seq_late, "late", SINK),
            Member(seq_restarts, "restart", SINK),
            Member(seq_implausible, "implausible", SINK),
            Member(seq_out_of_order, "out_of_order", &[ReferenceSink]),
        ],
    },
    one!("lost_packets", lost_packets, SINK, "Packets the sink found missing from their flow's sequence."),
    Family {
        name: "latency_min",
        unit: Unit::Seconds,
        help: "The least one-way latency the sink measured.",
        label: "",
        members: &[Member(latency_min_ns, "", SINK)],
    },
    Family {
        name: "latency_max",
        unit: Unit::Seconds,
        help: "The greatest one-way latency the sink measured.",
        label: "",
        members: &[Member(latency_max_ns, "", SINK)],
    },
    one!("clock_skew", clock_skew, SINK, "Packets whose latency came out negative (the clocks disagree)."),
    one!("latency_too_long", latency_too_long, SINK, "Packets whose one-way latency came out over a minute (a source clock far behind, or a timestamp that lies): not believed, never reported."),
    Family {
        name: "clock_skew_max",
        unit: Unit::Seconds,
        help: "The largest negative latency seen, as a positive time (the clocks' disagreement).",
        label: "",
        members: &[Member(clock_skew_max_ns, "", SINK)],
    },
    Family {
        name: "reports",
        unit: Unit::Count,
        help: "Telemetry reports the pipeline made, by kind (each is one report to the collector).",
        label: "kind",
        members: &[
            Member(reports_latency, "latency", SINK),
            Member(reports_path_change, "path_change", SINK),
            Member(reports_hop_change, "hop_change", SINK),
            Member(reports_queue, "queue", SINK),
            Member(reports_mx, "mx", REPORTING),
            Member(reports_xd, "xd", &[Postcard]),
            Member(reports_drop_summary, "drop_summary", SINK),
            Member(reports_loss, "loss", SINK),
            Member(reports_drop, "drop", SINK),
        ],
    },
    Family {
        name: "reports_not_made",
        unit: Unit::Count,
        help: "Reports the pipeline did not make or send, by reason.",
        label: "reason",
        members: &[
            Member(reports_suppressed, "rate_limit", REPORTING),
            Member(reports_queue_quota, "queue_quota", SINK),
            Member(reports_ring_full, "ring_full", REPORTING),
            Member(reports_too_big, "too_big", REPORTING),
        ],
    },
    one!("reports_unkeyed", reports_unkeyed, SINK, "Losses of a flow whose full key the table does not keep (IPv6), reported without it."),
    one!("report_datagrams", report_datagrams, REPORTING, "Telemetry Report 2.0 datagrams made, each holding one report or more."),
    one!("path_untold", path_untold, SINK, "INT 2.1 stacks whose path is not compared (no hop, a hop without a node id, a node twice, more than 16 hops)."),
    one!("impaired_delayed", impaired_delayed, &[Impair], "Packets the impair role delayed."),
    one!("impaired_overflow", impaired_overflow, &[Impair], "Packets the impair role dropped because its delay line was full."),
    one!("flows_created", flows_created, FLOWS, "Flows the flow table took in."),
    one!("flows_expired", flows_expired, FLOWS, "Flows the flow table let go after their idle time."),
    one!("flows_evicted", flows_evicted, FLOWS, "Flows pushed out of the flow table by new ones."),
    one!("flow_table_full", flow_table_full, FLOWS, "Packets of new flows the full flow table could not take."),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Each counter is on the page once: a new counter needs its family.
    #[test]
    fn every_counter_has_one_family() {
        for counter in Counter::ALL {
            let found = FAMILIES.iter().flat_map(|f| f.members).filter(|m| m.0 == *counter).count();
            assert_eq!(found, 1, "{}", counter.name());
        }
    }

    /// docs/metrics.md lists every family by its metric name.
    #[test]
    fn the_docs_list_every_family() {
        let docs = include_str!("../../../docs/metrics.md");
        for family in FAMILIES {
            let name = super::super::metric_name(family);
            assert!(docs.contains(&format!("| `{name}` |")), "docs/metrics.md lacks {name}");
        }
    }
}
