use super::*;
use crate::ifa::{self, Refusal};
use crate::wire::ipfix::{templates, Message, Set};

/// The template message the SDK's example would send: version 10, length
/// 48, a Template Set (id 2, length 32) with Template ID 257 and three
/// enterprise fields (E bit, ids 100, 101, 102; 8 bytes, then 65535 twice;
/// enterprise number 0).
#[rustfmt::skip]
const TEMPLATE: &[u8] = &[
    0x00, 0x0a, 0x00, 0x30,             // version 10, length 48
    0x65, 0x00, 0x00, 0x00,             // export time
    0x00, 0x00, 0x00, 0x00,             // sequence: no data record yet
    0x12, 0x34, 0x56, 0x78,             // the example's observation domain
    0x00, 0x02, 0x00, 0x20,             // template set, 32 bytes
    0x01, 0x01, 0x00, 0x03,             // template 257, 3 fields
    0x80, 0x64, 0x00, 0x08,             // E, 100: the IFA headers, 8 bytes
    0x00, 0x00, 0x00, 0x00,             // enterprise 0
    0x80, 0x65, 0xff, 0xff,             // E, 101: the stack, variable
    0x00, 0x00, 0x00, 0x00,
    0x80, 0x66, 0xff, 0xff,             // E, 102: the packet, variable
    0x00, 0x00, 0x00, 0x00,
];

fn head() -> MessageHeader {
    MessageHeader { length: 0, export_time: 0x6500_0000, sequence: 0, domain: 0x1234_5678 }
}

#[test]
fn the_template_is_written_as_the_sdk_lays_it_out() {
    let mut buf = [0u8; 64];
    let len = emit_template_message(&mut buf, head(), DEFAULT_TEMPLATE_ID, &Elements::default()).unwrap();
    assert_eq!(&buf[..len], TEMPLATE);
    for cut in 0..len {
        assert!(emit_template_message(&mut buf[..cut], head(), 257, &Elements::default()).is_err(), "{cut}");
    }
}

/// Headers: IFA version 2, GNS 15, Next Header UDP, flags I, Max Length
/// 255; metadata header: RV 0, AV 0, Hop Limit 0xfe, Current Length 8 (one
/// hop). The hop: LNS 1, Device ID 0xeeeee, TTL 64, ...
#[rustfmt::skip]
const HEADERS: [u8; 8] = [0x2f, 17, 0x04, 0xff, 0, 0, 0xfe, 8];
#[rustfmt::skip]
const HOP: [u8; 32] = [
    0x1e, 0xee, 0xee, 0x40,             // LNS 1, Device ID 0xeeeee, TTL 64
    0x40, 0x50, 0x00, 0x07,             // 100G, congestion 0, queue 5, 7 s
    0x00, 0x03, 0x00, 0x01,             // egress port 3, ingress port 1
    0x00, 0x00, 0x03, 0xe8,             // 1000 ns
    0x00, 0x00, 0x01, 0xf4,             // resident 500 ns
    0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, // opaque
];

#[test]
fn a_record_round_trips_in_a_data_message() {
    let packet: Vec<u8> = (0..300u16).map(|n| n as u8).collect();
    let record = IfaRecord { headers: &HEADERS, stack: &HOP, packet: &packet };
    let mut buf = [0u8; 512];
    let head = MessageHeader { sequence: 9, ..head() };
    let len = emit_data_message(&mut buf, head, 257, &record).unwrap();
    // 16 + 4 + 8 + (1 + 32) + (3 + 300)
    assert_eq!(len, 364);
    #[rustfmt::skip]
    assert_eq!(&buf[..24], &[
        0x00, 0x0a, 0x01, 0x6c, 0x65, 0, 0, 0, 0, 0, 0, 9, 0x12, 0x34, 0x56, 0x78,
        0x01, 0x01, 0x01, 0x5c,         // data set of template 257, 348 bytes
        0x2f, 17, 0x04, 0xff,
    ]);
    assert_eq!(&buf[28..30], &[32, 0x1e]);
    assert_eq!(&buf[61..64], &[255, 0x01, 0x2c]);
    let layout = layout_of(TEMPLATE);
    let message = Message::parse(&buf[..len]).unwrap();
    let Some(Ok(Set { id: 257, body })) = message.sets().next() else { panic!("no data set") };
    let records: Vec<_> = layout.records(body).collect::<Result<_, _>>().unwrap();
    assert_eq!(records, vec![record]);
    let exported = ifa::exported(records[0].headers, records[0].stack).unwrap();
    let hop = exported.stack.hops().next().unwrap();
    assert_eq!((hop.device_id, hop.ip_ttl, hop.queue_id, hop.rx_seconds), (0xeeeee, 64, 5, 7));
    assert_eq!((hop.egress_system_port, hop.ingress_system_port, hop.residence_ns), (3, 1, 500));
    assert_eq!(hop.as_hop(7_000_001_000).ingress_timestamp, Some(7_000_001_000));
}

fn layout_of(message: &[u8]) -> Layout {
    let message = Message::parse(message).unwrap();
    let set = message.sets().next().unwrap().unwrap();
    let template = templates(set.body).next().unwrap().unwrap();
    Layout::of(&template, &Elements::default()).unwrap()
}

/// Every cut of a record inside its set is refused by the field it cuts;
/// a set holding less than the smallest record is padding.
#[test]
fn cut_records_are_refused_and_short_tails_are_padding() {
    let layout = layout_of(TEMPLATE);
    let record = IfaRecord { headers: &HEADERS, stack: &HOP, packet: &[0x45; 20] };
    let mut buf = [0u8; 128];
    let len = record.emit(&mut buf).unwrap();
    for cut in 0..len {
        let found: Vec<_> = layout.records(&buf[..cut]).collect();
        // 8 + 1 + 1: the smallest record of this template.
        if cut < 10 {
            assert!(found.is_empty(), "cut at {cut}");
        } else {
            assert_eq!(found, vec![Err(Malformed::FieldLength)], "cut at {cut}");
        }
    }
    let two: Vec<u8> = [&buf[..len], &buf[..len], &[0u8; 3]].concat();
    assert_eq!(layout.records(&two).count(), 2);
}

#[test]
fn templates_without_the_three_elements_are_told_apart() {
    let elements = Elements::default();
    let with = |fields: &[Field]| {
        let mut buf = [0u8; 256];
        let len = ipfix::emit_template(&mut buf, 300, fields).unwrap();
        let template = templates(&buf[..len]).next().unwrap().unwrap();
        Layout::of(&template, &elements)
    };
    let [h, s, p] = elements.fields();
    let other = Field { id: 8, length: 4, enterprise: None };
    assert!(with(&[h, s, p]).is_ok());
    assert!(with(&[other, p, h, other, s]).is_ok());
    assert_eq!(with(&[h, s]), Err(NotIfa::Other));
    assert_eq!(with(&[h, s, Field { enterprise: Some(4413), ..p }]), Err(NotIfa::Other));
    assert_eq!(with(&[Field { length: 12, ..h }, s, p]), Err(NotIfa::Lengths));
    assert_eq!(with(&[h, Field { length: 32, ..s }, p]), Err(NotIfa::Lengths));
    assert_eq!(with(&[h, s, p, s]), Err(NotIfa::Lengths));
    assert_eq!(with(&[other; 17]), Err(NotIfa::TooManyFields));
}

/// A template with other fields: theirs are skipped, the three read.
#[test]
fn other_fields_are_skipped() {
    let elements = Elements { headers: 1, stack: 2, packet: 3, enterprise: None };
    let [h, s, p] = elements.fields();
    let other = Field { id: 8, length: 4, enterprise: None };
    let mut buf = [0u8; 64];
    let len = ipfix::emit_template(&mut buf, 256, &[other, h, s, p]).unwrap();
    let template = templates(&buf[..len]).next().unwrap().unwrap();
    let layout = Layout::of(&template, &elements).unwrap();
    let body: Vec<u8> = [&[10, 0, 0, 1][..], &HEADERS, &[0], &[2, 0xaa, 0xbb]].concat();
    let record = layout.records(&body).next().unwrap().unwrap();
    assert_eq!(record, IfaRecord { headers: &HEADERS, stack: &[], packet: &[0xaa, 0xbb] });
}

/// The export's headers and stack are refused as the walk refuses them.
#[test]
fn exported_headers_lie_as_packets_do() {
    let refusal =
        |headers: &[u8], stack: &[u8]| ifa::exported(headers, stack).map(|_| ()).map_err(|r| r.reason);
    assert_eq!(refusal(&HEADERS, &HOP), Ok(()));
    let with = |at: usize, value: u8| {
        let mut h = HEADERS;
        h[at] = value;
        h
    };
    assert_eq!(refusal(&with(0, 0x1f), &HOP), Err(Refusal::Version));
    assert_eq!(refusal(&with(0, 0x20), &HOP), Err(Refusal::GlobalNameSpace));
    assert_eq!(refusal(&with(2, 0x10), &HOP), Err(Refusal::MetadataFragment));
    assert_eq!(refusal(&with(2, 0x08), &HOP), Err(Refusal::TailStamp));
    assert_eq!(refusal(&with(2, 0x01), &HOP), Err(Refusal::ChecksumHeader));
    assert_eq!(refusal(&with(7, 7), &HOP), Err(Refusal::LengthNotHops));
    assert_eq!(refusal(&with(3, 4), &HOP), Err(Refusal::LengthPastMax));
    assert_eq!(refusal(&with(7, 16), &HOP), Err(Refusal::StackPastPacket));
    assert_eq!(refusal(&HEADERS, &[HOP, HOP].concat()), Err(Refusal::LengthNotHops));
    for cut in 0..HEADERS.len() {
        assert_eq!(refusal(&HEADERS[..cut], &HOP), Err(Refusal::Truncated), "{cut}");
    }
    assert_eq!(refusal(&with(7, 0), &[]), Ok(()));
}
