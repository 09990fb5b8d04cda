//! The module paths a file writes, and the graph algorithms over them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::Edge;

/// One path a file writes: its segments, its line, and whether it is a
/// re-export (`pub use`, `pub(crate) use`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: Vec<String>,
    pub line: usize,
    pub reexport: bool,
}

/// Every `crate::`, `super::` and `self::` path of a file, and every path
/// that starts with one of the module's `children` (read as `self::...`:
/// `use int05::Int05;` in a parent), with its line, `use` groups expanded;
/// comments and inline test modules left out.
pub fn imports(source: &str, children: &[&str]) -> Vec<Written> {
    let code = without_tests(&without_comments(source));
    let mut out = Vec::new();
    let mut in_use = BTreeSet::new();
    for statement in statements(&code) {
        in_use.extend(statement.first..=statement.last);
        let (line, reexport) = (statement.first, statement.reexport);
        out.extend(expand(&statement.text).into_iter().map(|path| Written { path, line, reexport }));
    }
    let mut starts: Vec<String> = ["crate", "super", "self"].iter().map(|s| format!("{s}::")).collect();
    starts.extend(children.iter().map(|c| format!("{c}::")));
    for (index, line) in code.lines().enumerate() {
        if in_use.contains(&(index + 1)) {
            continue;
        }
        let found = inline_paths(line, &starts).into_iter();
        out.extend(found.map(|path| Written { path, line: index + 1, reexport: false }));
    }
    for written in &mut out {
        if written.path.first().is_some_and(|s| children.contains(&s.as_str())) {
            written.path.insert(0, "self".to_string());
        }
    }
    out.retain(|w| w.path.first().is_some_and(|s| matches!(s.as_str(), "crate" | "super" | "self")));
    out
}

fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        let code = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The file up to an inline `#[cfg(test)] mod name {`: such a module
/// imports its own file (`use super::*`), which is no edge.
fn without_tests(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    for (i, pair) in lines.windows(2).enumerate() {
        let opens_module = pair[1].trim_start().starts_with("mod ") && pair[1].trim_end().ends_with('{');
        if pair[0].trim() == "#[cfg(test)]" && opens_module {
            return lines[..i].join("\n");
        }
    }
    code.to_string()
}

/// One `use` statement, whole: its lines (first and last, from 1), its
/// text after `use`, and whether it re-exports (`pub use`, `pub(crate) use`).
struct Statement {
    first: usize,
    last: usize,
    text: String,
    reexport: bool,
}

/// `use` statements, whole (they may span lines).
fn statements(code: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut current: Option<Statement> = None;
    for (index, line) in code.lines().enumerate() {
        let trimmed = line.trim_start();
        let reexport = trimmed.strip_prefix("pub use ").or_else(|| trimmed.strip_prefix("pub(crate) use "));
        let body = reexport.map(|b| (b, true)).or_else(|| trimmed.strip_prefix("use ").map(|b| (b, false)));
        match (&mut current, body) {
            (Some(statement), _) => statement.text.push_str(trimmed),
            (None, Some((body, reexport))) => {
                current = Some(Statement { first: index + 1, last: 0, text: body.to_string(), reexport });
            }
            (None, None) => continue,
        }
        if let Some(statement) = &mut current {
            statement.last = index + 1;
            if statement.text.contains(';') {
                out.extend(current.take());
            }
        }
    }
    out
}

/// A `use` tree as its paths: `a::{b, c::{d, self}}` is `a::b`, `a::c::d`
/// and `a::c`.
fn expand(statement: &str) -> Vec<Vec<String>> {
    let text: String = statement.chars().filter(|c| !c.is_whitespace()).collect();
    let text = text.trim_end_matches(';');
    let mut out = Vec::new();
    expand_into(&[], text, &mut out);
    out
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.split(" as ").next().unwrap_or(tree);
    let Some(open) = tree.find('{') else {
        let mut path = prefix.to_vec();
        for segment in tree.split("::").filter(|s| !s.is_empty() && *s != "*") {
            let segment = segment.split("as").next().unwrap_or(segment);
            if segment != "self" || path.is_empty() {
                path.push(segment.to_string());
            }
        }
        out.push(path);
        return;
    };
    let mut path = prefix.to_vec();
    path.extend(tree[..open].split("::").filter(|s| !s.is_empty()).map(str::to_string));
    let inner = tree[open + 1..].strip_suffix('}').unwrap_or(&tree[open + 1..]);
    for part in split_top(inner) {
        expand_into(&path, part, out);
    }
}

/// Splits at commas outside braces.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Paths such as `crate::frame::copy_small` written in code, each
/// beginning with one of `starts` (`crate::`, `sink::`).
fn inline_paths(line: &str, starts: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    for start in starts.iter().map(String::as_str) {
        let mut from = 0;
        while let Some(at) = line[from..].find(start).map(|i| i + from) {
            from = at + start.len();
            let boundary = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':');
            if !boundary {
                continue;
            }
            let end = line[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(line.len(), |i| i + at);
            out.push(line[at..end].split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
        }
    }
    out
}

/// Tarjan's strongly connected components of two or more modules.
pub fn strongly_connected(edges: &[Edge]) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in edges {
        graph.entry(&e.from).or_default().push(&e.to);
        graph.entry(&e.to).or_default();
    }
    let mut state = Tarjan {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            state.visit(node);
        }
    }
    state.components
}

struct Tarjan<'a> {
    graph: &'a BTreeMap<&'a str, Vec<&'a str>>,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    components: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, node: &'a str) {
        let n = self.index.len();
        self.index.insert(node, n);
        self.low.insert(node, n);
        self.stack.push(node);
        self.on_stack.insert(node);
        let next = self.graph.get(node).cloned().unwrap_or_default();
        for to in next {
            if !self.index.contains_key(to) {
                self.visit(to);
                let low = self.low[to].min(self.low[node]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(to) {
                let low = self.index[to].min(self.low[node]);
                self.low.insert(node, low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.components.push(component);
            }
        }
    }
}

/// The shortest cycle from the component's first module back to itself.
pub fn cycle_through(component: &[String], edges: &[Edge]) -> Option<Vec<Edge>> {
    let start = component.first()?;
    let inside = |e: &&Edge| component.contains(&e.from) && component.contains(&e.to);
    let edges: Vec<&Edge> = edges.iter().filter(inside).collect();
    let mut came_by: BTreeMap<&str, &Edge> = BTreeMap::new();
    let mut queue = VecDeque::from([start.as_str()]);
    while let Some(node) = queue.pop_front() {
        for e in edges.iter().filter(|e| e.from == node) {
            if e.to == *start {
                let mut cycle = vec![(*e).clone()];
                let mut at = node;
                while at != start {
                    let back = came_by.get(at)?;
                    cycle.push((*back).clone());
                    at = &back.from;
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !came_by.contains_key(e.to.as_str()) && e.to != *start {
                came_by.insert(&e.to, e);
                queue.push_back(&e.to);
            }
        }
    }
    None
}
