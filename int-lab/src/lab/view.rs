//! The collector's web view, reachable from the host the lab runs on: a
//! veth pair from the root namespace into the collector's host, with a
//! link-local /30 (no route of the host's own is touched), and `collect
//! --http` on the far end. Deleting the collector's namespace deletes the
//! pair. At the end of the scenario the lab reads the view's overview
//! from the root namespace, as a browser on the host would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::namespaces::{sh, Lab};
use super::states::DEADLINE;
use super::topology::Topology;
use super::verdicts::Checks;
use crate::error::Error;

/// The host's end and the collector's, and the view's port there.
const HOST_END: &str = "169.254.100.1/30";
const COLLECTOR_END: &str = "169.254.100.2/30";
pub const ADDRESS: &str = "169.254.100.2:8080";

/// The pair, named for the lab: `NAMEv` on the host, `view0` in the
/// collector's namespace. The view's address, or none without a collector.
pub fn add_link(lab: &Lab, topology: &Topology) -> Result<Option<&'static str>, Error> {
    let Some(collector) = &topology.collector else { return Ok(None) };
    let (host_end, far_end) = (format!("{}v", topology.name), format!("{}w", topology.name));
    sh(&["ip", "link", "add", &host_end, "type", "veth", "peer", "name", &far_end])?;
    sh(&["ip", "link", "set", &far_end, "netns", &lab.ns(&collector.host), "name", "view0"])?;
    sh(&["ip", "addr", "add", HOST_END, "dev", &host_end])?;
    sh(&["ip", "link", "set", &host_end, "up"])?;
    lab.exec(&collector.host, &["ip", "addr", "add", COLLECTOR_END, "dev", "view0"])?;
    lab.exec(&collector.host, &["ip", "link", "set", "view0", "up"])?;
    println!("lab: the collector's view: http://{ADDRESS}/ (from this host; --hold keeps the lab up after the checks)");
    Ok(Some(ADDRESS))
}

/// The view answered the host with what the collector booked: its
/// overview has reports.
pub fn check(checks: &mut Checks) {
    let overview = overview().and_then(|body| {
        serde_json::from_str::<serde_json::Value>(&body).map_err(|e| format!("{e}: {body}"))
    });
    match overview {
        Ok(o) => {
            let count = |key: &str| o.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
            checks.check(
                "web view",
                count("reports") > 0,
                format!(
                    "http://{ADDRESS}/ from the host: {} reports, {} nodes, {} links, {} flows",
                    count("reports"),
                    count("nodes"),
                    count("links"),
                    count("flows")
                ),
            )
        }
        Err(error) => checks.check("web view", false, format!("http://{ADDRESS}/api/overview: {error}")),
    }
}

/// `GET /api/overview`'s body. Its answer is waited for up to the labs'
/// deadline for any state: on a loaded host (one CPU kept busy, other
/// builds' I/O) the collector took more than 5 s to answer in 2 of 12 IFA
/// lab runs.
fn overview() -> Result<String, String> {
    let addr: SocketAddr = ADDRESS.parse().map_err(|e| format!("{e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, DEADLINE).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(DEADLINE)).map_err(|e| e.to_string())?;
    let request = format!("GET /api/overview HTTP/1.1\r\nHost: {ADDRESS}\r\nConnection: close\r\n\r\n");
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
