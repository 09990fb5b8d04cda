//! Per-pipeline counters: the worker counts in plain integers and publishes
//! them once per poll with relaxed stores (no locked instruction per
//! packet); the main lcore reads, prints and writes them as JSON.

use std::sync::atomic::{AtomicU64, Ordering};

use int_core::ifa::Refusal;
use int_core::outcome::NotPushed;
use int_core::DropReason;

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// Every counter a pipeline keeps.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(usize)]
        #[allow(non_camel_case_types)]
        pub enum Counter { $($name),* }

        impl Counter {
            pub const ALL: &'static [Counter] = &[$(Counter::$name),*];

            pub fn name(self) -> &'static str {
                match self { $(Counter::$name => stringify!($name)),* }
            }
        }
    };
}

counters! {
    rx_packets,
    tx_packets,
    tx_dropped,
    multi_segment,
    shared_mbuf,
    // polls of the RX queue that found no packet
    empty_polls,
    // reference stages: frames of another shape, passed untouched; the
    // generator: mbufs too small for its frame
    not_common,
    // the generator: packets written
    generated,
    // the lcore's clock
    clock_steps_back,
    // reloads: new settings (a watchlist, report settings) taken in
    settings_updates,
    // packet capture: packets copied to the capture, and missed (its ring
    // full, or a multi-segment packet)
    captured,
    capture_dropped,
    // source
    instrumented,
    instrumented_in_tunnel,
    // INT 2.1 source cloning: copies sent beside their originals, and
    // copies the pool had no mbuf for (the original leaves regardless)
    cloned,
    clones_refused,
    clones_dropped,
    not_watched,
    not_ip,
    // an IOAM domain's encapsulating node: IPv4 and other packets, passed
    not_ipv6,
    not_tcp_udp,
    fragments,
    own_reports,
    // source: the INT domain's edge
    already_marked,
    foreign_int_stripped,
    marked_instrumented,
    mark_cleared,
    marked_passed,
    marked_dropped,
    too_big,
    no_headroom,
    // transit
    pushed,
    max_hop_reached,
    destination_only,
    // IOAM transit: a slot of the trace filled; no slot left (Overflow),
    // set here or found set at the decapsulating node
    slots_filled,
    trace_overflow,
    // INT 2.1: pushes the MTU did not allow (M set), INT-MX packets passed
    mtu_exceeded,
    mx_passed,
    // IFA transit: Hop Limit 0 or Max Length reached, nothing pushed
    hop_limit_reached,
    max_length_reached,
    // IFA: packets marked as IFA and refused, by reason (int_core::ifa::Refusal)
    ifa_packet_malformed,
    ifa_truncated,
    ifa_unknown_version,
    ifa_global_name_space,
    ifa_metadata_fragment,
    ifa_tail_stamp,
    ifa_checksum_header,
    ifa_next_header,
    ifa_l4_malformed,
    ifa_length_not_hops,
    ifa_length_past_max,
    ifa_stack_past_packet,
    // IFA terminator: probe copies (I clear) dropped once read
    probes_dropped,
    // IFA terminator under report: ipfix: data and template messages queued
    ifa_ipfix_records,
    ifa_ipfix_templates,
    // sink
    not_int,
    marked_not_int,
    stripped,
    // INT 2.1 sink: packets whose D bit asked for a discard after reporting
    discarded,
    malformed_forwarded,
    malformed_dropped,
    malformed_packet_truncated,
    malformed_packet_malformed,
    malformed_int_truncated,
    malformed_int_bad_length,
    malformed_int_stack_mismatch,
    malformed_int_unknown_version,
    malformed_int_unknown_type,
    no_sequence,
    seq_duplicates,
    seq_reordered,
    seq_late,
    seq_restarts,
    seq_implausible,
    // reference sink: numbers that did not follow their flow's last
    seq_out_of_order,
    lost_packets,
    // latency (gauges: the extremes seen, in ns; 0 = none yet)
    latency_min_ns,
    latency_max_ns,
    clock_skew,
    clock_skew_max_ns,
    latency_too_long,
    reports_latency,
    // INT 2.1: a flow's path changed (the path rule), a hop's latency or
    // queue class changed (the hop rule), a hop's queue is over the alert
    // threshold (within the queue quota; over it: reports_queue_quota)
    reports_path_change,
    reports_hop_change,
    reports_queue,
    reports_queue_quota,
    // INT 2.1: stacks whose path is not compared (no hop, a hop without a
    // node id, a node twice, more than 16 hops)
    path_untold,
    // INT 2.1: INT-MX reports this node sent
    reports_mx,
    // INT-XD: packets of watched flows; postcards sent, and packets the
    // report rule passed over (not the Nth, or no class changed)
    watched,
    reports_xd,
    postcards_not_due,
    reports_drop_summary,
    // INT 2.1: TR 2.0 loss reports (int-node's rule)
    reports_loss,
    // INT 2.1: TR 2.0 drop reports on packets this node dropped
    reports_drop,
    // losses of a flow whose full key the table does not keep (IPv6)
    reports_unkeyed,
    // INT 2.1: TR 2.0 datagrams, each holding one report or more
    report_datagrams,
    reports_suppressed,
    reports_ring_full,
    reports_too_big,
    // impair
    impaired_dropped,
    impaired_delayed,
    impaired_overflow,
    // flow tables
    flows_created,
    flows_expired,
    flows_evicted,
    flow_table_full,
}

pub const COUNT: usize = Counter::ALL.len();

impl Counter {
    pub fn malformed(reason: DropReason) -> Counter {
        match reason {
            DropReason::PacketTruncated => Counter::malformed_packet_truncated,
            DropReason::PacketMalformed => Counter::malformed_packet_malformed,
            DropReason::IntTruncated => Counter::malformed_int_truncated,
            DropReason::IntBadLength => Counter::malformed_int_bad_length,
            DropReason::IntStackMismatch => Counter::malformed_int_stack_mismatch,
            DropReason::IntUnknownVersion => Counter::malformed_int_unknown_version,
            DropReason::IntUnknownType => Counter::malformed_int_unknown_type,
        }
    }

    /// The counter of an IFA packet refused for `reason`.
    pub fn refused(reason: Refusal) -> Counter {
        match reason {
            Refusal::Packet => Counter::ifa_packet_malformed,
            Refusal::Truncated => Counter::ifa_truncated,
            Refusal::Version => Counter::ifa_unknown_version,
            Refusal::GlobalNameSpace => Counter::ifa_global_name_space,
            Refusal::MetadataFragment => Counter::ifa_metadata_fragment,
            Refusal::TailStamp => Counter::ifa_tail_stamp,
            Refusal::ChecksumHeader => Counter::ifa_checksum_header,
            Refusal::NextHeader => Counter::ifa_next_header,
            Refusal::L4 => Counter::ifa_l4_malformed,
            Refusal::LengthNotHops => Counter::ifa_length_not_hops,
            Refusal::LengthPastMax => Counter::ifa_length_past_max,
            Refusal::StackPastPacket => Counter::ifa_stack_past_packet,
        }
    }

    /// Why a transit hop of either INT version pushed nothing.
    pub fn not_pushed(why: NotPushed) -> Counter {
        match why {
            NotPushed::NotInt => Counter::not_int,
            NotPushed::TooBig => Counter::too_big,
            NotPushed::NoHeadroom => Counter::no_headroom,
            NotPushed::Malformed(error) => Counter::malformed(error.drop_reason()),
        }
    }
}

/// The worker's own counters.
#[derive(Debug, Clone)]
pub struct Counters {
    values: [u64; COUNT],
    dirty: bool,
}

impl Default for Counters {
    fn default() -> Self {
        Counters { values: [0; COUNT], dirty: false }
    }
}

impl Counters {
    #[inline]
    pub fn add(&mut self, counter: Counter, n: u64) {
        if let Some(value) = self.values.get_mut(counter as usize) {
            *value += n;
            self.dirty = true;
        }
    }

    #[inline]
    pub fn inc(&mut self, counter: Counter) {
        self.add(counter, 1);
    }

    /// Sets a gauge (a value, not a count).
    #[inline]
    pub fn set(&mut self, counter: Counter, value: u64) {
        if let Some(slot) = self.values.get_mut(counter as usize) {
            if *slot != value {
                *slot = value;
                self.dirty = true;
            }
        }
    }

    /// Raises a gauge to `value` if it is lower.
    #[inline]
    pub fn raise(&mut self, counter: Counter, value: u64) {
        if value > self.values.get(counter as usize).copied().unwrap_or(u64::MAX) {
            self.set(counter, value);
        }
    }

    /// Lowers a gauge to `value` (at least 1: 0 means none yet) if it is
    /// higher or unset.
    #[inline]
    pub fn lower(&mut self, counter: Counter, value: u64) {
        let value = value.max(1);
        match self.values.get(counter as usize).copied() {
            Some(0) => self.set(counter, value),
            Some(current) if value < current => self.set(counter, value),
            _ => {}
        }
    }

    #[cfg(test)]
    pub fn get(&self, counter: Counter) -> u64 {
        self.values.get(counter as usize).copied().unwrap_or(0)
    }

    /// Stores changed values into `shared` (relaxed: readers only print).
    #[inline]
    pub fn publish(&mut self, shared: &SharedCounters) {
        if !self.dirty {
            return;
        }
        for (slot, value) in shared.values.iter().zip(self.values.iter()) {
            slot.store(*value, Ordering::Relaxed);
        }
        self.dirty = false;
    }
}

/// Counters the main lcore can read while the worker runs.
#[repr(align(64))]
pub struct SharedCounters {
    values: [AtomicU64; COUNT],
}

impl Default for SharedCounters {
    fn default() -> Self {
        SharedCounters { values: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl SharedCounters {
    pub fn get(&self, counter: Counter) -> u64 {
        self.values.get(counter as usize).map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// Non-zero counters, by name.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        Counter::ALL.iter().map(|c| (c.name(), self.get(*c))).filter(|(_, v)| *v != 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_copies_and_names_are_unique() {
        let shared = SharedCounters::default();
        let mut local = Counters::default();
        local.inc(Counter::rx_packets);
        local.add(Counter::malformed(DropReason::IntBadLength), 3);
        assert_eq!(shared.get(Counter::rx_packets), 0);
        local.publish(&shared);
        assert_eq!(shared.snapshot(), vec![("rx_packets", 1), ("malformed_int_bad_length", 3)]);
        let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COUNT);
    }

    /// Each IFA refusal has its own counter, named as int-core names the
    /// refusal: the counters and `Refusal::name` say the same.
    #[test]
    fn every_ifa_refusal_counts_under_its_own_name() {
        for reason in Refusal::ALL {
            assert_eq!(Counter::refused(reason).name(), reason.name());
        }
    }
}
