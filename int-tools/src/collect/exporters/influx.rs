//! The collector's InfluxDB writer: each observation becomes a point in
//! line protocol (measurement `int_latency` or `int_loss`, tagged with the
//! flow and the nodes; `int_hop` per hop of an INT 2.1 report, tagged with
//! its node, `int_link` per link between consecutive hops, and
//! `int_path_change` per change of a flow's path), written in batches over HTTP to InfluxDB 1.x's
//! `/write` by a thread of its own. The receivers only queue: a full queue
//! (a slow or absent database) costs counted drops, never a stall; a
//! failed write is tried again a few times, then its points are counted
//! lost; points influxd answers it did not store are counted refused.
//! Names become tags and strings as [`line`] says.

pub mod args;
mod line;

use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use int_core::hop::Hop;

use super::Running;
use crate::collect::books::export::Exporter;
use crate::collect::books::hops::{self, PathChange, Seen};
use crate::collect::books::ledger::{Measure, Observed};
use crate::collect::counts::{counter_family, counts_of, Counted};
use crate::collect::names::Naming;

/// What becomes points: an observation of a flow, a report's hops and
/// links, a flow's path change.
enum Point {
    Observed(Observed),
    Hops { sink: Option<u32>, sink_ingress_ns: Option<u64>, hops: Vec<Hop> },
    PathChange(PathChange),
}

/// Tries per batch before its points are given up.
const ATTEMPTS: u32 = 4;
/// Wait before the first retry; it doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const TIMEOUT: Duration = Duration::from_secs(2);

/// Where and how to write.
#[derive(Debug, Clone)]
pub struct Settings {
    pub server: SocketAddr,
    /// The Host header: the URL's host and port as given.
    pub host: String,
    /// The Authorization header, where the server wants a user.
    pub authorization: Option<String>,
    pub database: String,
    /// Points per write.
    pub batch: usize,
    /// A partial batch is written after this long.
    pub flush: Duration,
    /// Points waiting at most; beyond, new ones are dropped and counted.
    pub buffer: usize,
}

impl Settings {
    /// Reads `http://HOST:PORT` (a trailing `/` allowed).
    pub fn parse_url(url: &str) -> Result<(SocketAddr, String), UrlError> {
        let url_error = |cause| UrlError { url: url.to_string(), cause };
        let rest = url.strip_prefix("http://").ok_or_else(|| url_error(UrlCause::Scheme))?;
        let host = rest.trim_end_matches('/');
        if host.is_empty() || host.contains('/') {
            return Err(url_error(UrlCause::Form));
        }
        let server = host
            .to_socket_addrs()
            .map_err(|e| url_error(UrlCause::Resolve(e)))?
            .next()
            .ok_or_else(|| url_error(UrlCause::NoAddress))?;
        Ok((server, host.to_string()))
    }
}

/// An `--influx` URL collect cannot write to.
#[derive(Debug, thiserror::Error)]
#[error("--influx {url:?}: {cause}")]
pub struct UrlError {
    url: String,
    cause: UrlCause,
}

#[derive(Debug, thiserror::Error)]
pub enum UrlCause {
    #[error("{URL_HINT} (https is not spoken)")]
    Scheme,
    #[error("{URL_HINT}")]
    Form,
    #[error("{0}; {URL_HINT}")]
    Resolve(std::io::Error),
    #[error("the host has no address")]
    NoAddress,
}

const URL_HINT: &str = "give it as http://HOST:PORT, e.g. http://127.0.0.1:8086";

/// What the writer did, shared with the summary.
#[derive(Debug, Default)]
pub struct Counts {
    pub written: AtomicU64,
    /// Points the full queue refused.
    pub dropped: AtomicU64,
    /// Points of batches given up after every attempt failed.
    pub failed: AtomicU64,
    pub retries: AtomicU64,
    /// Points influxd answered it did not store (HTTP 400: a line it
    /// could not parse, a point it dropped).
    pub refused: AtomicU64,
}

/// The receivers' end: queues observations with their arrival time.
#[derive(Clone)]
pub struct Queue {
    sender: SyncSender<(Point, u64)>,
    counts: Arc<Counts>,
}

impl Exporter for Queue {
    fn observed(&self, observed: &Observed) {
        self.send(Point::Observed(*observed));
    }

    /// A report's hops (points `int_hop`) and the links between them
    /// (`int_link`).
    fn hops(&self, seen: &Seen<'_>) {
        let (sink, sink_ingress_ns, hops) = (seen.sink, seen.sink_ingress_ns, seen.hops.to_vec());
        self.send(Point::Hops { sink, sink_ingress_ns, hops });
    }

    /// A flow's new path (`int_path_change`).
    fn path_change(&self, change: &PathChange) {
        self.send(Point::PathChange(change.clone()));
    }
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("influx", "InfluxDB points")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, written, dropped, failed, retries, refused)
    }

    fn metrics(&self, out: &mut String) {
        let outcomes = self.outcomes(&["written", "dropped", "failed", "refused"]);
        counter_family(out, "int_collect_influx_points_total", "Points for InfluxDB by outcome.", outcomes);
    }
}

impl Queue {
    fn send(&self, point: Point) {
        let now_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        match self.sender.try_send((point, now_ns)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Starts the writer thread; it ends, after writing what is queued, once
/// every [`Queue`] is dropped.
pub fn start(settings: Settings, names: Naming) -> Running {
    let (sender, receiver) = mpsc::sync_channel(settings.buffer.max(1));
    let counts = Arc::new(Counts::default());
    let writer =
        Writer { settings, names, counts: Arc::clone(&counts), last_ns: 0, last_error: String::new() };
    let thread = std::thread::spawn(move || writer.run(&receiver));
    Running { exporter: Arc::new(Queue { sender, counts: Arc::clone(&counts) }), counted: counts, thread }
}

struct Writer {
    settings: Settings,
    /// What the tags call each node.
    names: Naming,
    counts: Arc<Counts>,
    /// Points of one series with the same time replace each other in
    /// InfluxDB: each point gets a time after the one before.
    last_ns: u64,
    last_error: String,
}

impl Writer {
    fn run(mut self, receiver: &Receiver<(Point, u64)>) {
        let mut body = String::new();
        let mut points = 0u64;
        let mut deadline = Instant::now() + self.settings.flush;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            let ended = match receiver.recv_timeout(wait) {
                Ok((point, ns)) => {
                    points += self.lines(&mut body, &point, ns);
                    false
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => true,
            };
            if points > 0 && (ended || points >= self.settings.batch as u64 || Instant::now() >= deadline) {
                self.write(&body, points);
                body.clear();
                points = 0;
            }
            if ended {
                return;
            }
            if Instant::now() >= deadline {
                deadline = Instant::now() + self.settings.flush;
            }
        }
    }

    /// A point's lines in line protocol; returns how many.
    fn lines(&mut self, body: &mut String, point: &Point, ns: u64) -> u64 {
        match point {
            Point::Observed(observed) => {
                self.line(body, observed, ns);
                1
            }
            Point::Hops { sink, sink_ingress_ns, hops } => {
                let seen = Seen {
                    flow: Default::default(),
                    hops,
                    sink: *sink,
                    sink_ingress_ns: *sink_ingress_ns,
                    at_ms: 0,
                };
                self.hop_lines(body, &seen, ns)
            }
            Point::PathChange(change) => {
                let time = self.next_time(ns);
                let flow = &change.flow;
                let path = |p: &[u32]| {
                    let labels: Vec<String> = p.iter().map(|n| self.names.label(*n)).collect();
                    line::string_field(&labels.join(">"))
                };
                let _ = writeln!(
                    body,
                    "int_path_change,src={},dst={},protocol={},src_port={},dst_port={} old_path=\"{}\",new_path=\"{}\" {time}",
                    flow.src, flow.dst, flow.protocol, flow.src_port, flow.dst_port, path(&change.old), path(&change.new)
                );
                1
            }
        }
    }

    /// Each hop that names its node (`int_hop`, tagged by node and the
    /// reporting sink), and each link (`int_link`, tagged by its ends).
    fn hop_lines(&mut self, body: &mut String, seen: &Seen<'_>, ns: u64) -> u64 {
        let mut points = 0;
        for hop in seen.hops {
            let Some(node) = hop.node_id else { continue };
            let mut fields = Vec::new();
            if let Some(latency) = hop.hop_latency {
                fields.push(format!("hop_latency={latency}i"));
            }
            if let Some((id, occupancy)) = hop.queue {
                fields.push(format!("queue_id={id}i,queue_occupancy={occupancy}i"));
            }
            if fields.is_empty() {
                continue;
            }
            let time = self.next_time(ns);
            // Joined postcards have no reporting sink: no sink_node tag.
            let sink = seen.sink.map(|sink| node_tags(&self.names, "sink_node", sink)).unwrap_or_default();
            let _ = writeln!(
                body,
                "int_hop{}{sink} {} {time}",
                node_tags(&self.names, "node", node),
                fields.join(",")
            );
            points += 1;
        }
        for ((from, to), latency) in hops::links(seen) {
            let time = self.next_time(ns);
            let (from, to) = (node_tags(&self.names, "from", from), node_tags(&self.names, "to", to));
            let _ = writeln!(body, "int_link{from}{to} latency_ns={latency}i {time}");
            points += 1;
        }
        points
    }

    /// Points of one series with the same time replace each other: each
    /// point gets a time after the one before.
    fn next_time(&mut self, ns: u64) -> u64 {
        let time = ns.max(self.last_ns + 1);
        self.last_ns = time;
        time
    }

    /// One point in line protocol.
    fn line(&mut self, body: &mut String, observed: &Observed, ns: u64) {
        let time = self.next_time(ns);
        let flow = &observed.flow;
        let measurement = match observed.measure {
            Measure::Latency { .. } => "int_latency",
            Measure::Lost(_) => "int_loss",
        };
        let _ = write!(
            body,
            "{measurement},src={},dst={},protocol={},src_port={},dst_port={}",
            flow.src, flow.dst, flow.protocol, flow.src_port, flow.dst_port
        );
        if let Some(node) = observed.source_node {
            body.push_str(&node_tags(&self.names, "source_node", node));
        }
        if let Some(node) = observed.sink_node {
            body.push_str(&node_tags(&self.names, "sink_node", node));
        }
        match observed.measure {
            Measure::Latency { ns, flow_seq, hops } => {
                let _ = write!(body, " latency_ns={ns}i");
                if let Some(seq) = flow_seq {
                    let _ = write!(body, ",flow_seq={seq}i");
                }
                if let Some(hops) = hops {
                    let _ = write!(body, ",hops={hops}i");
                }
            }
            Measure::Lost(count) => {
                let _ = write!(body, " lost={count}i");
            }
        }
        let _ = writeln!(body, " {time}");
    }

    /// Writes one batch, retrying with backoff; a refusal for a reason a
    /// retry cannot mend (4xx: no such database, a bad point) is not
    /// retried. A 400 stored what influxd's error does not name
    /// ([`refused_of`]): counted written, the rest refused.
    fn write(&mut self, body: &str, points: u64) {
        let path = format!("/write?db={}&precision=ns", self.settings.database);
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let outcome = int_os::http::post(
                self.settings.server,
                &self.settings.host,
                &path,
                body.as_bytes(),
                self.settings.authorization.as_deref(),
                TIMEOUT,
            );
            let error = match outcome {
                Ok(answer) if (200..300).contains(&answer.status) => {
                    self.counts.written.fetch_add(points, Ordering::Relaxed);
                    return;
                }
                Ok(answer) if answer.status == 400 => {
                    let error = influx_error(&answer.body);
                    let refused = refused_of(&error, points);
                    self.counts.written.fetch_add(points - refused, Ordering::Relaxed);
                    self.counts.refused.fetch_add(refused, Ordering::Relaxed);
                    self.say(&format!("HTTP 400: {}", shortened(&error)));
                    return;
                }
                Ok(answer) => format!("HTTP {}: {}", answer.status, shortened(&influx_error(&answer.body))),
                Err(error) => error.to_string(),
            };
            let permanent = error.starts_with("HTTP 4");
            self.say(&error);
            if permanent || attempt == ATTEMPTS {
                break;
            }
            self.counts.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(backoff);
            backoff *= 2;
        }
        self.counts.failed.fetch_add(points, Ordering::Relaxed);
    }

    /// Says a write error once, until a different one comes.
    fn say(&mut self, error: &str) {
        if error != self.last_error {
            log::warn!("collect: InfluxDB write to {}: {error}", self.settings.host);
            self.last_error = error.to_string();
        }
    }
}

/// A node's tags: `,KEY=<id>,KEY_name=<name>` (the id, a number as in the
/// JSON, where the node has no name in --names, or none a tag can hold).
fn node_tags(names: &Naming, key: &str, id: u32) -> String {
    let name = line::tag(&names.label(id));
    let name = if name.is_empty() { id.to_string() } else { name };
    format!(",{key}={id},{key}_name={name}")
}

/// influxd's error text: its JSON's `error` (the body itself otherwise).
fn influx_error(body: &str) -> String {
    let json = serde_json::from_str::<serde_json::Value>(body).ok();
    let error = json.as_ref().and_then(|j| j.get("error")?.as_str().map(str::to_string));
    error.unwrap_or_else(|| body.trim().to_string())
}

/// An error for the log: its first 512 characters.
fn shortened(error: &str) -> String {
    let mut text: String = error.chars().take(512).collect();
    if text.len() < error.len() {
        text.push_str(" ...");
    }
    text
}

/// Of a batch of `points` influxd 1.x answered 400 to, the points it did
/// not store. A partial write ("partial write: REASON dropped=N") stored
/// all but the lines it names as unparsable ("unable to parse '...':
/// why", one a line: no line of ours holds a newline) and the N parsed
/// points it dropped (a field's type in conflict, a time out of the
/// retention policy); any other 400 refused the batch whole.
fn refused_of(error: &str, points: u64) -> u64 {
    let Some(reason) = error.strip_prefix("partial write: ") else { return points };
    let unparsed = reason.lines().filter(|l| l.starts_with("unable to parse '")).count() as u64;
    let dropped = reason.rsplit_once("dropped=").and_then(|(_, n)| n.trim().parse::<u64>().ok()).unwrap_or(0);
    (unparsed + dropped).min(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use int_core::flow::FlowKey;
    use std::net::Ipv4Addr;

    /// A writer whose lines the tests read (it never writes).
    fn writer() -> Writer {
        let settings = Settings {
            server: "127.0.0.1:1".parse().unwrap(),
            host: "h".into(),
            authorization: None,
            database: "d".into(),
            batch: 10,
            flush: Duration::from_secs(1),
            buffer: 10,
        };
        Writer {
            settings,
            names: Naming::default(),
            counts: Arc::default(),
            last_ns: 0,
            last_error: String::new(),
        }
    }

    #[test]
    fn points_are_line_protocol_with_rising_times() {
        let mut writer = writer();
        let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 5, 6);
        let latency = Measure::Latency { ns: -12, flow_seq: Some(7), hops: Some(2) };
        let mut body = String::new();
        writer.line(
            &mut body,
            &Observed { flow, source_node: Some(1), sink_node: Some(2), measure: latency, at_ns: None },
            100,
        );
        writer.line(
            &mut body,
            &Observed { flow, source_node: None, sink_node: None, measure: Measure::Lost(3), at_ns: None },
            100,
        );
        assert_eq!(
            body,
            "int_latency,src=10.0.0.1,dst=10.0.0.2,protocol=17,src_port=5,dst_port=6,source_node=1,source_node_name=1,sink_node=2,sink_node_name=2 latency_ns=-12i,flow_seq=7i,hops=2i 100\n\
             int_loss,src=10.0.0.1,dst=10.0.0.2,protocol=17,src_port=5,dst_port=6 lost=3i 101\n"
        );
    }

    /// A report's hops: a point per hop (node, latency, queue) and per link
    /// with both timestamps; a path change with its paths.
    #[test]
    fn hops_links_and_path_changes_are_points() {
        let mut writer = writer();
        let hop = |node: u32, t: u64| Hop {
            node_id: Some(node),
            hop_latency: Some(100),
            queue: Some((2, 7)),
            ingress_timestamp: Some(t),
            egress_timestamp: Some(t + 100),
            ..Hop::default()
        };
        let hops = vec![hop(1, 0), hop(2, 300)];
        let mut body = String::new();
        let point = Point::Hops { sink: Some(9), sink_ingress_ns: Some(1000), hops };
        assert_eq!(writer.lines(&mut body, &point, 50), 4);
        let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 5, 6);
        let change = PathChange { at_ms: 1, flow, old: vec![1, 2, 9], new: vec![1, 3, 9] };
        writer.lines(&mut body, &Point::PathChange(change), 50);
        assert_eq!(
            body,
            "int_hop,node=1,node_name=1,sink_node=9,sink_node_name=9 hop_latency=100i,queue_id=2i,queue_occupancy=7i 50\n\
             int_hop,node=2,node_name=2,sink_node=9,sink_node_name=9 hop_latency=100i,queue_id=2i,queue_occupancy=7i 51\n\
             int_link,from=1,from_name=1,to=2,to_name=2 latency_ns=200i 52\n\
             int_link,from=2,from_name=2,to=9,to_name=9 latency_ns=600i 53\n\
             int_path_change,src=10.0.0.1,dst=10.0.0.2,protocol=17,src_port=5,dst_port=6 old_path=\"1>2>9\",new_path=\"1>3>9\" 54\n"
        );
    }

    #[test]
    fn urls_are_http_host_and_port() {
        assert_eq!(
            Settings::parse_url("http://127.0.0.1:8086/").unwrap().0,
            "127.0.0.1:8086".parse().unwrap()
        );
        for bad in ["https://127.0.0.1:8086", "127.0.0.1:8086", "http://", "http://127.0.0.1:8086/write"] {
            assert!(Settings::parse_url(bad).is_err(), "{bad}");
        }
    }

    /// Nobody listens: the queue fills, drops are counted, the receivers
    /// never wait, and the writer gives its batches up.
    #[test]
    fn an_absent_database_costs_counted_drops_not_a_stall() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let settings = Settings {
            server: closed,
            host: closed.to_string(),
            authorization: None,
            database: "d".into(),
            batch: 2,
            flush: Duration::from_millis(10),
            buffer: 2,
        };
        let Running { exporter: output, counted, thread } = start(settings, Naming::default());
        let flow = FlowKey::v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 17, 5, 6);
        let observed =
            Observed { flow, source_node: None, sink_node: None, measure: Measure::Lost(1), at_ns: None };
        let started = Instant::now();
        for _ in 0..10_000 {
            output.observed(&observed);
        }
        assert!(started.elapsed() < Duration::from_secs(1), "pushing never waits");
        drop(output);
        thread.join().unwrap();
        let counts: std::collections::BTreeMap<_, _> = counted.counts().into_iter().collect();
        let (written, dropped, failed) = (counts["written"], counts["dropped"], counts["failed"]);
        assert_eq!(written, 0);
        assert!(dropped >= 10_000 - 2 - 2 * 2, "{dropped}");
        assert_eq!(dropped + failed, 10_000);
    }

    /// influxd 1.6's answers to a refused write: a partial write stored
    /// all but the lines it could not parse and the points it dropped;
    /// another 400 stored none.
    #[test]
    fn refused_points_read_from_influxds_error() {
        let body = r#"{"error":"partial write: unable to parse 'a b': invalid field format\nunable to parse 'c d': invalid field format dropped=0"}"#;
        let error = influx_error(body);
        assert!(
            error.starts_with("partial write: unable to parse 'a b'") && error.contains("\nunable"),
            "{error}"
        );
        assert_eq!(refused_of(&error, 10), 2);
        let conflict = "partial write: field type conflict: input field \"latency_ns\" on measurement \"int_link\" is type integer, already exists as type string dropped=7";
        assert_eq!(refused_of(conflict, 10), 7);
        assert_eq!(refused_of("unable to parse 'x': invalid tag format", 10), 10);
        assert_eq!(influx_error("not json\n"), "not json");
    }

    /// The counts as the summary, the text summary and the Prometheus page
    /// show them: `retries` in the summary, not among the page's outcomes.
    #[test]
    fn counts_in_the_summary_and_on_the_page() {
        let counts = Counts::default();
        counts.written.store(5, Ordering::Relaxed);
        counts.retries.store(2, Ordering::Relaxed);
        crate::collect::counts::assert_shown(
            counts,
            (
                "influx",
                serde_json::json!({"written": 5, "dropped": 0, "failed": 0, "retries": 2, "refused": 0}),
            ),
            "InfluxDB points: 5 written, 0 dropped, 0 failed, 2 retries, 0 refused",
            "int_collect_influx_points_total",
            &[("written", 5), ("dropped", 0), ("failed", 0), ("refused", 0)],
        );
    }
}
