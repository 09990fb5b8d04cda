//! DPDK telemetry: int-node's commands on EAL's telemetry socket (started
//! by EAL unless `--no-telemetry`), for `dpdk-telemetry.py` or any client
//! of it. `/int_node/pipelines` lists the pipelines; `/int_node/pipeline,NAME`
//! gives every counter of one, by the names `--stats-json` uses.
//!
//! The handlers run on EAL's telemetry thread and read the counters the
//! workers publish (relaxed atomics): nothing on the packet path waits.
//! Each counter is read on its own, so an answer is no snapshot: two
//! counters of a running pipeline may be a burst or so apart.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::{Arc, OnceLock};

use super::DpdkError;
use crate::stats::{Counter, SharedCounters};

/// The pipelines the commands answer for, set once at start.
static PIPELINES: OnceLock<Vec<(String, Arc<SharedCounters>)>> = OnceLock::new();

/// Registers the commands for these pipelines (once per process: a second
/// call keeps the first pipelines).
pub fn register(pipelines: &[(String, Arc<SharedCounters>)]) -> Result<(), DpdkError> {
    let _ = PIPELINES.set(pipelines.to_vec());
    let commands: [(
        &CStr,
        unsafe extern "C" fn(*const c_char, *const c_char, *mut dpdk_sys::rte_tel_data) -> c_int,
        &CStr,
    ); 2] = [
        (
            c"/int_node/pipelines",
            list_pipelines,
            c"Returns the names of int-node's pipelines. Takes no parameters",
        ),
        (
            c"/int_node/pipeline",
            pipeline_counters,
            c"Returns every counter of a pipeline. Parameter: the pipeline's name",
        ),
    ];
    for (command, handler, help) in commands {
        // SAFETY: the strings are static and NUL-terminated; the handler
        // has the callback's signature and lives as long as the process.
        let ret =
            unsafe { dpdk_sys::rte_telemetry_register_cmd(command.as_ptr(), Some(handler), help.as_ptr()) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("registering {}", command.to_string_lossy()), ret));
        }
    }
    Ok(())
}

/// `/int_node/pipelines`: the names, as an array of strings.
unsafe extern "C" fn list_pipelines(
    _command: *const c_char,
    _params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { dpdk_sys::rte_tel_data_start_array(data, dpdk_sys::rte_tel_value_type_RTE_TEL_STRING_VAL) };
    for (name, _) in PIPELINES.get().map_or(&[][..], Vec::as_slice) {
        let Ok(name) = CString::new(name.as_str()) else { continue };
        // SAFETY: the array was started above; the string is copied.
        unsafe { dpdk_sys::rte_tel_data_add_array_string(data, name.as_ptr()) };
    }
    0
}

/// `/int_node/pipeline,NAME`: that pipeline's counters, as a dict; an
/// unknown or missing name is refused (-EINVAL), as DPDK's own commands do.
unsafe extern "C" fn pipeline_counters(
    _command: *const c_char,
    params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    let name = if params.is_null() {
        ""
    } else {
        // SAFETY: a non-null `params` is the NUL-terminated parameter
        // string the telemetry library read from the client.
        unsafe { CStr::from_ptr(params) }.to_str().unwrap_or("")
    };
    let pipelines = PIPELINES.get().map_or(&[][..], Vec::as_slice);
    let Some((_, counters)) = pipelines.iter().find(|(pipeline, _)| pipeline == name) else {
        return -libc::EINVAL;
    };
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { dpdk_sys::rte_tel_data_start_dict(data) };
    for counter in Counter::ALL {
        let Ok(key) = CString::new(counter.name()) else { continue };
        // SAFETY: the dict was started above; the key is copied.
        unsafe { dpdk_sys::rte_tel_data_add_dict_u64(data, key.as_ptr(), counters.get(*counter)) };
    }
    0
}
