//! Every receiver's books merged into one copy: what the summary, the
//! Prometheus page, the plot, the web view and the saved state read.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::congestion;
use super::hops::{self, Hops};
use super::join::Counts as JoinCounts;
use super::ledger::{self, Ledger};
use super::sender::Sender;
use super::{Books, Totals};

/// Every receiver's books, merged.
#[derive(Clone)]
pub struct Snapshot {
    pub ledger: Ledger,
    pub hops: Hops,
    pub senders: BTreeMap<SocketAddr, Sender>,
    pub totals: Totals,
    /// What the join of postcards did.
    pub joins: JoinCounts,
    /// Every queue's figures and episodes.
    pub congestion: congestion::View,
}

impl Snapshot {
    pub fn of(books: &Books) -> Snapshot {
        Snapshot {
            ledger: books.ledger.clone(),
            hops: books.hops.clone(),
            senders: books.senders.clone(),
            totals: books.totals.clone(),
            joins: books.join.counts,
            congestion: books.congestion.view(),
        }
    }

    /// [`Snapshot::of`], leaving `books` empty (for the summary at exit).
    pub fn take(books: &mut Books) -> Snapshot {
        let ledger = Ledger::new(ledger::Limits { flows: 0, detailed: 0 }, Default::default());
        let hops = Hops::new(hops::Limits { nodes: 0, links: 0, flows: 0 });
        Snapshot {
            ledger: std::mem::replace(&mut books.ledger, ledger),
            hops: std::mem::replace(&mut books.hops, hops),
            senders: std::mem::take(&mut books.senders),
            totals: std::mem::take(&mut books.totals),
            joins: books.join.counts,
            congestion: books.congestion.view(),
        }
    }

    /// [`Snapshot::of`] with only the flows a scrape of `top` flows shows.
    pub fn view(books: &Books, top: usize) -> Snapshot {
        Snapshot {
            ledger: books.ledger.view(top),
            hops: books.hops.clone(),
            senders: books.senders.clone(),
            totals: books.totals.clone(),
            joins: books.join.counts,
            congestion: books.congestion.view(),
        }
    }

    /// Merges snapshots; a sender's datagrams all reach one socket, so
    /// senders never collide, but they are summed if they do.
    pub fn merge(parts: impl Iterator<Item = Snapshot>) -> Snapshot {
        let mut parts = parts;
        let Some(mut all) = parts.next() else {
            let limits = ledger::Limits { flows: 0, detailed: 0 };
            return Snapshot {
                ledger: Ledger::new(limits, Default::default()),
                hops: Hops::new(hops::Limits { nodes: 0, links: 0, flows: 0 }),
                senders: BTreeMap::new(),
                totals: Totals::default(),
                joins: JoinCounts::default(),
                congestion: congestion::View::default(),
            };
        };
        for part in parts {
            all.ledger.merge(&part.ledger);
            all.hops.merge(&part.hops);
            all.joins.merge(&part.joins);
            all.congestion.merge(&part.congestion);
            for (address, sender) in part.senders {
                let ours = all.senders.entry(address).or_default();
                ours.lost_reports += sender.lost_reports;
                ours.resyncs += sender.resyncs;
                ours.late += sender.late;
            }
            all.totals.received += part.totals.received;
            all.totals.reports += part.totals.reports;
            all.totals.kernel_drops += part.totals.kernel_drops;
            for (reason, count) in part.totals.malformed {
                *all.totals.malformed.entry(reason).or_default() += count;
            }
        }
        all
    }

    pub fn lost_reports(&self) -> u64 {
        self.senders.values().map(|s| s.lost_reports).sum()
    }
}
