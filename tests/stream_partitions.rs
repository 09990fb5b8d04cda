//! A partitioned stream on a real three-server NATS JetStream cluster
//! (R3): two receiving collectors publish into 16 partitions by flow, and
//! three aggregators divide the partitions by leases in a key-value
//! bucket. Fed INT-MD reports of many flows (some changing path), loss
//! reports and multi-hop postcards sent out of path order and split
//! between the receivers, the aggregators' books add up to those of one
//! collector fed everything: reports, packets lost, latency reports, path
//! changes and links (joined postcards' among them). Then one aggregator
//! is killed (SIGKILL) after a third of the traffic, once it booked it:
//! its partitions move to the two others once its leases expire, and
//! their books after the rest (the postcards among it) plus what the
//! killed one had booked equal the one collector's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Instant;

use common::cluster::metric;
use common::partitions::{came, owned, phase, settled, skipped, wait_for, Figures, Fleet, Phase, CARDS};
use common::servers::stop;
use common::*;

#[test]
fn three_aggregators_over_16_partitions_add_up_to_one_collector() {
    if skipped() {
        return;
    }
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
    // The victim's books as they were: killed, it says nothing more.
    let victim = 0;
    let kept = Figures::of(fleet.aggregator_ports[victim]);
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
    came(|| fleet.booked(&survivors).plus(kept) == direct);
    assert_eq!(fleet.booked(&survivors).plus(kept), direct);
    assert!(kept.reports > 0, "the killed aggregator booked some: {kept:?}");
}
