use super::*;

/// RFC 7011 section 3.1's header, a Template Set (3.3.2) with one template
/// record (3.4.1): Template ID 256, an IANA field (sourceIPv4Address, 4
/// bytes) and an enterprise one (E bit, element 1, 8 bytes, enterprise
/// 32473); then a Data Set of template 256 with one record.
#[rustfmt::skip]
const GOLDEN: &[u8] = &[
    0x00, 0x0a, 0x00, 0x30,             // version 10, length 48
    0x60, 0x00, 0x00, 0x01,             // export time
    0x00, 0x00, 0x00, 0x07,             // sequence number
    0x01, 0x02, 0x03, 0x04,             // observation domain id
    0x00, 0x02, 0x00, 0x14,             // set id 2 (templates), length 20
    0x01, 0x00, 0x00, 0x02,             // template 256, 2 fields
    0x00, 0x08, 0x00, 0x04,             // sourceIPv4Address, 4 bytes
    0x80, 0x01, 0x00, 0x08,             // E=1, element 1, 8 bytes
    0x00, 0x00, 0x7e, 0xd9,             // enterprise 32473
    0x01, 0x00, 0x00, 0x0c,             // set id 256 (data), length 12
    10, 0, 0, 1, 0, 0, 0, 0,            // 8 bytes of data
];

fn fields() -> [Field; 2] {
    [Field { id: 8, length: 4, enterprise: None }, Field { id: 1, length: 8, enterprise: Some(32473) }]
}

/// The golden message's first 36 bytes, written.
#[test]
fn a_template_message_is_written_as_rfc_7011_draws_it() {
    let mut buf = [0u8; 64];
    let header = MessageHeader { length: 36, export_time: 0x6000_0001, sequence: 7, domain: 0x0102_0304 };
    let mut len = header.emit(&mut buf).unwrap();
    let set_at = len;
    len += SET_HEADER_LEN;
    len += emit_template(&mut buf[len..], 256, &fields()).unwrap();
    emit_set_header(&mut buf[set_at..], TEMPLATE_SET_ID, len - set_at).unwrap();
    let mut expected = GOLDEN[..36].to_vec();
    expected[3] = 36;
    assert_eq!(&buf[..len], &expected[..]);
}

#[test]
fn the_golden_message_reads_back() {
    let mut message = GOLDEN[..36].to_vec();
    message[3] = 36;
    let parsed = Message::parse(&message).unwrap();
    assert_eq!(
        parsed.header,
        MessageHeader { length: 36, export_time: 0x6000_0001, sequence: 7, domain: 0x0102_0304 }
    );
    let sets: Vec<_> = parsed.sets().collect();
    assert_eq!(sets.len(), 1);
    let set = sets[0].unwrap();
    assert_eq!(set.id, TEMPLATE_SET_ID);
    let records: Vec<_> = templates(set.body).collect::<Result<_, _>>().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].id, 256);
    assert!(!records[0].is_withdrawal());
    assert_eq!(records[0].fields().collect::<Vec<_>>(), fields());
}

/// Cut anywhere, a message's Length lies.
#[test]
fn every_cut_of_a_message_is_refused_by_its_length() {
    let mut message = GOLDEN[..36].to_vec();
    message[3] = 36;
    for cut in 0..message.len() {
        let expected = if cut < MESSAGE_HEADER_LEN { Malformed::Truncated } else { Malformed::MessageLength };
        assert_eq!(Message::parse(&message[..cut]), Err(expected), "cut at {cut}");
    }
}

#[test]
fn lying_set_lengths_and_reserved_ids_are_refused() {
    let mut message = GOLDEN.to_vec();
    for (set_len, expected) in
        [(0u16, Malformed::SetLength), (3, Malformed::SetLength), (13, Malformed::SetLength)]
    {
        message[38..40].copy_from_slice(&set_len.to_be_bytes());
        let parsed = Message::parse(&message).unwrap();
        let sets: Vec<_> = parsed.sets().collect();
        assert_eq!(sets.last(), Some(&Err(expected)), "set length {set_len}");
    }
    for id in [0u16, 1, 4, 255] {
        let mut message = GOLDEN.to_vec();
        message[36..38].copy_from_slice(&id.to_be_bytes());
        let parsed = Message::parse(&message).unwrap();
        assert_eq!(parsed.sets().nth(1), Some(Err(Malformed::SetId)), "set id {id}");
    }
    let mut message = GOLDEN.to_vec();
    message[0..2].copy_from_slice(&9u16.to_be_bytes());
    assert_eq!(Message::parse(&message), Err(Malformed::Version));
}

/// A template record whose Field Count promises more specifiers than its
/// set holds, and an enterprise specifier cut before its number.
#[test]
fn template_records_past_their_set_are_refused() {
    let body = &GOLDEN[20..36];
    for cut in TEMPLATE_HEADER_LEN..body.len() {
        let records: Vec<_> = templates(&body[..cut]).collect();
        assert_eq!(records, vec![Err(Malformed::TemplateRecord)], "cut at {cut}");
    }
    // Fewer than four bytes: padding, no record.
    assert_eq!(templates(&body[..3]).count(), 0);
    let mut low = body.to_vec();
    low[0..2].copy_from_slice(&255u16.to_be_bytes());
    assert_eq!(templates(&low).next(), Some(Err(Malformed::TemplateId)));
}

/// Section 8.1: Field Count 0 withdraws a template; Template ID 2 with
/// Field Count 0 withdraws all of them.
#[test]
fn withdrawals_are_read() {
    let body = [0x01, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00];
    let records: Vec<_> = templates(&body).collect::<Result<_, _>>().unwrap();
    assert_eq!((records[0].id, records[0].is_withdrawal()), (257, true));
    assert_eq!((records[1].id, records[1].is_withdrawal()), (TEMPLATE_SET_ID, true));
}

#[test]
fn variable_lengths_take_one_or_three_octets() {
    let mut buf = [0u8; 8];
    for (length, expected) in
        [(0usize, &[0u8][..]), (254, &[254]), (255, &[255, 0, 255]), (1000, &[255, 0x03, 0xe8])]
    {
        let n = emit_variable_length(&mut buf, length).unwrap();
        assert_eq!(&buf[..n], expected);
        assert_eq!(variable_length_len(length), n);
    }
    assert!(emit_variable_length(&mut buf, 65536).is_err());
    assert!(emit_variable_length(&mut buf[..2], 300).is_err());
    let field = Field { id: 1, length: VARIABLE_LENGTH, enterprise: None };
    assert_eq!(read_value(&[2, 7, 8, 9], &field), Ok((&[7u8, 8][..], 3)));
    assert_eq!(read_value(&[255, 0, 2, 7, 8], &field), Ok((&[7u8, 8][..], 5)));
    for lie in [&[3u8, 7, 8][..], &[255, 0], &[255, 1, 0, 1], &[]] {
        assert_eq!(read_value(lie, &field), Err(Malformed::FieldLength), "{lie:?}");
    }
    let fixed = Field { id: 8, length: 4, enterprise: None };
    assert_eq!(read_value(&[1, 2, 3], &fixed), Err(Malformed::FieldLength));
    assert_eq!(min_record_len([fixed, field].into_iter()), 5);
}

#[test]
fn writers_refuse_short_buffers() {
    let mut buf = [0u8; 40];
    for len in 0..MESSAGE_HEADER_LEN {
        assert!(MessageHeader::default().emit(&mut buf[..len]).is_err());
    }
    for len in 0..16 {
        assert!(emit_template(&mut buf[..len], 256, &fields()).is_err(), "{len}");
    }
    assert_eq!(emit_template(&mut buf[..16], 256, &fields()), Ok(16));
    assert!(emit_set_header(&mut buf, 256, 70_000).is_err());
}
