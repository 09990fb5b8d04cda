//! The view's HTTP/1.1 connections, over TLS with `--http-tls-cert`: at
//! most `--http-connections` at once (one more is closed as soon as it is
//! accepted), and each closed when its TLS handshake is not done, or no
//! whole request head arrives, within `--http-idle-ms` of its opening or
//! of the last response (a silent, slow or idle keep-alive client). Every
//! socket a client holds is a file descriptor the collector's outputs
//! need too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::collect::counts::{counter, counter_family, counts_of, Counted};

use super::tls::Tls;

/// How many connections, and for how long each waits for a request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// How long a connection waits for a whole request head.
    pub idle: Duration,
}

/// What became of the view's connections and requests.
#[derive(Debug, Default)]
pub struct Counts {
    /// Connections accepted and served.
    pub served: AtomicU64,
    /// Connections closed at once: `--http-connections` were open.
    pub refused: AtomicU64,
    /// Connections closed because no TLS handshake or no whole request
    /// head came in time.
    pub timed_out: AtomicU64,
    /// Connections to the TLS port whose handshake failed (plain HTTP,
    /// or a client that does not trust the certificate).
    pub handshake_failed: AtomicU64,
    /// Requests answered 421: their `Host` is none the view answers to.
    pub wrong_host: AtomicU64,
    /// Requests answered 401: no credentials the view admits.
    pub unauthorized: AtomicU64,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("view", "web view connections")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, served, refused, timed_out, handshake_failed, wrong_host, unauthorized)
    }

    fn metrics(&self, out: &mut String) {
        let outcomes = self.outcomes(&["served", "refused", "timed_out", "handshake_failed"]);
        counter_family(
            out,
            "int_collect_view_connections_total",
            "Web view connections by outcome.",
            outcomes,
        );
        let wrong = self.wrong_host.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_view_wrong_host_total",
            "Web view requests refused for their Host (421).",
            wrong,
        );
        let unauthorized = self.unauthorized.load(Ordering::Relaxed);
        counter(
            out,
            "int_collect_view_unauthorized_total",
            "Web view requests refused for their credentials (401).",
            unauthorized,
        );
    }
}

/// Accepts connections until `quit` ends, each served on a task of this
/// runtime while there is room for it.
pub async fn accept(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: Limits,
    counts: Arc<Counts>,
    tls: Option<Arc<Tls>>,
    quit: impl std::future::Future<Output = ()>,
) {
    let room = Arc::new(Semaphore::new(limits.connections));
    let mut quit = std::pin::pin!(quit);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut quit => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors (or a connection reset before it was
            // taken): the pending ones wait in the backlog a moment.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&room).try_acquire_owned() else {
            counts.refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        counts.served.fetch_add(1, Ordering::Relaxed);
        let (app, counts, tls) = (app.clone(), Arc::clone(&counts), tls.clone());
        tokio::spawn(async move {
            match tls {
                Some(tls) => serve_tls(stream, &tls, app, limits.idle, &counts).await,
                None => serve_connection(stream, app, limits.idle, &counts).await,
            }
            drop(permit);
        });
    }
}

/// Serves one TLS connection: its handshake (or a plain HTTP request's
/// answer) within `idle`, the same as a request head, then its requests.
async fn serve_tls(stream: TcpStream, tls: &Tls, app: Router, idle: Duration, counts: &Counts) {
    let Some(acceptor) = tls.acceptor() else { return };
    let handshake = async {
        let mut first = [0u8; 1];
        // A TLS record of a handshake starts with 22; an HTTP request
        // with its method's letter.
        let peeked = stream.peek(&mut first).await?;
        let [byte] = first;
        if peeked == 1 && byte.is_ascii_alphabetic() {
            return answer_plain_http(stream).await.map(|()| None);
        }
        acceptor.accept(stream).await.map(Some)
    };
    match tokio::time::timeout(idle, handshake).await {
        Ok(Ok(Some(stream))) => serve_connection(stream, app, idle, counts).await,
        Ok(Ok(None) | Err(_)) => {
            counts.handshake_failed.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            counts.timed_out.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A plain HTTP request on the TLS port: 400 and what to type instead
/// (what a browser shows for `http://`), after its head is read (closed
/// unread, the kernel's reset could reach the client before the answer).
async fn answer_plain_http(mut stream: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while head.len() < 16 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(chunk.get(..read).unwrap_or_default());
    }
    let body = "collect's view speaks HTTPS on this port (--http-tls-cert): use https://\n";
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(answer.as_bytes()).await?;
    stream.shutdown().await
}

/// Serves one connection's requests until the client closes it, it
/// breaks, or no whole request head comes within `idle`.
pub async fn serve_connection<Io>(io: Io, app: Router, idle: Duration, counts: &Counts)
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle);
    let served = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app)).await;
    if served.is_err_and(|error| error.is_timeout()) {
        counts.timed_out.fetch_add(1, Ordering::Relaxed);
    }
}
