//! A Prometheus `/metrics` endpoint (text exposition format 0.0.4) with
//! every pipeline counter, labelled by pipeline: `int_node_<counter>_total`
//! for counts, `int_node_<counter>` for the gauges (latency extremes, the
//! largest skew). Served by a helper thread from the counters the workers
//! publish; the packet path never waits on it.

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use int_os::http::{self, Page};

use crate::stats::{Counter, SharedCounters};

/// The text exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// Counters that are gauges, not counts.
const GAUGES: [Counter; 3] = [Counter::latency_min_ns, Counter::latency_max_ns, Counter::clock_skew_max_ns];

/// Binds `addr`; the returned closure serves scrapes until `quit`.
pub fn endpoint(
    addr: SocketAddr,
    pipelines: Vec<(String, Arc<SharedCounters>)>,
    quit: Arc<AtomicBool>,
) -> std::io::Result<impl FnOnce() + Send + 'static> {
    let listener = TcpListener::bind(addr)?;
    log::info!("metrics: http://{}/metrics", listener.local_addr()?);
    Ok(move || {
        let serve = |path: &str| {
            (path == "/metrics").then(|| Page { content_type: CONTENT_TYPE, body: page(&pipelines) })
        };
        if let Err(error) = http::serve(listener, serve, &quit) {
            log::warn!("metrics: {error}");
        }
    })
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
            let _ = writeln!(
                out,
                "{name}{{pipeline=\"{}\"}} {}",
                http::prometheus_label(pipeline),
                counters.get(*counter)
            );
        }
    }
    out
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
