//! Internet checksum: the RFC 1071 sum and the RFC 1624 incremental update.
//!
//! Sums are kept unfolded in a `u32` ([`sum`]) so that several pieces can be
//! added before one fold. Every region summed here starts at an even offset
//! from the start of its checksummed header, which is what lets the INT
//! transforms add or remove whole regions with [`adjust`].

use core::net::Ipv4Addr;

/// Adds `data` as big-endian 16-bit words to `acc` (RFC 1071). An odd last
/// byte is padded with zero. The result is partly folded (below 2^17 + acc).
#[inline]
pub fn sum(acc: u32, data: &[u8]) -> u32 {
    // 32-bit big-endian words into a 64-bit accumulator: ones' complement
    // addition is associative, so the 16-bit halves fold at the end. 2^32
    // words fit before the accumulator could overflow.
    let mut wide = u64::from(acc);
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        if let [a, b, c, d] = *word {
            wide += u64::from(u32::from_be_bytes([a, b, c, d]));
        }
    }
    match *words.remainder() {
        [a, b, c] => wide += u64::from(u32::from_be_bytes([a, b, c, 0])),
        [a, b] => wide += u64::from(u32::from_be_bytes([a, b, 0, 0])),
        [a] => wide += u64::from(u32::from_be_bytes([a, 0, 0, 0])),
        _ => {}
    }
    // Fold 64 -> 32 bits (twice covers the carry), then keep 17 bits' worth.
    wide = (wide & 0xffff_ffff) + (wide >> 32);
    wide = (wide & 0xffff_ffff) + (wide >> 32);
    let folded = wide as u32;
    (folded & 0xffff) + (folded >> 16)
}

/// The two 16-bit halves of a 32-bit word, added: its part of a sum.
#[inline(always)]
pub fn word_sum(value: u32) -> u32 {
    (value >> 16) + (value & 0xffff)
}

/// Folds a 32-bit sum into 16 bits with end-around carry.
#[inline]
pub fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for `data` (with its checksum field zeroed).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

/// Sum of the IPv4 pseudo-header for TCP/UDP (RFC 768, RFC 793).
#[inline]
pub fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, l4_len: u16) -> u32 {
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    acc + u32::from(protocol) + u32::from(l4_len)
}

/// RFC 1624 eqn. 3: the new checksum after words summing to `removed` were
/// replaced by words summing to `added`: `HC' = ~(~HC + ~m + m')`.
#[inline(always)]
pub fn adjust(checksum: u16, removed: u32, added: u32) -> u16 {
    let acc = u32::from(!checksum) + u32::from(!fold(removed)) + u32::from(fold(added));
    !fold(acc)
}

/// [`adjust`] for a UDP checksum: 0 means "no checksum" and stays 0, and a
/// computed 0 is sent as 0xFFFF (RFC 768).
#[inline]
pub fn adjust_udp(checksum: u16, removed: u32, added: u32) -> u16 {
    if checksum == 0 {
        return 0;
    }
    match adjust(checksum, removed, added) {
        0 => 0xffff,
        value => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 section 3's example: the words 0001 f203 f4f5 f6f7 sum to
    /// ddf2 with end-around carry.
    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
        assert_eq!(fold(sum(0, &[0x12])), 0x1200);
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56, 0x78, 0x9a])), fold(0x1234 + 0x5678 + 0x9a00));
    }

    /// The word-at-a-time sum equals the plain 16-bit definition, for long
    /// inputs of all-ones too (carry handling).
    #[test]
    fn wide_sum_matches_definition() {
        let reference = |acc: u32, data: &[u8]| {
            let mut total = u64::from(acc);
            for pair in data.chunks(2) {
                total += u64::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
            }
            while total > 0xffff {
                total = (total & 0xffff) + (total >> 16);
            }
            total as u16
        };
        let ones = vec![0xffu8; 9001];
        let mixed: Vec<u8> = (0..1501u32).map(|i| (i * 131 + 7) as u8).collect();
        for data in [&ones[..], &mixed[..], &ones[..3], &mixed[..1]] {
            for acc in [0u32, 1, 0xffff, 0x1_2345] {
                assert_eq!(fold(sum(acc, data)), reference(acc, data));
            }
        }
    }

    /// A real IPv4 header (from Wikipedia's IPv4 checksum example) sums to
    /// 0xffff once its checksum b861 is in place.
    #[test]
    fn ipv4_header_verifies() {
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01,
            0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&header), 0xb861);
        let mut with = header;
        with[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(fold(sum(0, &with)), 0xffff);
    }

    /// RFC 1624 section 4's example: HC 0xdd2f, m 0x5555 -> m' 0x3285
    /// gives HC' 0x0000, not 0xffff as eqn. 2 would.
    #[test]
    fn rfc1624_example() {
        assert_eq!(adjust(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn adjust_matches_recompute() {
        let mut data: Vec<u8> = (0u8..64).map(|i| i.wrapping_mul(37)).collect();
        let before = checksum(&data);
        let old = u16::from_be_bytes([data[10], data[11]]);
        data[10] = 0xbe;
        data[11] = 0xef;
        assert_eq!(adjust(before, u32::from(old), 0xbeef), checksum(&data));
    }

    #[test]
    fn udp_zero_checksum_stays_zero() {
        assert_eq!(adjust_udp(0, 0x1234, 0x4321), 0);
        // A result of 0 is sent as 0xffff.
        assert_eq!(adjust_udp(0xdd2f, 0x5555, 0x3285), 0xffff);
    }
}
