//! How int-tools names an IFA hop's fields against scapy's `IFAMd`
//! (pull request 4235), for the tests that check int-tools' output
//! against `tests/ifa/scapy_packets.json`.

use serde_json::Value;

/// Each LNS 1 hop field: int-tools' name, scapy's.
pub const HOP_FIELDS: [(&str, &str); 11] = [
    ("lns", "lns"),
    ("device_id", "device_id"),
    ("ip_ttl", "ttl"),
    ("egress_port_speed", "speed"),
    ("congestion", "ecn"),
    ("queue_id", "qid"),
    ("rx_seconds", "rx_sec"),
    ("rx_nanoseconds", "rx_nsec"),
    ("residence_ns", "latency"),
    ("egress_system_port", "dport"),
    ("ingress_system_port", "sport"),
];

/// The three opaque words scapy's fields make up.
pub fn opaque(fields: &Value) -> Value {
    let f = |k: &str| fields[k].as_u64().unwrap();
    serde_json::json!([f("qbytes"), (f("rsvd0") << 16) | f("qcells"), f("rsvd1")])
}

/// Asserts `hop` (int-tools' JSON) says what scapy's `fields` built.
pub fn check_hop(hop: &Value, fields: &Value, what: &Value) {
    for (ours, theirs) in HOP_FIELDS {
        assert_eq!(hop[ours].as_u64(), fields[theirs].as_u64(), "{ours}: {what}");
    }
    assert_eq!(hop["opaque"], opaque(fields), "{what}");
}
