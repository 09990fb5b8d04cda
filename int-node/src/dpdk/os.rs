//! The few operating-system calls the node makes beside DPDK, kept here so
//! that `unsafe` lives in one layer: signal handlers, process control,
//! cache prefetch, and batched UDP sends (sendmmsg) for the exporter.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Calls `handler` on SIGINT and SIGTERM. The handler must only touch
/// atomics (async-signal-safe).
pub fn on_stop_signals(handler: extern "C" fn(libc::c_int)) {
    let handler = handler as libc::sighandler_t;
    // SAFETY: installing a handler is sound; the handlers this program
    // passes only store to atomics.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Restores SIGPIPE's default action (end quietly when the reader of our
/// stdout goes away), as Unix filters do.
pub fn default_sigpipe() {
    // SAFETY: sets a default disposition; called before threads exist.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Sends SIGTERM to a process this program started.
pub fn terminate(pid: u32) {
    // SAFETY: kill(2) has no memory effects; the pid is our unreaped child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A hint to load `value`'s cache line.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint on a valid reference; it never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch((value as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Asks the kernel to back `[start, start + len)` with transparent huge
/// pages (where enabled as `madvise`): big flow tables then cost far fewer
/// TLB misses. Call before the memory is first touched.
pub fn advise_huge_pages(start: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let first = (start as usize).div_ceil(HUGE) * HUGE;
    let end = (start as usize + len) / HUGE * HUGE;
    if end > first {
        // SAFETY: madvise only changes how the kernel backs these pages,
        // which lie inside an allocation the caller owns.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}

/// Up to this many datagrams per sendmmsg(2).
pub const BATCH: usize = 64;

/// Sends datagrams on a connected UDP socket, many per system call.
pub struct BatchSender {
    socket: UdpSocket,
}

impl BatchSender {
    pub fn new(socket: UdpSocket) -> Self {
        BatchSender { socket }
    }

    /// Sends every payload (at most [`BATCH`] are taken); returns how many
    /// the kernel accepted.
    pub fn send(&self, payloads: &[&[u8]]) -> usize {
        let count = payloads.len().min(BATCH);
        let mut iovecs = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        // SAFETY: mmsghdr is a plain C struct; all-zero is a valid value.
        let mut headers: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((iovec, header), payload) in
            iovecs.iter_mut().zip(headers.iter_mut()).zip(payloads.iter()).take(count)
        {
            iovec.iov_base = payload.as_ptr() as *mut libc::c_void;
            iovec.iov_len = payload.len();
            header.msg_hdr.msg_iov = iovec;
            header.msg_hdr.msg_iovlen = 1;
        }
        let mut sent = 0;
        while sent < count {
            let rest = headers.get_mut(sent..count).unwrap_or(&mut []);
            // SAFETY: every header points at one iovec that points into a
            // payload borrowed for this call; the socket is connected, so no
            // addresses are needed; `rest` holds `rest.len()` headers.
            let ret =
                unsafe { libc::sendmmsg(self.socket.as_raw_fd(), rest.as_mut_ptr(), rest.len() as u32, 0) };
            if ret <= 0 {
                // A refused datagram (ICMP port unreachable reported on a
                // connected socket) fails one call: skip it and go on.
                sent += 1;
                continue;
            }
            sent += ret as usize;
        }
        count
    }
}

/// The global allocator: the system's, counting what worker lcores allocate
/// while they forward (`on_packet_path`), so that a run can prove that the
/// packet path allocates nothing.
pub struct CountingAllocator;

static PACKET_PATH_ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    static ON_PACKET_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as on (or off) the packet path.
pub fn on_packet_path(on: bool) {
    ON_PACKET_PATH.with(|flag| flag.set(on));
}

/// Allocations made on the packet path so far.
pub fn packet_path_allocations() -> u64 {
    PACKET_PATH_ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

fn count() {
    // try_with: during thread teardown the flag may be gone.
    if ON_PACKET_PATH.try_with(|flag| flag.get()).unwrap_or(false) {
        PACKET_PATH_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counting touches only an atomic and a const-initialised thread-local.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout contract is passed on as it is.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above; ptr came from this allocator (the system's).
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
