//! The stream's batch format: report datagrams as they came, many to a
//! NATS message, each with its sender, its arrival time and what the
//! receiving collector's sequence accounting found before it. An
//! aggregator feeds every entry through the same reading and books as the
//! receiving collector did (docs/output.md, "The stream").
//!
//! An entry, all numbers big-endian:
//!
//! ```text
//!  0  u64  arrival, ns since the Unix epoch (the receiving collector's clock)
//!  8  u32  reports missing from its sender's sequence right before it
//! 12  u32  the reporting node (a TR 2.0 group's node id, a latency report's
//!          sink node; 0 where the datagram was refused)
//! 16  u16  the sender's UDP port
//! 18  u8   the sender's address family: 4 or 6
//! 19  u8   flags: 1 truncated (longer than the receive buffer), 2 the
//!          sender's sequence started again, 4 a late (reordered or
//!          repeated) sequence number
//! 20  16B  the sender's address (IPv4: the first 4 bytes, the rest 0;
//!          a reader refuses other bytes there)
//! 36  u8   kind: 0 refused, 1 Telemetry Report 2.0, 2 Host-INT or INT 0.5
//!          latency/drop report, 3 Telemetry Report 0.5
//! 37  u8   0
//! 38  u16  the datagram's length
//! 40       the datagram
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::collect::books::datagram::Kind;
use crate::collect::books::sender::Accounting;

/// An entry's bytes before its datagram.
pub const HEADER: usize = 40;
/// The format's name in a message's `Int-Format` header.
pub const FORMAT: &str = "batch-1";

const TRUNCATED: u8 = 1;
const RESYNC: u8 = 2;
const LATE: u8 = 4;

/// One datagram and what the receiving collector knew of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub at_ns: u64,
    pub from: SocketAddr,
    pub accounting: Accounting,
    pub truncated: bool,
    pub kind: Kind,
    pub node: u32,
    pub datagram: &'a [u8],
}

impl Entry<'_> {
    /// Appends the entry to `out`; a datagram longer than 65535 bytes
    /// (none: a UDP payload is shorter) keeps its first 65535. The header
    /// is laid out in place, then appended with the datagram: two copies,
    /// two capacity checks (this runs per datagram on a receiving thread).
    pub fn write(&self, out: &mut Vec<u8>) {
        let datagram = self.datagram.get(..usize::from(u16::MAX)).unwrap_or(self.datagram);
        let (family, address) = match self.from.ip() {
            IpAddr::V4(v4) => {
                let [a, b, c, d] = v4.octets();
                (4u8, [a, b, c, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            }
            IpAddr::V6(v6) => (6u8, v6.octets()),
        };
        let mut header = [0u8; HEADER];
        put(&mut header, 0, &self.at_ns.to_be_bytes());
        put(&mut header, 8, &self.accounting.missing.to_be_bytes());
        put(&mut header, NODE_AT, &self.node.to_be_bytes());
        put(&mut header, 16, &self.from.port().to_be_bytes());
        put(&mut header, 18, &[family, self.flags()]);
        put(&mut header, 20, &address);
        put(&mut header, KIND_AT, &[self.kind as u8, 0]);
        put(&mut header, LENGTH_AT, &(datagram.len() as u16).to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(datagram);
    }

    fn flags(&self) -> u8 {
        let flag = |set: bool, bit: u8| if set { bit } else { 0 };
        flag(self.truncated, TRUNCATED)
            | flag(self.accounting.resync, RESYNC)
            | flag(self.accounting.late, LATE)
    }
}

/// Where an entry says its subject and its length.
const NODE_AT: usize = 12;
const KIND_AT: usize = 36;
const LENGTH_AT: usize = 38;
/// The reserved byte after the kind: 0 in the stream, and inside the
/// process, between a receiver and the publisher, the entry's partition
/// (`super::partition`), cleared before the entry goes out.
const PARTITION_AT: usize = 37;

/// The subject an entry of a chunk goes to: its kind, its reporting node,
/// its partition (0 unless the stream is partitioned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subject {
    pub kind: Kind,
    pub node: u32,
    pub partition: u8,
}

/// Marks the entry that starts at `at` of `chunk` (as [`Entry::write`]
/// just wrote it) with its partition, for the publisher.
pub fn mark_partition(chunk: &mut [u8], at: usize, partition: u8) {
    if let Some(byte) = chunk.get_mut(at + PARTITION_AT) {
        *byte = partition;
    }
}

/// Clears the partitions [`mark_partition`] wrote in a message's entries:
/// in the stream the byte is reserved (the partition is the subject's).
pub fn clear_partitions(message: &mut [u8]) {
    let mut at = 0;
    while let Some(&[high, low]) = message.get(at + LENGTH_AT..at + HEADER) {
        let length = usize::from(u16::from_be_bytes([high, low]));
        mark_partition(message, at, 0);
        at += HEADER + length;
    }
}

/// The entries of a chunk this process wrote, each as its subject and its
/// bytes, not read further: the publisher splits its receivers' chunks by
/// subject with one copy of the bytes and no second encoding. Stops at an
/// entry cut short or of no kind (none: a chunk holds whole entries, as
/// [`Entry::write`] wrote them).
pub fn spans(chunk: &[u8]) -> impl Iterator<Item = (Subject, &[u8])> {
    let mut rest = chunk;
    std::iter::from_fn(move || {
        let node = rest.get(NODE_AT..NODE_AT + 4)?;
        let node = u32::from_be_bytes(node.try_into().ok()?);
        let kind = Kind::of(*rest.get(KIND_AT)?)?;
        let partition = *rest.get(PARTITION_AT)?;
        let length = rest.get(LENGTH_AT..HEADER)?;
        let length = usize::from(u16::from_be_bytes(length.try_into().ok()?));
        let (span, after) = rest.split_at_checked(HEADER + length)?;
        rest = after;
        Some((Subject { kind, node, partition }, span))
    })
}

/// `bytes` into `header` at `at` (every caller's field fits).
fn put(header: &mut [u8; HEADER], at: usize, bytes: &[u8]) {
    if let Some(field) = header.get_mut(at..at + bytes.len()) {
        field.copy_from_slice(bytes);
    }
}

/// Why a message's entries could not be read on (what follows the first
/// bad entry cannot be framed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("stream: a batch entry cut short")]
    Short,
    #[error("stream: a batch entry's address family")]
    Family,
    #[error("stream: a batch entry's kind")]
    Kind,
    #[error("stream: a batch entry's reserved bits")]
    Reserved,
    /// Missing reports no receiving collector finds (more than one
    /// datagram's gap it believes, or beside a resync or a late number):
    /// the entry is framed, so the ones after it are read on.
    #[error("stream: a batch entry's accounting")]
    Accounting,
}

/// The entries of one message, in order; the first that cannot be framed
/// ends them.
pub struct Entries<'a> {
    rest: &'a [u8],
}

pub fn entries(message: &[u8]) -> Entries<'_> {
    Entries { rest: message }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let (read, rest) = match read(self.rest) {
            Ok((entry, rest)) => (Ok(entry), rest),
            Err((error, rest)) => (Err(error), rest),
        };
        self.rest = rest;
        Some(read)
    }
}

/// What one entry's reading leaves: the entry or why it was refused, and
/// the bytes after it.
type Read<'a> = Result<(Entry<'a>, &'a [u8]), (Malformed, &'a [u8])>;

/// The entry at the start of `bytes`, and what follows it; an entry
/// refused, and what follows it where it was framed (else nothing).
fn read(bytes: &[u8]) -> Read<'_> {
    let (entry, rest) = frame(bytes).map_err(|error| (error, &[][..]))?;
    if !entry.accounting.plausible() {
        return Err((Malformed::Accounting, rest));
    }
    Ok((entry, rest))
}

/// The entry at the start of `bytes`, as written, and what follows it.
fn frame(bytes: &[u8]) -> Result<(Entry<'_>, &[u8]), Malformed> {
    let mut cursor = Cursor(bytes);
    let at_ns = u64::from_be_bytes(cursor.take()?);
    let missing = u32::from_be_bytes(cursor.take()?);
    let node = u32::from_be_bytes(cursor.take()?);
    let port = u16::from_be_bytes(cursor.take()?);
    let [family, flags] = cursor.take()?;
    let address: [u8; 16] = cursor.take()?;
    let [kind, reserved] = cursor.take()?;
    let length = usize::from(u16::from_be_bytes(cursor.take()?));
    let [a, b, c, d, rest @ ..] = address;
    let ip = match family {
        // The rest of an IPv4 address's 16 bytes is 0: what else it held
        // would be lost on the way through (an entry reads as it was
        // written, or not at all).
        4 if rest != [0; 12] => return Err(Malformed::Reserved),
        4 => IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
        6 => IpAddr::V6(Ipv6Addr::from(address)),
        _ => return Err(Malformed::Family),
    };
    if flags & !(TRUNCATED | RESYNC | LATE) != 0 || reserved != 0 {
        return Err(Malformed::Reserved);
    }
    let kind = Kind::of(kind).ok_or(Malformed::Kind)?;
    let (datagram, rest) = cursor.0.split_at_checked(length).ok_or(Malformed::Short)?;
    let accounting = Accounting { missing, resync: flags & RESYNC != 0, late: flags & LATE != 0 };
    let from = SocketAddr::new(ip, port);
    let entry = Entry { at_ns, from, accounting, truncated: flags & TRUNCATED != 0, kind, node, datagram };
    Ok((entry, rest))
}

/// What is left of an entry to read.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or(Malformed::Short)?;
        self.0 = rest;
        Ok(*head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::books::sender::MAX_REPORT_GAP;

    fn entry<'a>(from: &str, datagram: &'a [u8]) -> Entry<'a> {
        Entry {
            at_ns: 1_700_000_000_123_456_789,
            from: from.parse().unwrap(),
            accounting: Accounting { missing: 3, resync: false, late: false },
            truncated: false,
            kind: Kind::Tr20,
            node: 0x0a00_0001,
            datagram,
        }
    }

    /// The layout of the module's table, byte for byte.
    #[test]
    fn an_entry_as_the_table_says() {
        let mut out = Vec::new();
        entry("192.0.2.7:4321", b"\x20\x01").write(&mut out);
        let mut expected = Vec::new();
        expected.extend_from_slice(&1_700_000_000_123_456_789u64.to_be_bytes());
        expected.extend_from_slice(&[0, 0, 0, 3, 10, 0, 0, 1, 0x10, 0xe1, 4, 0, 192, 0, 2, 7]);
        expected.extend_from_slice(&[0; 12]);
        expected.extend_from_slice(&[1, 0, 0, 2, 0x20, 0x01]);
        assert_eq!(out, expected);
    }

    #[test]
    fn entries_read_back_as_written() {
        let mut out = Vec::new();
        let written =
            [entry("192.0.2.7:4321", b"abc"), entry("[2001:db8::1]:9", b""), entry("10.1.1.1:1", &[7; 300])];
        for e in &written {
            e.write(&mut out);
        }
        let read: Vec<Entry> = entries(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(read, written);
    }

    /// Every cut of a message reads its whole entries, then one error
    /// (or nothing, at an entry's end); never a panic, never a made-up
    /// entry.
    #[test]
    fn a_cut_message_reads_whole_entries_then_stops() {
        let mut out = Vec::new();
        let written = [entry("192.0.2.7:4321", b"abc"), entry("[2001:db8::1]:9", b"defg")];
        for e in &written {
            e.write(&mut out);
        }
        let first_end = HEADER + 3;
        for cut in 0..out.len() {
            let read: Vec<_> = entries(&out[..cut]).collect();
            let whole = usize::from(cut >= first_end);
            assert_eq!(read.iter().filter(|r| r.is_ok()).count(), whole, "cut {cut}");
            let at_end = cut == 0 || cut == first_end;
            assert_eq!(read.last().is_some_and(|r| r.is_err()), !at_end, "cut {cut}");
        }
    }

    /// A chunk's spans are its entries' bytes, each with the subject its
    /// entry reads as; a cut chunk yields its whole entries only.
    #[test]
    fn spans_are_the_entries_bytes_and_subjects() {
        let mut out = Vec::new();
        let mut written =
            [entry("192.0.2.7:4321", b"abc"), entry("[2001:db8::1]:9", b""), entry("10.1.1.1:1", &[7; 300])];
        written[1].kind = Kind::Latency;
        written[2].node = 9;
        let mut ends = Vec::new();
        for e in &written {
            e.write(&mut out);
            ends.push(out.len());
        }
        let read: Vec<_> = spans(&out).collect();
        assert_eq!(read.len(), 3);
        for ((key, span), e) in read.iter().zip(&written) {
            assert_eq!(*key, Subject { kind: e.kind, node: e.node, partition: 0 });
            assert_eq!(entries(span).collect::<Vec<_>>(), vec![Ok(*e)]);
        }
        assert_eq!(spans(&out[..ends[2] - 1]).count(), 2);
    }

    /// A partition marked on an entry reads in its span's subject, and
    /// once cleared the message reads as written (the byte is reserved in
    /// the stream).
    #[test]
    fn partitions_marked_then_cleared() {
        let mut out = Vec::new();
        let written = [entry("192.0.2.7:4321", b"abc"), entry("10.1.1.1:1", &[7; 300])];
        written[0].write(&mut out);
        let second = out.len();
        written[1].write(&mut out);
        mark_partition(&mut out, 0, 5);
        mark_partition(&mut out, second, 15);
        let partitions: Vec<u8> = spans(&out).map(|(subject, _)| subject.partition).collect();
        assert_eq!(partitions, [5, 15]);
        assert!(entries(&out).next().is_some_and(|e| e.is_err()), "a marked entry is not for the stream");
        clear_partitions(&mut out);
        let read: Vec<Entry> = entries(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(read, written);
    }

    #[test]
    fn lies_are_refused() {
        let mut out = Vec::new();
        entry("192.0.2.7:4321", b"abc").write(&mut out);
        for (at, value, error) in [
            (18, 5, Malformed::Family),
            (19, 8, Malformed::Reserved),
            (36, 9, Malformed::Kind),
            (37, 1, Malformed::Reserved),
        ] {
            let mut lie = out.clone();
            lie[at] = value;
            assert_eq!(entries(&lie).next(), Some(Err(error)), "byte {at}");
        }
        let mut padded = out.clone();
        padded[35] = 0x0f;
        assert_eq!(entries(&padded).next(), Some(Err(Malformed::Reserved)), "an IPv4 address's padding");
        let mut long = out.clone();
        long[39] = 4;
        assert_eq!(entries(&long).next(), Some(Err(Malformed::Short)));
    }

    /// Accounting no receiving collector finds is refused by its reason,
    /// and the entries after it are read on (it was framed): a forger
    /// claims no lost reports, and hides no genuine entry behind it.
    #[test]
    fn accounting_past_what_a_receiver_finds_is_refused() {
        let mut first = entry("192.0.2.7:4321", b"abc");
        let last = entry("192.0.2.8:4321", b"def");
        let lies = [
            Accounting { missing: u32::MAX, resync: false, late: false },
            Accounting { missing: MAX_REPORT_GAP + 1, resync: false, late: false },
            Accounting { missing: 1, resync: true, late: false },
            Accounting { missing: 1, resync: false, late: true },
        ];
        for lie in lies {
            first.accounting = lie;
            let mut out = Vec::new();
            first.write(&mut out);
            last.write(&mut out);
            let read: Vec<_> = entries(&out).collect();
            assert_eq!(read, vec![Err(Malformed::Accounting), Ok(last)], "{lie:?}");
        }
        for truth in [
            Accounting { missing: MAX_REPORT_GAP, resync: false, late: false },
            Accounting { missing: 0, resync: true, late: true },
        ] {
            first.accounting = truth;
            let mut out = Vec::new();
            first.write(&mut out);
            assert_eq!(entries(&out).next(), Some(Ok(first)), "{truth:?}");
        }
    }
}
