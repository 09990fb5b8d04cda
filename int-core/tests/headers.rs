//! parse(emit(x)) == x for every header and report, over generated values.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::net::Ipv4Addr;

use int_core::flow::FlowKey;
use int_core::int05::{
    self, HopMetadata, Instructions, IntBlock, MetadataHeaderRepr, ShimRepr, ShimType, Tail, TailRepr,
};
use int_core::int21;
use int_core::report::{
    DropHeaderRepr, DropSummaryReport, DropSummaryRepr, NextProto, ReportHeaderRepr, SwitchLocalRepr,
};
use int_core::wire::{EtherType, EthernetRepr, IpProtocol, Ipv4Repr, TcpRepr, UdpRepr};
use proptest::prelude::*;

fn opt_u32() -> impl Strategy<Value = Option<u32>> {
    proptest::option::of(0u32..0xffff_fffe)
}

fn opt_u16() -> impl Strategy<Value = Option<u16>> {
    proptest::option::of(0u16..0xfffe)
}

fn hop() -> impl Strategy<Value = HopMetadata> {
    (opt_u32(), opt_u16(), opt_u16(), opt_u32(), opt_u32(), opt_u32(), opt_u32(), opt_u32(), opt_u32())
        .prop_map(|(a, b, c, d, e, f, g, h, i)| HopMetadata {
            switch_id: a,
            ingress_port: b,
            egress_port: c,
            hop_latency: d,
            queue_occupancy: e,
            ingress_timestamp: f,
            egress_timestamp: g,
            queue_congestion: h,
            egress_tx_utilization: i,
        })
}

fn report_header() -> impl Strategy<Value = ReportHeaderRepr> {
    (0u8..16, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..64, any::<u32>(), any::<u32>()).prop_map(
        |(nproto, d, q, f, hw_id, sequence, timestamp)| ReportHeaderRepr {
            version: 0,
            next_proto: NextProto::from(nproto),
            dropped: d,
            congested_queue: q,
            tracked_flow: f,
            hw_id,
            sequence,
            timestamp,
        },
    )
}

proptest! {
    #[test]
    fn ethernet(dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(), tags in 0usize..3, tci in any::<u16>(), ethertype in any::<u16>()) {
        prop_assume!(!matches!(EtherType::from(ethertype), EtherType::Vlan | EtherType::QinQ));
        let mut vlans = [None, None];
        for slot in vlans.iter_mut().take(tags) {
            *slot = Some((0x8100, tci));
        }
        let repr = EthernetRepr { dst, src, vlans, ethertype: EtherType::from(ethertype) };
        let mut buf = vec![0xa5; 30];
        let len = repr.emit(&mut buf).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&buf).unwrap(), (repr, len));
    }

    #[test]
    fn ipv4(tos in any::<u8>(), total_len in any::<u16>(), ident in any::<u16>(), flags_frag in any::<u16>(), ttl in any::<u8>(), protocol in any::<u8>(), src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), words in 0usize..=10) {
        let mut options = [0u8; 40];
        for (i, b) in options.iter_mut().take(words * 4).enumerate() {
            *b = i as u8;
        }
        let mut repr = Ipv4Repr { tos, total_len, ident, flags_frag, ttl, protocol: IpProtocol::from(protocol), checksum: 0, src: Ipv4Addr::from(src), dst: Ipv4Addr::from(dst), options, options_len: (words * 4) as u8 };
        let mut buf = vec![0xa5; 64];
        let len = repr.emit(&mut buf, true).unwrap();
        prop_assert_eq!(int_core::checksum::checksum(&buf[..len]), 0);
        repr.checksum = u16::from_be_bytes([buf[10], buf[11]]);
        prop_assert_eq!(Ipv4Repr::parse(&buf).unwrap(), (repr, len));
    }

    #[test]
    fn tcp(src_port in any::<u16>(), dst_port in any::<u16>(), seq in any::<u32>(), ack in any::<u32>(), flags in 0u16..0x1000, window in any::<u16>(), checksum in any::<u16>(), urgent in any::<u16>(), words in 0usize..=10) {
        let mut options = [0u8; 40];
        for (i, b) in options.iter_mut().take(words * 4).enumerate() {
            *b = (i * 3) as u8;
        }
        let repr = TcpRepr { src_port, dst_port, seq, ack, flags, window, checksum, urgent, options, options_len: (words * 4) as u8 };
        let mut buf = vec![0xa5; 64];
        let len = repr.emit(&mut buf).unwrap();
        prop_assert_eq!(TcpRepr::parse(&buf).unwrap(), (repr, len));
    }

    #[test]
    fn udp(src_port in any::<u16>(), dst_port in any::<u16>(), length in 8u16.., checksum in any::<u16>()) {
        let repr = UdpRepr { src_port, dst_port, length, checksum };
        let mut buf = vec![0xa5; 8];
        repr.emit(&mut buf).unwrap();
        prop_assert_eq!(UdpRepr::parse(&buf).unwrap(), repr);
    }

    #[test]
    fn int_headers(int_type in any::<u8>(), length_words in any::<u8>(), bits in any::<u16>(), max_hop in any::<u8>(), total_hop in any::<u8>(), rep in 0u8..4, c in any::<bool>(), e in any::<bool>(), protocol in any::<u8>(), dst_port in any::<u16>(), dscp in any::<u8>()) {
        let shim = ShimRepr { int_type: ShimType::from(int_type), length_words };
        let mut buf = vec![0xa5; 8];
        shim.emit(&mut buf).unwrap();
        prop_assert_eq!(ShimRepr::parse(&buf).unwrap(), shim);
        let instructions = Instructions::from_bits_retain(bits);
        let header = MetadataHeaderRepr { version: 0, replication: rep, copy: c, max_hop_exceeded: e, instruction_count: instructions.count(), max_hop_cnt: max_hop, total_hop_cnt: total_hop, instructions };
        header.emit(&mut buf).unwrap();
        prop_assert_eq!(MetadataHeaderRepr::parse(&buf).unwrap(), header);
        let tail = TailRepr { protocol, dst_port, dscp };
        tail.emit(&mut buf).unwrap();
        prop_assert_eq!(TailRepr::parse(&buf).unwrap(), tail);
    }

    #[test]
    fn hop_metadata(hop in hop(), bits in 1u16..=0xff) {
        let instructions = Instructions::from_bits_retain(bits << 8);
        let mut buf = vec![0xa5; 32];
        let len = hop.emit(instructions, &mut buf).unwrap();
        prop_assert_eq!(len, instructions.hop_len());
        let parsed = HopMetadata::parse(instructions, &buf).unwrap();
        // Only the asked-for values come back.
        for bit in instructions.each() {
            prop_assert_eq!(parsed.word(bit), hop.word(bit));
        }
    }

    #[test]
    fn int_block(hops in proptest::collection::vec(hop(), 0..6), bits in 1u16..=0xff, extra in 0u8..4, seq in any::<u32>(), host_int in any::<bool>(), with_tail in any::<bool>()) {
        let instructions = Instructions::from_bits_retain(bits << 8);
        let shim_type = if host_int { ShimType::HostIntSequence } else { ShimType::HopByHop };
        let header = MetadataHeaderRepr::new(instructions, hops.len() as u8 + extra, 0);
        let tail = TailRepr { protocol: 6, dst_port: 80, dscp: 10 };
        let mut buf = vec![0xa5; int05::MAX_BLOCK_LEN];
        let len = int05::emit_block(&mut buf, shim_type, &header, &hops, seq, with_tail.then_some(&tail)).unwrap();
        let block = IntBlock::parse(&buf[..len], if with_tail { Tail::Present } else { Tail::Absent }).unwrap();
        prop_assert_eq!(block.len(), len);
        prop_assert_eq!(block.header.total_hop_cnt as usize, hops.len());
        prop_assert_eq!(block.sequence, host_int.then_some(seq));
        prop_assert_eq!(block.tail, with_tail.then_some(tail));
        for (parsed, original) in block.stack.hops().zip(hops.iter()) {
            for bit in instructions.each() {
                prop_assert_eq!(parsed.word(bit), original.word(bit));
            }
        }
        prop_assert_eq!(block.stack.hop_count(), hops.len());
    }

    #[test]
    fn report_headers(header in report_header(), switch_id in any::<u32>(), ingress_port in any::<u16>(), egress_port in any::<u16>(), queue_id in any::<u8>(), drop_reason in any::<u8>(), occupancy in 0u32..0x100_0000, egress_timestamp in any::<u32>()) {
        let mut buf = vec![0xa5; 16];
        header.emit(&mut buf).unwrap();
        prop_assert_eq!(ReportHeaderRepr::parse(&buf).unwrap(), header);
        let drop = DropHeaderRepr { switch_id, ingress_port, egress_port, queue_id, drop_reason };
        drop.emit(&mut buf).unwrap();
        prop_assert_eq!(DropHeaderRepr::parse(&buf).unwrap(), drop);
        let local = SwitchLocalRepr { switch_id, ingress_port, egress_port, queue_id, queue_occupancy: occupancy, egress_timestamp };
        local.emit(&mut buf).unwrap();
        prop_assert_eq!(SwitchLocalRepr::parse(&buf).unwrap(), local);
    }

    #[test]
    fn drop_summary(header in report_header(), words in any::<[u32; 5]>(), ports in any::<[u16; 4]>(), tcp in any::<bool>(), src in any::<[u8; 4]>(), dst in any::<[u8; 4]>()) {
        let report = DropSummaryReport {
            header: ReportHeaderRepr { next_proto: NextProto::DropSummary, dropped: true, congested_queue: false, tracked_flow: true, ..header },
            summary: DropSummaryRepr { source_node: words[0], sink_node: words[1], source_port: ports[0], sink_port: ports[1], gap_timestamp: words[2], gap_sequence: words[3], gap_count: words[4] },
            flow: FlowKey::v4(Ipv4Addr::from(src), Ipv4Addr::from(dst), if tcp { 6 } else { 17 }, ports[2], ports[3]),
        };
        let mut buf = vec![0xa5; 80];
        let len = report.emit(&mut buf).unwrap();
        prop_assert_eq!(len, if tcp { 76 } else { 64 });
        prop_assert_eq!(DropSummaryReport::parse(&buf[..len]).unwrap(), report);
        // Anything the emitter would not write is refused: a trailing byte,
        // other flags, a synthesised header byte that is not zero.
        prop_assert!(DropSummaryReport::parse(&buf[..len + 1]).is_err());
        let mut flags = buf.clone();
        flags[1] ^= 0x40;
        prop_assert!(DropSummaryReport::parse(&flags[..len]).is_err());
        let mut ttl = buf.clone();
        ttl[36 + 8] = 64;
        prop_assert!(DropSummaryReport::parse(&ttl[..len]).is_err());
    }
}

/// Every emitter handed a buffer one byte short says how much room it
/// needed, as an emit error (never a parse error), and writes nothing past
/// the buffer.
#[test]
fn emitters_say_when_the_buffer_is_short() {
    use int_core::{EmitError, Layer};
    fn check(layer: Layer, emit: impl Fn(&mut [u8]) -> Result<usize, EmitError>) {
        let mut room = vec![0u8; 256];
        let len = emit(&mut room).unwrap();
        let mut short = vec![0u8; len - 1];
        match emit(&mut short) {
            Err(EmitError::NoRoom { layer: said, needed, available }) => {
                assert_eq!((said, needed, available), (layer, len, len - 1));
            }
            other => panic!("{layer}: {other:?}"),
        }
    }
    let ethernet = EthernetRepr {
        dst: [2; 6],
        src: [4; 6],
        vlans: [Some((0x8100, 7)), None],
        ethertype: EtherType::Ipv4,
    };
    check(Layer::Ethernet, |buf| ethernet.emit(buf));
    let ip = Ipv4Repr {
        tos: 0,
        total_len: 20,
        ident: 1,
        flags_frag: 0,
        ttl: 64,
        protocol: IpProtocol::Udp,
        checksum: 0,
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 0, 2),
        options: [0; 40],
        options_len: 0,
    };
    check(Layer::Ipv4, |buf| ip.emit(buf, true));
    check(Layer::Udp, |buf| UdpRepr { src_port: 1, dst_port: 2, length: 8, checksum: 0 }.emit(buf));
    check(Layer::IntShim, |buf| ShimRepr { int_type: ShimType::HopByHop, length_words: 3 }.emit(buf));
    check(Layer::IntMetadataHeader, |buf| MetadataHeaderRepr::new(Instructions::HOST_INT, 2, 0).emit(buf));
    check(Layer::IntTail, |buf| TailRepr { protocol: 17, dst_port: 2, dscp: 0 }.emit(buf));
    let hop = HopMetadata { switch_id: Some(1), ..HopMetadata::default() };
    check(Layer::IntStack, |buf| hop.emit(Instructions::HOST_INT, buf));
    let header = ReportHeaderRepr::drop_summary(1, 2, 0);
    check(Layer::ReportHeader, |buf| header.emit(buf));
}

fn hop21() -> impl Strategy<Value = int21::HopMetadata> {
    let pair = || proptest::option::of((any::<u8>(), 0u32..0xff_ffff));
    let wide = || proptest::option::of(0u64..u64::MAX);
    (
        (opt_u32(), opt_u16(), opt_u16(), opt_u32(), pair()),
        (wide(), wide(), opt_u32(), opt_u32(), opt_u32(), pair(), opt_u32()),
    )
        .prop_map(|((a, b, c, d, e), (f, g, h, i, j, k, l))| int21::HopMetadata {
            node_id: a,
            l1_ingress_port: b,
            l1_egress_port: c,
            hop_latency: d,
            queue: e,
            ingress_timestamp: f,
            egress_timestamp: g,
            l2_ingress_port: h,
            l2_egress_port: i,
            egress_tx_utilization: j,
            buffer: k,
            checksum_complement: l,
        })
}

/// What a hop carries once written for `bits`: the metadata of other bits
/// is not in the packet.
fn only(hop: &int21::HopMetadata, bits: int21::Instructions) -> int21::HopMetadata {
    use int21::Instructions as I;
    let keep = |bit: I| bits.contains(bit);
    int21::HopMetadata {
        node_id: hop.node_id.filter(|_| keep(I::NODE_ID)),
        l1_ingress_port: hop.l1_ingress_port.filter(|_| keep(I::L1_PORT_IDS)),
        l1_egress_port: hop.l1_egress_port.filter(|_| keep(I::L1_PORT_IDS)),
        hop_latency: hop.hop_latency.filter(|_| keep(I::HOP_LATENCY)),
        queue: hop.queue.filter(|_| keep(I::QUEUE_OCCUPANCY)),
        ingress_timestamp: hop.ingress_timestamp.filter(|_| keep(I::INGRESS_TIMESTAMP)),
        egress_timestamp: hop.egress_timestamp.filter(|_| keep(I::EGRESS_TIMESTAMP)),
        l2_ingress_port: hop.l2_ingress_port.filter(|_| keep(I::L2_PORT_IDS)),
        l2_egress_port: hop.l2_egress_port.filter(|_| keep(I::L2_PORT_IDS)),
        egress_tx_utilization: hop.egress_tx_utilization.filter(|_| keep(I::EGRESS_TX_UTILIZATION)),
        buffer: hop.buffer.filter(|_| keep(I::BUFFER_OCCUPANCY)),
        checksum_complement: hop.checksum_complement.filter(|_| keep(I::CHECKSUM_COMPLEMENT)),
    }
}

proptest! {
    /// INT 2.1 MD blocks: any bitmap of defined bits, Hop ML with room for
    /// domain specific words, 0-4 hops, source-only words, each NPT.
    #[test]
    fn int21_md_blocks(
        bits in 0u16..0x400,
        ds_words in 0u8..4,
        hops in proptest::collection::vec(hop21(), 0..5),
        source_only in proptest::collection::vec(any::<u8>(), 0..3).prop_map(|w| w.into_iter().flat_map(|b| [b; 4]).collect::<Vec<u8>>()),
        next in prop_oneof![(0u8..64).prop_map(int21::Next::Dscp), any::<u16>().prop_map(int21::Next::UdpPort), any::<u8>().prop_map(int21::Next::IpProtocol)],
        remaining in any::<u8>(),
        flags in any::<(bool, bool, bool)>(),
        domain in any::<(u16, u16, u16)>(),
    ) {
        // Bits 0-8 from the low 9 bits of `bits`, bit 15 from the tenth.
        let instructions = int21::Instructions::from_bits_retain(((bits & 0x1ff) << 7) | (bits >> 9));
        let hop_ml = instructions.words() as u8 + ds_words;
        prop_assume!(hop_ml > 0 && usize::from(hop_ml) <= 31);
        // Source-only words are announced by the top DS Instruction bits
        // under a nonzero ID the parser knows.
        let words = source_only.len() / 4;
        let (domain_id, ds_instructions) =
            if words == 0 { (domain.0, domain.1) } else { (domain.0.max(1), !(0xffffu16 >> words)) };
        let known = int21::SourceOnly { domain_id: if words == 0 { 0 } else { domain_id }, bits: 0xffff, wide: 0 };
        let header = int21::MdHeaderRepr {
            discard: flags.0, max_hop_exceeded: flags.1, mtu_exceeded: flags.2,
            hop_ml, remaining_hop_cnt: remaining, instructions,
            domain_id, ds_instructions, ds_flags: domain.2,
        };
        let mut buf = vec![0xa5u8; 1100];
        let len = int21::emit_md_block(&mut buf, next, &header, &hops, &source_only).unwrap();
        let int21::Block::Md(block) = int21::Block::parse(&buf[..len], known).unwrap() else {
            panic!("not MD");
        };
        prop_assert_eq!(block.len, len);
        prop_assert_eq!(block.shim.next, next);
        prop_assert_eq!(block.header, header);
        prop_assert_eq!(block.hop_count(), hops.len());
        prop_assert_eq!(block.source_only(), source_only.as_slice());
        let expected: Vec<_> = hops.iter().map(|h| only(h, instructions)).collect();
        prop_assert_eq!(block.hops().collect::<Vec<_>>(), expected);
        for cut in [0, 3, 4, 15, len - 1] {
            prop_assert!(int21::Block::parse(&buf[..cut.min(len - 1)], known).is_err());
        }
    }
}

proptest! {
    /// Telemetry Report 2.0: a group header and 1-3 coalesced individual
    /// reports of any RepMdBits (bit 0 aside: the node id is in the group
    /// header), domain metadata and inner length read back as written.
    #[test]
    fn tr20_reports(
        group in (0u8..64, 0u32..(1 << 22), any::<u32>()),
        reports in proptest::collection::vec((
            0u16..0x400, hop21(), proptest::option::of((any::<u8>(), any::<u8>())),
            0usize..3, proptest::collection::vec(any::<u8>(), 0..90), any::<(bool, bool, bool, bool)>(), 0u8..6,
        ), 1..4),
    ) {
        use int_core::report::tr20::*;
        let ds: Vec<Vec<u8>> = reports.iter().map(|r| vec![0x5a; r.3 * 4]).collect();
        let built: Vec<IndividualReport> = reports.iter().zip(&ds).map(|((bits, hop, drop, _, inner, flags, in_type), ds)| {
            // RepMdBits 1-8 from the low 8 bits, bit 15 from the ninth.
            let rep_md_bits = ((bits & 0xff) << 7) | (bits >> 9);
            let instructions = int21::Instructions::from_bits_retain(rep_md_bits);
            IndividualReport {
                rep_type: RepType::Int,
                in_type: InType::from(*in_type),
                flags: ReportFlags { dropped: flags.0, congested_queue: flags.1, tracked_flow: flags.2, intermediate: flags.3 },
                int: Some(IntContents {
                    rep_md_bits,
                    domain_id: 1,
                    ds_md_bits: 0x8000,
                    ds_md_status: 0,
                    metadata: only(hop, instructions - int21::Instructions::CHECKSUM_COMPLEMENT),
                    drop: drop.filter(|_| rep_md_bits & DROP_BIT != 0).map(|(q, r)| DropInfo { queue_id: q, reason: r }),
                    ds_metadata: ds,
                }),
                inner,
                ..IndividualReport::default()
            }
        }).collect();
        let mut buf = vec![0u8; 4096];
        let header = GroupHeaderRepr { hw_id: group.0, sequence: group.1, node_id: group.2 };
        let mut at = header.emit(&mut buf).unwrap();
        for report in &built {
            at += report.emit(&mut buf[at..]).unwrap();
        }
        let parsed = Report::parse(&buf[..at]).unwrap();
        prop_assert_eq!(parsed.group, header);
        let read: Vec<_> = parsed.reports().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(read.len(), built.len());
        let framed: Vec<_> = parsed.framings().collect::<Result<_, _>>().unwrap();
        for (framed, whole) in framed.iter().zip(&read) {
            let unread = whole.int.map(|int| IntContents { metadata: Default::default(), drop: None, ..int });
            prop_assert_eq!(*framed, IndividualReport { int: unread, ..*whole });
        }
        for (got, want) in read.iter().zip(&built) {
            prop_assert_eq!((got.rep_type, got.in_type, got.flags), (want.rep_type, want.in_type, want.flags));
            let (got_int, want_int) = (got.int.unwrap(), want.int.unwrap());
            prop_assert_eq!(got_int.metadata, want_int.metadata);
            prop_assert_eq!(got_int.drop, want_int.drop);
            prop_assert_eq!(got_int.ds_metadata, want_int.ds_metadata);
            prop_assert_eq!(&got.inner[..want.inner.len()], want.inner);
            prop_assert!(got.inner[want.inner.len()..].iter().all(|b| *b == 0) && got.inner.len() < want.inner.len() + 4);
        }
    }
}
