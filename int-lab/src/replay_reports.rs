//! `int-lab replay-reports`: a collector's load. Replays recorded report
//! datagrams (one hex payload per line, e.g. a sink's reports caught on a
//! socket) from several senders as fast as the kernel takes them, 64 per
//! system call. Each sender numbers its datagrams 1, 2, 3... as one sink
//! would, so the collector sees whole sequences, not duplicates: in the
//! Telemetry Report 0.5 header's Sequence Number (bytes 4-7), or in a
//! Telemetry Report 2.0 group header's (the low 22 bits of its first
//! word; version 2 in its first nibble).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use crate::error::Error;
use int_os::udp::{BatchSender, BATCH};

#[derive(Debug, Args)]
pub struct ReplayReportsArgs {
    /// The collector's ADDR:PORT.
    #[arg(long)]
    pub to: String,
    /// Report payloads, one hex string per line.
    #[arg(long)]
    pub payloads: std::path::PathBuf,
    /// Senders, each a thread with a socket of its own.
    #[arg(long, default_value_t = 2)]
    pub senders: u16,
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
}

/// Where the Telemetry Report 0.5 header keeps its sequence number.
const SEQUENCE: std::ops::Range<usize> = 4..8;

/// Writes `sequence` into a report datagram's header, of either version.
fn renumber(datagram: &mut [u8], sequence: u32) {
    let tr20 = datagram.first().is_some_and(|byte| byte >> 4 == 2);
    let (range, value) = match datagram.first_chunk::<4>() {
        Some(word) if tr20 => (0..4, (u32::from_be_bytes(*word) & !0x003f_ffff) | (sequence & 0x003f_ffff)),
        _ => (SEQUENCE, sequence),
    };
    if let Some(field) = datagram.get_mut(range) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}

pub fn run(args: &ReplayReportsArgs) -> Result<(), Error> {
    let payloads = Arc::new(read_payloads(&args.payloads)?);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let senders: Vec<_> = (0..args.senders)
        .map(|_| {
            let socket = UdpSocket::bind("0.0.0.0:0").map_err(Error::io("a UDP socket"))?;
            socket.connect(&args.to).map_err(Error::io(format!("--to {}", args.to)))?;
            let (payloads, stop) = (Arc::clone(&payloads), Arc::clone(&stop));
            Ok(std::thread::spawn(move || send(socket, payloads, &stop)))
        })
        .collect::<Result<_, Error>>()?;
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    stop.store(true, Ordering::Relaxed);
    let sent: u64 = senders.into_iter().map(|s| s.join().unwrap_or(0)).sum();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"sent\": {sent}, \"seconds\": {seconds:.3}, \"per_second\": {:.0}, \"senders\": {}}}",
        sent as f64 / seconds,
        args.senders
    );
    Ok(())
}

fn read_payloads(path: &std::path::Path) -> Result<Vec<Vec<u8>>, Error> {
    let text = std::fs::read_to_string(path).map_err(Error::io(path.display()))?;
    let no_payload = |what: String| Error::Missing { what, place: path.display().to_string() };
    let payloads: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let line = line.trim();
            (0..line.len())
                .step_by(2)
                .map(|i| line.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                .collect::<Option<Vec<u8>>>()
                .filter(|p| p.len() >= SEQUENCE.end)
                .ok_or_else(|| no_payload(format!("hex report payload ({line:?} is none)")))
        })
        .collect::<Result<_, Error>>()?;
    if payloads.is_empty() {
        return Err(no_payload("payload".into()));
    }
    Ok(payloads)
}

/// Sends until `stop`; returns the datagrams the kernel took.
fn send(socket: UdpSocket, payloads: Arc<Vec<Vec<u8>>>, stop: &AtomicBool) -> u64 {
    let mut sender = BatchSender::new(socket);
    let mut slots: Vec<Vec<u8>> = vec![Vec::new(); BATCH];
    let (mut sequence, mut next, mut sent) = (0u32, 0usize, 0u64);
    while !stop.load(Ordering::Relaxed) {
        for slot in &mut slots {
            slot.clear();
            slot.extend_from_slice(payloads.get(next).map_or(&[][..], |p| p.as_slice()));
            sequence = sequence.wrapping_add(1);
            renumber(slot, sequence);
            next = (next + 1) % payloads.len();
        }
        let batch: Vec<&[u8]> = slots.iter().map(Vec::as_slice).collect();
        // What the kernel refuses is not sent again: the numbers it
        // carried count as lost reports at the collector, as they would.
        sent += sender.send(&batch) as u64;
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::renumber;

    #[test]
    fn both_report_versions_are_renumbered() {
        let mut tr05 = [0x00, 0x20, 0, 0, 0, 0, 0, 9, 0xaa];
        renumber(&mut tr05, 0x0102_0304);
        assert_eq!(tr05, [0x00, 0x20, 0, 0, 1, 2, 3, 4, 0xaa]);
        // Version 2, hardware id 5, sequence 1; the node id after it kept.
        let mut tr20 = [0x21, 0x40, 0x00, 0x01, 0x0a, 0, 0, 2];
        renumber(&mut tr20, 0x0040_0007);
        assert_eq!(tr20, [0x21, 0x40, 0x00, 0x07, 0x0a, 0, 0, 2], "22 bits, the rest kept");
    }
}
