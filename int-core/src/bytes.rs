//! Bounds-checked big-endian reads and writes of single words at offsets a
//! checked shape has already proven in range: the INT block's per-packet
//! words (sequence, timestamps, tail) at offsets its template or shape
//! computed, and report fields after their length check. Headers are read
//! through zerocopy structs; out of range, these give 0 and write nothing,
//! which the callers' checks make unreachable.

#[inline]
pub(crate) fn be16(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at.saturating_add(2)) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

#[inline]
pub(crate) fn be32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at.saturating_add(4)) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

#[inline]
pub(crate) fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = bytes.get_mut(at..at.saturating_add(value.len())) {
        slot.copy_from_slice(value);
    }
}
