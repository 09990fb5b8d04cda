//! An aggregator that stands still past its lease, then goes on: the
//! fleet of `stream_partitions.rs` (three servers, two receivers, three
//! aggregators over 16 partitions) and a fleet view. One aggregator is
//! stopped (SIGSTOP: a host paused, a debugger) while it books a stream
//! of reports; the others take its partitions once its leases expire,
//! read its checkpoints and go on; the second part of the traffic comes
//! while it stands still. Woken (SIGCONT), it finds its leases lost,
//! leaves the batches in hand unacknowledged to the new owners, cannot
//! write over their checkpoints, and takes its share back; the rest of
//! the traffic (postcards among it) is booked by the fleet as by one
//! collector.
//!
//! What the stall costs is named, not hidden: the reports the stalled
//! aggregator booked after its last checkpoint (acknowledged, so never
//! delivered again) are lost with its refused last write, and counted
//! there (`int_collect_nats_checkpoint_lost_datagrams_total`), as a
//! kill between two checkpoints loses them. Nothing is booked twice: the
//! fleet view is at most the one collector at every look from the wake
//! on, its state for the lost partitions (at their older lease
//! revisions) arriving after the new owners'.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cluster::{metric, Server};
use common::partitions::{
    came, one_fleet, owned, phase, settled, skipped, wait_for, Figures, Fleet, Phase, CARDS,
};
use common::servers::{free_port, http_get, stop};
use common::*;

/// A signal to a process by its id (`STOP`, `CONT`).
fn signal(name: &str, pid: u32) {
    let sent = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().unwrap();
    assert!(sent.success(), "kill -{name} {pid}");
}

/// The stopped aggregator woken whatever happens, so that the fleet's
/// stop (SIGKILL) and a failing test's output are not held by it.
struct Stalled(u32);

impl Drop for Stalled {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.to_string()]).status();
    }
}

/// The fleet view, stopped whether the test passes or not.
struct View(Option<Child>);

impl Drop for View {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            stop(child);
        }
    }
}

/// `collect --fleet-view` over the fleet's servers, its metrics on `port`.
fn fleet_view(fleet: &Fleet, port: u16) -> View {
    let urls: Vec<String> = fleet.servers.iter().map(Server::url).collect();
    let child = Command::new(tools_bin())
        .args(["collect", "--from-nats", &urls.join(","), "--fleet-view"])
        .args(["--quiet", "--interval", "0", "--duration", "600"])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    View(Some(child))
}

/// The sum of a metric over the aggregators on `ports`.
fn sum(ports: &[u16], line: &str) -> u64 {
    ports.iter().map(|p| metric(*p, line)).sum()
}

/// Stops the victim (SIGSTOP) right after a read of its metrics that finds
/// it booking, while the first part is sent a datagram a millisecond;
/// returns when it was stopped, once the part is sent.
fn stop_while_booking(fleet: &Fleet, part: &Phase, victim: (u16, u32)) -> Instant {
    let sent = AtomicBool::new(false);
    let mut before = Figures::default();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            fleet.send_paced(part, Duration::from_millis(1));
            sent.store(true, Ordering::Relaxed);
        });
        let booking = came(|| {
            let now = Figures::of(victim.0);
            let more = now.reports > before.reports && before.reports > 0;
            before = now;
            more || sent.load(Ordering::Relaxed)
        });
        signal("STOP", victim.1);
        let stopped_at = Instant::now();
        assert!(booking && !sent.load(Ordering::Relaxed), "stopped while the reports flow");
        eprintln!("stall: stopped having booked {} reports", before.reports);
        stopped_at
    })
}

#[test]
fn an_aggregator_stalled_past_its_lease_books_nothing_twice_and_takes_its_share_back() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let fleet = Fleet::start(&workdir("stream-stall"));
    let view_port = free_port();
    let _view = fleet_view(&fleet, view_port);
    let live = "int_collect_fleet_aggregators{state=\"live\"} ";
    wait_for("the view hears the three aggregators", || metric(view_port, live) == 3);
    let mut numbers = [0u32; 4];
    // Postcards in the rest only: a packet's group split by the stall is
    // joined by none.
    let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, if n == 2 { CARDS } else { 0 })).collect();
    let ports = fleet.live_ports();
    let (victim, others) = (ports[0], [ports[1], ports[2]]);
    let held = metric(victim, "int_collect_nats_partitions_owned ");
    let pid = fleet.aggregators[0].as_ref().unwrap().id();
    let stopped_at = stop_while_booking(&fleet, &phases[0], (victim, pid));
    let _woken = Stalled(pid);
    wait_for("the others own the 16 partitions", || owned(&others).0 == 16);
    let taken = stopped_at.elapsed();
    fleet.send(&phases[1]);
    let two = settled(fleet.direct_metrics, &phases[..2]);
    signal("CONT", pid);
    let (woke_at, stall) = (Instant::now(), stopped_at.elapsed());
    // From the wake on, every look of the view's at most the one
    // collector's: the stalled one's books of the partitions it lost,
    // published after the new owners', are not counted again.
    let mut over = Vec::new();
    let mut look = || {
        let now = Figures::of(view_port);
        if !now.within(two) {
            over.push(now);
        }
    };
    wait_for("the stalled aggregator finds its leases lost", || {
        look();
        metric(victim, "int_collect_nats_partition_leases_lost_total ") == held
    });
    let noticed = woke_at.elapsed();
    let mut shares = Vec::new();
    wait_for("its share back (6, 5, 5), each partition read and acknowledged to its end", || {
        look();
        shares = ports.iter().map(|p| metric(*p, "int_collect_nats_partitions_owned ")).collect();
        shares.sort_unstable();
        let members = ports.iter().all(|p| metric(*p, "int_collect_nats_partition_members ") == 3);
        members && shares == [5, 5, 6] && fleet.lag(&ports) == (16, 0, 0)
    });
    let settled_after = woke_at.elapsed();
    let mut before = Figures::default();
    wait_for("the view holds the aggregators' books", || {
        look();
        before = Figures::of(view_port);
        before == fleet.booked(&ports)
    });
    report((victim, &ports), (held, taken, stall, noticed, settled_after), (two, before));
    assert!(over.is_empty(), "nothing counted twice in the view: {over:?} against {two:?}");
    // What it lost is what it names: booked since its last checkpoint,
    // acknowledged, its last write refused.
    let lost = metric(victim, "int_collect_nats_checkpoint_lost_datagrams_total ");
    assert!(before.within(two), "nothing booked twice: {before:?} against {two:?}");
    assert!(
        two.reports - before.reports <= lost,
        "lost {} reports, named {lost}",
        two.reports - before.reports
    );
    // The rest, booked by the fleet with it back as by one collector: the
    // view moves as the one collector does, in every figure.
    fleet.send(&phases[2]);
    let all = settled(fleet.direct_metrics, &phases);
    let mut after = Figures::default();
    let agreed = came(|| {
        after = Figures::of(view_port);
        after.less(before) == all.less(two) && fleet.booked(&ports) == after
    });
    eprintln!("stall: the rest, one collector {:?}, the view {:?}", all.less(two), after.less(before));
    assert!(agreed, "the rest as one collector: {:?} against {:?}", after.less(before), all.less(two));
    assert!(Figures::of(victim).reports > 0, "the woken aggregator books its share of the rest");
}

/// The test's figures, said: how long it stood still, what it dropped,
/// what the others took and were delivered again.
fn report(
    (victim, ports): (u16, &[u16]),
    (held, taken, stall, noticed, settled): (u64, Duration, Duration, Duration, Duration),
    (direct, view): (Figures, Figures),
) {
    let page = http_get(victim, "/metrics").unwrap_or_default();
    let of = |line: &str| metric_in(&page, line);
    eprintln!(
        "stall: {held} partitions, owned by the others {:.2} s after the stop; stood still {:.2} s; \
         its leases lost {:.2} s after the wake, share back and every consumer read {:.2} s after it; \
         dropped unacknowledged {} messages, unconfirmed {}, checkpoint writes refused {}, lost {} datagrams; \
         the others: {} takeovers, {} messages behind the checkpoints read, {} delivered again; \
         one collector {direct:?}, view {view:?} ({:?} short)",
        taken.as_secs_f64(),
        stall.as_secs_f64(),
        noticed.as_secs_f64(),
        settled.as_secs_f64(),
        of("int_collect_nats_partition_dropped_messages_total "),
        of("int_collect_nats_consumer_unconfirmed_total "),
        of("int_collect_nats_checkpoints_total{outcome=\"refused\"} "),
        of("int_collect_nats_checkpoint_lost_datagrams_total "),
        sum(ports, "int_collect_nats_partition_takeovers_total "),
        sum(ports, "int_collect_nats_checkpoint_behind_messages_total "),
        sum(ports, "int_collect_nats_consumer_redelivered_total "),
        direct.less(view),
    );
    // Each aggregator's counts, the victim first: where a shortfall came
    // from, should a run fail.
    let families = [
        "int_collect_nats_checkpoints_total{outcome=\"failed\"} ",
        "int_collect_nats_checkpoints_total{outcome=\"refused\"} ",
        "int_collect_nats_checkpoint_lost_datagrams_total ",
        "int_collect_nats_checkpoint_behind_messages_total ",
        "int_collect_nats_consumer_unconfirmed_total ",
        "int_collect_nats_partition_dropped_messages_total ",
        "int_collect_nats_partition_leases_released_total ",
        "int_collect_nats_partition_leases_lost_total ",
    ];
    for port in ports {
        let counts: Vec<u64> = families.iter().map(|family| metric(*port, family)).collect();
        eprintln!("stall: aggregator {port}: failed, refused, lost, behind, unconfirmed, dropped, released, lost leases {counts:?}");
    }
}

fn metric_in(page: &str, line: &str) -> u64 {
    let found = page.lines().find(|l| l.starts_with(line));
    found.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}
