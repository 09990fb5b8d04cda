//! int-tools' errors are types that name the flag or the input and the
//! cause (docs/commands.md, "Errors"): no function of int-tools/src
//! returns `Result<_, String>`. The matcher is a line's text: `Result<`,
//! then anything but `>`, then `, String>` (nested generics such as
//! `Result<Vec<u8>, String>` are caught by the second form).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

/// Files with a `String` error left, each with why: none.
const ALLOWED: &[(&str, &str)] = &[];

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Whether `line` declares a `String` error.
fn string_error(line: &str) -> bool {
    let nested = line.contains(">, String>") && line.contains("Result<");
    let flat = line.split("Result<").skip(1).any(|rest| {
        let head: String = rest.chars().take_while(|&c| c != '>').collect();
        head.ends_with(", String")
    });
    (nested || flat) && !line.trim_start().starts_with("//")
}

#[test]
fn no_tool_returns_a_string_error() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if ALLOWED.iter().any(|(allowed, _)| *allowed == relative) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if string_error(line) {
                found.push(format!("int-tools/src/{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "String errors (give them an error type):\n{}", found.join("\n"));
}

#[test]
fn the_matcher_sees_both_forms() {
    assert!(string_error("pub fn run(args: &A) -> Result<(), String> {"));
    assert!(string_error("    pub frame: Result<Vec<u8>, String>,"));
    assert!(!string_error("fn f() -> Result<Map<String, Value>, Error> {"));
    assert!(!string_error("fn parse_url(url: &str) -> Result<(SocketAddr, String), UrlError> {"));
    assert!(!string_error("// Result<(), String> in a comment"));
}
