//! What a reload may change ([`RELOADABLE`], the one list: the log and the
//! docs name it from here). Everything else (ports, pipelines, lcores,
//! roles, tables, the domain) needs a restart: the running and the new
//! configuration are compared as parsed, with the reloadable fields masked,
//! so comments, spacing, key order and a default spelled out do not count.

use super::model::{Config, PipelineConfig, ReportSettings, Source05Settings, Source21Settings, StageConfig};
use super::SinkSettings;

/// The settings a reload changes in a running node.
pub const RELOADABLE: [&str; 5] = [
    "pipelines[].source.watchlist",
    "pipelines[].sink.latency",
    "pipelines[].sink.path_changes",
    "pipelines[].sink.hops",
    "export.rate_limit",
];

/// At most this many differing settings are named.
const MAX_NAMED: usize = 5;

/// The settings where `new` differs from `running` beyond what a reload may
/// change; empty if a reload can apply it.
pub fn restart_needed(running: &Config, new: &Config) -> Vec<String> {
    let (old, new) = (masked(running), masked(new));
    let mut changes = Changes::default();
    let Config {
        node_id,
        node_name,
        eal,
        mbufs,
        mempool_cache,
        ports,
        pipelines,
        export,
        stats_interval_ms,
        metrics,
        captures,
        idle_sleep_us,
    } = &old;
    changes.note("node_id", node_id, &new.node_id);
    changes.note("node_name", node_name, &new.node_name);
    changes.note("eal", eal, &new.eal);
    changes.note("mempool.mbufs", mbufs, &new.mbufs);
    changes.note("mempool.cache", mempool_cache, &new.mempool_cache);
    changes.each("ports", ports, &new.ports, |changes, path, a, b| changes.note(path, a, b));
    changes.each("pipelines", pipelines, &new.pipelines, pipeline);
    changes.note("export", export, &new.export);
    changes.note("stats.interval_ms", stats_interval_ms, &new.stats_interval_ms);
    changes.note("stats.metrics", metrics, &new.metrics);
    changes.note("capture", captures, &new.captures);
    changes.note("idle_sleep_us", idle_sleep_us, &new.idle_sleep_us);
    changes.paths
}

/// `config` with every [`RELOADABLE`] setting at a fixed value.
fn masked(config: &Config) -> Config {
    let mut config = config.clone();
    for pipeline in &mut config.pipelines {
        match &mut pipeline.stage {
            StageConfig::Source05(settings) => settings.watchlist.clear(),
            StageConfig::Source21(settings) => settings.watchlist.clear(),
            StageConfig::IfaSource(settings) => settings.watchlist.clear(),
            StageConfig::Sink(settings) => settings.reports = ReportSettings::default(),
            _ => {}
        }
    }
    if let Some(export) = &mut config.export {
        export.rate_limit = 0;
    }
    config
}

#[derive(Default)]
struct Changes {
    paths: Vec<String>,
}

impl Changes {
    fn note<T: PartialEq>(&mut self, path: &str, old: &T, new: &T) {
        if old != new && self.paths.len() < MAX_NAMED {
            self.paths.push(path.to_string());
        }
    }

    /// A list compared item by item; a list of another length differs as
    /// a whole.
    fn each<T: PartialEq>(&mut self, path: &str, old: &[T], new: &[T], item: fn(&mut Changes, &str, &T, &T)) {
        if old.len() != new.len() {
            return self.note(path, &old.len(), &new.len());
        }
        for (i, (a, b)) in old.iter().zip(new).enumerate() {
            if a != b {
                item(self, &format!("{path}[{i}]"), a, b);
            }
        }
    }
}

fn pipeline(changes: &mut Changes, path: &str, old: &PipelineConfig, new: &PipelineConfig) {
    let PipelineConfig { name, lcore, rx, tx, domain, clock, stage } = old;
    changes.note(&format!("{path}.name"), name, &new.name);
    changes.note(&format!("{path}.lcore"), lcore, &new.lcore);
    changes.note(&format!("{path}.rx"), rx, &new.rx);
    changes.note(&format!("{path}.tx"), tx, &new.tx);
    changes.note(&format!("{path}.int"), domain, &new.domain);
    changes.note(&format!("{path}.clock"), clock, &new.clock);
    match (stage, &new.stage) {
        (StageConfig::Source05(a), StageConfig::Source05(b)) => {
            source(changes, &format!("{path}.source"), a, b)
        }
        (StageConfig::Source21(a), StageConfig::Source21(b)) => {
            source21(changes, &format!("{path}.source"), a, b)
        }
        (StageConfig::Sink(a), StageConfig::Sink(b)) => sink(changes, &format!("{path}.sink"), a, b),
        (a, b) if a.role() != b.role() => changes.note(&format!("{path}.role"), &a.role(), &b.role()),
        (a, b) => changes.note(&format!("{path}.{}", a.role()), a, b),
    }
}

/// Names each field of `$old` that differs in `$new`; every field must be
/// listed (the pattern is exhaustive), so a new one is never left out.
macro_rules! fields {
    ($changes:expr, $path:expr, $ty:ident, $old:expr, $new:expr, [$($field:ident),* $(,)?]) => {{
        let $ty { $($field),* } = $old;
        $($changes.note(&format!("{}.{}", $path, stringify!($field)), $field, &$new.$field);)*
    }};
}

fn source(changes: &mut Changes, path: &str, old: &Source05Settings, new: &Source05Settings) {
    fields!(
        changes,
        path,
        Source05Settings,
        old,
        new,
        [
            shim_type,
            instructions,
            max_hop_count,
            own_hop,
            watchlist,
            flow_capacity,
            idle_timeout_ms,
            marked,
            tail,
        ]
    );
}

fn source21(changes: &mut Changes, path: &str, old: &Source21Settings, new: &Source21Settings) {
    fields!(
        changes,
        path,
        Source21Settings,
        old,
        new,
        [
            mode,
            instructions,
            max_hops,
            own_hop,
            watchlist,
            marked,
            flow_capacity,
            idle_timeout_ms,
            discard,
            tunnels,
            clone_every,
            clone_mbufs,
        ]
    );
}

fn sink(changes: &mut Changes, path: &str, old: &SinkSettings, new: &SinkSettings) {
    fields!(
        changes,
        path,
        SinkSettings,
        old,
        new,
        [
            reports,
            loss_timeout_ms,
            sweep_ms,
            flow_capacity,
            idle_timeout_ms,
            malformed,
            max_flow_pps,
            max_report_delay_ms
        ]
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "
node_id: 10.0.0.1
ports:
  - {name: p0, device: 'net_null0', rx_queues: 2, tx_queues: 2}
pipelines:
  - name: src
    role: source
    lcore: 1
    rx: {port: p0}
    tx: {port: p0}
    source: {watchlist: [{dst: 10.0.0.0/8}], flows: {capacity: 1024}}
  - name: snk
    role: sink
    lcore: 1
    rx: {port: p0, queue: 1}
    tx: {port: p0, queue: 1}
    sink: {latency: {mode: buckets}}
export: {collector: '127.0.0.1:32766', rate_limit: 100}
";

    fn restart(old: &str, new: &str) -> Vec<String> {
        let parse = |text: &str| super::super::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        restart_needed(&parse(old), &parse(new))
    }

    #[test]
    fn watchlists_latency_and_rate_limit_reload_the_rest_needs_a_restart() {
        let reloadable = OLD
            .replace("{dst: 10.0.0.0/8}", "{dst: 192.168.0.0/16}, {protocol: udp}")
            .replace("{mode: buckets}", "{mode: absolute, threshold_ns: 1000}")
            .replace("rate_limit: 100", "rate_limit: 0");
        assert_eq!(restart(OLD, &reloadable), Vec::<String>::new());
        assert_eq!(restart(OLD, &format!("# a comment\n{OLD}")), Vec::<String>::new());
        let spelled_out =
            OLD.replace("flows: {capacity: 1024}", "flows: {capacity: 1024, idle_timeout_ms: 120000}");
        assert_eq!(restart(OLD, &spelled_out), Vec::<String>::new(), "a default spelled out is no change");
        let changed = OLD
            .replace("capacity: 1024", "capacity: 2048")
            .replace("lcore: 1\n    rx: {port: p0, queue", "lcore: 2\n    rx: {port: p0, queue");
        assert_eq!(restart(OLD, &changed), vec!["pipelines[0].source.flow_capacity", "pipelines[1].lcore"]);
        // Without the sink, its RX queue goes too (a queue nobody polls is
        // refused).
        let fewer = OLD.split("  - name: snk").next().unwrap().replace("rx_queues: 2", "rx_queues: 1");
        assert_eq!(restart(OLD, &fewer), vec!["ports[0]", "pipelines", "export"]);
    }
}
