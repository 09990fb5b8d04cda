//! A partitioned stream's fleet for the tests on real servers
//! (`stream_partitions.rs`, `stream_fleet_view.rs`): three servers, two
//! receiving collectors, one collector fed everything, three aggregators
//! over 16 partitions; the traffic of INT-MD reports of many flows (some
//! changing path), loss reports, drop summaries and multi-hop postcards
//! sent out of path order; and the figures compared.

use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::cluster::{metric, start_cluster, Server};
use super::collector::{drop_summary, loss_report, postcard_report, start_collector, udp_stack_report};
use super::servers::{free_port, http_get, stop, NATS};
use super::tools_bin;
use int_core::int21::{HopMetadata, Instructions};

pub const STREAM_BYTES: &str = "67108864";
pub const PARTITIONS: &str = "16";
/// Flows of INT-MD reports a phase, and packets each.
pub const FLOWS: u16 = 48;
pub const PACKETS: u16 = 12;
/// Packets a phase whose postcards three switches send.
pub const CARDS: u16 = 60;
/// The postcards' join window: longer than a receiving collector's
/// hand-over and publishing delay on a busy host (a packet's postcards
/// reach the aggregator through two receivers).
pub const JOIN_WINDOW_MS: &str = "5000";

/// The figures compared, read off a collector's Prometheus page: reports,
/// packets lost (over the sinks), latency reports, path changes, and the
/// latencies counted over every link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub reports: u64,
    pub lost_packets: u64,
    pub latency_reports: u64,
    pub path_changes: u64,
    pub link_latencies: u64,
}

impl Figures {
    pub fn of(port: u16) -> Figures {
        Figures::in_page(&http_get(port, "/metrics").unwrap_or_default())
    }

    pub fn in_page(page: &str) -> Figures {
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
    pub fn less(self, other: Figures) -> Figures {
        Figures {
            reports: self.reports.saturating_sub(other.reports),
            lost_packets: self.lost_packets.saturating_sub(other.lost_packets),
            latency_reports: self.latency_reports.saturating_sub(other.latency_reports),
            path_changes: self.path_changes.saturating_sub(other.path_changes),
            link_latencies: self.link_latencies.saturating_sub(other.link_latencies),
        }
    }

    /// Each figure, path changes aside, at most `other`'s.
    pub fn within(self, other: Figures) -> bool {
        self.reports <= other.reports
            && self.lost_packets <= other.lost_packets
            && self.latency_reports <= other.latency_reports
            && self.link_latencies <= other.link_latencies
    }

    pub fn plus(self, other: Figures) -> Figures {
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
pub struct Phase {
    /// (sender, receiver index, datagram), in sending order.
    pub datagrams: Vec<(usize, usize, Vec<u8>)>,
    /// The link latencies and path changes its traffic makes.
    pub links: u64,
    pub changes: u64,
}

/// One phase's traffic: flows and packets of their own (no flow spans two
/// phases, so an aggregator killed between them leaves no flow half
/// booked), a third of the flows changing path halfway.
pub fn phase(n: u16, numbers: &mut [u32; 4], cards: u16) -> Phase {
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
pub fn card_packet(n: u16, i: u16) -> Vec<u8> {
    let port = 2000 + n * 10 + i % 10;
    let mut spec =
        int_core::craft::PacketSpec::udp([10, 3, 0, 1].into(), [10, 4, 0, 1].into(), port, 6000, 16);
    spec.ident = n * CARDS + i;
    spec.build()[14..].to_vec()
}

/// One fleet at a time in a test binary: two or three fleets of nine
/// processes at once on a 2-CPU host put the postcards' hand-over past
/// their join window (one failure in seven runs with one CPU kept busy),
/// and kept three aggregators from settling their leases for two
/// minutes (two fleet views' fleets at once).
static ONE_FLEET: Mutex<()> = Mutex::new(());

pub fn one_fleet() -> MutexGuard<'static, ()> {
    ONE_FLEET.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An aggregator over the partitions, its metrics on `port`.
pub fn spawn_aggregator(urls: &str, port: u16) -> Child {
    aggregator(urls, port).stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().unwrap()
}

/// The command of [`spawn_aggregator`], its output not yet directed.
pub fn aggregator(urls: &str, port: u16) -> Command {
    let mut command = Command::new(tools_bin());
    command
        .args(["collect", "--from-nats", urls, "--nats-consumer", "parts", "--nats-replicas", "3"])
        .args(["--nats-partitions", PARTITIONS, "--partitions", "auto", "--nats-lease-s", "3"])
        .args(["--join-window-ms", JOIN_WINDOW_MS])
        .args(["--quiet", "--json", "--interval", "0", "--duration", "600", "--nats-max-bytes", STREAM_BYTES])
        .args(["--metrics", &format!("127.0.0.1:{port}")]);
    command
}

/// Waits for `done` (checked every 20 ms) for at most two minutes;
/// whether it came.
pub fn came(mut done: impl FnMut() -> bool) -> bool {
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
pub fn wait_for(what: &str, done: impl FnMut() -> bool) {
    assert!(came(done), "{what}");
}

/// The partitions owned across the aggregators on `ports`, and the most
/// any one owns.
pub fn owned(ports: &[u16]) -> (u64, u64) {
    let each: Vec<u64> = ports.iter().map(|p| metric(*p, "int_collect_nats_partitions_owned ")).collect();
    (each.iter().sum(), each.iter().copied().max().unwrap_or(0))
}

/// Three servers, two receivers (metrics on), one direct collector,
/// three aggregators that divided the 16 partitions fairly (6, 6, 4).
pub struct Fleet {
    pub servers: Vec<Server>,
    pub receivers: Vec<(Child, String)>,
    pub direct: (Child, String),
    pub direct_metrics: u16,
    pub aggregators: Vec<Option<Child>>,
    pub aggregator_ports: Vec<u16>,
    pub senders: Vec<UdpSocket>,
}

impl Fleet {
    pub fn start(dir: &Path) -> Fleet {
        Fleet::start_with(dir, &[])
    }

    /// [`Fleet::start`], the direct collector given `direct` arguments
    /// more (`--names`, `--http`: the fleet view's yardstick).
    pub fn start_with(dir: &Path, direct: &[&str]) -> Fleet {
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
        let args =
            ["--quiet", "--duration", "600", "--metrics", &metrics, "--join-window-ms", JOIN_WINDOW_MS];
        let direct = start_collector(&tools_bin(), &[&args[..], direct].concat());
        let senders = (0..4).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
        Fleet { servers, receivers, direct, direct_metrics, aggregators, aggregator_ports, senders }
    }

    /// A phase's datagrams to their receivers and to the direct collector,
    /// paced.
    pub fn send(&self, phase: &Phase) {
        self.send_paced(phase, Duration::from_micros(150));
    }

    pub fn send_paced(&self, phase: &Phase, pace: Duration) {
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
    pub fn lag(&self, ports: &[u16]) -> (usize, u64, u64) {
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

    /// Three phases with postcards sent back to back (no switch falls
    /// silent for a join window); the direct collector's figures once it
    /// booked them whole, and the live aggregators as much (or two minutes
    /// passed).
    pub fn send_three_phases(&self) -> Figures {
        let mut numbers = [0u32; 4];
        let phases: Vec<Phase> = (0..3).map(|n| phase(n, &mut numbers, CARDS)).collect();
        for phase in &phases {
            self.send(phase);
        }
        let direct = settled(self.direct_metrics, &phases);
        let ports = self.live_ports();
        came(|| self.booked(&ports) == direct);
        direct
    }

    pub fn live_ports(&self) -> Vec<u16> {
        self.aggregator_ports
            .iter()
            .zip(&self.aggregators)
            .filter(|(_, a)| a.is_some())
            .map(|(p, _)| *p)
            .collect()
    }

    pub fn booked(&self, ports: &[u16]) -> Figures {
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

/// The fleet view (`collect --fleet-view`), its metrics on `port`, its
/// web view on `web`, `extra` arguments more; stopped if the test fails.
pub struct View(pub Option<Child>);

impl View {
    pub fn spawn(urls: &str, port: u16, web: u16, extra: &[&str]) -> View {
        let child = Command::new(tools_bin())
            .args(["collect", "--from-nats", urls, "--fleet-view"])
            .args(["--quiet", "--json", "--interval", "0", "--duration", "600"])
            .args(["--metrics", &format!("127.0.0.1:{port}"), "--http", &format!("127.0.0.1:{web}")])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        View(Some(child))
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            stop(child);
        }
    }
}

/// Waits until the direct collector has booked `phases` phases whole:
/// their reports, and every link latency and path change their traffic
/// makes (the last postcards' groups close one join window after they
/// came); returns its figures.
pub fn settled(port: u16, phases: &[Phase]) -> Figures {
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

pub fn skipped() -> bool {
    let missing = !Path::new(NATS).exists();
    if missing {
        eprintln!("skipped: {NATS} missing (apt-get install nats-server; scripts/install-deps.sh does)");
    }
    missing
}
