//! Who owns which partition: leases in a JetStream key-value bucket
//! (`--partitions`, docs/scale-out.md "Leases and takeover").
//!
//! The bucket (`CONSUMER-leases`, as many replicas as the stream) holds a
//! key per partition, `p.K`, whose value names its owner (empty: free),
//! and a key per aggregator, `m.ID`, that it rewrites to say it lives.
//! Every change is revision-checked: a lease is taken with `create` (no
//! key yet) or `update` against the revision this aggregator saw, and
//! renewed with `update` against the revision it wrote, so of two
//! aggregators only one ever holds a partition. A lease (a member) is
//! expired when its revision did not change for the lease time on *this*
//! aggregator's clock: no two hosts' clocks are compared. Owners renew
//! every third of it, and stop reading a partition whose renewal failed,
//! or that they could not renew for two thirds of it (before another may
//! take it).
//!
//! Each aggregator holds its fair share of the P partitions among the N
//! members alive: P / N, one more for the first P mod N of them by id
//! (16 over 3: 6, 5, 5); more, and it releases the highest (after its
//! reader stopped); fewer, and it takes free or expired ones. A new
//! aggregator takes none until it saw the same members for a lease time
//! (at every tick of it): aggregators started together see each other
//! before any takes more than its share, rather than the first taking
//! all and giving most back a tick later.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;

use super::partition::Owned;
use crate::collect::counts::{counter, counts_of, gauge, metric_head, Counted};

/// What the leases did, for the summary and the metrics.
#[derive(Debug, Default)]
pub struct Counts {
    /// Partitions owned now.
    pub owned: AtomicU64,
    /// Aggregators alive, as this one sees them (itself included).
    pub members: AtomicU64,
    /// Leases taken (free, or another's expired).
    pub taken: AtomicU64,
    /// Leases taken from another aggregator whose lease expired.
    pub takeovers: AtomicU64,
    /// Leases lost: a renewal refused (another holds it) or not made in
    /// time (the servers away).
    pub lost: AtomicU64,
    /// Leases given up for balance (another aggregator came).
    pub released: AtomicU64,
    /// A partition's consumer not made, or its lag not read (tried again).
    pub consumer_errors: AtomicU64,
    /// A partition's pull refused or broken off (pulled again).
    pub pull_errors: AtomicU64,
    /// Messages pulled and left unacknowledged: their partition's lease
    /// went stale in hand (the process stalled past it) and was lost
    /// before they were acknowledged. The stream delivers them again to
    /// the partition's next owner.
    pub dropped: AtomicU64,
    /// Each owned partition's lag as its consumer last told: messages not
    /// yet delivered, and delivered but not acknowledged.
    pub lag: Mutex<BTreeMap<u8, Lag>>,
}

/// A partition consumer's lag.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub pending: u64,
    pub ack_pending: u64,
}

impl Counts {
    /// A partition's lag as its consumer told (`None`: no longer
    /// owned); the owned partitions' sum.
    pub fn lag_of(&self, partition: u8, lag: Option<Lag>) -> Lag {
        if let Ok(mut all) = self.lag.lock() {
            match lag {
                Some(lag) => all.insert(partition, lag),
                None => all.remove(&partition),
            };
        }
        self.lag_of_all()
    }

    /// The owned partitions' lag, summed.
    pub fn lag_of_all(&self) -> Lag {
        let Ok(all) = self.lag.lock() else { return Lag::default() };
        all.values().fold(Lag::default(), |sum, lag| Lag {
            pending: sum.pending + lag.pending,
            ack_pending: sum.ack_pending + lag.ack_pending,
        })
    }

    /// The partition furthest behind, and by how many messages.
    pub fn most_behind(&self) -> Option<(u8, u64)> {
        let all = self.lag.lock().ok()?;
        all.iter().map(|(p, lag)| (*p, lag.pending)).max_by_key(|(_, pending)| *pending)
    }

    /// Each owned partition's lag, as Prometheus samples labelled by
    /// partition.
    fn lag_metrics(&self, out: &mut String) {
        let Ok(all) = self.lag.lock() else { return };
        let families = [
            (
                "int_collect_nats_partition_pending",
                "Stream messages of the partition not yet given to its consumer.",
            ),
            (
                "int_collect_nats_partition_ack_pending",
                "Stream messages of the partition given and not yet acknowledged.",
            ),
        ];
        for (n, (name, help)) in families.into_iter().enumerate() {
            metric_head(out, name, help, "gauge");
            for (partition, lag) in all.iter() {
                let value = if n == 0 { lag.pending } else { lag.ack_pending };
                let _ = writeln!(out, "{name}{{partition=\"{partition}\"}} {value}");
            }
        }
    }
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("partitions", "NATS partitions")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let mut counts = counts_of!(
            self,
            owned,
            members,
            taken,
            takeovers,
            lost,
            released,
            consumer_errors,
            pull_errors,
            dropped
        );
        counts.push(("most_pending", self.most_behind().map_or(0, |(_, pending)| pending)));
        counts
    }

    fn metrics(&self, out: &mut String) {
        let get = |count: &AtomicU64| count.load(Ordering::Relaxed);
        gauge(
            out,
            "int_collect_nats_partitions_owned",
            "Stream partitions this aggregator owns.",
            get(&self.owned),
        );
        gauge(
            out,
            "int_collect_nats_partition_members",
            "Aggregators alive, as this one sees them.",
            get(&self.members),
        );
        let counters = [
            ("int_collect_nats_partition_leases_taken_total", "Partition leases taken.", get(&self.taken)),
            (
                "int_collect_nats_partition_takeovers_total",
                "Partition leases taken from an aggregator whose lease expired.",
                get(&self.takeovers),
            ),
            (
                "int_collect_nats_partition_leases_lost_total",
                "Partition leases lost (renewal refused or late).",
                get(&self.lost),
            ),
            (
                "int_collect_nats_partition_leases_released_total",
                "Partition leases given up for balance.",
                get(&self.released),
            ),
            (
                "int_collect_nats_partition_consumer_errors_total",
                "A partition's consumer not made or its lag not read (tried again).",
                get(&self.consumer_errors),
            ),
            (
                "int_collect_nats_partition_pull_errors_total",
                "A partition's pull refused or broken off (pulled again).",
                get(&self.pull_errors),
            ),
            (
                "int_collect_nats_partition_dropped_messages_total",
                "Messages pulled and left unacknowledged to the next owner: the lease lost in hand.",
                get(&self.dropped),
            ),
        ];
        for (name, help, value) in counters {
            counter(out, name, help, value);
        }
        self.lag_metrics(out);
    }
}

/// The bucket's name for a consumer name.
pub fn bucket(consumer: &str) -> String {
    format!("{consumer}-leases")
}

fn lease_key(partition: u8) -> String {
    format!("p.{partition}")
}

/// A key as last seen: its value, revision, and when this aggregator saw
/// the revision first (a lease's age is judged on this clock only).
struct Seen {
    value: String,
    revision: u64,
    since: Instant,
}

/// What the readers are to do after a tick.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Partitions now owned: start reading.
    pub start: Vec<u8>,
    /// Partitions lost: stop reading now.
    pub stop: Vec<u8>,
    /// Partitions to give up: stop reading, then [`Leases::release`].
    pub release: Vec<u8>,
}

/// One aggregator's leases and its view of the bucket.
pub struct Leases {
    pub me: String,
    count: u16,
    allowed: Vec<u8>,
    auto: bool,
    ttl: Duration,
    /// Partitions owned, with the revision this aggregator wrote.
    owned: BTreeMap<u8, u64>,
    /// When the request that wrote each owned lease's revision was sent:
    /// nobody else may take it for a lease time after it landed.
    written: BTreeMap<u8, Instant>,
    releasing: Vec<u8>,
    /// When every owned lease was last renewed.
    renewed: Instant,
    /// The members seen at the last tick and at how many ticks in a row,
    /// until they were the same for a lease time (then `None`: settled,
    /// and it takes its share from then on).
    settling: Option<(Vec<String>, u32)>,
    seen: HashMap<String, Seen>,
    pub counts: std::sync::Arc<Counts>,
}

impl Leases {
    pub fn new(count: u16, owned: &Owned, ttl: Duration, counts: std::sync::Arc<Counts>) -> Leases {
        let me = format!("{:x}-{:x}", std::process::id(), crate::schema::now_ns());
        let (allowed, auto) = match owned {
            Owned::Auto => ((0..count).filter_map(|p| u8::try_from(p).ok()).collect(), true),
            Owned::Listed(listed) => (listed.clone(), false),
        };
        Leases {
            me,
            count,
            allowed,
            auto,
            ttl,
            owned: BTreeMap::new(),
            written: BTreeMap::new(),
            releasing: Vec::new(),
            renewed: Instant::now(),
            // A listed aggregator's share is its list, whoever else lives.
            settling: auto.then(|| (Vec::new(), 0)),
            seen: HashMap::new(),
            counts,
        }
    }

    /// The revision this aggregator wrote `partition`'s lease at, while
    /// it owns it: a later owner's is always higher.
    pub fn revision(&self, partition: u8) -> Option<u64> {
        self.owned.get(&partition).copied()
    }

    /// Until when `partition`'s lease is surely still this aggregator's,
    /// on its own clock: two thirds of the lease after its last write was
    /// sent (the others judge it expired a whole lease after they saw that
    /// write, which came later), as an owner that could not renew stops
    /// reading. Past it, a batch in hand waits for the next renewal before
    /// it is acknowledged: the process may have stood still (its host
    /// paused, SIGSTOP) while another took the partition.
    pub fn fresh_until(&self, partition: u8) -> Option<Instant> {
        Some(*self.written.get(&partition)? + self.ttl * 2 / 3)
    }

    /// How often [`Leases::tick`] runs: a third of the lease.
    pub fn every(&self) -> Duration {
        self.ttl / 3
    }

    /// A change the bucket's watch told.
    pub fn saw(&mut self, entry: &kv::Entry) {
        let value = match entry.operation {
            kv::Operation::Put => String::from_utf8_lossy(&entry.value).into_owned(),
            kv::Operation::Delete | kv::Operation::Purge => String::new(),
        };
        let since = Instant::now();
        let seen = Seen { value, revision: entry.revision, since };
        match self.seen.get(&entry.key) {
            Some(old) if old.revision >= entry.revision => {}
            _ => {
                self.seen.insert(entry.key.clone(), seen);
            }
        }
    }

    /// Renews, then balances: what the readers are to start and stop.
    pub async fn tick(&mut self, store: &kv::Store) -> Changes {
        let mut changes = Changes::default();
        self.renew(store, &mut changes).await;
        let _ = store.put(format!("m.{}", self.me), self.me.clone().into()).await;
        let members = self.members();
        self.counts.members.store(members.len() as u64, Ordering::Relaxed);
        let fair = self.share(&members);
        let settled = self.settle(members);
        let holding = self.owned.len() - self.releasing.len();
        if holding > fair {
            let extra: Vec<u8> = self
                .owned
                .keys()
                .rev()
                .filter(|p| !self.releasing.contains(p))
                .take(holding - fair)
                .copied()
                .collect();
            self.releasing.extend(&extra);
            changes.release = extra;
        } else if holding < fair && self.releasing.is_empty() && settled {
            self.take(store, fair - holding, &mut changes).await;
        }
        self.counts.owned.store(self.owned.len() as u64, Ordering::Relaxed);
        changes
    }

    /// Every owned lease written again against its revision; a refusal,
    /// or no renewal for two thirds of the lease, loses it.
    async fn renew(&mut self, store: &kv::Store, changes: &mut Changes) {
        let late = self.renewed.elapsed() > self.ttl * 2 / 3;
        let mut all = true;
        for (partition, revision) in self.owned.clone() {
            let sent = Instant::now();
            match store.update(lease_key(partition), self.me.clone().into(), revision).await {
                Ok(new) => {
                    self.owned.insert(partition, new);
                    self.written.insert(partition, sent);
                }
                Err(error) if late || error.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                    log::warn!("collect: lost partition {partition}'s lease: {error}");
                    self.owned.remove(&partition);
                    self.written.remove(&partition);
                    self.releasing.retain(|p| *p != partition);
                    self.counts.lost.fetch_add(1, Ordering::Relaxed);
                    changes.stop.push(partition);
                }
                Err(_) => all = false,
            }
        }
        if all {
            self.renewed = Instant::now();
        }
    }

    /// Aggregators whose member key changed within the lease time (a
    /// member deleted at a graceful stop is gone at once), by id, this one
    /// among them.
    fn members(&self) -> Vec<String> {
        let alive = |key: &String, seen: &Seen| {
            let id = key.strip_prefix("m.").filter(|id| *id != self.me)?;
            let live = !seen.value.is_empty() && seen.since.elapsed() < self.ttl;
            live.then(|| id.to_string())
        };
        let mut members: Vec<String> = self.seen.iter().filter_map(|(k, s)| alive(k, s)).collect();
        members.push(self.me.clone());
        members.sort();
        members
    }

    /// This aggregator's fair share among `members` (sorted ids).
    fn share(&self, members: &[String]) -> usize {
        if !self.auto {
            return self.allowed.len();
        }
        fair_share(usize::from(self.count), members, &self.me)
    }

    /// Whether this aggregator may take leases: once it saw the same
    /// members at every tick of a lease time (its member key written at
    /// the first, so that the others count it too; one started a little
    /// later, its process slower to attach, is seen meanwhile), and from
    /// then on.
    fn settle(&mut self, members: Vec<String>) -> bool {
        let ticks = self.ttl.as_millis() / self.every().as_millis().max(1);
        let Some((before, seen)) = &mut self.settling else { return true };
        if *before == members {
            *seen += 1;
        } else {
            (*before, *seen) = (members, 1);
        }
        if u128::from(*seen) > ticks {
            self.settling = None;
        }
        self.settling.is_none()
    }

    /// Up to `wanted` free or expired partitions taken, revision-checked.
    async fn take(&mut self, store: &kv::Store, wanted: usize, changes: &mut Changes) {
        let mut taken = 0;
        for partition in self.allowed.clone() {
            if taken == wanted {
                break;
            }
            if self.owned.contains_key(&partition) {
                continue;
            }
            let key = lease_key(partition);
            let sent = Instant::now();
            let written = match self.seen.get(&key) {
                None => store.create(&key, self.me.clone().into()).await.ok(),
                Some(seen) if seen.value.is_empty() || seen.since.elapsed() >= self.ttl => {
                    let from = seen.value.clone();
                    let written = store.update(&key, self.me.clone().into(), seen.revision).await.ok();
                    if written.is_some() && !from.is_empty() && from != self.me {
                        log::warn!("collect: took partition {partition} from {from} (its lease expired)");
                        self.counts.takeovers.fetch_add(1, Ordering::Relaxed);
                    }
                    written
                }
                Some(_) => None,
            };
            if let Some(revision) = written {
                self.owned.insert(partition, revision);
                self.written.insert(partition, sent);
                self.counts.taken.fetch_add(1, Ordering::Relaxed);
                changes.start.push(partition);
                taken += 1;
            }
        }
    }

    /// A partition given up once its reader stopped: its lease freed for
    /// another (against the revision written; lost meanwhile, nothing).
    pub async fn release(&mut self, store: &kv::Store, partition: u8) {
        self.releasing.retain(|p| *p != partition);
        self.written.remove(&partition);
        if let Some(revision) = self.owned.remove(&partition) {
            if store.update(lease_key(partition), bytes::Bytes::new(), revision).await.is_ok() {
                self.counts.released.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.counts.owned.store(self.owned.len() as u64, Ordering::Relaxed);
    }

    /// Every lease given up at the end, for the others to take at once:
    /// all together (one request's wait, not one a partition), and no
    /// longer than a lease, past which they expire anyway.
    pub async fn release_all(&mut self, store: &kv::Store) {
        self.releasing.clear();
        let owned = std::mem::take(&mut self.owned);
        self.written.clear();
        self.counts.owned.store(0, Ordering::Relaxed);
        let updates = owned
            .iter()
            .map(|(partition, revision)| store.update(lease_key(*partition), bytes::Bytes::new(), *revision));
        let member = store.delete(format!("m.{}", self.me));
        let all = futures_util::future::join(futures_util::future::join_all(updates), member);
        if let Ok((released, _)) = tokio::time::timeout(self.ttl, all).await {
            let released = released.iter().filter(|update| update.is_ok()).count() as u64;
            self.counts.released.fetch_add(released, Ordering::Relaxed);
        }
    }

    /// A partition being given up: its reader is stopping.
    pub fn is_releasing(&self, partition: u8) -> bool {
        self.releasing.contains(&partition)
    }
}

/// `me`'s share of `count` partitions among `members` (sorted ids, `me`
/// among them): count / N, one more for the first count mod N. The
/// shares add up to `count`, so no partition stays free for want of an
/// aggregator below its share.
fn fair_share(count: usize, members: &[String], me: &str) -> usize {
    let n = members.len().max(1);
    let rank = members.iter().position(|m| m == me).unwrap_or(n - 1);
    count / n + usize::from(rank < count % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new aggregator takes leases once it saw the same members at every
    /// tick of a lease time (four ticks of a third), counted again from a
    /// change; a listed one at once.
    #[test]
    fn a_new_aggregator_takes_once_the_members_held_for_a_lease_time() {
        let counts = std::sync::Arc::new(Counts::default());
        let mut leases = Leases::new(16, &Owned::Auto, Duration::from_secs(3), counts.clone());
        let alone = vec![leases.me.clone()];
        let two = vec!["0-other".to_string(), leases.me.clone()];
        assert!(!leases.settle(alone.clone()));
        assert!(!leases.settle(alone));
        let settled: Vec<bool> = (0..4).map(|_| leases.settle(two.clone())).collect();
        assert_eq!(settled, [false, false, false, true]);
        assert!(leases.settle(vec![leases.me.clone()]), "settled for good");
        let mut listed = Leases::new(16, &Owned::Listed(vec![1, 2]), Duration::from_secs(3), counts);
        assert!(listed.settle(Vec::new()));
    }

    /// 16 partitions among 3 members: 6, 5, 5 by id; among 2: 8 and 8;
    /// one alone holds them all; the shares always add up.
    #[test]
    fn fair_shares_add_up_to_the_partitions() {
        let ids = |n: usize| -> Vec<String> { (0..n).map(|i| format!("a{i}")).collect() };
        let shares = |count: usize, n: usize| -> Vec<usize> {
            ids(n).iter().map(|me| fair_share(count, &ids(n), me)).collect()
        };
        assert_eq!(shares(16, 3), [6, 5, 5]);
        assert_eq!(shares(16, 2), [8, 8]);
        assert_eq!(shares(16, 1), [16]);
        for (count, n) in [(16, 5), (64, 3), (64, 7), (3, 5), (256, 9)] {
            assert_eq!(shares(count, n).iter().sum::<usize>(), count, "{count} over {n}");
        }
    }

    /// The partitions' lag: summed over those owned, the furthest behind
    /// named, each on the metrics page by partition; a partition given up
    /// leaves the sum and the page.
    #[test]
    fn lag_summed_and_shown_per_partition() {
        let counts = Counts::default();
        counts.lag_of(3, Some(Lag { pending: 40, ack_pending: 2 }));
        let sum = counts.lag_of(7, Some(Lag { pending: 5, ack_pending: 1 }));
        assert_eq!(sum, Lag { pending: 45, ack_pending: 3 });
        assert_eq!(counts.most_behind(), Some((3, 40)));
        assert!(counts.counts().contains(&("most_pending", 40)));
        let mut page = String::new();
        counts.metrics(&mut page);
        assert!(page.contains("\nint_collect_nats_partition_pending{partition=\"3\"} 40\n"), "{page}");
        assert!(page.contains("\nint_collect_nats_partition_ack_pending{partition=\"7\"} 1\n"), "{page}");
        assert_eq!(counts.lag_of(3, None), Lag { pending: 5, ack_pending: 1 });
        let mut page = String::new();
        counts.metrics(&mut page);
        assert!(!page.contains("partition=\"3\""), "{page}");
    }
}
