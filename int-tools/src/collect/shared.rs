//! What the readers share with the main thread and the views: every
//! reader's books, the count of reports, the signal to stop, and every
//! part's counts.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, PoisonError};

use super::books::snapshot::Snapshot;
use super::books::Books;
use super::counts::Counted;
use super::names::Naming;

pub struct Shared {
    pub books: Vec<Arc<Mutex<Books>>>,
    pub reports: AtomicU64,
    pub quit: AtomicBool,
    /// The exporters', the consumer's, the view's and the state's counts,
    /// for the summary and the metrics; a reload swaps the exporters'.
    pub counted: Mutex<Vec<Arc<dyn Counted>>>,
    /// What each node is called, for the views that show names.
    pub names: Naming,
}

impl Shared {
    /// Every part's counts as they are now.
    pub fn counted(&self) -> Vec<Arc<dyn Counted>> {
        self.counted.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Every receiver's books, merged.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::merge(self.books.iter().filter_map(|books| books.lock().ok().map(|b| Snapshot::of(&b))))
    }

    /// [`Shared::snapshot`], the books moved out rather than copied
    /// (collect is ending): no second copy of the books at their largest.
    pub fn take_snapshot(&self) -> Snapshot {
        Snapshot::merge(
            self.books.iter().filter_map(|books| books.lock().ok().map(|mut b| Snapshot::take(&mut b))),
        )
    }

    /// [`Shared::snapshot`] with only the flows a scrape of `top` flows
    /// shows ([`Ledger::view`](crate::collect::books::ledger::Ledger::view)).
    pub fn view(&self, top: usize) -> Snapshot {
        Snapshot::merge(
            self.books.iter().filter_map(|books| books.lock().ok().map(|b| Snapshot::view(&b, top))),
        )
    }
}
