//! `collect --nats URL`: the receivers' reports published to the stream.
//!
//! The receivers never wait on the server. In the batch format each
//! receiver appends its datagrams to a chunk of its own ([`Feed`]) and hands
//! a full chunk (or one [`HAND_OVER`] old) to a bounded queue; in the JSON
//! format each record is queued. A full queue drops what it is handed,
//! counted. One thread publishes: it splits chunks into one message per
//! subject (`PREFIX.batch.KIND.NODE`), keeps up to [`WINDOW`] publishes
//! awaiting the stream's acknowledgement, and sends again, with the same
//! `Nats-Msg-Id`, a publish whose acknowledgement did not come: the stream
//! stores it once. async-nats reconnects, to any server of a cluster.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, context::PublishErrorKind};
use async_nats::HeaderMap;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;

use super::Running;
use crate::collect::books::datagram::{Came, Taken};
use crate::collect::books::export::{Datagrams, Exporter};
use crate::collect::counts::{counter, counter_family, counts_of, Counted};
use crate::collect::nats::batch::{self, Entry, Subject};
use crate::collect::nats::partition;
use crate::collect::nats::{Format, Settings, StreamError, SCHEMA};

/// Publishes awaiting their acknowledgement at most: 32 MiB of messages.
const WINDOW: usize = 128;
/// A message's size the publisher aims at (NATS's default max_payload is
/// 1 MiB). What a message costs the collector (a hand-over, a wake-up of
/// the publisher, a publish, its acknowledgement) is paid per message, not
/// per byte: 256 KiB pays it a quarter as often as 64 KiB did
/// (bench/README.md, issue 62), and the server takes the same bytes a
/// second either way.
const MESSAGE: usize = 256 << 10;
/// How long a receiver's chunk or an open message waits at most.
const HAND_OVER: Duration = Duration::from_millis(20);
/// How long an acknowledgement may take before the publish is sent again.
const ACK_WAIT: Duration = Duration::from_secs(2);
/// How long a refused publish waits before it is sent again.
const RETRY: Duration = Duration::from_millis(200);
/// How long the publisher waits for an absent server once collect stops.
const PATIENCE: Duration = Duration::from_secs(5);
/// Subjects with a message open at most; beyond, all are sent.
const MAX_OPEN: usize = 4096;
/// A chunk's or a message's buffer: a whole message, and room for the
/// entry that fills it past [`MESSAGE`] (a datagram is at most 64 KiB).
const ROOM: usize = MESSAGE + batch::HEADER + 65_536;
/// Buffers the pool keeps at most (the rest are freed): the window's
/// worth would be 32 MiB; this is enough to cover what is in flight at
/// the collector's rate, not an outage's.
const POOLED: usize = 32;

/// What the publisher did, shared with the summary: datagrams in the
/// batch format (each a batch entry), records in the JSON one.
#[derive(Debug)]
pub struct Counts {
    format: Format,
    /// Datagrams (records) the stream acknowledged.
    pub acked: AtomicU64,
    /// Messages the stream acknowledged.
    pub messages: AtomicU64,
    /// Datagrams (records) the full queue refused (the server slow or
    /// away).
    pub dropped: AtomicU64,
    /// Publishes sent again (no acknowledgement in time, or an error).
    pub resent: AtomicU64,
    /// Acknowledgements that were errors (the stream full with `discard:
    /// new`, no stream leader yet): the message is sent again.
    pub refused: AtomicU64,
    pub reconnects: AtomicU64,
    /// Datagrams (records) never acknowledged: the server away when
    /// collect stopped.
    pub lost: AtomicU64,
}

impl Counts {
    fn new(format: Format) -> Counts {
        Counts {
            format,
            acked: AtomicU64::new(0),
            messages: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            resent: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        }
    }
}

/// Buffers of [`ROOM`] bytes, taken by the receivers for their chunks and
/// by the publisher for its messages, given back once their bytes went
/// out (a chunk split, a message acknowledged): no fresh 128 KiB buffer
/// (and its page faults) per hand-over. Locked once per chunk or message
/// (some hundreds of datagrams), never per datagram.
#[derive(Default)]
pub struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// An empty buffer of [`ROOM`] bytes: a pooled one, else new.
    fn take(&self) -> Vec<u8> {
        let pooled = self.0.lock().ok().and_then(|mut buffers| buffers.pop());
        pooled.unwrap_or_else(|| Vec::with_capacity(ROOM))
    }

    /// A buffer back, emptied; beyond [`POOLED`] it is freed.
    fn give(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() < ROOM {
            return;
        }
        buffer.clear();
        if let Ok(mut buffers) = self.0.lock() {
            if buffers.len() < POOLED {
                buffers.push(buffer);
            }
        }
    }

    /// A sent message's payload back, if nothing else holds it (the
    /// client dropped its copy once written).
    fn give_payload(&self, payload: bytes::Bytes) {
        if let Ok(buffer) = payload.try_into_mut() {
            self.give(buffer.into());
        }
    }
}

/// What a receiver hands the publisher.
enum Item {
    /// Batch entries, how many, and their subject if they share one.
    Chunk(Vec<u8>, u64, Option<Subject>),
    /// A JSON record and its subject.
    Record(String, Vec<u8>),
}

/// A receiver's end of the batch format: its datagrams gathered into a
/// chunk, handed over full or [`HAND_OVER`] old.
pub struct Feed {
    chunk: Vec<u8>,
    entries: u64,
    /// The subject of every entry so far, while they share one: the
    /// publisher then sends the chunk as it is, without reading it.
    subject: Option<Subject>,
    since: Instant,
    queue: mpsc::Sender<Item>,
    counts: Arc<Counts>,
    pool: Arc<Pool>,
    /// The stream's partitions, if it has them: each entry is marked with
    /// its flow's.
    partitions: Option<u16>,
}

impl Datagrams for Feed {
    /// One datagram as it came and what it was; no allocation (the chunk
    /// has room for a whole message).
    fn push(&mut self, came: &Came<'_>, taken: &Taken) {
        if self.entries == 0 {
            self.since = Instant::now();
        }
        let entry = Entry {
            at_ns: came.at_ns,
            from: came.from,
            accounting: taken.accounting,
            truncated: came.truncated,
            kind: taken.kind,
            node: taken.node,
            datagram: came.payload,
        };
        let at = self.chunk.len();
        entry.write(&mut self.chunk);
        let mut subject = Subject { kind: taken.kind, node: taken.node, partition: 0 };
        if let Some(count) = self.partitions {
            subject.partition = partition::of(taken.flow.as_ref(), taken.node, count);
            batch::mark_partition(&mut self.chunk, at, subject.partition);
        }
        if self.entries == 0 {
            self.subject = Some(subject);
        } else if self.subject != Some(subject) {
            self.subject = None;
        }
        self.entries += 1;
        if self.chunk.len() >= MESSAGE {
            self.hand_over();
        }
    }

    fn hand_over_if_due(&mut self) {
        if self.entries > 0 && self.since.elapsed() >= HAND_OVER {
            self.hand_over();
        }
    }

    /// The chunk to the publisher; a full queue drops it, counted.
    fn hand_over(&mut self) {
        if self.entries == 0 {
            return;
        }
        let chunk = std::mem::replace(&mut self.chunk, self.pool.take());
        let entries = std::mem::take(&mut self.entries);
        let subject = self.subject.take();
        if let Err(refused) = self.queue.try_send(Item::Chunk(chunk, entries, subject)) {
            self.counts.dropped.fetch_add(entries, Ordering::Relaxed);
            if let Item::Chunk(chunk, ..) = refused.into_inner() {
                self.pool.give(chunk);
            }
        }
    }
}

/// Makes each receiver's [`Feed`]; dropped once they are made, so that the
/// publisher ends when the last feed does.
pub struct Feeder {
    queue: mpsc::Sender<Item>,
    counts: Arc<Counts>,
    pool: Arc<Pool>,
    partitions: Option<u16>,
}

impl Feeder {
    pub fn feed(&self) -> Feed {
        Feed {
            chunk: self.pool.take(),
            entries: 0,
            subject: None,
            since: Instant::now(),
            queue: self.queue.clone(),
            counts: Arc::clone(&self.counts),
            pool: Arc::clone(&self.pool),
            partitions: self.partitions,
        }
    }
}

/// The receivers' end of the JSON format: every record collect prints.
pub struct Records {
    queue: mpsc::Sender<Item>,
    counts: Arc<Counts>,
    prefix: String,
}

impl Exporter for Records {
    fn wants_records(&self) -> bool {
        true
    }

    /// Hands a record over; never waits.
    fn record(&self, record: &crate::records::Record) {
        let (kind, node) = (record.kind().as_str(), record.node().unwrap_or(0));
        let subject = format!("{}.{kind}.{node}", self.prefix);
        let Ok(bytes) = serde_json::to_vec(record) else { return };
        if self.queue.try_send(Item::Record(subject, bytes)).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The batch format's output: the feeds carry the reports, so it takes
/// nothing itself.
struct Batches;

impl Exporter for Batches {}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        match self.format {
            Format::Batch => ("nats", "NATS datagrams"),
            Format::Json => ("nats", "NATS records"),
        }
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, acked, dropped, lost, messages, resent, refused, reconnects)
    }

    fn metrics(&self, out: &mut String) {
        let outcomes = self.outcomes(&["acked", "dropped", "lost"]);
        counter_family(
            out,
            "int_collect_nats_records_total",
            "Datagrams (batch format) or records (JSON) for the NATS stream by outcome.",
            outcomes,
        );
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        let families = [
            ("int_collect_nats_messages_total", "Messages the stream acknowledged.", get(&self.messages)),
            (
                "int_collect_nats_resends_total",
                "Publishes sent again (no acknowledgement in time).",
                get(&self.resent),
            ),
            (
                "int_collect_nats_refusals_total",
                "Publishes the stream answered with an error (full, or no leader yet).",
                get(&self.refused),
            ),
            (
                "int_collect_nats_reconnects_total",
                "Connections to a server made again.",
                get(&self.reconnects),
            ),
        ];
        for (name, help, value) in families {
            counter(out, name, help, value);
        }
    }
}

/// Connects, creates the stream or checks it is there (refusing a server
/// without JetStream), then starts the publisher. The batch format's
/// receivers take their feeds from the [`Feeder`].
pub fn start(settings: Settings) -> Result<(Running, Option<Feeder>), StreamError> {
    let runtime = crate::collect::nats::runtime().map_err(|source| StreamError::Runtime { source })?;
    let (client, js) = runtime.block_on(async {
        let client = crate::collect::nats::connect(&settings.servers, "int-tools collect").await?;
        // The context's acknowledgement task runs on this runtime.
        let js = jetstream::ContextBuilder::new()
            .timeout(ACK_WAIT)
            .max_ack_inflight(WINDOW * 2)
            .build(client.clone());
        crate::collect::nats::ensure_stream(&js, &settings).await?;
        Ok::<_, StreamError>((client, js))
    })?;
    let format = settings.format;
    let counts = Arc::new(Counts::new(format));
    // The queue in items: a chunk holds about MESSAGE bytes of datagrams
    // (some 1,000 to 2,400 of them).
    let room = match format {
        Format::Json => settings.buffer,
        Format::Batch => settings.buffer / 1024,
    };
    let (queue, items) = mpsc::channel(room.max(1));
    let pool = Arc::new(Pool::default());
    let (output, feeder): (Arc<dyn Exporter>, _) = match format {
        Format::Json => {
            let records = Records { queue, counts: Arc::clone(&counts), prefix: settings.prefix.clone() };
            (Arc::new(records), None)
        }
        Format::Batch => {
            let (counts, pool) = (Arc::clone(&counts), Arc::clone(&pool));
            let feeder = Feeder { queue, counts, pool, partitions: settings.partitions };
            (Arc::new(Batches), Some(feeder))
        }
    };
    let publisher = Publisher::new(js, client, settings, Arc::clone(&counts), pool);
    let thread = std::thread::spawn(move || runtime.block_on(publisher.run(items)));
    Ok((Running { exporter: output, counted: counts, thread }, feeder))
}

/// A message on its way: its subject, payload, and the datagrams (or
/// records) it holds.
#[derive(Clone)]
struct Message {
    subject: String,
    payload: bytes::Bytes,
    items: u64,
    json: bool,
}

/// A subject's message being filled.
struct Open {
    payload: Vec<u8>,
    items: u64,
}

type Ack = Pin<Box<dyn std::future::Future<Output = (u64, Result<(), Refusal>)> + Send>>;

/// Why a publish was not acknowledged.
enum Refusal {
    /// No answer in time: the server away, or slow.
    Silent,
    /// The stream's answer was an error.
    Said(String),
}

/// The publishing thread's state.
struct Publisher {
    js: jetstream::Context,
    client: async_nats::Client,
    settings: Settings,
    counts: Arc<Counts>,
    pool: Arc<Pool>,
    open: HashMap<Subject, Open>,
    /// Messages awaiting their acknowledgement, by id.
    in_flight: HashMap<u64, Message>,
    acks: FuturesUnordered<Ack>,
    next_id: u64,
    /// This run's id prefix: `Nats-Msg-Id` is `RUN-N`.
    run: String,
    /// The last refusal said, to say each once.
    last_refusal: String,
}

impl Publisher {
    fn new(
        js: jetstream::Context,
        client: async_nats::Client,
        settings: Settings,
        counts: Arc<Counts>,
        pool: Arc<Pool>,
    ) -> Publisher {
        let run = format!("{:x}-{:x}", std::process::id(), crate::schema::now_ns());
        Publisher {
            js,
            client,
            settings,
            counts,
            pool,
            open: HashMap::new(),
            in_flight: HashMap::new(),
            acks: FuturesUnordered::new(),
            next_id: 0,
            run,
            last_refusal: String::new(),
        }
    }

    /// Until the receivers are gone and every message is acknowledged, or
    /// for [`PATIENCE`] after that (the server away, or refusing): what is
    /// still unacknowledged then is counted lost.
    async fn run(mut self, mut items: mpsc::Receiver<Item>) {
        let mut tick = tokio::time::interval(HAND_OVER);
        let mut ended: Option<Instant> = None;
        while !(ended.is_some() && self.in_flight.is_empty()) {
            if ended.is_some_and(|at| at.elapsed() > PATIENCE) {
                break;
            }
            // While the server is away the queue is not read: what waits
            // for it is bounded by the queue (--nats-buffer) and the window.
            let connected = self.client.connection_state() == async_nats::connection::State::Connected;
            let room = ended.is_none() && connected && self.in_flight.len() < WINDOW;
            tokio::select! {
                item = items.recv(), if room => match item {
                    Some(item) => self.take(item),
                    None => {
                        self.send_open();
                        ended = Some(Instant::now());
                    }
                },
                Some((id, result)) = self.acks.next(), if !self.acks.is_empty() => self.acknowledged(id, result),
                _ = tick.tick() => {
                    self.send_open();
                    let connects = self.client.statistics().connects.load(Ordering::Relaxed);
                    self.counts.reconnects.store(connects.saturating_sub(1), Ordering::Relaxed);
                    // The receivers gone while the queue is not read: the
                    // end is told by the queue's closing, not its last item.
                    if ended.is_none() && !connected && items.is_closed() {
                        ended = Some(Instant::now());
                    }
                }
            }
        }
        items.close();
        let mut lost: u64 = self.in_flight.values().map(|m| m.items).sum();
        while let Ok(item) = items.try_recv() {
            lost += match item {
                Item::Chunk(_, entries, _) => entries,
                Item::Record(..) => 1,
            };
        }
        self.counts.lost.fetch_add(lost, Ordering::Relaxed);
    }

    /// A receiver's chunk split by subject, or a record sent.
    fn take(&mut self, item: Item) {
        match item {
            Item::Record(subject, json) => {
                let message = Message { subject, payload: json.into(), items: 1, json: true };
                self.send(message, Duration::ZERO);
            }
            Item::Chunk(chunk, entries, subject) => self.split(chunk, entries, subject),
        }
    }

    /// A receiver's chunk into its subjects' messages. A chunk of one
    /// subject (one reporting node: the common case; its feed says so),
    /// half a message or more, is a message as it is, after what its
    /// subject had open: no copy, not even a read. Any other is copied
    /// entry by entry, as written.
    fn split(&mut self, chunk: Vec<u8>, entries: u64, subject: Option<Subject>) {
        if let Some(subject) = subject.filter(|_| chunk.len() >= MESSAGE / 2) {
            if let Some(open) = self.open.remove(&subject) {
                self.send_full(subject, open);
            }
            self.send_full(subject, Open { payload: chunk, items: entries });
            return;
        }
        for (subject, span) in batch::spans(&chunk) {
            self.add(subject, span);
        }
        self.pool.give(chunk);
    }

    /// An entry's bytes into its subject's message; a full message is
    /// sent.
    fn add(&mut self, subject: Subject, span: &[u8]) {
        if self.open.len() >= MAX_OPEN && !self.open.contains_key(&subject) {
            self.send_open();
        }
        let pool = &self.pool;
        let open = self.open.entry(subject).or_insert_with(|| Open { payload: pool.take(), items: 0 });
        open.payload.extend_from_slice(span);
        open.items += 1;
        if open.payload.len() >= MESSAGE {
            let full = Open { payload: self.pool.take(), items: 0 };
            let full = std::mem::replace(open, full);
            self.send_full(subject, full);
        }
    }

    /// A subject's message, sent as it is (its entries' partition marks
    /// cleared: in the stream, the subject says the partition).
    fn send_full(&mut self, subject: Subject, mut open: Open) {
        if self.settings.partitions.is_some() {
            batch::clear_partitions(&mut open.payload);
        }
        let subject = self.subject(subject);
        let message = Message { subject, payload: open.payload.into(), items: open.items, json: false };
        self.send(message, Duration::ZERO);
    }

    /// `PREFIX.batch.KIND.NODE`, or in a partitioned stream
    /// `PREFIX.p<k>.KIND.NODE`.
    fn subject(&self, Subject { kind, node, partition }: Subject) -> String {
        let prefix = &self.settings.prefix;
        match self.settings.partitions {
            Some(_) => format!("{prefix}.{}.{}.{node}", partition::token(partition), kind.word()),
            None => format!("{prefix}.batch.{}.{node}", kind.word()),
        }
    }

    /// Every subject's open message, sent.
    fn send_open(&mut self) {
        for (subject, open) in std::mem::take(&mut self.open) {
            if open.items > 0 {
                self.send_full(subject, open);
            } else {
                self.pool.give(open.payload);
            }
        }
    }

    /// A message under a new id.
    fn send(&mut self, message: Message, delay: Duration) {
        let id = self.next_id;
        self.next_id += 1;
        self.publish(id, &message, delay);
        self.in_flight.insert(id, message);
    }

    /// The publish and its acknowledgement, as one future: after `delay`.
    fn publish(&self, id: u64, message: &Message, delay: Duration) {
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("{}-{id}", self.run).as_str());
        if message.json {
            headers.insert("Int-Schema", SCHEMA);
        } else {
            headers.insert("Int-Format", batch::FORMAT);
        }
        let (js, message) = (self.js.clone(), message.clone());
        self.acks.push(Box::pin(async move {
            tokio::time::sleep(delay).await;
            let publish =
                jetstream::message::PublishMessage::build().payload(message.payload).headers(headers);
            let result = match js.send_publish(message.subject, publish).await {
                Ok(ack) => ack.await.map(|_| ()).map_err(|e| refusal(e.kind(), &e)),
                Err(e) => Err(refusal(e.kind(), &e)),
            };
            (id, result)
        }));
    }

    /// An acknowledgement: its message is in the stream; or not, and it
    /// is sent again (after a pause where the stream said why).
    fn acknowledged(&mut self, id: u64, result: Result<(), Refusal>) {
        match result {
            Ok(()) => {
                let Some(message) = self.in_flight.remove(&id) else { return };
                self.counts.acked.fetch_add(message.items, Ordering::Relaxed);
                self.counts.messages.fetch_add(1, Ordering::Relaxed);
                if !message.json {
                    self.pool.give_payload(message.payload);
                }
            }
            Err(refusal) => {
                let Some(message) = self.in_flight.get(&id).cloned() else { return };
                self.counts.resent.fetch_add(1, Ordering::Relaxed);
                let delay = match refusal {
                    Refusal::Silent => Duration::ZERO,
                    Refusal::Said(text) => {
                        self.counts.refused.fetch_add(1, Ordering::Relaxed);
                        self.say(text);
                        RETRY
                    }
                };
                self.publish(id, &message, delay);
            }
        }
    }

    /// Says a refusal once, until a different one comes.
    fn say(&mut self, text: String) {
        if text != self.last_refusal {
            log::warn!(
                "collect: NATS stream {} refused a publish: {text} (it is sent again; see the server's log)",
                self.settings.stream
            );
            self.last_refusal = text;
        }
    }
}

/// A publish's failure: silence (a timeout) or what the server said.
fn refusal(kind: PublishErrorKind, error: &dyn std::fmt::Display) -> Refusal {
    match kind {
        PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe => Refusal::Silent,
        _ => Refusal::Said(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::datagram::Kind;
    use crate::collect::books::sender::Accounting;
    use crate::collect::counts::{counts_json, counts_text};

    /// A feed's chunks come back through the pool: once the publisher
    /// gives a chunk back, a later hand-over's buffer is that one, not a
    /// fresh one; a sent message's payload comes back the same way.
    #[test]
    fn chunks_and_payloads_given_back_are_taken_again() {
        let (queue, mut items) = mpsc::channel(8);
        let pool = Arc::new(Pool::default());
        let counts = Arc::new(Counts::new(Format::Batch));
        let feeder = Feeder { queue, counts, pool: Arc::clone(&pool), partitions: None };
        let mut feed = feeder.feed();
        let payload = [7u8; 100];
        let came =
            Came { payload: &payload, from: "192.0.2.1:9".parse().unwrap(), truncated: false, at_ns: 1 };
        let taken =
            Taken { reports: 1, accounting: Accounting::default(), kind: Kind::Latency, node: 2, flow: None };
        let mut handed = || {
            feed.push(&came, &taken);
            feed.hand_over();
            match items.try_recv() {
                Ok(Item::Chunk(chunk, 1, Some(_))) => chunk,
                _ => panic!("a chunk of one entry"),
            }
        };
        let first = handed();
        assert_eq!(first.len(), batch::HEADER + payload.len());
        let address = first.as_ptr();
        pool.give(first);
        // The feed's chunk in hand was new; the one after it is the first.
        let second = handed();
        assert_ne!(second.as_ptr(), address);
        let third = handed();
        assert_eq!((third.as_ptr(), third.len()), (address, batch::HEADER + payload.len()));
        let message = bytes::Bytes::from(third);
        let held = message.clone();
        pool.give_payload(message);
        let fresh = pool.take();
        assert_ne!(fresh.as_ptr(), address, "a payload still held elsewhere is not taken back");
        pool.give_payload(held);
        let again = pool.take();
        assert_eq!((again.as_ptr(), again.len()), (address, 0));
        assert!(again.capacity() >= ROOM);
    }

    /// A feed says its chunk's subject while every entry shares one, as
    /// the chunk's own entries read (`batch::spans`), partition included;
    /// a chunk of two subjects says none, and the publisher splits it.
    #[test]
    fn a_chunk_says_its_subject_while_its_entries_share_one() {
        let (queue, mut items) = mpsc::channel(8);
        let counts = Arc::new(Counts::new(Format::Batch));
        let feeder = Feeder { queue, counts, pool: Arc::new(Pool::default()), partitions: Some(16) };
        let mut feed = feeder.feed();
        let payload = [7u8; 60];
        let came =
            Came { payload: &payload, from: "192.0.2.1:9".parse().unwrap(), truncated: false, at_ns: 1 };
        let taken = |node| Taken {
            reports: 1,
            accounting: Accounting::default(),
            kind: Kind::Latency,
            node,
            flow: None,
        };
        let mut handed = |nodes: &[u32]| {
            for node in nodes {
                feed.push(&came, &taken(*node));
            }
            feed.hand_over();
            match items.try_recv() {
                Ok(Item::Chunk(chunk, entries, subject)) => {
                    assert_eq!(entries, nodes.len() as u64);
                    let read: Vec<Subject> = batch::spans(&chunk).map(|(subject, _)| subject).collect();
                    (read, subject)
                }
                _ => panic!("a chunk"),
            }
        };
        let (read, said) = handed(&[5, 5, 5]);
        assert_eq!(read.len(), 3);
        assert!(read.iter().all(|subject| Some(*subject) == said), "{read:?} {said:?}");
        assert_eq!(said.map(|s| (s.kind, s.node)), Some((Kind::Latency, 5)));
        // Node 6's entries after node 5's: the chunk has two subjects.
        let (read, said) = handed(&[5, 6, 6]);
        assert_ne!(read[0], read[1]);
        assert_eq!(said, None);
        // The next chunk starts afresh.
        let (_, said) = handed(&[6]);
        assert_eq!(said.map(|s| s.node), Some(6));
    }

    /// The publisher's counts as the summary, the text summary and the
    /// Prometheus page show them.
    #[test]
    fn counts_in_the_summary_and_on_the_page() {
        let counts = Counts::new(Format::Batch);
        counts.acked.store(7, Ordering::Relaxed);
        counts.messages.store(2, Ordering::Relaxed);
        counts.dropped.store(2, Ordering::Relaxed);
        counts.reconnects.store(1, Ordering::Relaxed);
        counts.refused.store(3, Ordering::Relaxed);
        let counted: Vec<Arc<dyn Counted>> = vec![Arc::new(counts)];
        let (key, value) = counts_json(&counted).remove(0);
        assert_eq!(key, "nats");
        assert_eq!(
            value,
            serde_json::json!({"acked": 7, "dropped": 2, "lost": 0, "messages": 2, "resent": 0, "refused": 3,
                               "reconnects": 1})
        );
        assert_eq!(
            counts_text(&counted),
            ["NATS datagrams: 7 acked, 2 dropped, 0 lost, 2 messages, 0 resent, 3 refused, 1 reconnects"]
        );
        let mut page = String::new();
        counted[0].metrics(&mut page);
        for line in [
            "# TYPE int_collect_nats_records_total counter",
            "int_collect_nats_records_total{outcome=\"acked\"} 7",
            "int_collect_nats_records_total{outcome=\"dropped\"} 2",
            "int_collect_nats_records_total{outcome=\"lost\"} 0",
            "int_collect_nats_messages_total 2",
            "int_collect_nats_resends_total 0",
            "int_collect_nats_refusals_total 3",
            "int_collect_nats_reconnects_total 1",
        ] {
            assert!(page.lines().any(|l| l == line), "{line} in\n{page}");
        }
    }
}
