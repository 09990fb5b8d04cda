//! Where the topology places each node: a rank from sources (0) to sinks
//! over the links of the paths flows take now. Longest-path layering: a
//! node's rank is one more than its furthest predecessor's, so every link
//! of a current path goes rightwards and no node of a path is right of
//! its sink; the ends of paths (sinks) share the last rank. Links that
//! would close a cycle (flows both ways over a pair) are left out of the
//! layering, found by a depth-first walk from the sources. Nodes on no
//! current path have no rank: the page shows them apart, as idle.

use std::collections::{BTreeMap, BTreeSet};

/// Each node of `adjacency` (from, to) to its rank.
pub fn ranks(adjacency: impl Iterator<Item = (u32, u32)>) -> BTreeMap<u32, usize> {
    let mut next: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut has_input = BTreeSet::new();
    for (from, to) in adjacency.filter(|(from, to)| from != to) {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
        has_input.insert(to);
    }
    let order = acyclic_order(&next, &has_input);
    let position: BTreeMap<u32, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut rank: BTreeMap<u32, usize> = order.iter().map(|n| (*n, 0)).collect();
    for node in &order {
        let mine = rank.get(node).copied().unwrap_or(0);
        let at = position.get(node).copied().unwrap_or(0);
        for to in next.get(node).into_iter().flatten() {
            // Only links forward in the order: the rest close a cycle.
            if position.get(to).is_some_and(|p| *p > at) {
                if let Some(theirs) = rank.get_mut(to) {
                    *theirs = (*theirs).max(mine + 1);
                }
            }
        }
    }
    let last = rank.values().copied().max().unwrap_or(0);
    for (node, outputs) in &next {
        if outputs.is_empty() {
            rank.insert(*node, last);
        }
    }
    rank
}

/// The nodes in an order where every link not closing a cycle goes
/// forward: the reverse of a depth-first walk's finishing order, sources
/// first (by id), then whatever a cycle keeps from every source.
fn acyclic_order(next: &BTreeMap<u32, Vec<u32>>, has_input: &BTreeSet<u32>) -> Vec<u32> {
    let starts =
        next.keys().filter(|n| !has_input.contains(n)).chain(next.keys().filter(|n| has_input.contains(n)));
    let mut done = BTreeSet::new();
    let mut finished = Vec::with_capacity(next.len());
    for start in starts.copied() {
        if !done.insert(start) {
            continue;
        }
        // (node, index of its next output to visit)
        let mut stack = vec![(start, 0usize)];
        while let Some((node, index)) = stack.pop() {
            match next.get(&node).and_then(|outputs| outputs.get(index)) {
                Some(to) => {
                    stack.push((node, index + 1));
                    if done.insert(*to) {
                        stack.push((*to, 0));
                    }
                }
                None => finished.push(node),
            }
        }
    }
    finished.reverse();
    finished
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(links: &[(u32, u32)]) -> Vec<(u32, usize)> {
        ranks(links.iter().copied()).into_iter().collect()
    }

    #[test]
    fn a_path_goes_left_to_right() {
        assert_eq!(of(&[(1, 2), (2, 3), (3, 9)]), [(1, 0), (2, 1), (3, 2), (9, 3)]);
    }

    /// A short path's sink shares the last rank; a transit is never right
    /// of the sink of a path it is on.
    #[test]
    fn sinks_share_the_last_rank() {
        assert_eq!(of(&[(1, 2), (2, 3), (3, 9), (1, 8)]), [(1, 0), (2, 1), (3, 2), (8, 3), (9, 3)]);
    }

    /// Flows both ways over a pair: each node gets one rank, and the
    /// layering ends.
    #[test]
    fn a_cycle_is_layered_once() {
        let ranks = of(&[(1, 2), (2, 3), (3, 2), (2, 1)]);
        assert_eq!(ranks.len(), 3);
        assert_eq!(ranks[0], (1, 0));
        assert!(ranks.iter().all(|(_, r)| *r <= 2), "{ranks:?}");
    }

    #[test]
    fn no_link_no_rank() {
        assert!(of(&[]).is_empty());
        assert_eq!(of(&[(5, 5)]), []);
    }
}
