//! Ethernet, IPv4, TCP and UDP headers: zerocopy structs over network-endian
//! fields, plus a `Repr` per header for building and round-trip tests.

pub mod ethernet;
pub mod ipv4;
pub mod tcp;
pub mod udp;

pub use ethernet::{EtherType, EthernetHeader, EthernetRepr, VlanTag};
pub use ipv4::{IpProtocol, Ipv4Header, Ipv4Repr};
pub use tcp::{TcpHeader, TcpRepr};
pub use udp::{UdpHeader, UdpRepr};
