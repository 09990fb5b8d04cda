//! A Prometheus `/metrics` endpoint (text exposition format 0.0.4) with
//! every pipeline counter, labelled by pipeline: `int_node_<counter>_total`
//! for counts, `int_node_<counter>` for the gauges (latency extremes, the
//! largest skew). Served by a helper thread from the counters the workers
//! publish; the packet path never waits on it.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::stats::{Counter, SharedCounters};

/// Counters that are gauges, not counts.
const GAUGES: [Counter; 3] = [Counter::latency_min_ns, Counter::latency_max_ns, Counter::clock_skew_max_ns];

/// Binds `addr`; the returned closure serves scrapes until `quit`.
pub fn endpoint(
    addr: SocketAddr,
    pipelines: Vec<(String, Arc<SharedCounters>)>,
    quit: Arc<AtomicBool>,
) -> std::io::Result<impl FnOnce() + Send + 'static> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    log::info!("metrics: http://{}/metrics", listener.local_addr()?);
    Ok(move || {
        while !quit.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Err(error) = serve(stream, &pipelines) {
                        log::debug!("metrics: {error}");
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    })
}

/// One request: `GET /metrics` gets the page, anything else a 404.
fn serve(mut stream: TcpStream, pipelines: &[(String, Arc<SharedCounters>)]) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut request = [0u8; 2048];
    let mut len = 0;
    let ended = |bytes: &[u8]| bytes.windows(4).any(|w| w == b"\r\n\r\n");
    while len < request.len() && !ended(request.get(..len).unwrap_or_default()) {
        match stream.read(request.get_mut(len..).unwrap_or_default())? {
            0 => break,
            n => len += n,
        }
    }
    let head = String::from_utf8_lossy(request.get(..len).unwrap_or_default());
    let mut words = head.split_whitespace();
    let (status, body) = match (words.next(), words.next()) {
        (Some("GET"), Some("/metrics")) => ("200 OK", page(pipelines)),
        _ => ("404 Not Found", "try /metrics\n".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes())
}

/// The exposition: each metric's HELP and TYPE, then one sample per
/// pipeline.
pub fn page(pipelines: &[(String, Arc<SharedCounters>)]) -> String {
    let mut out = String::new();
    for counter in Counter::ALL {
        let (name, kind) = if GAUGES.contains(counter) {
            (format!("int_node_{}", counter.name()), "gauge")
        } else {
            (format!("int_node_{}_total", counter.name()), "counter")
        };
        let _ = writeln!(out, "# HELP {name} int-node's {} counter (the README's Counters)", counter.name());
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (pipeline, counters) in pipelines {
            let _ = writeln!(out, "{name}{{pipeline=\"{}\"}} {}", escape(pipeline), counters.get(*counter));
        }
    }
    out
}

/// A label value as the format wants it: backslash, quote and newline
/// escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_a_sample_per_pipeline_and_escaped_labels() {
        let a = Arc::new(SharedCounters::default());
        let page = page(&[("src".to_string(), Arc::clone(&a)), ("we\"ird\\".to_string(), a)]);
        assert!(page.contains("# TYPE int_node_rx_packets_total counter\n"));
        assert!(page.contains("int_node_rx_packets_total{pipeline=\"src\"} 0\n"));
        assert!(page.contains("int_node_rx_packets_total{pipeline=\"we\\\"ird\\\\\"} 0\n"));
        assert!(page.contains("# TYPE int_node_latency_max_ns gauge\n"));
        assert_eq!(page.lines().filter(|l| l.starts_with("int_node_")).count(), 2 * Counter::ALL.len());
    }
}
