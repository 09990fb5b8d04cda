//! decode's INT 0.5 side: the block a domain finds in a packet (any shim
//! Type, any hop count), as JSON and as text.

// The text printer reads fields with serde_json's `value["key"]`, which
// yields Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use int_core::int05::{instruction, sink, Domain, Encapsulation, HopMetadata, Instructions, IntBlock};
use serde_json::{json, Map, Value};

/// The INT 0.5 block of the first domain that finds one into `out`, or
/// `plain`.
pub fn decode(frame: &[u8], domains: &[Domain], out: &mut Map<String, Value>) {
    for domain in domains {
        match sink::extract(frame, domain) {
            Ok(Some(found)) => {
                out.insert("kind".into(), json!("int"));
                out.insert(
                    "encapsulation".into(),
                    json!(match domain.encapsulation {
                        Encapsulation::OverTcpUdp { .. } => "int05-over-tcp-udp",
                        Encapsulation::ExtensionUdp { .. } => "int05-extension-udp",
                    }),
                );
                let block_bytes = frame.get(found.block_at..found.block_at + found.block_len).unwrap_or(&[]);
                if let Ok(block) = IntBlock::parse(block_bytes, int_core::int05::Tail::Present) {
                    out.insert("int".into(), block_json(&block));
                }
                out.insert("flow".into(), crate::schema::flow(&found.flow));
                return;
            }
            Ok(None) => {}
            Err(error) => {
                out.insert("kind".into(), json!("malformed-int"));
                out.insert("error".into(), json!(error.to_string()));
                out.insert("drop_reason".into(), json!(error.drop_reason().name()));
                return;
            }
        }
    }
    out.insert("kind".into(), json!("plain"));
}

fn hop_json(hop: &HopMetadata, instructions: Instructions) -> Value {
    let mut map = Map::new();
    for bit in instructions.each() {
        let name = bit.name().map_or_else(|| format!("reserved_{:#06x}", bit.bits()), str::to_string);
        let word = hop.word(bit);
        if bit == Instructions::PORT_IDS {
            map.insert("ingress_port".into(), json!(word >> 16));
            map.insert("egress_port".into(), json!(word & 0xffff));
        } else {
            map.insert(name, json!(word));
        }
    }
    Value::Object(map)
}

/// An INT 0.5 block, field by field, each hop's words named by the
/// instruction bits.
pub fn block_json(block: &IntBlock<'_>) -> Value {
    let h = &block.header;
    let names: Vec<&str> =
        instruction::NAMES.iter().filter(|(_, bit)| h.instructions.contains(*bit)).map(|(n, _)| *n).collect();
    json!({
        "shim_type": u8::from(block.shim.int_type),
        "length_words": block.shim.length_words,
        "version": h.version,
        "rep": h.replication,
        "c": h.copy,
        "e": h.max_hop_exceeded,
        "ins_cnt": h.instruction_count,
        "max_hop_cnt": h.max_hop_cnt,
        "total_hop_cnt": h.total_hop_cnt,
        "instructions": format!("{:#06x}", h.instructions.bits()),
        "instruction_names": names,
        "hops": block.stack.hops().map(|hop| hop_json(&hop, h.instructions)).collect::<Vec<_>>(),
        "sequence": block.sequence,
        "tail": block.tail.map(|t| json!({"protocol": t.protocol, "dst_port": t.dst_port, "dscp": t.dscp})),
    })
}

/// The text form of [`block_json`]'s block.
pub fn print_block(int: &Value) {
    println!(
        "  shim type {} length {} words | ver {} rep {} c {} e {} ins_cnt {} max_hop {} total_hop {} instructions {} {}",
        int["shim_type"],
        int["length_words"],
        int["version"],
        int["rep"],
        int["c"],
        int["e"],
        int["ins_cnt"],
        int["max_hop_cnt"],
        int["total_hop_cnt"],
        int["instructions"].as_str().unwrap_or("?"),
        int["instruction_names"]
    );
    if let Some(hops) = int["hops"].as_array() {
        for (i, hop) in hops.iter().enumerate() {
            println!("  hop {i}: {}", super::text::hop_fields(hop));
        }
    }
    if !int["sequence"].is_null() {
        println!("  sequence {}", int["sequence"]);
    }
    if !int["tail"].is_null() {
        println!(
            "  tail proto {} dst_port {} dscp {}",
            int["tail"]["protocol"], int["tail"]["dst_port"], int["tail"]["dscp"]
        );
    }
}
