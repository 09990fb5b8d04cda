//! Ethernet, IPv4, IPv6, TCP and UDP headers and the tunnel headers INT
//! and IFA ride in (VXLAN-GPE, Geneve, GRE): zerocopy structs over network-endian
//! fields, plus a `Repr` per header for building and round-trip tests.

pub mod ethernet;
pub mod geneve;
pub mod gre;
pub mod ipfix;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6option;
pub mod tcp;
pub mod udp;
pub mod vxlan_gpe;

pub use ethernet::{EtherType, EthernetHeader, EthernetRepr, VlanTag};
pub use ipv4::{IpProtocol, Ipv4Header, Ipv4Repr};
pub use ipv6::{Ipv6Header, Ipv6Repr};
pub use tcp::{TcpHeader, TcpRepr};
pub use udp::{UdpHeader, UdpRepr};
