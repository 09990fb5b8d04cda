//! The books' flags: how much they follow one by one ([`Sizes`]) and how
//! postcards are joined ([`join::Join`]).

use std::time::Duration;

use clap::Args;

use super::{join, Sizes};
use crate::collect::names::parse_node_id;
use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Books")]
pub struct BookArgs {
    /// Flows followed one by one; reports of later flows count only in
    /// the totals over all flows.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_flows: usize,
    /// Flows (the first each socket sees) with a latency histogram and a
    /// timeline (about 42 KB each); the others have count, min, mean, max
    /// and percentiles from a sketch (within 1.6%, 1 KB at most).
    #[arg(long, default_value_t = 1000)]
    pub detailed_flows: usize,
    /// Nodes (hops of INT 2.1 stacks, by node id) with figures of their own
    /// (about 60 KB each); hops of later nodes are counted only.
    #[arg(long, default_value_t = 10_000)]
    pub max_nodes: usize,
    /// Links between consecutive hops with figures of their own (about 30
    /// KB each).
    #[arg(long, default_value_t = 50_000)]
    pub max_links: usize,
    /// INT-MX and INT-XD: how long a packet's other postcards are waited
    /// for after its first arrived, by the collector's clock (before, a
    /// packet's group closes once every reporting node's stamps have passed
    /// it; after, it still waits for an earlier packet of its flow, two
    /// windows at most); how long a silent node holds groups open; also
    /// the most a packet's stamps may lie apart for its order to be told.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = duration::join_window)]
    pub join_window_ms: Duration,
    /// INT-MX and INT-XD: the domain's nodes (ids as dotted quads or
    /// numbers, comma-separated); postcards from any other node are
    /// counted and never joined. Default: any node.
    #[arg(long, value_delimiter = ',', value_parser = parse_node_id)]
    pub domain_nodes: Vec<u32>,
    /// INT-MX and INT-XD: packets in a row whose postcards give part of
    /// their flow's path (its nodes in order, some missing) before that is
    /// taken as the flow's new path; until then they count as incomplete.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub join_confirm: u32,
}

impl BookArgs {
    /// What each reader's books follow one by one.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            flows: self.max_flows,
            detailed_flows: self.detailed_flows,
            nodes: self.max_nodes,
            links: self.max_links,
        }
    }

    /// A reader's join of postcards.
    pub fn join(&self) -> join::Join {
        let window_ms = u64::try_from(self.join_window_ms.as_millis()).unwrap_or(u64::MAX);
        join::Join::new(window_ms, self.domain_nodes.clone(), self.join_confirm)
    }
}
