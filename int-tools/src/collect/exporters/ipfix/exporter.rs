//! The exporter's thread: at each interval's end takes the readers'
//! figures (mod.rs [`Tables`]) and writes their records in messages (RFC
//! 7011), over UDP or TCP.
//!
//! Templates: over UDP, with every interval's export (RFC 7011 section
//! 8.4: a collector that restarted learns them again at the next
//! interval); over TCP, first on each new connection (section 8.3). A TCP
//! connection that ended is made again at the next export, templates
//! first; records of an interval without one are counted failed.
//! Sequence numbers count data records (section 3.1), per transport
//! session: a new TCP connection starts again at 0.
//!
//! A TCP message not taken whole within [`SEND_TIMEOUT`] (a collector
//! that stopped reading) drops the connection, counted `timeouts`; after a
//! failed connect or send the next connect waits ([`Retry`]). So the
//! thread never blocks longer than a connect and a send, and collect's
//! stop, which waits for it, ends within seconds.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::interval::{drop_record, flow_record, hop_record, link_record, sorted, Interval};
use super::message::{
    emit_options_template, emit_template, options_template_len, template_len, Header, MessageBuilder,
    OPTIONS_TEMPLATE_SET_ID, TEMPLATE_SET_ID,
};
use super::shared::{Counts, Settings, Tables, Transport};
use super::templates::Templates;

/// A UDP message stays within one Ethernet frame (RFC 7011 section
/// 10.3.3: the path MTU); TCP takes larger ones.
const UDP_MESSAGE: usize = 1400;
const TCP_MESSAGE: usize = 16 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most one message may take to go into a TCP connection.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// The wait before connecting again after a failure: doubled with each
/// failure in a row, up to the last; a connection that lived a minute
/// starts it again from the first.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
const LIVED: Duration = Duration::from_secs(60);

/// The socket; none where it could not be opened (UDP) or is not
/// connected (TCP).
enum Link {
    Udp(Option<UdpSocket>),
    Tcp(Option<TcpStream>),
}

pub struct Exporter {
    settings: Settings,
    counts: Arc<Counts>,
    templates: Templates,
    link: Link,
    /// Data records sent in this transport session.
    sequence: u32,
    builder: MessageBuilder,
    last_error: String,
    retry: Retry,
}

/// When a TCP connection is tried again after a failed connect or send.
struct Retry {
    wait: Duration,
    /// No connect before this; none: at the next export.
    not_before: Option<Instant>,
    /// When the connection now open was made.
    connected: Option<Instant>,
}

impl Retry {
    fn due(&self) -> bool {
        self.not_before.is_none_or(|at| Instant::now() >= at)
    }

    /// A connect or a send failed: the wait before the next connect.
    fn failed(&mut self) -> Duration {
        let lived = self.connected.take().is_some_and(|at| at.elapsed() >= LIVED);
        if lived {
            self.wait = FIRST_RETRY;
        }
        let wait = self.wait;
        self.not_before = Some(Instant::now() + wait);
        self.wait = (wait * 2).min(LAST_RETRY);
        wait
    }
}

impl Exporter {
    pub fn new(settings: Settings, counts: Arc<Counts>) -> Exporter {
        let (link, size) = match settings.transport {
            Transport::Udp => {
                let bind = if settings.server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
                let socket = UdpSocket::bind(bind).and_then(|s| s.connect(settings.server).map(|()| s));
                if let Err(error) = &socket {
                    eprintln!("collect: IPFIX over UDP to {}: {error}", settings.server);
                }
                (Link::Udp(socket.ok()), UDP_MESSAGE)
            }
            Transport::Tcp => (Link::Tcp(None), TCP_MESSAGE),
        };
        let templates = Templates::new(settings.pen);
        Exporter {
            settings,
            counts,
            templates,
            link,
            sequence: 0,
            builder: MessageBuilder::new(size),
            last_error: String::new(),
            retry: Retry { wait: FIRST_RETRY, not_before: None, connected: None },
        }
    }

    /// Exports each interval's figures, taken from the readers' tables,
    /// until `ended` says every reader is gone; then the last interval.
    pub fn run(mut self, tables: &Tables, ended: &Receiver<()>) {
        let mut deadline = Instant::now() + self.settings.interval;
        // A TCP collector learns the templates before the first interval.
        self.connect_tcp();
        loop {
            // Nothing is ever sent: the wait ends at the deadline or when
            // the last reader's end is dropped.
            let ended = matches!(
                ended.recv_timeout(deadline.saturating_duration_since(Instant::now())),
                Err(RecvTimeoutError::Disconnected)
            );
            if ended || Instant::now() >= deadline {
                self.export(&tables.take(self.settings.limit));
                deadline = Instant::now() + self.settings.interval;
            }
            if ended {
                return;
            }
        }
    }

    /// One interval's records, templates first where due.
    fn export(&mut self, interval: &Interval) {
        self.counts.unrecorded.fetch_add(interval.unrecorded, Ordering::Relaxed);
        if matches!(self.link, Link::Tcp(_)) {
            self.check_tcp();
            self.connect_tcp();
        } else if !interval.is_empty() {
            self.send_templates();
        }
        let mut record = Vec::with_capacity(256);
        let mut in_message = 0u32;
        self.builder.start();
        for (key, flow) in &interval.flows {
            record.clear();
            let set = flow_record(&mut record, key, flow, &self.templates);
            self.append(set, &record, &mut in_message);
        }
        for (key, hop) in sorted(&interval.hops) {
            record.clear();
            let set = hop_record(&mut record, &key, hop);
            self.append(set, &record, &mut in_message);
        }
        for (ends, link) in sorted(&interval.links) {
            record.clear();
            let set = link_record(&mut record, ends, link);
            self.append(set, &record, &mut in_message);
        }
        for (key, drops) in sorted(&interval.drops) {
            record.clear();
            let set = drop_record(&mut record, key, drops);
            self.append(set, &record, &mut in_message);
        }
        if in_message > 0 {
            self.send_data(in_message);
        }
    }

    /// A record into the message, the message sent first when it is full.
    fn append(&mut self, set: u16, record: &[u8], in_message: &mut u32) {
        if !self.builder.fits(set, record.len()) && !self.builder.is_empty() {
            self.send_data(*in_message);
            *in_message = 0;
            self.builder.start();
        }
        self.builder.record(set).extend_from_slice(record);
        *in_message += 1;
    }

    /// Every template in one message (they fit: five templates of at
    /// most 22 fields): the data templates in one set, each options
    /// template in a set of its own.
    fn send_templates(&mut self) {
        self.builder.start();
        let mut count = 0;
        for (id, scope, fields) in self.templates.all() {
            if scope == 0 && self.builder.fits(TEMPLATE_SET_ID, template_len(fields)) {
                emit_template(self.builder.record(TEMPLATE_SET_ID), id, fields);
                count += 1;
            } else if scope > 0 && self.builder.fits_alone(options_template_len(fields)) {
                emit_options_template(self.builder.record_alone(OPTIONS_TEMPLATE_SET_ID), id, scope, fields);
                count += 1;
            }
        }
        if self.send() {
            self.counts.templates.fetch_add(count, Ordering::Relaxed);
        }
    }

    fn send_data(&mut self, records: u32) {
        let sent = self.send();
        let outcome = if sent { &self.counts.records } else { &self.counts.failed };
        outcome.fetch_add(u64::from(records), Ordering::Relaxed);
        if sent {
            self.sequence = self.sequence.wrapping_add(records);
        }
    }

    /// Sends the built message; whether it went.
    fn send(&mut self) -> bool {
        let export_time = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32);
        let header = Header { export_time, sequence: self.sequence, domain: self.settings.domain };
        let message = self.builder.finish(header);
        let outcome = match &mut self.link {
            Link::Udp(Some(socket)) => socket.send(message).map(|_| ()),
            Link::Tcp(Some(stream)) => write_within(stream, message, SEND_TIMEOUT),
            // Not connected: said when the connect failed.
            Link::Udp(None) | Link::Tcp(None) => return false,
        };
        match outcome {
            Ok(()) => {
                self.counts.messages.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(error) if matches!(self.link, Link::Tcp(_)) => {
                self.link = Link::Tcp(None);
                let timed_out = error.kind() == ErrorKind::TimedOut;
                if timed_out {
                    self.counts.timeouts.fetch_add(1, Ordering::Relaxed);
                }
                let wait = self.retry.failed();
                self.say(&format!("{error}; connection dropped, the next in {} s", wait.as_secs()));
                false
            }
            Err(error) => {
                self.say(&error.to_string());
                false
            }
        }
    }

    /// A collector never writes to an exporter: a readable end is a
    /// connection it closed.
    fn check_tcp(&mut self) {
        let Link::Tcp(Some(stream)) = &mut self.link else { return };
        let mut byte = [0u8; 1];
        let _ = stream.set_nonblocking(true);
        let closed = match stream.read(&mut byte) {
            Err(error) => error.kind() != ErrorKind::WouldBlock,
            Ok(_) => true,
        };
        let _ = stream.set_nonblocking(false);
        if closed {
            self.link = Link::Tcp(None);
        }
    }

    /// A new TCP connection, its templates first.
    fn connect_tcp(&mut self) {
        let closed = matches!(self.link, Link::Tcp(None)) && self.settings.transport == Transport::Tcp;
        if !closed || !self.retry.due() {
            return;
        }
        match TcpStream::connect_timeout(&self.settings.server, CONNECT_TIMEOUT) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                self.link = Link::Tcp(Some(stream));
                self.sequence = 0;
                self.retry.connected = Some(Instant::now());
                self.counts.connections.fetch_add(1, Ordering::Relaxed);
                self.send_templates();
            }
            Err(error) => {
                let wait = self.retry.failed();
                self.say(&format!("{error}; the next try in {} s", wait.as_secs()));
            }
        }
    }

    /// Says a send error once, until a different one comes.
    fn say(&mut self, error: &str) {
        if error != self.last_error {
            eprintln!("collect: IPFIX export to {}: {error}", self.settings.server);
            self.last_error = error.to_string();
        }
    }
}

/// Writes the whole `message` within `timeout`, or fails `TimedOut`: a
/// peer that stops reading cannot hold the exporter longer.
fn write_within(stream: &mut TcpStream, message: &[u8], timeout: Duration) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut rest = message;
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let timed_out = || {
            io::Error::new(
                ErrorKind::TimedOut,
                format!("the collector took nothing for {} s", timeout.as_secs()),
            )
        };
        if left.is_zero() {
            return Err(timed_out());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(rest) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            // SO_SNDTIMEO's end is EAGAIN.
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(timed_out())
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
