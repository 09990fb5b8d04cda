//! The flow key: a unidirectional IPv4 5-tuple, as Host-INT keys its flows.

use core::fmt;
use core::net::Ipv4Addr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    /// A well-mixed 64-bit hash for open-addressing tables (no SipHash per
    /// packet): the tuple packed into two words, multiplied and folded.
    #[inline]
    pub fn hash64(&self) -> u64 {
        let a = (u64::from(u32::from(self.src)) << 32) | u64::from(u32::from(self.dst));
        let b =
            (u64::from(self.protocol) << 32) | (u64::from(self.src_port) << 16) | u64::from(self.dst_port);
        // MurmurHash3's 64-bit finaliser over the two words.
        let mut h = a ^ b.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

impl Default for FlowKey {
    fn default() -> Self {
        FlowKey {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            protocol: 0,
            src_port: 0,
            dst_port: 0,
        }
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proto = match self.protocol {
            6 => "tcp",
            17 => "udp",
            _ => "ip",
        };
        write!(f, "{proto} {}:{} -> {}:{}", self.src, self.src_port, self.dst, self.dst_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src_port: u16) -> FlowKey {
        FlowKey {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: 17,
            src_port,
            dst_port: 5000,
        }
    }

    #[test]
    fn direction_matters() {
        let forward = key(4000);
        let reverse =
            FlowKey { src: forward.dst, dst: forward.src, src_port: 5000, dst_port: 4000, ..forward };
        assert_ne!(forward, reverse);
        assert_ne!(forward.hash64(), reverse.hash64());
        assert_eq!(forward.to_string(), "udp 10.0.0.1:4000 -> 10.0.0.2:5000");
    }

    #[test]
    fn hash_spreads_sequential_ports() {
        let buckets: std::collections::HashSet<u64> = (0..1024u16).map(|p| key(p).hash64() & 1023).collect();
        // 1024 keys into 1024 buckets: about 1 - 1/e of them, 647, if random.
        assert!(buckets.len() > 600, "only {} of 1024 buckets used", buckets.len());
    }
}
