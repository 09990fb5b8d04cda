//! Docs that cannot drift: every `Type::function` the docs cite is a
//! function of that type somewhere in the workspace's code (an `impl` of
//! the type, or of a trait for it, that defines it). A renamed function
//! fails here until the docs follow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 6] = ["dpdk-sys", "int-core", "int-os", "int-node", "int-tools", "int-lab"];

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

/// The type an `impl` line is for: `impl<T> Trait for Type<T> {` -> Type.
fn impl_type(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("impl")?;
    let rest = if rest.starts_with('<') { &rest[rest.find('>')? + 1..] } else { rest };
    let rest = rest.split(" for ").last()?.trim();
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

/// Every type's functions, from its impl blocks (by brace depth).
fn functions(source: &str, found: &mut BTreeMap<String, BTreeSet<String>>) {
    let mut current: Option<(String, i32)> = None;
    let mut depth = 0i32;
    for line in source.lines() {
        if current.is_none() {
            if let Some(name) = impl_type(line).filter(|_| line.trim_end().ends_with('{')) {
                current = Some((name, depth));
            }
        } else if let Some((name, _)) = &current {
            let trimmed = line.trim_start();
            let signature = trimmed.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
            let signature = signature.trim_start_matches("const ").trim_start_matches("unsafe ");
            if let Some(rest) = signature.strip_prefix("fn ") {
                let function: String =
                    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                found.entry(name.clone()).or_default().insert(function);
            }
        }
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if current.as_ref().is_some_and(|(_, at)| depth <= *at) {
            current = None;
        }
    }
}

/// `Type::function` in backticks, in a doc's text.
fn citations(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        let quoted = quoted.trim_end_matches("()");
        let Some((ty, function)) = quoted.split_once("::") else { continue };
        let is_type = ty.chars().next().is_some_and(char::is_uppercase)
            && ty.chars().all(|c| c.is_alphanumeric() || c == '_');
        let is_function = function.chars().next().is_some_and(|c| c.is_lowercase())
            && function.chars().all(|c| c.is_lowercase() || c.is_ascii_digit() || c == '_');
        if is_type && is_function {
            found.push((ty.to_string(), function.to_string()));
        }
    }
    found
}

fn docs() -> Vec<PathBuf> {
    let root = workspace();
    let mut found = vec![root.join("README.md"), root.join("config/README.md"), root.join("bench/README.md")];
    files(&root.join("docs"), "md", &mut found);
    found
}

#[test]
fn every_function_the_docs_cite_exists() {
    let mut known = BTreeMap::new();
    for krate in CRATES {
        let mut sources = Vec::new();
        files(&workspace().join(krate).join("src"), "rs", &mut sources);
        for file in sources {
            functions(&std::fs::read_to_string(file).unwrap(), &mut known);
        }
    }
    let mut missing = Vec::new();
    let mut cited = 0;
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap_or_default();
        for (ty, function) in citations(&text) {
            cited += 1;
            if !known.get(&ty).is_some_and(|functions| functions.contains(&function)) {
                missing.push(format!(
                    "{}: `{ty}::{function}`",
                    doc.strip_prefix(workspace()).unwrap().display()
                ));
            }
        }
    }
    assert!(cited >= 20, "the docs cite {cited} functions: is the reader right?");
    assert!(missing.is_empty(), "the docs cite functions the code does not have:\n{}", missing.join("\n"));
}

/// The reader itself: an impl's functions, a trait impl's, nested braces.
#[test]
fn the_reader_finds_an_impl_s_functions() {
    let mut found = BTreeMap::new();
    functions(
        "impl<T> Thing<T> {\n    pub fn one(&self) {\n        if x { y }\n    }\n    fn two() {}\n}\nfn three() {}\nimpl Display for Other {\n    fn fmt(&self) {}\n}\n",
        &mut found,
    );
    assert_eq!(found["Thing"], BTreeSet::from(["one".to_string(), "two".to_string()]));
    assert_eq!(found["Other"], BTreeSet::from(["fmt".to_string()]));
    assert_eq!(
        citations("see `Thing::one` and `Other::fmt()`, not `a::b`"),
        [("Thing".to_string(), "one".to_string()), ("Other".to_string(), "fmt".to_string())]
    );
}
