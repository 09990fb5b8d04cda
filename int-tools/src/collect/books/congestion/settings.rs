//! What makes a queue congested, and how much the bookkeeping keeps: the
//! settings `--congestion-*` (args.rs) turn into.

use std::collections::BTreeMap;

use super::figure::Unit;

/// Absolute thresholds: occupancy in the node's unit, hop latency in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Thresholds {
    pub occupancy: Option<u32>,
    pub latency_ns: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Every node's, where its own do not say.
    pub global: Thresholds,
    /// Per node, each measure it names overriding the global one.
    pub nodes: BTreeMap<u32, Thresholds>,
    /// Where no absolute threshold is given: a figure this many times the
    /// queue's own baseline opens an episode (0: never).
    pub relative: f64,
    /// An episode closes at the first figure with every measure under
    /// this share of the threshold it opened against.
    pub exit_ratio: f64,
    /// The unit each node writes its occupancy in, where the protocol's
    /// default is not it.
    pub units: BTreeMap<u32, Unit>,
    /// Queues followed at most.
    pub queues: usize,
    /// A queue silent this long (by the reports' own clock) ends its
    /// episode at its last figure.
    pub idle_ns: u64,
    /// A flow is a victim when its latency rose to this many times its
    /// baseline.
    pub victim_rise: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            global: Thresholds::default(),
            nodes: BTreeMap::new(),
            relative: 4.0,
            exit_ratio: 0.5,
            units: BTreeMap::new(),
            queues: 1024,
            idle_ns: 1_000_000_000,
            victim_rise: 1.5,
        }
    }
}

impl Settings {
    /// `node`'s thresholds: its own, else the global ones.
    pub fn thresholds(&self, node: u32) -> Thresholds {
        let own = self.nodes.get(&node).copied().unwrap_or_default();
        Thresholds {
            occupancy: own.occupancy.or(self.global.occupancy),
            latency_ns: own.latency_ns.or(self.global.latency_ns),
        }
    }
}
