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
//! killed one had booked equal the one collector's. Last, one is killed
//! in the middle of a stream of reports, while it books them: the
//! messages it had pulled and not acknowledged come again to the new
//! owners after the consumers' acknowledgement wait, and nothing is
//! booked twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{metric, start_cluster, Server};
use common::collector::{drop_summary, loss_report, postcard_report, start_collector, udp_stack_report};
use common::servers::{free_port, http_get, json_in, stop, NATS};
use common::*;
use int_core::int21::{HopMetadata, Instructions};

const STREAM_BYTES: &str = "67108864";
const PARTITIONS: &str = "16";
/// Flows of INT-MD reports a phase, and packets each.
const FLOWS: u16 = 48;
const PACKETS: u16 = 12;
/// Packets a phase whose postcards three switches send.
const CARDS: u16 = 60;
/// The postcards' join window: longer than a receiving collector's
/// hand-over and publishing delay on a busy host (a packet's postcards
/// reach the aggregator through two receivers).
const JOIN_WINDOW_MS: &str = "5000";

/// The figures compared, read off a collector's Prometheus page: reports,
/// packets lost (over the sinks), latency reports, path changes, and the
/// latencies counted over every link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Figures {
    reports: u64,
    lost_packets: u64,
    latency_reports: u64,
    path_changes: u64,
    link_latencies: u64,
}

impl Figures {
    fn of(port: u16) -> Figures {
        Figures::in_page(&http_get(port, "/metrics").unwrap_or_default())
    }

    fn in_page(page: &str) -> Figures {
        let sum = |family: &str| -> u64 {
            page.lines()
                .filter(|l| l.starts_with(family) && !l.starts_with('#'))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                .sum()
        };
        Figures {
            reports: sum("int_collect_reports_total "),
            lost_packets: sum("int_collect_sink_lost_packets_total{"),
            latency_reports: sum("int_collect_latency_seconds_count "),
            path_changes: sum("int_collect_path_changes_total "),
            link_latencies: sum("int_collect_link_latency_seconds_count{"),
        }
    }

    /// Each figure of `self` less `other`'s, none below zero.
    fn less(self, other: Figures) -> Figures {
        Figures {
            reports: self.reports.saturating_sub(other.reports),
            lost_packets: self.lost_packets.saturating_sub(other.lost_packets),
            latency_reports: self.latency_reports.saturating_sub(other.latency_reports),
            path_changes: self.path_changes.saturating_sub(other.path_changes),
            link_latencies: self.link_latencies.saturating_sub(other.link_latencies),
        }
    }

    /// Each figure, path changes aside, at most `other`'s.
    fn within(self, other: Figures) -> bool {
        self.reports <= other.reports
            && self.lost_packets <= other.lost_packets
            && self.latency_reports <= other.latency_reports
            && self.link_latencies <= other.link_latencies
    }

    fn plus(self, other: Figures) -> Figures {
        Figures {
            reports: self.reports + other.reports,
            lost_packets: self.lost_packets + other.lost_packets,
            latency_reports: self.latency_reports + other.latency_reports,
            path_changes: self.path_changes + other.path_changes,
            link_latencies: self.link_latencies + other.link_latencies,
        }
    }
}

/// What each of the four senders sends in one phase: INT-MD stacks and
/// TR 2.0 loss reports (to receiver A), drop summaries (to B), the near
/// switches' postcards (1 and 2, to A) and the far switch's (3 or 4, to
/// B). Each sender numbers its datagrams on from `numbers`.
struct Phase {
    /// (sender, receiver index, datagram), in sending order.
    datagrams: Vec<(usize, usize, Vec<u8>)>,
    /// The link latencies and path changes its traffic makes.
    links: u64,
    changes: u64,
}

/// One phase's traffic: flows and packets of their own (no flow spans two
/// phases, so an aggregator killed between them leaves no flow half
/// booked), a third of the flows changing path halfway.
fn phase(n: u16, numbers: &mut [u32; 4], cards: u16) -> Phase {
    let mut datagrams = Vec::new();
    let mut next = |sender: usize| {
        numbers[sender] += 1;
        numbers[sender]
    };
    let bitmap = (
        Instructions::NODE_ID
            | Instructions::HOP_LATENCY
            | Instructions::QUEUE_OCCUPANCY
            | Instructions::INGRESS_TIMESTAMP
            | Instructions::EGRESS_TIMESTAMP,
        7,
    );
    for packet in 0..PACKETS {
        for f in 0..FLOWS {
            let flow = n * FLOWS + f;
            let middle = if f % 3 == 0 && packet >= PACKETS / 2 { 5 } else { 2 };
            let t = 1_700_000_000_000_000_000 + u64::from(packet) * 1_000_000 + u64::from(flow) * 1000;
            let hop = |node: u32, at: u64| HopMetadata {
                node_id: Some(node),
                hop_latency: Some(700 + node),
                queue: Some((0, 3)),
                ingress_timestamp: Some(at),
                egress_timestamp: Some(at + 700),
                ..Default::default()
            };
            let stack = [hop(3, t + 20_000), hop(middle, t + 10_000), hop(1, t)];
            let addresses = (Ipv4Addr::new(10, 1, (flow >> 8) as u8, flow as u8), Ipv4Addr::new(10, 2, 0, 1));
            let report = udp_stack_report(
                next(0),
                9,
                (addresses.0, addresses.1, 7000 + flow, 5000),
                &stack,
                t + 30_000,
                bitmap,
            );
            datagrams.push((0, 0, report));
        }
    }
    for f in (0..FLOWS).step_by(4) {
        let port = 7000 + n * FLOWS + f;
        datagrams.push((0, 0, loss_report(next(0), 9, port, u32::from(f % 5) + 1)));
    }
    for _ in 0..40 {
        let number = next(1);
        datagrams.push((1, 1, drop_summary(number, number % 3)));
    }
    let start_ns = 1_700_000_000_000_000_000u64 + u64::from(n) * 1_000_000_000;
    for i in 0..cards {
        let packet = card_packet(n, i);
        let path = if i < cards / 2 { [1, 2, 3] } else { [1, 2, 4] };
        // The far switch's postcard first: out of path order.
        for (hop, node) in path.into_iter().enumerate().rev() {
            let ingress = start_ns + u64::from(i) * 1_000_000 + hop as u64 * 10_000;
            let (sender, receiver) = if node <= 2 { (2, 0) } else { (3, 1) };
            datagrams.push((
                sender,
                receiver,
                postcard_report(node, next(sender), &packet, ingress, ingress + 1000),
            ));
        }
    }
    // Each INT-MD report: the links 1 to 2 (or 5), on to 3, and 3 to the
    // sink; each packet's postcards: two links. A third of the INT-MD
    // flows and each of the ten postcard flows change path once.
    let links = 3 * u64::from(PACKETS) * u64::from(FLOWS) + 2 * u64::from(cards);
    let changes = u64::from(FLOWS).div_ceil(3) + if cards > 0 { 10 } else { 0 };
    Phase { datagrams, links, changes }
}

/// The IP packet `i` of phase `n`'s postcards: ten flows a phase, the IP
/// id numbering the packets.
fn card_packet(n: u16, i: u16) -> Vec<u8> {
    let port = 2000 + n * 10 + i % 10;
    let mut spec =
        int_core::craft::PacketSpec::udp([10, 3, 0, 1].into(), [10, 4, 0, 1].into(), port, 6000, 16);
    spec.ident = n * CARDS + i;
    spec.build()[14..].to_vec()
}

/// An aggregator over the partitions, its metrics on `port`.
fn spawn_aggregator(urls: &str, port: u16) -> Child {
    Command::new(tools_bin())
        .args(["collect", "--from-nats", urls, "--nats-consumer", "parts", "--nats-replicas", "3"])
        .args(["--nats-partitions", PARTITIONS, "--partitions", "auto", "--nats-lease-s", "3"])
        .args(["--join-window-ms", JOIN_WINDOW_MS])
        .args(["--quiet", "--json", "--interval", "0", "--duration", "600", "--nats-max-bytes", STREAM_BYTES])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Waits for `done` (checked every 20 ms) for at most two minutes;
/// whether it came.
fn came(mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > Duration::from_secs(120) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// [`came`], or the test fails saying `what` did not.
fn wait_for(what: &str, done: impl FnMut() -> bool) {
    assert!(came(done), "{what}");
}

/// The partitions owned across the aggregators on `ports`, and the most
/// any one owns.
fn owned(ports: &[u16]) -> (u64, u64) {
    let each: Vec<u64> = ports.iter().map(|p| metric(*p, "int_collect_nats_partitions_owned ")).collect();
    (each.iter().sum(), each.iter().copied().max().unwrap_or(0))
}

/// Three servers, two receivers (metrics on), one direct collector,
/// three aggregators that divided the 16 partitions fairly (6, 6, 4).
struct Fleet {
    servers: Vec<Server>,
    receivers: Vec<(Child, String)>,
    direct: (Child, String),
    direct_metrics: u16,
    aggregators: Vec<Option<Child>>,
    aggregator_ports: Vec<u16>,
    senders: Vec<UdpSocket>,
}

impl Fleet {
    fn start(dir: &Path) -> Fleet {
        let servers = start_cluster(dir);
        let urls: Vec<String> = servers.iter().map(Server::url).collect();
        let urls = urls.join(",");
        let aggregator_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let aggregators = aggregator_ports
            .iter()
            .enumerate()
            .map(|(n, p)| Some(spawn_aggregator(&servers[n].url(), *p)))
            .collect();
        wait_for("the aggregators divide the 16 partitions, 6 at most each", || {
            let members: Vec<u64> =
                aggregator_ports.iter().map(|p| metric(*p, "int_collect_nats_partition_members ")).collect();
            members.iter().all(|m| *m == 3) && owned(&aggregator_ports) == (16, 6)
        });
        let receivers = (0..2)
            .map(|_| {
                let args = ["--quiet", "--duration", "600", "--nats", &urls, "--nats-replicas", "3"];
                let more = ["--nats-max-bytes", STREAM_BYTES, "--nats-partitions", PARTITIONS];
                start_collector(&tools_bin(), &[&args[..], &more[..]].concat())
            })
            .collect();
        let direct_metrics = free_port();
        let metrics = format!("127.0.0.1:{direct_metrics}");
        let direct = start_collector(
            &tools_bin(),
            &["--quiet", "--duration", "600", "--metrics", &metrics, "--join-window-ms", JOIN_WINDOW_MS],
        );
        let senders = (0..4).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
        Fleet { servers, receivers, direct, direct_metrics, aggregators, aggregator_ports, senders }
    }

    /// A phase's datagrams to their receivers and to the direct collector,
    /// paced.
    fn send(&self, phase: &Phase) {
        self.send_paced(phase, Duration::from_micros(150));
    }

    fn send_paced(&self, phase: &Phase, pace: Duration) {
        for (sender, receiver, datagram) in &phase.datagrams {
            let socket = &self.senders[*sender];
            socket.send_to(datagram, &self.receivers[*receiver].1).unwrap();
            socket.send_to(datagram, &self.direct.1).unwrap();
            std::thread::sleep(pace);
        }
    }

    /// Every one of the `P` partitions' lag, as the aggregators on `ports`
    /// last read it from their consumers: `(partitions told, messages
    /// pending, awaiting acknowledgement)`.
    fn lag(&self, ports: &[u16]) -> (usize, u64, u64) {
        let mut lag = (0, 0, 0);
        for port in ports {
            let page = http_get(*port, "/metrics").unwrap_or_default();
            let value = |l: &str| l.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            for line in page.lines() {
                if line.starts_with("int_collect_nats_partition_pending{") {
                    lag.0 += 1;
                    lag.1 += value(line);
                } else if line.starts_with("int_collect_nats_partition_ack_pending{") {
                    lag.2 += value(line);
                }
            }
        }
        lag
    }

    fn live_ports(&self) -> Vec<u16> {
        self.aggregator_ports
            .iter()
            .zip(&self.aggregators)
            .filter(|(_, a)| a.is_some())
            .map(|(p, _)| *p)
            .collect()
    }

    fn booked(&self, ports: &[u16]) -> Figures {
        ports.iter().map(|p| Figures::of(*p)).fold(Figures::default(), Figures::plus)
    }
}

/// Everything stopped, whether the test passed or not.
impl Drop for Fleet {
    fn drop(&mut self) {
        for aggregator in self.aggregators.iter_mut().filter_map(Option::take) {
            stop(aggregator);
        }
        for (receiver, _) in &mut self.receivers {
            let _ = receiver.kill();
            let _ = receiver.wait();
        }
        let _ = self.direct.0.kill();
        let _ = self.direct.0.wait();
        for server in &mut self.servers {
            server.kill();
        }
    }
}

/// Waits until the direct collector has booked `phases` phases whole:
/// their reports, and every link latency and path change their traffic
/// makes (the last postcards' groups close one join window after they
/// came); returns its figures.
fn settled(port: u16, phases: &[Phase]) -> Figures {
    let reports: u64 = phases.iter().map(|p| p.datagrams.len() as u64).sum();
    let links: u64 = phases.iter().map(|p| p.links).sum();
    let changes: u64 = phases.iter().map(|p| p.changes).sum();
    let mut now = Figures::default();
    let whole = came(|| {
        now = Figures::of(port);
        now.reports == reports && now.link_latencies == links && now.path_changes == changes
    });
    assert!(whole, "the direct collector books {reports} reports, {links} link latencies, {changes} path changes: {now:?}");
    now
}

fn skipped() -> bool {
    let missing = !Path::new(NATS).exists();
    if missing {
        eprintln!("skipped: {NATS} missing (apt-get install nats-server; scripts/install-deps.sh does)");
    }
    missing
}

#[test]
fn three_aggregators_over_16_partitions_add_up_to_one_collector() {
    if skipped() {
        return;
    }
    let dir = workdir("stream-partitions");
    let fleet = Fleet::start(&dir);
    let mut numbers = [0u32; 4];
    let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, CARDS)).collect();
    // The phases back to back: no switch falls silent for a join window.
    for phase in &phases {
        fleet.send(phase);
    }
    let direct = settled(fleet.direct_metrics, &phases);
    let ports = fleet.live_ports();
    came(|| fleet.booked(&ports) == direct);
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
        direct.less(booked.plus(kept))
    );
    assert!(whole, "every partition acknowledged to its end: {lag:?}");
    assert_eq!(takeovers, held, "each of the killed aggregator's partitions taken over once");
    assert!(
        booked.plus(kept).within(direct),
        "nothing booked twice: {booked:?} + {kept:?} against {direct:?}"
    );
    assert!(survivors_messages + kept_messages <= messages, "no message booked twice");
    assert!(
        after_read <= BATCH * held + step,
        "at most a pull a partition in hand at the kill, and what it booked between two reads ({step}): {after_read}"
    );
    assert!(redelivered > 0, "the messages it had pulled came again to the survivors");
}
