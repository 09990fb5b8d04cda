//! A partition's books, checkpointed where the next owner finds them
//! (docs/scale-out.md, "A partition's books move with it"). An aggregator
//! over partitions keeps one set of books per partition; each owned
//! partition's books are written to the key-value bucket `NAME-books`,
//! key `p.K`, every `--nats-checkpoint-s` while they changed and once
//! more when the partition is given up (released, lost, or collect
//! stopping). The aggregator that takes the partition reads the
//! checkpoint before it reads the consumer on, so the flows keep their
//! picture (latency, loss, followed path) and the fleet's sums keep what
//! was booked.
//!
//! A checkpoint holds only what was acknowledged: each message is
//! acknowledged, confirmed, then booked. Every write is revision-checked
//! against the revision this owner read or wrote last, so an owner that
//! lost its lease cannot overwrite the next owner's checkpoint. A kill
//! between two checkpoints loses what the partition booked since the
//! last one (at most an interval's reports); the next owner counts the
//! messages acknowledged past the checkpoint (`behind`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;

use crate::collect::books::hops::{self, Hops};
use crate::collect::books::ledger::{self, Ledger};
use crate::collect::books::snapshot::Snapshot;
use crate::collect::books::Books;
use crate::collect::counts::{counter, counter_family, gauge, Counted};
use crate::collect::state::{Keeping, Kept};

/// The bucket of a consumer group's checkpoints.
pub fn bucket(consumer: &str) -> String {
    format!("{consumer}-books")
}

/// A partition's key in the bucket.
pub fn key(partition: u8) -> String {
    format!("p.{partition}")
}

/// What a checkpoint holds: the partition's books, and how far in its
/// consumer they go (the consumer sequence of the last message booked).
#[derive(serde::Serialize)]
struct Writing<'a> {
    books: Keeping<'a>,
    consumer_sequence: u64,
}

#[derive(serde::Deserialize)]
pub struct Checkpoint {
    pub books: Kept,
    pub consumer_sequence: u64,
}

/// Why a checkpoint could not be encoded, decoded, read or written (the
/// log says which, with the partition).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Encode(#[from] ciborium::ser::Error<std::io::Error>),
    #[error(transparent)]
    Decode(#[from] ciborium::de::Error<std::io::Error>),
    /// The bucket refused or did not answer.
    #[error(transparent)]
    Bucket(Box<dyn std::error::Error + Send + Sync>),
    /// Another owner wrote the key since this one read or wrote it: this
    /// aggregator's lease was lost (it stood still past it), and the
    /// partition's books are the taker's.
    #[error("another owner wrote it since (this aggregator's lease lost)")]
    Stale,
}

/// A partition's books, encoded with the consumer sequence they reach.
pub fn encode(snapshot: &Snapshot, consumer_sequence: u64) -> Result<Vec<u8>, CheckpointError> {
    let mut bytes = Vec::new();
    let writing = Writing { books: Keeping::of(snapshot), consumer_sequence };
    ciborium::into_writer(&writing, &mut bytes)?;
    Ok(bytes)
}

pub fn decode(bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
    Ok(ciborium::from_reader(bytes)?)
}

/// `books` take a checkpoint's (under their own limits and time base).
pub fn restore(books: &mut Books, kept: Kept) {
    let mut ledger = kept.ledger;
    ledger.resume_like(&books.ledger);
    let mut hops = kept.hops;
    hops.bounded_like(&books.hops);
    books.ledger = ledger;
    books.hops = hops;
    books.senders = kept.senders;
    books.totals = kept.totals;
    books.join.counts = kept.joins;
}

/// `books` emptied: the partition is another's now, its books with it.
pub fn clear(books: &mut Books) {
    let kept = Kept {
        ledger: Ledger::new(ledger::Limits { flows: 0, detailed: 0 }, Default::default()),
        hops: Hops::new(hops::Limits { nodes: 0, links: 0, flows: 0 }),
        senders: BTreeMap::new(),
        totals: Default::default(),
        joins: Default::default(),
        time_base: None,
    };
    restore(books, kept);
}

/// A partition's marks: its books' datagrams received, and how many of
/// them its last checkpoint holds.
#[derive(Debug, Default)]
struct Mark {
    booked: AtomicU64,
    covered: AtomicU64,
}

/// What the checkpoints did, each owned partition's marks, and the lease
/// revision each was taken at (the fleet view takes a partition's books
/// from the state of its latest owner: the highest revision).
#[derive(Debug, Default)]
pub struct Checkpoints {
    /// Checkpoints written whole.
    pub written: AtomicU64,
    /// Writes that failed (the servers away, a checkpoint past the
    /// servers' payload limit) or not encoded.
    pub failed: AtomicU64,
    /// Writes refused as stale: another owner wrote the key since (this
    /// aggregator stood still past its lease and the partition was taken).
    pub refused: AtomicU64,
    /// Datagrams a partition booked since its last checkpoint when its
    /// last write at giving it up failed or was refused: its next owner
    /// has them acknowledged and not booked (its `behind`, in messages).
    pub lost: AtomicU64,
    /// The last checkpoint's size.
    pub bytes: AtomicU64,
    /// Checkpoints read by this aggregator when it took a partition.
    pub restored: AtomicU64,
    /// Messages the consumers' acknowledged positions were past the
    /// checkpoints read (booked by an owner killed before it wrote them).
    pub behind: AtomicU64,
    /// Reads of a checkpoint that failed (tried again) or did not decode
    /// (the partition then starts from nothing).
    pub read_errors: AtomicU64,
    marks: Mutex<BTreeMap<u8, Mark>>,
    epochs: Mutex<BTreeMap<u8, u64>>,
    said: Mutex<Vec<String>>,
}

impl Checkpoints {
    /// `partition` held since its lease's `revision`.
    pub fn hold(&self, partition: u8, revision: u64) {
        if let Ok(mut epochs) = self.epochs.lock() {
            epochs.insert(partition, revision);
        }
    }

    /// `partition` no longer held.
    pub fn drop_hold(&self, partition: u8) {
        if let Ok(mut epochs) = self.epochs.lock() {
            epochs.remove(&partition);
        }
        if let Ok(mut marks) = self.marks.lock() {
            marks.remove(&partition);
        }
    }

    /// The partitions held, with their lease revisions.
    pub fn held(&self) -> BTreeMap<u8, u64> {
        self.epochs.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// `partition`'s books received `booked` datagrams (its checkpoint
    /// holds `covered` of them, when said).
    pub fn mark(&self, partition: u8, booked: u64, covered: Option<u64>) {
        let Ok(mut marks) = self.marks.lock() else { return };
        let mark = marks.entry(partition).or_default();
        mark.booked.store(booked, Ordering::Relaxed);
        if let Some(covered) = covered {
            mark.covered.store(covered, Ordering::Relaxed);
        }
    }

    /// Datagrams booked and not yet in a checkpoint, over the partitions
    /// held.
    pub fn uncovered(&self) -> u64 {
        let Ok(marks) = self.marks.lock() else { return 0 };
        let load = |count: &AtomicU64| count.load(Ordering::Relaxed);
        marks.values().map(|m| load(&m.booked).saturating_sub(load(&m.covered))).sum()
    }

    /// A failure counted in `count`, said in the log if its cause is new
    /// (16 causes at most).
    pub fn failed(&self, count: &AtomicU64, partition: u8, what: &str, error: &dyn std::fmt::Display) {
        count.fetch_add(1, Ordering::Relaxed);
        let cause = format!("{what}: {error}");
        let Ok(mut said) = self.said.lock() else { return };
        if said.len() < 16 && !said.contains(&cause) {
            log::warn!("collect: partition {partition}'s checkpoint, {what}: {error} (counted; said once)");
            said.push(cause);
        }
    }
}

impl Counted for Checkpoints {
    fn names(&self) -> (&'static str, &'static str) {
        ("checkpoints", "partition checkpoints")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        vec![
            ("written", get(&self.written)),
            ("failed", get(&self.failed)),
            ("refused", get(&self.refused)),
            ("lost", get(&self.lost)),
            ("bytes", get(&self.bytes)),
            ("restored", get(&self.restored)),
            ("behind", get(&self.behind)),
            ("read_errors", get(&self.read_errors)),
            ("uncovered", self.uncovered()),
        ]
    }

    fn metrics(&self, out: &mut String) {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        counter_family(
            out,
            "int_collect_nats_checkpoints_total",
            "Partition checkpoints written, failed, refused as stale, and read at a takeover.",
            self.outcomes(&["written", "failed", "refused", "restored"]),
        );
        let help = "Datagrams booked since a partition's last checkpoint, lost with a write refused or failed at giving it up.";
        counter(out, "int_collect_nats_checkpoint_lost_datagrams_total", help, get(&self.lost));
        let help = "Checkpoint reads that failed or did not decode.";
        counter(out, "int_collect_nats_checkpoint_read_errors_total", help, get(&self.read_errors));
        let help = "Messages acknowledged past the checkpoints read (lost with their owner).";
        counter(out, "int_collect_nats_checkpoint_behind_messages_total", help, get(&self.behind));
        gauge(out, "int_collect_nats_checkpoint_bytes", "The last checkpoint's size.", get(&self.bytes));
        let help = "Datagrams booked in the partitions held and not yet in a checkpoint.";
        gauge(out, "int_collect_nats_checkpoint_uncovered", help, self.uncovered());
    }
}

/// The checkpoint of `partition` as the bucket has it, and its revision;
/// `Ok(None)` where there is none.
pub async fn read(store: &kv::Store, partition: u8) -> Result<Option<(Vec<u8>, u64)>, CheckpointError> {
    match store.entry(key(partition)).await {
        Ok(Some(entry)) if entry.operation == kv::Operation::Put && !entry.value.is_empty() => {
            Ok(Some((entry.value.to_vec(), entry.revision)))
        }
        Ok(Some(entry)) => Ok(Some((Vec::new(), entry.revision))),
        Ok(None) => Ok(None),
        Err(error) => Err(CheckpointError::Bucket(error.into())),
    }
}

/// Writes `bytes` as `partition`'s checkpoint against `revision` (none:
/// the key is made); the new revision.
pub async fn write(
    store: &kv::Store,
    partition: u8,
    bytes: Vec<u8>,
    revision: Option<u64>,
) -> Result<u64, CheckpointError> {
    match revision {
        Some(revision) => {
            store.update(key(partition), bytes.into(), revision).await.map_err(|error| match error.kind() {
                kv::UpdateErrorKind::WrongLastRevision => CheckpointError::Stale,
                _ => CheckpointError::Bucket(error.into()),
            })
        }
        None => store.create(key(partition), bytes.into()).await.map_err(|error| match error.kind() {
            kv::CreateErrorKind::AlreadyExists => CheckpointError::Stale,
            _ => CheckpointError::Bucket(error.into()),
        }),
    }
}

/// One owned partition's checkpointing, by its reader: the checkpoint
/// read before the first pull, written every `every` while the books
/// changed, and once more when the reader stops.
pub struct Keeper<'a> {
    pub store: &'a kv::Store,
    pub partition: u8,
    pub books: &'a Mutex<Books>,
    pub counts: &'a Checkpoints,
    pub every: Duration,
    /// The key's revision as this owner read or wrote it (none: no key).
    revision: Option<u64>,
    /// The consumer sequence of the last message booked, and the
    /// checkpoint's as read (for `behind`, once the consumer tells).
    sequence: u64,
    restored_sequence: Option<u64>,
    written: Instant,
    /// The datagrams the books received, and those the last write held.
    booked: u64,
    covered: u64,
}

impl<'a> Keeper<'a> {
    pub fn new(
        store: &'a kv::Store,
        partition: u8,
        books: &'a Mutex<Books>,
        counts: &'a Checkpoints,
        every: Duration,
    ) -> Keeper<'a> {
        let written = Instant::now();
        Keeper {
            store,
            partition,
            books,
            counts,
            every,
            revision: None,
            sequence: 0,
            restored_sequence: None,
            written,
            booked: 0,
            covered: 0,
        }
    }

    /// Reads the partition's checkpoint into its books (emptied first:
    /// what they held is the checkpoint's or nobody's), then claims it:
    /// writes it back against the revision read, so that a late write of
    /// the owner before (stalled past its lease) is refused, never read
    /// over this owner's books. A read or a claim that fails is tried
    /// again every 250 ms while `going`. Whether it was read and claimed.
    pub async fn restore(&mut self, going: impl Fn() -> bool) -> bool {
        while going() {
            match read(self.store, self.partition).await {
                Ok(found) => {
                    self.took(found);
                    if self.write().await {
                        return true;
                    }
                }
                Err(error) => self.counts.failed(&self.counts.read_errors, self.partition, "read", &error),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }

    fn took(&mut self, found: Option<(Vec<u8>, u64)>) {
        let Ok(mut books) = self.books.lock() else { return };
        clear(&mut books);
        let Some((bytes, revision)) = found else { return };
        self.revision = Some(revision);
        if bytes.is_empty() {
            return;
        }
        match decode(&bytes) {
            Ok(checkpoint) => {
                restore(&mut books, checkpoint.books);
                self.sequence = checkpoint.consumer_sequence;
                self.restored_sequence = Some(checkpoint.consumer_sequence);
                (self.booked, self.covered) = (books.totals.received, books.totals.received);
                self.counts.restored.fetch_add(1, Ordering::Relaxed);
                self.counts.mark(self.partition, self.booked, Some(self.covered));
            }
            Err(error) => self.counts.failed(&self.counts.read_errors, self.partition, "decode", &error),
        }
    }

    /// The consumer's acknowledged position, once its reader has it:
    /// what was acknowledged past the checkpoint read is counted.
    pub fn acknowledged(&mut self, ack_floor: u64) {
        if let Some(sequence) = self.restored_sequence.take() {
            self.counts.behind.fetch_add(ack_floor.saturating_sub(sequence), Ordering::Relaxed);
        }
    }

    /// A batch booked: the books' datagrams received, and the consumer
    /// sequence of its last message (0: none).
    pub fn booked(&mut self, received: u64, last: u64) {
        self.booked = received;
        self.sequence = self.sequence.max(last);
        self.counts.mark(self.partition, received, None);
    }

    /// Writes a checkpoint if one is due and the books changed.
    pub async fn tick(&mut self) {
        if !self.every.is_zero() && self.written.elapsed() >= self.every && self.booked != self.covered {
            let _ = self.write().await;
        }
    }

    /// The last checkpoint, the books' postcards' groups joined first
    /// (the next owner takes no group half joined). Not written (refused:
    /// the partition was taken while this aggregator stood still), what
    /// the books took since the last one is lost to the next owner:
    /// counted.
    pub async fn finish(&mut self) {
        if let Ok(mut books) = self.books.lock() {
            books.close_joins();
            self.booked = books.totals.received;
        }
        if !self.every.is_zero() && !self.write().await {
            self.counts.lost.fetch_add(self.booked.saturating_sub(self.covered), Ordering::Relaxed);
        }
    }

    /// Writes the books as they are now; whether the bucket took them.
    async fn write(&mut self) -> bool {
        self.written = Instant::now();
        let (snapshot, received) = match self.books.lock() {
            Ok(books) => (Snapshot::of(&books), books.totals.received),
            Err(_) => return false,
        };
        let partition = self.partition;
        let bytes = match encode(&snapshot, self.sequence) {
            Ok(bytes) => bytes,
            Err(error) => {
                self.counts.failed(&self.counts.failed, partition, "encode", &error);
                return false;
            }
        };
        let size = bytes.len() as u64;
        match write(self.store, partition, bytes, self.revision).await {
            Ok(revision) => {
                self.revision = Some(revision);
                self.covered = received;
                self.counts.written.fetch_add(1, Ordering::Relaxed);
                self.counts.bytes.store(size, Ordering::Relaxed);
                self.counts.mark(partition, received, Some(received));
                true
            }
            Err(CheckpointError::Stale) => {
                let error = CheckpointError::Stale;
                self.counts.failed(&self.counts.refused, partition, "write", &error);
                false
            }
            Err(error) => {
                self.counts.failed(&self.counts.failed, partition, "write", &error);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::latency::Latency;
    use crate::collect::books::Sizes;

    const SIZES: Sizes = Sizes { flows: 100, detailed_flows: 10, nodes: 10, links: 10 };

    /// A partition's books through a checkpoint into another aggregator's
    /// (of other limits): the same reports, link latencies and
    /// percentiles, under the taker's limits; cleared, nothing.
    #[test]
    fn a_checkpoint_gives_the_taker_the_books_under_its_own_limits() {
        let mut ours = Books::bounded(SIZES);
        let mut latency = Latency::new(2);
        (0..500).for_each(|i| latency.record(10_000 + i * 37));
        ours.hops.links.insert((1, 2), latency);
        ours.totals.reports = 42;
        ours.totals.received = 40;
        let bytes = encode(&Snapshot::of(&ours), 77).unwrap();
        let checkpoint = decode(&bytes).unwrap();
        assert_eq!(checkpoint.consumer_sequence, 77);
        let mut theirs = Books::bounded(Sizes { flows: 5, ..SIZES });
        restore(&mut theirs, checkpoint.books);
        assert_eq!((theirs.totals.reports, theirs.totals.received), (42, 40));
        let (a, b) = (&ours.hops.links[&(1, 2)], &theirs.hops.links[&(1, 2)]);
        assert_eq!((a.count(), a.quantile(0.99)), (b.count(), b.quantile(0.99)));
        assert!(decode(b"not a checkpoint").is_err());
        clear(&mut theirs);
        assert_eq!(theirs.totals.reports, 0);
        assert!(theirs.hops.links.is_empty());
    }

    /// Datagrams booked and not yet checkpointed, over the partitions
    /// held: what a test waits on before it kills an aggregator.
    #[test]
    fn uncovered_is_what_the_last_checkpoints_miss() {
        let counts = Checkpoints::default();
        counts.mark(1, 10, None);
        counts.mark(2, 5, Some(5));
        assert_eq!(counts.uncovered(), 10);
        counts.mark(1, 12, Some(12));
        assert_eq!(counts.uncovered(), 0);
        counts.mark(3, 4, None);
        counts.drop_hold(3);
        assert_eq!(counts.uncovered(), 0);
    }
}
