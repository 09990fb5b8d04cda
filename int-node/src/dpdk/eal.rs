//! The Environment Abstraction Layer: initialised once per process from an
//! argument list, cleaned up when the guard is dropped.

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use super::DpdkError;

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// Guard for an initialised EAL. Drop it after every port is closed.
pub struct Eal {
    // Keeps argv alive: EAL may keep pointers into it.
    _args: Vec<CString>,
    _argv: Vec<*mut c_char>,
}

impl Eal {
    /// `rte_eal_init` with `args` (the program name first). DPDK allows this
    /// once per process, so a second call is refused here.
    pub fn init(args: &[String]) -> Result<Eal, DpdkError> {
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError {
                what: "EAL init".into(),
                errno: libc::EALREADY,
                text: "already initialised in this process".into(),
            });
        }
        let args: Vec<CString> =
            args.iter().map(|a| CString::new(a.as_str())).collect::<Result<_, _>>().map_err(|_| {
                DpdkError {
                    what: "EAL init".into(),
                    errno: libc::EINVAL,
                    text: "argument contains NUL".into(),
                }
            })?;
        let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
        // SAFETY: argv holds `args.len()` pointers to NUL-terminated strings
        // that live as long as the returned guard; EAL may permute the
        // pointer array, which we own.
        let ret = unsafe { dpdk_sys::rte_eal_init(argv.len() as i32, argv.as_mut_ptr()) };
        if ret < 0 {
            return Err(DpdkError::from_errno("EAL init (rte_eal_init)"));
        }
        Ok(Eal { _args: args, _argv: argv })
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // SAFETY: EAL was initialised by this guard and every lcore has
        // returned (the run loop waits for them before dropping the guard).
        let ret = unsafe { dpdk_sys::rte_eal_cleanup() };
        if ret < 0 {
            log::warn!("rte_eal_cleanup: {}", super::strerror(-ret));
        }
    }
}
