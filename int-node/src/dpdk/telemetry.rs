//! Commands on EAL's telemetry socket, answered by safe Rust functions: a
//! command's function gets the parameter string and returns plain data,
//! which this layer writes into the telemetry library's containers. The
//! library's callback names no user data, so one callback serves every
//! command and finds the function by the command's name.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::OnceLock;

use super::DpdkError;

/// A value in an answer's dict.
pub enum Value {
    Number(u64),
    Text(String),
    /// A column of numbers (a container in the dict).
    Numbers(Vec<u64>),
    /// A column of strings.
    Texts(Vec<String>),
}

/// A command's answer.
pub enum Answer {
    /// An array of strings.
    Names(Vec<String>),
    Dict(Vec<(&'static str, Value)>),
}

/// Why a command gives no answer, as DPDK's own commands say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A parameter names nothing there is (-EINVAL).
    Invalid,
    /// Not yet: ask again (-EBUSY).
    Busy,
}

/// One command: its name (`/app/what`), its help text and its function.
#[derive(Clone, Copy)]
pub struct Command {
    pub name: &'static CStr,
    pub help: &'static CStr,
    pub answer: fn(&str) -> Result<Answer, Refusal>,
}

static COMMANDS: OnceLock<&'static [Command]> = OnceLock::new();

/// Registers `commands` with the telemetry library (once per process: a
/// second call keeps the first commands' functions).
pub fn register(commands: &'static [Command]) -> Result<(), DpdkError> {
    let _ = COMMANDS.set(commands);
    for command in commands {
        // SAFETY: the strings are static and NUL-terminated; the callback
        // has the library's signature and lives as long as the process.
        let ret = unsafe {
            dpdk_sys::rte_telemetry_register_cmd(command.name.as_ptr(), Some(dispatch), command.help.as_ptr())
        };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("registering {}", command.name.to_string_lossy()), ret));
        }
    }
    Ok(())
}

/// The callback of every command: finds its function by name, writes its
/// answer.
unsafe extern "C" fn dispatch(
    command: *const c_char,
    params: *const c_char,
    data: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    // SAFETY: both are null or the NUL-terminated strings of this call.
    let (command, params) = unsafe { (text(command), text(params)) };
    let found = COMMANDS.get().and_then(|list| list.iter().find(|c| c.name.to_str() == Ok(command)));
    let Some(found) = found else { return -libc::EINVAL };
    match (found.answer)(params) {
        // SAFETY: `data` is the telemetry library's output for this call.
        Ok(answer) => unsafe { write(data, &answer) },
        Err(Refusal::Invalid) => -libc::EINVAL,
        Err(Refusal::Busy) => -libc::EBUSY,
    }
}

/// A string of the current call ("" when null or not UTF-8).
///
/// # Safety
/// `text` is null or NUL-terminated and outlives `'a`.
unsafe fn text<'a>(text: *const c_char) -> &'a str {
    if text.is_null() {
        return "";
    }
    // SAFETY: as the caller promises.
    unsafe { CStr::from_ptr(text) }.to_str().unwrap_or("")
}

/// Writes `answer` into `data`; 0, or -ENOMEM if a container could not be
/// had.
///
/// # Safety
/// `data` must be the telemetry library's output of the current call.
unsafe fn write(data: *mut dpdk_sys::rte_tel_data, answer: &Answer) -> c_int {
    match answer {
        Answer::Names(names) => {
            // SAFETY: as the caller promises; the strings are copied.
            unsafe {
                dpdk_sys::rte_tel_data_start_array(data, dpdk_sys::rte_tel_value_type_RTE_TEL_STRING_VAL);
                for name in names.iter().filter_map(|n| CString::new(n.as_str()).ok()) {
                    dpdk_sys::rte_tel_data_add_array_string(data, name.as_ptr());
                }
            }
            0
        }
        Answer::Dict(entries) => {
            // SAFETY: as the caller promises.
            unsafe { dpdk_sys::rte_tel_data_start_dict(data) };
            for (key, value) in entries {
                let Ok(key) = CString::new(*key) else { continue };
                // SAFETY: the dict was started above.
                if unsafe { add(data, &key, value) }.is_none() {
                    return -libc::ENOMEM;
                }
            }
            0
        }
    }
}

/// Adds one entry to a started dict.
///
/// # Safety
/// `dict` is a dict the telemetry library started for the current call.
unsafe fn add(dict: *mut dpdk_sys::rte_tel_data, key: &CStr, value: &Value) -> Option<()> {
    // SAFETY: as the caller promises; strings are copied, and a column is
    // a new container handed to the dict, which frees it (keep = 0).
    unsafe {
        match value {
            Value::Number(n) => {
                dpdk_sys::rte_tel_data_add_dict_u64(dict, key.as_ptr(), *n);
            }
            Value::Text(t) => {
                let t = CString::new(t.as_str()).ok()?;
                dpdk_sys::rte_tel_data_add_dict_string(dict, key.as_ptr(), t.as_ptr());
            }
            Value::Numbers(column) => {
                let array = array(dpdk_sys::rte_tel_value_type_RTE_TEL_U64_VAL)?;
                for n in column {
                    dpdk_sys::rte_tel_data_add_array_u64(array, *n);
                }
                dpdk_sys::rte_tel_data_add_dict_container(dict, key.as_ptr(), array, 0);
            }
            Value::Texts(column) => {
                let array = array(dpdk_sys::rte_tel_value_type_RTE_TEL_STRING_VAL)?;
                for t in column.iter().filter_map(|t| CString::new(t.as_str()).ok()) {
                    dpdk_sys::rte_tel_data_add_array_string(array, t.as_ptr());
                }
                dpdk_sys::rte_tel_data_add_dict_container(dict, key.as_ptr(), array, 0);
            }
        }
    }
    Some(())
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
