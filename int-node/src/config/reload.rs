//! What a reload may change: `pipelines[].source.watchlist`,
//! `pipelines[].sink.latency` and `export.rate_limit`. Everything else
//! (ports, pipelines, lcores, roles, tables, the domain) needs a restart:
//! the old and the new YAML are compared as documents with those keys
//! taken out, so comments, spacing and key order do not count.

use serde_yaml_ng::{Mapping, Value};

/// At most this many differing paths are named.
const MAX_NAMED: usize = 5;

/// The paths where `new` differs from `old` beyond what a reload may
/// change; empty if a reload can apply it. Unreadable YAML is the
/// validator's business: it reads as no difference here.
pub fn restart_needed(old: &str, new: &str) -> Vec<String> {
    let (Ok(mut old), Ok(mut new)) =
        (serde_yaml_ng::from_str::<Value>(old), serde_yaml_ng::from_str::<Value>(new))
    else {
        return Vec::new();
    };
    for document in [&mut old, &mut new] {
        strip_reloadable(document);
    }
    let mut paths = Vec::new();
    differences(&old, &new, String::new(), &mut paths);
    paths
}

fn strip_reloadable(document: &mut Value) {
    if let Some(pipelines) = document.get_mut("pipelines").and_then(Value::as_sequence_mut) {
        for pipeline in pipelines {
            remove(pipeline.get_mut("source"), "watchlist");
            remove(pipeline.get_mut("sink"), "latency");
        }
    }
    remove(document.get_mut("export"), "rate_limit");
}

fn remove(section: Option<&mut Value>, key: &str) {
    if let Some(mapping) = section.and_then(Value::as_mapping_mut) {
        mapping.remove(key);
        // An emptied section and an absent one mean the same: defaults.
    }
}

fn differences(old: &Value, new: &Value, path: String, paths: &mut Vec<String>) {
    if paths.len() >= MAX_NAMED || old == new {
        return;
    }
    match (old, new) {
        (Value::Mapping(a), Value::Mapping(b)) => {
            for key in keys(a, b) {
                let name = key.as_str().map_or_else(|| format!("{key:?}"), str::to_string);
                let child = if path.is_empty() { name } else { format!("{path}.{name}") };
                differences(
                    a.get(&key).unwrap_or(&Value::Null),
                    b.get(&key).unwrap_or(&Value::Null),
                    child,
                    paths,
                );
            }
        }
        (Value::Sequence(a), Value::Sequence(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, format!("{path}[{i}]"), paths);
            }
        }
        _ => paths.push(if path.is_empty() { "(document)".to_string() } else { path }),
    }
}

/// Both mappings' keys, the old one's order first.
fn keys(a: &Mapping, b: &Mapping) -> Vec<Value> {
    let mut keys: Vec<Value> = a.keys().cloned().collect();
    keys.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "
node_id: 10.0.0.1
pipelines:
  - name: src
    role: source
    lcore: 1
    source: {watchlist: [{dst: 10.0.0.0/8}], flows: {capacity: 1024}}
  - name: snk
    role: sink
    lcore: 1
    sink: {latency: {mode: buckets}}
export: {collector: '127.0.0.1:32766', rate_limit: 100}
";

    #[test]
    fn watchlists_latency_and_rate_limit_reload_the_rest_needs_a_restart() {
        let reloadable = OLD
            .replace("{dst: 10.0.0.0/8}", "{dst: 192.168.0.0/16}, {protocol: udp}")
            .replace("{mode: buckets}", "{mode: absolute, threshold_ns: 1000}")
            .replace("rate_limit: 100", "rate_limit: 0");
        assert_eq!(restart_needed(OLD, &reloadable), Vec::<String>::new());
        assert_eq!(restart_needed(OLD, &format!("# a comment\n{OLD}")), Vec::<String>::new());
        let restart = OLD
            .replace("capacity: 1024", "capacity: 2048")
            .replace("lcore: 1\n    sink", "lcore: 2\n    sink");
        assert_eq!(
            restart_needed(OLD, &restart),
            vec!["pipelines[0].source.flows.capacity", "pipelines[1].lcore"]
        );
        let fewer = OLD.split("  - name: snk").next().unwrap().to_string();
        assert_eq!(restart_needed(OLD, &fewer), vec!["pipelines", "export"]);
    }
}
