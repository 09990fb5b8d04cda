//! The file's keys, grouped by the part of collect they set, each beside
//! the flag it stands for: one table, from which the file is read, its
//! unknown keys are told near misses, and the docs' table is checked.

/// A key of the file (`section.key`, or a top-level key) and the flag's
/// clap id (`CollectArgs`' field).
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub path: &'static str,
    pub id: &'static str,
    /// A file or folder: a relative one is the config file's neighbour.
    pub is_path: bool,
}

const fn value(path: &'static str, id: &'static str) -> Key {
    Key { path, id, is_path: false }
}

const fn file(path: &'static str, id: &'static str) -> Key {
    Key { path, id, is_path: true }
}

pub const KEYS: &[Key] = &[
    value("log", "log"),
    file("names", "names"),
    value("listen.address", "listen"),
    value("listen.sockets", "sockets"),
    value("listen.rcvbuf", "rcvbuf"),
    value("listen.share_port", "share_port"),
    value("listen.receive_batch", "receive_batch"),
    value("listen.gro", "gro"),
    value("listen.ipfix", "listen_ipfix"),
    value("reports.sink_id", "sink_id"),
    value("reports.int21_dscp", "int21_dscp"),
    value("reports.int21_port", "int21_port"),
    value("reports.int21_domain_id", "int21_domain_id"),
    value("reports.ioam_timestamps", "ioam_timestamps"),
    value("reports.ifa_protocol", "ifa_protocol"),
    value("reports.ifa_ipfix_elements", "ifa_ipfix_elements"),
    value("reports.ifa_ipfix_enterprise", "ifa_ipfix_enterprise"),
    value("run.count", "count"),
    value("run.duration_s", "duration"),
    value("stdout.json", "json"),
    value("stdout.quiet", "quiet"),
    value("stdout.summary_interval_s", "interval"),
    value("books.max_flows", "max_flows"),
    value("books.detailed_flows", "detailed_flows"),
    value("books.max_nodes", "max_nodes"),
    value("books.max_links", "max_links"),
    value("join.window_ms", "join_window_ms"),
    value("join.domain_nodes", "domain_nodes"),
    value("join.confirm", "join_confirm"),
    value("congestion.occupancy", "congestion_occupancy"),
    value("congestion.latency_ns", "congestion_latency_ns"),
    value("congestion.node_occupancy", "congestion_node_occupancy"),
    value("congestion.node_latency_ns", "congestion_node_latency_ns"),
    value("congestion.relative", "congestion_relative"),
    value("congestion.exit_ratio", "congestion_exit_ratio"),
    value("congestion.units", "congestion_unit"),
    value("congestion.queues", "congestion_queues"),
    value("congestion.idle_ms", "congestion_idle_ms"),
    value("congestion.victim_rise", "congestion_victim_rise"),
    value("influx.url", "influx"),
    value("influx.db", "influx_db"),
    value("influx.user", "influx_user"),
    file("influx.password_file", "influx_password_file"),
    value("influx.batch", "influx_batch"),
    value("influx.buffer", "influx_buffer"),
    value("nats.publish", "nats"),
    value("nats.format", "nats_format"),
    value("nats.consume", "from_nats"),
    value("nats.consumer", "nats_consumer"),
    value("nats.stream", "nats_stream"),
    value("nats.prefix", "nats_prefix"),
    value("nats.replicas", "nats_replicas"),
    value("nats.max_age_s", "nats_max_age_s"),
    value("nats.max_bytes", "nats_max_bytes"),
    value("nats.buffer", "nats_buffer"),
    value("nats.partitions", "nats_partitions"),
    value("nats.owned", "partitions"),
    value("nats.lease_s", "nats_lease_s"),
    value("nats.view_s", "nats_view_s"),
    value("nats.checkpoint_s", "nats_checkpoint_s"),
    value("nats.fleet_view", "fleet_view"),
    file("nats.credentials", "nats_credentials"),
    file("nats.ca", "nats_ca"),
    value("ipfix.url", "ipfix"),
    value("ipfix.interval_s", "ipfix_interval"),
    value("ipfix.domain", "ipfix_domain"),
    value("ipfix.pen", "ipfix_pen"),
    value("metrics.address", "metrics"),
    value("metrics.flows", "metrics_flows"),
    value("metrics.nodes", "metrics_nodes"),
    value("metrics.links", "metrics_links"),
    value("view.address", "http"),
    value("view.hosts", "http_hosts"),
    value("view.connections", "http_connections"),
    value("view.idle_ms", "http_idle_ms"),
    file("view.token_file", "http_token_file"),
    file("view.users_file", "http_users_file"),
    file("view.tls_cert", "http_tls_cert"),
    file("view.tls_key", "http_tls_key"),
    value("view.sample_ms", "view_sample_ms"),
    value("view.stale_s", "view_stale_s"),
    file("state.dir", "state"),
    value("state.interval_s", "state_interval_s"),
    value("state.max_bytes", "state_max_bytes"),
    value("state.max_age_s", "state_max_age_s"),
    file("plot.file", "plot"),
    value("plot.interval_s", "plot_interval"),
];

/// The keys under `section` ("" for the top level: its own keys and the
/// sections' names), each once.
pub fn names_under(section: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for key in KEYS {
        let name = match key.path.split_once('.') {
            Some((s, name)) if s == section => name,
            Some((s, _)) if section.is_empty() => s,
            None if section.is_empty() => key.path,
            _ => continue,
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The key at `path`, if the file has one there.
pub fn at(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.path == path)
}

/// Whether `name` is a top-level section (a mapping of keys).
pub fn is_section(name: &str) -> bool {
    KEYS.iter().any(|key| key.path.split_once('.').is_some_and(|(s, _)| s == name))
}
