//! IPFIX messages on arbitrary bytes, read as collect reads an IFA
//! terminator's export: no panic; a message read has its Length; every set
//! lies inside it; each template read writes back to its bytes; with the
//! templates of the message itself (as an exporter that sends the
//! template with its data), each IFA record read writes back to its bytes
//! and its headers and stack are either refused by an IFA reason or read
//! as whole hops within Max Length.
#![no_main]

use int_core::ifa;
use int_core::report::ifa_ipfix::{Elements, Layout};
use int_core::wire::ipfix::{self, Field, Message};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = Message::parse(data) else { return };
    assert_eq!(usize::from(message.header.length), data.len());
    let elements = [Elements::default(), Elements { headers: 1, stack: 2, packet: 3, enterprise: None }];
    let mut layouts: Vec<(u16, Layout)> = Vec::new();
    let mut inside = ipfix::MESSAGE_HEADER_LEN;
    for set in message.sets() {
        let Ok(set) = set else { break };
        inside += ipfix::SET_HEADER_LEN + set.body.len();
        assert!(inside <= data.len());
        match set.id {
            ipfix::TEMPLATE_SET_ID => {
                for template in ipfix::templates(set.body) {
                    let Ok(template) = template else { break };
                    let fields: Vec<Field> = template.fields().collect();
                    assert_eq!(fields.len(), usize::from(template.field_count));
                    let mut out = vec![0u8; 4 + 8 * fields.len()];
                    let len = ipfix::emit_template(&mut out, template.id, &fields).expect("a template read writes");
                    let again: Vec<Field> =
                        ipfix::templates(&out[..len]).next().unwrap().unwrap().fields().collect();
                    assert_eq!(again, fields);
                    for e in &elements {
                        if let Ok(layout) = Layout::of(&template, e) {
                            layouts.push((template.id, layout));
                        }
                    }
                }
            }
            id => {
                for (_, layout) in layouts.iter().filter(|(t, _)| *t == id) {
                    for record in layout.records(set.body) {
                        let Ok(record) = record else { break };
                        check(&record);
                    }
                }
            }
        }
    }
});

fn check(record: &int_core::report::ifa_ipfix::IfaRecord<'_>) {
    assert_eq!(record.headers.len(), 8);
    let mut out = vec![0u8; record.len()];
    assert_eq!(record.emit(&mut out), Ok(record.len()));
    match ifa::exported(record.headers, record.stack) {
        Ok(exported) => {
            assert_eq!(exported.stack.hop_count() * ifa::hop::HOP_LEN, record.stack.len());
            assert_eq!(exported.md.stack_len(), record.stack.len());
            assert!(exported.md.current_length <= exported.header.max_length);
            assert_eq!(exported.stack.hops().count(), exported.stack.hop_count());
        }
        Err(refused) => assert!(ifa::Refusal::ALL.contains(&refused.reason)),
    }
}
