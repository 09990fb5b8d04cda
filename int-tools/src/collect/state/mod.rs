//! `collect --state DIR`: the books and the web view's board kept across
//! restarts. At start the state is read back (a state that cannot be read
//! stops collect with the file named and a hint; never a guess); a thread
//! of its own writes it at every `--state-interval-s` and collect writes
//! it once more at exit, after the readers stopped. The receivers pay only
//! the brief locks of a copy, as for the summary.
//!
//! A state is bounded: the view's events and points older than
//! `--state-max-age-s` (the view's time) are dropped, and while the
//! encoded state exceeds `--state-max-bytes` the oldest half of every
//! history of the view goes, events first; books that alone exceed it are
//! not written (a warning, counted). The books themselves are bounded by
//! `--max-flows`, `--max-nodes` and `--max-links`.

pub mod args;
mod store;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::collect::books::hops::Hops;
use crate::collect::books::join::Counts as JoinCounts;
use crate::collect::books::ledger::Ledger;
use crate::collect::books::sender::Sender;
use crate::collect::books::snapshot::Snapshot;
use crate::collect::books::Totals;
use crate::collect::counts::{counter_family, counts_of, gauge, Counted};
use crate::collect::shared::Shared;
use crate::collect::views::web::Board;
pub use store::{Part, Store, StoreError, FORMAT};

/// What `--state` and its bounds ask for.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub interval: Duration,
    pub max_bytes: u64,
    pub max_age: Duration,
}

/// The books as a state keeps them: every reader's, merged, what the join
/// of postcards did (the postcards waiting are joined before the last
/// write), and the timelines' start.
#[derive(serde::Deserialize)]
pub struct Kept {
    pub ledger: Ledger,
    pub hops: Hops,
    pub senders: BTreeMap<SocketAddr, Sender>,
    pub totals: Totals,
    pub joins: JoinCounts,
    pub time_base: Option<(u64, bool)>,
}

/// [`Kept`] as it is written: borrowed from a snapshot.
#[derive(serde::Serialize)]
pub struct Keeping<'a> {
    ledger: &'a Ledger,
    hops: &'a Hops,
    senders: &'a BTreeMap<SocketAddr, Sender>,
    totals: &'a Totals,
    joins: &'a JoinCounts,
    time_base: Option<(u64, bool)>,
}

impl Keeping<'_> {
    pub fn of(snapshot: &Snapshot) -> Keeping<'_> {
        Keeping {
            ledger: &snapshot.ledger,
            hops: &snapshot.hops,
            senders: &snapshot.senders,
            totals: &snapshot.totals,
            joins: &snapshot.joins,
            time_base: snapshot.ledger.time_base(),
        }
    }
}

/// What a state gave back at start.
#[derive(Default)]
pub struct Restored {
    pub books: Option<Kept>,
    pub board: Option<Board>,
}

/// What the state's writes did, for the summary and the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    /// States written whole.
    pub written: AtomicU64,
    /// Writes that failed, or books alone over `--state-max-bytes`.
    pub failed: AtomicU64,
    /// The view's events and points left out by age or size.
    pub trimmed: AtomicU64,
    /// The last state's size: its books and board, encoded.
    pub bytes: AtomicU64,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("state", "state")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, written, failed, trimmed, bytes)
    }

    fn metrics(&self, out: &mut String) {
        let help = "States written whole, failed, and the view's events and points left out by age or size.";
        counter_family(
            out,
            "int_collect_state_writes_total",
            help,
            self.outcomes(&["written", "failed", "trimmed"]),
        );
        let help = "The last --state written, bytes.";
        gauge(out, "int_collect_state_bytes", help, self.bytes.load(Ordering::Relaxed));
    }
}

/// Opens the state and reads it back.
pub fn open(settings: &Settings) -> Result<(Store, Restored), StoreError> {
    let store = Store::open(&settings.dir)?;
    let mut parts = store.read(&[Part::Books, Part::Board])?.into_iter();
    let restored = Restored {
        books: parts.next().flatten().map(|bytes| decoded(&store, Part::Books, &bytes)).transpose()?,
        board: parts.next().flatten().map(|bytes| decoded(&store, Part::Board, &bytes)).transpose()?,
    };
    Ok((store, restored))
}

fn decoded<T: serde::de::DeserializeOwned>(store: &Store, part: Part, bytes: &[u8]) -> Result<T, StoreError> {
    ciborium::from_reader(bytes).map_err(|error| StoreError::Decode {
        file: store.file().to_path_buf(),
        part: part.key(),
        cause: error.to_string(),
    })
}

/// The state's writer: the store, the board to copy (with `--http`), the
/// bounds and the counts.
pub struct Writer {
    pub store: Store,
    pub board: Option<Arc<RwLock<Board>>>,
    pub settings: Settings,
    pub counts: Arc<Counts>,
}

impl Writer {
    /// Writes the state at every interval until the collector stops (the
    /// last write is [`Writer::write`]'s, at exit).
    pub fn spawn(mut self, shared: Arc<Shared>) -> std::io::Result<std::thread::JoinHandle<Writer>> {
        std::thread::Builder::new().name("collect-state".into()).spawn(move || {
            let mut next = Instant::now() + self.settings.interval;
            while !shared.quit.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    self.write(&shared.snapshot());
                    next = Instant::now() + self.settings.interval;
                }
                std::thread::sleep(Duration::from_millis(50).min(self.settings.interval));
            }
            self
        })
    }

    /// Writes `snapshot` and the board, within the bounds.
    pub fn write(&mut self, snapshot: &Snapshot) {
        let board = self.board.as_ref().and_then(|board| board.read().ok().map(|b| b.clone()));
        match self.encode(&Keeping::of(snapshot), board) {
            Ok((books, board)) => {
                let mut parts = vec![(Part::Books, books.as_slice())];
                parts.extend(board.as_deref().map(|b| (Part::Board, b)));
                let bytes = parts.iter().map(|(_, b)| b.len() as u64).sum();
                match self.store.write(&parts) {
                    Ok(()) => {
                        self.counts.bytes.store(bytes, Ordering::Relaxed);
                        self.counts.written.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(error) => {
                        log::warn!("collect: {error}");
                        self.counts.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
            Err(error) => {
                log::warn!(
                    "collect: --state {}: {error}; the state before stays",
                    self.store.file().display()
                );
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The books and the board encoded within `--state-max-bytes`: the
    /// board's histories older than `--state-max-age-s` left out, then
    /// halved, oldest first, until the whole fits.
    fn encode(
        &self,
        books: &Keeping<'_>,
        board: Option<Board>,
    ) -> Result<(Vec<u8>, Option<Vec<u8>>), Unwritten> {
        let books = encoded(books)?;
        let room = self.settings.max_bytes.saturating_sub(books.len() as u64);
        if room == 0 {
            return Err(Unwritten::Over { part: "books", bytes: books.len() });
        }
        let Some(mut board) = board else { return Ok((books, None)) };
        let age_ms = u64::try_from(self.settings.max_age.as_millis()).unwrap_or(u64::MAX);
        let mut trimmed = board.forget_before(board.now_ms.saturating_sub(age_ms));
        let bytes = loop {
            let bytes = encoded(&board)?;
            if bytes.len() as u64 <= room {
                break bytes;
            }
            match board.thin() {
                0 => return Err(Unwritten::Over { part: "view", bytes: bytes.len() }),
                dropped => trimmed += dropped,
            }
        };
        self.counts.trimmed.fetch_add(trimmed as u64, Ordering::Relaxed);
        Ok((books, Some(bytes)))
    }
}

/// Why a state is not written (the state before stays).
#[derive(Debug, thiserror::Error)]
enum Unwritten {
    #[error("the {part} take {bytes} bytes, over --state-max-bytes")]
    Over { part: &'static str, bytes: usize },
    #[error("cannot encode: {0}")]
    Encode(#[from] ciborium::ser::Error<std::io::Error>),
}

fn encoded(value: &impl serde::Serialize) -> Result<Vec<u8>, Unwritten> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes)?;
    Ok(bytes)
}
