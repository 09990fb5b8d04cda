//! decode's INT 2.1 and Telemetry Report 2.0 output: the JSON of a block or
//! a report datagram, and its text form.

use int_core::flow::FlowKey;
use int_core::int21::{self, tunnel, Block, Body, HeaderType, Instructions, Next};
use int_core::report::tr20::{self, IndividualReport};
use int_core::report::tr20_loss::LossReport;
use serde_json::{json, Map, Value};

/// An INT 2.1 packet's block as JSON.
pub fn block_json(found: &int21::Found<'_>, domain: &int21::Domain) -> Value {
    let shim = found.block.shim();
    let (npt, next) = match shim.next {
        Next::Dscp(dscp) => (0, json!({"original_dscp": dscp})),
        Next::UdpPort(port) => (1, json!({"original_udp_port": port})),
        Next::IpProtocol(protocol) => (2, json!({"original_protocol": protocol})),
    };
    let mut out = json!({
        "version": "2.1",
        "type": header_type_name(shim.header_type),
        "npt": npt,
        "next": next,
        "length_words": shim.length_words,
    });
    let body = match found.block {
        Block::Md(md) => Body::Md(md.as_stack()),
        Block::Mx(mx) => Body::Mx { header: mx.header, source_inserted: mx.source_inserted },
    };
    let fields = body_json(&body, &domain.source_only);
    if let (Some(out), Value::Object(fields)) = (out.as_object_mut(), fields) {
        out.extend(fields);
    }
    out
}

/// INT 2.1 in a VXLAN-GPE (UDP 4790) or Geneve (UDP 6081) payload into
/// `out`: the tunnel header and the INT body. False when `port` is neither.
pub fn decode_tunnel(
    port: u16,
    payload: &[u8],
    source_only: &int21::SourceOnly,
    out: &mut Map<String, Value>,
) -> bool {
    use int_core::wire::{geneve, vxlan_gpe};
    let read = match port {
        vxlan_gpe::UDP_PORT => tunnel::gpe_int(payload, *source_only).map(|found| {
            found.map(|gpe| {
                let tunnel = json!({"type": "vxlan-gpe", "vni": gpe.gpe.vni, "flags": gpe.gpe.flags,
                    "int_type": header_type_name(gpe.shim.header_type), "length_words": gpe.shim.length_words,
                    "g": gpe.shim.from_vxlan, "next_protocol": gpe.shim.next_protocol});
                (tunnel, gpe.body)
            })
        }),
        geneve::UDP_PORT => tunnel::geneve_int(payload, *source_only).map(|found| {
            found.map(|g| {
                let tunnel = json!({"type": "geneve", "vni": g.geneve.vni, "protocol_type": g.geneve.protocol_type,
                    "options_words": g.geneve.options_words, "option_at": g.option_at,
                    "option_class": format!("{:#06x}", g.option.class),
                    "int_type": tunnel::geneve_header_type(g.option.option_type).map_or("?", header_type_name),
                    "length_words": g.option.length_words});
                (tunnel, g.body)
            })
        }),
        _ => return false,
    };
    match read {
        Ok(Some((tunnel, body))) => {
            let mut int = body_json(&body, source_only);
            let field = |key: &str| tunnel.get(key).cloned().unwrap_or_default();
            if let Some(fields) = int.as_object_mut() {
                fields.insert("type".into(), field("int_type"));
                fields.insert("length_words".into(), field("length_words"));
                fields.insert("next".into(), json!({"tunnel": field("type")}));
            }
            out.insert("kind".into(), json!("int"));
            out.insert("tunnel".into(), tunnel);
            out.insert("int21".into(), int);
        }
        Ok(None) => {
            out.insert("kind".into(), json!("tunnel"));
        }
        Err(error) => {
            out.insert("kind".into(), json!("malformed"));
            out.insert("error".into(), json!(error.to_string()));
        }
    }
    true
}

fn header_type_name(header_type: HeaderType) -> &'static str {
    match header_type {
        HeaderType::Md => "md",
        HeaderType::Mx => "mx",
        HeaderType::Destination => "destination",
    }
}

/// An INT-MD or INT-MX header and its metadata, whatever carries them.
pub fn body_json(body: &Body<'_>, source_only: &int21::SourceOnly) -> Value {
    match body {
        Body::Md(md) => {
            let h = md.header;
            let sequence = source_only.sequence_of(md);
            json!({
                "d": h.discard, "e": h.max_hop_exceeded, "m": h.mtu_exceeded, "hop_ml": h.hop_ml,
                "remaining_hop_cnt": h.remaining_hop_cnt,
                "instructions": format!("{:#06x}", h.instructions.bits()),
                "instruction_names": names(h.instructions),
                "domain_id": h.domain_id, "ds_instructions": h.ds_instructions, "ds_flags": h.ds_flags,
                "hops": md.hops().map(|hop| crate::records::hop21(&hop, h.instructions)).collect::<Vec<_>>(),
                "source_only_bytes": md.source_only().len(),
                // Another domain's words are shown as carried.
                "source_only_hex": hex(md.source_only()),
                "sequence": sequence,
            })
        }
        Body::Mx { header: h, source_inserted } => json!({
            "d": h.discard,
            "instructions": format!("{:#06x}", h.instructions.bits()),
            "instruction_names": names(h.instructions),
            "domain_id": h.domain_id, "ds_instructions": h.ds_instructions, "ds_flags": h.ds_flags,
            "source_inserted_bytes": source_inserted.len(),
            "source_inserted_hex": hex(source_inserted),
        }),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn names(instructions: Instructions) -> Vec<&'static str> {
    instructions.each().filter_map(Instructions::name).collect()
}

/// A Telemetry Report 2.0 datagram as JSON: the group's fields as collect
/// prints them, then each individual report (collect's record of it, with
/// the wire's detail beside); one that does not parse ends the list with
/// its error. Loss reports of the domain with Domain Specific ID
/// `domain_id` are read as such too.
pub fn report_json(report: &tr20::Report<'_>, domains: &[int21::Domain], domain_id: u16) -> Value {
    let mut reports = Vec::new();
    let mut error = None;
    for individual in report.reports() {
        match individual {
            Ok(individual) => reports.push(individual_json(&individual, domains, domain_id)),
            Err(e) => error = Some(e.to_string()),
        }
    }
    let mut out = crate::records::to_map(&crate::records::tr20_group(&report.group));
    out.insert("version".into(), json!(2));
    out.insert("reports".into(), json!(reports));
    out.insert("error".into(), json!(error));
    Value::Object(out)
}

/// The packet a report carries (InType 3, 4, 5): its flow as far as its
/// headers go, and its INT 2.1 block, every hop, where it has one of
/// `domains`.
fn packet_json(report: &IndividualReport<'_>, domains: &[int21::Domain]) -> Option<(Option<FlowKey>, Value)> {
    let ethernet = match report.in_type {
        tr20::InType::Ethernet => true,
        tr20::InType::Ipv4 | tr20::InType::Ipv6 => false,
        _ => return None,
    };
    let packet = int21::reported_packet(report.inner, ethernet);
    for domain in domains {
        if let Some(Ok(Some((body, flow)))) = packet.map(|p| int21::find_in_report(p, domain)) {
            return Some((Some(flow), json!({"int21": body_json(&body, &domain.source_only)})));
        }
    }
    Some((int21::reported_flow(report.inner, ethernet), json!({"int21": null})))
}

fn individual_json(report: &IndividualReport<'_>, domains: &[int21::Domain], domain_id: u16) -> Value {
    let packet = packet_json(report, domains);
    let flow = packet.as_ref().and_then(|(flow, _)| flow.as_ref());
    let mut out = crate::records::to_map(&crate::records::tr20_individual(report, flow));
    out.extend([
        ("report_len_words".to_string(), json!(report.report_len_words)),
        ("md_len_words".to_string(), json!(report.md_len_words)),
        (
            "int".to_string(),
            json!(report.int.map(|int| json!({
            "rep_md_bits": format!("{:#06x}", int.rep_md_bits),
            "domain_id": int.domain_id, "ds_md_bits": int.ds_md_bits, "ds_md_status": int.ds_md_status,
            "metadata": crate::records::hop21(&int.metadata, Instructions::from_bits_retain(int.rep_md_bits)),
            "ds_metadata_bytes": int.ds_metadata.len(),
        }))),
        ),
        ("packet".to_string(), json!(packet.map(|(_, packet)| packet))),
        (
            "loss".to_string(),
            json!(LossReport::parse(report, domain_id).map(|loss| crate::records::tr20_loss(&loss))),
        ),
        ("inner_bytes".to_string(), json!(report.inner.len())),
    ]);
    Value::Object(out)
}

/// The text form of [`block_json`].
pub fn print_block(int: &Value) {
    println!(
        "  int 2.1 {} npt {} {} length {} words | d {} e {} m {} hop_ml {} remaining {} instructions {} {} domain {}",
        int["type"].as_str().unwrap_or("?"),
        int["npt"],
        int["next"],
        int["length_words"],
        int["d"],
        int["e"],
        int["m"],
        int["hop_ml"],
        int["remaining_hop_cnt"],
        int["instructions"].as_str().unwrap_or("?"),
        int["instruction_names"],
        int["domain_id"]
    );
    for (i, hop) in int["hops"].as_array().into_iter().flatten().enumerate() {
        println!("  hop {i}: {}", super::text::hop_fields(hop));
    }
    if !int["sequence"].is_null() {
        println!("  source-only: packet number {}", int["sequence"]);
    } else if int["source_only_hex"].as_str().is_some_and(|hex| !hex.is_empty()) {
        println!("  source-only: {} (another domain's)", int["source_only_hex"].as_str().unwrap_or(""));
    }
    if int["source_inserted_hex"].as_str().is_some_and(|hex| !hex.is_empty()) {
        println!("  source-inserted: {}", int["source_inserted_hex"].as_str().unwrap_or(""));
    }
}

/// The text form of [`report_json`].
pub fn print_report(report: &Value) {
    println!(
        "  report tr 2.0 seq {} hw_id {} node {}",
        report["report_seq"], report["hw_id"], report["report_node"]
    );
    for individual in report["reports"].as_array().into_iter().flatten() {
        println!(
            "  individual rep_type {} in_type {} length {} md_length {} d {} q {} f {} i {} | {} | {} inner bytes",
            individual["rep_type"],
            individual["in_type"],
            individual["report_len_words"],
            individual["md_len_words"],
            individual["d"],
            individual["q"],
            individual["f"],
            individual["i"],
            individual["int"],
            individual["inner_bytes"]
        );
        if let Some(drop) = individual["drop"].as_object() {
            let name = drop.get("reason_name").and_then(Value::as_str).unwrap_or("?");
            println!("    dropped: reason {} ({name}) queue {}", drop["reason"], drop["queue_id"]);
        }
        let packet = &individual["packet"];
        if !packet.is_null() {
            let flow = &individual["flow"];
            match flow.as_object() {
                Some(_) => println!("    packet: {}", super::text::flow(flow, ">")),
                None => println!("    packet: headers too short for its flow"),
            }
            let md = &packet["int21"];
            if !md.is_null() {
                println!(
                    "    int 2.1 hop_ml {} remaining {} instructions {}",
                    md["hop_ml"], md["remaining_hop_cnt"], md["instruction_names"]
                );
                for (i, hop) in md["hops"].as_array().into_iter().flatten().enumerate() {
                    println!("    hop {i}: {}", super::text::hop_fields(hop));
                }
            }
        }
    }
    if !report["error"].is_null() {
        println!("  error: {}", report["error"].as_str().unwrap_or("?"));
    }
}
