//! An Ethernet port: configure RX/TX queues, MTU, promiscuous mode, RSS on
//! the 5-tuple where the driver offers it, RX timestamps on request; start,
//! stop, close (stop and close flush net_pcap's TX file); link and stats.

use std::ffi::CString;
use std::mem::MaybeUninit;

use super::mempool::Mempool;
use super::DpdkError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u16);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u16);

// Values of rte_ethdev.h's RTE_BIT64() macros, which bindgen cannot
// evaluate (DPDK 22.11).
const RSS_IPV4: u64 = 1 << 2;
const RSS_FRAG_IPV4: u64 = 1 << 3;
const RSS_NONFRAG_IPV4_TCP: u64 = 1 << 4;
const RSS_NONFRAG_IPV4_UDP: u64 = 1 << 5;
const RX_OFFLOAD_TIMESTAMP: u64 = 1 << 14;
const TX_OFFLOAD_MBUF_FAST_FREE: u64 = 1 << 16;

#[derive(Debug, Clone)]
pub struct PortSetup {
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    pub mtu: Option<u16>,
    pub promiscuous: bool,
    pub rx_timestamps: bool,
    /// Every mbuf sent on this port comes from one pool and is direct and
    /// unshared: the driver may free them in bulk.
    pub fast_free: bool,
}

/// Driver facts logged at start.
#[derive(Debug, Clone, Default)]
pub struct PortInfo {
    pub driver: String,
    pub mac: [u8; 6],
    pub rss: bool,
    pub rx_timestamps: bool,
    /// TX mbufs go back to their pool without per-mbuf checks (all from
    /// one pool, direct, not shared).
    pub fast_free: bool,
    /// RX and TX descriptors per queue, as the driver adjusted them.
    pub descriptors: (u16, u16),
}

pub struct Port {
    pub id: PortId,
    pub name: String,
    pub info: PortInfo,
    started: bool,
    closed: bool,
}

/// Basic counters from `rte_eth_stats_get`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct PortStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_missed: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_nombuf: u64,
}

impl Port {
    /// The port id of an EAL device, and the NUMA socket it sits on (0
    /// when the driver does not say).
    pub fn find(name: &str, device: &str) -> Result<(PortId, i32), DpdkError> {
        let c_device = CString::new(device).map_err(|_| DpdkError::from_ret("device name", -libc::EINVAL))?;
        let mut raw_id = 0u16;
        // SAFETY: the name is NUL-terminated; raw_id is a valid out pointer.
        let ret = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(c_device.as_ptr(), &mut raw_id) };
        if ret < 0 {
            return Err(DpdkError::from_ret(format!("port {name}: no device {device}"), ret));
        }
        // SAFETY: plain call on a valid port id.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(raw_id) };
        Ok((PortId(raw_id), socket.max(0)))
    }

    /// Configures port `id` as `setup` asks and sets up its queues, with
    /// mbufs from `pool` (which should be on the port's socket), the
    /// descriptor counts adjusted to what the driver takes. Not started.
    pub fn configure(id: PortId, name: &str, setup: &PortSetup, pool: &Mempool) -> Result<Port, DpdkError> {
        let (dev_info, driver) = device_info(id, name)?;
        if setup.rx_queues > dev_info.max_rx_queues || setup.tx_queues > dev_info.max_tx_queues {
            return Err(DpdkError {
                what: format!("port {name} ({driver})"),
                errno: libc::EINVAL,
                text: format!(
                    "{} rx / {} tx queues asked, the driver has {} / {}",
                    setup.rx_queues, setup.tx_queues, dev_info.max_rx_queues, dev_info.max_tx_queues
                ),
            });
        }
        let (conf, features) = eth_conf(setup, &dev_info);
        if setup.rx_queues > 1 && !features.rss {
            log::warn!(
                "port {name} ({driver}): no RSS on the 5-tuple; flows may be spread over queues arbitrarily"
            );
        }
        // SAFETY: conf is a valid configuration for this port id.
        let ret = unsafe { dpdk_sys::rte_eth_dev_configure(id.0, setup.rx_queues, setup.tx_queues, &conf) };
        if ret < 0 {
            return Err(DpdkError::from_ret(format!("port {name}: configure"), ret));
        }
        set_mtu(id, name, &driver, setup.mtu);
        let descriptors = adjust_descriptors(id, name, setup.rx_descriptors, setup.tx_descriptors)?;
        setup_queues(id, name, setup, descriptors, conf.txmode.offloads, &dev_info, pool)?;
        if setup.promiscuous {
            // SAFETY: plain call on a configured port.
            let ret = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id.0) };
            if ret < 0 && ret != -libc::ENOTSUP {
                log::warn!("port {name}: promiscuous mode: {}", super::strerror(-ret));
            }
        }
        let info = PortInfo { driver, mac: mac_address(id), descriptors, ..features };
        Ok(Port { id, name: name.to_string(), info, started: false, closed: false })
    }

    pub fn start(&mut self) -> Result<(), DpdkError> {
        // SAFETY: the port is configured and its queues set up.
        let ret = unsafe { dpdk_sys::rte_eth_dev_start(self.id.0) };
        if ret < 0 {
            return Err(DpdkError::from_ret(format!("port {}: start", self.name), ret));
        }
        self.started = true;
        Ok(())
    }

    /// Link up, and its speed in Mb/s.
    pub fn link(&self) -> (bool, u32) {
        let mut link = MaybeUninit::<dpdk_sys::rte_eth_link>::zeroed();
        // SAFETY: link is a valid out pointer.
        let ret = unsafe { dpdk_sys::rte_eth_link_get_nowait(self.id.0, link.as_mut_ptr()) };
        if ret < 0 {
            return (false, 0);
        }
        // SAFETY: filled by the call above.
        let link = unsafe { link.assume_init() };
        (link.link_status() == 1, link.link_speed)
    }

    pub fn stats(&self) -> PortStats {
        stats_of(self.id)
    }

    /// Extended statistics, name and value, the driver's own.
    pub fn xstats(&self) -> Vec<(String, u64)> {
        // SAFETY: a null array asks for the count only.
        let count = unsafe { dpdk_sys::rte_eth_xstats_get_names(self.id.0, std::ptr::null_mut(), 0) };
        if count <= 0 {
            return Vec::new();
        }
        let count = count as usize;
        let mut names = vec![dpdk_sys::rte_eth_xstat_name { name: [0; 64] }; count];
        let mut values = vec![dpdk_sys::rte_eth_xstat { id: 0, value: 0 }; count];
        // SAFETY: both arrays hold `count` elements.
        let got_names =
            unsafe { dpdk_sys::rte_eth_xstats_get_names(self.id.0, names.as_mut_ptr(), count as u32) };
        // SAFETY: as above.
        let got_values =
            unsafe { dpdk_sys::rte_eth_xstats_get(self.id.0, values.as_mut_ptr(), count as u32) };
        if got_names < 0 || got_values < 0 {
            return Vec::new();
        }
        values
            .iter()
            .filter_map(|v| {
                let name = names.get(v.id as usize)?;
                // SAFETY: DPDK NUL-terminates xstat names within 64 bytes.
                let text = unsafe { std::ffi::CStr::from_ptr(name.name.as_ptr()) };
                Some((text.to_string_lossy().into_owned(), v.value))
            })
            .collect()
    }

    /// Stops and closes the port (net_pcap writes its TX file here).
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        if self.started {
            // SAFETY: no lcore polls the port any more (workers have
            // returned before ports are closed).
            let ret = unsafe { dpdk_sys::rte_eth_dev_stop(self.id.0) };
            if ret < 0 {
                log::warn!("port {}: stop: {}", self.name, super::strerror(-ret));
            }
            self.started = false;
        }
        // SAFETY: the port is stopped; closing releases its queues.
        let ret = unsafe { dpdk_sys::rte_eth_dev_close(self.id.0) };
        if ret < 0 {
            log::warn!("port {}: close: {}", self.name, super::strerror(-ret));
        }
        self.closed = true;
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        self.close();
    }
}

/// The driver's description of port `id`, and its name.
fn device_info(id: PortId, name: &str) -> Result<(dpdk_sys::rte_eth_dev_info, String), DpdkError> {
    let mut dev_info = MaybeUninit::<dpdk_sys::rte_eth_dev_info>::zeroed();
    // SAFETY: dev_info is a valid out pointer of the right type.
    let ret = unsafe { dpdk_sys::rte_eth_dev_info_get(id.0, dev_info.as_mut_ptr()) };
    if ret < 0 {
        return Err(DpdkError::from_ret(format!("port {name}: device info"), ret));
    }
    // SAFETY: rte_eth_dev_info_get filled the structure (ret >= 0).
    let dev_info = unsafe { dev_info.assume_init() };
    let driver = if dev_info.driver_name.is_null() {
        String::from("?")
    } else {
        // SAFETY: driver_name is a static NUL-terminated string of the PMD.
        unsafe { std::ffi::CStr::from_ptr(dev_info.driver_name) }.to_string_lossy().into_owned()
    };
    Ok((dev_info, driver))
}

/// The port configuration: RSS on the 5-tuple with more than one RX queue,
/// RX timestamps and TX fast free where asked and offered. Returns what was
/// switched on.
fn eth_conf(setup: &PortSetup, dev_info: &dpdk_sys::rte_eth_dev_info) -> (dpdk_sys::rte_eth_conf, PortInfo) {
    // SAFETY: rte_eth_conf is a plain C struct for which all-zero is
    // DPDK's documented default.
    let mut conf: dpdk_sys::rte_eth_conf = unsafe { std::mem::zeroed() };
    let wanted_rss = RSS_IPV4 | RSS_FRAG_IPV4 | RSS_NONFRAG_IPV4_TCP | RSS_NONFRAG_IPV4_UDP;
    let rss_hf = wanted_rss & dev_info.flow_type_rss_offloads;
    let rss = setup.rx_queues > 1 && rss_hf != 0;
    if rss {
        conf.rxmode.mq_mode = dpdk_sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
        conf.rx_adv_conf.rss_conf.rss_key = std::ptr::null_mut();
    }
    // Drivers that advertise the offload need it switched on; net_pcap
    // fills the timestamp field without advertising it.
    let rx_timestamps = setup.rx_timestamps && dev_info.rx_offload_capa & RX_OFFLOAD_TIMESTAMP != 0;
    if rx_timestamps {
        conf.rxmode.offloads |= RX_OFFLOAD_TIMESTAMP;
    }
    let fast_free = setup.fast_free && dev_info.tx_offload_capa & TX_OFFLOAD_MBUF_FAST_FREE != 0;
    if fast_free {
        conf.txmode.offloads |= TX_OFFLOAD_MBUF_FAST_FREE;
    }
    (conf, PortInfo { rss, rx_timestamps, fast_free, ..PortInfo::default() })
}

fn set_mtu(id: PortId, name: &str, driver: &str, mtu: Option<u16>) {
    let Some(mtu) = mtu else { return };
    // SAFETY: plain call on a configured port.
    let ret = unsafe { dpdk_sys::rte_eth_dev_set_mtu(id.0, mtu) };
    if ret == -libc::ENOTSUP {
        // vdevs such as net_pcap have no MTU to set; the node still
        // enforces it on what it grows.
        log::info!("port {name} ({driver}): no MTU setting; {mtu} enforced by int-node");
    } else if ret < 0 {
        log::warn!("port {name} ({driver}): MTU {mtu} not set: {}", super::strerror(-ret));
    }
}

/// The RX and TX descriptor counts brought within the driver's limits and
/// alignment (`rte_eth_dev_adjust_nb_rx_tx_desc`), with a note when they
/// changed.
fn adjust_descriptors(id: PortId, name: &str, rx: u16, tx: u16) -> Result<(u16, u16), DpdkError> {
    let (mut rx_adjusted, mut tx_adjusted) = (rx, tx);
    // SAFETY: both pointers are valid u16 out/in values on this stack.
    let ret = unsafe { dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id.0, &mut rx_adjusted, &mut tx_adjusted) };
    if ret < 0 {
        return Err(DpdkError::from_ret(format!("port {name}: descriptor counts"), ret));
    }
    if (rx_adjusted, tx_adjusted) != (rx, tx) {
        log::info!("port {name}: descriptors {rx} rx / {tx} tx adjusted by the driver to {rx_adjusted} / {tx_adjusted}");
    }
    Ok((rx_adjusted, tx_adjusted))
}

/// Sets up every RX queue (mbufs from `pool`) and TX queue on the port's
/// socket, TX with the port's TX offloads.
fn setup_queues(
    id: PortId,
    name: &str,
    setup: &PortSetup,
    (rx_descriptors, tx_descriptors): (u16, u16),
    tx_offloads: u64,
    dev_info: &dpdk_sys::rte_eth_dev_info,
    pool: &Mempool,
) -> Result<(), DpdkError> {
    // SAFETY: plain call on a valid port id.
    let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id.0) }.max(0) as u32;
    for queue in 0..setup.rx_queues {
        // SAFETY: null rx_conf selects the driver's defaults; the pool
        // outlives the port (dropped after it).
        let ret = unsafe {
            dpdk_sys::rte_eth_rx_queue_setup(
                id.0,
                queue,
                rx_descriptors,
                socket,
                std::ptr::null(),
                pool.as_ptr(),
            )
        };
        if ret < 0 {
            return Err(DpdkError::from_ret(format!("port {name}: rx queue {queue}"), ret));
        }
    }
    let mut tx_conf = dev_info.default_txconf;
    tx_conf.offloads = tx_offloads;
    for queue in 0..setup.tx_queues {
        // SAFETY: tx_conf is the driver's default with the port's offloads.
        let ret = unsafe { dpdk_sys::rte_eth_tx_queue_setup(id.0, queue, tx_descriptors, socket, &tx_conf) };
        if ret < 0 {
            return Err(DpdkError::from_ret(format!("port {name}: tx queue {queue}"), ret));
        }
    }
    Ok(())
}

fn mac_address(id: PortId) -> [u8; 6] {
    let mut mac = MaybeUninit::<dpdk_sys::rte_ether_addr>::zeroed();
    // SAFETY: mac is a valid out pointer.
    let ret = unsafe { dpdk_sys::rte_eth_macaddr_get(id.0, mac.as_mut_ptr()) };
    if ret != 0 {
        return [0; 6];
    }
    // SAFETY: filled by the call above.
    unsafe { mac.assume_init() }.addr_bytes
}

/// The mbuf dynamic field and flag where drivers store RX timestamps, once
/// a port with RX timestamps is configured.
pub fn rx_timestamp_field() -> Option<(usize, u64)> {
    // The field exists once a driver registered it (net_pcap does at probe,
    // NIC drivers when the offload is enabled).
    // SAFETY: the names are NUL-terminated constants; null params is allowed.
    let offset = unsafe {
        dpdk_sys::rte_mbuf_dynfield_lookup(
            dpdk_sys::RTE_MBUF_DYNFIELD_TIMESTAMP_NAME.as_ptr().cast(),
            std::ptr::null_mut(),
        )
    };
    // SAFETY: as above.
    let bit = unsafe {
        dpdk_sys::rte_mbuf_dynflag_lookup(
            dpdk_sys::RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME.as_ptr().cast(),
            std::ptr::null_mut(),
        )
    };
    (offset >= 0 && bit >= 0).then(|| (offset as usize, 1u64 << bit))
}

/// Packets waiting in an RX queue (descriptors the NIC has filled and the
/// worker not yet read), where the driver counts them: `None` where it
/// does not (the vdevs: pcap, null, ring, memif, af_packet).
#[inline]
pub fn rx_queue_depth(port: PortId, queue: QueueId) -> Option<u32> {
    // SAFETY: the port and queue were configured and started by Port; the
    // call reads the driver's ring state (-ENOTSUP where it has no count).
    let count = unsafe { dpdk_sys::shim_rx_queue_count(port.0, queue.0) };
    u32::try_from(count).ok()
}

/// Basic counters of port `id`, read from any thread (DPDK's telemetry
/// thread reads them the same way while the workers run); zeros once the
/// port is gone.
pub fn stats_of(id: PortId) -> PortStats {
    let mut stats = MaybeUninit::<dpdk_sys::rte_eth_stats>::zeroed();
    // SAFETY: stats is a valid out pointer; an unknown port id is refused
    // by DPDK with a negative return.
    let ret = unsafe { dpdk_sys::rte_eth_stats_get(id.0, stats.as_mut_ptr()) };
    if ret < 0 {
        return PortStats::default();
    }
    // SAFETY: filled by the call above.
    let s = unsafe { stats.assume_init() };
    PortStats {
        rx_packets: s.ipackets,
        tx_packets: s.opackets,
        rx_bytes: s.ibytes,
        tx_bytes: s.obytes,
        rx_missed: s.imissed,
        rx_errors: s.ierrors,
        tx_errors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
    }
}
