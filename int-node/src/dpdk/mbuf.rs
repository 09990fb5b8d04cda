//! Bursts of mbufs on an lcore's stack, with the per-packet accessors inlined
//! over `rte_mbuf`'s fields (no shim call per packet).

use std::ptr;

use dpdk_sys::rte_mbuf;
use int_core::FrameBuf;

use super::port::{PortId, QueueId};

/// Packets per rx/tx burst.
pub const BURST: usize = 32;

/// Where and in what unit a driver stores RX timestamps: DPDK's
/// `rte_dynfield_timestamp` field, valid when the `rte_dynflag_rx_timestamp`
/// flag is set. The unit is the driver's: net_pcap (22.11) writes the
/// capture time in microseconds; NICs write their clock's ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxClock {
    pub offset: usize,
    pub flag: u64,
    pub ns_per_unit: u64,
}

/// Whether a packet's mbuf may be rewritten in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writable {
    Yes,
    No(Unwritable),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritable {
    MultiSegment,
    /// Indirect, external or with a reference count above 1.
    Shared,
}

/// Up to [`BURST`] mbufs owned by the calling lcore.
pub struct Burst {
    mbufs: [*mut rte_mbuf; BURST],
    len: usize,
}

impl Default for Burst {
    fn default() -> Self {
        Burst { mbufs: [ptr::null_mut(); BURST], len: 0 }
    }
}

impl Burst {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Receives up to [`BURST`] packets into an empty burst.
    #[inline]
    pub fn rx(&mut self, port: PortId, queue: QueueId) -> usize {
        debug_assert!(self.is_empty());
        // SAFETY: the array has room for BURST pointers; the port and queue
        // were set up by Port and are polled by this lcore only.
        self.len = usize::from(unsafe {
            dpdk_sys::shim_rx_burst(port.0, queue.0, self.mbufs.as_mut_ptr(), BURST as u16)
        });
        self.len
    }

    /// Sends the burst; frees what the queue did not take. Returns
    /// (sent, dropped) and leaves the burst empty.
    #[inline]
    pub fn tx(&mut self, port: PortId, queue: QueueId) -> (usize, usize) {
        self.tx_patiently(port, queue, 1)
    }

    /// [`Burst::tx`] that offers what the queue did not take again, up to
    /// `attempts` times, before freeing it: a generator's backpressure, so
    /// that it runs at the pace of what it feeds instead of numbering
    /// packets that never leave.
    #[inline]
    pub fn tx_patiently(&mut self, port: PortId, queue: QueueId, attempts: u32) -> (usize, usize) {
        let mut sent = 0;
        for attempt in 0..attempts {
            if sent == self.len {
                break;
            }
            if attempt > 0 {
                // Give the consumer the ring's cache lines for a while
                // instead of fighting it for them.
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
            }
            // SAFETY: mbufs[sent..len] are valid mbufs owned by this burst;
            // the TX queue is used by this lcore only. Ownership of those
            // the driver takes passes to it.
            sent += usize::from(unsafe {
                dpdk_sys::shim_tx_burst(
                    port.0,
                    queue.0,
                    self.mbufs.as_mut_ptr().add(sent),
                    (self.len - sent) as u16,
                )
            });
        }
        let dropped = self.len - sent;
        if dropped > 0 {
            // SAFETY: mbufs[sent..len] are still ours; freed once each.
            unsafe {
                dpdk_sys::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr().add(sent), dropped as u32);
            }
        }
        self.len = 0;
        (sent, dropped)
    }

    /// Frees every mbuf in the burst.
    pub fn free_all(&mut self) {
        if self.len > 0 {
            // SAFETY: the first `len` pointers are valid mbufs owned here.
            unsafe { dpdk_sys::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr(), self.len as u32) };
        }
        self.len = 0;
    }

    /// Keeps the packets for which `keep(index)` is true, in order; frees
    /// the others. Returns how many were freed.
    #[inline]
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) -> usize {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&m) = self.mbufs.get(i) else { break };
            if keep(i) {
                if let Some(slot) = self.mbufs.get_mut(kept) {
                    *slot = m;
                }
                kept += 1;
            } else {
                // SAFETY: m is a valid mbuf owned by this burst, dropped from
                // it right here, so it is freed exactly once.
                unsafe { dpdk_sys::shim_pktmbuf_free(m) };
            }
        }
        let freed = self.len - kept;
        self.len = kept;
        freed
    }

    #[inline]
    fn mbuf(&self, i: usize) -> Option<&rte_mbuf> {
        let m = *self.mbufs.get(..self.len)?.get(i)?;
        // SAFETY: pointers below `len` are valid mbufs owned by this burst.
        Some(unsafe { &*m })
    }

    /// Prefetches packet `i`'s first cache line of data.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(m) = self.mbuf(i) {
            let data = m.buf_addr.cast::<u8>().wrapping_add(usize::from(m.data_off));
            #[cfg(target_arch = "x86_64")]
            // SAFETY: prefetch is a hint; it never faults, whatever the address.
            unsafe {
                std::arch::x86_64::_mm_prefetch(data.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
            };
            let _ = data;
        }
    }

    /// Whether packet `i` may be rewritten in place, and if not, why: a
    /// multi-segment mbuf (the node transforms one contiguous frame), or an
    /// indirect, external or shared one (its data has another owner, who
    /// would see it change: refused as `rte_vlan_insert` refuses it).
    #[inline]
    pub fn writable(&self, i: usize) -> Writable {
        let Some(m) = self.mbuf(i) else { return Writable::No(Unwritable::Shared) };
        if m.nb_segs != 1 {
            Writable::No(Unwritable::MultiSegment)
        } else if m.ol_flags & (dpdk_sys::RTE_MBUF_F_INDIRECT | dpdk_sys::RTE_MBUF_F_EXTERNAL) != 0
            || m.refcnt != 1
        {
            Writable::No(Unwritable::Shared)
        } else {
            Writable::Yes
        }
    }

    /// The frame of packet `i` (single-segment mbufs only).
    #[inline]
    pub fn data(&self, i: usize) -> Option<&[u8]> {
        let m = self.mbuf(i)?;
        if m.nb_segs != 1 {
            return None;
        }
        // SAFETY: a single-segment mbuf's data lies at buf_addr + data_off
        // for data_len bytes, inside its buffer, owned by this burst.
        Some(unsafe {
            std::slice::from_raw_parts(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        })
    }

    /// Runs `f` on packet `i`'s whole buffer as a [`FrameBuf`] (headroom
    /// included) and stores the new data offset and length it leaves.
    /// `None` for mbufs that are not [`Burst::writable`].
    #[inline(always)]
    pub fn with_frame<R>(&mut self, i: usize, f: impl FnOnce(&mut FrameBuf<'_>) -> R) -> Option<R> {
        if self.writable(i) != Writable::Yes {
            return None;
        }
        let m = *self.mbufs.get(..self.len)?.get(i)?;
        // SAFETY: m is a valid mbuf owned by this burst; nothing else
        // references it while this exclusive borrow lives.
        let mbuf = unsafe { &mut *m };
        // SAFETY: the buffer is buf_len bytes at buf_addr, owned by this
        // mbuf, and data_off/data_len lie inside it (DPDK's invariant,
        // checked again by FrameBuf::new).
        let buffer =
            unsafe { std::slice::from_raw_parts_mut(mbuf.buf_addr.cast::<u8>(), usize::from(mbuf.buf_len)) };
        let mut frame = FrameBuf::new(buffer, usize::from(mbuf.data_off), usize::from(mbuf.data_len))?;
        let result = f(&mut frame);
        let (start, len) = (frame.start(), frame.len());
        mbuf.data_off = start as u16;
        mbuf.data_len = len as u16;
        mbuf.pkt_len = len as u32;
        Some(result)
    }

    /// Packet `i`'s RX time in epoch ns from the driver's timestamp field,
    /// when the driver set it.
    #[inline]
    pub fn rx_time_ns(&self, i: usize, clock: &RxClock) -> Option<u64> {
        let m = self.mbuf(i)?;
        if m.ol_flags & clock.flag == 0 {
            return None;
        }
        let base = (m as *const rte_mbuf).cast::<u8>();
        // SAFETY: `offset` came from rte_mbuf_dynfield_lookup for an 8-byte
        // field inside struct rte_mbuf; read unaligned to be safe.
        let raw = unsafe { ptr::read_unaligned(base.add(clock.offset).cast::<u64>()) };
        Some(raw.wrapping_mul(clock.ns_per_unit))
    }

    /// Packet `i`'s arrival time: its RX timestamp where the pipeline
    /// reads them (`clock`) and the driver set one, else `host_ns` (the
    /// burst's reading of the host clock).
    #[inline]
    pub fn arrival_ns(&self, i: usize, clock: Option<RxClock>, host_ns: u64) -> u64 {
        match clock.and_then(|clock| self.rx_time_ns(i, &clock)) {
            Some(ns) => ns,
            None => host_ns,
        }
    }

    #[cfg(feature = "lab")]
    /// Moves the packets for which `take(index)` is true out of the burst,
    /// in order, handing each with its index to `out`; the others stay, in
    /// order.
    #[inline]
    pub fn take_where(&mut self, mut take: impl FnMut(usize) -> bool, mut out: impl FnMut(usize, HeldMbuf)) {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&m) = self.mbufs.get(i) else { break };
            if take(i) {
                if let Some(held) = ptr::NonNull::new(m) {
                    out(i, HeldMbuf(held));
                }
            } else {
                if let Some(slot) = self.mbufs.get_mut(kept) {
                    *slot = m;
                }
                kept += 1;
            }
        }
        self.len = kept;
    }

    #[cfg(feature = "lab")]
    /// Appends a held mbuf; gives it back if the burst is full.
    #[inline]
    pub fn push(&mut self, held: HeldMbuf) -> Result<(), HeldMbuf> {
        if self.len >= BURST {
            return Err(held);
        }
        let m = held.0.as_ptr();
        std::mem::forget(held);
        self.push_raw(m);
        Ok(())
    }

    /// Appends an mbuf (for bursts built by the node itself).
    pub(crate) fn push_raw(&mut self, m: *mut rte_mbuf) -> bool {
        match self.mbufs.get_mut(self.len) {
            Some(slot) => {
                *slot = m;
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

/// One mbuf owned outside a burst (held back by a stage); freed on drop.
#[cfg(feature = "lab")]
pub struct HeldMbuf(ptr::NonNull<rte_mbuf>);

// SAFETY: a HeldMbuf is the only owner of its mbuf; DPDK lets an mbuf be
// used and freed on any lcore, one at a time.
#[cfg(feature = "lab")]
unsafe impl Send for HeldMbuf {}

#[cfg(feature = "lab")]
impl Drop for HeldMbuf {
    fn drop(&mut self) {
        // SAFETY: the mbuf is owned by this value alone (taken out of a
        // burst, never duplicated), so it is freed exactly once.
        unsafe { dpdk_sys::shim_pktmbuf_free(self.0.as_ptr()) };
    }
}

// SAFETY: a Burst owns its mbufs alone; moving it to another lcore (which
// the node does once, at launch, while it is empty) moves that ownership.
unsafe impl Send for Burst {}

impl Drop for Burst {
    fn drop(&mut self) {
        self.free_all();
    }
}

/// Test equipment: a clone of packet `i` (an indirect mbuf sharing its
/// data, which makes the original's reference count 2), appended to the
/// burst.
/// Receives and frees whatever is still waiting on a port's RX queues (a
/// loopback ring, packets that arrived after the workers stopped), so that
/// no mbuf outlives the run. Returns how many were freed.
pub fn drain_rx(port: PortId, rx_queues: u16) -> usize {
    let mut freed = 0;
    let mut burst = Burst::default();
    for queue in 0..rx_queues {
        // Bounded: a port that keeps receiving cannot hold shutdown.
        for _ in 0..4096 {
            let n = burst.rx(port, QueueId(queue));
            burst.free_all();
            freed += n;
            if n == 0 {
                break;
            }
        }
    }
    freed
}

#[cfg(test)]
pub fn clone_into(burst: &mut Burst, i: usize, pool: *mut dpdk_sys::rte_mempool) -> bool {
    let Some(&m) = burst.mbufs.get(..burst.len).and_then(|live| live.get(i)) else { return false };
    // SAFETY: m is a valid mbuf owned by the burst and pool a live pool;
    // the clone attaches to m's data and raises its reference count.
    let clone = unsafe { dpdk_sys::rte_pktmbuf_clone(m, pool) };
    !clone.is_null() && burst.push_raw(clone)
}

/// Allocates an mbuf from `pool`, copies `bytes` into it and appends it to
/// `burst`. False (nothing leaked) if the pool is empty or the burst full.
pub fn alloc_into(burst: &mut Burst, pool: *mut dpdk_sys::rte_mempool, bytes: &[u8]) -> bool {
    if burst.len() >= BURST || bytes.len() > usize::from(u16::MAX) {
        return false;
    }
    // SAFETY: pool is a live mempool owned by the caller's Mempool.
    let m = unsafe { dpdk_sys::shim_pktmbuf_alloc(pool) };
    if m.is_null() {
        return false;
    }
    // SAFETY: m is a fresh mbuf; append returns null if the tailroom is
    // too small, else a pointer to `len` writable bytes inside it.
    let data = unsafe { dpdk_sys::shim_pktmbuf_append(m, bytes.len() as u16) };
    if data.is_null() {
        // SAFETY: m is ours and not in any burst.
        unsafe { dpdk_sys::shim_pktmbuf_free(m) };
        return false;
    }
    // SAFETY: data points to bytes.len() writable bytes in m's buffer.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len()) };
    burst.push_raw(m)
}
