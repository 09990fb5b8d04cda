//! collect's report path allocates nothing per report: once a flow and its
//! sender are in the books, taking another of their Host-INT latency
//! reports (parse, sequence accounting, the flow's ledger, histograms and
//! timeline) asks the allocator for nothing. Counted by a global
//! allocator, on this test's thread only (the harness's threads allocate
//! as they like).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;

use int_tools::collect::books::datagram::Came;
use int_tools::collect::books::{Books, Sizes};
use int_tools::collect::exporters::ipfix;
use int_tools::collect::receivers::udp::{take, Sequence};
use int_tools::collect::receivers::How;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; the
// count is a const-initialised thread-local Cell, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as for dealloc; `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// A sink's Host-INT latency report as int-node sends it (recorded by
/// bench/collector.py): TR 0.5 header, sink id word, the packet's IPv4 and
/// UDP headers, the INT 0.5 shim and a source and a sink hop.
const LATENCY_REPORT: &str =
    "04200000000000016553f1000a0000024504007200004000401125ae0a0000010ac8000127101389\
                              005e631303000c0000040202cc0000000a00000200020002362a0000362a00000a000001000100\
                              01362550fa362550fa00000001";

/// An INT 2.1 sink's Telemetry Report 2.0 datagram as int-node sends it
/// (recorded by bench/collector.py --reports tr20-1hop): a group header
/// and nine individual reports, each with its packet's one-hop stack.
const TR20_ONE_HOP_REPORTS: &str = "\
    200000010a000002141905204c000000000000000002000218edb0ca15a1507218edb0ca15a15072455c006a\
    000040004011255e0a0000010ac800012710138900561d79100a000020000607cc004944800000000a000001\
    0001000118edb0c9e11b2b2218edb0c9e11b2b2200000001141905204c000000000000000002000218edb0ca\
    15a1507218edb0ca15a15072455c006a000140004011255b0a0000020ac80002271113890056be44100a0000\
    20000607cc004944800000000a0000010001000118edb0c9e11b523218edb0c9e11b52320000000114190520\
    4c000000000000000002000218edb0ca15a1507218edb0ca15a15072455c006a00024000401125580a000003\
    0ac800032712138900565f10100a000020000607cc004944800000000a0000010001000118edb0c9e11b7942\
    18edb0c9e11b794200000001141905204c000000000000000002000218edb0ca15a1507218edb0ca15a15072\
    455c006a00034000401125550a0000040ac80004271313890056ffdb100a000020000607cc00494480000000\
    0a0000010001000118edb0c9e11ba05218edb0c9e11ba05200000001141905204c0000000000000000020002\
    18edb0ca15a1507218edb0ca15a15072455c006a00044000401125520a0000050ac80005271413890056a0a7\
    100a000020000607cc004944800000000a0000010001000118edb0c9e11bc76218edb0c9e11bc76200000001\
    141905204c000000000000000002000218edb0ca15a1507218edb0ca15a15072455c006a000540004011254f\
    0a0000060ac800062715138900564173100a000020000607cc004944800000000a0000010001000118edb0c9\
    e11bee7218edb0c9e11bee7200000001141905204c000000000000000002000218edb0ca15a1507218edb0ca\
    15a15072455c006a000640004011254c0a0000070ac80007271613890056e23e100a000020000607cc004944\
    800000000a0000010001000118edb0c9e11c158218edb0c9e11c158200000001141905204c00000000000000\
    0002000218edb0ca15a1507218edb0ca15a15072455c006a00074000401125500a0000080ac8000127171389\
    00568311100a000020000607cc004944800000000a0000010001000118edb0c9e11c3c9218edb0c9e11c3c92\
    00000001141905204c000000000000000002000218edb0ca15a1507218edb0ca15a15072455c006a00084000\
    4011254d0a0000090ac8000227181389005623dd100a000020000607cc004944800000000a00000100010001\
    18edb0c9e11c63a218edb0c9e11c63a200000001";

/// An IFA terminator's Telemetry Report 2.0 datagram (InType 4): an IPv4
/// UDP packet with IFA (protocol 253) of two hops, Device IDs 11 and 12,
/// from node 2 (collect's receivers::tr20 unit tests' packet).
const TR20_IFA_REPORT: &str = "\
    2000000100000002142005204c000000000000000001000117979cfe3631a12017979cfe3631a12045000078\
    0000000040fd00000a0000010a0000022f1104ff044c08ae00640000eec07e1010000c400433f10000090008\
    000493e0000002bc00000000000000000000000010000b400853f1000009000800000000000002bc00000000\
    0000000000000000";

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect()
}

#[test]
fn a_known_flows_reports_allocate_nothing() {
    let books = Books::bounded(Sizes { flows: 16, detailed_flows: 16, nodes: 16, links: 16 });
    known_flows_reports_allocate_nothing(books);
}

/// The same with the IPFIX export on (issue 48): the reader adds the
/// report to its interval's flow in place.
#[test]
fn a_known_flows_reports_allocate_nothing_with_the_ipfix_export() {
    let mut books = Books::bounded(Sizes { flows: 16, detailed_flows: 16, nodes: 16, links: 16 });
    books.exporters.push(ipfix::detached(16));
    known_flows_reports_allocate_nothing(books);
}

/// The same for TR 2.0 datagrams of nine one-hop INT 2.1 reports: the
/// reports checked and read once, each path read into the books' room,
/// the per-hop view's node, link and path entries found, not made.
#[test]
fn known_flows_tr20_reports_allocate_nothing() {
    let books = Books::bounded(Sizes { flows: 16, detailed_flows: 16, nodes: 16, links: 16 });
    let payload = bytes(TR20_ONE_HOP_REPORTS);
    let books = known_reports_allocate_nothing(books, &payload, 9);
    assert_eq!(books.hops.nodes.len(), 2, "the source's node and the sink's");
}

/// The same for an IFA terminator's report: its stack's hops read into
/// the books' room; IFA's own fields are read again only for a record.
#[test]
fn known_flows_ifa_reports_allocate_nothing() {
    let books = Books::bounded(Sizes { flows: 16, detailed_flows: 16, nodes: 16, links: 16 });
    let books = known_reports_allocate_nothing(books, &bytes(TR20_IFA_REPORT), 1);
    assert_eq!(books.hops.nodes.len(), 3, "the two IFA hops' devices and the terminator");
}

fn known_flows_reports_allocate_nothing(books: Books) {
    let books = known_reports_allocate_nothing(books, &bytes(LATENCY_REPORT), 1);
    assert_eq!(books.ledger.overall.latency.count(), 1001, "every report booked its latency");
}

/// Takes `payload` (of `reports` reports) once, then 1000 times more,
/// counting the allocations of the 1000.
fn known_reports_allocate_nothing(mut books: Books, payload: &[u8], reports: u64) -> Books {
    let how = How {
        sink_id: int_core::report::SinkIdWord::Detect,
        int21_domain: int_core::int21::Domain {
            // collect's defaults (--int21-dscp, --int21-domain-id).
            marking: int_core::int21::Marking::Dscp("0x17/0x3f".parse().unwrap()),
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(0x4944),
        },
        ioam_timestamps: Default::default(),
        ifa_domain: Default::default(),
    };
    let from: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let came = Came { payload, from, truncated: false, at_ns: 1_700_000_000_000_000_000 };
    // The first report makes the flow's and the sender's entries (and
    // shows the counter counts).
    let before = ALLOCATIONS.with(Cell::get);
    take(came, Sequence::Count, &mut books, &how);
    assert!(ALLOCATIONS.with(Cell::get) > before, "the first report's entries are allocated");
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..1000 {
        take(came, Sequence::Count, &mut books, &how);
    }
    let allocations = ALLOCATIONS.with(Cell::get) - before;
    assert_eq!(allocations, 0, "allocations for 1000 datagrams of known flows");
    assert_eq!((books.totals.reports, books.totals.malformed()), (1001 * reports, 0));
    assert_eq!(books.ledger.overall.latency.count(), 1001 * reports, "every report booked its latency");
    books
}
