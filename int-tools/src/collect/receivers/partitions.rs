//! `collect --from-nats URL --nats-partitions P --partitions auto`: an
//! aggregator over some of a partitioned stream's partitions. Which ones
//! its leases say (`crate::collect::nats::lease`); each owned partition is
//! read with a durable consumer of its own (`CONSUMER-p<k>`, filtered on
//! `PREFIX.p<k>.>`), shared by whichever aggregator owns it: a partition
//! that moves is read on from its consumer's acknowledged position. Each
//! message is acknowledged, confirmed, then booked, as by one consumer
//! (`super::nats`). A partition given up or lost is stopped between two
//! batches: the batch in hand is booked, none is left half read.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, kv, Message};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use super::nats::{durable, Reader, BATCH, EXPIRES};
use super::How;
use crate::collect::nats::lease::{self, Leases};
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
}

/// Why the leases' bucket or a partition's consumer is not there yet
/// (tried again until collect stops).
#[derive(Debug, thiserror::Error)]
enum AttachError {
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("the leases' bucket {bucket}: {source}")]
    Bucket { bucket: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("partition {partition}'s consumer: {source}")]
    Consumer { partition: u8, source: Box<dyn std::error::Error + Send + Sync> },
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

/// A partition reader's switch (on while it is to read) and whether its
/// last pull found the partition read to its end.
#[derive(Clone)]
struct Switch {
    on: Arc<AtomicBool>,
    caught_up: Arc<AtomicBool>,
}

/// Reads the partitions this aggregator's leases give it until collect
/// stops, then gives its leases up for the others.
async fn run(reader: &Reader<'_>, leasing: &Leasing) -> Result<(), StreamError> {
    let Some((js, store)) = attach(reader).await else { return Ok(()) };
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
    let mut reading: FuturesUnordered<Reading<'_>> = FuturesUnordered::new();
    let mut switches: std::collections::HashMap<u8, Switch> = std::collections::HashMap::new();
    while !reader.stopping() {
        tokio::select! {
            _ = tick.tick() => {
                let changes = leases.tick(&store).await;
                for partition in changes.stop.iter().chain(&changes.release) {
                    if let Some(switch) = switches.get(partition) {
                        switch.on.store(false, Ordering::Relaxed);
                    }
                }
                for partition in changes.start {
                    let on = Arc::new(AtomicBool::new(true));
                    let switch = Switch { on, caught_up: Arc::new(AtomicBool::new(false)) };
                    switches.insert(partition, switch.clone());
                    reading.push(Box::pin(read(reader, &js, partition, switch)));
                }
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
    while reading.next().await.is_some() {}
    leases.release_all(&store).await;
    Ok(())
}

/// The next change of the bucket, if it is watched.
async fn next(watch: &mut Option<kv::Watch>) -> Option<Result<kv::Entry, kv::WatcherError>> {
    match watch {
        Some(watch) => watch.next().await,
        None => std::future::pending().await,
    }
}

/// A client, the stream and the leases' bucket, once a server answers;
/// `None` if collect stops first.
async fn attach(reader: &Reader<'_>) -> Option<(jetstream::Context, kv::Store)> {
    reader.until_open(|| open(reader)).await
}

async fn open(reader: &Reader<'_>) -> Result<(jetstream::Context, kv::Store), AttachError> {
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
    js.get_or_create_stream(config).await.map_err(|e| failed(Box::new(e)))?;
    let store = js.get_key_value(&bucket).await.map_err(|e| failed(Box::new(e)))?;
    Ok((js, store))
}

/// One partition read while its switch is on: batches pulled from its
/// consumer, each acknowledged and booked whole.
async fn read(
    reader: &Reader<'_>,
    js: &jetstream::Context,
    partition: u8,
    switch: Switch,
) -> (u8, Arc<AtomicBool>) {
    let going = || switch.on.load(Ordering::Relaxed) && !reader.stopping();
    let mut consumer = None;
    while going() {
        let Some(consumer) = consumer.as_ref() else {
            consumer = partition_consumer(reader, js, partition).await.ok();
            if consumer.is_none() {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            continue;
        };
        let pulled = consumer.batch().max_messages(BATCH).expires(EXPIRES).messages().await;
        let Ok(mut batch) = pulled else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut messages: Vec<Message> = Vec::with_capacity(BATCH);
        while let Some(Ok(message)) = batch.next().await {
            messages.push(message);
        }
        switch.caught_up.store(messages.is_empty(), Ordering::Relaxed);
        reader.take(&messages).await;
    }
    (partition, switch.on)
}

/// The partition's durable consumer, made if missing.
async fn partition_consumer(
    reader: &Reader<'_>,
    js: &jetstream::Context,
    partition: u8,
) -> Result<jetstream::consumer::Consumer<pull::Config>, AttachError> {
    let settings = reader.settings;
    let failed =
        |source: Box<dyn std::error::Error + Send + Sync>| AttachError::Consumer { partition, source };
    let stream = js.get_stream(&settings.stream).await.map_err(|e| failed(Box::new(e)))?;
    let name = format!("{}-{}", reader.name, partition::token(partition));
    let config = durable(&name, format!("{}.{}.>", settings.prefix, partition::token(partition)));
    stream.get_or_create_consumer(&name, config).await.map_err(|e| failed(Box::new(e)))
}
