//! The congestion lab's flows, by their UDP source ports: the one that
//! bursts and the steady ones after it.

use crate::lab::topology::Congestion;

/// The bursting flow's UDP source port; the steady flows' follow it.
pub const BURST_PORT: u16 = 40020;

/// The steady flows' source ports.
pub fn steady_ports(spec: &Congestion) -> Vec<u16> {
    (1..=spec.steady_flows).map(|i| BURST_PORT + i).collect()
}
