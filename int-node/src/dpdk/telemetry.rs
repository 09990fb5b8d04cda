//! DPDK telemetry: int-node's commands on EAL's telemetry socket (started
//! by EAL unless `--no-telemetry`), for `dpdk-telemetry.py` or any client
//! of it. `/int_node/pipelines` lists the pipelines; `/int_node/pipeline,NAME`
//! gives every counter of one, by the names `--stats-json` uses;
//! `/int_node/flows,NAME` its flow table (capacity, flows live, created,
//! expired, evicted, refused); `/int_node/top_flows,NAME` its flows with
//! the most packets and `/int_node/top_flows,NAME,latency` those with the
//! highest latency; `/int_node/exporter` the report exporter's counts. The
//! ports are DPDK's own `/ethdev/stats,PORT`.
//!
//! The handlers run on EAL's telemetry thread and read the counters the
//! workers publish (relaxed atomics): nothing on the packet path waits.
//! Each counter is read on its own, so an answer is no snapshot: two
//! counters of a running pipeline may be a burst or so apart.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::{Arc, OnceLock};

use super::DpdkError;
use crate::pipeline::export::SharedExportStats;
use crate::pipeline::top_flows::{SharedTopFlows, TopFlow};
use crate::stats::{Counter, SharedCounters};

/// What the commands answer for, set once at start.
pub struct Sources {
    pub pipelines: Vec<(String, Arc<SharedCounters>)>,
    /// Each pipeline's flow table capacity, where it keeps one.
    pub flow_capacity: Vec<Option<u32>>,
    /// Each pipeline's top flows, as its worker publishes them.
    pub top_flows: Vec<Arc<SharedTopFlows>>,
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
    ); 5] = [
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
        (
            c"/int_node/top_flows",
            top_flows,
            c"Returns a pipeline's top flows by packets, or by latency. Parameters: name[,latency]",
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
    // SAFETY: `params` is the parameter string of the current call.
    find_pipeline(unsafe { parameters(params) })
}

fn find_pipeline(name: &str) -> Option<(usize, &'static Arc<SharedCounters>)> {
    pipelines().iter().enumerate().find(|(_, (pipeline, _))| pipeline == name).map(|(i, (_, c))| (i, c))
}

/// A command's parameter string ("" when there is none).
///
/// # Safety
/// `params` is null or the NUL-terminated parameter string the telemetry
/// library passed to the current call, which outlives `'a`.
unsafe fn parameters<'a>(params: *const c_char) -> &'a str {
    if params.is_null() {
        return "";
    }
    // SAFETY: as the caller promises.
    unsafe { CStr::from_ptr(params) }.to_str().unwrap_or("")
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

/// `/int_node/top_flows,NAME[,latency]`: the pipeline's ranked flows of
/// its flow table's last complete sweep pass, as a dict of columns (row i
/// of each is the i-th flow): `flow`, `packets` (the packets its source
/// numbered), `latency_ns` (at a sink; 0 for a flow with none reported yet)
/// and `source_node`, with `order`, `flows` (flows the pass visited),
/// `pass` (its number: a pass two past the one published when something
/// happened began after it) and `age_ms` (since the pass ended). Refused (-EINVAL) for an unknown
/// pipeline, one without a flow table, or an unknown order.
unsafe extern "C" fn top_flows(
    _command: *const c_char,
    params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    // SAFETY: `params` is the parameter string of this call.
    let params = unsafe { parameters(params) };
    let (name, order) = params.split_once(',').unwrap_or((params, "packets"));
    let by_latency = match order {
        "packets" => false,
        "latency" => true,
        _ => return -libc::EINVAL,
    };
    let Some((index, _)) = find_pipeline(name) else { return -libc::EINVAL };
    let Some(sources) = SOURCES.get() else { return -libc::EINVAL };
    if sources.flow_capacity.get(index).copied().flatten().is_none() {
        return -libc::EINVAL;
    }
    let Some(snapshot) = sources.top_flows.get(index).and_then(|top| top.snapshot()) else {
        return -libc::EBUSY;
    };
    let ranked = if by_latency { &snapshot.by_latency } else { &snapshot.by_packets };
    // SAFETY: `data` is the telemetry library's output for this call.
    unsafe { columns(data, ranked) };
    let order = if by_latency { c"latency" } else { c"packets" };
    // SAFETY: the dict was started by `columns`; the strings are copied.
    unsafe {
        dpdk_sys::rte_tel_data_add_dict_string(data, c"order".as_ptr(), order.as_ptr());
        dpdk_sys::rte_tel_data_add_dict_u64(data, c"flows".as_ptr(), snapshot.flows);
        dpdk_sys::rte_tel_data_add_dict_u64(data, c"pass".as_ptr(), snapshot.pass);
        if let Some(age) = snapshot.age_ms {
            dpdk_sys::rte_tel_data_add_dict_u64(data, c"age_ms".as_ptr(), age);
        }
    }
    0
}

/// A column of numbers of `/int_node/top_flows`: its name, and a flow's
/// value.
type NumberColumn = (&'static CStr, fn(&TopFlow) -> u64);

/// Starts `data` as a dict and adds the ranked flows' columns.
///
/// # Safety
/// `data` must be the telemetry library's output of the current call.
unsafe fn columns(data: *mut dpdk_sys::rte_tel_data, ranked: &[TopFlow]) {
    // SAFETY: as the caller promises.
    unsafe { dpdk_sys::rte_tel_data_start_dict(data) };
    let names: Vec<CString> = ranked.iter().filter_map(|f| CString::new(f.key.to_string()).ok()).collect();
    // SAFETY: each column is a new container handed to the dict, which
    // frees it (keep = 0); the strings are copied.
    unsafe {
        let Some(flow) = array(dpdk_sys::rte_tel_value_type_RTE_TEL_STRING_VAL) else { return };
        for name in &names {
            dpdk_sys::rte_tel_data_add_array_string(flow, name.as_ptr());
        }
        dpdk_sys::rte_tel_data_add_dict_container(data, c"flow".as_ptr(), flow, 0);
        let u64_columns: [NumberColumn; 3] = [
            (c"packets", |f| u64::from(f.packets)),
            (c"latency_ns", |f| f.latency_ns.unwrap_or(0)),
            (c"source_node", |f| u64::from(f.source_node)),
        ];
        for (column, value) in u64_columns {
            let Some(values) = array(dpdk_sys::rte_tel_value_type_RTE_TEL_U64_VAL) else { return };
            for flow in ranked {
                dpdk_sys::rte_tel_data_add_array_u64(values, value(flow));
            }
            dpdk_sys::rte_tel_data_add_dict_container(data, column.as_ptr(), values, 0);
        }
    }
}

/// A new telemetry array of `kind`, for a container.
///
/// # Safety
/// The caller hands it to a dict or array (which frees it) or frees it.
unsafe fn array(kind: dpdk_sys::rte_tel_value_type) -> Option<*mut dpdk_sys::rte_tel_data> {
    // SAFETY: allocation by the telemetry library; null on failure.
    let array = unsafe { dpdk_sys::rte_tel_data_alloc() };
    if array.is_null() {
        return None;
    }
    // SAFETY: `array` was just allocated.
    unsafe { dpdk_sys::rte_tel_data_start_array(array, kind) };
    Some(array)
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
