//! The flow key: a unidirectional 5-tuple of IPv4 or IPv6 addresses (as
//! Host-INT keys its IPv4 flows), and [`FlowWords`], the two words a flow
//! table keeps of it (the reference stages' key): IPv4 addresses as they
//! are, IPv6 ones folded to 64 bits.

use core::fmt;
use core::net::{IpAddr, Ipv4Addr};

use crate::locate::{IpLocation, IpVersion};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

/// The tuple as two words for an IPv4 flow (five for IPv6): what a
/// keyed `HashMap` hasher is given, instead of the derived impl's nine
/// writes of discriminants, lengths and octets. Every address bit goes in
/// whole (not [`FlowKey::hash64`]'s fold, whose collisions a sender could
/// choose), so equal keys hash equal and the hasher's seed keeps its worth.
impl core::hash::Hash for FlowKey {
    #[inline]
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        let rest = u64::from(self.protocol) << 32 | u64::from(self.src_port) << 16 | u64::from(self.dst_port);
        match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                state.write_u64(u64::from(u32::from(src)) << 32 | u64::from(u32::from(dst)));
                state.write_u64(rest);
            }
            (src, dst) => {
                let bits = |addr: IpAddr| match addr {
                    IpAddr::V4(a) => u128::from(u32::from(a)),
                    IpAddr::V6(a) => u128::from(a),
                };
                state.write_u128(bits(src));
                state.write_u128(bits(dst));
                state.write_u64(rest | FlowWords::IPV6);
            }
        }
    }
}

impl FlowKey {
    /// An IPv4 flow.
    pub fn v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, src_port: u16, dst_port: u16) -> Self {
        FlowKey { src: IpAddr::V4(src), dst: IpAddr::V4(dst), protocol, src_port, dst_port }
    }

    /// The IPv4 addresses, for an IPv4 flow.
    pub fn ipv4_addrs(&self) -> Option<(Ipv4Addr, Ipv4Addr)> {
        match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => Some((src, dst)),
            _ => None,
        }
    }

    /// A well-mixed 64-bit hash for open-addressing tables (no SipHash per
    /// packet): the tuple packed into two words, multiplied and folded.
    #[inline]
    pub fn hash64(&self) -> u64 {
        mix(address_word(&self.src, &self.dst), self.protocol, self.src_port, self.dst_port)
    }

    /// The flow's phase for the hop rule's sample
    /// ([`crate::hop_rule::Sample`]): its ports as one word, read for free
    /// from a key and from its [`FlowWords`] alike, so that flows sprayed
    /// by one pattern are not all sampled at the same numbers.
    #[inline(always)]
    pub fn phase(&self) -> u32 {
        (u32::from(self.src_port) << 16) | u32::from(self.dst_port)
    }

    /// The key's two words, as a fast path reads them from the headers.
    #[inline]
    pub fn words(&self) -> FlowWords {
        let ipv6 = if self.ipv4_addrs().is_some() { 0 } else { FlowWords::IPV6 };
        let rest =
            ipv6 | u64::from(self.protocol) << 32 | u64::from(self.src_port) << 16 | u64::from(self.dst_port);
        FlowWords { addresses: address_word(&self.src, &self.dst), rest }
    }
}

/// A flow as two words read straight from its headers: the addresses
/// (an IPv4 flow's side by side, source in the high half; an IPv6 flow's
/// folded to 64 bits, each half of each address multiplied in), and the
/// protocol and ports
/// (`protocol << 32 | src_port << 16 | dst_port`, with [`FlowWords::IPV6`]
/// set for an IPv6 flow). The fast paths key their tables with it; it
/// hashes and folds as the [`FlowKey`] it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowWords {
    pub addresses: u64,
    pub rest: u64,
}

impl FlowWords {
    /// The bit of `rest` that marks an IPv6 flow (above the protocol).
    pub const IPV6: u64 = 1 << 40;

    /// An IPv6 flow's words, from its addresses as they lie in the header.
    #[inline(always)]
    pub fn v6(src: &[u8; 16], dst: &[u8; 16], protocol: u8, src_port: u16, dst_port: u16) -> Self {
        let addresses = fold_v6(u128::from_be_bytes(*src), u128::from_be_bytes(*dst));
        let rest = Self::IPV6 | u64::from(protocol) << 32 | u64::from(src_port) << 16 | u64::from(dst_port);
        FlowWords { addresses, rest }
    }

    #[inline(always)]
    pub fn is_ipv6(&self) -> bool {
        self.rest & Self::IPV6 != 0
    }

    #[inline(always)]
    pub fn protocol(&self) -> u8 {
        (self.rest >> 32) as u8
    }

    #[inline(always)]
    pub fn dst_port(&self) -> u16 {
        self.rest as u16
    }

    /// The destination of an IPv4 flow (an IPv6 flow's is folded away).
    #[inline(always)]
    pub fn dst_v4(&self) -> Option<Ipv4Addr> {
        (!self.is_ipv6()).then(|| Ipv4Addr::from(self.addresses as u32))
    }

    /// [`FlowKey::phase`] of the key.
    #[inline(always)]
    pub fn phase(&self) -> u32 {
        self.rest as u32
    }

    /// [`FlowKey::hash64`] of the key.
    #[inline(always)]
    pub fn hash64(&self) -> u64 {
        mix(self.addresses, self.protocol(), (self.rest >> 16) as u16, self.dst_port())
    }

    /// The IPv6 key these words folded, given its `addresses` (source then
    /// destination) kept beside a table: `None` unless they fold to these
    /// words (a stale or foreign pair is never reported as the flow). Two
    /// IPv6 flows whose folds collide (about one pair in 2^64) share the
    /// words; the full key is not recoverable from them alone.
    pub fn flow_v6(&self, addresses: &[u8; 32]) -> Option<FlowKey> {
        if !self.is_ipv6() {
            return None;
        }
        let (src, dst) = addresses.split_at(16);
        let src: [u8; 16] = src.try_into().ok()?;
        let dst: [u8; 16] = dst.try_into().ok()?;
        let key = FlowKey {
            src: IpAddr::V6(src.into()),
            dst: IpAddr::V6(dst.into()),
            protocol: self.protocol(),
            src_port: (self.rest >> 16) as u16,
            dst_port: self.dst_port(),
        };
        (key.words() == *self).then_some(key)
    }

    /// The key of an IPv4 flow; `None` for an IPv6 one, whose addresses
    /// are folded (`crate::fast::FastFrame::flow_key` reads them).
    pub fn key_v4(&self) -> Option<FlowKey> {
        let src = Ipv4Addr::from((self.addresses >> 32) as u32);
        let dst = self.dst_v4()?;
        Some(FlowKey::v4(src, dst, self.protocol(), (self.rest >> 16) as u16, self.dst_port()))
    }
}

/// The hash of a key's address word and the rest of its tuple.
#[inline]
fn mix(addresses: u64, protocol: u8, src_port: u16, dst_port: u16) -> u64 {
    let b = (u64::from(protocol) << 32) | (u64::from(src_port) << 16) | u64::from(dst_port);
    // MurmurHash3's 64-bit finaliser over the two words.
    let mut h = addresses ^ b.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The addresses in one word: IPv4 ones side by side; IPv6 ones (or a
/// mix) folded, each half of each address multiplied in.
#[inline]
fn address_word(src: &IpAddr, dst: &IpAddr) -> u64 {
    match (src, dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => (u64::from(u32::from(*src)) << 32) | u64::from(u32::from(*dst)),
        _ => {
            let bits = |addr: &IpAddr| match addr {
                IpAddr::V4(a) => u128::from(u32::from(*a)),
                IpAddr::V6(a) => u128::from(*a),
            };
            fold_v6(bits(src), bits(dst))
        }
    }
}

/// IPv6 addresses (or a mix) in one word: each half of each address
/// multiplied in, the destination's rotated so that direction matters.
#[inline(always)]
fn fold_v6(src: u128, dst: u128) -> u64 {
    let fold = |bits: u128| (bits as u64) ^ ((bits >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    fold(src) ^ fold(dst).rotate_left(29).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
}

impl Default for FlowKey {
    fn default() -> Self {
        FlowKey::v4(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0, 0, 0)
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proto = match self.protocol {
            6 => "tcp",
            17 => "udp",
            _ => "ip",
        };
        match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                write!(f, "{proto} {src}:{} -> {dst}:{}", self.src_port, self.dst_port)
            }
            (src, dst) => write!(f, "{proto} [{src}]:{} -> [{dst}]:{}", self.src_port, self.dst_port),
        }
    }
}

/// The key of the flow a located packet belongs to.
#[inline]
pub(crate) fn flow_key(frame: &[u8], ip: &IpLocation, protocol: u8, src_port: u16, dst_port: u16) -> FlowKey {
    match ip.version {
        IpVersion::V4 => {
            let addr = |at: usize| match frame.get(at..at + 4) {
                Some(&[a, b, c, d]) => core::net::Ipv4Addr::new(a, b, c, d),
                _ => core::net::Ipv4Addr::UNSPECIFIED,
            };
            FlowKey::v4(addr(ip.l3 + 12), addr(ip.l3 + 16), protocol, src_port, dst_port)
        }
        IpVersion::V6 => flow_key_v6(frame, ip.l3, protocol, src_port, dst_port),
    }
}

/// [`flow_key`] of an IPv4 packet as the fast tables key it, with no
/// key to build; `None` for IPv6 (its key names it) or a cut header.
#[inline(always)]
pub(crate) fn flow_words_v4(
    frame: &[u8],
    ip: &IpLocation,
    protocol: u8,
    src_port: u16,
    dst_port: u16,
) -> Option<FlowWords> {
    if ip.version != IpVersion::V4 {
        return None;
    }
    let addresses: &[u8; 8] = frame.get(ip.l3 + 12..)?.first_chunk()?;
    let rest = u64::from(protocol) << 32 | u64::from(src_port) << 16 | u64::from(dst_port);
    Some(FlowWords { addresses: u64::from_be_bytes(*addresses), rest })
}

/// [`flow_key`] of an IPv6 packet, out of line: the fast path's frame is IPv4,
/// and its path stays short.
#[cold]
#[inline(never)]
fn flow_key_v6(frame: &[u8], l3: usize, protocol: u8, src_port: u16, dst_port: u16) -> FlowKey {
    let addr = |at: usize| {
        let octets: [u8; 16] = frame.get(at..at + 16).and_then(|b| b.try_into().ok()).unwrap_or_default();
        core::net::IpAddr::V6(octets.into())
    };
    FlowKey { src: addr(l3 + 8), dst: addr(l3 + 24), protocol, src_port, dst_port }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src_port: u16) -> FlowKey {
        FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, src_port, 5000)
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

    /// What a `HashMap` hasher is given: the whole tuple, each field
    /// apart, and the same for equal keys.
    #[test]
    fn a_key_hashes_its_whole_tuple() {
        use core::hash::BuildHasher;
        let hash =
            |key: FlowKey| std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(key);
        let v6 = |src: &str| FlowKey {
            src: IpAddr::V6(src.parse().unwrap()),
            dst: IpAddr::V6("2001:db8::2".parse().unwrap()),
            ..key(4000)
        };
        let base = key(4000);
        assert_eq!(hash(base), hash(key(4000)));
        let others = [
            key(4001),
            FlowKey { dst_port: 5001, ..base },
            FlowKey { protocol: 6, ..base },
            FlowKey { src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)), ..base },
            FlowKey { dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)), ..base },
            v6("2001:db8::1"),
        ];
        let hashes: std::collections::HashSet<u64> =
            others.iter().map(|key| hash(*key)).chain([hash(base)]).collect();
        assert_eq!(hashes.len(), others.len() + 1);
        assert_eq!(hash(v6("2001:db8::1")), hash(v6("2001:db8::1")));
    }

    #[test]
    fn words_keep_ipv4_whole_and_fold_ipv6() {
        assert_eq!(key(4000).words().key_v4(), Some(key(4000)));
        let v6 = |last: u16| FlowKey {
            src: IpAddr::V6(core::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last)),
            dst: IpAddr::V6("2001:db8::ffff".parse().unwrap()),
            ..key(4000)
        };
        assert_eq!(v6(1).words().key_v4(), None, "an IPv6 key is folded");
        assert_eq!(v6(1).words().hash64(), v6(1).hash64());
        assert_eq!(key(7).words().hash64(), key(7).hash64());
        assert_ne!(v6(1).words(), v6(2).words());
        assert_eq!(v6(1).to_string(), "udp [2001:db8::1]:4000 -> [2001:db8::ffff]:5000");
        let mut addresses = [0u8; 32];
        addresses[..16].copy_from_slice(&core::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets());
        addresses[16..].copy_from_slice(&"2001:db8::ffff".parse::<core::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(v6(1).words().flow_v6(&addresses), Some(v6(1)));
        assert_eq!(v6(2).words().flow_v6(&addresses), None, "addresses that do not fold to the words");
        assert_eq!(key(1).words().flow_v6(&addresses), None, "an IPv4 flow");
        // 10,000 IPv6 flows differing in one address bit each: no fold
        // collides.
        let folds: std::collections::HashSet<_> =
            (0..10_000u16).map(|i| v6(i).words()).map(|w| (w.addresses, w.rest)).collect();
        assert_eq!(folds.len(), 10_000);
    }

    /// A key's phase and its words' are one: the fast and the general
    /// paths sample a flow at the same numbers.
    #[test]
    fn a_key_and_its_words_have_one_phase() {
        let v4 = key(4000);
        let words = FlowWords { addresses: 0x0a00_0001_0a00_0002, rest: 17 << 32 | 4000 << 16 | 5000 };
        assert_eq!((words.key_v4(), words.phase()), (Some(v4), v4.phase()));
        let src = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let v6 = FlowKey { src: IpAddr::V6(src.into()), dst: IpAddr::V6([9; 16].into()), ..v4 };
        assert_eq!(FlowWords::v6(&src, &[9; 16], 17, 4000, 5000).phase(), v6.phase());
        assert_ne!(key(4001).phase(), v4.phase());
        // The words a fast path reads are the key's.
        assert_eq!((v4.words(), v6.words()), (words, FlowWords::v6(&src, &[9; 16], 17, 4000, 5000)));
    }

    #[test]
    fn hash_spreads_sequential_ports() {
        let buckets: std::collections::HashSet<u64> = (0..1024u16).map(|p| key(p).hash64() & 1023).collect();
        // 1024 keys into 1024 buckets: about 1 - 1/e of them, 647, if random.
        assert!(buckets.len() > 600, "only {} of 1024 buckets used", buckets.len());
    }
}
