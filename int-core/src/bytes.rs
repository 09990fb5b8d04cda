//! Bounds-checked big-endian reads and writes for the few places that touch
//! single fields outside a zerocopy struct. Out of range reads give 0 and
//! out of range writes do nothing: callers have checked lengths before.

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
