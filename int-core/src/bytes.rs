//! Bounds-checked big-endian reads and writes of single words at offsets a
//! checked shape has already proven in range: the INT block's per-packet
//! words (sequence, timestamps, tail) at offsets its template or shape
//! computed, and report fields after their length check. Headers are read
//! through zerocopy structs; out of range, these give 0 and write nothing,
//! which the callers' checks make unreachable.

use crate::error::{EmitError, Layer, ParseError};

#[inline]
pub(crate) fn byte(bytes: &[u8], at: usize) -> u8 {
    bytes.get(at).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn put_u8(bytes: &mut [u8], at: usize, value: u8) {
    if let Some(slot) = bytes.get_mut(at) {
        *slot = value;
    }
}

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

/// `bytes` from `at` on, for a parser of `layer` that needs `needed` bytes
/// there: a truncation error past the end (never an empty slice that the
/// parser would then have to find wanting).
#[inline]
pub(crate) fn after(bytes: &[u8], at: usize, layer: Layer, needed: usize) -> Result<&[u8], ParseError> {
    bytes.get(at..).ok_or_else(|| ParseError::truncated(layer, at, needed, bytes.len()))
}

/// `out` from `at` on, for an emitter of `layer` that needs `needed` bytes
/// there: no room past the end.
#[inline]
pub(crate) fn after_mut(
    out: &mut [u8],
    at: usize,
    layer: Layer,
    needed: usize,
) -> Result<&mut [u8], EmitError> {
    let available = out.len().saturating_sub(at);
    out.get_mut(at..).ok_or_else(|| EmitError::no_room(layer, needed, available))
}

/// `bytes[at..end]` for a parser of `layer`: a truncation error where the
/// span runs past the end (or ends before it starts).
#[inline]
pub(crate) fn span(bytes: &[u8], at: usize, end: usize, layer: Layer) -> Result<&[u8], ParseError> {
    let len = bytes.len();
    bytes.get(at..end).ok_or_else(|| ParseError::truncated(layer, at, end.saturating_sub(at), len))
}

/// `bytes[at..end]` to edit, for a transform of `layer`: as [`span`].
#[inline]
pub(crate) fn span_mut(
    bytes: &mut [u8],
    at: usize,
    end: usize,
    layer: Layer,
) -> Result<&mut [u8], ParseError> {
    let len = bytes.len();
    bytes.get_mut(at..end).ok_or_else(|| ParseError::truncated(layer, at, end.saturating_sub(at), len))
}
