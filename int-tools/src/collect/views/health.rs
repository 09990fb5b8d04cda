//! `/healthz` and `/readyz`, on the web view (`--http`) and the metrics
//! server (`--metrics`), for a service manager or an orchestrator's
//! probes. Health: the process answers, so its loop runs (the servers stop
//! with it). Readiness: the receivers are bound (they are, before any
//! server starts) and, with `--from-nats`, the stream's consumer is
//! attached; until then 503 and what is missing. Neither asks for a
//! token nor a known host: a probe has neither.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use int_os::http::{Page, Status};

/// Whether a reader is ready, asked at each probe.
pub type Ready = Box<dyn Fn() -> bool + Send + Sync>;

/// What readiness waits for.
#[derive(Default)]
pub struct Health {
    /// The aggregator's consumer (`--from-nats`): attached, or not yet.
    consumer: Option<Ready>,
}

impl Health {
    pub fn new(consumer: Option<Ready>) -> Health {
        Health { consumer }
    }

    /// "ready", or what is not.
    pub fn ready(&self) -> Result<&'static str, &'static str> {
        match &self.consumer {
            Some(attached) if !attached() => {
                Err("not ready: the stream's consumer is not attached yet (--from-nats)")
            }
            _ => Ok("ready"),
        }
    }

    /// The probe at `path` (its query ignored), or `None` for another page.
    pub fn page(&self, path: &str) -> Option<Page> {
        let probe = path.split('?').next().unwrap_or_default();
        let (status, text) = match probe {
            "/healthz" => (Status::Ok, "ok"),
            "/readyz" => match self.ready() {
                Ok(text) => (Status::Ok, text),
                Err(text) => (Status::Unavailable, text),
            },
            _ => return None,
        };
        Some(Page { status, content_type: "text/plain; charset=utf-8", body: format!("{text}\n") })
    }

    /// The probes as routes of the web view.
    pub fn routes(self: Arc<Self>) -> Router {
        Router::new().route("/healthz", get(|| async { "ok\n" })).route(
            "/readyz",
            get(move || async move {
                match self.ready() {
                    Ok(text) => (StatusCode::OK, format!("{text}\n")).into_response(),
                    Err(text) => (StatusCode::SERVICE_UNAVAILABLE, format!("{text}\n")).into_response(),
                }
            }),
        )
    }
}
