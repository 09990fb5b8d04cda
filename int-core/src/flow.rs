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
        let mixed = (a ^ b.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mixed = (mixed ^ (mixed >> 32)).wrapping_mul(0xd6e8_feb8_6659_fd93);
        mixed ^ (mixed >> 32) ^ b.wrapping_mul(0xff51_afd7_ed55_8ccd)
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
        assert!(buckets.len() > 550, "only {} of 1024 buckets used", buckets.len());
    }
}
