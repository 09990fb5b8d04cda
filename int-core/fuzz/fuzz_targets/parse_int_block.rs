//! Every INT and wire parser on arbitrary bytes: no panic, and a block that
//! parses has a stack of exactly Ins Cnt x 4 x Total Hop Count bytes.
#![no_main]

use int_core::int05::{IntBlock, Tail};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for tail in [Tail::Present, Tail::Absent] {
        if let Ok(block) = IntBlock::parse(data, tail) {
            let hop_len = usize::from(block.header.instruction_count) * 4;
            assert_eq!(block.stack.bytes().len(), hop_len * usize::from(block.header.total_hop_cnt));
            assert!(block.len() <= data.len());
            let _ = block.stack.hops().count();
        }
    }
    let _ = int_core::wire::EthernetRepr::parse(data);
    let _ = int_core::wire::Ipv4Repr::parse(data);
    let _ = int_core::wire::TcpRepr::parse(data);
    let _ = int_core::wire::UdpRepr::parse(data);
    if let Ok(Some(ip)) = int_core::locate::ipv4(data) {
        assert!(ip.end <= data.len());
        let _ = int_core::locate::l4(data, &ip);
    }
});
