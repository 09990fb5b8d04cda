//! INT 2.1 blocks on arbitrary bytes: no panic, the lengths a parse returns
//! add up, and what it read is what it reads again once written back
//! (parse, emit, parse gives the same header, hops and source-only words).
#![no_main]

use int_core::int21::{self, Block, SourceOnly};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks what the domain knows: nothing (even), or
    // source-only bits under ID 0x4944 (odd; the packet number always).
    let Some((&known, bytes)) = data.split_first() else { return };
    let source_only = match known & 1 {
        0 => SourceOnly::NONE,
        _ => SourceOnly {
            domain_id: 0x4944,
            bits: int21::source_only::SEQUENCE | u16::from(known >> 1),
            wide: u16::from(known >> 4) << 4,
        },
    };
    match Block::parse(bytes, source_only) {
        Ok(Block::Md(block)) => {
            assert!(block.len <= bytes.len());
            let hop_bytes = block.hop_count() * usize::from(block.header.hop_ml) * 4;
            assert_eq!(int21::FIXED_LEN + hop_bytes + block.source_only().len(), block.len);
            let hops: Vec<_> = block.hops().collect();
            assert_eq!(hops.len(), block.hop_count());
            let mut out = vec![0u8; block.len];
            let len = int21::emit_md_block(&mut out, block.shim.next, &block.header, &hops, block.source_only())
                .expect("a parsed block can be written back");
            assert_eq!(len, block.len);
            let Ok(Block::Md(again)) = Block::parse(&out, source_only) else { panic!("rewritten block refused") };
            assert_eq!((again.shim, again.header), (block.shim, block.header));
            assert_eq!(again.hops().collect::<Vec<_>>(), hops);
            assert_eq!(again.source_only(), block.source_only());
        }
        Ok(Block::Mx(block)) => {
            assert_eq!(int21::FIXED_LEN + block.source_inserted.len(), block.len);
        }
        Err(_) => {}
    }
});
