//! Every record collect publishes on the stream (`--nats-format json`),
//! written by serde and read back by the aggregator's reader, is the
//! record it was: one model both ways (docs/output.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use int_core::flow::FlowKey;
use int_core::latency::MAX_ONE_WAY_NS;
use int_tools::collect::receivers::records::record_of;
use int_tools::records::{
    DropRecord, DropSummaryRecord, FlowRecord, Hop, JoinedRecord, PathChangeRecord, Record, RecordType,
    Tr05Record, Tr20LossRecord, Tr20Record,
};
use proptest::prelude::*;

const SCHEMA: Option<&str> = Some("1");

fn text() -> impl Strategy<Value = Option<String>> {
    any::<Option<String>>()
}

fn flow() -> impl Strategy<Value = FlowKey> {
    (any::<std::net::IpAddr>(), any::<std::net::IpAddr>(), any::<u8>(), any::<u16>(), any::<u16>()).prop_map(
        |(src, dst, protocol, src_port, dst_port)| FlowKey { src, dst, protocol, src_port, dst_port },
    )
}

/// Where and when a report arrived: all of it, or none (a record of
/// collect's own making).
fn arrival() -> impl Strategy<Value = (Option<String>, Option<String>, Option<u64>, Option<u32>)> {
    prop_oneof![
        Just((None, None, None, None)),
        (any::<String>(), any::<String>(), any::<u64>(), any::<u32>()).prop_map(|(from, at, ns, missing)| (
            Some(from),
            Some(at),
            Some(ns),
            Some(missing)
        )),
    ]
}

fn latency_ns() -> impl Strategy<Value = Option<i64>> {
    let most = MAX_ONE_WAY_NS as i64;
    proptest::option::of(-most..=most)
}

fn hop() -> BoxedStrategy<Hop> {
    let ids = (any::<Option<u32>>(), any::<Option<u16>>(), any::<Option<u16>>(), any::<Option<u32>>());
    let queue = (any::<Option<u8>>(), any::<Option<u32>>(), any::<Option<u64>>(), any::<Option<u64>>());
    let rest = (any::<[Option<u32>; 3]>(), any::<Option<u8>>(), any::<[Option<u32>; 2]>(), text());
    (ids, queue, rest)
        .prop_map(|((node_id, l1_in, l1_out, latency), (q, qo, ingress, egress), rest)| {
            let ([l2_in, l2_out, tx], buffer_id, [bo, checksum], name) = rest;
            Hop {
                node_id,
                l1_ingress_port: l1_in,
                l1_egress_port: l1_out,
                hop_latency: latency,
                queue_id: q,
                queue_occupancy: qo,
                ingress_timestamp: ingress,
                egress_timestamp: egress,
                l2_ingress_port: l2_in,
                l2_egress_port: l2_out,
                egress_tx_utilization: tx,
                buffer_id,
                buffer_occupancy: bo,
                checksum_complement: checksum,
                node_id_name: name,
            }
        })
        .boxed()
}

fn flow_record() -> BoxedStrategy<Record> {
    let kind = prop_oneof![Just(RecordType::Latency), Just(RecordType::Tr05Flow)];
    let head = (kind, any::<Option<u32>>(), text(), any::<Option<u64>>(), flow());
    let ends = (any::<[Option<u32>; 4]>(), any::<[Option<u16>; 2]>(), any::<Option<u8>>(), latency_ns());
    (head, ends, any::<Option<u32>>(), arrival(), text(), text())
        .prop_map(
            |((kind, report_seq, time, time_ns, flow), ends, flow_seq, arrived, source_name, sink_name)| {
                let (
                    [source_node, source_ts, sink_node, sink_ts],
                    [source_port, sink_port],
                    hops,
                    latency_ns,
                ) = ends;
                Record::Flow(FlowRecord {
                    kind,
                    report_seq,
                    time,
                    time_ns,
                    flow: Some(flow),
                    source_node,
                    source_port,
                    source_timestamp_ns: source_ts,
                    sink_node,
                    sink_port,
                    sink_timestamp_ns: sink_ts,
                    flow_seq,
                    hops,
                    latency_ns,
                    from: arrived.0,
                    arrival: arrived.1,
                    arrival_ns: arrived.2,
                    missing_reports_before: arrived.3,
                    source_node_name: source_name,
                    sink_node_name: sink_name,
                })
            },
        )
        .boxed()
}

fn drop_summary() -> BoxedStrategy<Record> {
    let head = (any::<Option<u32>>(), text(), any::<Option<u64>>(), flow(), any::<[Option<u32>; 3]>());
    let rest = (any::<[Option<u16>; 2]>(), any::<u32>(), text(), any::<Option<u64>>());
    (head, rest, arrival(), (text(), text()))
        .prop_map(|(head, rest, arrived, names)| {
            let (report_seq, time, time_ns, flow, [source_node, sink_node, flow_seq]) = head;
            let ([source_port, sink_port], lost, gap_time, gap_time_ns) = rest;
            Record::DropSummary(DropSummaryRecord {
                kind: RecordType::DropSummary,
                report_seq,
                time,
                time_ns,
                flow: Some(flow),
                source_node,
                source_port,
                sink_node,
                sink_port,
                flow_seq,
                lost_packets: Some(lost),
                gap_time,
                gap_time_ns,
                from: arrived.0,
                arrival: arrived.1,
                arrival_ns: arrived.2,
                missing_reports_before: arrived.3,
                source_node_name: names.0,
                sink_node_name: names.1,
            })
        })
        .boxed()
}

fn tr05() -> BoxedStrategy<Record> {
    let fields = (
        any::<[Option<u32>; 2]>(),
        text(),
        any::<Option<u64>>(),
        any::<Option<u8>>(),
        any::<Option<usize>>(),
    );
    (fields, arrival())
        .prop_map(|(([report_seq, timestamp_ns], time, time_ns, nproto, length), arrived)| {
            Record::Tr05(Tr05Record {
                kind: RecordType::Tr05,
                report_seq,
                time,
                time_ns,
                timestamp_ns,
                nproto,
                inner_frame_length: length,
                from: arrived.0,
                arrival: arrived.1,
                arrival_ns: arrived.2,
                missing_reports_before: arrived.3,
            })
        })
        .boxed()
}

fn tr20() -> BoxedStrategy<Record> {
    let drop = proptest::option::of((any::<Option<u8>>(), any::<u8>(), text()).prop_map(
        |(queue_id, reason, name)| DropRecord { queue_id, reason: Some(reason), reason_name: name },
    ));
    let group = (any::<[Option<u32>; 2]>(), any::<[Option<u8>; 3]>(), any::<[Option<bool>; 4]>(), drop);
    let stack = (
        proptest::option::of(0usize..=255),
        proptest::option::of(proptest::collection::vec(any::<u32>(), 0..6)),
        proptest::option::of(proptest::collection::vec(hop(), 0..6)),
        any::<[Option<u32>; 2]>(),
        latency_ns(),
    );
    let time = (text(), any::<Option<u64>>(), flow());
    let names = (text(), text(), proptest::option::of(proptest::collection::vec(text(), 0..4)));
    (group, stack, time, arrival(), names)
        .prop_map(|(group, stack, time, arrived, names)| {
            let ([report_seq, report_node], [hw_id, rep_type, in_type], [d, q, f, i], drop) = group;
            let (hops, path, hop_metadata, [source_node, flow_seq], latency_ns) = stack;
            Record::Tr20(Tr20Record {
                kind: RecordType::Tr20,
                report_seq,
                report_node,
                hw_id,
                rep_type,
                in_type,
                d,
                q,
                f,
                i,
                drop,
                flow: Some(time.2),
                time: time.0,
                time_ns: time.1,
                hops,
                path,
                hop_metadata,
                source_node,
                flow_seq,
                latency_ns,
                from: arrived.0,
                arrival: arrived.1,
                arrival_ns: arrived.2,
                missing_reports_before: arrived.3,
                source_node_name: names.0,
                report_node_name: names.1,
                path_names: names.2,
                ifa: None,
                ifa_hops: None,
            })
        })
        .boxed()
}

fn tr20_loss() -> BoxedStrategy<Record> {
    let fields =
        (any::<[Option<u32>; 4]>(), any::<Option<u8>>(), flow(), any::<u32>(), text(), any::<Option<u64>>());
    (fields, arrival(), (text(), text()))
        .prop_map(|(fields, arrived, names)| {
            let ([report_seq, report_node, source_node, first], hw_id, flow, lost, time, time_ns) = fields;
            Record::Tr20Loss(Tr20LossRecord {
                kind: RecordType::Tr20Loss,
                report_seq,
                report_node,
                hw_id,
                flow: Some(flow),
                source_node,
                first_flow_seq: first,
                lost_packets: Some(lost),
                time,
                time_ns,
                from: arrived.0,
                arrival: arrived.1,
                arrival_ns: arrived.2,
                missing_reports_before: arrived.3,
                source_node_name: names.0,
                report_node_name: names.1,
            })
        })
        .boxed()
}

fn path_change() -> BoxedStrategy<Record> {
    let path = || proptest::option::of(proptest::collection::vec(any::<u32>(), 0..6));
    let labels = || proptest::option::of(proptest::collection::vec(text(), 0..6));
    let fields = (any::<Option<u32>>(), proptest::option::of(flow()), path(), path());
    (fields, arrival(), (text(), labels(), labels()))
        .prop_map(|((node, flow, old, new), arrived, names)| {
            Record::PathChange(PathChangeRecord {
                kind: RecordType::PathChange,
                report_node: node,
                flow,
                old_path: old,
                new_path: new,
                from: arrived.0,
                arrival: arrived.1,
                arrival_ns: arrived.2,
                missing_reports_before: arrived.3,
                report_node_name: names.0,
                old_path_names: names.1,
                new_path_names: names.2,
            })
        })
        .boxed()
}

fn joined() -> BoxedStrategy<Record> {
    let nodes = || proptest::option::of(proptest::collection::vec(any::<Option<u32>>(), 0..6));
    let labels = || proptest::option::of(proptest::collection::vec(text(), 0..6));
    let hops = proptest::option::of(proptest::collection::vec(hop(), 0..6));
    let fields = (proptest::option::of(flow()), nodes(), any::<[Option<bool>; 2]>(), nodes(), hops);
    (fields, labels(), labels())
        .prop_map(|((flow, nodes, [ordered, complete], path, hops), path_names, node_names)| {
            Record::Joined(JoinedRecord {
                kind: RecordType::Joined,
                flow,
                nodes,
                ordered,
                complete,
                path,
                hop_metadata: hops,
                path_names,
                node_names,
            })
        })
        .boxed()
}

fn any_record() -> impl Strategy<Value = Record> {
    prop_oneof![flow_record(), drop_summary(), tr05(), tr20(), tr20_loss(), path_change(), joined()]
}

proptest! {
    /// serde writes it, the aggregator reads it: the same record.
    #[test]
    fn every_stream_record_reads_back_as_written(record in any_record()) {
        let bytes = serde_json::to_vec(&record).unwrap();
        prop_assert_eq!(record_of(SCHEMA, &bytes), Ok(record));
    }
}
