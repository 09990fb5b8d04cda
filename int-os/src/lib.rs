//! The operating-system calls int-node's programs make beside DPDK, grouped
//! by purpose. `unsafe` outside the DPDK layer lives only here, each block
//! with a SAFETY note.

pub mod alloc;
pub mod cpus;
pub mod files;
pub mod http;
pub mod memory;
pub mod signals;
pub mod udp;
