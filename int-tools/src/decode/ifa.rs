//! decode's IFA 2.0 side: the IFA header, the metadata header, every hop
//! (newest first, Broadcom's LNS 1 layout, docs/ifa.md), the header the
//! IFA header carries (TCP, UDP or GRE) and the tunnel after the stack,
//! and where each part lies; a packet IFA refuses is named with the
//! reason a terminator counts it under ([`Refusal::name`]).

// The text printer reads fields with serde_json's `value["key"]`, which
// yields Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use int_core::ifa::{Action, Carrier, Domain, Flags, HopRepr, Located, Payload};
use int_core::wire::geneve::GeneveRepr;
use int_core::wire::vxlan_gpe::VxlanGpeRepr;
use serde_json::{json, Map, Value};

/// The IFA of `frame`, if its IP protocol is the domain's, into `out`:
/// `kind` `ifa` and the block as `ifa`, or `malformed-ifa` with `error`
/// and `drop_reason`; whether the packet was IFA's.
pub fn decode(frame: &[u8], domain: &Domain, out: &mut Map<String, Value>) -> bool {
    match domain.locate(frame) {
        Ok(Some(found)) => {
            if let Carrier::Tcp { src_port, dst_port } | Carrier::Udp { src_port, dst_port, .. } =
                found.carrier
            {
                out.insert("src_port".into(), json!(src_port));
                out.insert("dst_port".into(), json!(dst_port));
            }
            out.insert("kind".into(), json!("ifa"));
            out.insert("ifa".into(), block_json(frame, &found));
            true
        }
        Ok(None) => false,
        Err(refused) => {
            out.insert("kind".into(), json!("malformed-ifa"));
            out.insert("error".into(), json!(refused.error.to_string()));
            out.insert("drop_reason".into(), json!(refused.reason.name()));
            true
        }
    }
}

/// An IFA packet's parts as JSON, field by field.
pub fn block_json(frame: &[u8], found: &Located) -> Value {
    let (h, md) = (&found.header, &found.md);
    let flag = |f: Flags| h.flags.contains(f);
    json!({
        "header": {
            "version": h.version,
            "gns": h.gns,
            "next_header": h.next_header,
            "flags": format!("{:#04x}", h.flags.bits()),
            "mf": flag(Flags::METADATA_FRAGMENT),
            "ts": flag(Flags::TAIL_STAMP),
            "i": flag(Flags::INBAND),
            "ta": flag(Flags::TURN_AROUND),
            "c": flag(Flags::CHECKSUM),
            "max_length": h.max_length,
        },
        "md": {
            "request_vector": md.request_vector,
            "action_vector": format!("{:#04x}", md.action.bits()),
            "l": md.action.contains(Action::LOSS),
            "c": md.action.contains(Action::COLOR),
            "hop_limit": md.hop_limit,
            "current_length": md.current_length,
        },
        "hop_count": found.hop_count(),
        "hops": found.stack(frame).hops().map(|hop| hop_json(&hop)).collect::<Vec<_>>(),
        "carrier": carrier_json(frame, found),
        "payload": payload_name(found.carrier.payload()),
        "tunnel": tunnel_json(frame, found),
        "offsets": {
            "ip": found.ip.l3,
            "ifa": found.header_at,
            "l4": found.l4_at,
            "md": found.md_at,
            "stack": found.stack_at,
            "payload": found.payload_at,
            "ip_end": found.ip.end,
        },
    })
}

fn hop_json(hop: &HopRepr) -> Value {
    json!({
        "lns": hop.lns,
        "device_id": hop.device_id,
        "ip_ttl": hop.ip_ttl,
        "egress_port_speed": hop.egress_port_speed.code(),
        "egress_port_speed_gbps": hop.egress_port_speed.gbps(),
        "congestion": hop.congestion,
        "queue_id": hop.queue_id,
        "rx_seconds": hop.rx_seconds,
        "rx_nanoseconds": hop.rx_nanoseconds,
        "residence_ns": hop.residence_ns,
        "egress_system_port": hop.egress_system_port,
        "ingress_system_port": hop.ingress_system_port,
        "opaque": hop.opaque,
    })
}

/// The header after the IFA header; TCP's and UDP's checksum as carried
/// (whether it covers the metadata is the zone's `L4Rule`).
fn carrier_json(frame: &[u8], found: &Located) -> Value {
    let word = |at: usize| frame.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    match found.carrier {
        Carrier::Tcp { src_port, dst_port } => json!({
            "type": "tcp", "src_port": src_port, "dst_port": dst_port,
            "checksum": word(found.l4_at + 16),
        }),
        Carrier::Udp { src_port, dst_port, length } => json!({
            "type": "udp", "src_port": src_port, "dst_port": dst_port, "length": length,
            "checksum": word(found.l4_at + 6),
        }),
        Carrier::Gre(gre) => json!({
            "type": "gre", "protocol": format!("{:#06x}", gre.protocol),
            "checksum": gre.checksum, "key": gre.key, "sequence": gre.sequence,
        }),
    }
}

fn payload_name(payload: Payload) -> String {
    match payload {
        Payload::Data => "data".into(),
        Payload::Vxlan => "vxlan".into(),
        Payload::VxlanGpe => "vxlan-gpe".into(),
        Payload::Geneve => "geneve".into(),
        Payload::Ethernet => "ethernet".into(),
        Payload::Ipv4 => "ipv4".into(),
        Payload::Ipv6 => "ipv6".into(),
        Payload::OtherGre(protocol) => format!("gre-{protocol:#06x}"),
    }
}

/// The UDP tunnel header after the stack (VXLAN, VXLAN-GPE, Geneve), or
/// null: none, or cut short.
fn tunnel_json(frame: &[u8], found: &Located) -> Value {
    let bytes = frame.get(found.payload_at..found.ip.end).unwrap_or_default();
    match found.carrier.payload() {
        Payload::Vxlan => match bytes.get(..8) {
            Some(&[flags, _, _, _, a, b, c, _]) => {
                json!({"type": "vxlan", "flags": flags, "vni": u32::from_be_bytes([0, a, b, c])})
            }
            _ => Value::Null,
        },
        Payload::VxlanGpe => VxlanGpeRepr::parse(bytes).map_or(Value::Null, |gpe| {
            json!({"type": "vxlan-gpe", "flags": gpe.flags, "vni": gpe.vni, "next_protocol": gpe.next_protocol})
        }),
        Payload::Geneve => GeneveRepr::parse(bytes).map_or(Value::Null, |g| {
            json!({"type": "geneve", "vni": g.vni, "protocol_type": g.protocol_type,
                "options_words": g.options_words})
        }),
        _ => Value::Null,
    }
}

/// The text form of [`block_json`].
pub fn print(ifa: &Value) {
    let (h, md, carrier) = (&ifa["header"], &ifa["md"], &ifa["carrier"]);
    let names = |value: &Value, names: &[&str]| {
        let set: Vec<&str> = names.iter().copied().filter(|n| value[*n] == true).collect();
        if set.is_empty() {
            "-".to_string()
        } else {
            set.join("|")
        }
    };
    println!(
        "  ifa v{} gns {} next header {} flags {} {} max length {} words",
        h["version"],
        h["gns"],
        h["next_header"],
        h["flags"].as_str().unwrap_or("?"),
        names(h, &["mf", "ts", "i", "ta", "c"]).to_uppercase(),
        h["max_length"]
    );
    println!(
        "  ifa metadata request {} action {} {} hop limit {} current length {} words ({} hops)",
        md["request_vector"],
        md["action_vector"].as_str().unwrap_or("?"),
        names(md, &["l", "c"]).to_uppercase(),
        md["hop_limit"],
        md["current_length"],
        ifa["hop_count"]
    );
    let fields = |value: &Value| {
        let fields: Vec<String> = value
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, v)| *k != "type" && !v.is_null())
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect()
            })
            .unwrap_or_default();
        fields.join(" ")
    };
    println!(
        "  ifa carrier {} {} | payload {}",
        carrier["type"].as_str().unwrap_or("?"),
        fields(carrier),
        ifa["payload"].as_str().unwrap_or("?")
    );
    if !ifa["tunnel"].is_null() {
        println!("  ifa tunnel {} {}", ifa["tunnel"]["type"].as_str().unwrap_or("?"), fields(&ifa["tunnel"]));
    }
    for (i, hop) in ifa["hops"].as_array().into_iter().flatten().enumerate() {
        println!("  hop {i}: {}", super::text::hop_fields(hop));
    }
    println!("  ifa offsets {}", fields(&ifa["offsets"]));
}

#[cfg(test)]
mod tests {
    use int_core::ifa::Refusal;

    use super::*;

    const SCAPY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/ifa/scapy_packets.pcap");

    fn scapy_frames() -> Vec<Vec<u8>> {
        let file = std::fs::File::open(SCAPY).unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
        let mut frames = Vec::new();
        while let Some(packet) = reader.next_packet() {
            frames.push(packet.unwrap().data.into_owned());
        }
        frames
    }

    /// Every prefix of every scapy packet, and each with one byte of its
    /// IFA flipped, is read or refused by name, never a panic; a refusal
    /// is always one of `Refusal`'s names.
    #[test]
    fn every_cut_and_every_flipped_byte_is_read_or_named() {
        let domain = Domain::default();
        let names: Vec<&str> = Refusal::ALL.iter().map(|r| r.name()).collect();
        let mut refused = std::collections::BTreeSet::new();
        for frame in scapy_frames() {
            let mut cases: Vec<Vec<u8>> = (0..frame.len()).map(|len| frame[..len].to_vec()).collect();
            for at in 34..frame.len().min(34 + 48) {
                let mut flipped = frame.clone();
                flipped[at] ^= 0xff;
                cases.push(flipped);
            }
            for case in cases {
                let mut out = Map::new();
                if decode(&case, &domain, &mut out) && out["kind"] == "malformed-ifa" {
                    let reason = out["drop_reason"].as_str().unwrap().to_string();
                    assert!(names.contains(&reason.as_str()), "{reason}");
                    refused.insert(reason);
                }
            }
        }
        assert!(refused.len() >= 5, "{refused:?}");
    }

    /// Another domain's protocol number is not IFA of this one.
    #[test]
    fn another_protocol_is_not_ifa() {
        let frame = scapy_frames().remove(0);
        let mut out = Map::new();
        assert!(!decode(&frame, &Domain { protocol: 131 }, &mut out));
        assert!(out.is_empty());
        assert!(decode(&frame, &Domain::default(), &mut out));
        assert_eq!(out["kind"], "ifa");
        assert_eq!(out["ifa"]["hops"].as_array().unwrap().len(), 2);
    }
}
