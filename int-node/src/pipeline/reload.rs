//! Settings that change while the node runs (SIGHUP): a source's
//! watchlist, a sink's report settings. The main lcore hands each
//! pipeline its new settings through a single-producer single-consumer
//! mailbox; the worker looks once per burst (one atomic load when empty),
//! swaps them in between bursts, and hands the old ones back for the main
//! lcore to drop, so the worker neither locks nor frees. Flow state is
//! untouched: flows keep their numbers, latency state and losses.

use ringbuf::traits::{Consumer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::config::{Config, ReportSettings, Rule, StageConfig};

#[derive(Debug, Clone)]
pub enum Update {
    Watchlist(Vec<Rule>),
    Reports(ReportSettings),
}

/// Updates on their way; more than this waiting is a worker that does
/// not poll.
const SLOTS: usize = 4;

/// The main lcore's end of a pipeline's mailbox.
pub struct Outbox {
    updates: HeapProd<Update>,
    spent: HeapCons<Update>,
}

/// The worker's end.
pub struct Inbox {
    updates: HeapCons<Update>,
    spent: HeapProd<Update>,
}

pub fn mailbox() -> (Outbox, Inbox) {
    let (updates_in, updates_out) = HeapRb::new(SLOTS).split();
    let (spent_in, spent_out) = HeapRb::new(SLOTS).split();
    (Outbox { updates: updates_in, spent: spent_out }, Inbox { updates: updates_out, spent: spent_in })
}

impl Outbox {
    /// Posts an update; `false` if the worker has not taken the earlier
    /// ones.
    pub fn post(&mut self, update: Update) -> bool {
        self.drop_spent();
        self.updates.try_push(update).is_ok()
    }

    /// Drops the settings the worker has replaced.
    pub fn drop_spent(&mut self) {
        while self.spent.try_pop().is_some() {}
    }
}

impl Inbox {
    /// Swaps in what came, if anything did (`swap` puts an update in the
    /// stage and returns what it replaced); returns how many updates.
    #[inline]
    pub fn apply(&mut self, mut swap: impl FnMut(Update) -> Update) -> u64 {
        let mut applied = 0;
        while let Some(update) = self.updates.try_pop() {
            let old = swap(update);
            // The spent ring has room for as many as the update ring holds;
            // were it full, the old settings would be dropped here instead.
            let _ = self.spent.try_push(old);
            applied += 1;
        }
        applied
    }
}

/// The reloadable settings of each pipeline of `config`, by name.
pub fn updates(config: &Config) -> Vec<(String, Update)> {
    config
        .pipelines
        .iter()
        .filter_map(|p| {
            let update = match &p.stage {
                StageConfig::Source05(settings) => Update::Watchlist(settings.watchlist.clone()),
                StageConfig::Source21(settings) => Update::Watchlist(settings.watchlist.clone()),
                StageConfig::IfaSource(settings) => Update::Watchlist(settings.watchlist.clone()),
                StageConfig::Sink(settings) => Update::Reports(settings.reports),
                _ => return None,
            };
            Some((p.name.clone(), update))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink's update carries its report settings, the export's rate
    /// limit among them; a source's, its watchlist.
    #[test]
    fn a_sinks_update_keeps_to_the_exports_rate_limit() {
        let text = "
node_id: 10.0.0.1
ports:
  - {name: p0, device: 'net_null0', rx_queues: 2, tx_queues: 2}
pipelines:
  - {name: src, role: source, lcore: 1, rx: {port: p0}, tx: {port: p0}, source: {watchlist: [{dst: 10.0.0.0/8}]}}
  - {name: snk, role: sink, lcore: 1, rx: {port: p0, queue: 1}, tx: {port: p0, queue: 1}, sink: {hops: {queue_quota: 7}}}
export: {collector: '127.0.0.1:32766', rate_limit: 123}
";
        let config = crate::config::parse(text).unwrap_or_else(|e| panic!("{e}"));
        let updates = updates(&config);
        assert!(matches!(&updates[0], (name, Update::Watchlist(rules)) if name == "src" && rules.len() == 1));
        let (name, Update::Reports(reports)) = &updates[1] else { panic!("{:?}", updates[1]) };
        assert_eq!((name.as_str(), reports.rate_limit, reports.queue_quota), ("snk", 123, 7));
    }
}
