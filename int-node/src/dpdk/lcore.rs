//! Launching one closure per worker lcore and waiting for them.

use std::ffi::c_void;

use super::DpdkError;

/// An EAL lcore id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LcoreId(pub u32);

/// The lcores EAL enabled besides the main one.
pub fn workers() -> Vec<LcoreId> {
    let mut out = Vec::new();
    // SAFETY: rte_get_next_lcore only reads EAL's lcore table.
    let mut id = unsafe { dpdk_sys::rte_get_next_lcore(u32::MAX, 1, 0) };
    while id < dpdk_sys::RTE_MAX_LCORE {
        out.push(LcoreId(id));
        // SAFETY: as above.
        id = unsafe { dpdk_sys::rte_get_next_lcore(id, 1, 0) };
    }
    out
}

type Job = Box<dyn FnOnce() -> i32 + Send>;

extern "C" fn trampoline(arg: *mut c_void) -> i32 {
    // SAFETY: arg is the Box<Job> leaked by `launch`, handed to exactly one
    // lcore, so it is reclaimed exactly once here.
    let job = unsafe { Box::from_raw(arg.cast::<Job>()) };
    job()
}

/// Runs `job` on worker lcore `lcore`.
pub fn launch(lcore: LcoreId, job: impl FnOnce() -> i32 + Send + 'static) -> Result<(), DpdkError> {
    let boxed: Box<Job> = Box::new(Box::new(job));
    let arg = Box::into_raw(boxed);
    // SAFETY: trampoline matches lcore_function_t; arg stays valid until
    // the trampoline reclaims it. On failure we reclaim it below.
    let ret = unsafe { dpdk_sys::rte_eal_remote_launch(Some(trampoline), arg.cast::<c_void>(), lcore.0) };
    if ret < 0 {
        // SAFETY: the launch failed, so the trampoline will never run.
        drop(unsafe { Box::from_raw(arg) });
        return Err(DpdkError::from_ret(format!("launch on lcore {}", lcore.0), ret));
    }
    Ok(())
}

/// Waits for the job on `lcore` and returns its value.
pub fn wait(lcore: LcoreId) -> i32 {
    // SAFETY: waits on an lcore id that EAL knows; no memory is shared.
    unsafe { dpdk_sys::rte_eal_wait_lcore(lcore.0) }
}

/// The NUMA socket an lcore runs on.
pub fn socket_of(lcore: LcoreId) -> u32 {
    // SAFETY: plain lookup in EAL's lcore table, valid after EAL init.
    unsafe { dpdk_sys::rte_lcore_to_socket_id(lcore.0) }
}
