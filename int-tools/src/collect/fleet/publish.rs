//! An aggregator's side of the fleet view: its books, as a [`State`], to
//! `PREFIX-view.ID` every `--nats-view-s` on plain NATS (the latest
//! state is all the view wants: nothing to keep in a stream), and once
//! more at a graceful stop, after its last postcards are joined, marked
//! `last`: its final books.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{subject, Partition, State, FLOWS};
use crate::collect::books::snapshot::Snapshot;
use crate::collect::counts::{counter_family, counts_of, gauge, Counted};
use crate::collect::nats::checkpoint::Checkpoints;
use crate::collect::nats::{Servers, StreamError};
use crate::collect::shared::Shared;

/// How long a state may take to reach the servers.
const SEND: Duration = Duration::from_secs(2);

/// What the publisher did, for the summary and the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    pub published: AtomicU64,
    /// States the servers did not take (away, or a state past their
    /// payload limit: the log says which).
    pub failed: AtomicU64,
    /// The last state's size.
    pub bytes: AtomicU64,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("fleet_state", "fleet view states")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, published, failed, bytes)
    }

    fn metrics(&self, out: &mut String) {
        counter_family(
            out,
            "int_collect_fleet_state_publishes_total",
            "View states published for the fleet view, by outcome.",
            self.outcomes(&["published", "failed"]),
        );
        let bytes = self.bytes.load(Ordering::Relaxed);
        gauge(out, "int_collect_fleet_state_bytes", "The last view state's size.", bytes);
    }
}

/// The publisher's thread, told when the books are final.
pub struct Publisher {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Publisher {
    /// Publishes the final state (the readers stopped, the postcards are
    /// joined) and stops.
    pub fn finish(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// Starts publishing `shared`'s books to `servers` every `every`.
pub fn start(
    servers: Servers,
    prefix: &str,
    every: Duration,
    shared: &Arc<Shared>,
    (counts, held): (Arc<Counts>, Option<Arc<Checkpoints>>),
) -> Result<Publisher, StreamError> {
    let done = Arc::new(AtomicBool::new(false));
    let id = format!("{:x}-{:x}", std::process::id(), crate::schema::now_ns());
    let subject = subject(prefix, &id);
    log::info!("collect: view state published to {subject} every {} s", every.as_secs_f64());
    let runtime = crate::collect::nats::runtime().map_err(|source| StreamError::Runtime { source })?;
    let (shared, finished) = (Arc::clone(shared), Arc::clone(&done));
    let thread = std::thread::spawn(move || {
        let publishing =
            Publishing { id, subject, every, shared, counts, held, done: finished, said: String::new() };
        runtime.block_on(publishing.run(&servers));
    });
    Ok(Publisher { done, thread })
}

struct Publishing {
    id: String,
    subject: String,
    every: Duration,
    shared: Arc<Shared>,
    counts: Arc<Counts>,
    /// An aggregator over partitions with checkpoints: the partitions it
    /// holds, each published with its books.
    held: Option<Arc<Checkpoints>>,
    done: Arc<AtomicBool>,
    /// The last failure said, said once.
    said: String,
}

impl Publishing {
    async fn run(mut self, servers: &Servers) {
        let done = Arc::clone(&self.done);
        let Some(client) = super::gather::connected(servers, "int-tools collect (view state)", || {
            done.load(Ordering::Relaxed)
        })
        .await
        else {
            return;
        };
        let mut next = Instant::now();
        while !self.done.load(Ordering::Relaxed) {
            if Instant::now() >= next {
                self.publish(&client, false).await;
                next = Instant::now() + self.every;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.publish(&client, true).await;
    }

    /// Each held partition's books, its share of the [`FLOWS`] flows.
    fn partitions(&self) -> Vec<Partition> {
        let Some(held) = self.held.as_ref().map(|held| held.held()) else { return Vec::new() };
        let top = FLOWS / held.len().max(1);
        let books = |partition: u8| self.shared.books.get(usize::from(partition))?.lock().ok();
        held.into_iter()
            .filter_map(|(partition, epoch)| {
                let snapshot = Snapshot::view(&*books(partition)?, top);
                Some(Partition::of(snapshot, partition, epoch))
            })
            .collect()
    }

    async fn publish(&mut self, client: &async_nats::Client, last: bool) {
        let every_ms = u64::try_from(self.every.as_millis()).unwrap_or(u64::MAX);
        // The partitions held first: one given up meanwhile has its books
        // emptied before it is let go, so the whole books read after do
        // not hold it when the state holds no partition.
        let partitions = self.partitions();
        let mut state = State::of(self.shared.view(FLOWS), &self.id, every_ms, last);
        state.partitions = partitions;
        let sent = match state.encode() {
            Ok(bytes) => {
                self.counts.bytes.store(bytes.len() as u64, Ordering::Relaxed);
                // Bounded: with the servers away a flush waits for their
                // return, and the last state must not hold collect's exit.
                let sent = async {
                    client.publish(self.subject.clone(), bytes.into()).await.map_err(|e| e.to_string())?;
                    client.flush().await.map_err(|e| e.to_string())
                };
                match tokio::time::timeout(SEND, sent).await {
                    Ok(sent) => sent,
                    Err(_) => Err(format!("no answer within {} s", SEND.as_secs())),
                }
            }
            Err(error) => Err(error.to_string()),
        };
        match sent {
            Ok(()) => self.counts.published.fetch_add(1, Ordering::Relaxed),
            Err(error) => {
                if error != self.said {
                    log::warn!("collect: view state to {}: {error}", self.subject);
                    self.said = error;
                }
                self.counts.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}
