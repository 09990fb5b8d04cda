//! The dashboards and alert rules that ship (deploy/): promtool checks the
//! rules and runs their unit tests; a real Prometheus scraping a real node
//! and a real collect (fed the multi-hop stream, writing to a real influxd
//! and a real nats-server) answers every Grafana query and every rule's
//! query with data, and the real influxd every InfluxDB dashboard's query.
//! A metric, label or tag renamed in the code and not in deploy/ fails here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::collector::{start_collect, switch_reports};
use common::servers::*;
use common::*;
use serde_json::Value;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(path)
}

/// promtool's verdict on the rules and on their unit tests.
#[test]
fn shipped_rules_pass_promtool_and_their_unit_tests() {
    for args in [["check", "rules", "int-node.rules.yml"], ["test", "rules", "int-node.rules.test.yml"]] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(deploy("prometheus"))
            .output()
            .expect("promtool (Debian's prometheus package)");
        let said =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {}: {said}", args.join(" "));
        assert!(said.contains("SUCCESS"), "{said}");
    }
}

/// Every alert's query: its expression up to its last comparison at the
/// top level (`<query> > <threshold>`), which returns data while the
/// alert does not fire.
fn rule_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(deploy("prometheus/int-node.rules.yml")).unwrap();
    let rules: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let mut queries = Vec::new();
    for group in rules["groups"].as_sequence().unwrap() {
        for rule in group["rules"].as_sequence().unwrap() {
            let (name, expr) = (rule["alert"].as_str().unwrap(), rule["expr"].as_str().unwrap());
            queries.push((format!("rule {name}"), query_of(expr)));
        }
    }
    assert_eq!(queries.len(), 15);
    queries
}

fn query_of(expr: &str) -> String {
    let bytes = expr.as_bytes();
    let mut depth = 0i32;
    let mut last = None;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => depth -= 1,
            b'>' | b'<' | b'=' | b'!' if depth == 0 && bytes.get(i.wrapping_sub(1)) == Some(&b' ') => {
                last = Some(i)
            }
            _ => {}
        }
    }
    let at = last.unwrap_or_else(|| panic!("{expr}: no comparison"));
    expr[..at].trim().to_string()
}

/// The dashboards' JSON in `folder`.
fn dashboards(folder: &str) -> Vec<(String, Value)> {
    let mut found: Vec<_> = std::fs::read_dir(deploy(&format!("grafana/{folder}")))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            (name, serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found.len(), 4, "fleet, node, link, flow in {folder}");
    found
}

/// Every panel's queries (field `field` of each target) and every
/// template variable's query, with Grafana's variables given values.
fn dashboard_queries(folder: &str, field: &str, values: &[(&str, &str)]) -> Vec<(String, String)> {
    let fill = |query: &str| values.iter().fold(query.to_string(), |q, (var, value)| q.replace(var, value));
    let mut queries = Vec::new();
    for (name, dashboard) in dashboards(folder) {
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let query = target[field].as_str().unwrap();
                queries.push((format!("{name} panel {:?}", panel["title"]), fill(query)));
            }
        }
        for variable in dashboard["templating"]["list"].as_array().unwrap() {
            if variable["type"] == "query" {
                let query = variable["query"].as_str().unwrap();
                queries.push((format!("{name} variable {}", variable["name"]), fill(&variable_query(query))));
            }
        }
    }
    queries
}

/// Grafana's `label_values(metric, label)` as a query of its own.
fn variable_query(query: &str) -> String {
    match query.strip_prefix("label_values(").and_then(|rest| rest.strip_suffix(')')) {
        Some(args) => {
            let (metric, label) = args.split_once(", ").unwrap();
            format!("count by ({label}) ({metric})")
        }
        None => query.to_string(),
    }
}

/// Grafana's variables, as the dashboards would fill them in.
const PROMETHEUS_VALUES: [(&str, &str); 8] = [
    ("$__rate_interval", "1m"),
    ("$__range", "5m"),
    ("$quantile", "0.99"),
    ("\"$node\"", "\".+\""),
    ("\"$from\"", "\".+\""),
    ("\"$to\"", "\".+\""),
    ("\"$src\"", "\".+\""),
    ("\"$dst\"", "\".+\""),
];
/// The reports' own times are in 1970 (the switches' stream) and now (the
/// node's): the whole time line, in buckets of 1000 days.
const INFLUX_VALUES: [(&str, &str); 6] = [
    ("$timeFilter", "time >= 0"),
    ("$__interval", "1000d"),
    ("/^$node$/", "/^.+$/"),
    ("/^$from$/", "/^.+$/"),
    ("/^$to$/", "/^.+$/"),
    ("/^$src$/", "/^.+$/"),
];

/// What runs for the query test: a node (source and sink, forever), a
/// collect fed its reports and the switches' multi-hop stream, writing to
/// influxd and nats-server, and Prometheus scraping both.
struct Deployment {
    servers: Vec<std::process::Child>,
    node: std::process::Child,
    collect: std::process::Child,
    web_port: u16,
    influx_port: u16,
}

impl Deployment {
    fn start(dir: &Path) -> Deployment {
        ten_flows_pcap(dir);
        recorded_link(
            dir,
            &LinkSpec { packets: 2000, flows: 4, latency_us: 50, jitter_us: 100, loss: 0.02, seed: 3 },
        );
        let (nats_port, influx_port, collect_port, node_port, web_port) =
            (free_port(), free_port(), free_port(), free_port(), free_port());
        let nats = start_nats(dir, nats_port, &[]);
        let influxd = start_influxd(dir, influx_port, false);
        let (status, text) = http(influx_port, "POST", "/query", "q=CREATE+DATABASE+int").unwrap();
        assert_eq!(status, 200, "{text}");
        let names = dir.join("names.yaml");
        std::fs::write(&names, "nodes:\n  1: edge-a\n  2: core-b\n  3: core-c\n  4: edge-d\n  9: sink-z\n")
            .unwrap();
        let (influx, nats_url) =
            (format!("http://127.0.0.1:{influx_port}"), format!("nats://127.0.0.1:{nats_port}"));
        let metrics = format!("127.0.0.1:{collect_port}");
        let (collect, listen) = start_collect(
            &tools_bin(),
            &[
                "--quiet",
                "--duration",
                "300",
                "--metrics",
                &metrics,
                "--influx",
                &influx,
                "--nats",
                &nats_url,
                "--nats-max-bytes",
                "67108864",
                "--names",
                names.to_str().unwrap(),
            ],
        );
        let config = replay_source_and_sink_config("int-node-dashboards", node_port, &listen);
        std::fs::write(dir.join("node.yaml"), config).unwrap();
        let node = spawn_node(dir, 300);
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for datagram in switch_reports() {
            sender.send_to(&datagram, &listen).unwrap();
        }
        let prometheus =
            start_prometheus(dir, &[("int-node", node_port), ("int-collect", collect_port)], web_port);
        Deployment { servers: vec![nats, influxd, prometheus], node, collect, web_port, influx_port }
    }

    fn stop(mut self) {
        for child in [&mut self.node, &mut self.collect] {
            Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
            assert!(child.wait().unwrap().success());
        }
        self.servers.into_iter().for_each(stop);
    }
}

/// The queries that return nothing yet, after waiting (a state: every
/// query answered; the deadline only bounds a failure).
fn wait_for_answers(queries: &[(String, String)], answers: impl Fn(&str) -> bool) -> Vec<String> {
    let started = Instant::now();
    loop {
        let silent: Vec<String> = queries
            .iter()
            .filter(|(_, query)| !answers(query))
            .map(|(what, query)| format!("{what}: {query}"))
            .collect();
        if silent.is_empty() || started.elapsed() > Duration::from_secs(120) {
            return silent;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn every_dashboard_query_and_rule_returns_data() {
    let dir = workdir("dashboards");
    let deployment = Deployment::start(&dir);
    let mut promql = rule_queries();
    promql.extend(dashboard_queries("prometheus", "expr", &PROMETHEUS_VALUES));
    let web_port = deployment.web_port;
    let silent_promql = wait_for_answers(&promql, |q| !prometheus_query(web_port, q).is_empty());
    let influxql = dashboard_queries("influxdb", "query", &INFLUX_VALUES);
    let influx_port = deployment.influx_port;
    let silent_influxql = wait_for_answers(&influxql, |q| {
        influx_answer(influx_port, q)["results"][0]["series"].as_array().is_some_and(|s| !s.is_empty())
    });
    // Names reach the labels the dashboards show.
    let named = prometheus_query(web_port, "int_collect_node_hops_total{node_name=\"core-b\"}");
    deployment.stop();
    eprintln!("{} PromQL and {} InfluxQL queries checked", promql.len(), influxql.len());
    assert!(silent_promql.is_empty(), "no data from Prometheus for:\n{}", silent_promql.join("\n"));
    assert!(silent_influxql.is_empty(), "no data from InfluxDB for:\n{}", silent_influxql.join("\n"));
    assert_eq!(named.len(), 1, "{named:?}");
}

/// The comparison is cut where an alert's expression has it.
#[test]
fn a_rule_query_is_its_expression_before_the_comparison() {
    assert_eq!(query_of("rate(x[5m]) * 60 > 1"), "rate(x[5m]) * 60");
    assert_eq!(query_of("sum by (a) (rate(x{o=~\"d|l\"}[5m])) > 0"), "sum by (a) (rate(x{o=~\"d|l\"}[5m]))");
    assert_eq!(query_of("increase(x[10m]) == 0"), "increase(x[10m])");
    assert_eq!(query_of("up{job=\"int-node\"} == 0"), "up{job=\"int-node\"}");
}
