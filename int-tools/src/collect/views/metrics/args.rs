//! The Prometheus page's flags: where it is served and what it shows
//! ([`Shown`]).

use std::net::SocketAddr;

use clap::Args;

use super::Shown;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Prometheus metrics")]
pub struct MetricsArgs {
    /// Serve Prometheus metrics on this address and port (/metrics).
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Flows with labels of their own in the metrics (the most reported,
    /// and the most lossy); all flows are also in the totals.
    #[arg(long, default_value_t = 20)]
    pub metrics_flows: usize,
    /// Nodes with series of their own in the metrics (those with the most
    /// hops; 29 series each), and as many sinks (2 each); the rest are
    /// counted in int_collect_metrics_left_out.
    #[arg(long, default_value_t = 1000)]
    pub metrics_nodes: usize,
    /// Links with series of their own in the metrics (those with the most
    /// observations; 18 series each); the rest are counted in
    /// int_collect_metrics_left_out.
    #[arg(long, default_value_t = 4000)]
    pub metrics_links: usize,
}

impl MetricsArgs {
    /// What a scrape shows.
    pub fn shown(&self) -> Shown {
        Shown { flows: self.metrics_flows, nodes: self.metrics_nodes, links: self.metrics_links }
    }
}
