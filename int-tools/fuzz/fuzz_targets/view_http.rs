//! The web view's HTTP handling on one connection, judged beyond "no
//! panic": a client's bytes (any requests, pipelined, written in cuts of
//! any size), then its close or its silence, served as collect serves a
//! connection (hyper, the view's Host check and router, its idle timeout
//! on a paused clock). The connection always ends; what comes back is
//! whole HTTP/1.x responses, each with a status docs/output.md lists; the
//! requests a parser frames are answered in order, one response each; a
//! Host the view does not answer to never gets a page (200, 404, 405) and
//! one it answers to never gets 421; every 421 is counted.
//!
//! The first byte says how the client writes: bit 0 closes its side after
//! the bytes (else it falls silent), the rest is the cut's size.
#![no_main]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use int_tools::collect::views::web::host::Hosts;
use int_tools::collect::views::web::server::{serve_connection, Counts};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NAMES: &[&str] = &["view.example"];
/// Every status docs/output.md says the view answers with.
const STATUSES: &[u16] = &[200, 400, 404, 405, 414, 421, 431, 505];
/// Those hyper answers before a request reaches the view (or the view's
/// own 400 for a malformed id).
const REFUSALS: &[u16] = &[400, 414, 431, 505];

fuzz_target!(|data: &[u8]| {
    let Some((&how, client)) = data.split_first() else { return };
    let counts = Arc::new(Counts::default());
    let answers = converse(client, usize::from(how >> 1).max(1), how & 1 == 1, &counts);
    let asked = framed(client);
    let statuses = responses(&answers, &asked);
    for (status, request) in statuses.iter().zip(&asked) {
        if !request.allowed {
            assert!(*status == 421 || REFUSALS.contains(status), "{status} for a refused host: {request:?}");
        } else {
            assert_ne!(*status, 421, "an allowed host refused: {request:?}");
        }
    }
    if !statuses.iter().any(|s| REFUSALS.contains(s)) {
        assert!(statuses.len() >= asked.len(), "{} answers to {} requests", statuses.len(), asked.len());
    }
    let refused = statuses.iter().filter(|s| **s == 421).count() as u64;
    assert_eq!(counts.wrong_host.load(Ordering::Relaxed), refused);
    assert!(counts.timed_out.load(Ordering::Relaxed) <= 1);
});

/// Serves one connection to a client that writes `client` in cuts of
/// `cut` bytes, then closes its side or falls silent; what it read back,
/// to the server's close.
fn converse(client: &[u8], cut: usize, close: bool, counts: &Arc<Counts>) -> Vec<u8> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let (near, far) = tokio::io::duplex(1 << 16);
        let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        let app = int_tools::collect::views::web::unsampled(&names, Arc::clone(counts));
        let counts = Arc::clone(counts);
        let server =
            tokio::spawn(async move { serve_connection(far, app, Duration::from_secs(10), &counts).await });
        let (mut read, mut write) = tokio::io::split(near);
        let bytes = client.to_vec();
        let writer = tokio::spawn(async move {
            for piece in bytes.chunks(cut) {
                if write.write_all(piece).await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
            if close {
                let _ = write.shutdown().await;
            }
        });
        let mut answers = Vec::new();
        let _ = read.read_to_end(&mut answers).await;
        server.await.unwrap();
        writer.await.unwrap();
        answers
    })
}

/// A request as the model reads it.
#[derive(Debug)]
struct Asked {
    head: bool,
    /// Whether the view answers to the host it names.
    allowed: bool,
}

/// The requests at the start of `bytes` whose answers the model can
/// tell: whole heads with no body, up to the one that ends the connection.
fn framed(mut bytes: &[u8]) -> Vec<Asked> {
    let hosts = Hosts::new(&NAMES.iter().map(|n| n.to_string()).collect::<Vec<_>>());
    let mut asked = Vec::new();
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut request = httparse::Request::new(&mut headers);
        let Ok(httparse::Status::Complete(len)) = request.parse(bytes) else { return asked };
        let headers = &*request.headers;
        let named = |name: &'static str| headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name));
        let framing = ["content-length", "transfer-encoding", "expect", "upgrade"];
        if framing.iter().any(|name| named(name).next().is_some()) {
            return asked;
        }
        let Ok(uri) = request.path.unwrap_or_default().parse::<http::Uri>() else { return asked };
        let host = named("host").next().and_then(|h| http::HeaderValue::from_bytes(h.value).ok());
        let authority = match uri.authority() {
            Some(authority) => Some(authority.as_str().to_string()),
            None => host.as_ref().and_then(|h| h.to_str().ok()).map(str::to_string),
        };
        asked.push(Asked {
            head: request.method == Some("HEAD"),
            allowed: authority.is_some_and(|a| hosts.allow(&a)),
        });
        let token = |word: &'static str| {
            named("connection").any(|h| {
                std::str::from_utf8(h.value)
                    .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(word)))
            })
        };
        let kept =
            if request.version == Some(1) { !token("close") } else { token("keep-alive") && !token("close") };
        if !kept {
            return asked;
        }
        bytes = &bytes[len..];
    }
}

/// The statuses of the whole responses `answers` holds, which must be
/// nothing else; a response to a request of `asked` that was HEAD has
/// no body.
fn responses(mut answers: &[u8], asked: &[Asked]) -> Vec<u16> {
    let mut statuses = Vec::new();
    while !answers.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        let parsed = response.parse(answers);
        let Ok(httparse::Status::Complete(len)) = parsed else {
            panic!("not a whole response: {parsed:?} in {:?}", String::from_utf8_lossy(answers))
        };
        let status = response.code.unwrap();
        assert!(STATUSES.contains(&status), "status {status}");
        let length = response.headers.iter().find(|h| h.name.eq_ignore_ascii_case("content-length"));
        let length = length.map(|h| std::str::from_utf8(h.value).unwrap().parse::<usize>().unwrap());
        // Beyond the model a HEAD is not known but by its missing body.
        let next =
            |at: usize| answers.get(at..).is_some_and(|rest| rest.is_empty() || rest.starts_with(b"HTTP/"));
        let head = match asked.get(statuses.len()) {
            Some(request) => request.head,
            None => length.is_none_or(|length| !next(len + length) && next(len)),
        };
        // Only an answer to HEAD may leave its length out.
        let body = if head { 0 } else { length.expect("a content-length") };
        assert!(answers.len() >= len + body, "a body cut short");
        answers = &answers[len + body..];
        statuses.push(status);
    }
    statuses
}
