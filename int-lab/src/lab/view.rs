//! The collector's web view, reachable from the host the lab runs on: a
//! veth pair from the root namespace into the collector's host, with a
//! link-local /30 (no route of the host's own is touched), and `collect
//! --http` on the far end. Deleting the collector's namespace deletes the
//! pair. Each lab takes a /30 of its own, so that labs with a view can run
//! side by side on one host. At the end of the scenario the lab reads the view's overview
//! from the root namespace, as a browser on the host would.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use super::namespaces::{sh, Lab};
use super::states::DEADLINE;
use super::topology::Topology;
use super::verdicts::Checks;
use crate::error::Error;

/// The view links' /30s: 256 of them in 169.254.100.0/22 (link-local, so
/// no route of the host's is touched), and the view's port.
const SUBNETS: u32 = 256;
const FIRST: Ipv4Addr = Ipv4Addr::new(169, 254, 100, 0);
const PORT: u16 = 8080;

/// The pair, named for the lab: `NAMEv` on the host, `view0` in the
/// collector's namespace. The view's address, or none without a collector.
pub fn add_link(lab: &Lab, topology: &Topology) -> Result<Option<String>, Error> {
    let Some(collector) = &topology.collector else { return Ok(None) };
    let (host_end, far_end) = (format!("{}v", topology.name), format!("{}w", topology.name));
    let (host_addr, far_addr) = free_subnet(&topology.name, &sh(&["ip", "-o", "-4", "addr", "show"])?);
    sh(&["ip", "link", "add", &host_end, "type", "veth", "peer", "name", &far_end])?;
    sh(&["ip", "link", "set", &far_end, "netns", &lab.ns(&collector.host), "name", "view0"])?;
    sh(&["ip", "addr", "add", &format!("{host_addr}/30"), "dev", &host_end])?;
    sh(&["ip", "link", "set", &host_end, "up"])?;
    lab.exec(&collector.host, &["ip", "addr", "add", &format!("{far_addr}/30"), "dev", "view0"])?;
    lab.exec(&collector.host, &["ip", "link", "set", "view0", "up"])?;
    let address = format!("{far_addr}:{PORT}");
    println!("lab: the collector's view: http://{address}/ (from this host; --hold keeps the lab up after the checks)");
    Ok(Some(address))
}

/// The host's end and the collector's of the first /30 that no address
/// on the host (`ip -o -4 addr show`'s lines) lies in, looked for from a
/// place the lab's name decides: two labs started at once start apart.
/// With every /30 taken the last is reused, and `ip addr add` says so.
fn free_subnet(name: &str, host_addresses: &str) -> (Ipv4Addr, Ipv4Addr) {
    let used: Vec<u32> = host_addresses
        .split_whitespace()
        .filter_map(|word| word.split_once('/')?.0.parse::<Ipv4Addr>().ok())
        .map(u32::from)
        .collect();
    let start = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    let base = |k: u32| u32::from(FIRST) + 4 * (start.wrapping_add(k) % SUBNETS);
    let free = (0..SUBNETS).map(base).find(|b| !used.iter().any(|a| a & !3 == *b));
    let base = free.unwrap_or(base(SUBNETS - 1));
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// The view at `address` answered the host with what the collector
/// booked: its overview has reports.
pub fn check(checks: &mut Checks, address: &str) {
    let overview = overview(address).and_then(|body| {
        serde_json::from_str::<serde_json::Value>(&body).map_err(|e| format!("{e}: {body}"))
    });
    match overview {
        Ok(o) => {
            let count = |key: &str| o.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
            checks.check(
                "web view",
                count("reports") > 0,
                format!(
                    "http://{address}/ from the host: {} reports, {} nodes, {} links, {} flows",
                    count("reports"),
                    count("nodes"),
                    count("links"),
                    count("flows")
                ),
            )
        }
        Err(error) => checks.check("web view", false, format!("http://{address}/api/overview: {error}")),
    }
}

/// `GET /api/overview`'s body. Its answer is waited for up to the labs'
/// deadline for any state: on a loaded host (one CPU kept busy, other
/// builds' I/O) the collector took more than 5 s to answer in 2 of 12 IFA
/// lab runs.
fn overview(address: &str) -> Result<String, String> {
    let addr: SocketAddr = address.parse().map_err(|e| format!("{e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, DEADLINE).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(DEADLINE)).map_err(|e| e.to_string())?;
    let request = format!("GET /api/overview HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.take(1 << 20).read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let answer = int_os::http::read_answer(&answer).map_err(|e| e.to_string())?;
    match answer.status {
        200 => Ok(answer.body),
        status => Err(format!("HTTP {status}: {}", answer.body)),
    }
}

/// With `--hold`: the lab stays up, the view with it, until Ctrl-C.
pub fn hold(view: Option<&str>) {
    let Some(address) = view else { return };
    println!("lab: holding; the view is at http://{address}/ until Ctrl-C");
    while !int_os::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_takes_a_subnet_no_address_of_the_host_lies_in() {
        let (host, far) = free_subnet("intlab", "");
        assert_eq!(u32::from(host) & !3, u32::from(far) & !3);
        assert_eq!((u32::from(host) & 3, u32::from(far) & 3), (1, 2));
        assert!((u32::from(FIRST)..u32::from(FIRST) + 4 * SUBNETS).contains(&u32::from(far)));
        // The same name finds the same subnet taken and moves on.
        let taken = format!("9: x inet {host}/30 scope global x\n");
        let (next, _) = free_subnet("intlab", &taken);
        assert_ne!(u32::from(next) & !3, u32::from(host) & !3);
    }

    #[test]
    fn every_subnet_taken_but_one_leaves_that_one() {
        let lines: String = (0..SUBNETS)
            .filter(|k| *k != 17)
            .map(|k| {
                format!("3: v inet {}/30 scope global v\n", Ipv4Addr::from(u32::from(FIRST) + 4 * k + 1))
            })
            .collect();
        let (host, _) = free_subnet("anything", &lines);
        assert_eq!(host, Ipv4Addr::from(u32::from(FIRST) + 4 * 17 + 1));
    }
}
