//! What the IPFIX exporter's start (mod.rs) and its thread (exporter.rs)
//! both hold: the settings, the counts, and every reader's table.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::interval::Interval;

/// How messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: SocketAddr,
    pub transport: Transport,
    pub interval: Duration,
    pub domain: u32,
    pub pen: u32,
    /// Flows, hops and links each kept per interval at most.
    pub limit: usize,
}

impl Settings {
    /// Reads `udp://HOST:PORT`, `tcp://HOST:PORT` or `HOST:PORT` (UDP).
    pub fn parse_target(target: &str) -> Result<(SocketAddr, Transport), TargetError> {
        let error = |cause| TargetError { target: target.to_string(), cause };
        let (transport, rest) = match target.split_once("://") {
            Some(("udp", rest)) => (Transport::Udp, rest),
            Some(("tcp", rest)) => (Transport::Tcp, rest),
            Some((other, _)) => return Err(error(TargetCause::Scheme(other.to_string()))),
            None => (Transport::Udp, target),
        };
        let server = rest
            .to_socket_addrs()
            .map_err(|e| error(TargetCause::Address(e)))?
            .next()
            .ok_or_else(|| error(TargetCause::NoAddress))?;
        Ok((server, transport))
    }
}

/// An `--ipfix` target the exporter cannot send to.
#[derive(Debug, thiserror::Error)]
#[error("--ipfix {target:?}: {cause}")]
pub struct TargetError {
    pub target: String,
    pub cause: TargetCause,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetCause {
    #[error("{0}:// is not spoken, udp:// or tcp://")]
    Scheme(String),
    #[error("{0}; give it as udp://HOST:PORT or tcp://HOST:PORT")]
    Address(std::io::Error),
    #[error("the host has no address")]
    NoAddress,
}

/// What the exporter did, shared with the summary.
#[derive(Debug, Default)]
pub struct Counts {
    pub messages: AtomicU64,
    /// Data records sent.
    pub records: AtomicU64,
    /// Template records sent (each template, each time).
    pub templates: AtomicU64,
    /// Data records not sent: no connection, or the send failed.
    pub failed: AtomicU64,
    /// Flows, hops and links beyond an interval's limit.
    pub unrecorded: AtomicU64,
    pub connections: AtomicU64,
    /// TCP connections dropped because a message did not go within
    /// [`super::exporter::SEND_TIMEOUT`] (a collector that stopped reading).
    pub timeouts: AtomicU64,
}

/// One reader's interval; the exporter takes it at the interval's end.
pub(super) type Table = Arc<Mutex<Interval>>;

/// Every reader's table, for the exporter.
#[derive(Default)]
pub struct Tables {
    list: Mutex<Vec<Table>>,
}

impl Tables {
    pub(super) fn add(&self, limit: usize) -> Table {
        let table = Arc::new(Mutex::new(Interval::new(limit)));
        if let Ok(mut list) = self.list.lock() {
            list.push(Arc::clone(&table));
        }
        table
    }

    /// Every reader's interval, taken (each starts a new one) and merged.
    pub fn take(&self, limit: usize) -> Interval {
        let tables = self.list.lock().map(|list| list.clone()).unwrap_or_default();
        let mut merged = Interval::new(limit);
        for table in tables {
            // A reader holds its table for one report at a time.
            let Ok(mut interval) = table.lock() else { continue };
            let taken = std::mem::replace(&mut *interval, Interval::new(limit));
            drop(interval);
            if merged.is_empty() && merged.unrecorded == 0 {
                merged = taken;
            } else {
                merged.merge(taken);
            }
        }
        merged
    }
}
