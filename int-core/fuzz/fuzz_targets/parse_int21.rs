//! INT 2.1 blocks on arbitrary bytes: no panic, the lengths a parse returns
//! add up, and what it read is what it reads again once written back
//! (parse, emit, parse gives the same header, hops and source-only words).
//! The sink's hop digest, read at word offsets, is the digest of the hops
//! as `HopMetadata` parses them, and is given only for a path that tells
//! itself (1 to 16 hops, every node named, none twice).
#![no_main]

use int_core::hop_rule::{Bounds, HopFigures, HopRule, Untold, MAX_HOPS};
use int_core::int21::{self, Block, HopMetadata, Instructions, SourceOnly};
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
            check_digest(&block.as_stack(), &hops, known);
        }
        Ok(Block::Mx(block)) => {
            assert_eq!(int21::FIXED_LEN + block.source_inserted.len(), block.len);
        }
        Err(_) => {}
    }
});

/// [`int21::MdStack::hop_digest`] against the hops as parsed.
fn check_digest(md: &int21::MdStack<'_>, hops: &[HopMetadata], known: u8) {
    let rule = HopRule {
        latency: Bounds::new(&[1000, 100_000]).expect("bounds"),
        queue: if known & 2 == 0 { Bounds::default() } else { Bounds::new(&[16]).expect("bounds") },
        queue_alert: Some(0x8000),
        ..HopRule::default()
    };
    let digest = md.hop_digest(&rule);
    if !md.header.instructions.contains(Instructions::NODE_ID) {
        assert_eq!(digest, Err(Untold::Unnamed));
        return;
    }
    let figures = hops.iter().map(|hop| {
        Some(HopFigures { node: hop.node_id?, latency: hop.hop_latency, queue: hop.queue.map(|(_, q)| q) })
    });
    assert_eq!(digest, rule.digest(figures), "{hops:?}");
    if digest.is_ok() {
        let nodes: Vec<u32> = hops.iter().filter_map(|hop| hop.node_id).collect();
        assert!((1..=MAX_HOPS).contains(&nodes.len()) && nodes.len() == hops.len());
        let mut distinct = nodes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), nodes.len(), "a node twice");
    }
}
