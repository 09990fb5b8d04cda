//! Docs that cannot drift: every code name the docs cite in backticks is
//! declared in the workspace's sources, or the test fails naming the doc's
//! file and line. A renamed function or type fails here until the docs
//! follow.
//!
//! The matcher, kept simple on purpose (it reads text, not Rust):
//! - a citation is a backticked path of two or more identifiers joined by
//!   `::`, an optional `()` after it (`SinkCore::track`,
//!   `int_core::wire::Ipv6Header`, `collect::CollectError`); anything else
//!   in backticks (code with spaces, generics, braces) is not read;
//! - its last two names say what it cites: `Type::function` (upper, then
//!   lower case) is a `fn function` inside an `impl ... Type` block (an
//!   inherent impl or a trait's impl for it) or inside `trait Type`;
//!   `module::Type` (lower, then upper) is a `struct`, `enum`, `trait`,
//!   `type` or `union` named `Type` in a file of that module (its file
//!   `module.rs`, or any file under a folder `module/`, or the crate root
//!   where the module is the crate: `int_core`); `module::name` (both
//!   lower case) is a `fn name` in a file of that module, or a module
//!   `name` inside it (`int05::sink::classify`, `int_core::reference`);
//!   `Type::Variant` (both upper case) is not read;
//! - names that are not ours are left out by their first name (another
//!   crate's path: [`NOT_OURS`]) or, for a bare type, by [`ALLOWED`], each
//!   with its reason.
//!
//! Tried on deliberately wrong names: a line appended to
//! docs/workspace.md citing `FlowTable::entry`, `collect::NoSuchError` and
//! `int05::sink::no_such_step` failed with
//! "docs/workspace.md:41: `FlowTable::entry`: no fn entry in an impl of
//! FlowTable or in trait FlowTable", "docs/workspace.md:41:
//! `collect::NoSuchError`: no struct, enum, trait or type NoSuchError in
//! module collect" and "docs/workspace.md:41: `int05::sink::no_such_step`:
//! no fn or module no_such_step in module sink"; the line removed, it
//! passed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 6] = ["dpdk-sys", "int-core", "int-os", "int-node", "int-tools", "int-lab"];

/// Paths whose first name is another crate's: its own docs are the
/// reference for them.
const NOT_OURS: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "serde",
    "serde_json",
    "serde_yaml_ng",
    "async_nats",
    "axum",
    "zerocopy",
    "etherparse",
    "clap",
    "plotters",
    "libc",
    "pcap_file",
    "proptest",
    "criterion",
    "log",
    "simplelog",
    "thiserror",
    "strum",
    "bitflags",
    "ringbuf",
    "futures_util",
    "smoltcp",
    "capsule",
];

/// Bare `Type::function` or `module::Type` citations of code that is not
/// ours, each with why it is named in our docs.
/// None today: the docs name other crates' code by its crate's path.
const ALLOWED: &[(&str, &str)] = &[];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path, ext: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.map(|e| e.unwrap().path()) {
        if path.is_dir() && !path.ends_with("target") && !path.ends_with("fuzz") {
            files(&path, ext, found);
        } else if path.extension().is_some_and(|e| e == ext) {
            found.push(path);
        }
    }
}

/// A line's first name after `keyword ` (visibility and qualifiers read
/// past): `pub(crate) struct Thing<T> {` with "struct" -> Thing.
fn declared(line: &str, keywords: &[&str]) -> Option<(String, String)> {
    let mut rest = line.trim_start();
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "unsafe ", "async "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let keyword = keywords.iter().find(|k| rest.starts_with(&format!("{k} ")))?;
    let name: String =
        rest[keyword.len() + 1..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then(|| (keyword.to_string(), name))
}

/// The type an `impl` line is for: `impl<T> Trait for Type<T> {` -> Type.
fn impl_type(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("impl")?;
    let rest = if rest.starts_with('<') { &rest[rest.find('>')? + 1..] } else { rest };
    let rest = rest.split(" for ").last()?.trim();
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

/// What the sources declare.
#[derive(Default)]
struct Declared {
    /// Each type's functions, from its impl and trait blocks.
    functions: BTreeMap<String, BTreeSet<String>>,
    /// Each module's types, by the module names a file is in.
    types: BTreeMap<String, BTreeSet<String>>,
    /// Each module's functions and the modules inside it.
    items: BTreeMap<String, BTreeSet<String>>,
}

impl Declared {
    /// Reads one source file of module path `modules`.
    fn read(&mut self, source: &str, modules: &[String]) {
        for (at, outer) in modules.iter().enumerate() {
            self.items.entry(outer.clone()).or_default().extend(modules.iter().skip(at + 1).cloned());
        }
        let mut current: Option<(String, i32)> = None;
        let mut depth = 0i32;
        for line in source.lines() {
            let found = declared(line, &["struct", "enum", "trait", "type", "union", "fn"]);
            if let Some((keyword, name)) = found {
                let map = if keyword == "fn" { &mut self.items } else { &mut self.types };
                for module in modules {
                    map.entry(module.clone()).or_default().insert(name.clone());
                }
            }
            if current.is_none() {
                let block = impl_type(line).or_else(|| declared(line, &["trait"]).map(|(_, name)| name));
                if let Some(name) = block.filter(|_| line.trim_end().ends_with('{')) {
                    current = Some((name, depth));
                }
            } else if let Some((name, _)) = &current {
                if let Some((_, function)) = declared(line, &["fn"]) {
                    self.functions.entry(name.clone()).or_default().insert(function);
                }
            }
            depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if current.as_ref().is_some_and(|(_, at)| depth <= *at) {
                current = None;
            }
        }
    }

    /// Why `path` is not what the code declares; `None` where it is.
    fn missing(&self, path: &[&str]) -> Option<String> {
        let [.., first, last] = path else { return None };
        let upper = |name: &str| name.chars().next().is_some_and(char::is_uppercase);
        let has = |map: &BTreeMap<String, BTreeSet<String>>, key: &str, name: &str| {
            map.get(key).is_some_and(|names| names.contains(name))
        };
        match (upper(first), upper(last)) {
            (true, false) => (!has(&self.functions, first, last))
                .then(|| format!("no fn {last} in an impl of {first} or in trait {first}")),
            (false, true) => (!has(&self.types, first, last))
                .then(|| format!("no struct, enum, trait or type {last} in module {first}")),
            (false, false) => {
                (!has(&self.items, first, last)).then(|| format!("no fn or module {last} in module {first}"))
            }
            (true, true) => None,
        }
    }
}

/// The module names a source file is in: its crate (`int_core`), its
/// folders below `src`, and its own name unless it is `mod.rs`, `lib.rs`
/// or `main.rs`.
fn modules_of(krate: &str, src: &Path, file: &Path) -> Vec<String> {
    let mut modules = vec![krate.replace('-', "_")];
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    for part in relative.iter().map(|p| p.to_string_lossy().into_owned()) {
        if !["mod", "lib", "main"].contains(&part.as_str()) {
            modules.push(part);
        }
    }
    modules
}

/// The code paths cited in backticks on one line of a doc.
fn citations(line: &str) -> Vec<String> {
    let identifier = |name: &str| {
        name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(|quoted| quoted.trim_end_matches("()"))
        .filter(|quoted| quoted.contains("::") && quoted.split("::").all(identifier))
        .map(str::to_string)
        .collect()
}

fn docs() -> Vec<PathBuf> {
    let root = workspace();
    let mut found = vec![root.join("README.md"), root.join("config/README.md"), root.join("bench/README.md")];
    files(&root.join("docs"), "md", &mut found);
    found
}

fn declared_in_workspace() -> Declared {
    let mut declared = Declared::default();
    for krate in CRATES {
        let src = workspace().join(krate).join("src");
        let mut sources = Vec::new();
        files(&src, "rs", &mut sources);
        for file in sources {
            declared.read(&std::fs::read_to_string(&file).unwrap(), &modules_of(krate, &src, &file));
        }
    }
    declared
}

#[test]
fn every_code_name_the_docs_cite_exists() {
    let declared = declared_in_workspace();
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap_or_default();
        let name = doc.strip_prefix(workspace()).unwrap().display().to_string();
        for (number, line) in text.lines().enumerate() {
            for cited in citations(line) {
                let path: Vec<&str> = cited.split("::").collect();
                let theirs =
                    NOT_OURS.contains(&path[0]) || ALLOWED.iter().any(|(allowed, _)| *allowed == cited);
                if theirs {
                    continue;
                }
                checked += 1;
                if let Some(why) = declared.missing(&path) {
                    missing.push(format!("{name}:{}: `{cited}`: {why}", number + 1));
                }
            }
        }
    }
    assert!(checked >= 20, "the docs cite {checked} code names: is the reader right?");
    assert!(missing.is_empty(), "the docs cite code the workspace does not declare:\n{}", missing.join("\n"));
}

/// The reader itself: an impl's functions, a trait's, nested braces,
/// types by module.
#[test]
fn the_reader_finds_functions_and_types() {
    let mut found = Declared::default();
    let modules = ["int_core".to_string(), "wire".to_string()];
    found.read(
        "impl<T> Thing<T> {\n    pub fn one(&self) {\n        if x { y }\n    }\n    fn two() {}\n}\nfn three() {}\nimpl Display for Other {\n    fn fmt(&self) {}\n}\npub trait Output: Send {\n    fn offer(&self);\n}\npub(crate) struct Header<T> {\n}\n",
        &modules,
    );
    assert_eq!(found.functions["Thing"], BTreeSet::from(["one".to_string(), "two".to_string()]));
    assert_eq!(found.functions["Other"], BTreeSet::from(["fmt".to_string()]));
    assert_eq!(found.functions["Output"], BTreeSet::from(["offer".to_string()]));
    assert_eq!(found.missing(&["wire", "Header"]), None);
    assert_eq!(found.missing(&["int_core", "wire", "Header"]), None);
    assert!(found.missing(&["wire", "Trailer"]).is_some());
    assert!(found.missing(&["Thing", "three"]).is_some());
    assert_eq!(found.missing(&["wire", "three"]), None);
    assert_eq!(found.missing(&["int_core", "wire"]), None);
    assert!(found.missing(&["wire", "four"]).is_some());
    assert_eq!(
        citations("see `Thing::one` and `Other::fmt()`, `a::B`, not `a b::c` or `Vec<u8>::new`"),
        ["Thing::one", "Other::fmt", "a::B"]
    );
    assert_eq!(
        modules_of("int-tools", Path::new("src"), Path::new("src/collect/stream/mod.rs")),
        ["int_tools", "collect", "stream"]
    );
}
