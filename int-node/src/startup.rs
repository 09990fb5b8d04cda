//! Start-up failures told in one line: what failed, why, and what to do
//! (docs/deployment.md has the long form). EAL prints its own lines above;
//! this is the one an operator acts on.

use crate::dpdk::DpdkError;

/// A start-up failure, its cause and its fix.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {cause}; fix: {fix}")]
pub struct Failure {
    pub what: String,
    pub cause: String,
    pub fix: String,
}

/// Why `rte_eal_init` failed with these arguments, and the way out;
/// `mbufs` is the DPDK memory the config's mbufs take, in words.
pub fn eal(error: &DpdkError, args: &[String], mbufs: &str) -> Failure {
    let no_huge = args.iter().any(|a| a == "--no-huge");
    let what = format!("EAL init: {} (errno {})", error.text, error.errno);
    let (cause, fix) = match error.errno {
        libc::EACCES if !no_huge => (
            "no hugepages this process can use (none reserved, hugetlbfs not mounted, or no permission)".to_string(),
            "reserve hugepages (sysctl -w vm.nr_hugepages=1024 for 2 MB pages) and mount hugetlbfs, as docs/deployment.md shows; or, to try it out, add --no-huge and -m 512 to the eal list".to_string(),
        ),
        libc::EACCES => (
            "permission denied (DPDK needs root, or the capabilities in docs/deployment.md)".to_string(),
            "run as root, or as the int-node@.service unit does".to_string(),
        ),
        libc::ENOMEM => (
            format!("not enough memory for DPDK: the config needs {mbufs} of it for mbufs"),
            "reserve more hugepages, or raise -m (with --no-huge) above that, or lower mempool.mbufs".to_string(),
        ),
        _ => (
            "EAL refused its arguments or this host (the EAL lines above say which)".to_string(),
            "check the config's eal list against docs/deployment.md; int-node check --config FILE tests the rest".to_string(),
        ),
    };
    Failure { what, cause, fix }
}

/// A mempool EAL's memory could not hold: the pool's size beside what
/// EAL was given.
pub fn pool_memory(error: &DpdkError, config: &crate::config::Config) -> Failure {
    let plan = crate::node::memory::Plan::of(config);
    let given = crate::node::memory::dpdk_limit(&config.eal).map_or_else(
        || "what EAL found".to_string(),
        |(bytes, from)| format!("{} ({from})", crate::node::memory::size(bytes)),
    );
    Failure {
        what: format!("{}: {} (errno {})", error.what, error.text, error.errno),
        cause: format!(
            "the pool needs {} of DPDK memory, and EAL has {given}, part of which DPDK keeps for itself",
            crate::node::memory::size(plan.mbufs)
        ),
        // Measured with --no-huge on DPDK 22.11: an 18.5 MiB pool needed
        // -m 40 (32 failed), a 148 MiB pool -m 300 (232 failed).
        fix: "give EAL more memory (more hugepages, --socket-mem, or -m with --no-huge, where about twice the pool's size is needed), or lower mempool.mbufs".into(),
    }
}

/// A port's device that DPDK does not list: for a PCI address, a NIC not
/// bound to a DPDK driver.
pub fn missing_device(port: &str, device: &str, error: &DpdkError) -> Failure {
    let pci = crate::config::pci_address(device).is_some();
    let what = format!("port {port}: no device {device} ({})", error.text);
    if pci {
        Failure {
            what,
            cause: "DPDK lists only NICs bound to a DPDK driver (vfio-pci), and int-node asked for it with -a".into(),
            fix: format!(
                "modprobe vfio-pci; dpdk-devbind.py --bind=vfio-pci {device} (the IOMMU on: intel_iommu=on iommu=pt or amd_iommu=on); dpdk-devbind.py --status lists the NICs"
            ),
        }
    } else {
        Failure {
            what,
            cause: "no driver of this DPDK build made the vdev".into(),
            fix: "check the vdev's name (net_pcap0, net_null0, net_ring0, net_memif0, net_af_packet0) and its arguments".into(),
        }
    }
}
