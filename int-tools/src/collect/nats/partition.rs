//! Partitions by flow, decided once at the edge: with `--nats-partitions
//! P` a receiving collector publishes each datagram under
//! `PREFIX.p<k>.batch.KIND.NODE`, k the datagram's flow hashed modulo P, so
//! that every report of one flow and every postcard of one packet (the
//! same 5-tuple, whichever switch sent it) land in one partition, and one
//! aggregator that owns the partition sees them all (docs/scale-out.md,
//! "Partitions").
//!
//! The hash is 32-bit FNV-1a over the flow's bytes in a fixed order (the
//! address family, source and destination addresses, protocol, ports
//! big-endian), then MurmurHash3's 32-bit finalizer (`fmix32`): FNV-1a's
//! low bits depend on the bytes' low bits only, so flows whose address
//! and port count up together would share a few of 16 partitions; the
//! finalizer makes every bit depend on every byte. The same on every
//! host, build and run, unlike Rust's randomly keyed `HashMap` hasher. A datagram whose flow cannot be read
//! (refused, or a report without a packet inside) goes by its reporting
//! node instead; it has no flow to keep whole.

use std::net::IpAddr;

use int_core::flow::FlowKey;

/// Partitions a stream has at most: the partition travels in one byte
/// inside the process (`batch::Entry`'s reserved byte, cleared on the way
/// out).
pub const MAX: u16 = 256;

/// The partition of a flow (or, with none, of the reporting node) among
/// `count` partitions.
pub fn of(flow: Option<&FlowKey>, node: u32, count: u16) -> u8 {
    let hash = match flow {
        Some(flow) => flow_hash(flow),
        None => fmix32(fnv1a(FNV_OFFSET, &node.to_be_bytes())),
    };
    // count <= MAX, so the remainder fits a byte.
    (hash % u32::from(count.max(1))) as u8
}

/// FNV-1a (32 bits) of a flow's bytes (family, addresses, protocol,
/// ports), finalized by `fmix32`.
pub fn flow_hash(flow: &FlowKey) -> u32 {
    let mut hash = FNV_OFFSET;
    for address in [flow.src, flow.dst] {
        hash = match address {
            IpAddr::V4(v4) => fnv1a(fnv1a(hash, &[4]), &v4.octets()),
            IpAddr::V6(v6) => fnv1a(fnv1a(hash, &[6]), &v6.octets()),
        };
    }
    hash = fnv1a(hash, &[flow.protocol]);
    hash = fnv1a(hash, &flow.src_port.to_be_bytes());
    fmix32(fnv1a(hash, &flow.dst_port.to_be_bytes()))
}

/// MurmurHash3's 32-bit finalizer: every output bit depends on every
/// input bit.
fn fmix32(mut hash: u32) -> u32 {
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^ (hash >> 16)
}

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

fn fnv1a(mut hash: u32, bytes: &[u8]) -> u32 {
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// A partition's subject token: `p<k>`.
pub fn token(partition: u8) -> String {
    format!("p{partition}")
}

/// Which partitions an aggregator reads: every one it can hold a lease on
/// (`auto`), or those listed (`0-7,12`), leased all the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owned {
    Auto,
    Listed(Vec<u8>),
}

/// Why `--partitions` reads as no partitions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--partitions {text:?}: give auto, or partitions and ranges below {MAX} like 0-7,12")]
pub struct OwnedError {
    pub text: String,
}

impl std::str::FromStr for Owned {
    type Err = OwnedError;

    fn from_str(text: &str) -> Result<Owned, OwnedError> {
        if text == "auto" {
            return Ok(Owned::Auto);
        }
        let error = || OwnedError { text: text.to_string() };
        let mut listed = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (first, last) = part.split_once('-').unwrap_or((part, part));
            let (first, last): (u8, u8) =
                (first.parse().map_err(|_| error())?, last.parse().map_err(|_| error())?);
            if first > last {
                return Err(error());
            }
            listed.extend(first..=last);
        }
        listed.sort_unstable();
        listed.dedup();
        Ok(Owned::Listed(listed))
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    /// FNV-1a's published vectors (the empty string, "a", "foobar"), so the
    /// hash is the documented one and another implementation (a Python
    /// consumer, a subject mapping) can compute the same partitions.
    #[test]
    fn fnv1a_as_published() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0xbf9c_f968);
    }

    /// A flow's bytes in the documented order, hashed in one go.
    #[test]
    fn a_flow_hashes_as_its_bytes() {
        let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 1000, 4790);
        let bytes = [4, 10, 0, 0, 1, 4, 10, 0, 0, 2, 17, 0x03, 0xe8, 0x12, 0xb6];
        assert_eq!(flow_hash(&flow), fmix32(fnv1a(FNV_OFFSET, &bytes)));
        assert_eq!(u32::from(of(Some(&flow), 9, 16)), fmix32(fnv1a(FNV_OFFSET, &bytes)) % 16);
        assert_eq!(u32::from(of(None, 9, 16)), fmix32(fnv1a(FNV_OFFSET, &9u32.to_be_bytes())) % 16);
        // MurmurHash3's finalizer's known values.
        assert_eq!(fmix32(0), 0);
        assert_eq!(fmix32(1), 0x514e_28b7);
    }

    /// Many flows spread over 16 partitions, none empty and none with more
    /// than twice its share: flows differing in their source address, and
    /// flows whose address and port count up together (FNV-1a alone put
    /// 144 such flows in 2 of 16 partitions).
    #[test]
    fn flows_spread_over_the_partitions() {
        let spread = |flows: Vec<FlowKey>| {
            let mut counts = [0u32; 16];
            for flow in &flows {
                counts[usize::from(of(Some(flow), 0, 16))] += 1;
            }
            let share = flows.len() as u32 / 16;
            assert!(counts.iter().all(|c| (share / 2..=share * 2).contains(c)), "{counts:?}");
        };
        spread(
            (0..4096u32)
                .map(|n| {
                    FlowKey::v4(Ipv4Addr::from(0x0a00_0000 + n), Ipv4Addr::new(10, 9, 9, 9), 6, 40000, 80)
                })
                .collect(),
        );
        spread(
            (0..1024u16)
                .map(|n| {
                    let source = Ipv4Addr::new(10, 1, (n >> 8) as u8, n as u8);
                    FlowKey::v4(source, Ipv4Addr::new(10, 2, 0, 1), 17, 7000 + n, 5000)
                })
                .collect(),
        );
    }

    #[test]
    fn owned_partitions_read_from_their_flag() {
        assert_eq!("auto".parse(), Ok(Owned::Auto));
        assert_eq!("0-3,12, 2".parse(), Ok(Owned::Listed(vec![0, 1, 2, 3, 12])));
        for bad in ["", "3-1", "256", "x", "1-"] {
            assert!(bad.parse::<Owned>().is_err(), "{bad}");
        }
    }
}
