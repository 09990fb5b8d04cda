//! `collect --from-nats URL`: an aggregator. It reads the stream the
//! receiving collectors publish to with a durable pull consumer
//! (`--nats-consumer`): aggregators of one consumer name share the
//! messages, one with a name of its own reads them all. A batch's entries
//! go through the receiving collector's own reading
//! ([`super::udp::take`]) into the same books; JSON records
//! through [`super::records`].
//!
//! A message is acknowledged before it is booked, and booked only once
//! the stream confirmed the acknowledgement (a double ack): a confirmed
//! message is never delivered again, to this aggregator or another, and
//! one whose acknowledgement failed (a server lost) is not booked here and
//! comes again. So every report is booked once, while the aggregators run;
//! an aggregator that stops loses its books unless `--state` keeps them
//! (`crate::collect::state`): restarted under its name, it then goes on
//! from its consumer's position with the books it had.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull, Message};
use futures_util::future::join_all;
use futures_util::StreamExt;

use super::records::{take_record, Taken};
use super::udp::{self, Sequence};
use super::How;
use crate::collect::books::datagram::Came;
use crate::collect::books::Books;
use crate::collect::counts::{counter, counts_of, gauge, Counted};
use crate::collect::nats::{batch, Settings, StreamError};
use crate::collect::shared::Shared;

/// Messages asked for per pull request, and booked at once at most.
pub(super) const BATCH: usize = 16;
/// How long a pull request waits for messages.
pub(super) const EXPIRES: Duration = Duration::from_millis(500);
/// How long a delivered message may wait for its acknowledgement before
/// the stream delivers it again.
const ACK_WAIT: Duration = Duration::from_secs(10);
/// How long an acknowledgement's confirmation is awaited: nearly the
/// acknowledgement wait (the client's default is 5 s). A message whose
/// confirmation does not come is not booked and comes again after the
/// wait, behind the messages booked meanwhile: a flow's reports out of
/// their order (path changes counted twice over) and a packet's postcard
/// past its join window. A confirmation that is only slow (a cluster on
/// busy CPUs) is worth waiting for; not past the wait, when the stream
/// delivers the message again and a late confirmation would book it
/// twice.
const CONFIRM_WAIT: Duration = Duration::from_secs(9);
/// How often the consumer's lag is read.
pub(super) const LAG_EVERY: Duration = Duration::from_secs(1);
/// How often a lag is said in the log, at most.
pub(super) const SAY_LAG_EVERY: Duration = Duration::from_secs(10);

/// What the aggregator read, shared with the summary and the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    /// Messages acknowledged and booked.
    pub messages: AtomicU64,
    /// Messages whose acknowledgement was not confirmed within
    /// [`CONFIRM_WAIT`]: not booked, the stream delivers them again.
    pub unconfirmed: AtomicU64,
    /// Messages the stream delivered more than once (an acknowledgement
    /// lost or late).
    pub redelivered: AtomicU64,
    /// Messages in the stream this consumer has not been given yet: its
    /// lag, read every second.
    pub pending: AtomicU64,
    /// Messages given and not yet acknowledged.
    pub ack_pending: AtomicU64,
    /// The durable consumer is attached (for `/readyz`).
    pub attached: AtomicBool,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("nats_consumer", "NATS consumer")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, messages, unconfirmed, redelivered, pending, ack_pending)
    }

    fn metrics(&self, out: &mut String) {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_nats_consumer_messages_total",
            "Stream messages booked.",
            get(&self.messages),
        );
        counter(
            out,
            "int_collect_nats_consumer_unconfirmed_total",
            "Stream messages whose acknowledgement was not confirmed (delivered again, not booked).",
            get(&self.unconfirmed),
        );
        counter(
            out,
            "int_collect_nats_consumer_redelivered_total",
            "Stream messages delivered more than once.",
            get(&self.redelivered),
        );
        gauge(
            out,
            "int_collect_nats_consumer_pending",
            "Stream messages not yet given to this consumer: its lag.",
            get(&self.pending),
        );
        gauge(
            out,
            "int_collect_nats_consumer_ack_pending",
            "Stream messages given and not yet acknowledged.",
            get(&self.ack_pending),
        );
    }
}

/// The aggregator's thread.
pub fn spawn(
    settings: Settings,
    consumer: String,
    shared: &Arc<Shared>,
    how: &Arc<How>,
    counts: Arc<Counts>,
) -> std::thread::JoinHandle<Result<(), StreamError>> {
    let (shared, how) = (Arc::clone(shared), Arc::clone(how));
    std::thread::spawn(move || {
        let Some(books) = shared.books.first() else { return Ok(()) };
        let runtime = crate::collect::nats::runtime().map_err(|source| StreamError::Runtime { source })?;
        let reader =
            Reader { settings: &settings, name: &consumer, books, shared: &shared, how: &how, counts };
        runtime.block_on(reader.run())
    })
}

/// What the aggregator's thread works with.
pub(super) struct Reader<'a> {
    pub(super) settings: &'a Settings,
    pub(super) name: &'a str,
    books: &'a Mutex<Books>,
    shared: &'a Shared,
    how: &'a How,
    pub(super) counts: Arc<Counts>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(
        settings: &'a Settings,
        name: &'a str,
        books: &'a Mutex<Books>,
        shared: &'a Shared,
        how: &'a How,
        counts: Arc<Counts>,
    ) -> Reader<'a> {
        Reader { settings, name, books, shared, how, counts }
    }

    /// Reads the stream until collect stops; async-nats reconnects, to any
    /// server of a cluster, while one is away.
    async fn run(&self) -> Result<(), StreamError> {
        let Some(consumer) = self.consumer().await else { return Ok(()) };
        self.counts.attached.store(true, Ordering::Relaxed);
        let mut lag = Lag { read: Instant::now(), said: None };
        while !self.stopping() {
            // A pull kept open, BATCH messages a request: aggregators of one
            // consumer each hold requests, and the stream fills them in turn.
            let pulled = consumer.stream().max_messages_per_batch(BATCH).expires(EXPIRES).messages().await;
            let Ok(messages) = pulled else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let mut chunks = messages.ready_chunks(BATCH);
            while !self.stopping() {
                if lag.read.elapsed() >= LAG_EVERY {
                    lag.read(&consumer, &self.counts, self.name).await;
                }
                let chunk = match tokio::time::timeout(EXPIRES, chunks.next()).await {
                    Err(_) => continue,
                    Ok(None) => break,
                    Ok(Some(chunk)) => chunk,
                };
                // An error (a heartbeat missed, the consumer's leader
                // lost) ends this pull; a new one is made.
                let failed = chunk.iter().any(Result::is_err);
                let mut messages: Vec<Message> = chunk.into_iter().filter_map(Result::ok).collect();
                self.take(&mut messages).await;
                if failed {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The postcards' groups the collector's clock has passed, joined:
    /// called while every partition read is caught up (no message came),
    /// as a receiver does on a quiet socket. Not while any is behind: its
    /// groups' other postcards may still be in the stream.
    pub(super) fn close_passed_joins(&self) {
        let now_ms = crate::schema::now_ns() / 1_000_000;
        for books in &self.shared.books {
            if let Ok(mut books) = books.lock() {
                books.close_passed_joins(now_ms);
            }
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.shared.quit.load(Ordering::Relaxed)
    }

    /// The durable consumer, made if missing, once a server answers;
    /// `None` if collect stops first.
    async fn consumer(&self) -> Option<jetstream::consumer::Consumer<pull::Config>> {
        self.until_open(|| self.open()).await
    }

    /// What `open` gives once it succeeds, tried every 250 ms, each new
    /// failure said; `None` if collect stops first.
    pub(super) async fn until_open<T, E, F>(&self, open: impl Fn() -> F) -> Option<T>
    where
        E: std::fmt::Display,
        F: std::future::Future<Output = Result<T, E>>,
    {
        let mut said = String::new();
        while !self.stopping() {
            match open().await {
                Ok(opened) => return Some(opened),
                Err(error) if error.to_string() != said => {
                    said = error.to_string();
                    log::warn!("collect: --from-nats: {said} (trying again)");
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        None
    }

    async fn open(&self) -> Result<jetstream::consumer::Consumer<pull::Config>, StreamError> {
        let client =
            crate::collect::nats::connect(&self.settings.servers, "int-tools collect --from-nats").await?;
        let js = jetstream::new(client);
        let stream = crate::collect::nats::ensure_stream(&js, self.settings).await?;
        let config = durable(self.name, String::new());
        stream
            .get_or_create_consumer(self.name, config)
            .await
            .map_err(|source| StreamError::Consumer { name: self.name.to_string(), source })
    }

    /// Messages that arrived together: acknowledged (each confirmation
    /// awaited up to [`CONFIRM_WAIT`]), then those the stream confirmed
    /// booked, in order.
    pub(super) async fn take(&self, messages: &mut [Message]) {
        self.take_into(self.books, messages).await;
    }

    /// [`Reader::take`] into `books` (a partition's); what `books` then
    /// hold: the datagrams received, and the consumer sequence of the last
    /// message booked (0: none in this batch).
    pub(super) async fn take_into(&self, books: &Mutex<Books>, messages: &mut [Message]) -> (u64, u64) {
        for message in messages.iter_mut() {
            message.context.set_timeout(CONFIRM_WAIT);
        }
        let confirmed = join_all(messages.iter().map(Message::double_ack)).await;
        let Ok(mut books) = books.lock() else { return (0, 0) };
        books.ledger.tick();
        let (mut reports, mut last) = (0, 0);
        for (message, confirmed) in messages.iter().zip(confirmed) {
            if confirmed.is_err() {
                self.counts.unconfirmed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if let Ok(info) = message.info() {
                if info.delivered > 1 {
                    self.counts.redelivered.fetch_add(1, Ordering::Relaxed);
                }
                last = last.max(info.consumer_sequence);
            }
            self.counts.messages.fetch_add(1, Ordering::Relaxed);
            reports += book(message, &mut books, self.how);
        }
        self.shared.reports.fetch_add(reports, Ordering::Relaxed);
        (books.totals.received, last)
    }

    /// A partition's books: the aggregator over partitions keeps one set
    /// a partition, so that each can be checkpointed and taken whole.
    pub(super) fn books_of(&self, partition: u8) -> Option<&Mutex<Books>> {
        self.shared.books.get(usize::from(partition)).map(|books| &**books)
    }
}

/// A durable pull consumer `name` over the stream's messages (all of
/// them, or those of `filter`), each acknowledged one by one, delivered
/// again after [`ACK_WAIT`]; as many replicas as the stream.
pub(super) fn durable(name: &str, filter: String) -> pull::Config {
    pull::Config {
        durable_name: Some(name.to_string()),
        filter_subject: filter,
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        deliver_policy: jetstream::consumer::DeliverPolicy::All,
        ack_wait: ACK_WAIT,
        max_ack_pending: 20_000,
        num_replicas: 0,
        ..Default::default()
    }
}

/// One message into the books; returns the reports it counts for.
fn book(message: &Message, books: &mut Books, how: &How) -> u64 {
    let header = |key: &str| message.headers.as_ref().and_then(|h| h.get(key)).map(|v| v.as_str());
    if header("Int-Format") == Some(batch::FORMAT) {
        return book_batch(&message.payload, books, how);
    }
    let taken = take_record(header("Int-Schema"), &message.payload, books);
    u64::from(taken != Taken::Derived)
}

/// A batch's entries, each through the receiving collector's reading
/// with its arrival time and accounting; an entry that cannot be framed
/// is counted by its reason and ends the batch. Returns the reports.
pub fn book_batch(payload: &[u8], books: &mut Books, how: &How) -> u64 {
    let mut reports = 0;
    for entry in batch::entries(payload) {
        match entry {
            Ok(entry) => {
                books.ledger.arrived(entry.at_ns);
                let came = Came {
                    payload: entry.datagram,
                    from: entry.from,
                    truncated: entry.truncated,
                    at_ns: entry.at_ns,
                };
                reports += udp::take(came, Sequence::Given(entry.accounting), books, how).reports;
            }
            Err(malformed) => {
                let totals = &mut books.totals;
                totals.received += 1;
                totals.reports += 1;
                *totals.malformed.entry(malformed.to_string()).or_default() += 1;
                reports += 1;
            }
        }
    }
    reports
}

/// When the lag was read and last said.
struct Lag {
    read: Instant,
    said: Option<Instant>,
}

impl Lag {
    /// The consumer's lag into the counts; said in the log when there is
    /// one, at most every [`SAY_LAG_EVERY`].
    async fn read(
        &mut self,
        consumer: &jetstream::consumer::Consumer<pull::Config>,
        counts: &Counts,
        name: &str,
    ) {
        self.read = Instant::now();
        let Ok(info) = consumer.get_info().await else { return };
        counts.pending.store(info.num_pending, Ordering::Relaxed);
        counts.ack_pending.store(info.num_ack_pending as u64, Ordering::Relaxed);
        let due = self.said.is_none_or(|at| at.elapsed() >= SAY_LAG_EVERY);
        if info.num_pending > BATCH as u64 && due {
            log::warn!(
                "collect: consumer {name} is {} messages behind the stream ({} awaiting acknowledgement)",
                info.num_pending,
                info.num_ack_pending
            );
            self.said = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use int_core::flow::FlowKey;
    use int_core::report::{DropSummaryReport, DropSummaryRepr, ReportHeaderRepr};

    use super::*;
    use crate::collect::books::datagram::Kind;
    use crate::collect::books::sender::{Accounting, MAX_REPORT_GAP};
    use crate::collect::books::Sizes;
    use crate::collect::nats::batch::Entry;

    fn drop_summary(sequence: u32) -> Vec<u8> {
        let report = DropSummaryReport {
            header: ReportHeaderRepr::drop_summary(sequence, 1_700_000_000, 0),
            summary: DropSummaryRepr { source_node: 1, sink_node: 2, gap_count: 1, ..Default::default() },
            flow: FlowKey::v4(Ipv4Addr::new(10, 9, 9, 9), Ipv4Addr::new(10, 8, 8, 8), 17, 1, 2),
        };
        let mut buf = [0u8; 64];
        let len = report.emit(&mut buf).unwrap();
        buf[..len].to_vec()
    }

    /// A forged batch (101 entries each claiming 2^32-1 missing reports,
    /// the aggregator booked 433,791,696,807 lost) books none of them;
    /// each is refused by its reason, and the true entries beside them,
    /// with their gaps, are booked.
    #[test]
    fn forged_missing_reports_are_refused_and_true_gaps_booked() {
        let datagrams: Vec<Vec<u8>> = (1..=203).map(drop_summary).collect();
        let mut message = Vec::new();
        for (i, datagram) in datagrams.iter().enumerate() {
            let missing = if i % 2 == 1 { u32::MAX } else { u32::from(i == 2) * MAX_REPORT_GAP };
            let entry = Entry {
                at_ns: 1_700_000_000_000_000_000,
                from: "192.0.2.7:4321".parse().unwrap(),
                accounting: Accounting { missing, resync: false, late: false },
                truncated: false,
                kind: Kind::Latency,
                node: 2,
                datagram,
            };
            entry.write(&mut message);
        }
        let mut books = Books::bounded(Sizes { flows: 4, detailed_flows: 2, nodes: 8, links: 8 });
        let how = How {
            sink_id: int_core::report::SinkIdWord::Detect,
            int21_domain: int_core::int21::Domain {
                marking: int_core::int21::Marking::Dscp(int_core::marking::DscpMatch {
                    value: 0x17,
                    mask: 0x3f,
                }),
                tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
                source_only: int_core::int21::SourceOnly::sequence(0x4944),
            },
            ioam_timestamps: int_core::ioam::TimestampFormat::Posix,
            ifa_domain: int_core::ifa::Domain::default(),
        };
        assert_eq!(book_batch(&message, &mut books, &how), 203);
        let lost: u64 = books.senders.values().map(|s| s.lost_reports).sum();
        assert_eq!(lost, u64::from(MAX_REPORT_GAP), "only the true entry's gap");
        assert_eq!(books.totals.malformed.get("stream: a batch entry's accounting"), Some(&101));
        assert_eq!(books.totals.received, 203);
    }
}
