//! Which module of a crate imports which, read from the sources: the module
//! tree from `mod` declarations, the edges from `use` statements and from
//! paths in code (`crate::`, `super::`, `self::`, and a path that begins
//! with a child module's name, `sink::Sink05Stage`). A parent re-exporting
//! what lies under it (`pub use`, `pub(crate) use`) is ownership (a
//! facade), not an edge; every other import is, a parent's use of its
//! child's items included: a parent enum of its children's stages, with the
//! children importing the parent, is a cycle. Test modules inside a file
//! are left out: they import their file by design.
//!
//! This reads Rust the way the workspace writes it (no `#[path]`, no macro
//! made modules), not Rust in general; it is a check, not a compiler.

// Indexing here reads the workspace's own sources, never packets; a slip
// fails the check loudly, which is what a check should do.
#![allow(clippy::indexing_slicing)]

mod paths;
mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

pub use tree::{Crate, Module};

/// One import: from a module to another, where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub line: usize,
}

/// A rule between layers, each a set of forbidden directions.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// No module under `from` imports a module under `to`.
    Forbidden { from: &'static str, to: &'static str, why: &'static str },
    /// The rooms under `parent` (`crate::pipeline` with `int05`, `int21`)
    /// never import each other; a room that does not exist is no room.
    Apart { parent: &'static str, rooms: &'static [&'static str], why: &'static str },
    /// The modules `shared` under `parent` never import one of `rooms`:
    /// what the rooms share lies below them.
    Below {
        parent: &'static str,
        shared: &'static [&'static str],
        rooms: &'static [&'static str],
        why: &'static str,
    },
}

/// One forbidden direction: no module under `from` imports one under `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    pub from: String,
    pub to: String,
    pub why: &'static str,
}

impl Rule {
    /// The rule as forbidden directions: `Apart` with 4 rooms is 12.
    pub fn forbidden(&self) -> Vec<Forbidden> {
        let under = |parent: &str, room: &str| format!("{parent}::{room}");
        match *self {
            Rule::Forbidden { from, to, why } => vec![Forbidden { from: from.into(), to: to.into(), why }],
            Rule::Apart { parent, rooms, why } => rooms
                .iter()
                .flat_map(|from| rooms.iter().filter(move |to| *to != from).map(move |to| (from, to)))
                .map(|(from, to)| Forbidden { from: under(parent, from), to: under(parent, to), why })
                .collect(),
            Rule::Below { parent, shared, rooms, why } => shared
                .iter()
                .flat_map(|from| rooms.iter().map(move |to| (from, to)))
                .map(|(from, to)| Forbidden { from: under(parent, from), to: under(parent, to), why })
                .collect(),
        }
    }
}

/// What the check found wrong in one crate.
#[derive(Debug, Default)]
pub struct Findings {
    /// Each cycle as its modules, and for each one the import that leads on.
    pub cycles: Vec<Vec<Edge>>,
    pub crossings: Vec<(Edge, &'static str)>,
}

impl Findings {
    pub fn is_clean(&self) -> bool {
        self.cycles.is_empty() && self.crossings.is_empty()
    }
}

/// The edges of one crate, by importing module, each target once (the first
/// place it is written).
pub fn edges(krate: &Crate) -> Vec<Edge> {
    let mut out = Vec::new();
    for module in &krate.modules {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let children = krate.children(&module.name);
        for written in paths::imports(&module.source, &children) {
            let Some(to) = krate.resolve(&module.name, &written.path) else { continue };
            if to == module.name || (written.reexport && tree::is_within(&to, &module.name)) {
                continue;
            }
            seen.entry(to).or_insert(written.line);
        }
        out.extend(seen.into_iter().map(|(to, line)| Edge { from: module.name.clone(), to, line }));
    }
    out
}

/// Cycles and layer crossings in one crate.
pub fn check(krate: &Crate, rules: &[Rule]) -> Findings {
    let edges = edges(krate);
    let forbidden: Vec<Forbidden> = rules.iter().flat_map(Rule::forbidden).collect();
    let crossings = edges
        .iter()
        .flat_map(|e| {
            forbidden
                .iter()
                .filter(|r| tree::is_within_or(&e.from, &r.from) && tree::is_within_or(&e.to, &r.to))
                .map(move |r| (e.clone(), r.why))
        })
        .collect();
    Findings { cycles: cycles(&edges), crossings }
}

/// How the rooms under one module (its direct children, a folder counted
/// as one) are tied by imports: the pairs tied either way, the pairs tied
/// both ways, and the imports from a module into one of its ancestors.
#[derive(Debug, Default)]
pub struct Ties {
    pub rooms: usize,
    pub pairs: BTreeSet<(String, String)>,
    pub both_ways: BTreeSet<(String, String)>,
    pub up: Vec<Edge>,
}

/// The [`Ties`] of the rooms under `parent` (`crate::collect`).
pub fn ties(krate: &Crate, parent: &str) -> Ties {
    let room = |module: &str| {
        let rest = module.strip_prefix(parent)?.strip_prefix("::")?;
        rest.split("::").next().map(str::to_string)
    };
    let rooms: BTreeSet<String> = krate.modules.iter().filter_map(|m| room(&m.name)).collect();
    let mut ties = Ties { rooms: rooms.len(), ..Ties::default() };
    let mut directed = BTreeSet::new();
    for edge in edges(krate) {
        if tree::is_within(&edge.from, &edge.to) && tree::is_within_or(&edge.to, parent) {
            ties.up.push(edge.clone());
        }
        let (Some(from), Some(to)) = (room(&edge.from), room(&edge.to)) else { continue };
        if from != to {
            directed.insert((from, to));
        }
    }
    for (from, to) in &directed {
        let pair = if from < to { (from.clone(), to.clone()) } else { (to.clone(), from.clone()) };
        if directed.contains(&(to.clone(), from.clone())) {
            ties.both_ways.insert(pair.clone());
        }
        ties.pairs.insert(pair);
    }
    ties
}

/// Every strongly connected set of two or more modules, each shown as one
/// cycle through it (the shortest way back, found breadth first).
fn cycles(edges: &[Edge]) -> Vec<Vec<Edge>> {
    let mut out = Vec::new();
    for component in paths::strongly_connected(edges) {
        if let Some(cycle) = paths::cycle_through(&component, edges) {
            out.push(cycle);
        }
    }
    out
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for cycle in &self.cycles {
            writeln!(f, "import cycle:")?;
            for e in cycle {
                writeln!(f, "  {} -> {} (line {})", e.from, e.to, e.line)?;
            }
        }
        for (e, why) in &self.crossings {
            writeln!(f, "{} imports {} (line {}): {why}", e.from, e.to, e.line)?;
        }
        Ok(())
    }
}

/// Reads a crate rooted at `root` (its `lib.rs` or `main.rs`).
pub fn read(root: &Path) -> std::io::Result<Crate> {
    tree::read(root)
}
