//! `collect --fleet-view --from-nats URL`: the view process. It books no
//! report: it subscribes to every aggregator's states (`PREFIX-view.*`),
//! keeps the latest of each, and puts their merge in its books, which
//! its summary, metrics and web view read. An aggregator silent for three
//! of its intervals (killed, or cut off) is dropped, said and counted: its
//! flows are another's by then, and its books gone with it. A state sent
//! at a graceful stop is kept: those books are final, and nobody books
//! their reports again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::{subjects, State};
use crate::collect::books::snapshot::Snapshot;
use crate::collect::counts::{counter, counts_of, metric_head, Counted};
use crate::collect::nats::{Servers, Settings, StreamError};
use crate::collect::shared::Shared;

/// The intervals an aggregator may stay silent before it is dropped.
const SILENT_INTERVALS: u32 = 3;
/// How often the states are looked at (expiry, and a merge if any came).
const LOOK: Duration = Duration::from_millis(250);

/// What the fleet view took, for the summary and the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    /// Aggregators publishing now.
    pub live: AtomicU64,
    /// Aggregators stopped gracefully, their last books kept.
    pub stopped: AtomicU64,
    /// States received.
    pub states: AtomicU64,
    /// States that did not decode (another version's, or not ours).
    pub refused: AtomicU64,
    /// Aggregators dropped, silent past three of their intervals.
    pub expired: AtomicU64,
    /// Subscribed (for `/readyz`).
    pub attached: AtomicBool,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("fleet", "fleet view")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, live, stopped, states, refused, expired)
    }

    fn metrics(&self, out: &mut String) {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        let name = "int_collect_fleet_aggregators";
        metric_head(out, name, "Aggregators whose states the fleet view merges, by state.", "gauge");
        out.push_str(&format!("{name}{{state=\"live\"}} {}\n", get(&self.live)));
        out.push_str(&format!("{name}{{state=\"stopped\"}} {}\n", get(&self.stopped)));
        counter(out, "int_collect_fleet_states_total", "View states received.", get(&self.states));
        let refused = get(&self.refused);
        counter(out, "int_collect_fleet_states_refused_total", "View states that did not decode.", refused);
        let expired = get(&self.expired);
        let help = "Aggregators dropped from the fleet view, silent past three of their intervals.";
        counter(out, "int_collect_fleet_aggregators_expired_total", help, expired);
    }
}

/// The view's thread: states in, merged books out, until collect stops.
pub fn spawn(
    settings: Settings,
    shared: &Arc<Shared>,
    counts: Arc<Counts>,
) -> std::thread::JoinHandle<Result<(), StreamError>> {
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let runtime = crate::collect::nats::runtime().map_err(|source| StreamError::Runtime { source })?;
        runtime.block_on(run(&settings, &shared, &counts));
        Ok(())
    })
}

/// The latest state of each aggregator, and when it came.
type States = BTreeMap<String, (State, Instant)>;

async fn run(settings: &Settings, shared: &Shared, counts: &Counts) {
    let quit = || shared.quit.load(Ordering::Relaxed);
    let Some(client) = connected(&settings.servers, "int-tools collect --fleet-view", quit).await else {
        return;
    };
    let subject = subjects(&settings.prefix);
    let mut subscriber = match client.subscribe(subject.clone()).await {
        Ok(subscriber) => subscriber,
        Err(error) => return log::error!("collect: --fleet-view: subscribing to {subject}: {error}"),
    };
    counts.attached.store(true, Ordering::Relaxed);
    log::info!("collect: fleet view over the states on {subject}");
    let mut states = States::new();
    let mut changed = false;
    let mut look = tokio::time::interval(LOOK);
    let mut looked = Instant::now();
    while !quit() {
        tokio::select! {
            message = subscriber.next() => match message {
                Some(message) => changed |= took(&mut states, &message.payload, counts),
                None => break,
            },
            _ = look.tick() => {
                excuse_a_stall(&mut states, looked.elapsed());
                looked = Instant::now();
                changed |= expire(&mut states, counts);
                if std::mem::take(&mut changed) {
                    merge(&states, shared, counts);
                }
            }
        }
    }
    merge(&states, shared, counts);
}

/// A client of the servers, tried every 250 ms until one answers (each new
/// failure said); `None` if `stop` says so first.
pub async fn connected(servers: &Servers, name: &str, stop: impl Fn() -> bool) -> Option<async_nats::Client> {
    let mut said = String::new();
    while !stop() {
        match crate::collect::nats::connect(servers, name).await {
            Ok(client) => return Some(client),
            Err(error) if error.to_string() != said => {
                said = error.to_string();
                log::warn!("collect: {name}: {said} (trying again)");
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    None
}

/// A state received, in place of its aggregator's last; whether it was.
fn took(states: &mut States, payload: &[u8], counts: &Counts) -> bool {
    counts.states.fetch_add(1, Ordering::Relaxed);
    match State::decode(payload) {
        Ok(state) => {
            states.insert(state.id.clone(), (state, Instant::now()));
            true
        }
        Err(error) => {
            if counts.refused.fetch_add(1, Ordering::Relaxed) == 0 {
                log::warn!("collect: --fleet-view: a view state that does not decode ({error}; counted)");
            }
            false
        }
    }
}

/// The time the view itself stood still (its process stopped, its host
/// paused: past four looks between two) is no aggregator's silence: the
/// states' arrival times move on by it, so each aggregator has its
/// intervals again to be heard before it is dropped.
fn excuse_a_stall(states: &mut States, since_last_look: Duration) {
    let stalled = since_last_look.saturating_sub(LOOK * 4);
    if stalled.is_zero() {
        return;
    }
    for (_, at) in states.values_mut() {
        if let Some(later) = at.checked_add(stalled) {
            *at = later;
        }
    }
}

/// Drops the aggregators silent past their intervals; whether any was.
fn expire(states: &mut States, counts: &Counts) -> bool {
    let before = states.len();
    states.retain(|id, (state, at)| {
        let limit = Duration::from_millis(state.every_ms).saturating_mul(SILENT_INTERVALS);
        let silent = at.elapsed();
        let kept = state.last || silent <= limit;
        if !kept {
            log::warn!(
                "collect: --fleet-view: aggregator {id} silent for {:.1} s, its state dropped",
                silent.as_secs_f64()
            );
        }
        kept
    });
    let dropped = before - states.len();
    counts.expired.fetch_add(dropped as u64, Ordering::Relaxed);
    dropped > 0
}

/// Every state merged, in place of the view's books.
fn merge(states: &States, shared: &Shared, counts: &Counts) {
    let stopped = states.values().filter(|(state, _)| state.last).count() as u64;
    counts.stopped.store(stopped, Ordering::Relaxed);
    counts.live.store(states.len() as u64 - stopped, Ordering::Relaxed);
    let merged = Snapshot::merge(latest(states).into_iter());
    shared.reports.store(merged.totals.reports, Ordering::Relaxed);
    let Some(Ok(mut books)) = shared.books.first().map(|books| books.lock()) else { return };
    books.ledger = merged.ledger;
    books.hops = merged.hops;
    books.senders = merged.senders;
    books.totals = merged.totals;
    books.join.counts = merged.joins;
    books.congestion.adopt(merged.congestion);
}

/// The books to merge: each partition's from the state of its latest
/// owner (the highest lease revision), whether that one lives or stopped;
/// an aggregator's whole books where its state has no partitions.
fn latest(states: &States) -> Vec<Snapshot> {
    let mut owners: BTreeMap<u8, &super::Partition> = BTreeMap::new();
    for part in states.values().flat_map(|(state, _)| &state.partitions) {
        if owners.get(&part.partition).is_none_or(|owner| part.epoch > owner.epoch) {
            owners.insert(part.partition, part);
        }
    }
    let whole = states.values().filter(|(state, _)| state.partitions.is_empty());
    whole
        .map(|(state, _)| state.snapshot())
        .chain(owners.values().map(|part| part.books.snapshot()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::{Books, Sizes};

    fn state(id: &str, last: bool) -> State {
        let sizes = Sizes { flows: 10, detailed_flows: 1, nodes: 10, links: 10 };
        let mut books = Books::bounded(sizes);
        books.totals.reports = 7;
        State::of(Snapshot::of(&books), id, 1000, last)
    }

    /// A state carrying `partitions`, each of `reports` reports, taken at
    /// lease revision `epoch`.
    fn holding(id: &str, partitions: &[u8], epoch: u64, reports: u64, last: bool) -> State {
        let mut state = state(id, last);
        state.partitions = partitions
            .iter()
            .map(|p| {
                let mut books = Books::bounded(Sizes { flows: 10, detailed_flows: 1, nodes: 10, links: 10 });
                books.totals.reports = reports;
                super::super::Partition::of(Snapshot::of(&books), *p, epoch)
            })
            .collect();
        state
    }

    /// A partition held by a dead aggregator's last state and by the one
    /// that took it over (a higher lease revision) is counted once, from
    /// the taker; a stopped one's partitions nobody took still count; an
    /// aggregator without partitions counts whole.
    #[test]
    fn each_partition_is_counted_once_from_its_latest_owner() {
        let mut states = States::new();
        let now = Instant::now();
        states.insert("dead".into(), (holding("dead", &[1, 2, 3], 10, 100, false), now));
        states.insert("taker".into(), (holding("taker", &[2, 3, 4], 20, 150, false), now));
        states.insert("stopped".into(), (holding("stopped", &[5], 5, 30, true), now));
        states.insert("whole".into(), (state("whole", false), now));
        let merged = Snapshot::merge(latest(&states).into_iter());
        // 1 from the dead one, 2 to 4 from the taker, 5 from the stopped
        // one, and the whole one's 7.
        assert_eq!(merged.totals.reports, 100 + 3 * 150 + 30 + 7);
    }

    /// An aggregator silent past three of its intervals is dropped and
    /// counted; one heard within them stays, and so does a stopped one's
    /// last state, however old.
    #[test]
    fn a_silent_aggregator_is_dropped_and_a_stopped_ones_books_kept() {
        let long_ago = Instant::now().checked_sub(Duration::from_millis(3100)).unwrap();
        let mut states = States::new();
        states.insert("heard".into(), (state("heard", false), Instant::now()));
        states.insert("silent".into(), (state("silent", false), long_ago));
        states.insert("stopped".into(), (state("stopped", true), long_ago));
        let counts = Counts::default();
        assert!(expire(&mut states, &counts));
        assert_eq!(states.keys().collect::<Vec<_>>(), ["heard", "stopped"]);
        assert_eq!(counts.expired.load(Ordering::Relaxed), 1);
        assert!(!expire(&mut states, &counts));
        let mut page = String::new();
        counts.metrics(&mut page);
        assert!(page.contains("int_collect_fleet_aggregators_expired_total 1\n"), "{page}");
    }

    /// A view that stood still itself (stopped 2 s) does not count that as
    /// the aggregators' silence: one heard 3.1 s ago, within its three
    /// intervals of 1 s but for the stall, stays; a look on time excuses
    /// nothing.
    #[test]
    fn the_views_own_stall_is_no_aggregators_silence() {
        let long_ago = Instant::now().checked_sub(Duration::from_millis(3100)).unwrap();
        let mut states = States::new();
        states.insert("heard".into(), (state("heard", false), long_ago));
        excuse_a_stall(&mut states, LOOK);
        assert_eq!(states["heard"].1, long_ago);
        excuse_a_stall(&mut states, Duration::from_secs(2) + LOOK * 4);
        assert!(!expire(&mut states, &Counts::default()));
        assert_eq!(states.len(), 1);
    }
}
