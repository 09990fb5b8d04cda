//! Partitions' leases at start, on a real three-server NATS JetStream
//! cluster (R3): three aggregators with `--partitions auto` started
//! together over 16 partitions settle on their shares (6, 5 and 5)
//! without any of them holding more than its share first, as the
//! first one to start did before (it took all 16 and gave most back a
//! tick later, after booking the batch in hand). The stream and the
//! leases' bucket are there before (made by an aggregator that ran
//! alone and stopped): three made at once on a fresh cluster keep two of
//! the three aggregators past the servers' 5 s answer, so they were not
//! started together in any sense the leases could see.
//!
//! And the stop of an aggregator whose servers went away: it does not
//! wait out each request (a batch's confirmation, a checkpoint, a
//! release, up to a minute before), it says so and stops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use common::cluster::{metric, start_cluster, Server};
use common::partitions::{aggregator, one_fleet, skipped, spawn_aggregator, wait_for};
use common::servers::{free_port, stop};
use common::*;

/// Each aggregator's (owned, taken, released, lost), off its metrics.
fn leases(port: u16) -> [u64; 4] {
    [
        "int_collect_nats_partitions_owned ",
        "int_collect_nats_partition_leases_taken_total ",
        "int_collect_nats_partition_leases_released_total ",
        "int_collect_nats_partition_leases_lost_total ",
    ]
    .map(|family| metric(port, family))
}

/// The servers and the aggregators, stopped whether the test passed or
/// not.
struct Running {
    servers: Vec<Server>,
    aggregators: Vec<Child>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.aggregators.drain(..).for_each(stop);
        self.servers.iter_mut().for_each(Server::kill);
    }
}

/// Stops `child` gracefully (SIGTERM: it frees its leases and its
/// member key) and waits for it.
fn terminate(mut child: Child) {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn three_aggregators_started_together_take_their_shares_and_no_more() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let dir = workdir("stream-leases");
    let mut running = Running { servers: start_cluster(&dir), aggregators: Vec::new() };
    let alone = free_port();
    running.aggregators.push(spawn_aggregator(&running.servers[0].url(), alone));
    wait_for("an aggregator alone owns the 16 partitions", || leases(alone)[0] == 16);
    terminate(running.aggregators.pop().unwrap());
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let started = Instant::now();
    let urls: Vec<String> = running.servers.iter().map(Server::url).collect();
    running.aggregators = ports.iter().zip(&urls).map(|(p, url)| spawn_aggregator(url, *p)).collect();
    // Every owned gauge read while they settle: none above its share.
    let mut most = [0u64; 3];
    let mut now = Vec::new();
    wait_for("the three aggregators own the 16 partitions between them", || {
        now = ports.iter().map(|p| leases(*p)).collect();
        for (most, now) in most.iter_mut().zip(&now) {
            *most = (*most).max(now[0]);
        }
        now.iter().map(|l| l[0]).sum::<u64>() == 16
    });
    let settled = started.elapsed();
    let mut shares: Vec<u64> = now.iter().map(|l| l[0]).collect();
    shares.sort_unstable();
    eprintln!(
        "leases: {now:?} (owned, taken, released, lost) {settled:.1?} after the start; most owned {most:?}"
    );
    assert_eq!(shares, [5, 5, 6], "16 partitions over 3: 6, 5, 5");
    assert!(most.iter().all(|m| *m <= 6), "none owned more than its share while settling: {most:?}");
    // What each took it kept: no lease was taken and given back (an
    // aggregator above its share gives the extra back at its next tick).
    for lease in &now {
        assert_eq!((lease[1], lease[2], lease[3]), (lease[0], 0, 0), "{now:?}");
    }
}

#[test]
fn an_aggregator_whose_servers_went_away_stops_without_waiting_for_them() {
    if skipped() {
        return;
    }
    let _one = one_fleet();
    let dir = workdir("stream-leases-away");
    let mut running = Running { servers: start_cluster(&dir), aggregators: Vec::new() };
    let port = free_port();
    let urls: Vec<String> = running.servers.iter().map(Server::url).collect();
    let child =
        aggregator(&urls.join(","), port).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    running.aggregators.push(child);
    wait_for("the aggregator owns the 16 partitions", || leases(port)[0] == 16);
    running.servers.iter_mut().for_each(Server::kill);
    let mut child = running.aggregators.pop().unwrap();
    let asked = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    let took = asked.elapsed();
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    eprintln!("stopped {took:.1?} after SIGTERM, its servers away");
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("the servers away at the stop"), "the stop says why it does not wait: {log}");
}
