//! What a run leaves: the final counters, printed and as JSON.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::error::RunError;
use crate::pipeline::export::ExportStats;
use crate::ports::NamedPortStats;
use crate::stats::{Counter, SharedCounters};

pub struct Summary {
    pub elapsed: f64,
    pub pipelines: Vec<(String, Arc<SharedCounters>)>,
    pub ports: Vec<NamedPortStats>,
    pub export: Option<ExportStats>,
    /// Mbufs in all pools, those not back at exit, those freed from RX
    /// queues at exit.
    pub pool_size: u32,
    pub in_use: u32,
    pub drained: usize,
}

impl Summary {
    pub fn print(&self) {
        println!("== int-node final counters ({:.2} s) ==", self.elapsed);
        for (name, counters) in &self.pipelines {
            let values: Vec<String> = counters.snapshot().iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("pipeline {name}: {}", values.join(" "));
        }
        for (name, counters) in &self.pipelines {
            if let Some(hint) = skew_hint(name, counters) {
                log::warn!("{hint}");
            }
        }
        for (name, s, _) in &self.ports {
            println!(
                "port {name}: rx {} tx {} missed {} rx_errors {} tx_errors {} rx_nombuf {}",
                s.rx_packets, s.tx_packets, s.rx_missed, s.rx_errors, s.tx_errors, s.rx_nombuf
            );
        }
        if let Some(export) = &self.export {
            println!("export: sent {} errors {}", export.reports_sent, export.send_errors);
        }
        println!(
            "mempool: {} of {} mbufs in use at exit ({} packets read off the RX queues at stop and freed)",
            self.in_use, self.pool_size, self.drained
        );
        println!("heap allocations on the packet path: {}", int_os::alloc::packet_path_allocations());
        if self.in_use != 0 {
            log::warn!("{} mbufs not returned to the pool", self.in_use);
        }
    }

    pub fn to_json(&self) -> Value {
        let pipelines: Map<String, Value> = self
            .pipelines
            .iter()
            .map(|(name, c)| {
                let map: Map<String, Value> =
                    Counter::ALL.iter().map(|k| (k.name().to_string(), Value::from(c.get(*k)))).collect();
                (name.clone(), Value::Object(map))
            })
            .collect();
        let ports: Map<String, Value> = self
            .ports
            .iter()
            .map(|(name, stats, xstats)| {
                let mut value = serde_json::to_value(stats).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    let x: Map<String, Value> =
                        xstats.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
                    object.insert("xstats".into(), Value::Object(x));
                }
                (name.clone(), value)
            })
            .collect();
        let now = std::time::SystemTime::now();
        let started = now - std::time::Duration::from_secs_f64(self.elapsed);
        let (time, time_ns) = stamp(now);
        let (started, started_ns) = stamp(started);
        json!({
            "time": time, "time_ns": time_ns, "started": started, "started_ns": started_ns,
            "elapsed_s": self.elapsed,
            "pipelines": pipelines,
            "ports": ports,
            "export": self.export.map(|e| serde_json::to_value(e).unwrap_or_default()),
            "mempool": { "size": self.pool_size, "in_use_at_exit": self.in_use, "drained_at_exit": self.drained },
            "packet_path_allocations": int_os::alloc::packet_path_allocations(),
        })
    }

    pub fn write_json(&self, path: &Path) -> Result<(), RunError> {
        let text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        std::fs::write(path, text)
            .map_err(|source| RunError::Write { path: path.display().to_string(), source })
    }
}

/// What a sink's `clock_skew` means, where it counted any: a run whose
/// latencies all came out negative reports no latency at all, and the
/// counter alone does not say why (an INT 0.5 capture replayed more than
/// 2.1 s after its source ran is the usual cause).
fn skew_hint(name: &str, counters: &SharedCounters) -> Option<String> {
    let skewed = counters.get(Counter::clock_skew);
    if skewed == 0 {
        return None;
    }
    let largest_ms = counters.get(Counter::clock_skew_max_ns) as f64 / 1e6;
    let measured = if counters.get(Counter::latency_max_ns) == 0 {
        "and no latency was measured, so none was reported"
    } else {
        "and those were not reported"
    };
    Some(format!(
        "pipeline {name}: {skewed} packets' one-way latency came out negative (clock_skew, the largest {largest_ms:.3} ms), {measured}: \
         the sink's clock is behind the source's, or the packets reached the sink 2.1 s or more after their source stamped them \
         (INT 0.5's timestamps are the low 32 bits of ns and wrap every 4.29 s, so a capture replayed that late reads as skew); \
         run the sink within 2 s of the source, or clock it by the packets' capture times (clock: rx-timestamp)"
    ))
}

/// A time as RFC 3339 (UTC, to the ns) and as ns since the epoch, as the
/// tools print times (docs/output.md).
fn stamp(time: std::time::SystemTime) -> (String, u64) {
    let ns = time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let text = time::OffsetDateTime::from_unix_timestamp_nanos(ns as i128)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default();
    (text, u64::try_from(ns).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_is_explained_only_where_it_was_counted() {
        let counters = SharedCounters::default();
        assert_eq!(skew_hint("sink", &counters), None);
        let mut local = crate::stats::Counters::default();
        local.add(Counter::clock_skew, 2000);
        local.raise(Counter::clock_skew_max_ns, 1_294_967_296);
        local.publish(&counters);
        let hint = skew_hint("sink", &counters).unwrap_or_default();
        assert!(hint.starts_with("pipeline sink: 2000 packets' one-way latency came out negative"), "{hint}");
        assert!(hint.contains("the largest 1294.967 ms), and no latency was measured"), "{hint}");
        assert!(hint.contains("clock: rx-timestamp"), "{hint}");
    }
}
