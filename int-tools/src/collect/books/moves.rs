//! Where flows moved and where they lost packets: per sink, the packets it
//! declared lost and its flows' path changes; per node, the flows whose
//! path left or joined it, the changes that send a flow back and forth
//! (flaps), and packets lost on flows whose path runs through it. What an
//! alert needs to name the place.

use std::hash::{Hash, Hasher};

/// A flow flaps when a change takes it back to the path it just left for
/// the second time or more, no two of its changes this far apart (a
/// reroute and its repair are one return, not a flap).
pub const FLAP_WINDOW_MS: u64 = 10 * 60 * 1000;

/// What a sink told of its flows: packets lost and path changes. Kept
/// apart from the nodes' hops: an INT 0.5 or Host-INT sink reports no hop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sink {
    /// Packets the sink declared lost.
    pub lost: u64,
    /// Path changes of the flows the sink reports.
    pub path_changes: u64,
}

impl Sink {
    pub fn merge(&mut self, other: &Sink) {
        self.lost += other.lost;
        self.path_changes += other.path_changes;
    }
}

/// One node's share of path changes and loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Moves {
    /// Packets lost on flows whose followed path runs through this node.
    pub lost_on_paths: u64,
    /// Flows whose path no longer runs through this node.
    pub flows_left: u64,
    /// Flows whose path now runs through this node.
    pub flows_joined: u64,
    /// Flaps of flows between paths that differ by this node.
    pub flaps: u64,
}

impl Moves {
    pub fn merge(&mut self, other: &Moves) {
        self.lost_on_paths += other.lost_on_paths;
        self.flows_left += other.flows_left;
        self.flows_joined += other.flows_joined;
        self.flaps += other.flaps;
    }
}

/// A flow's recent path changes, kept from its first change on: enough to
/// tell a flap from a reroute without keeping old paths.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Swings {
    /// A digest of the path before the current one.
    before: Option<u64>,
    /// When the last change was seen, ms.
    last_ms: u64,
    /// Changes back to the path just left, since the last quiet gap.
    returns: u8,
}

impl Swings {
    /// Books a change from `old` to `new` at `at_ms`: whether it is a flap.
    pub fn change(&mut self, old: &[u32], new: &[u32], at_ms: u64) -> bool {
        // After a quiet window a change starts afresh, a return or not.
        if at_ms.saturating_sub(self.last_ms) > FLAP_WINDOW_MS {
            self.returns = 0;
        } else if self.before == Some(digest(new)) {
            self.returns = self.returns.saturating_add(1);
        }
        self.before = Some(digest(old));
        self.last_ms = at_ms;
        self.returns >= 2
    }
}

/// SipHash with fixed keys: the same path gives the same digest in every
/// receiver, and a collision only miscounts a flap.
fn digest(path: &[u32]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    path.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reroute and its repair return once: no flap. Back and forth again
    /// within the window flaps; after a quiet window it starts over.
    #[test]
    fn a_flap_is_a_second_return_within_the_window() {
        let (a, b) = ([1, 2, 9], [1, 4, 9]);
        let mut swings = Swings::default();
        assert!(!swings.change(&a, &b, 0), "a reroute");
        assert!(!swings.change(&b, &a, 60_000), "its repair");
        assert!(swings.change(&a, &b, 120_000), "back again: a flap");
        assert!(swings.change(&b, &a, 180_000));
        let later = 180_000 + FLAP_WINDOW_MS + 1;
        assert!(!swings.change(&a, &b, later), "after a quiet window, a reroute");
        assert!(!swings.change(&b, &a, later + 1));
        assert!(swings.change(&a, &b, later + 2));
    }

    /// Moving on to ever new paths is no flap.
    #[test]
    fn new_paths_are_no_flap() {
        let mut swings = Swings::default();
        for n in 0..10u32 {
            assert!(!swings.change(&[1, n, 9], &[1, n + 1, 9], u64::from(n)));
        }
    }
}
