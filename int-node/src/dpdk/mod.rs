//! The safe layer over DPDK: the only module with `unsafe`, each block with
//! a SAFETY note. Per-packet helpers are `#[inline]` Rust over the
//! generated `rte_mbuf` fields; the C shim is called once per burst.

pub mod cycles;
pub mod eal;
pub mod lcore;
pub mod mbuf;
pub mod mempool;
pub mod port;
pub mod telemetry;

use std::ffi::CStr;

/// DPDK's text for an errno value.
pub fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local
    // NUL-terminated string for any value.
    unsafe { CStr::from_ptr(dpdk_sys::rte_strerror(errno)) }.to_string_lossy().into_owned()
}

/// The calling thread's `rte_errno`.
pub fn last_errno() -> i32 {
    // SAFETY: reads the calling lcore's rte_errno through the shim; no
    // arguments, no state.
    unsafe { dpdk_sys::shim_errno() }
}

/// A DPDK failure: what was attempted, the errno and its text.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {text} (errno {errno})")]
pub struct DpdkError {
    pub what: String,
    pub errno: i32,
    pub text: String,
}

impl DpdkError {
    /// From a negative return value (DPDK's `-errno` convention).
    pub fn from_ret(what: impl Into<String>, ret: i32) -> Self {
        let errno = ret.unsigned_abs() as i32;
        DpdkError { what: what.into(), errno, text: strerror(errno) }
    }

    /// From the thread's `rte_errno`.
    pub fn from_errno(what: impl Into<String>) -> Self {
        let errno = last_errno();
        DpdkError { what: what.into(), errno, text: strerror(errno) }
    }
}
