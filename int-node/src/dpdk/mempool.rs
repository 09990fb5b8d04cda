//! A packet mbuf pool.

use std::ffi::CString;
use std::ptr::NonNull;

use super::DpdkError;

pub struct Mempool {
    raw: NonNull<dpdk_sys::rte_mempool>,
    size: u32,
}

// SAFETY: rte_mempool is designed for use from many lcores at once (each
// with its own cache); the pointer is only used through DPDK's API.
unsafe impl Send for Mempool {}
// SAFETY: as above; no Rust-side state is mutated through &Mempool.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// `rte_pktmbuf_pool_create` on NUMA `socket`, each mbuf with
    /// `data_room` bytes (headroom included; see [`data_room_for_mtu`]).
    pub fn new(
        name: &str,
        mbufs: u32,
        cache: u32,
        data_room: u16,
        socket: i32,
    ) -> Result<Mempool, DpdkError> {
        let c_name = CString::new(name).map_err(|_| DpdkError::from_ret("mempool name", -libc::EINVAL))?;
        // SAFETY: the name is NUL-terminated and copied by DPDK; the other
        // arguments are plain values. A null return is handled below.
        let raw =
            unsafe { dpdk_sys::rte_pktmbuf_pool_create(c_name.as_ptr(), mbufs, cache, 0, data_room, socket) };
        let raw = NonNull::new(raw)
            .ok_or_else(|| DpdkError::from_errno(format!("mempool {name} ({mbufs} mbufs)")))?;
        Ok(Mempool { raw, size: mbufs })
    }

    pub fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.raw.as_ptr()
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Mbufs in the pool (including per-lcore caches).
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is live for the lifetime of self.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// Mbufs out of the pool (in rings, bursts or leaked).
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is live for the lifetime of self.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.raw.as_ptr()) }
    }
}

/// The data room (headroom included) that holds a whole frame of a port
/// with this MTU in one segment: Ethernet and two VLAN tags on top of the
/// MTU, at least DPDK's default 2048 bytes.
pub fn data_room_for_mtu(mtu: u16) -> u16 {
    const ETHERNET_AND_TWO_TAGS: u32 = 14 + 8;
    let frame = (u32::from(mtu) + ETHERNET_AND_TWO_TAGS).max(dpdk_sys::RTE_MBUF_DEFAULT_DATAROOM);
    let room = dpdk_sys::RTE_PKTMBUF_HEADROOM + frame.next_multiple_of(64);
    u16::try_from(room).unwrap_or(u16::MAX)
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: dropped after every port using the pool is closed (the
        // run loop drops ports first), so no mbuf of it is referenced.
        unsafe { dpdk_sys::rte_mempool_free(self.raw.as_ptr()) }
    }
}
