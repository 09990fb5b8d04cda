//! DPDK telemetry: int-node's commands on EAL's telemetry socket (started
//! by EAL unless `--no-telemetry`), for `dpdk-telemetry.py` or any client
//! of it. `/int_node/pipelines` lists the pipelines; `/int_node/pipeline,NAME`
//! gives every counter of one, by the names `--stats-json` uses;
//! `/int_node/flows,NAME` its flow table (capacity, flows live, created,
//! expired, evicted, refused); `/int_node/exporter` the report exporter's
//! counts. The ports are DPDK's own `/ethdev/stats,PORT`.
//!
//! The handlers run on EAL's telemetry thread and read the counters the
//! workers publish (relaxed atomics): nothing on the packet path waits.
//! Each counter is read on its own, so an answer is no snapshot: two
//! counters of a running pipeline may be a burst or so apart.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::{Arc, OnceLock};

use super::DpdkError;
use crate::pipeline::export::SharedExportStats;
use crate::stats::{Counter, SharedCounters};

/// What the commands answer for, set once at start.
pub struct Sources {
    pub pipelines: Vec<(String, Arc<SharedCounters>)>,
    /// Each pipeline's flow table capacity, where it keeps one.
    pub flow_capacity: Vec<Option<u32>>,
    pub exporter: Option<Arc<SharedExportStats>>,
}

static SOURCES: OnceLock<Sources> = OnceLock::new();

/// The pipelines, as set at start.
fn pipelines() -> &'static [(String, Arc<SharedCounters>)] {
    SOURCES.get().map_or(&[][..], |s| s.pipelines.as_slice())
}

/// Registers the commands (once per process: a second call keeps the
/// first sources).
pub fn register(sources: Sources) -> Result<(), DpdkError> {
    let _ = SOURCES.set(sources);
    let commands: [(
        &CStr,
        unsafe extern "C" fn(*const c_char, *const c_char, *mut dpdk_sys::rte_tel_data) -> c_int,
        &CStr,
    ); 4] = [
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
        (
            c"/int_node/flows",
            pipeline_flows,
            c"Returns a pipeline's flow table: capacity, live, created, expired, evicted, refused. Parameter: the pipeline's name",
        ),
        (c"/int_node/exporter", exporter_counts, c"Returns the report exporter's counts. Takes no parameters"),
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
    for (name, _) in pipelines() {
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
    let Some((_, counters)) = named_pipeline(params) else { return -libc::EINVAL };
    let values: Vec<(&str, u64)> = Counter::ALL.iter().map(|c| (c.name(), counters.get(*c))).collect();
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { dict(data, &values) };
    0
}

/// The pipeline a command's parameter names.
fn named_pipeline(params: *const c_char) -> Option<(usize, &'static Arc<SharedCounters>)> {
    let name = if params.is_null() {
        ""
    } else {
        // SAFETY: a non-null `params` is the NUL-terminated parameter
        // string the telemetry library read from the client.
        unsafe { CStr::from_ptr(params) }.to_str().unwrap_or("")
    };
    pipelines().iter().enumerate().find(|(_, (pipeline, _))| pipeline == name).map(|(i, (_, c))| (i, c))
}

/// Writes `values` into `data` as a dict of u64.
///
/// # Safety
/// `data` must be the telemetry library's output of the current call.
unsafe fn dict(data: *mut dpdk_sys::rte_tel_data, values: &[(&str, u64)]) {
    // SAFETY: as the caller promises.
    unsafe { dpdk_sys::rte_tel_data_start_dict(data) };
    for (name, value) in values {
        let Ok(key) = CString::new(*name) else { continue };
        // SAFETY: the dict was started above; the key is copied.
        unsafe { dpdk_sys::rte_tel_data_add_dict_u64(data, key.as_ptr(), *value) };
    }
}

/// `/int_node/flows,NAME`: the pipeline's flow table, from its counters
/// (the table itself is the worker's alone). Refused (-EINVAL) for an
/// unknown pipeline or one without a flow table.
unsafe extern "C" fn pipeline_flows(
    _command: *const c_char,
    params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    let Some((index, counters)) = named_pipeline(params) else { return -libc::EINVAL };
    let capacity = SOURCES.get().and_then(|s| s.flow_capacity.get(index).copied().flatten());
    let Some(capacity) = capacity else { return -libc::EINVAL };
    let get = |c: Counter| counters.get(c);
    let (created, expired, evicted) =
        (get(Counter::flows_created), get(Counter::flows_expired), get(Counter::flows_evicted));
    let values = [
        ("capacity", u64::from(capacity)),
        ("live", created.saturating_sub(expired + evicted)),
        ("created", created),
        ("expired", expired),
        ("evicted", evicted),
        ("refused", get(Counter::flow_table_full)),
    ];
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { dict(data, &values) };
    0
}

/// `/int_node/exporter`: reports sent, send errors, whether UDP GSO is on;
/// refused (-EINVAL) on a node without an exporter.
unsafe extern "C" fn exporter_counts(
    _command: *const c_char,
    _params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(stats) = SOURCES.get().and_then(|s| s.exporter.as_ref()) else { return -libc::EINVAL };
    let values = [
        ("reports_sent", stats.reports_sent.load(Relaxed)),
        ("send_errors", stats.send_errors.load(Relaxed)),
        ("gso", u64::from(stats.gso.load(Relaxed))),
    ];
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { dict(data, &values) };
    0
}
