//! Settings that change while the node runs (SIGHUP): a source's
//! watchlist, a sink's report settings. The main lcore hands each
//! pipeline its new settings through a single-producer single-consumer
//! mailbox; the worker looks once per burst (one atomic load when empty),
//! swaps them in between bursts, and hands the old ones back for the main
//! lcore to drop, so the worker neither locks nor frees. Flow state is
//! untouched: flows keep their numbers, latency state and losses.

use int_core::hop_rule::HopRule;
use int_core::latency::LatencyConfig;
use ringbuf::traits::{Consumer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use super::int05::Int05;
use super::int21::Int21;
use super::ioam::Ioam;
use super::Stage;
use crate::config::{Config, Rule, StageConfig};

/// A sink's report settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkReports {
    pub latency: LatencyConfig,
    pub max_skew_ns: u32,
    pub rate_limit: u32,
    /// INT 2.1's path and hop rules.
    pub path_changes: bool,
    pub hops: HopRule,
    pub queue_quota: u32,
}

#[derive(Debug, Clone)]
pub enum Update {
    Watchlist(Vec<Rule>),
    SinkReports(SinkReports),
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
    /// Swaps in what came, if anything did; returns how many updates.
    #[inline]
    pub fn apply(&mut self, stage: &mut Stage) -> u64 {
        let mut applied = 0;
        while let Some(update) = self.updates.try_pop() {
            let old = swap(stage, update);
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
    let rate_limit = config.export.as_ref().map_or(0, |export| export.rate_limit);
    config
        .pipelines
        .iter()
        .filter_map(|p| {
            let update = match &p.stage {
                StageConfig::Source05(settings) => Update::Watchlist(settings.watchlist.clone()),
                StageConfig::Source21(settings) => Update::Watchlist(settings.watchlist.clone()),
                StageConfig::Sink(settings) => Update::SinkReports(SinkReports {
                    latency: settings.latency,
                    max_skew_ns: settings.max_skew_ns,
                    rate_limit,
                    path_changes: settings.path_changes,
                    hops: settings.hops,
                    queue_quota: settings.queue_quota,
                }),
                _ => return None,
            };
            Some((p.name.clone(), update))
        })
        .collect()
}

/// Puts `update` in the stage; returns what it replaced (or the update
/// itself where the stage has no such setting).
fn swap(stage: &mut Stage, update: Update) -> Update {
    match (stage, update) {
        (Stage::Int05(Int05::Source(source)), Update::Watchlist(rules)) => {
            Update::Watchlist(std::mem::replace(&mut source.watchlist, rules))
        }
        (Stage::Int21(Int21::Source(source)), Update::Watchlist(rules)) => {
            Update::Watchlist(std::mem::replace(&mut source.watchlist, rules))
        }
        (Stage::Int05(Int05::Sink(sink)), Update::SinkReports(reports)) => {
            Update::SinkReports(sink.core.set_reports(reports))
        }
        (Stage::Int21(Int21::Sink(sink)), Update::SinkReports(reports)) => {
            Update::SinkReports(sink.core.set_reports(reports))
        }
        (Stage::Ioam(Ioam::Sink(decap)), Update::SinkReports(reports)) => {
            Update::SinkReports(decap.core.set_reports(reports))
        }
        (_, update) => update,
    }
}
