//! `collect --http ADDR`: the live web view. A page (topology, nodes,
//! links, flows, events, congestion episodes and heatmap; plain HTML, JS and CSS built into the binary)
//! and the JSON behind it under `/api/...`.
//!
//! Two threads of its own, so the receivers pay for neither: a sampler
//! that copies what the page needs out of each socket's books (one brief
//! lock each, [`sample::Sample::take`]) into the view's board at every
//! `--view-sample-ms`, and an HTTP server (axum's router, served by
//! hyper on a current-thread tokio runtime) that answers from the board
//! alone, to the hosts of [`host`], within the limits of [`server`],
//! behind the token or users of [`auth`] where the flags give them, over
//! the TLS of [`tls`] where `--http-tls-cert` gives one. SIGHUP reads
//! their files again ([`Files::reload`]).

mod api;
pub mod args;
pub mod auth;
mod board;
mod congestion;
mod events;
mod flow_query;
pub mod host;
mod ranks;
mod sample;
pub mod server;
pub mod tls;
mod users;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::health::Health;
use crate::collect::names::Naming;
use crate::collect::shared::Shared;
pub use board::Board;
use flow_query::FlowQuery;
use host::Hosts;
use sample::Sample;
pub use server::{Counts, Limits};

/// What `--http` and its settings ask for.
#[derive(Debug, Clone)]
pub struct Settings {
    pub addr: SocketAddr,
    /// How often the books are sampled.
    pub sample: Duration,
    /// A node no report told of for this long is shown stale.
    pub stale_after: Duration,
    /// Names it answers to besides IP literals and localhost.
    pub hosts: Vec<String>,
    pub limits: Limits,
    /// The files SIGHUP reads again.
    pub files: Files,
}

/// The view's files: the credentials every page but the probes asks for
/// (`--http-token-file`, `--http-users-file`) and the TLS certificate and
/// key (`--http-tls-cert`, `--http-tls-key`), each read at start.
#[derive(Debug, Clone, Default)]
pub struct Files {
    pub access: Option<Arc<auth::Access>>,
    pub tls: Option<Arc<tls::Tls>>,
}

impl Files {
    /// Reads every file again (SIGHUP); each one that does not serve is
    /// kept as it was, with a warning. Connections open keep going.
    pub fn reload(&self) {
        if let Some(access) = &self.access {
            access.reload();
        }
        if let Some(tls) = &self.tls {
            tls.reload();
        }
    }
}

/// The board the sampler writes and the server reads.
pub type Shown = Arc<RwLock<Board>>;

/// The board the view starts with: a kept one (`--state`), going on from
/// its time, or an empty one.
pub fn board(settings: &Settings, kept: Option<Board>, names: Naming) -> Shown {
    let stale_ms = u64::try_from(settings.stale_after.as_millis()).unwrap_or(u64::MAX);
    let mut board = kept.unwrap_or_else(|| Board::new(stale_ms));
    board.stale_after_ms = stale_ms;
    board.names = names;
    Arc::new(RwLock::new(board))
}

/// Why the view cannot start, or its server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("--http {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    /// A socket option, a thread or the server's runtime (`what`) refused.
    #[error("--http: {what}: {source}")]
    Start { what: &'static str, source: std::io::Error },
}

/// Binds the address (a taken one fails now, at start) and starts the
/// sampler and the server on `shown` ([`board`]); both end when the
/// collector stops.
pub fn start(
    settings: Settings,
    shared: Arc<Shared>,
    counts: Arc<Counts>,
    health: Arc<Health>,
    shown: Shown,
) -> Result<Vec<std::thread::JoinHandle<()>>, ViewError> {
    let addr = settings.addr;
    let listener = TcpListener::bind(addr).map_err(|source| ViewError::Bind { addr, source })?;
    let refused = |what| move |source| ViewError::Start { what, source };
    let local = listener.local_addr().map_err(refused("the socket's address"))?;
    listener.set_nonblocking(true).map_err(refused("non-blocking accepts"))?;
    let sampler = {
        let (shown, shared) = (Arc::clone(&shown), Arc::clone(&shared));
        std::thread::Builder::new()
            .name("collect-view-sample".into())
            .spawn(move || sample_until_quit(&shared, &shown, settings.sample))
            .map_err(refused("the sampler's thread"))?
    };
    let files = settings.files;
    let hosts = Hosts::new(&settings.hosts);
    // The probes answer any host, with no credentials (a probe has neither).
    let app = routes(shown, hosts, Arc::clone(&counts), files.access.clone()).merge(health.routes());
    let (limits, tls) = (settings.limits, files.tls);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = std::thread::Builder::new()
        .name("collect-view-http".into())
        .spawn(move || {
            if let Err(error) = serve(listener, app, limits, counts, tls, &shared) {
                log::error!("collect: view: {error}");
            }
        })
        .map_err(refused("the server's thread"))?;
    log::info!("collect: view on {scheme}://{local}/");
    Ok(vec![sampler, server])
}

/// Samples the books into the board at every `every` until the collector
/// stops. The board is read while the books are copied (what is known
/// spares recomputing), written only to book the copy. Its time goes on
/// from the board's (a kept board's, after a restart).
fn sample_until_quit(shared: &Shared, shown: &RwLock<Board>, every: Duration) {
    let (started, mut turn) = (Instant::now(), 0);
    let origin_ms = shown.read().map_or(0, |board| board.now_ms);
    while !shared.quit.load(Ordering::Relaxed) {
        let sample = match shown.read() {
            Ok(board) => Sample::take(shared, &*board, &mut turn),
            Err(_) => return,
        };
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let now_ms = origin_ms.saturating_add(elapsed_ms);
        match shown.write() {
            Ok(mut board) => board.apply(sample, now_ms),
            Err(_) => return,
        }
        let next = Instant::now() + every;
        // Short naps: the collector's stop is seen within 50 ms.
        while Instant::now() < next && !shared.quit.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(every));
        }
    }
}

fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    counts: Arc<Counts>,
    tls: Option<Arc<tls::Tls>>,
    shared: &Shared,
) -> Result<(), ViewError> {
    let refused = |what| move |source| ViewError::Start { what, source };
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(refused("a runtime"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(refused("the listener"))?;
        let quit = async move {
            while !shared.quit.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        server::accept(listener, app, limits, counts, tls, quit).await;
        Ok(())
    })
}

/// The view's router over an empty board, as [`start`] builds it: what a
/// fuzz target drives.
pub fn unsampled(hosts: &[String], counts: Arc<Counts>) -> Router {
    routes(Arc::new(RwLock::new(Board::new(30_000))), Hosts::new(hosts), counts, None)
}

/// The page and its API, behind the host check and then the credentials'
/// (a request naming another host learns nothing of them: 421, not 401).
fn routes(shown: Shown, hosts: Hosts, counts: Arc<Counts>, access: Option<Arc<auth::Access>>) -> Router {
    let mut app = Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", include_str!("assets/index.html")) }))
        .route("/app.js", get(|| async { asset("text/javascript", include_str!("assets/app.js")) }))
        .route("/topology.js", get(|| async { asset("text/javascript", include_str!("assets/topology.js")) }))
        .route("/style.css", get(|| async { asset("text/css", include_str!("assets/style.css")) }))
        .route("/congestion.js", get(|| async { asset("text/javascript", include_str!("assets/congestion.js")) }))
        .route(
            "/api/overview",
            get(|State(s): State<Shown>| async move { answer(&s, |b| Some(api::overview(b))) }),
        )
        .route(
            "/api/topology",
            get(|State(s): State<Shown>| async move { answer(&s, |b| Some(api::topology(b))) }),
        )
        .route(
            "/api/nodes/{id}",
            get(
                |State(s): State<Shown>, Path(id): Path<u32>| async move { answer(&s, |b| api::node(b, id)) },
            ),
        )
        .route(
            "/api/links/{from}/{to}",
            get(|State(s): State<Shown>, Path((from, to)): Path<(u32, u32)>| async move {
                answer(&s, |b| api::link(b, from, to))
            }),
        )
        .route("/api/flows", get(flows))
        .route(
            "/api/flows/{id}",
            get(
                |State(s): State<Shown>, Path(id): Path<u64>| async move { answer(&s, |b| api::flow(b, id)) },
            ),
        )
        .route("/api/events", get(events))
        .route(
            "/api/events/{id}",
            get(|State(s): State<Shown>, Path(id): Path<u64>| async move {
                answer(&s, |b| api::event_of(b, id))
            }),
        )
        .route(
            "/api/events/{id}/flows",
            get(|State(s): State<Shown>, Path(id): Path<u64>, Query(q): Query<HashMap<String, String>>| async move {
                let (offset, limit) = (number(&q, "offset", 0), number(&q, "limit", 100));
                answer(&s, |b| api::event_flows(b, id, offset, limit))
            }),
        )
        .route(
            "/api/congestion",
            get(|State(s): State<Shown>, Query(q): Query<Params>| async move {
                let (span, limit) = (number(&q, "span_ms", 60_000), number(&q, "limit", 500));
                answer(&s, |b| Some(congestion::api::timeline(b, span as u64, limit)))
            }),
        )
        .route(
            "/api/congestion/heatmap",
            get(|State(s): State<Shown>, Query(q): Query<Params>| async move {
                let span = number(&q, "span_ms", 60_000) as u64;
                let end = q.get("end_ms").and_then(|v| v.parse().ok());
                answer(&s, |b| Some(congestion::api::heatmap(b, span, end)))
            }),
        )
        .route(
            "/api/congestion/episodes/{id}",
            get(|State(s): State<Shown>, Path(id): Path<u64>| async move {
                answer(&s, |b| congestion::api::episode(b, id))
            }),
        )
        // A fallback of its own, under the host check: merged with the
        // probes' routes, the default one would answer any host.
        .fallback(|| async { (StatusCode::NOT_FOUND, "not in the view") })
        .with_state(shown);
    if let Some(access) = access {
        app = app.layer(axum::middleware::from_fn_with_state((access, Arc::clone(&counts)), auth::check));
    }
    app.layer(axum::middleware::from_fn_with_state((Arc::new(hosts), counts), host::check))
}

/// The flows table's page; a query it cannot take is 400 with the
/// reason as JSON (`{"error": "limit: ..."}`).
async fn flows(State(shown): State<Shown>, query: Result<Query<Params>, QueryRejection>) -> Response {
    let names = shown.read().map(|board| board.names.clone()).unwrap_or_default();
    let parsed = match query {
        Ok(Query(params)) => FlowQuery::parse(&params, &names).map_err(|error| error.to_string()),
        Err(rejection) => Err(format!("query: {}", rejection.body_text())),
    };
    match parsed {
        Ok(query) => answer(&shown, |board| Some(api::flows(board, &query))),
        Err(error) => (StatusCode::BAD_REQUEST, Json(serde_json::json!({"error": error}))).into_response(),
    }
}

/// `/api/events?kind=K&node=N&limit=N`: 400 for a kind that is none.
async fn events(State(shown): State<Shown>, Query(query): Query<HashMap<String, String>>) -> Response {
    let (kind, node) = (query.get("kind").map(String::as_str), query.get("node").map(String::as_str));
    let names = shown.read().map(|board| board.names.clone()).unwrap_or_default();
    match api::filter(kind, node, &names) {
        Ok(filter) => {
            answer(&shown, |board| Some(api::events(board, filter, node, number(&query, "limit", 200))))
        }
        Err(problem) => (StatusCode::BAD_REQUEST, problem.to_string()).into_response(),
    }
}

/// A request's query parameters by name.
type Params = HashMap<String, String>;

/// A query's number, or `default` when absent or not a number.
fn number(query: &HashMap<String, String>, name: &str, default: usize) -> usize {
    query.get(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// The board's JSON for a page, or 404 for what the board does not hold.
fn answer(shown: &RwLock<Board>, build: impl FnOnce(&Board) -> Option<serde_json::Value>) -> Response {
    match shown.read().map(|board| build(&board)) {
        Ok(Some(value)) => Json(value).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "not in the view").into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the view's sampler failed").into_response(),
    }
}
