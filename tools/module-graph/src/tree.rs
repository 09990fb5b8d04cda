//! The module tree of a crate, from its `mod` declarations.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One module with its own file.
#[derive(Debug)]
pub struct Module {
    /// `crate::a::b`.
    pub name: String,
    pub file: PathBuf,
    pub source: String,
}

/// A crate's modules, parents before children.
#[derive(Debug, Default)]
pub struct Crate {
    pub modules: Vec<Module>,
}

impl Crate {
    /// Builds a crate from sources in memory: `(name, source)` pairs, the
    /// root named `crate`. For tests of the check itself.
    pub fn from_sources(sources: &[(&str, &str)]) -> Crate {
        let modules = sources
            .iter()
            .map(|(name, source)| Module {
                name: name.to_string(),
                file: PathBuf::new(),
                source: source.to_string(),
            })
            .collect();
        Crate { modules }
    }

    fn has(&self, name: &str) -> bool {
        self.modules.iter().any(|m| m.name == name)
    }

    /// The names of the modules directly under `parent` (`sink` for
    /// `crate::pipeline::int05::sink`).
    pub fn children(&self, parent: &str) -> Vec<&str> {
        self.modules
            .iter()
            .filter_map(|m| m.name.strip_prefix(parent)?.strip_prefix("::"))
            .filter(|child| !child.contains("::"))
            .collect()
    }

    /// The deepest module a path written in module `at` names, or `None`
    /// for a path that leaves the crate.
    pub fn resolve(&self, at: &str, path: &[String]) -> Option<String> {
        let (first, rest) = path.split_first()?;
        let mut name = match first.as_str() {
            "crate" => "crate".to_string(),
            "self" => at.to_string(),
            "super" => parent(at)?.to_string(),
            _ => return None,
        };
        let mut rest = rest;
        while let Some((segment, more)) = rest.split_first() {
            if segment == "super" {
                name = parent(&name)?.to_string();
            } else {
                let child = format!("{name}::{segment}");
                if !self.has(&child) {
                    break;
                }
                name = child;
            }
            rest = more;
        }
        Some(name)
    }
}

fn parent(name: &str) -> Option<&str> {
    name.rsplit_once("::").map(|(p, _)| p)
}

/// Whether module `inner` lies strictly under module `outer`.
pub fn is_within(inner: &str, outer: &str) -> bool {
    inner.len() > outer.len() && inner.starts_with(outer) && inner[outer.len()..].starts_with("::")
}

/// Whether module `inner` is `outer` or lies under it.
pub fn is_within_or(inner: &str, outer: &str) -> bool {
    inner == outer || is_within(inner, outer)
}

/// Reads the crate whose root file is `root`.
pub fn read(root: &Path) -> io::Result<Crate> {
    let mut krate = Crate::default();
    let mut pending = vec![("crate".to_string(), root.to_path_buf())];
    while let Some((name, file)) = pending.pop() {
        let source = fs::read_to_string(&file)?;
        let dir = children_dir(&file);
        for child in declared_children(&source) {
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let path = if flat.exists() { flat } else { nested };
            pending.push((format!("{name}::{child}"), path));
        }
        krate.modules.push(Module { name, file, source });
    }
    krate.modules.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(krate)
}

/// Where a module's children's files are: beside a `lib.rs`, `main.rs` or
/// `mod.rs`, else in the directory named as the file.
fn children_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") | None => dir,
        Some(stem) => dir.join(stem),
    }
}

/// The `mod name;` declarations of a file (not inline `mod name { }`).
fn declared_children(source: &str) -> Vec<String> {
    source
        .lines()
        .map(str::trim)
        .filter_map(|line| {
            let name = without_visibility(line).strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// `line` without its leading visibility: `pub`, `pub(crate)`,
/// `pub(super)`, `pub(in path)`; a module of any of them is read.
fn without_visibility(line: &str) -> &str {
    let Some(rest) = line.strip_prefix("pub") else { return line };
    let rest = match rest.strip_prefix('(') {
        Some(inside) => inside.split_once(')').map_or(rest, |(_, after)| after),
        None => rest,
    };
    rest.strip_prefix(' ').unwrap_or(line)
}
