//! The commands around the node, none of which needs DPDK: `gen` writes
//! test traffic, `decode` prints INT and report packets from a pcap,
//! `collect` receives reports on a UDP socket.

pub mod collect;
pub mod decode;
pub mod gen;
pub mod lab;
pub mod pcap;
pub mod send;
