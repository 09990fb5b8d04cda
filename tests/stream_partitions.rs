//! A partitioned stream on a real three-server NATS JetStream cluster
//! (R3): two receiving collectors publish into 16 partitions by flow, and
//! three aggregators divide the partitions by leases in a key-value
//! bucket. Fed INT-MD reports of many flows (some changing path), loss
//! reports and multi-hop postcards sent out of path order and split
//! between the receivers, the aggregators' books add up to those of one
//! collector fed everything: reports, packets lost, latency reports, path
//! changes and links (joined postcards' among them). Then one aggregator
//! is killed (SIGKILL) after a third of the traffic, once it booked it
//! and its checkpoints hold it: its partitions move to the two others
//! with their books once its leases expire, and their books after the
//! rest (the postcards among it) equal the one collector's. Last, one is killed
//! in the middle of a stream of reports, while it books them: the
//! messages it had pulled and not acknowledged come again to the new
//! owners after the consumers' acknowledgement wait, and nothing is
//! booked twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{metric, Server};
use common::partitions::{
    came, one_fleet, owned, phase, settled, skipped, wait_for, Figures, Fleet, Phase, CARDS,
};
use common::servers::{http_get, json_in, stop};
use common::*;

#[test]
fn three_aggregators_over_16_partitions_add_up_to_one_collector() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let dir = workdir("stream-partitions");
    let fleet = Fleet::start(&dir);
    let direct = fleet.send_three_phases();
    let ports = fleet.live_ports();
    let each: Vec<Figures> = ports.iter().map(|p| Figures::of(*p)).collect();
    eprintln!("partitions: direct {direct:?}; aggregators {each:?}");
    assert_eq!(fleet.booked(&ports), direct);
    assert!(direct.path_changes > 0 && direct.lost_packets > 0 && direct.link_latencies > 0, "{direct:?}");
    assert!(each.iter().all(|f| f.reports > 0), "every aggregator books some: {each:?}");
}

#[test]
fn an_aggregator_killed_after_a_third_hands_its_partitions_over() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let dir = workdir("stream-partitions-kill");
    let mut fleet = Fleet::start(&dir);
    let mut numbers = [0u32; 4];
    // Postcards after the kill only, the two phases back to back: a switch
    // silent for a join window no longer holds groups open, and the pause
    // around the kill is longer than one (docs/scale-out.md).
    let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, if n == 0 { 0 } else { CARDS })).collect();
    fleet.send(&phases[0]);
    let mut direct = settled(fleet.direct_metrics, &phases[..1]);
    let ports = fleet.live_ports();
    wait_for("the first third booked", || fleet.booked(&ports) == direct);
    // The victim's books as they were, once its checkpoints hold them:
    // killed, it says nothing more.
    let victim = 0;
    let kept = Figures::of(fleet.aggregator_ports[victim]);
    wait_for("the victim's checkpoints hold all it booked", || {
        metric(fleet.aggregator_ports[victim], "int_collect_nats_checkpoint_uncovered ") == 0
    });
    let held = metric(fleet.aggregator_ports[victim], "int_collect_nats_partitions_owned ");
    let killed_at = Instant::now();
    let child = fleet.aggregators[victim].take().unwrap();
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
    stop(child);
    let survivors = fleet.live_ports();
    wait_for("the survivors own the 16 partitions", || owned(&survivors).0 == 16);
    let takeover = killed_at.elapsed();
    let takeovers: u64 =
        survivors.iter().map(|p| metric(*p, "int_collect_nats_partition_takeovers_total ")).sum();
    eprintln!(
        "partitions: aggregator killed holding {held} partitions; the survivors owned all 16 after {:.2} s ({takeovers} takeovers)",
        takeover.as_secs_f64()
    );
    assert_eq!(takeovers, held, "each of the killed aggregator's partitions taken over once");
    for phase in &phases[1..] {
        fleet.send(phase);
    }
    direct = settled(fleet.direct_metrics, &phases);
    // The victim's books moved with its partitions: the survivors' are
    // the whole.
    came(|| fleet.booked(&survivors) == direct);
    assert_eq!(fleet.booked(&survivors), direct);
    assert!(kept.reports > 0, "the killed aggregator booked some: {kept:?}");
}

/// The stream's messages, as the servers' monitoring pages say (the
/// most any says: a follower may be behind).
fn stream_messages(servers: &[Server]) -> u64 {
    let of = |server: &Server| -> Option<u64> {
        let page = json_in(&http_get(server.monitor, "/jsz?accounts=true&streams=true")?)?;
        let accounts = page["account_details"].as_array()?.clone();
        accounts.iter().find_map(|account| {
            let streams = account["stream_detail"].as_array()?;
            let stream = streams.iter().find(|stream| stream["name"] == "INT")?;
            stream["state"]["messages"].as_u64()
        })
    };
    servers.iter().filter_map(of).max().unwrap_or(0)
}

/// The messages a collect booked from the stream, in its metrics page.
fn messages_in(page: &str) -> u64 {
    let line = page.lines().find(|l| l.starts_with("int_collect_nats_consumer_messages_total "));
    line.and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0)
}

/// Messages an aggregator pulls at once from a partition (collect's
/// `BATCH`).
const BATCH: u64 = 16;

/// Killed while it books a stream of reports: the aggregator's figures
/// are read, then it is killed at once (SIGKILL), while the senders go on.
/// What it booked at the kill cannot be read after it; what it booked at
/// the last read, V, can. Its messages pulled and not acknowledged come
/// again to the new owners after the consumers' acknowledgement wait
/// (10 s, fixed: no option sets it), and the test waits until every
/// partition's consumer has nothing pending and nothing awaiting
/// acknowledgement. Then, D the one collector's figures and S the
/// survivors': S + V is at most D (a report booked by the killed one and
/// again by a survivor would show above D unless it was booked between
/// the read and the kill); and in messages, the stream's less the
/// survivors' less V's, what it acknowledged after the read (booked or
/// in hand), is at most a pull (16 messages) for each partition it read
/// (in hand at the kill) and the most it booked between two reads (the
/// test's thread may wait for a CPU between the read and the kill).
/// Path changes are not compared: the flows of its partitions are split
/// between it and their new owners, who see them as new.
#[test]
fn an_aggregator_killed_while_booking_loses_nothing_to_the_others() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let dir = workdir("stream-partitions-midflow");
    let mut fleet = Fleet::start(&dir);
    let mut numbers = [0u32; 4];
    // No postcards: a packet's group split by the kill is joined by none.
    let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, 0)).collect();
    let victim = 0;
    let victim_port = fleet.aggregator_ports[victim];
    let held = metric(victim_port, "int_collect_nats_partitions_owned ");
    let mut child = fleet.aggregators[victim].take().unwrap();
    let sent = std::sync::atomic::AtomicBool::new(false);
    let (mut kept, mut kept_messages, mut reads, mut step) = (Figures::default(), 0, 0, 0);
    let killed_at = std::thread::scope(|scope| {
        scope.spawn(|| {
            for phase in &phases {
                fleet.send_paced(phase, Duration::from_millis(1));
            }
            sent.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        // Read until a read finds it booking (more than the read before),
        // then kill it at once.
        let booking = came(|| {
            let page = http_get(victim_port, "/metrics").unwrap_or_default();
            let now = Figures::in_page(&page);
            reads += 1;
            let more = now.reports > kept.reports && kept.reports > 0;
            step = step.max(messages_in(&page).saturating_sub(kept_messages));
            (kept, kept_messages) = (now, messages_in(&page));
            more || sent.load(std::sync::atomic::Ordering::Relaxed)
        });
        let _ = child.kill();
        let killed_at = Instant::now();
        assert!(booking && !sent.load(std::sync::atomic::Ordering::Relaxed), "killed while the reports flow");
        killed_at
    });
    let _ = child.wait();
    let survivors = fleet.live_ports();
    wait_for("the survivors own the 16 partitions", || owned(&survivors).0 == 16);
    let takeover = killed_at.elapsed();
    let direct = settled(fleet.direct_metrics, &phases);
    // Every partition read and acknowledged to its end: the killed one's
    // unacknowledged messages come again after the 10 s wait.
    let mut lag = (0, 0, 0);
    let whole = came(|| {
        lag = fleet.lag(&survivors);
        lag == (16, 0, 0)
    });
    let booked = fleet.booked(&survivors);
    let survivors_messages: u64 =
        survivors.iter().map(|p| messages_in(&http_get(*p, "/metrics").unwrap_or_default())).sum();
    let messages = stream_messages(&fleet.servers);
    let redelivered: u64 =
        survivors.iter().map(|p| metric(*p, "int_collect_nats_consumer_redelivered_total ")).sum();
    let takeovers: u64 =
        survivors.iter().map(|p| metric(*p, "int_collect_nats_partition_takeovers_total ")).sum();
    let after_read = messages.saturating_sub(survivors_messages + kept_messages);
    eprintln!(
        "partitions: killed while booking ({} reports, {kept_messages} messages booked at the last of {reads} reads, \
         {held} partitions); owned by the survivors after {:.2} s ({takeovers} takeovers); {redelivered} messages \
         delivered again; direct {direct:?}, survivors {booked:?}; the stream's {messages} messages: survivors \
         {survivors_messages}, acknowledged by the killed one after the read {after_read} ({:?}; between two reads at most {step})",
        kept.reports,
        takeover.as_secs_f64(),
        direct.less(booked)
    );
    assert!(whole, "every partition acknowledged to its end: {lag:?}");
    assert_eq!(takeovers, held, "each of the killed aggregator's partitions taken over once");
    // The victim's books up to its last checkpoint are in the
    // survivors' (they took them with its partitions).
    assert!(booked.within(direct), "nothing booked twice: {booked:?} against {direct:?}");
    assert!(survivors_messages + kept_messages <= messages, "no message booked twice");
    assert!(
        after_read <= BATCH * held + step,
        "at most a pull a partition in hand at the kill, and what it booked between two reads ({step}): {after_read}"
    );
    assert!(redelivered > 0, "the messages it had pulled came again to the survivors");
}
