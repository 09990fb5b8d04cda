//! What the sink forwards, judged by a parser nobody here wrote: whatever
//! arbitrary frame the sink accepts as INT, its output walks cleanly under
//! etherparse (Ethernet, IPv4 lengths or IPv6 and its extension headers,
//! UDP length, TCP Data Offset) and
//! every checksum in it is exactly as right, or as wrong, as it was in the
//! input (IPv4 header; the L4 checksum over what the input's covered: the
//! whole carrier in the DSCP encapsulation, less a Host-INT tail, the inner
//! header in the UDP one); a UDP checksum of 0 stays 0.
#![no_main]

use int_core::int05::{Encapsulation, EXTENSION_UDP_LEN};
use int_core::marking::TcpPlacement;
use int_core::int05::Domain;
use int_core::locate;
use int_core::int05::sink;
use int_core::FrameBuf;
use libfuzzer_sys::fuzz_target;

#[path = "oracle.rs"]
mod oracle;

use oracle::{ip_verdict, l4_verdict, walk};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else { return };
    let config = Domain {
        encapsulation: if selector & 1 == 0 {
            Encapsulation::default()
        } else {
            Encapsulation::ExtensionUdp { port: 33122 }
        },
        tcp_placement: if selector & 2 == 0 {
            TcpPlacement::BeforeOptions
        } else {
            TcpPlacement::AfterOptions
        },
    };
    let Ok(Some(found)) = sink::extract(frame, &config) else { return };
    let Ok(Some(ip)) = locate::ip(frame) else { panic!("extract accepted a frame with no IP header") };
    // The input's verdicts, on what its checksums covered.
    let (ip_in, addresses) = ip_verdict(frame, &ip);
    let l4_in = match config.encapsulation {
        // A tail that is not informative is Host-INT's, which the L4
        // checksum does not cover (its first bytes may hold the kernel's
        // checksum completion): judge the input without it.
        Encapsulation::OverTcpUdp { .. } if !found.tail_covered => {
            let mut segment = frame[ip.l4..ip.end].to_vec();
            let tail_at = found.block_at + found.block_len - 4 - ip.l4;
            segment[tail_at..tail_at + 4].fill(0);
            l4_verdict(addresses, ip.protocol, &segment)
        }
        Encapsulation::OverTcpUdp { .. } => l4_verdict(addresses, ip.protocol, &frame[ip.l4..ip.end]),
        Encapsulation::ExtensionUdp { .. } => {
            let inner = ip.l4 + EXTENSION_UDP_LEN + found.block_len;
            l4_verdict(addresses, found.tail.protocol, &frame[inner..ip.end])
        }
    };

    let mut buffer = vec![0u8; 64 + frame.len()];
    buffer[64..].copy_from_slice(frame);
    let mut view = FrameBuf::new(&mut buffer, 64, frame.len()).unwrap();
    sink::strip(&mut view, &found, &config).expect("extract accepted it");
    let (ip_out, l4_out) = walk(view.frame());
    assert_eq!(ip_out, ip_in, "IPv4 header checksum");
    if !ip.is_fragment() {
        assert_eq!(l4_out, l4_in, "L4 checksum");
    }
});
