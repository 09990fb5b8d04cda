//! The view's HTTP/1.1 connections: at most `--http-connections` at once
//! (one more is closed as soon as it is accepted), and each closed when
//! no whole request head arrives within `--http-idle-s` of its opening or
//! of the last response (a silent, slow or idle keep-alive client).
//! Every socket a client holds is a file descriptor the collector's
//! outputs need too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use crate::collect::outputs::metrics::{counter, counter_family};
use crate::collect::outputs::{counts_of, Counted};

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
    /// Connections closed because no whole request head came in time.
    pub timed_out: AtomicU64,
    /// Requests answered 421: their `Host` is none the view answers to.
    pub wrong_host: AtomicU64,
}

impl Counted for Counts {
    fn names(&self) -> (&'static str, &'static str) {
        ("view", "web view connections")
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        counts_of!(self, served, refused, timed_out, wrong_host)
    }

    fn metrics(&self, out: &mut String) {
        let outcomes = self.outcomes(&["served", "refused", "timed_out"]);
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
    }
}

/// Accepts connections until `quit` ends, each served on a task of this
/// runtime while there is room for it.
pub async fn accept(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: Limits,
    counts: Arc<Counts>,
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
        let (app, counts) = (app.clone(), Arc::clone(&counts));
        tokio::spawn(async move {
            serve_connection(stream, app, limits.idle, &counts).await;
            drop(permit);
        });
    }
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
