//! The lab's namespaces, links and processes: made as the topology says,
//! undone on every exit path (the lab only touches what it made).

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::topology::{split, Topology};
use crate::error::{Error, Setup};

/// Runs a command; its stdout, or an error with its stderr.
pub fn sh(args: &[&str]) -> Result<String, Error> {
    let Some((program, rest)) = args.split_first() else { return Ok(String::new()) };
    let output = Command::new(program).args(rest).output().map_err(Error::io(args.join(" ")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(Error::Command { command: args.join(" "), stderr });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Everything the lab created, undone on drop.
pub struct Lab {
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<(String, Child)>,
    keep: bool,
}

impl Lab {
    /// A lab of namespaces named `prefix-host`; `keep`: left up on drop.
    pub fn new(prefix: &str, keep: bool) -> Lab {
        Lab { prefix: prefix.to_string(), namespaces: Vec::new(), children: Vec::new(), keep }
    }

    /// Namespaces an earlier run left up, to be removed on drop.
    pub fn adopt(&mut self, namespaces: Vec<String>) {
        self.namespaces = namespaces;
    }

    /// The lab's first namespace, for probing what its kernel can do.
    pub fn first_namespace(&self) -> Option<&str> {
        self.namespaces.first().map(String::as_str)
    }

    pub fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    pub fn exec(&self, host: &str, args: &[&str]) -> Result<String, Error> {
        let ns = self.ns(host);
        let mut full = vec!["ip", "netns", "exec", ns.as_str()];
        full.extend_from_slice(args);
        sh(&full)
    }

    pub fn spawn(&mut self, name: &str, host: &str, args: &[&str], log: &Path) -> Result<(), Error> {
        let file = fs::File::create(log).map_err(Error::io(log.display()))?;
        let err = file.try_clone().map_err(Error::io(log.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(host)])
            .args(args)
            .current_dir(log.parent().unwrap_or(Path::new(".")))
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(Error::io(name))?;
        self.children.push((name.to_string(), child));
        Ok(())
    }

    /// The first process of the lab that has exited, with its status.
    pub fn exited(&mut self) -> Option<(String, String)> {
        self.children.iter_mut().find_map(|(name, child)| match child.try_wait() {
            Ok(Some(status)) => Some((name.clone(), status.to_string())),
            _ => None,
        })
    }

    /// SIGTERM to every process at once, then each waited for (SIGKILL to
    /// whatever is left after 10 s): their final words are in their logs.
    /// All at once, because reaping one node while the others keep running
    /// has been seen to hold the kernel (6.18) in a dentry walk for over
    /// an hour, until the others stopped.
    pub fn stop_all(&mut self) {
        terminate_all(self.children.drain(..).map(|(_, child)| child).collect());
    }
}

/// SIGTERM to each of `children`, then all waited for together; those
/// still running after 10 s are killed together.
pub fn terminate_all(mut children: Vec<Child>) {
    for child in &children {
        int_os::signals::terminate(child.id());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        children.retain_mut(|child| !matches!(child.try_wait(), Ok(Some(_))));
        if children.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for child in &mut children {
        let _ = child.kill();
    }
    for child in &mut children {
        let _ = child.wait();
    }
}

pub fn terminate(child: Child) {
    terminate_all(vec![child]);
}

impl Drop for Lab {
    fn drop(&mut self) {
        terminate_all(self.children.drain(..).map(|(_, child)| child).collect());
        if self.keep {
            eprintln!("lab: left up (int-lab lab --down --topology ... tears it down)");
            return;
        }
        for ns in self.namespaces.iter().rev() {
            if let Err(e) = sh(&["ip", "netns", "del", ns]) {
                eprintln!("lab: cleanup: {e}");
            }
        }
        eprintln!("lab: removed namespaces {}", self.namespaces.join(", "));
    }
}

pub fn namespace_exists(ns: &str) -> bool {
    sh(&["ip", "netns", "list"])
        .map(|list| list.lines().any(|l| l.split_whitespace().next() == Some(ns)))
        .unwrap_or(false)
}

/// A namespace per host, refusing to touch one that exists already.
pub fn add_namespaces(lab: &mut Lab, topology: &Topology) -> Result<(), Error> {
    for host in &topology.hosts {
        let ns = lab.ns(host);
        if namespace_exists(&ns) {
            return Err(Setup::NamespaceExists(ns).into());
        }
    }
    for host in &topology.hosts {
        let ns = lab.ns(host);
        sh(&["ip", "netns", "add", &ns])?;
        lab.namespaces.push(ns.clone());
        lab.exec(host, &["ip", "link", "set", "lo", "up"])?;
        // No IPv6 autoconfiguration chatter on the links: the loss check
        // counts every packet netem drops.
        lab.exec(host, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        lab.exec(host, &["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])?;
    }
    println!("lab: namespaces {}", lab.namespaces.join(", "));
    Ok(())
}

/// The veth links, their MTUs, addresses and netem qdiscs.
pub fn add_links(lab: &Lab, topology: &Topology) -> Result<(), Error> {
    for (i, link) in topology.links.iter().enumerate() {
        let (host_a, if_a) = split(&link.a)?;
        let (host_b, if_b) = split(&link.b)?;
        let (tmp_a, tmp_b) = (format!("{}l{i}a", topology.name), format!("{}l{i}b", topology.name));
        sh(&["ip", "link", "add", &tmp_a, "type", "veth", "peer", "name", &tmp_b])?;
        for (tmp, host, ifname, addr, addr6) in [
            (&tmp_a, host_a, if_a, &link.a_addr, &link.a_addr6),
            (&tmp_b, host_b, if_b, &link.b_addr, &link.b_addr6),
        ] {
            let ns = lab.ns(host);
            sh(&["ip", "link", "set", tmp, "netns", &ns, "name", ifname])?;
            let mtu = link.mtu.to_string();
            lab.exec(host, &["ip", "link", "set", ifname, "mtu", &mtu, "up"])?;
            // Checksums and segmentation done by the kernel in software: a
            // packet read by af_packet is a real, finished frame.
            lab.exec(
                host,
                &[
                    "ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro",
                    "off",
                ],
            )?;
            if let Some(addr) = addr {
                lab.exec(host, &["ip", "addr", "add", addr, "dev", ifname])?;
            }
            if let Some(addr) = addr6 {
                // New namespaces may start with IPv6 off; no router
                // solicitations, no duplicate address detection: the
                // address is usable at once.
                for setting in ["disable_ipv6=0", "accept_ra=0"] {
                    lab.exec(host, &["sysctl", "-qw", &format!("net.ipv6.conf.{ifname}.{setting}")])?;
                }
                lab.exec(host, &["ip", "-6", "addr", "add", addr, "dev", ifname, "nodad"])?;
            }
        }
        if let Some(netem) = &link.netem {
            let mut cmd = vec!["tc", "qdisc", "add", "dev", if_a, "root", "netem"];
            cmd.extend(netem.split_whitespace());
            lab.exec(host_a, &cmd)?;
        }
        println!("lab: link {} <-> {} (mtu {})", link.a, link.b, link.mtu);
    }
    Ok(())
}

/// The topology's setup commands, each in its host, in order
/// (`{workdir}`: the run's folder).
pub fn run_setup(lab: &Lab, topology: &Topology, workdir: &Path) -> Result<(), Error> {
    let folder = workdir.to_string_lossy();
    for command in &topology.setup {
        let args: Vec<String> = command.run.iter().map(|a| a.replace("{workdir}", &folder)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        lab.exec(&command.host, &args)?;
        println!("lab: in {}: {}", lab.ns(&command.host), args.join(" "));
    }
    Ok(())
}

/// Static neighbours between the addressed ends: no ARP or neighbour
/// discovery on the wire.
pub fn add_neighbours(lab: &Lab, topology: &Topology) -> Result<(), Error> {
    let addressed: Vec<(&str, &str, String)> = topology
        .links
        .iter()
        .flat_map(|l| {
            [
                (l.a.as_str(), l.a_addr.clone()),
                (l.b.as_str(), l.b_addr.clone()),
                (l.a.as_str(), l.a_addr6.clone()),
                (l.b.as_str(), l.b_addr6.clone()),
            ]
        })
        .filter_map(|(end, addr)| {
            let (host, ifname) = end.split_once('/')?;
            Some((host, ifname, addr?.split('/').next()?.to_string()))
        })
        .collect();
    for (host, ifname, ip) in &addressed {
        for (peer_host, peer_if, peer_ip) in &addressed {
            if peer_host == host || ip.contains(':') != peer_ip.contains(':') {
                continue;
            }
            let mac = lab.exec(peer_host, &["cat", &format!("/sys/class/net/{peer_if}/address")])?;
            lab.exec(
                host,
                &["ip", "neigh", "replace", peer_ip, "lladdr", mac.trim(), "dev", ifname, "nud", "permanent"],
            )?;
        }
    }
    Ok(())
}

/// SIGTERM to the nodes alone, each waited for: they send their last
/// reports while the collectors still take them.
pub fn stop_nodes(lab: &mut Lab) {
    let (nodes, others) = lab.children.drain(..).partition(|(name, _)| name.starts_with("node-"));
    lab.children = others;
    terminate_all(nodes.into_iter().map(|(_, child)| child).collect());
}

/// The path of another of the workspace's programs, built beside this one.
pub fn sibling(program: &str) -> Result<String, Error> {
    let exe = std::env::current_exe().map_err(Error::io("this program's path"))?;
    let path = exe.with_file_name(program);
    if !path.is_file() {
        return Err(Setup::NoProgram(path).into());
    }
    Ok(path.to_string_lossy().into_owned())
}
