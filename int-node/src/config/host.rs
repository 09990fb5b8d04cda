//! What only the host can tell about a config: whether the CPUs its lcores
//! run on exist here. `check --for-another-host` leaves this (and the input
//! files) out, for a config written on one host for another.

use super::eal;
use super::problems::Problems;

/// The `eal` list of a config's text, read on its own so that it is judged
/// even when the rest of the file has problems.
pub fn eal_of(text: &str) -> Vec<String> {
    // The same bound as the whole file's parse: no deep nesting parsed.
    if super::nesting::nesting(text) > super::nesting::MAX_NESTING {
        return Vec::new();
    }
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap_or_default();
    let items = value.get("eal").and_then(|eal| eal.as_sequence()).cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| match item {
            serde_yaml_ng::Value::String(s) => Some(s.clone()),
            serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

/// Refuses lcores on CPUs this host lacks: EAL would print its whole usage
/// text instead of saying which.
pub fn check_cpus(eal_args: &[String], problems: &mut Problems) {
    let (Some(wanted), Some(online)) = (eal::cpus(eal_args), int_os::cpus::online()) else { return };
    let missing: std::collections::BTreeSet<u32> = wanted.difference(&online).copied().collect();
    if missing.is_empty() {
        return;
    }
    let lcores = eal::lcores(eal_args).map_or_else(String::new, |l| format!(" ({})", l.given_by));
    problems.add(
        "eal",
        format!(
            "the lcores{lcores} need CPU(s) {} this host lacks: it has CPU(s) {}",
            int_os::cpus::list(&missing),
            int_os::cpus::list(&online)
        ),
        format!(
            "put the lcores on this host's CPUs (e.g. -l {}) and the pipelines on them, or check with --for-another-host",
            int_os::cpus::list(&online)
        ),
    );
}
