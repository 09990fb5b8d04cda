//! A batch message off the stream (collect's batch format, read by an
//! aggregator), judged beyond "no panic": the entries it frames are those
//! whose bytes, written again, are the message's bytes read so far, in
//! order, up to the first refusal; an entry that cannot be framed ends the
//! message, one whose accounting no receiver finds does not; each refusal
//! is one count by a `stream: a batch entry` reason; every framed entry is
//! one datagram through the receiving collector's reading, counted once;
//! no entry books more lost reports than a receiver believes; the books
//! stay within their sizes.
#![no_main]

use int_tools::collect::books::sender::MAX_REPORT_GAP;
use int_tools::collect::nats::batch::{self, Malformed};
use int_tools::collect::receivers::nats::book_batch;
use int_tools::collect::books::{Books, Sizes};
use int_tools::collect::receivers::How;
use libfuzzer_sys::fuzz_target;

const SIZES: Sizes = Sizes { flows: 4, detailed_flows: 2, nodes: 8, links: 8 };

fuzz_target!(|data: &[u8]| {
    let entries: Vec<_> = batch::entries(data).collect();
    let mut again = Vec::new();
    for entry in entries.iter().map_while(|e| e.as_ref().ok()) {
        entry.write(&mut again);
    }
    assert!(data.starts_with(&again), "what was framed is what was read");
    let framed = entries.iter().filter(|e| e.is_ok()).count() as u64;
    let refused = entries.iter().filter(|e| e.is_err()).count() as u64;
    let read_on = entries.iter().rev().skip(1).filter_map(|e| e.as_ref().err());
    assert!(read_on.into_iter().all(|e| *e == Malformed::Accounting), "only a framed entry's refusal reads on");
    if refused == 0 {
        assert_eq!(again.len(), data.len(), "a message read whole");
    }
    let mut books = Books::bounded(SIZES);
    let how = How {
        sink_id: int_core::report::SinkIdWord::Detect,
        int21_domain: int_core::int21::Domain {
            marking: int_core::int21::Marking::Dscp(int_core::marking::DscpMatch { value: 0x17, mask: 0x3f }),
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(0x4944),
        },
        ioam_timestamps: int_core::ioam::TimestampFormat::Posix,
        ifa_domain: int_core::ifa::Domain::default(),
    };
    book_batch(data, &mut books, &how);
    assert_eq!(books.totals.received, framed + refused, "each entry counted once");
    let refused_entries: u64 =
        books.totals.malformed.iter().filter(|(k, _)| k.starts_with("stream: a batch entry")).map(|(_, n)| *n).sum();
    assert_eq!(refused_entries, refused);
    let lost: u64 = books.senders.values().map(|s| s.lost_reports).sum();
    assert!(lost <= framed * u64::from(MAX_REPORT_GAP), "{lost} lost reports from {framed} entries");
    assert!(books.ledger.flows.len() <= SIZES.flows);
    assert!(books.hops.nodes.len() <= SIZES.nodes);
    assert!(books.hops.links.len() <= SIZES.links);
});
