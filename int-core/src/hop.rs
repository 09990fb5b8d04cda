//! The hop every protocol's reading converts into: INT 2.1's hop words
//! (int21/hop.rs reads and writes them), IOAM's node data
//! (`NodeData::as_hop`). The sinks' hop rule and the collector read hops in
//! this one shape, whatever carried them.

/// What one hop reports. `None`: the hop did not say (INT 2.1 writes it
/// as all ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hop {
    pub node_id: Option<u32>,
    pub l1_ingress_port: Option<u16>,
    pub l1_egress_port: Option<u16>,
    pub hop_latency: Option<u32>,
    /// Queue id (8 bits) and occupancy (24 bits).
    pub queue: Option<(u8, u32)>,
    pub ingress_timestamp: Option<u64>,
    pub egress_timestamp: Option<u64>,
    pub l2_ingress_port: Option<u32>,
    pub l2_egress_port: Option<u32>,
    pub egress_tx_utilization: Option<u32>,
    /// Buffer id (8 bits) and occupancy (24 bits).
    pub buffer: Option<(u8, u32)>,
    /// The checksum complement; all ones when the node updated the L4
    /// checksum instead (section 5.6).
    pub checksum_complement: Option<u32>,
}
