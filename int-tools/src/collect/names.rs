//! What the operator calls each node: `collect --names FILE`, a YAML map of
//! node ids to names (and, per node, interface names). Every output shows
//! the name beside the id: records (`*_name` fields), the summary, the text
//! lines, Prometheus and InfluxDB labels, the plot.
//!
//! ```yaml
//! nodes:
//!   10.0.0.1: edge-a                  # a dotted quad, as INT switch ids often are
//!   167772165: {name: core-1, interfaces: {1: eth1, 2: eth2}}
//!   0xABCDEF: linux-router            # an IOAM node's 24-bit id
//! ```
//!
//! The names are read at start and again at each SIGHUP (a file that does
//! not read keeps the names before). collect hands one [`Naming`] to each
//! part that shows names (the books' records, stdout, InfluxDB, the
//! views); a reload swaps the table all of them read.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use serde::Deserialize;

use crate::records::{Hop, Record};

/// A node's names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNames {
    pub name: String,
    /// Interface (INT port) names, by port number.
    pub interfaces: BTreeMap<u32, String>,
}

/// Every named node, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub nodes: BTreeMap<u32, NodeNames>,
}

#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    #[error("--names {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("--names {path}: {source}")]
    Yaml { path: PathBuf, source: serde_yaml_ng::Error },
    #[error("--names {path}: {at}: {problem} (a node id is a number, 0x hex or a dotted quad; a name is text of 1 to 64 characters)")]
    Entry { path: PathBuf, at: String, problem: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNames {
    #[serde(default)]
    nodes: BTreeMap<String, RawNode>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawNode {
    Name(String),
    Full {
        name: String,
        #[serde(default)]
        interfaces: BTreeMap<u32, String>,
    },
}

impl Names {
    /// Reads a names file; every mistake is an error naming its entry.
    pub fn load(path: &Path) -> Result<Names, NamesError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| NamesError::Read { path: path.to_path_buf(), source })?;
        Names::parse(&text).map_err(|error| match error {
            ParseError::Yaml(source) => NamesError::Yaml { path: path.to_path_buf(), source },
            ParseError::Entry { at, problem } => NamesError::Entry { path: path.to_path_buf(), at, problem },
        })
    }

    fn parse(text: &str) -> Result<Names, ParseError> {
        let raw: RawNames = serde_yaml_ng::from_str(text).map_err(ParseError::Yaml)?;
        let mut names = Names::default();
        for (key, node) in raw.nodes {
            let at = format!("nodes.{key}");
            let id = parse_node_id(&key)
                .map_err(|problem| ParseError::Entry { at: at.clone(), problem: problem.to_string() })?;
            let node = match node {
                RawNode::Name(name) => NodeNames { name, interfaces: BTreeMap::new() },
                RawNode::Full { name, interfaces } => NodeNames { name, interfaces },
            };
            let texts = std::iter::once(&node.name).chain(node.interfaces.values());
            if let Some(bad) = texts.into_iter().find(|text| !(1..=64).contains(&text.chars().count())) {
                return Err(ParseError::Entry { at, problem: format!("{bad:?} is not a name") });
            }
            names.nodes.insert(id, node);
        }
        Ok(names)
    }
}

enum ParseError {
    Yaml(serde_yaml_ng::Error),
    Entry { at: String, problem: String },
}

impl Names {
    pub fn node(&self, id: u32) -> Option<&str> {
        self.nodes.get(&id).map(|node| node.name.as_str())
    }

    pub fn interface(&self, id: u32, port: u32) -> Option<&str> {
        self.nodes.get(&id)?.interfaces.get(&port).map(String::as_str)
    }

    /// The id of the node named `name` (ASCII case aside), if one is.
    pub fn named(&self, name: &str) -> Option<u32> {
        self.nodes.iter().find(|(_, node)| node.name.eq_ignore_ascii_case(name)).map(|(id, _)| *id)
    }

    /// What a label shows for node `id`: its name, or its id as a number.
    pub fn label(&self, id: u32) -> String {
        self.node(id).map_or_else(|| id.to_string(), str::to_string)
    }

    /// "edge-a (167772161)", or the id alone.
    pub fn describe(&self, id: u32) -> String {
        match self.node(id) {
            Some(name) => format!("{name} ({id})"),
            None => id.to_string(),
        }
    }

    /// Sets the name beside every node id of a record (and of its hops)
    /// this table names, and a list of labels beside every list of them;
    /// names a record came with stay where this table has none.
    pub fn annotate(&self, record: &mut Record) {
        if self.nodes.is_empty() {
            return;
        }
        match record {
            Record::Flow(r) => {
                self.name(&mut r.source_node_name, r.source_node);
                self.name(&mut r.sink_node_name, r.sink_node);
            }
            Record::DropSummary(r) => {
                self.name(&mut r.source_node_name, r.source_node);
                self.name(&mut r.sink_node_name, r.sink_node);
            }
            Record::Tr20(r) => {
                self.name(&mut r.source_node_name, r.source_node);
                self.name(&mut r.report_node_name, r.report_node);
                self.labels(&mut r.path_names, r.path.as_ref().map(|path| path.iter().copied().map(Some)));
                self.name_hops(r.hop_metadata.as_mut());
            }
            Record::Tr20Loss(r) => {
                self.name(&mut r.source_node_name, r.source_node);
                self.name(&mut r.report_node_name, r.report_node);
            }
            Record::PathChange(r) => {
                self.name(&mut r.report_node_name, r.report_node);
                self.labels(
                    &mut r.old_path_names,
                    r.old_path.as_ref().map(|path| path.iter().copied().map(Some)),
                );
                self.labels(
                    &mut r.new_path_names,
                    r.new_path.as_ref().map(|path| path.iter().copied().map(Some)),
                );
            }
            Record::Joined(r) => {
                self.labels(&mut r.path_names, r.path.as_ref().map(|path| path.iter().copied()));
                self.labels(&mut r.node_names, r.nodes.as_ref().map(|nodes| nodes.iter().copied()));
                self.name_hops(r.hop_metadata.as_mut());
            }
            Record::IfaIpfix(r) => {
                self.name(&mut r.source_node_name, r.source_node);
                self.name(&mut r.report_node_name, r.report_node);
                self.name_hops(r.hop_metadata.as_mut());
            }
            Record::Congestion(r) => self.name(&mut r.node_name, Some(r.node)),
            Record::Tr05(_) | Record::Malformed(_) => {}
        }
    }

    fn name(&self, name: &mut Option<String>, id: Option<u32>) {
        if let Some(found) = id.and_then(|id| self.node(id)) {
            *name = Some(found.to_string());
        }
    }

    fn labels(
        &self,
        names: &mut Option<Vec<Option<String>>>,
        ids: Option<impl Iterator<Item = Option<u32>>>,
    ) {
        if let Some(ids) = ids {
            *names = Some(ids.map(|id| id.map(|id| self.label(id))).collect());
        }
    }

    fn name_hops(&self, hops: Option<&mut Vec<Hop>>) {
        for hop in hops.into_iter().flatten() {
            self.name(&mut hop.node_id_name, hop.node_id);
        }
    }
}

/// The names every part of collect shows: a handle to one table, replaced
/// whole by a reload (SIGHUP), so that a reader sees the old table or the
/// new one, never a mix. A reader holds the lock only to clone the `Arc`
/// or copy one name out. Cloned, it is the same table. Without `--names`
/// there is no table, and records are left as they are.
#[derive(Debug, Clone, Default)]
pub struct Naming(Arc<RwLock<Option<Arc<Names>>>>);

impl Naming {
    /// A handle to `names`.
    pub fn new(names: Names) -> Naming {
        Naming(Arc::new(RwLock::new(Some(Arc::new(names)))))
    }

    fn read(&self) -> Option<Arc<Names>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The table now (an empty one without `--names`).
    pub fn table(&self) -> Arc<Names> {
        self.read().unwrap_or_default()
    }

    /// Makes `names` the table every clone of this handle reads.
    pub fn replace(&self, names: Names) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(names));
    }

    /// No table: records left as they are, as without `--names`.
    pub fn clear(&self) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Reads `path` again and, if it reads, makes it the table; returns how
    /// many nodes it names. On a mistake the names stay as they were.
    pub fn reload(&self, path: &Path) -> Result<usize, NamesError> {
        let names = Names::load(path)?;
        let count = names.nodes.len();
        self.replace(names);
        Ok(count)
    }

    /// How many nodes are named.
    pub fn count(&self) -> usize {
        self.read().map_or(0, |names| names.nodes.len())
    }

    /// Node `id`'s name, if it has one.
    pub fn node(&self, id: u32) -> Option<String> {
        self.read()?.node(id).map(str::to_string)
    }

    /// What a label shows for node `id`: its name, or its id as a number.
    pub fn label(&self, id: u32) -> String {
        self.node(id).unwrap_or_else(|| id.to_string())
    }

    /// The id of the node named `name` (ASCII case aside), if one is.
    pub fn named(&self, name: &str) -> Option<u32> {
        self.read()?.named(name)
    }

    /// "edge-a (167772161)", or the id alone.
    pub fn describe(&self, id: u32) -> String {
        match self.node(id) {
            Some(name) => format!("{name} ({id})"),
            None => id.to_string(),
        }
    }

    /// Each node's label in `path`, where the table names any node (none:
    /// no list).
    pub fn labels(&self, path: &[u32]) -> Option<Vec<Option<String>>> {
        let names = self.read().filter(|names| !names.nodes.is_empty())?;
        Some(path.iter().map(|id| Some(names.label(*id))).collect())
    }

    /// [`Names::annotate`] with the table now; none: the record as it is.
    pub fn annotate(&self, record: &mut Record) {
        if let Some(names) = self.read() {
            names.annotate(record);
        }
    }
}

/// A node id's dotted form, where the id reads as an IPv4 address (INT
/// switch ids often are one): not for ids in 0.0.0.0/8, which no host has
/// (IOAM's 24-bit ids: "0.171.205.239" would be a made-up address).
pub fn as_ipv4(id: u32) -> Option<Ipv4Addr> {
    (id >> 24 != 0).then(|| Ipv4Addr::from(id))
}

/// A flag's value, or a names file's key, that is no node id.
#[derive(Debug, thiserror::Error)]
#[error("{0:?}: a node id, as a dotted quad (10.0.0.1) or a number (decimal or 0x hex)")]
pub struct NodeIdError(pub String);

/// A node id as the node's config writes it (a dotted quad) or a number.
pub fn parse_node_id(text: &str) -> Result<u32, NodeIdError> {
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
    let number = match hex {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse::<u32>().ok(),
    };
    number
        .or_else(|| text.parse::<std::net::Ipv4Addr>().ok().map(u32::from))
        .ok_or_else(|| NodeIdError(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
nodes:
  10.0.0.1: edge-a
  167772165: {name: core-1, interfaces: {1: eth1, 2: eth2}}
  0xABCDEF: linux-router
";

    #[test]
    fn ids_in_every_form() {
        let names = Names::parse(FILE).ok().unwrap();
        let name = |id: u32| names.nodes.get(&id).map(|n| n.name.as_str());
        assert_eq!(name(0x0a00_0001), Some("edge-a"));
        assert_eq!(name(167_772_165), Some("core-1"));
        assert_eq!(name(0xab_cdef), Some("linux-router"));
        assert_eq!(names.nodes[&167_772_165].interfaces[&2], "eth2");
        assert_eq!((names.named("Core-1"), names.named("core-9")), (Some(167_772_165), None));
    }

    #[test]
    fn mistakes_name_their_entry() {
        for (text, at) in [
            ("nodes: {10.0.0.300: a}", "nodes.10.0.0.300"),
            ("nodes: {zz: a}", "nodes.zz"),
            ("nodes: {1: ''}", "nodes.1"),
        ] {
            match Names::parse(text) {
                Err(ParseError::Entry { at: found, .. }) => assert_eq!(found, at, "{text}"),
                _ => panic!("{text}: no entry error"),
            }
        }
        assert!(matches!(Names::parse("nodes: [1, 2]"), Err(ParseError::Yaml(_))));
        assert!(matches!(Names::parse("node: {1: a}"), Err(ParseError::Yaml(_))));
    }

    #[test]
    fn ioam_ids_are_no_addresses() {
        assert_eq!(as_ipv4(0x0a00_0001), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(as_ipv4(0xab_cdef), None);
        assert_eq!(as_ipv4(0), None);
    }

    /// Records carry names beside ids, paths a list of names; ids without
    /// a name keep their number.
    #[test]
    fn records_carry_names() {
        let names = Names::parse(FILE).ok().unwrap();
        let change = r#"{"type": "path-change", "report_node": 167772161,
                         "old_path": [167772161, 5], "new_path": [167772161, 167772165]}"#;
        let mut change = Record::PathChange(serde_json::from_str(change).unwrap());
        names.annotate(&mut change);
        let object = serde_json::to_value(&change).unwrap();
        assert_eq!(object["report_node_name"], "edge-a");
        assert_eq!(object["old_path_names"], serde_json::json!(["edge-a", "5"]));
        assert_eq!(object["new_path_names"], serde_json::json!(["edge-a", "core-1"]));
        let stack = r#"{"type": "tr20", "hop_metadata": [{"node_id": 11259375}]}"#;
        let mut stack = Record::Tr20(serde_json::from_str(stack).unwrap());
        names.annotate(&mut stack);
        let object = serde_json::to_value(&stack).unwrap();
        assert_eq!(object["hop_metadata"][0]["node_id_name"], "linux-router");
        assert_eq!(names.describe(167_772_165), "core-1 (167772165)");
        assert_eq!(names.describe(7), "7");
    }

    /// Every part holds a clone of one handle: a replace reaches them all
    /// at once; without `--names` a record is left as it is.
    #[test]
    fn clones_of_a_handle_see_one_table() {
        let none = Naming::default();
        let change = r#"{"type": "path-change", "old_path": [1, 2], "new_path": [167772161]}"#;
        let mut record = Record::PathChange(serde_json::from_str(change).unwrap());
        none.annotate(&mut record);
        let object = serde_json::to_value(&record).unwrap();
        assert!(object.get("old_path_names").is_none(), "no names, no path names: {object}");
        let names = Naming::new(Names::default());
        let view = names.clone();
        assert_eq!(view.label(167772161), "167772161");
        names.replace(Names::parse(FILE).ok().unwrap());
        assert_eq!(view.label(167772161), "edge-a");
        assert_eq!(view.describe(167772161), "edge-a (167772161)");
        assert_eq!((view.count(), view.named("EDGE-A")), (3, Some(167772161)));
        view.annotate(&mut record);
        let object = serde_json::to_value(&record).unwrap();
        assert_eq!(object["old_path_names"], serde_json::json!(["1", "2"]));
        assert_eq!(object["new_path_names"], serde_json::json!(["edge-a"]));
    }
}
