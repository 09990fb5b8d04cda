//! A NATS JetStream cluster of three servers on loopback ports (Debian's
//! nats-server, started and stopped here), and what tests read of collect
//! beside it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::servers::{free_port, http_get, stop, NATS};

/// One server of the cluster.
pub struct Server {
    pub name: String,
    pub port: u16,
    pub monitor: u16,
    config: PathBuf,
    pub log: PathBuf,
    pub child: Option<Child>,
}

impl Server {
    pub fn start(&mut self) {
        let child = Command::new(NATS)
            .arg("-c")
            .arg(&self.config)
            .arg("-l")
            .arg(&self.log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    pub fn kill(&mut self) {
        if let Some(child) = self.child.take() {
            stop(child);
        }
    }

    /// The server's health: JetStream up and its meta group led.
    pub fn healthy(&self) -> bool {
        http_get(self.monitor, "/healthz").is_some_and(|body| body.contains("\"ok\""))
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

/// Three servers routed to each other, JetStream on each, until all say
/// they are healthy. A port taken between `free_port` and a server's
/// bind (another test's process took it meanwhile) stops that server:
/// the cluster is made again on other ports, three times at most.
pub fn start_cluster(dir: &Path) -> Vec<Server> {
    let mut attempts = 0;
    loop {
        let mut servers = configured(dir);
        servers.iter_mut().for_each(Server::start);
        match settle(&servers) {
            Ok(()) => return servers,
            Err(said) if attempts < 3 && said.contains("address already in use") => {
                servers.iter_mut().for_each(Server::kill);
                for server in &servers {
                    let _ = std::fs::remove_dir_all(dir.join(&server.name));
                    let _ = std::fs::remove_file(&server.log);
                }
                attempts += 1;
            }
            Err(said) => panic!("{said}"),
        }
    }
}

/// The three servers' configurations written, on fresh ports.
fn configured(dir: &Path) -> Vec<Server> {
    let ports: Vec<(u16, u16, u16)> = (0..3).map(|_| (free_port(), free_port(), free_port())).collect();
    let routes: Vec<String> =
        ports.iter().map(|(_, route, _)| format!("nats-route://127.0.0.1:{route}")).collect();
    ports
        .iter()
        .enumerate()
        .map(|(n, &(port, route, monitor))| {
            let name = format!("n{n}");
            let store = dir.join(&name);
            let config = dir.join(format!("{name}.conf"));
            let text = format!(
                "server_name: {name}\nlisten: 127.0.0.1:{port}\nhttp: 127.0.0.1:{monitor}\n\
                 jetstream {{ store_dir: \"{}\", max_file_store: 1073741824 }}\n\
                 cluster {{ name: int, listen: 127.0.0.1:{route}, routes: [{}] }}\n",
                store.display(),
                routes.join(", ")
            );
            std::fs::write(&config, text).unwrap();
            let log = dir.join(format!("{name}.log"));
            Server { name, port, monitor, config, log, child: None }
        })
        .collect()
}

pub fn wait_healthy(servers: &[Server]) {
    if let Err(said) = settle(servers) {
        panic!("{said}");
    }
}

/// Every started server healthy, or the log of one that is not within a
/// minute or that said a fatal error.
fn settle(servers: &[Server]) -> Result<(), String> {
    let started = Instant::now();
    for server in servers.iter().filter(|s| s.child.is_some()) {
        while !server.healthy() {
            let said = std::fs::read_to_string(&server.log).unwrap_or_default();
            if said.contains("[FTL]") || started.elapsed() > Duration::from_secs(60) {
                return Err(format!("{} not healthy:\n{said}", server.name));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

/// A collect's count of a metric family's line that starts `line`.
pub fn metric(port: u16, line: &str) -> u64 {
    let page = http_get(port, "/metrics").unwrap_or_default();
    let found = page.lines().find(|l| l.starts_with(line));
    found.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}
