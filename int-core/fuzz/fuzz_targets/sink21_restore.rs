//! What an INT 2.1 sink forwards, judged as the INT 0.5 sink's output is
//! (`sink_restore`): whatever arbitrary frame the sink accepts as INT of
//! its domain (DSCP or UDP port marking, NPT 0, 1 or 2, in a VXLAN-GPE or
//! Geneve tunnel too), its output walks cleanly under etherparse, is the
//! input less exactly the bytes the sink said it removed, and every
//! checksum in it is as right, or as wrong, as in the input (the L4
//! checksum over what the input's covered: the whole segment, or for NPT 2
//! the original one after the block). What the sink leaves as not INT it
//! leaves whole, and a strip never fails on what `extract` accepted.
#![no_main]

use int_core::marking::{DscpMatch, TcpPlacement};
use int_core::int21::{sink, Arrival, Domain, Marking, Next, SourceOnly};
use int_core::locate;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

#[path = "oracle.rs"]
mod oracle;

use oracle::{ip_verdict, l4_verdict, walk};

fn domain(selector: u8) -> Domain {
    Domain {
        marking: if selector & 1 == 0 {
            Marking::Dscp(DscpMatch::new(0x17, 0x3f).expect("a DSCP"))
        } else {
            Marking::UdpPort(7777)
        },
        tcp_placement: if selector & 2 == 0 { TcpPlacement::BeforeOptions } else { TcpPlacement::AfterOptions },
        source_only: if selector & 4 == 0 { SourceOnly::NONE } else { SourceOnly::sequence(0x4944) },
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let domain = domain(selector);
    let Ok(Arrival::Int(found)) = sink::classify(frame, &domain, &int_core::hop_rule::HopRule::default()) else { return };
    let Ok(Some(ip)) = locate::ip(frame) else { panic!("classify accepted a frame with no IP header") };
    let (ip_in, addresses) = ip_verdict(frame, &ip);
    let l4_in = match found.next {
        Some(Next::IpProtocol(protocol)) => {
            l4_verdict(addresses, protocol, &frame[found.block_at + found.block_len..ip.end])
        }
        _ => l4_verdict(addresses, ip.protocol, &frame[ip.l4..ip.end]),
    };
    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).expect("a view");
    let removed = sink::strip(&mut view, &found).expect("classify accepted it");
    assert_eq!(view.len() + removed, frame.len());
    assert!(removed >= found.block_len, "the block at least is gone");
    let (ip_out, l4_out) = walk(view.frame());
    assert_eq!(ip_out, ip_in, "IPv4 header checksum");
    if !ip.is_fragment() {
        assert_eq!(l4_out, l4_in, "L4 checksum");
    }
});
