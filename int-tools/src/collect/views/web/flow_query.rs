//! What `/api/flows` is asked (docs/output.md): a page of the flows
//! table (`offset`, `limit`, `sort`) and which flows it holds (`q` free
//! text over addresses, ports and protocol; `node` on the current path;
//! `path` a run of nodes on it). Parsed once per request, bounded (a
//! hostile query is an error that says which parameter, never a panic
//! or an unbounded walk), then matched against each flow.

use std::collections::HashMap;
use std::net::IpAddr;

use int_core::flow::FlowKey;

use crate::collect::names::{parse_node_id, Naming};

/// Rows of the flows table per page at most.
pub const MAX_LIMIT: usize = 1000;
/// The furthest page asked for: past every flow `--max-flows` allows.
pub const MAX_OFFSET: usize = 100_000_000;
/// Characters of `q`, `node` or `path` at most.
pub const MAX_TEXT: usize = 256;
/// Words of `q` and nodes of `path` at most.
pub const MAX_TERMS: usize = 16;

/// How the table is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Id,
    /// p99 where the flow has percentiles, else its max; then the mean.
    Latency,
    Loss,
    Change,
}

impl Sort {
    pub fn name(self) -> &'static str {
        match self {
            Sort::Id => "id",
            Sort::Latency => "latency",
            Sort::Loss => "loss",
            Sort::Change => "change",
        }
    }
}

/// One word of `q`: every word must match the flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// `10.0.3.7`, `fd00::1`: either address.
    Addr(IpAddr),
    /// `:443`, `443`: either port.
    Port(u16),
    /// `10.0.3.7:443`, `[fd00::1]:443`: one end, address and port.
    End(IpAddr, u16),
    /// `tcp`, `udp` or a protocol number (`proto:47` is `47`).
    Protocol(u8),
    /// Anything else: part of the flow's name (`10.0.3.`), any case.
    Text(String),
}

/// A parsed `/api/flows` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowQuery {
    pub sort: Sort,
    pub offset: usize,
    pub limit: usize,
    pub terms: Vec<Term>,
    /// `node=`: a node the current path crosses.
    pub node: Option<u32>,
    /// `path=`: nodes in a row on the current path.
    pub path: Vec<u32>,
}

/// A parameter the query cannot take, and why (answered 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{parameter}: {problem}")]
pub struct QueryError {
    pub parameter: &'static str,
    pub problem: String,
}

fn error(parameter: &'static str, problem: impl Into<String>) -> QueryError {
    QueryError { parameter, problem: problem.into() }
}

impl FlowQuery {
    /// The query's parameters; unknown ones are left alone (a page may
    /// add its own), known ones must be right.
    pub fn parse(params: &HashMap<String, String>, names: &Naming) -> Result<FlowQuery, QueryError> {
        let text = |name: &'static str| -> Result<&str, QueryError> {
            let value = params.get(name).map_or("", |v| v.trim());
            if value.chars().count() > MAX_TEXT {
                return Err(error(name, format!("longer than {MAX_TEXT} characters")));
            }
            Ok(value)
        };
        let sort = match text("sort")? {
            "" | "id" => Sort::Id,
            "latency" | "p99" => Sort::Latency,
            "loss" => Sort::Loss,
            "change" => Sort::Change,
            other => return Err(error("sort", format!("{other:?} is not id, latency, loss or change"))),
        };
        let offset = number(text("offset")?, "offset", 0, MAX_OFFSET)?;
        let limit = number(text("limit")?, "limit", 100, MAX_LIMIT)?;
        let terms = words(text("q")?, "q")?.into_iter().map(term).collect();
        let node = match text("node")? {
            "" => None,
            node => Some(node_id(node, "node", names)?),
        };
        let path = words(&text("path")?.replace(['>', ','], " "), "path")?
            .into_iter()
            .map(|node| node_id(node, "path", names))
            .collect::<Result<_, _>>()?;
        Ok(FlowQuery { sort, offset, limit, terms, node, path })
    }

    /// Whether the query asks for some flows only.
    pub fn filters(&self) -> bool {
        !self.terms.is_empty() || self.node.is_some() || !self.path.is_empty()
    }

    /// Whether the flow `key`, on `path` now, is one the query asks for.
    pub fn matches(&self, key: &FlowKey, path: Option<&[u32]>) -> bool {
        let path = path.unwrap_or_default();
        self.node.is_none_or(|node| path.contains(&node))
            && (self.path.is_empty() || path.windows(self.path.len()).any(|run| run == self.path))
            && self.terms.iter().all(|term| term.matches(key))
    }
}

impl Term {
    fn matches(&self, key: &FlowKey) -> bool {
        match self {
            Term::Addr(addr) => key.src == *addr || key.dst == *addr,
            Term::Port(port) => key.src_port == *port || key.dst_port == *port,
            Term::End(addr, port) => {
                (key.src == *addr && key.src_port == *port) || (key.dst == *addr && key.dst_port == *port)
            }
            Term::Protocol(protocol) => key.protocol == *protocol,
            // The flow's name as the page shows it (`udp 10.0.0.1:1 ->
            // ...`), written only for a word no other reading took.
            Term::Text(text) => key.to_string().to_ascii_lowercase().contains(text.as_str()),
        }
    }
}

/// `text` as a number up to `most`, or `default` when empty.
fn number(text: &str, parameter: &'static str, default: usize, most: usize) -> Result<usize, QueryError> {
    if text.is_empty() {
        return Ok(default);
    }
    let value: usize = text.parse().map_err(|_| error(parameter, format!("{text:?} is not a number")))?;
    if value > most {
        return Err(error(parameter, format!("{value} is more than {most}")));
    }
    Ok(value)
}

fn words<'a>(text: &'a str, parameter: &'static str) -> Result<Vec<&'a str>, QueryError> {
    let words: Vec<&str> = text.split_whitespace().take(MAX_TERMS + 1).collect();
    if words.len() > MAX_TERMS {
        return Err(error(parameter, format!("more than {MAX_TERMS} words")));
    }
    Ok(words)
}

/// What one word of `q` asks for: the most exact reading it has.
fn term(word: &str) -> Term {
    let lower = word.to_ascii_lowercase();
    let bare = lower.trim_start_matches("proto:");
    match bare {
        "tcp" => return Term::Protocol(6),
        "udp" => return Term::Protocol(17),
        "icmp" => return Term::Protocol(1),
        _ => {}
    }
    if let (true, Ok(protocol)) = (bare.len() != lower.len(), bare.parse::<u8>()) {
        return Term::Protocol(protocol);
    }
    if let Ok(addr) = lower.parse::<IpAddr>() {
        return Term::Addr(addr);
    }
    if let Ok(end) = lower.parse::<std::net::SocketAddr>() {
        return Term::End(end.ip(), end.port());
    }
    if let Ok(port) = lower.strip_prefix(':').unwrap_or(&lower).parse::<u16>() {
        return Term::Port(port);
    }
    Term::Text(lower)
}

/// A node by name (`--names`), else by id (a number, 0x hex or a dotted
/// quad).
fn node_id(text: &str, parameter: &'static str, names: &Naming) -> Result<u32, QueryError> {
    let table = names.table();
    if let Some((id, _)) = table.nodes.iter().find(|(_, node)| node.name == text) {
        return Ok(*id);
    }
    parse_node_id(text).map_err(|_| error(parameter, format!("{text:?} is no node's name or id")))
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn parse(query: &[(&str, &str)]) -> Result<FlowQuery, QueryError> {
        FlowQuery::parse(
            &query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            &Naming::default(),
        )
    }

    fn flow(src: [u8; 4], src_port: u16, dst: [u8; 4], dst_port: u16) -> FlowKey {
        FlowKey::v4(Ipv4Addr::from(src), Ipv4Addr::from(dst), 6, src_port, dst_port)
    }

    /// Which of `flows` (each on `path`) the query keeps, by index.
    fn kept(query: &[(&str, &str)], flows: &[(FlowKey, Vec<u32>)]) -> Vec<usize> {
        let query = parse(query).unwrap();
        (0..flows.len()).filter(|i| query.matches(&flows[*i].0, Some(&flows[*i].1))).collect()
    }

    #[test]
    fn defaults_and_bounds() {
        let query = parse(&[]).unwrap();
        assert_eq!((query.sort, query.offset, query.limit, query.filters()), (Sort::Id, 0, 100, false));
        let query = parse(&[("sort", "p99"), ("offset", "200"), ("limit", "1000")]).unwrap();
        assert_eq!((query.sort, query.offset, query.limit), (Sort::Latency, 200, 1000));
        let refused = |query: &[(&str, &str)]| parse(query).unwrap_err().parameter;
        assert_eq!(refused(&[("offset", "99999999999999999999999")]), "offset");
        assert_eq!(refused(&[("offset", "100000001")]), "offset");
        assert_eq!(refused(&[("offset", "-1")]), "offset");
        assert_eq!(refused(&[("limit", "1001")]), "limit");
        assert_eq!(refused(&[("limit", "ten")]), "limit");
        assert_eq!(refused(&[("sort", "name")]), "sort");
        assert_eq!(refused(&[("q", &"a".repeat(MAX_TEXT + 1))]), "q");
        assert_eq!(refused(&[("q", &"a ".repeat(MAX_TERMS + 1))]), "q");
        assert_eq!(refused(&[("path", &"1>".repeat(MAX_TERMS + 1))]), "path");
        assert_eq!(refused(&[("node", "no-such-node")]), "node");
        assert_eq!(refused(&[("path", "1>no-such-node")]), "path");
        let error = parse(&[("limit", "ten")]).unwrap_err().to_string();
        assert_eq!(error, "limit: \"ten\" is not a number");
    }

    #[test]
    fn words_read_as_what_they_look_like() {
        let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
        let terms =
            parse(&[("q", "10.0.3.7 :443 10.0.3.7:443 [fd00::1]:80 fd00::1 UDP proto:47 8080 10.0.3.")])
                .unwrap()
                .terms;
        let v6: IpAddr = "fd00::1".parse().unwrap();
        assert_eq!(
            terms,
            [
                Term::Addr(v4(10, 0, 3, 7)),
                Term::Port(443),
                Term::End(v4(10, 0, 3, 7), 443),
                Term::End(v6, 80),
                Term::Addr(v6),
                Term::Protocol(17),
                Term::Protocol(47),
                Term::Port(8080),
                Term::Text("10.0.3.".into()),
            ]
        );
    }

    #[test]
    fn a_flow_matches_every_word_node_and_path() {
        let flows = [
            (flow([10, 0, 3, 7], 443, [10, 0, 0, 2], 5000), vec![1, 2, 3, 9]),
            (flow([10, 0, 3, 70], 5000, [10, 0, 3, 7], 443), vec![1, 4, 3, 9]),
            (flow([10, 0, 4, 1], 4430, [10, 0, 0, 2], 80), vec![2, 3, 9]),
        ];
        assert_eq!(kept(&[("q", "10.0.3.7")], &flows), [0, 1]);
        assert_eq!(kept(&[("q", ":443")], &flows), [0, 1]);
        assert_eq!(kept(&[("q", "10.0.3.7:443")], &flows), [0, 1]);
        assert_eq!(kept(&[("q", "10.0.3.70:443")], &flows), Vec::<usize>::new());
        assert_eq!(kept(&[("q", "10.0.3.")], &flows), [0, 1]);
        assert_eq!(kept(&[("q", "10.0.3.7 :5000")], &flows), [0, 1]);
        assert_eq!(kept(&[("q", "tcp :80")], &flows), [2]);
        assert_eq!(kept(&[("q", "udp")], &flows), Vec::<usize>::new());
        assert_eq!(kept(&[("node", "2")], &flows), [0, 2]);
        assert_eq!(kept(&[("node", "0.0.0.4")], &flows), [1]);
        assert_eq!(kept(&[("path", "2>3")], &flows), [0, 2]);
        assert_eq!(kept(&[("path", "1 > 3")], &flows), Vec::<usize>::new());
        assert_eq!(kept(&[("path", "3,9"), ("node", "1"), ("q", ":443")], &flows), [0, 1]);
        let query = parse(&[("node", "1")]).unwrap();
        assert!(!query.matches(&flows[0].0, None), "a flow on no path crosses no node");
    }
}
