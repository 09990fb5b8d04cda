//! `collect --nats URL`: every record collect prints, published to a NATS
//! JetStream stream, for collectors in parallel and an aggregator over all
//! of them (`collect --from-nats`, docs/scale-out.md).
//!
//! The receivers never wait on the server: they hand each record to a
//! bounded queue (a full queue drops the record, counted) and one thread
//! publishes, keeps up to a window of publishes awaiting the stream's
//! acknowledgement, and reconnects when the server goes away. A record is
//! at least once in the stream: one whose acknowledgement never came is
//! sent again, with the same `Nats-Msg-Id`, which the stream uses to drop
//! the duplicate.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::metrics::{counter, counter_family};
use super::outputs::{Counted, Output, Running};
use crate::nats::{Connection, Server};

/// The record schema a message carries (its `Int-Schema` header).
pub const SCHEMA: &str = "1";
/// Publishes awaiting their acknowledgement at most.
const WINDOW: usize = 1024;
/// How long an acknowledgement may take before the publish is sent again.
const ACK_WAIT: Duration = Duration::from_secs(2);
/// How long the publisher waits for an absent server once collect stops.
const PATIENCE: Duration = Duration::from_secs(5);

/// The stream's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub server: Server,
    pub stream: String,
    /// Subjects start with this: `PREFIX.TYPE.NODE`.
    pub prefix: String,
    pub max_age: Duration,
    pub max_bytes: u64,
    /// Records waiting for the publisher at most.
    pub buffer: usize,
}

/// What the publisher did, shared with the summary.
#[derive(Debug, Default)]
pub struct Counts {
    /// Records the stream acknowledged.
    pub acked: AtomicU64,
    /// Records the full queue refused (the server slow or away).
    pub dropped: AtomicU64,
    /// Publishes sent again (no acknowledgement in time, or a reconnect).
    pub resent: AtomicU64,
    /// Acknowledgements that were errors (the stream full with `discard:
    /// new`, the server's storage failing): the record is sent again.
    pub refused: AtomicU64,
    pub reconnects: AtomicU64,
    /// Records never acknowledged: the server away when collect stopped.
    pub lost: AtomicU64,
}

/// A record on its way: its subject and JSON.
type Item = (String, Vec<u8>);

/// The receivers' end of the publisher: the publisher holds it weakly,
/// to tell when every receiver is gone while it has no connection to read
/// the queue on.
#[derive(Clone)]
pub struct Queue {
    sender: Arc<SyncSender<Item>>,
    counts: Arc<Counts>,
    prefix: String,
}

impl Output for Queue {
    fn wants_records(&self) -> bool {
        true
    }

    /// Hands a record over; never waits.
    fn record(&self, record: &Value) {
        let kind = record["type"].as_str().unwrap_or("record");
        let node = record["report_node"].as_u64().or_else(|| record["sink_node"].as_u64()).unwrap_or(0);
        let subject = format!("{}.{kind}.{node}", self.prefix);
        match self.sender.try_send((subject, record.to_string().into_bytes())) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("nats", "NATS records")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        vec![
            ("acked", get(&self.acked)),
            ("dropped", get(&self.dropped)),
            ("resent", get(&self.resent)),
            ("refused", get(&self.refused)),
            ("reconnects", get(&self.reconnects)),
            ("lost", get(&self.lost)),
        ]
    }

    fn metrics(&self, out: &mut String) {
        let outcomes =
            self.counts().into_iter().filter(|(name, _)| ["acked", "dropped", "lost"].contains(name));
        counter_family(
            out,
            "int_collect_nats_records_total",
            "Records for the NATS stream by outcome.",
            outcomes,
        );
        let resent = self.resent.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_nats_resends_total",
            "Publishes sent again (no acknowledgement in time).",
            resent,
        );
        let refused = self.refused.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_nats_refusals_total",
            "Publishes the stream answered with an error (full, or its storage failing).",
            refused,
        );
        let reconnects = self.reconnects.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_nats_reconnects_total",
            "Connections to the server made again.",
            reconnects,
        );
    }
}

/// Creates the stream or checks it is there (refusing a server without
/// JetStream), then starts the publisher.
pub fn start(settings: Settings) -> Result<Running, String> {
    let mut connection = Connection::connect(&settings.server, "int-tools collect", Duration::from_secs(3))
        .map_err(|e| format!("--nats {}: {e}", settings.server.address))?;
    ensure_stream(&mut connection, &settings)
        .map_err(|e| format!("--nats {}: {e}", settings.server.address))?;
    let (sender, receiver) = sync_channel(settings.buffer.max(1));
    let counts = Arc::new(Counts::default());
    let sender = Arc::new(sender);
    let handles = Arc::downgrade(&sender);
    let queue = Queue { sender, counts: Arc::clone(&counts), prefix: settings.prefix.clone() };
    let shared = Arc::clone(&counts);
    connection.set_wait(Duration::from_millis(20)).map_err(|e| e.to_string())?;
    let thread = std::thread::spawn(move || {
        Publisher::new(settings, shared).run(connection, Records { receiver, handles })
    });
    Ok(Running { output: Arc::new(queue), counted: counts, thread })
}

/// The stream, made if missing; an existing one must take our subjects.
pub fn ensure_stream(connection: &mut Connection, settings: &Settings) -> std::io::Result<()> {
    let subjects = format!("{}.>", settings.prefix);
    let config = json!({"name": settings.stream, "subjects": [subjects], "storage": "file",
                        "max_age": settings.max_age.as_nanos() as u64, "max_bytes": settings.max_bytes,
                        "duplicate_window": 120_000_000_000u64});
    let timeout = Duration::from_secs(3);
    let info = connection.request(
        &format!("$JS.API.STREAM.INFO.{}", settings.stream),
        &json!({}),
        timeout,
        &mut |_| {},
    )?;
    if let Some(existing) = info.get("config") {
        let theirs = existing.get("subjects").cloned().unwrap_or_default();
        let has = theirs.as_array().is_some_and(|s| s.iter().any(|s| *s == json!(subjects)));
        return if has {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "stream {} exists without the subjects {subjects}: {theirs}",
                settings.stream
            )))
        };
    }
    let code = info.get("error").and_then(|e| e.get("code")).cloned();
    if code == Some(json!(503)) {
        return Err(std::io::Error::other("the server has no JetStream (start nats-server with -js)"));
    }
    let created = connection.request(
        &format!("$JS.API.STREAM.CREATE.{}", settings.stream),
        &config,
        timeout,
        &mut |_| {},
    )?;
    match created.get("error") {
        None => Ok(()),
        Some(error) => Err(std::io::Error::other(creation_refused(error, settings))),
    }
}

/// Why the server would not make the stream, with the way out where we
/// know one.
fn creation_refused(error: &Value, settings: &Settings) -> String {
    let mut said = format!("creating stream {}: {error}", settings.stream);
    // JetStream's "insufficient storage resources available": it takes
    // 75% of its disk's free space, and the stream asked for more.
    if error.get("err_code") == Some(&json!(10047)) {
        said.push_str(&format!(
            "; the server has less room than the stream's --nats-max-bytes {}: lower it, or give \
             the server's store more free disk (JetStream takes 75% of what is free when it starts)",
            settings.max_bytes
        ));
    }
    said
}

/// The publisher's end of the queue.
struct Records {
    receiver: Receiver<Item>,
    /// The receivers' handles: none left once collect stops.
    handles: Weak<SyncSender<Item>>,
}

impl Records {
    /// Whether collect stopped: no receiver can hand a record over.
    fn ended(&self) -> bool {
        self.handles.strong_count() == 0
    }
}

/// The publishing thread's state.
struct Publisher {
    settings: Settings,
    counts: Arc<Counts>,
    /// Publishes awaiting their acknowledgement, by id: the record and
    /// when it was sent.
    pending: BTreeMap<u64, (Item, Instant)>,
    next_id: u64,
    /// This run's id prefix: `Nats-Msg-Id` is `RUN-N`.
    run: String,
    /// The last refusal said, to say each once.
    last_refusal: String,
}

impl Publisher {
    fn new(settings: Settings, counts: Arc<Counts>) -> Publisher {
        let run = format!("{:x}-{:x}", std::process::id(), crate::schema::now_ns());
        Publisher { settings, counts, pending: BTreeMap::new(), next_id: 0, run, last_refusal: String::new() }
    }

    /// Until the receivers are gone and every record is acknowledged, or
    /// for the queue's patience after that (the server away, or refusing):
    /// what is still queued or pending then is counted lost.
    fn run(mut self, connection: Connection, records: Records) {
        let receiver = &records.receiver;
        let mut connection = Some(connection);
        // When collect stopped; whether the queue is read to its end.
        let (mut ended, mut drained) = (None, false);
        let mut ack_sid = None;
        while !(drained && self.pending.is_empty()) {
            if ended.is_some_and(|at: Instant| at.elapsed() > PATIENCE) {
                break;
            }
            let Some(live) = connection.as_mut() else {
                // Without a connection the queue is not read, so its end
                // is told by the receivers' handles.
                if ended.is_none() && records.ended() {
                    ended = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(250));
                connection = self.reconnect(&mut ack_sid);
                continue;
            };
            if ack_sid.is_none() {
                ack_sid = live.subscribe(&live.inbox("a.*")).ok();
            }
            let mut gone = false;
            let step = self.step(live, receiver, &mut gone);
            if gone {
                drained = true;
                ended = ended.or(Some(Instant::now()));
            }
            if step.is_err() {
                connection = None;
                ack_sid = None;
            }
        }
        let drained = receiver.try_iter().count() + self.pending.len();
        self.counts.lost.fetch_add(drained as u64, Ordering::Relaxed);
    }

    /// Sends what is waiting (up to the window), reads acknowledgements,
    /// resends what timed out.
    fn step(
        &mut self,
        connection: &mut Connection,
        receiver: &Receiver<Item>,
        ended: &mut bool,
    ) -> std::io::Result<()> {
        while self.pending.len() < WINDOW {
            let wait = if self.pending.is_empty() { Duration::from_millis(100) } else { Duration::ZERO };
            match receiver.recv_timeout(wait) {
                Ok(item) => self.send(connection, item)?,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    *ended = true;
                    break;
                }
            }
        }
        connection.flush()?;
        while !self.pending.is_empty() {
            let Some(message) = connection.next_message()? else { break };
            self.acknowledged(&message);
        }
        let late: Vec<u64> =
            self.pending.iter().filter(|(_, (_, at))| at.elapsed() > ACK_WAIT).map(|(id, _)| *id).collect();
        for id in late {
            self.resend(connection, id)?;
        }
        Ok(())
    }

    /// Pending first: a publish the broken connection did not take is
    /// sent again after the reconnect.
    fn send(&mut self, connection: &mut Connection, item: Item) -> std::io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let result = self.publish(connection, id, &item);
        self.pending.insert(id, (item, Instant::now()));
        result
    }

    fn publish(&self, connection: &mut Connection, id: u64, item: &Item) -> std::io::Result<()> {
        let msg_id = format!("{}-{id}", self.run);
        let headers = [("Nats-Msg-Id", msg_id.as_str()), ("Int-Schema", SCHEMA)];
        connection.publish(&item.0, Some(&connection.inbox(&format!("a.{id}"))), &headers, &item.1)
    }

    fn resend(&mut self, connection: &mut Connection, id: u64) -> std::io::Result<()> {
        if let Some((item, _)) = self.pending.remove(&id) {
            self.counts.resent.fetch_add(1, Ordering::Relaxed);
            self.publish(connection, id, &item)?;
            self.pending.insert(id, (item, Instant::now()));
        }
        Ok(())
    }

    /// A publish acknowledgement (`{"stream": ..., "seq": N}`): its record
    /// is in the stream. An error answer leaves it pending, to be resent,
    /// and is counted and said.
    fn acknowledged(&mut self, message: &crate::nats::Message) {
        let Some(id) = message.subject.rsplit('.').next().and_then(|id| id.parse::<u64>().ok()) else {
            return;
        };
        let answer: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
        // An error answer carries `"seq": 0` too: the error decides.
        if let Some(error) = answer.get("error") {
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            self.say(error);
        } else if answer.get("seq").is_some() && self.pending.remove(&id).is_some() {
            self.counts.acked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Says a refusal once, until a different one comes.
    fn say(&mut self, error: &Value) {
        let text = error
            .get("description")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_string);
        if text != self.last_refusal {
            eprintln!(
                "collect: NATS stream {} refused a record: {text} (it is sent again; see the server's log)",
                self.settings.stream
            );
            self.last_refusal = text;
        }
    }

    /// A new connection, the stream checked, every pending record sent
    /// again; `None` while the server is away.
    fn reconnect(&mut self, ack_sid: &mut Option<u64>) -> Option<Connection> {
        let mut connection =
            Connection::connect(&self.settings.server, "int-tools collect", Duration::from_secs(1)).ok()?;
        ensure_stream(&mut connection, &self.settings).ok()?;
        connection.set_wait(Duration::from_millis(20)).ok()?;
        *ack_sid = connection.subscribe(&connection.inbox("a.*")).ok();
        self.counts.reconnects.fetch_add(1, Ordering::Relaxed);
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            self.resend(&mut connection, id).ok()?;
        }
        Some(connection)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::collect::outputs::{counts_json, counts_text};

    /// The publisher's counts as the summary, the text summary and the
    /// Prometheus page show them.
    #[test]
    fn counts_in_the_summary_and_on_the_page() {
        let counts = Counts::default();
        counts.acked.store(7, Ordering::Relaxed);
        counts.dropped.store(2, Ordering::Relaxed);
        counts.reconnects.store(1, Ordering::Relaxed);
        counts.refused.store(3, Ordering::Relaxed);
        let counted: Vec<Arc<dyn Counted>> = vec![Arc::new(counts)];
        let (key, value) = counts_json(&counted).remove(0);
        assert_eq!(key, "nats");
        assert_eq!(
            value,
            json!({"acked": 7, "dropped": 2, "resent": 0, "refused": 3, "reconnects": 1, "lost": 0})
        );
        assert_eq!(
            counts_text(&counted),
            ["NATS records: 7 acked, 2 dropped, 0 resent, 3 refused, 1 reconnects, 0 lost"]
        );
        let mut page = String::new();
        counted[0].metrics(&mut page);
        for line in [
            "# TYPE int_collect_nats_records_total counter",
            "int_collect_nats_records_total{outcome=\"acked\"} 7",
            "int_collect_nats_records_total{outcome=\"dropped\"} 2",
            "int_collect_nats_records_total{outcome=\"lost\"} 0",
            "int_collect_nats_resends_total 0",
            "int_collect_nats_refusals_total 3",
            "int_collect_nats_reconnects_total 1",
        ] {
            assert!(page.lines().any(|l| l == line), "{line} in\n{page}");
        }
    }
}
