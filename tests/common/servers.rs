//! Real servers the end-to-end tests start on loopback and stop (Debian's
//! packages, installed by scripts/install-deps.sh): InfluxDB, Prometheus,
//! nats-server; and the plain HTTP the tests speak to them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const INFLUXD: &str = "/usr/bin/influxd";
pub const PROMETHEUS: &str = "/usr/bin/prometheus";
pub const NATS: &str = "/usr/sbin/nats-server";

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One request to 127.0.0.1:port: the status and the body.
pub fn http(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    Some((status, response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// `GET path` on 127.0.0.1:port: the body, or `None` if nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    http(port, "GET", path, "").map(|(_, body)| body)
}

/// The JSON in a body, chunked or not: between the first { and the last }.
pub fn json_in(text: &str) -> Option<serde_json::Value> {
    serde_json::from_str(text.get(text.find('{')?..=text.rfind('}')?)?).ok()
}

/// `text` as a URL's query component.
pub fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// InfluxDB 1.x, its files in `dir`, on loopback (authentication on where
/// `auth` says); returns it once it answers /ping.
pub fn start_influxd(dir: &Path, port: u16, auth: bool) -> Child {
    let config = format!(
        "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n[meta]\n  dir = \"{d}/meta\"\n[data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n[http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n  auth-enabled = {auth}\n",
        rpc = free_port(),
        d = dir.display()
    );
    std::fs::write(dir.join("influxdb.conf"), config).unwrap();
    let mut child = Command::new(INFLUXD)
        .args(["run", "-config", "influxdb.conf"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while http(port, "GET", "/ping", "").is_none_or(|(status, _)| status != 204) {
        if started.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("influxd did not answer /ping on port {port}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// An InfluxQL query's whole answer (database `int`).
pub fn influx_answer(port: u16, query: &str) -> serde_json::Value {
    let body = format!("db=int&q={}", url_encoded(query));
    let (status, text) = http(port, "POST", "/query", &body).expect("influxd answers");
    assert_eq!(status, 200, "{text}");
    json_in(&text).unwrap_or_else(|| panic!("no JSON in {text}"))
}

/// An InfluxQL query's first series' values.
pub fn influx_query(port: u16, query: &str) -> serde_json::Value {
    influx_answer(port, query)["results"][0]["series"][0]["values"].clone()
}

/// Prometheus, its files in `dir`, scraping each (job, port) on 127.0.0.1
/// every second, its API on `web_port`.
pub fn start_prometheus(dir: &Path, jobs: &[(&str, u16)], web_port: u16) -> Child {
    start_prometheus_with(dir, "global: {scrape_interval: 1s}\n", jobs, web_port)
}

/// [`start_prometheus`] evaluating the rules of `rules` (a file in `dir`)
/// every second.
pub fn start_prometheus_alerting(dir: &Path, jobs: &[(&str, u16)], web_port: u16, rules: &str) -> Child {
    let head = format!("global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nrule_files: [{rules}]\n");
    start_prometheus_with(dir, &head, jobs, web_port)
}

fn start_prometheus_with(dir: &Path, head: &str, jobs: &[(&str, u16)], web_port: u16) -> Child {
    let mut config = format!("{head}scrape_configs:\n");
    for (job, port) in jobs {
        config +=
            &format!("  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n");
    }
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    Command::new(PROMETHEUS)
        .arg("--config.file=prometheus.yml")
        .arg("--storage.tsdb.path=data")
        .arg(format!("--web.listen-address=127.0.0.1:{web_port}"))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The alerts Prometheus has firing (empty while it is not up yet).
pub fn prometheus_firing(port: u16) -> Vec<serde_json::Value> {
    let answer = json_in(&http_get(port, "/api/v1/alerts").unwrap_or_default()).unwrap_or_default();
    let alerts = answer["data"]["alerts"].as_array().cloned().unwrap_or_default();
    alerts.into_iter().filter(|alert| alert["state"] == "firing").collect()
}

/// A PromQL instant query's result vector (empty while Prometheus has no
/// such series, or is not up yet).
pub fn prometheus_query(port: u16, expr: &str) -> Vec<serde_json::Value> {
    let body = http_get(port, &format!("/api/v1/query?query={}", url_encoded(expr))).unwrap_or_default();
    let answer = json_in(&body).unwrap_or_default();
    answer["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// The value of a PromQL query's first series, if any yet.
pub fn prometheus_value(port: u16, expr: &str) -> Option<f64> {
    prometheus_query(port, expr).first()?["value"][1].as_str()?.parse().ok()
}

/// Stops a server.
pub fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// nats-server with JetStream on 127.0.0.1:`port`, its store and log in
/// `dir` (`dir/nats.log`), with more `args`, once it takes connections.
pub fn start_nats(dir: &Path, port: u16, args: &[&str]) -> Child {
    let log = dir.join("nats.log");
    // A restart in the same folder appends to the log.
    let before = std::fs::metadata(&log).map_or(0, |meta| meta.len() as usize);
    let child = Command::new(NATS)
        .args(args)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.join("store"))
        .arg("-l")
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    nats_ready(child, &log, before)
}

/// The server once its log, past `before` bytes, says it is ready: a
/// probe connection can reach a listener the server is still setting up
/// (and be reset), or another process on a port the server failed to
/// take. A server that exits first is a failure with its log.
fn nats_ready(mut child: Child, log: &Path, before: usize) -> Child {
    let said = || {
        std::fs::read(log).map(|text| String::from_utf8_lossy(&text[before.min(text.len())..]).into_owned())
    };
    let started = Instant::now();
    while !said().unwrap_or_default().contains("Server is ready") {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("nats-server exited ({status}): {}", said().unwrap_or_default());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "nats-server not ready: {}",
            said().unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}
