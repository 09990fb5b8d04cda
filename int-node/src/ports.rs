//! The node's ports and their mbuf pools, as DPDK's basicfwd sets them up
//! (`port_init`): one pool per NUMA socket that has ports, each port's
//! queues fed from the pool of its own socket, mbufs big enough for the
//! largest MTU in one segment.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::{ClockSource, Config, PortConfig};
use crate::dpdk::mempool::{data_room_for_mtu, Mempool};
use crate::dpdk::port::{Port, PortId, PortSetup, PortStats};

use crate::dpdk::DpdkError;

/// What opening or finding the ports can fail on.
#[derive(Debug, thiserror::Error)]
pub enum PortsError {
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    #[error(transparent)]
    Missing(#[from] crate::startup::Failure),
    /// A port index no port of the config has: a node bug.
    #[error("no port {0} in the config")]
    NoPort(usize),
    #[error("no mempool on socket {0}")]
    NoPool(i32),
}

pub struct Ports {
    /// In config order: `ports[i]` is `config.ports[i]`.
    ports: Vec<Port>,
    /// The socket each port sits on.
    sockets: Vec<i32>,
    /// One pool per socket with ports (shared with the metrics page,
    /// whose thread ends before the ports close).
    pools: BTreeMap<i32, Arc<Mempool>>,
    /// Each mbuf's data room (the largest MTU in one segment).
    data_room: u16,
}

/// A port's name, basic counters and driver xstats.
pub type NamedPortStats = (String, PortStats, Vec<(String, u64)>);

impl Ports {
    /// Finds every port, makes the pools, configures and starts the ports.
    pub fn open(config: &Config) -> Result<Ports, PortsError> {
        let mut ids = Vec::new();
        let mut sockets = Vec::new();
        for port in &config.ports {
            let (id, socket) =
                Port::find(&port.name, &port.device.name).map_err(|error| match error.errno {
                    libc::ENODEV => PortsError::Missing(crate::startup::missing_device(
                        &port.name,
                        &port.device.name,
                        &error,
                    )),
                    _ => PortsError::Dpdk(error),
                })?;
            ids.push(id);
            sockets.push(socket);
        }
        let largest_mtu = config.ports.iter().map(|p| p.mtu).max().unwrap_or(1500);
        let data_room = data_room_for_mtu(largest_mtu);
        let mut pools = BTreeMap::new();
        for &socket in &sockets {
            if let std::collections::btree_map::Entry::Vacant(entry) = pools.entry(socket) {
                let name = format!("int_node_pool_{socket}");
                let pool = Mempool::new(&name, config.mbufs, config.mempool_cache, data_room, socket)
                    .map_err(|error| match error.errno {
                        libc::ENOMEM => PortsError::Missing(crate::startup::pool_memory(&error, config)),
                        _ => PortsError::Dpdk(error),
                    })?;
                log::info!(
                    "mempool on socket {socket}: {} mbufs of {data_room} bytes (MTU up to {largest_mtu} in one segment), {} available",
                    pool.size(),
                    pool.available()
                );
                entry.insert(Arc::new(pool));
            }
        }
        let mut ports = Ports { ports: Vec::new(), sockets, pools, data_room };
        for (index, (port, id)) in config.ports.iter().zip(ids).enumerate() {
            let setup = port_setup(config, index, port, ports.pools.len() == 1);
            let opened = Port::configure(id, &port.name, &setup, ports.pool(index)?)?;
            ports.ports.push(opened);
        }
        for port in ports.ports.iter_mut() {
            port.start()?;
            log_port(port);
        }
        Ok(ports)
    }

    /// Port `index` of the config.
    pub fn get(&self, index: usize) -> Result<&Port, PortsError> {
        self.ports.get(index).ok_or(PortsError::NoPort(index))
    }

    pub fn id(&self, index: usize) -> Result<PortId, PortsError> {
        self.get(index).map(|port| port.id)
    }

    pub fn socket(&self, index: usize) -> Result<i32, PortsError> {
        self.sockets.get(index).copied().ok_or(PortsError::NoPort(index))
    }

    /// The pool that feeds port `index`'s queues (its socket's).
    pub fn pool(&self, index: usize) -> Result<&Mempool, PortsError> {
        let socket = self.socket(index)?;
        self.pools.get(&socket).map(|pool| &**pool).ok_or(PortsError::NoPool(socket))
    }

    /// A pool of a stage's own, on port `index`'s socket, of mbufs as large
    /// as the ports': for what a stage makes beside the packets it is given
    /// (a cloning source's copies), so that it never takes the mbufs the
    /// ports receive into.
    pub fn own_pool(&self, name: &str, mbufs: u32, index: usize) -> Result<Arc<Mempool>, PortsError> {
        let socket = self.socket(index)?;
        let pool = Mempool::new(name, mbufs, 0, self.data_room, socket)?;
        log::info!("mempool {name} on socket {socket}: {mbufs} mbufs of {} bytes", self.data_room);
        Ok(Arc::new(pool))
    }

    /// Each port's name and id, in config order.
    pub fn named_ids(&self) -> Vec<(String, PortId)> {
        self.ports.iter().map(|p| (p.name.clone(), p.id)).collect()
    }

    /// Each pool, by socket.
    pub fn pools(&self) -> Vec<(i32, Arc<Mempool>)> {
        self.pools.iter().map(|(socket, pool)| (*socket, Arc::clone(pool))).collect()
    }

    pub fn stats(&self) -> Vec<NamedPortStats> {
        self.ports.iter().map(|p| (p.name.clone(), p.stats(), p.xstats())).collect()
    }

    /// Frees what is still queued, stops and closes every port (net_pcap
    /// writes its TX file now), then counts the mbufs not back in their
    /// pools. Returns (drained, in use, pool size).
    pub fn close(mut self, config: &[PortConfig]) -> (usize, u32, u32) {
        let mut drained = 0;
        for (port, port_config) in self.ports.iter().zip(config) {
            drained += crate::dpdk::mbuf::drain_rx(port.id, port_config.rx_queues);
        }
        for port in self.ports.iter_mut() {
            port.close();
        }
        self.ports.clear();
        let in_use = self.pools.values().map(|pool| pool.in_use()).sum();
        let size = self.pools.values().map(|pool| pool.size()).sum();
        (drained, in_use, size)
    }
}

fn port_setup(config: &Config, index: usize, port: &PortConfig, one_pool: bool) -> PortSetup {
    PortSetup {
        rx_queues: port.rx_queues,
        tx_queues: port.tx_queues,
        rx_descriptors: port.rx_descriptors,
        tx_descriptors: port.tx_descriptors,
        mtu: Some(port.mtu),
        promiscuous: port.promiscuous,
        rx_timestamps: config
            .pipelines
            .iter()
            .any(|p| p.rx.port == index && p.clock == ClockSource::RxTimestamp),
        // Every mbuf the node sends comes from its pool, direct and
        // unshared (stages never rewrite shared mbufs, and no PMD makes
        // them): bulk freeing is safe when there is one pool.
        fast_free: one_pool,
    }
}

fn log_port(port: &Port) {
    let (up, speed) = port.link();
    let mac = port.info.mac.map(|byte| format!("{byte:02x}")).join(":");
    log::info!(
        "port {} (id {}, {}): {mac}, link {} {speed} Mb/s, {} rx / {} tx descriptors, rss {}, rx timestamps {}, fast free {}",
        port.name,
        port.id.0,
        port.info.driver,
        if up { "up" } else { "down" },
        port.info.descriptors.0,
        port.info.descriptors.1,
        port.info.rss,
        port.info.rx_timestamps,
        port.info.fast_free,
    );
}
