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

fn known_flows_reports_allocate_nothing(mut books: Books) {
    let payload = bytes(LATENCY_REPORT);
    let how = How {
        sink_id: int_core::report::SinkIdWord::Detect,
        int21_domain: int_core::int21::Domain {
            marking: int_core::int21::Marking::UdpPort(5000),
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::NONE,
        },
        ioam_timestamps: Default::default(),
        ifa_domain: Default::default(),
    };
    let from: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let came = Came { payload: &payload, from, truncated: false, at_ns: 1_700_000_000_000_000_000 };
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
    assert_eq!(allocations, 0, "allocations for 1000 reports of a known flow");
    assert_eq!((books.totals.reports, books.totals.malformed()), (1001, 0));
    assert_eq!(books.ledger.overall.latency.count(), 1001, "every report booked its latency");
}
