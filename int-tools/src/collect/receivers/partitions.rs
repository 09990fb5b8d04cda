//! `collect --from-nats URL --nats-partitions P --partitions auto`: an
//! aggregator over some of a partitioned stream's partitions. Which ones
//! its leases say (`crate::collect::nats::lease`); each owned partition is
//! read with a durable consumer of its own (`CONSUMER-p<k>`, filtered on
//! `PREFIX.p<k>.>`), shared by whichever aggregator owns it: a partition
//! that moves is read on from its consumer's acknowledged position. Each
//! message is acknowledged, confirmed, then booked, as by one consumer
//! (`super::nats`). A partition given up or lost is stopped between two
//! batches: the batch in hand is booked, none is left half read.
//!
//! A consumer that cannot be made or read, and a pull that fails, are
//! tried again; each is counted, and each cause said once in the log
//! (sixteen partitions failing alike say it once). Every owned
//! partition's lag is read from its consumer every second.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull, kv, Message};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use super::nats::{durable, Reader, BATCH, EXPIRES, LAG_EVERY, SAY_LAG_EVERY};
use super::How;
use crate::collect::nats::checkpoint::{self, Checkpoints, Keeper};
use crate::collect::nats::lease::{self, Lag, Leases};
use crate::collect::nats::partition::{self, Owned};
use crate::collect::nats::{Settings, StreamError};
use crate::collect::shared::Shared;

/// What `--partitions` asks of this aggregator.
#[derive(Debug, Clone)]
pub struct Leasing {
    /// The stream's partitions (`--nats-partitions`).
    pub count: u16,
    pub owned: Owned,
    /// `--nats-lease-s`.
    pub ttl: Duration,
    pub counts: Arc<lease::Counts>,
    /// `--nats-checkpoint-s` (zero: no checkpoints), and what they did.
    pub checkpoint_every: Duration,
    pub checkpoints: Arc<Checkpoints>,
}

/// Why the leases' bucket or a partition's consumer is not there yet
/// (tried again until collect stops).
#[derive(Debug, thiserror::Error)]
enum AttachError {
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("the leases' bucket {bucket}: {source}")]
    Bucket { bucket: String, source: Box<dyn std::error::Error + Send + Sync> },
}

/// Why a partition's consumer could not be made, read or pulled from.
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Causes said in the log at most; past them errors are only counted
/// (a cause whose text names something new each time cannot flood it).
const SAID_AT_MOST: usize = 64;

/// The partitions' readers' errors: counted, each cause said once.
struct Errors<'a> {
    counts: &'a lease::Counts,
    said: Mutex<HashSet<String>>,
}

impl Errors<'_> {
    /// A failure of `what` (`consumer`, `pull`) counted in `count`, said
    /// if its cause is new.
    fn failed(&self, count: &AtomicU64, partition: u8, what: &str, error: &dyn std::fmt::Display) {
        count.fetch_add(1, Ordering::Relaxed);
        let cause = format!("{what}: {error}");
        let Ok(mut said) = self.said.lock() else { return };
        if said.len() < SAID_AT_MOST && said.insert(cause) {
            log::warn!(
                "collect: partition {partition}'s {what}: {error} (tried again; said once for every partition)"
            );
        }
    }

    /// A batch in hand left unacknowledged (its lease lost first): counted
    /// by message, said once.
    fn dropped(&self, partition: u8, messages: usize) {
        self.counts.dropped.fetch_add(messages as u64, Ordering::Relaxed);
        let cause = "lease lost in hand".to_string();
        let Ok(mut said) = self.said.lock() else { return };
        if said.len() < SAID_AT_MOST && said.insert(cause) {
            log::warn!(
                "collect: partition {partition}'s lease lost with {messages} messages in hand, not acknowledged: \
                 left to its next owner (delivered again after the consumer's acknowledgement wait; said once)"
            );
        }
    }
}

/// The aggregator's thread over the partitions its leases give it.
pub fn spawn(
    settings: Settings,
    consumer: String,
    shared: &Arc<Shared>,
    how: &Arc<How>,
    counts: Arc<super::nats::Counts>,
    leasing: Leasing,
) -> std::thread::JoinHandle<Result<(), StreamError>> {
    let (shared, how) = (Arc::clone(shared), Arc::clone(how));
    std::thread::spawn(move || {
        let Some(books) = shared.books.first() else { return Ok(()) };
        let runtime = crate::collect::nats::runtime().map_err(|source| StreamError::Runtime { source })?;
        let reader = Reader::new(&settings, &consumer, books, &shared, &how, counts);
        runtime.block_on(run(&reader, &leasing))
    })
}

/// A partition's reader: it returns its partition and its switch once
/// the switch is off (or collect stops).
type Reading<'a> = Pin<Box<dyn std::future::Future<Output = (u8, Arc<AtomicBool>)> + 'a>>;

/// A partition reader's switch (on while it is to read), whether its
/// last pull found the partition read to its end, and until when its
/// lease is surely this aggregator's ([`Leases::fresh_until`]).
#[derive(Clone)]
struct Switch {
    on: Arc<AtomicBool>,
    caught_up: Arc<AtomicBool>,
    fresh_until: Arc<Mutex<Option<Instant>>>,
}

impl Switch {
    fn new(fresh_until: Option<Instant>) -> Switch {
        Switch {
            on: Arc::new(AtomicBool::new(true)),
            caught_up: Arc::new(AtomicBool::new(false)),
            fresh_until: Arc::new(Mutex::new(fresh_until)),
        }
    }

    fn fresh(&self) -> bool {
        let until = self.fresh_until.lock().ok().and_then(|until| *until);
        until.is_some_and(|until| Instant::now() < until)
    }

    /// Whether a batch in hand may be acknowledged: the lease fresh, or
    /// renewed after a wait (the process stood still past it: SIGSTOP,
    /// its host paused); not once the reader is switched off meanwhile
    /// (the lease lost, or collect stopping). Rare enough to look every
    /// 20 ms rather than be told.
    async fn still_owned(&self, going: impl Fn() -> bool) -> bool {
        loop {
            if self.fresh() {
                return true;
            }
            if !going() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Reads the partitions this aggregator's leases give it until collect
/// stops, then gives its leases up for the others.
async fn run(reader: &Reader<'_>, leasing: &Leasing) -> Result<(), StreamError> {
    let Some(Opened { js, store, checkpoints }) = attach(reader).await else { return Ok(()) };
    reader.counts.attached.store(true, Ordering::Relaxed);
    let mut leases = Leases::new(leasing.count, &leasing.owned, leasing.ttl, Arc::clone(&leasing.counts));
    log::info!(
        "collect: aggregator {} over {} partitions, leases in bucket {}",
        leases.me,
        leasing.count,
        lease::bucket(reader.name)
    );
    let mut watch = store.watch_with_history(">").await.ok();
    let mut tick = tokio::time::interval(leases.every());
    let mut look = tokio::time::interval(Duration::from_millis(100));
    // Before the readers that borrow it.
    let errors = Errors { counts: &leasing.counts, said: Mutex::new(HashSet::new()) };
    let mut reading: FuturesUnordered<Reading<'_>> = FuturesUnordered::new();
    let mut switches: std::collections::HashMap<u8, Switch> = std::collections::HashMap::new();
    let mut lag_said = None;
    while !reader.stopping() {
        tokio::select! {
            _ = tick.tick() => {
                let changes = leases.tick(&store).await;
                for partition in changes.stop.iter().chain(&changes.release) {
                    if let Some(switch) = switches.get(partition) {
                        switch.on.store(false, Ordering::Relaxed);
                    }
                }
                for (partition, switch) in &switches {
                    if let (Some(until), Ok(mut fresh)) = (leases.fresh_until(*partition), switch.fresh_until.lock()) {
                        *fresh = Some(until);
                    }
                }
                for partition in changes.start {
                    let switch = Switch::new(leases.fresh_until(partition));
                    switches.insert(partition, switch.clone());
                    let epoch = leases.revision(partition).unwrap_or(0);
                    let Some(books) = reader.books_of(partition) else { continue };
                    let (counts, every) = (&*leasing.checkpoints, leasing.checkpoint_every);
                    let keeper = Keeper::new(&checkpoints, partition, books, counts, every);
                    reading.push(Box::pin(read(reader, &js, (keeper, epoch), switch, &errors)));
                }
                say_lag(reader.name, &leasing.counts, &mut lag_said);
                if watch.is_none() {
                    watch = store.watch_with_history(">").await.ok();
                }
            }
            entry = next(&mut watch) => match entry {
                Some(Ok(entry)) => leases.saw(&entry),
                _ => watch = None,
            },
            Some((partition, switch)) = reading.next(), if !reading.is_empty() => {
                if switches.get(&partition).is_some_and(|s| Arc::ptr_eq(&s.on, &switch)) {
                    switches.remove(&partition);
                    given_up(reader, leasing, partition);
                }
                if leases.is_releasing(partition) {
                    leases.release(&store, partition).await;
                }
            }
            _ = look.tick() => {
                if !switches.is_empty() && switches.values().all(|s| s.caught_up.load(Ordering::Relaxed)) {
                    reader.close_passed_joins();
                }
            }
        }
    }
    for switch in switches.values() {
        switch.on.store(false, Ordering::Relaxed);
    }
    stop(reading, &mut leases, &store, &js.client(), reader.name).await;
    Ok(())
}

/// The stop: each reader books the batch in hand and writes its last
/// checkpoint, then every lease is given up. With the servers away none
/// of it can complete (a batch whose acknowledgement is not confirmed is
/// not booked and comes again to the partition's next owner; no
/// checkpoint or release can be written; the leases expire by
/// themselves), so collect stops then rather than wait out each request.
async fn stop(
    mut reading: FuturesUnordered<Reading<'_>>,
    leases: &mut Leases,
    store: &kv::Store,
    client: &async_nats::Client,
    name: &str,
) {
    let drained = async {
        while reading.next().await.is_some() {}
        leases.release_all(store).await;
    };
    tokio::select! {
        () = drained => {}
        () = servers_away(client) => log::warn!(
            "collect: --from-nats {name}: the servers away at the stop: the batches in hand are left to the \
             partitions' next owners (redelivered), the leases to expire"
        ),
    }
}

/// Returns once the client is not connected.
async fn servers_away(client: &async_nats::Client) {
    while client.connection_state() == async_nats::connection::State::Connected {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A partition released or lost (collect going on): its books are its
/// next owner's now, from the checkpoint its reader wrote last, and no
/// longer this aggregator's. Emptied before they stop being held: a
/// fleet view's state that holds none of its partitions counts its
/// aggregator's whole books, which must not hold this one's any more.
fn given_up(reader: &Reader<'_>, leasing: &Leasing, partition: u8) {
    if reader.stopping() || leasing.checkpoint_every.is_zero() {
        return;
    }
    if let Some(Ok(mut books)) = reader.books_of(partition).map(|books| books.lock()) {
        checkpoint::clear(&mut books);
    }
    leasing.checkpoints.drop_hold(partition);
}

/// The next change of the bucket, if it is watched.
async fn next(watch: &mut Option<kv::Watch>) -> Option<Result<kv::Entry, kv::WatcherError>> {
    match watch {
        Some(watch) => watch.next().await,
        None => std::future::pending().await,
    }
}

/// A client, the stream and the buckets, once a server answers; `None`
/// if collect stops first.
async fn attach(reader: &Reader<'_>) -> Option<Opened> {
    reader.until_open(|| open(reader)).await
}

async fn open(reader: &Reader<'_>) -> Result<Opened, AttachError> {
    let settings = reader.settings;
    let client = crate::collect::nats::connect(&settings.servers, "int-tools collect --from-nats").await?;
    let js = jetstream::new(client);
    crate::collect::nats::ensure_stream(&js, settings).await?;
    let bucket = lease::bucket(reader.name);
    // The bucket's stream made here as async-nats would make it: its own
    // `create_key_value` first reads the account's limits, in a form
    // nats-server 2.9 does not answer.
    let config = jetstream::stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        storage: jetstream::stream::StorageType::File,
        num_replicas: settings.replicas,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: jetstream::stream::DiscardPolicy::New,
        ..Default::default()
    };
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| AttachError::Bucket {
        bucket: bucket.clone(),
        source,
    };
    js.get_or_create_stream(config.clone()).await.map_err(|e| failed(Box::new(e)))?;
    let store = js.get_key_value(&bucket).await.map_err(|e| failed(Box::new(e)))?;
    // The checkpoints' bucket, made the same way: one value a partition.
    let books = checkpoint::bucket(reader.name);
    let config = jetstream::stream::Config {
        name: format!("KV_{books}"),
        subjects: vec![format!("$KV.{books}.>")],
        ..config
    };
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| AttachError::Bucket {
        bucket: books.clone(),
        source,
    };
    js.get_or_create_stream(config).await.map_err(|e| failed(Box::new(e)))?;
    let checkpoints = js.get_key_value(&books).await.map_err(|e| failed(Box::new(e)))?;
    Ok(Opened { js, store, checkpoints })
}

/// A client, the leases' bucket and the checkpoints'.
struct Opened {
    js: jetstream::Context,
    store: kv::Store,
    checkpoints: kv::Store,
}

/// One partition read while its switch is on: its checkpoint first (with
/// checkpoints on), then batches pulled from its consumer, each
/// acknowledged and booked whole into the partition's books; its lag read
/// every [`LAG_EVERY`], its checkpoint written every interval and at the
/// end.
async fn read(
    reader: &Reader<'_>,
    js: &jetstream::Context,
    (mut keeper, epoch): (Keeper<'_>, u64),
    switch: Switch,
    errors: &Errors<'_>,
) -> (u8, Arc<AtomicBool>) {
    let partition = keeper.partition;
    let going = || switch.on.load(Ordering::Relaxed) && !reader.stopping();
    let keeping = !keeper.every.is_zero();
    if keeping && !keeper.restore(going).await {
        return (partition, switch.on);
    }
    // Held (in the fleet view's states) only once its checkpoint is in
    // its books: a state holding it before, at the lease's newer
    // revision, would stand for the previous owner's books with none.
    keeper.counts.hold(partition, epoch);
    let mut consumer = None;
    let mut lag_read: Option<Instant> = None;
    while going() {
        let Some(consumer) = consumer.as_ref() else {
            match partition_consumer(reader, js, partition).await {
                Ok(made) => consumer = Some(made),
                Err(error) => {
                    errors.failed(&errors.counts.consumer_errors, partition, "consumer", &error);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            continue;
        };
        if lag_read.is_none_or(|at| at.elapsed() >= LAG_EVERY) {
            lag_read = Some(Instant::now());
            read_lag(reader, consumer, &mut keeper, errors).await;
        }
        let mut messages = pull(consumer, partition, errors).await;
        switch.caught_up.store(messages.is_empty(), Ordering::Relaxed);
        if !messages.is_empty() && !switch.still_owned(going).await {
            errors.dropped(partition, messages.len());
            messages.clear();
        }
        let (received, last) = reader.take_into(keeper.books, &mut messages).await;
        keeper.booked(received, last);
        keeper.tick().await;
    }
    if keeping {
        keeper.finish().await;
    }
    let lag = errors.counts.lag_of(partition, None);
    store_lag(reader, lag);
    (partition, switch.on)
}

/// A batch of the partition's consumer; none if the pull failed (said,
/// and a pause before the next).
async fn pull(
    consumer: &jetstream::consumer::Consumer<pull::Config>,
    partition: u8,
    errors: &Errors<'_>,
) -> Vec<Message> {
    let pulled = consumer.batch().max_messages(BATCH).expires(EXPIRES).messages().await;
    let mut batch = match pulled {
        Ok(batch) => batch,
        Err(error) => {
            errors.failed(&errors.counts.pull_errors, partition, "pull", &error);
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Vec::new();
        }
    };
    let mut messages: Vec<Message> = Vec::with_capacity(BATCH);
    while let Some(message) = batch.next().await {
        match message {
            Ok(message) => messages.push(message),
            Err(error) => {
                errors.failed(&errors.counts.pull_errors, partition, "pull", &error);
                break;
            }
        }
    }
    messages
}

/// The partition's lag as its consumer tells, into the partitions' and
/// the consumer's counts (summed over the partitions owned).
async fn read_lag(
    reader: &Reader<'_>,
    consumer: &jetstream::consumer::Consumer<pull::Config>,
    keeper: &mut Keeper<'_>,
    errors: &Errors<'_>,
) {
    let partition = keeper.partition;
    match consumer.get_info().await {
        Ok(info) => {
            keeper.acknowledged(info.ack_floor.consumer_sequence);
            let lag = Lag { pending: info.num_pending, ack_pending: info.num_ack_pending as u64 };
            store_lag(reader, errors.counts.lag_of(partition, Some(lag)));
        }
        Err(error) => errors.failed(&errors.counts.consumer_errors, partition, "consumer", &error),
    }
}

/// The owned partitions' lag, summed, as the consumer's
/// (`summary.nats_consumer.pending`).
fn store_lag(reader: &Reader<'_>, sum: Lag) {
    reader.counts.pending.store(sum.pending, Ordering::Relaxed);
    reader.counts.ack_pending.store(sum.ack_pending, Ordering::Relaxed);
}

/// The partitions' lag said in the log when there is one, at most every
/// [`SAY_LAG_EVERY`], with the partition furthest behind.
fn say_lag(name: &str, counts: &lease::Counts, said: &mut Option<Instant>) {
    let Some((partition, most)) = counts.most_behind() else { return };
    if most <= BATCH as u64 || said.is_some_and(|at| at.elapsed() < SAY_LAG_EVERY) {
        return;
    }
    let sum = counts.lag_of_all();
    log::warn!(
        "collect: consumer {name}'s partitions are {} messages behind the stream ({} awaiting acknowledgement; the most, partition {partition}: {most})",
        sum.pending,
        sum.ack_pending
    );
    *said = Some(Instant::now());
}

/// The partition's durable consumer, made if missing.
async fn partition_consumer(
    reader: &Reader<'_>,
    js: &jetstream::Context,
    partition: u8,
) -> Result<jetstream::consumer::Consumer<pull::Config>, Failure> {
    let settings = reader.settings;
    let stream = js.get_stream(&settings.stream).await?;
    let name = format!("{}-{}", reader.name, partition::token(partition));
    let config = durable(&name, format!("{}.{}.>", settings.prefix, partition::token(partition)));
    Ok(stream.get_or_create_consumer(&name, config).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error counted; a cause said once, whichever partition it
    /// hits; past [`SAID_AT_MOST`] causes, counted only.
    #[test]
    fn errors_counted_each_cause_said_once() {
        let counts = lease::Counts::default();
        let errors = Errors { counts: &counts, said: Mutex::new(HashSet::new()) };
        for partition in 0..16 {
            errors.failed(&counts.consumer_errors, partition, "consumer", &"stream not found");
        }
        errors.failed(&counts.pull_errors, 2, "pull", &"stream not found");
        assert_eq!(counts.consumer_errors.load(Ordering::Relaxed), 16);
        assert_eq!(counts.pull_errors.load(Ordering::Relaxed), 1);
        assert_eq!(errors.said.lock().unwrap().len(), 2, "one cause a kind");
        for n in 0..100 {
            errors.failed(&counts.pull_errors, 2, "pull", &format!("inbox {n}"));
        }
        assert_eq!(errors.said.lock().unwrap().len(), SAID_AT_MOST);
        assert_eq!(counts.pull_errors.load(Ordering::Relaxed), 101);
    }

    /// A batch in hand under a lease gone stale waits for its renewal
    /// (booked then), and is given up if the reader is switched off first
    /// (the lease lost); a fresh lease lets it through at once.
    #[test]
    fn a_batch_waits_for_a_stale_lease_to_be_renewed_or_lost() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let past = Instant::now().checked_sub(Duration::from_millis(10)).unwrap();
        let fresh = Switch::new(Some(Instant::now() + Duration::from_secs(60)));
        assert!(runtime.block_on(fresh.still_owned(|| true)));
        let lost = Switch::new(Some(past));
        assert!(!runtime.block_on(lost.still_owned(|| false)), "switched off: given up");
        let renewed = Switch::new(Some(past));
        let renewing = renewed.clone();
        let owned = runtime.block_on(async {
            let renewal = async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                *renewing.fresh_until.lock().unwrap() = Some(Instant::now() + Duration::from_secs(60));
                true
            };
            let (owned, _) = futures_util::future::join(renewed.still_owned(|| true), renewal).await;
            owned
        });
        assert!(owned, "renewed meanwhile: booked");
        let counts = lease::Counts::default();
        let errors = Errors { counts: &counts, said: Mutex::new(HashSet::new()) };
        errors.dropped(4, 9);
        errors.dropped(5, 7);
        assert_eq!(counts.dropped.load(Ordering::Relaxed), 16);
        assert_eq!(errors.said.lock().unwrap().len(), 1, "said once");
    }
}
