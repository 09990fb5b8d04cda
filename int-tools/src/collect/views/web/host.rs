//! Which names the view answers to. A page on another site can read the
//! view through DNS rebinding: its own name, made to resolve to the
//! view's address, so that the browser sends that name as `Host`. Such a
//! request names a host the operator never gave, and is refused; an IP
//! literal or `localhost` cannot be a rebound name (the browser resolves
//! no DNS name for them), and neither can the names of `--http-host`.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::server::Counts;

/// The names (`--http-host`) the view answers to besides IP literals and
/// `localhost`: lowercase, without a trailing dot.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    names: Vec<String>,
}

impl Hosts {
    pub fn new(names: &[String]) -> Self {
        Hosts { names: names.iter().map(|name| normal(name).to_string()).collect() }
    }

    /// Whether a request's authority (its `Host`, `name[:port]`) is one
    /// the view answers to. The port is not looked at: a tunnel or a port
    /// mapping shows the view under another port, and a rebound name is
    /// refused by its name alone.
    pub fn allow(&self, authority: &str) -> bool {
        match host_of(authority) {
            Some((ip, true)) => ip.parse::<Ipv6Addr>().is_ok(),
            Some((host, false)) => {
                let name = normal(host);
                name.parse::<Ipv4Addr>().is_ok() || name == "localhost" || self.names.contains(&name)
            }
            None => false,
        }
    }
}

/// The host part of `host[:port]` and whether it was bracketed (`[v6]`);
/// None when the authority is malformed or its port is not a number.
fn host_of(authority: &str) -> Option<(&str, bool)> {
    let (host, port, bracketed) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (ip, after) = rest.split_once(']')?;
            let port = if after.is_empty() { None } else { Some(after.strip_prefix(':')?) };
            (ip, port, true)
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port), false),
            None => (authority, None, false),
        },
    };
    let port_ok = port.is_none_or(|p| p.is_empty() || p.parse::<u16>().is_ok());
    (port_ok && !host.is_empty()).then_some((host, bracketed))
}

/// A name as compared: lowercase, no trailing dot.
fn normal(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The authority a request names: its URI's (absolute form, which takes
/// precedence over `Host`, RFC 9112 section 3.2.2), else its `Host`.
pub fn authority(request: &Request) -> Option<&str> {
    match request.uri().authority() {
        Some(authority) => Some(authority.as_str()),
        None => request.headers().get(header::HOST).and_then(|value| value.to_str().ok()),
    }
}

/// The view's guard: a request naming a host the view does not answer to
/// gets 421 and a body that says what to do.
pub async fn check(
    State((hosts, counts)): State<(Arc<Hosts>, Arc<Counts>)>,
    request: Request,
    next: Next,
) -> Response {
    if authority(&request).is_some_and(|authority| hosts.allow(authority)) {
        return next.run(request).await;
    }
    counts.wrong_host.fetch_add(1, Ordering::Relaxed);
    let body = "collect's view answers to IP addresses, localhost and the names given with \
                --http-host; this request's Host is none of them (see docs/output.md)\n";
    (StatusCode::MISDIRECTED_REQUEST, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_localhost_and_given_names_pass_any_port() {
        let hosts = Hosts::new(&["View.Example.".to_string()]);
        for ok in [
            "127.0.0.1",
            "127.0.0.1:8080",
            "10.1.2.3:9",
            "[::1]",
            "[::1]:8080",
            "[fe80::1]:1",
            "localhost",
            "LOCALHOST:3000",
            "localhost.",
            "view.example",
            "view.example:80",
            "VIEW.EXAMPLE.:8080",
        ] {
            assert!(hosts.allow(ok), "{ok}");
        }
    }

    #[test]
    fn other_names_and_malformed_authorities_are_refused() {
        let hosts = Hosts::new(&["view.example".to_string()]);
        for refused in [
            "",
            ":80",
            "evil.example",
            "evil.example:8080",
            "view.example.evil",
            "sub.view.example",
            "localhost.evil",
            "127.0.0.1.nip.io",
            "127.0.0.1:http",
            "127.0.0.1:99999",
            "[::1",
            "[evil]:80",
            "::1",
            "[::1]x:80",
        ] {
            assert!(!hosts.allow(refused), "{refused}");
        }
    }
}
