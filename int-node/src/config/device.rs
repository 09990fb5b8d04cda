//! `ports[].device`: a vdev or a PCI address with its driver arguments, and
//! the checks that keep two ports from sharing a device or a file.

use std::path::Path;

use super::model::{Device, DeviceKind};
use super::problems::Problems;

/// Reads a device string: `net_pcap0,rx_pcap=in.pcap` or
/// `0000:03:00.0,rxq_cqe_comp_en=0`. `None` when it is neither a vdev nor
/// a PCI address, or an argument is not `key=value`.
pub fn parse_device(text: &str) -> Option<Device> {
    let mut parts = text.split(',');
    let name = parts.next()?;
    let args = parts
        .map(|arg| arg.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect::<Option<Vec<_>>>()?;
    if name.starts_with("net_") || name.starts_with("eth_") {
        return Some(Device { kind: DeviceKind::Vdev, name: name.to_string(), args });
    }
    let address = pci_address(name)?;
    Some(Device { kind: DeviceKind::Pci, name: address, args })
}

/// A PCI address as EAL takes it after `-a`: `[domain:]bus:device.function`
/// in hex. Returns it with its domain (`0000:` when left out), lower case.
pub fn pci_address(address: &str) -> Option<String> {
    let parts: Vec<&str> = address.split(':').collect();
    let (domain, bus, rest) = match parts.as_slice() {
        [bus, rest] => ("0000", *bus, *rest),
        [domain, bus, rest] => (*domain, *bus, *rest),
        _ => return None,
    };
    let (dev, function) = rest.split_once('.')?;
    let hex = |text: &str, max_len: usize| {
        !text.is_empty() && text.len() <= max_len && text.chars().all(|c| c.is_ascii_hexdigit())
    };
    if !(hex(domain, 4) && hex(bus, 2) && hex(dev, 2) && function.len() == 1 && hex(function, 1)) {
        return None;
    }
    Some(format!("{domain:0>4}:{bus:0>2}:{dev:0>2}.{function}").to_ascii_lowercase())
}

/// Refuses port `i` when an earlier port is the same device (two lcores
/// would poll one queue: corrupted packets and a corrupted pool) or writes
/// the same file (each writer truncates the other's packets), and a port
/// that reads the file it writes.
/// `devices` holds each port's index, name and device.
pub fn check_aliases(devices: &[(usize, &str, Device)], problems: &mut Problems) {
    for (n, (i, _, device)) in devices.iter().enumerate() {
        let path = format!("ports[{i}].device");
        let writes: Vec<&str> = device.arg("tx_pcap").collect();
        for (j, earlier, other) in devices.iter().take(n) {
            if other.name == device.name {
                problems.add(
                    &path,
                    format!("device {:?} is also ports[{j}] ({earlier:?})", device.name),
                    "one port per device: give each vdev its own name (net_pcap0, net_pcap1, ...) and each NIC its own PCI address",
                );
            }
            for file in other.arg("tx_pcap").filter(|file| writes.contains(file)) {
                problems.add(
                    &path,
                    format!("tx_pcap {file:?} is also written by ports[{j}] ({earlier:?})"),
                    "give each port its own output file",
                );
            }
        }
        for file in device.arg("rx_pcap").filter(|file| writes.contains(file)) {
            problems.add(
                &path,
                format!("{file:?} is both read (rx_pcap) and written (tx_pcap)"),
                "write the output to another file",
            );
        }
    }
}

/// Problems only the file system can show: an input pcap that is not
/// there (net_pcap would fail at start with a line buried in EAL's log).
/// Relative paths were resolved against the config file's directory.
pub fn check_files(ports: &[super::model::PortConfig], problems: &mut Problems) {
    for (i, port) in ports.iter().enumerate() {
        for file in port.device.arg("rx_pcap") {
            if !Path::new(file).is_file() {
                problems.add(
                    format!("ports[{i}].device"),
                    format!("rx_pcap {file:?} does not exist"),
                    "give the path of an existing pcap file, relative to the config file's directory",
                );
            }
        }
    }
}
