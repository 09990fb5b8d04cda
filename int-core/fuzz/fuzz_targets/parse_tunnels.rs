//! IPv6 extension walks and the tunnel headers INT rides in (VXLAN-GPE and
//! its INT shim, Geneve and its options) on arbitrary bytes: no panic, the
//! walk stays inside the packet, and every header read is read the same
//! once written back. As a frame with INT in a tunnel: a transit push
//! leaves a packet whose strip gives exactly what stripping it before the
//! push gives.
#![no_main]

use int_core::int21::tunnel::GpeShimRepr;
use int_core::wire::{geneve, ipv6, vxlan_gpe};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(walk) = ipv6::walk_extensions(data) {
        assert!(walk.upper_at <= data.len() && walk.next_header_at < walk.upper_at);
        let header = ipv6::Ipv6Repr::parse(data).expect("a walked packet has a header");
        let mut out = [0u8; ipv6::HEADER_LEN];
        header.emit(&mut out).expect("a parsed header can be written back");
        assert_eq!(ipv6::Ipv6Repr::parse(&out), Ok(header));
    }
    // As a frame: the located IPv6 packet lies inside it.
    if let Ok(Some(ip)) = int_core::locate::ipv6(data) {
        assert!(ip.l3 < ip.l4 && ip.l4 <= ip.end && ip.end <= data.len());
        let _ = int_core::locate::l4(data, &ip);
    }
    // INT in a tunnel: its body lies inside the payload, and an INT-MD
    // body's hops and source-only words fill its stack.
    let known = int_core::int21::SourceOnly::sequence(0x4944);
    if let Ok(Some(found)) = int_core::int21::tunnel::gpe_int(data, known) {
        assert!(found.len <= data.len());
        if let int_core::int21::Body::Md(md) = found.body {
            let hop_bytes = md.hop_count() * usize::from(md.header.hop_ml) * 4;
            assert_eq!(hop_bytes + md.source_only().len(), md.stack.len());
        }
    }
    let _ = int_core::int21::tunnel::geneve_int(data, known);
    transit_then_strip(data, known);
    if let Ok(gpe) = vxlan_gpe::VxlanGpeRepr::parse(data) {
        let mut out = [0u8; vxlan_gpe::HEADER_LEN];
        gpe.emit(&mut out).expect("a parsed header can be written back");
        assert_eq!(vxlan_gpe::VxlanGpeRepr::parse(&out), Ok(gpe));
    }
    if let Ok(shim) = GpeShimRepr::parse(data) {
        let mut out = [0u8; 4];
        shim.emit(&mut out).expect("a parsed shim can be written back");
        assert_eq!(GpeShimRepr::parse(&out), Ok(shim));
    }
    if let Ok(header) = geneve::GeneveRepr::parse(data) {
        let mut out = vec![0u8; header.len()];
        header.emit(&mut out).expect("a parsed header can be written back");
        assert_eq!(geneve::GeneveRepr::parse(&out), Ok(header));
        if let Ok(options) = geneve::options(data, &header) {
            let mut covered = geneve::HEADER_LEN;
            for (option, at) in options {
                assert_eq!(at, covered, "options follow each other");
                covered += option.len();
            }
            assert_eq!(covered, header.len(), "options fill Opt Len");
        }
    }
});

/// strip(push(frame)) == strip(frame) for a frame carrying INT in a tunnel.
fn transit_then_strip(frame: &[u8], known: int_core::int21::SourceOnly) {
    use int_core::int21::in_tunnel;
    use int_core::FrameBuf;
    let Ok(Some(found)) = in_tunnel::find(frame, known) else { return };
    let strip = |bytes: &[u8]| {
        let found = in_tunnel::find(bytes, known).expect("still INT").expect("still in the tunnel");
        let mut buffer = vec![0u8; 64 + bytes.len()];
        buffer[64..].copy_from_slice(bytes);
        let mut view = FrameBuf::new(&mut buffer, 64, bytes.len()).unwrap();
        in_tunnel::strip(&mut view, &found.span()).expect("found fits the frame");
        view.frame().to_vec()
    };
    let plain = strip(frame);
    let mut buffer = vec![0u8; 256 + frame.len()];
    buffer[256..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 256, frame.len()).unwrap();
    let hop = int_core::int21::HopMetadata { node_id: Some(7), ..Default::default() };
    if in_tunnel::push(&mut view, &found.for_push(), 9000, &hop).is_ok() {
        assert_eq!(strip(view.frame()), plain, "the push is stripped with the rest");
    }
}
