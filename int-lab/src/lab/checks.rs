//! The scenario's checks: a TCP transfer restored byte for byte, loss
//! counts equal to what was dropped, a latency step equal to the delay
//! added. Each judges against what the lab did or measured in the same run.

// Collector records are read with serde_json's `value["key"]`, which yields
// Null for a missing key and never panics.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::impairment::Impairment;
use super::links::DelayFlow;
use super::namespaces::{sh, terminate, Lab};
use super::states::{self, barrier, wait_for};
use super::topology::{addr6_of, addr_of, split, Scenario, Topology};
use super::traffic;
use super::verdicts::Checks;
use crate::error::{Error, Setup};

/// The delay check's flow: its source port, and the first of its packet
/// numbers sent with the delay on.
const DELAY_FLOW: DelayFlow = DelayFlow { port: 40001, from_sequence: 1000, on_ns: 0 };

/// The most negative one-way latency the lab accepts between nodes on one
/// host clock, ns.
const SKEW_TOLERANCE_NS: i64 = 100_000;

/// The collector's JSON lines so far, a Telemetry Report 2.0 record typed
/// as its 0.5 counterpart (the fields have the same names): `tr20` as
/// `latency`, `tr20-loss` as `drop-summary`.
fn reports(workdir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(workdir.join("collector.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .map(as_tr05_terms)
        .collect()
}

fn as_tr05_terms(mut record: serde_json::Value) -> serde_json::Value {
    let kind = match record["type"].as_str() {
        Some("tr20") => "latency",
        Some("tr20-loss") => "drop-summary",
        _ => return record,
    };
    record["type"] = serde_json::json!(kind);
    record
}

/// `int-lab send` in `host`: one flow of 200-byte UDP datagrams.
fn send_udp(lab: &Lab, host: &str, from: &str, to: &str, packets: u64, rate: f64) -> Result<(), Error> {
    let exe =
        std::env::current_exe().map_err(Error::io("this program's path"))?.to_string_lossy().into_owned();
    let (packets, rate) = (packets.to_string(), rate.to_string());
    let args = [
        exe.as_str(),
        "send",
        "--from",
        from,
        "--to",
        to,
        "--packets",
        &packets,
        "--rate",
        &rate,
        "--size",
        "200",
    ];
    lab.exec(host, &args).map(|_| ())
}

/// The client and server of a scenario: their hosts and addresses.
struct Ends<'a> {
    client_host: &'a str,
    server_host: &'a str,
    client_ip: String,
    server_ip: String,
}

impl Ends<'_> {
    fn ipv6(&self) -> bool {
        self.server_ip.contains(':')
    }

    /// What a check's name says of the IP version.
    fn over(&self) -> &'static str {
        if self.ipv6() {
            " over ipv6"
        } else {
            ""
        }
    }

    /// `ip:port` for a socket address of either version.
    fn socket(ip: &str, port: u16) -> String {
        if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        }
    }
}

/// Runs the scenario's steps that the topology asks for.
pub fn scenario(lab: &mut Lab, topology: &Topology, workdir: &Path) -> Result<Checks, Error> {
    let mut checks = Checks::default();
    let s = &topology.scenario;
    let (Some(client), Some(server)) = (&s.client, &s.server) else { return Ok(checks) };
    let address = if s.ipv6_only { addr6_of } else { addr_of };
    let ends = Ends {
        client_host: split(client)?.0,
        server_host: split(server)?.0,
        client_ip: address(client, topology)?,
        server_ip: address(server, topology)?,
    };
    let ends6 = Ends {
        client_ip: addr6_of(client, topology).unwrap_or_default(),
        server_ip: addr6_of(server, topology).unwrap_or_default(),
        ..ends
    };
    if (s.ipv6_transfer || s.ipv6_loss) && (ends6.client_ip.is_empty() || ends6.server_ip.is_empty()) {
        return Err(Setup::NoIpv6 { client: client.clone(), server: server.clone() }.into());
    }
    // The nodes are up once the path carries a ping.
    barrier(lab, ends.client_host, &ends.server_ip)?;
    if let Some(mb) = s.tcp_transfer_mb {
        check_tcp_transfer(lab, &ends, mb, workdir, &mut checks)?;
        if s.ipv6_transfer {
            check_tcp_transfer(lab, &ends6, mb, workdir, &mut checks)?;
        }
    }
    // Only a lab with loss or delay steps needs an impairment.
    let impairment = if s.loss_percent.is_some() || s.delay_ms.is_some() {
        Impairment::choose(lab, s, workdir)?
    } else {
        None
    };
    if let (Some(loss), Some(impairment)) = (s.loss_percent, &impairment) {
        check_loss(lab, &ends, s, loss, impairment, workdir, &mut checks)?;
        if s.ipv6_loss {
            check_loss(lab, &ends6, s, loss, impairment, workdir, &mut checks)?;
        }
    }
    if let (Some(delay), Some(impairment)) = (s.delay_ms, &impairment) {
        let (delay_on_ns, noise_ns) = if s.joined {
            let on_ns = delay_phases(lab, &ends, delay, impairment)?;
            // The collector writes a packet's joined postcards once later
            // ones pass its join window: wait until it has written some of
            // the delayed phase (on a loaded host it lags the traffic).
            let flow = DelayFlow { on_ns, ..DELAY_FLOW };
            let _ = wait_for("joined packets of the delayed phase", || {
                Ok(super::links::joined_after(workdir, flow))
            });
            (on_ns, 0)
        } else {
            check_latency_change(lab, &ends, delay, impairment, workdir, &mut checks)?
        };
        if let Some(link) = &s.delayed_link {
            let flow = DelayFlow { on_ns: delay_on_ns, ..DELAY_FLOW };
            super::links::check_link_delay(workdir, link, delay, flow, noise_ns, &mut checks)?;
        }
    }
    if let Some(switch) = &s.path_switch {
        let client = (ends.client_host, ends.client_ip.as_str());
        super::switch::check_path_switch(lab, client, &ends.server_ip, switch, workdir, &mut checks)?;
    }
    if let Some(ifa) = &s.ifa {
        // Every step's traffic has passed (each ends behind a ping).
        super::ifa::check_reports(workdir, ifa, &mut checks)?;
        super::ifa::check_delivery(lab, ends.server_host, &mut checks)?;
    }
    if let Some(spec) = &s.congestion {
        let (client_ip, server_ip) = (ends.client_ip.as_str(), ends.server_ip.as_str());
        let ends = super::congestion::Ends { client_host: ends.client_host, client_ip, server_ip };
        super::congestion::check(lab, topology, &ends, spec, workdir, &mut checks)?;
    }
    Ok(checks)
}

/// A TCP transfer client -> server with nc: the SHA-256 at the far end
/// must match (the sink restored packets the kernel accepts).
fn check_tcp_transfer(
    lab: &Lab,
    ends: &Ends<'_>,
    mb: u64,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), Error> {
    let Ends { client_host, server_host, server_ip, .. } = ends;
    let version = if ends.ipv6() { "6" } else { "4" };
    let send = workdir.join("transfer.bin");
    let recv = workdir.join(format!("received{version}.bin"));
    let mut file = fs::File::create(&send).map_err(Error::io(send.display()))?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mb {
        for chunk in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        file.write_all(&block).map_err(Error::io(send.display()))?;
    }
    drop(file);
    let recv_file = fs::File::create(&recv).map_err(Error::io(recv.display()))?;
    let mut server_nc = Command::new("ip")
        .args(["netns", "exec", &lab.ns(server_host), "nc", &format!("-{version}"), "-l", "-N", "5001"])
        .stdout(Stdio::from(recv_file))
        .stderr(Stdio::null())
        .spawn()
        .map_err(Error::io("nc (server)"))?;
    wait_for("nc listening", || states::listening(lab, server_host, "-t", 5001))?;
    let started = Instant::now();
    let sent = Command::new("ip")
        .args(["netns", "exec", &lab.ns(client_host), "nc", "-N", "-w", "30", server_ip, "5001"])
        .stdin(Stdio::from(fs::File::open(&send).map_err(Error::io(send.display()))?))
        .stdout(Stdio::null())
        .status()
        .map_err(Error::io("nc (client)"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while server_nc.try_wait().ok().flatten().is_none()
        && Instant::now() < deadline
        && !int_os::signals::stop_requested()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    terminate(server_nc);
    let seconds = started.elapsed().as_secs_f64();
    let hash = |p: &Path| {
        sh(&["sha256sum", &p.to_string_lossy()])
            .map(|o| o.split_whitespace().next().unwrap_or("").to_string())
    };
    let (a, b) = (hash(&send)?, hash(&recv)?);
    let size = fs::metadata(&recv).map(|m| m.len()).unwrap_or(0);
    checks.check(
        &format!("tcp transfer{}", ends.over()),
        sent.success() && a == b && !a.is_empty(),
        format!(
            "{mb} MB client -> server in {seconds:.1} s, {size} bytes received, sha256 {} {}",
            &a.get(..16).unwrap_or(""),
            if a == b { "matches" } else { "DIFFERS" }
        ),
    );
    Ok(())
}

/// Loss on the impaired link: the Drop-Summary gap counts for the flow
/// must equal what was dropped.
fn check_loss(
    lab: &Lab,
    ends: &Ends<'_>,
    s: &Scenario,
    loss: f64,
    impairment: &Impairment,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(), Error> {
    let Ends { client_host, client_ip, server_ip, .. } = ends;
    let before = impairment.dropped(lab)?;
    impairment.set(lab, loss, 0)?;
    // Ports of their own for each IP version's flow.
    let (src_port, dst_port) = if ends.ipv6() { (40006, 5006) } else { (40000, 5002) };
    let from = Ends::socket(client_ip, src_port);
    let to = Ends::socket(server_ip, dst_port);
    send_udp(lab, client_host, &from, &to, s.udp_packets, s.udp_rate)?;
    // Loss off, then a ping behind the flow: every packet of it has met
    // the impairment, and the ping itself cannot be lost to it.
    impairment.set(lab, 0.0, 0)?;
    barrier(lab, client_host, server_ip)?;
    let dropped = impairment.dropped(lab)? - before;
    // A few packets after the loss: the last losses become visible.
    send_udp(lab, client_host, &from, &to, 20, 1000.0)?;
    let count = || {
        reports(workdir)
            .iter()
            .filter(|r| {
                r["type"] == "drop-summary"
                    && r["flow"]["src_port"] == src_port
                    && r["flow"]["dst_port"] == dst_port
            })
            .fold((0u64, 0), |(gaps, n), r| (gaps + r["lost_packets"].as_u64().unwrap_or(0), n + 1))
    };
    // Until the collector has heard of every loss (or of more, which the
    // check then shows).
    let _ = wait_for("the collector counting every loss", || Ok(count().0 >= dropped));
    let (gaps, drop_reports) = count();
    checks.check(
        &format!("loss counts{}", ends.over()),
        gaps == dropped && dropped > 0,
        format!(
            "{} dropped {dropped} of {} UDP packets at {loss}%; {drop_reports} loss reports (Drop-Summary or TR 2.0) count {gaps}",
            if matches!(impairment, Impairment::Netem { .. }) { "netem" } else { "the impair node" },
            s.udp_packets
        ),
    );
    Ok(())
}

/// The delay flow in two phases. A, packets 1-1000: no delay. B,
/// 1001-4000: the delay on, set while no packet of the flow is on the way.
/// Returns when it was set (ns since the epoch, the nodes' clock): every
/// packet of A reached each node before, every packet of B after.
fn delay_phases(lab: &Lab, ends: &Ends<'_>, delay: u64, impairment: &Impairment) -> Result<u64, Error> {
    let Ends { client_host, client_ip, server_ip, .. } = ends;
    let (from, to) = (format!("{client_ip}:{}", DELAY_FLOW.port), format!("{server_ip}:5003"));
    traffic::send_paced(lab, client_host, &from, &to, DELAY_FLOW.from_sequence)?;
    barrier(lab, client_host, server_ip)?;
    let on_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    impairment.set(lab, 0.0, delay)?;
    traffic::send_paced(lab, client_host, &from, &to, 3000)?;
    barrier(lab, client_host, server_ip)?;
    impairment.set(lab, 0.0, 0)?;
    Ok(on_ns)
}

/// A delay added mid-flow: a latency report must show it, judged against
/// the path's own noise measured in the same run (ping round trips, and
/// the flow's latency before the delay). Returns when the delay was set,
/// and the round trips' spread.
fn check_latency_change(
    lab: &Lab,
    ends: &Ends<'_>,
    delay: u64,
    impairment: &Impairment,
    workdir: &Path,
    checks: &mut Checks,
) -> Result<(u64, i64), Error> {
    let Ends { client_host, server_ip, .. } = ends;
    // The path's noise: the spread of 20 round trips.
    let rtts: Vec<u64> = (0..20).map(|_| barrier(lab, client_host, server_ip)).collect::<Result<_, _>>()?;
    let noise_ns = (rtts.iter().max().unwrap_or(&0) - rtts.iter().min().unwrap_or(&0)) as i64;
    let on_ns = delay_phases(lab, ends, delay, impairment)?;
    let flow = DelayFlow { on_ns, ..DELAY_FLOW };
    // Each report's packet (its number, or without one its first node's
    // time) -> whether it went with the delay on, and its latency.
    let latencies = || -> BTreeMap<u64, (bool, i64)> {
        reports(workdir)
            .iter()
            .filter(|r| r["type"] == "latency" && r["flow"]["src_port"] == DELAY_FLOW.port)
            .filter_map(|r| {
                let packet = r["flow_seq"].as_u64().or(r["hop_metadata"][0]["ingress_timestamp"].as_u64())?;
                Some((packet, (super::links::stack_delayed(r, flow)?, r["latency_ns"].as_i64()?)))
            })
            .collect()
    };
    // A packet by its number, or by its first node's time from the delay's.
    let packet = |key: u64| {
        if key > on_ns / 2 {
            format!("{:+.3} s", (key as i64 - on_ns as i64) as f64 / 1e9)
        } else {
            key.to_string()
        }
    };
    // The sink reports the first delayed packet (another bucket).
    let _ =
        wait_for("a report of the delayed packets", || Ok(latencies().values().any(|(delayed, _)| *delayed)));
    let latencies = latencies();
    let phase = |delayed: bool| latencies.values().filter(move |(d, _)| *d == delayed).map(|(_, l)| *l);
    let (before_min, before_max) = (phase(false).min(), phase(false).max());
    let after_min = phase(true).min();
    // Signed: one host clock serves every node, so no latency is below
    // zero (a margin allows for the readings of a burst) or near a second.
    let delay_ns = delay as i64 * 1_000_000;
    let sane = |l: i64| (-SKEW_TOLERANCE_NS..1_000_000_000).contains(&l);
    // The least latency of each phase, the least-disturbed: the step
    // between them is the delay, within the noise measured (round trips,
    // and the spread of the latencies before), plus a millisecond.
    let spread = before_max.zip(before_min).map_or(0, |(max, min)| max - min);
    let tolerance = noise_ns.max(spread) + 1_000_000;
    let step = after_min.zip(before_min).map(|(after, before)| after - before);
    // Levels judged by each phase's least-disturbed latency, as a loaded
    // machine can hold any one packet back (a worker not scheduled for 20
    // ms made one packet before the delay as slow as the delay) but never
    // speed one up: before, faster than half the delay; the step, more
    // than half of it; and within the tolerance of the delay.
    let ok = before_min.is_some_and(|l| l < delay_ns / 2)
        && step.is_some_and(|step| step > delay_ns / 2 && (step - delay_ns).abs() <= tolerance)
        && latencies.values().all(|(_, l)| sane(*l));
    checks.check(
        "latency change",
        ok,
        format!(
            "step {} ms for a {delay} ms delay (tolerance {:.3} ms: round-trip spread {:.3} ms, latency spread before {:.3} ms); reports (flow seq, or the first node's time from the delay's, -> one-way latency, * with the delay on): {}",
            step.map_or("none".into(), |s| format!("{:.3}", s as f64 / 1e6)),
            tolerance as f64 / 1e6,
            noise_ns as f64 / 1e6,
            spread as f64 / 1e6,
            latencies
                .iter()
                .map(|(k, (d, l))| format!("{}: {:.3} ms{}", packet(*k), *l as f64 / 1e6, if *d { " *" } else { "" }))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    Ok((on_ns, noise_ns))
}
