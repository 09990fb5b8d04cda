//! The receiving side: sockets sharing the listening port, a thread each,
//! taking datagrams in batches and handing each to the reader of its
//! version: Telemetry Report 2.0, or Host-INT's and INT 0.5's reports.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::How;
use crate::collect::books::datagram::{Arrival, Came, Kind, Taken};
use crate::collect::books::sender::{Accounting, Sender};
use crate::collect::books::Books;
use crate::collect::shared::Shared;
use int_core::report::{self, tr20, Report};
use int_os::udp::{self, BatchReceiver};

/// How often a receiver reads its socket's kernel drop count.
const DROPS_EVERY: Duration = Duration::from_millis(200);
/// How long a stopping receiver goes on reading what already arrived.
const DRAIN_AT_MOST: Duration = Duration::from_secs(1);

pub struct Receiver(BatchReceiver);

/// How each socket is read: messages per system call, and whether it
/// takes UDP GRO trains.
#[derive(Debug, Clone, Copy)]
pub struct Batch {
    pub messages: usize,
    pub gro: bool,
}

/// Messages per system call unless asked (`--receive-batch`).
pub const BATCH: usize = udp::BATCH;

/// Why the receivers cannot open, or a receiver stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    /// `--listen`'s text is no address, or the resolver failed.
    #[error("--listen {listen}: {source}")]
    Resolve { listen: String, source: std::io::Error },
    #[error("--listen {listen}: no address")]
    NoAddress { listen: String },
    #[error(
        "--listen {address}: another process receives on this port (another collect?); stop it, pick another port, \
         or --share-port to receive beside it (the kernel then splits the senders between the two)"
    )]
    Held { address: SocketAddr },
    #[error("--listen {listen}: {source}")]
    Bind { listen: String, source: std::io::Error },
    /// A further socket of `--sockets` cannot join the first's port.
    #[error("--listen {local} (--sockets): {source}")]
    Join { local: SocketAddr, source: std::io::Error },
    #[error("--rcvbuf: {source}")]
    ReceiveBuffer { source: std::io::Error },
    /// A socket option the receiver needs (`what`) is refused.
    #[error("--listen: {what}: {source}")]
    Socket { what: &'static str, source: std::io::Error },
    #[error("a receiver's books were poisoned")]
    Poisoned,
    #[error("--listen: receiving: {source}")]
    Receive { source: std::io::Error },
}

/// Binds `count` sockets to `listen`, sharing the port; says where.
pub fn open(
    listen: &str,
    count: u16,
    rcvbuf: usize,
    share: bool,
    batch: Batch,
) -> Result<Vec<Receiver>, ReceiveError> {
    let address: SocketAddr = listen
        .to_socket_addrs()
        .map_err(|source| ReceiveError::Resolve { listen: listen.to_string(), source })?
        .next()
        .ok_or_else(|| ReceiveError::NoAddress { listen: listen.to_string() })?;
    if !share && address.port() != 0 {
        refuse_a_held_port(address)?;
    }
    let first = udp::bind_shared(address)
        .map_err(|source| ReceiveError::Bind { listen: listen.to_string(), source })?;
    // Port 0 picks a port: the others join the one it got.
    let local = first.local_addr().map_err(|source| ReceiveError::Socket { what: "its address", source })?;
    let mut sockets = vec![first];
    for _ in 1..count {
        sockets.push(udp::bind_shared(local).map_err(|source| ReceiveError::Join { local, source })?);
    }
    let mut granted = 0;
    let receivers = sockets
        .into_iter()
        .map(|socket| {
            let socket_error = |what| move |source| ReceiveError::Socket { what, source };
            socket
                .set_read_timeout(Some(Duration::from_millis(50)))
                .map_err(socket_error("a read timeout"))?;
            granted = udp::set_receive_buffer(&socket, rcvbuf)
                .map_err(|source| ReceiveError::ReceiveBuffer { source })?;
            udp::socket_drops(&socket).map_err(socket_error("the kernel's drop count (SO_MEMINFO)"))?;
            Ok(Receiver(BatchReceiver::with(socket, batch.messages, batch.gro)))
        })
        .collect::<Result<Vec<_>, ReceiveError>>()?;
    let sockets = if count > 1 { format!(", {count} sockets") } else { String::new() };
    log::info!("collect: listening on {local} (receive buffer {granted} bytes{sockets})");
    Ok(receivers)
}

/// Our sockets share their port (SO_REUSEPORT) among themselves, and would
/// with any other process's: a port another process holds is refused, as
/// a plain bind finds it, unless `--share-port` asks to receive beside it.
fn refuse_a_held_port(address: SocketAddr) -> Result<(), ReceiveError> {
    match std::net::UdpSocket::bind(address) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(ReceiveError::Held { address }),
        Err(source) => Err(ReceiveError::Bind { listen: address.to_string(), source }),
    }
}

/// A thread per receiver, each with its own books.
pub fn spawn(
    receivers: Vec<Receiver>,
    shared: &Arc<Shared>,
    how: &Arc<How>,
) -> Vec<std::thread::JoinHandle<Result<(), ReceiveError>>> {
    receivers
        .into_iter()
        .zip(shared.books.iter().cloned())
        .map(|(receiver, books)| {
            let (shared, how) = (Arc::clone(shared), Arc::clone(how));
            std::thread::spawn(move || {
                let result = receive(receiver.0, &books, &shared, &how);
                if result.is_err() {
                    shared.quit.store(true, Ordering::Relaxed);
                }
                result
            })
        })
        .collect()
}

fn receive(
    mut receiver: BatchReceiver,
    books: &Mutex<Books>,
    shared: &Shared,
    how: &How,
) -> Result<(), ReceiveError> {
    let mut drops_read = Instant::now();
    while !shared.quit.load(Ordering::Relaxed) {
        receive_batch(&mut receiver, books, shared, how)?;
        if drops_read.elapsed() >= DROPS_EVERY {
            read_drops(receiver.socket(), books);
            drops_read = Instant::now();
        }
    }
    // What already arrived is read before the end (for at most a second):
    // a stop loses no report the kernel holds.
    let nonblocking = receiver.socket().set_nonblocking(true);
    nonblocking.map_err(|source| ReceiveError::Socket { what: "non-blocking reads", source })?;
    let draining = Instant::now();
    while receive_batch(&mut receiver, books, shared, how)? > 0 && draining.elapsed() < DRAIN_AT_MOST {}
    read_drops(receiver.socket(), books);
    if let Ok(mut books) = books.lock() {
        // The stream's batches end with this receiver: the publisher then
        // knows every datagram is in.
        if let Some(mut datagrams) = books.datagrams.take() {
            datagrams.hand_over();
        }
    }
    Ok(())
}

/// Takes one batch, if any came; returns the datagrams taken.
fn receive_batch(
    receiver: &mut BatchReceiver,
    books: &Mutex<Books>,
    shared: &Shared,
    how: &How,
) -> Result<usize, ReceiveError> {
    match receiver.receive() {
        Ok(count) => {
            let mut books = books.lock().map_err(|_| ReceiveError::Poisoned)?;
            books.ledger.tick();
            let mut reports = 0;
            let at_ns = crate::schema::now_ns();
            books.arrived(at_ns);
            for datagram in receiver.datagrams() {
                let from = datagram.from.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
                let came = Came { payload: datagram.payload, from, truncated: datagram.truncated, at_ns };
                let taken = take(came, Sequence::Count, &mut books, how);
                reports += taken.reports;
                if let Some(datagrams) = books.datagrams.as_mut() {
                    datagrams.push(&came, &taken);
                }
            }
            shared.reports.fetch_add(reports, Ordering::Relaxed);
            // Short of a full batch, the socket held no more: every report
            // that came before `at_ns` is in, and the collector's clock
            // closes the postcards' groups it has passed.
            if !receiver.filled() {
                books.close_passed_joins(at_ns / 1_000_000);
            }
            if let Some(datagrams) = books.datagrams.as_mut() {
                datagrams.hand_over_if_due();
            }
            Ok(count)
        }
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted
            ) =>
        {
            // A quiet socket: what waits for the stream goes now, and the
            // postcards' groups the collector's clock has passed close
            // (when the reports stop, no postcard comes to close them).
            let now_ms = crate::schema::now_ns() / 1_000_000;
            let mut books = books.lock().map_err(|_| ReceiveError::Poisoned)?;
            books.close_passed_joins(now_ms);
            if let Some(datagrams) = books.datagrams.as_mut() {
                datagrams.hand_over_if_due();
            }
            Ok(0)
        }
        Err(source) => Err(ReceiveError::Receive { source }),
    }
}

fn read_drops(socket: &UdpSocket, books: &Mutex<Books>) {
    if let (Ok(drops), Ok(mut books)) = (udp::socket_drops(socket), books.lock()) {
        books.totals.kernel_drops = drops;
    }
}

/// How a datagram's sender sequence is accounted.
#[derive(Debug, Clone, Copy)]
pub enum Sequence {
    /// Here: a receiving collector sees every datagram of its senders.
    Count,
    /// As the receiving collector found it: an aggregator may see only
    /// some of a sender's datagrams.
    Given(Accounting),
}

/// One datagram: a Telemetry Report 2.0 (by its version) or a 0.5 or
/// Host-INT report, accounted, recorded and printed; refused by reason.
pub fn take(came: Came<'_>, sequence: Sequence, books: &mut Books, how: &How) -> Taken {
    books.totals.received += 1;
    let refused = Taken::refused();
    let arrival = |missing| Arrival { from: came.from, at_ns: came.at_ns, missing };
    if came.truncated {
        books.totals.reports += 1;
        refuse_longer_than_buffer(arrival(0), books);
        return refused;
    }
    let payload = came.payload;
    if payload.first().is_some_and(|byte| byte >> 4 == tr20::VERSION) {
        let parsed = tr20::Report::parse(payload)
            .and_then(|report| super::tr20::check(&report).map(|n| (report, n as u32)));
        let (report, count) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return refuse(&error, arrival(0), payload.len(), books),
        };
        books.totals.reports += u64::from(count);
        let accounting =
            account(books, came.from, sequence, |s| s.account_group(report.group.sequence, count));
        let flow = super::tr20::record(&report, how, arrival(accounting.missing), books);
        let node = report.group.node_id;
        return Taken { reports: u64::from(count), accounting, kind: Kind::Tr20, node, flow };
    }
    let parsed = match report::parse(payload, how.sink_id) {
        Ok(parsed) => parsed,
        Err(error) => return refuse(&error, arrival(0), payload.len(), books),
    };
    books.totals.reports += 1;
    let (sequence_number, kind, node) = match &parsed {
        Report::Latency(l) => (l.header.sequence, Kind::Latency, l.sink_id.unwrap_or(0)),
        Report::DropSummary(d) => (d.header.sequence, Kind::Latency, d.summary.sink_node),
        Report::Tr05 { header, .. } => (header.sequence, Kind::Tr05, 0),
    };
    let flow = super::hostint::flow_of(&parsed);
    let accounting = account(books, came.from, sequence, |s| s.account(sequence_number));
    let arrival = arrival(accounting.missing);
    let taken = Taken { reports: 1, accounting, kind, node, flow };
    if let Report::Tr05 { switch_local: Some(_), .. } = parsed {
        // A sink's own TR 0.5 flow report reads as one; any other NProto 2
        // report is printed as TR 0.5.
        if let Ok(flow_report) = int_core::report::tr05_flow::FlowReport::parse(payload) {
            super::tr05::record(&flow_report, arrival, books);
            return Taken { flow: Some(flow_report.flow()), ..taken };
        }
    }
    super::hostint::record(&parsed, arrival, books);
    taken
}

/// The sender's sequence accounted here, or booked as given.
fn account(
    books: &mut Books,
    from: SocketAddr,
    sequence: Sequence,
    count: impl FnOnce(&mut Sender) -> u32,
) -> Accounting {
    let sender = books.sender(from);
    match sequence {
        Sequence::Count => sender.accounted(count),
        Sequence::Given(found) => {
            sender.book(found);
            found
        }
    }
}

/// A short reason for a refused report: what was wrong, and where.
fn reason(error: &int_core::ParseError) -> String {
    use int_core::ParseError as E;
    let kind = match error {
        E::Truncated { .. } => "truncated",
        E::UnknownVersion { .. } => "unknown version",
        E::UnknownType { .. } => "unknown type",
        E::BadLength { .. } => "bad length",
        E::StackMismatch { .. } | E::HopCountExceeded { .. } => "stack mismatch",
        E::Reserved { .. } => "reserved bits",
    };
    format!("{}: {kind}", error.layer())
}

/// A refused datagram: counted as a report, by reason, and said.
fn refuse(error: &int_core::ParseError, arrival: Arrival, len: usize, books: &mut Books) -> Taken {
    books.totals.reports += 1;
    *books.totals.malformed.entry(reason(error)).or_default() += 1;
    books.refused(&arrival, &error.to_string(), Some(len));
    Taken::refused()
}

/// A datagram longer than any report a sender writes at jumbo MTU.
fn refuse_longer_than_buffer(arrival: Arrival, books: &mut Books) {
    let reason = format!("longer than {} bytes", udp::RECEIVE_BUFFER);
    *books.totals.malformed.entry(reason.clone()).or_default() += 1;
    books.refused(&arrival, &reason, None);
}
