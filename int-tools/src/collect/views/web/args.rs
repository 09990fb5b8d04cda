//! The web view's flags, turned into its [`Settings`] here: the
//! credentials and TLS files read at start (a file that does not serve
//! stops collect before it receives anything).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::auth::{Access, AccessError};
use super::tls::{Tls, TlsError};
use super::{Files, Limits, Settings};
use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Web view")]
pub struct ViewArgs {
    /// Serve the live web view on this address and port: topology, nodes,
    /// links, flows and events (/), and the JSON behind it (/api/...).
    #[arg(long)]
    pub http: Option<SocketAddr>,
    /// A name the web view answers to (repeat for more), besides IP
    /// addresses and localhost: a request naming any other host gets 421
    /// (a page of another site reaching the view by DNS rebinding).
    #[arg(long = "http-host", value_name = "NAME")]
    pub http_hosts: Vec<String>,
    /// Web view connections served at once; one more is closed as soon
    /// as it is accepted.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub http_connections: u64,
    /// A web view connection is closed when no whole request head
    /// arrives within this many ms of its opening or its last response.
    /// The TLS handshake counts in this time too.
    #[arg(long, value_name = "MS", default_value = "10000", value_parser = duration::http_idle)]
    pub http_idle_ms: Duration,
    /// A file whose first line is the token the web view asks for: as
    /// `Authorization: Bearer TOKEN` or as the password of HTTP Basic
    /// authentication (any user; a browser prompts). /healthz and /readyz
    /// ask for none. SIGHUP reads it again. Over a network, with TLS.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_token_file: Option<PathBuf>,
    /// A file of users the web view admits with HTTP Basic authentication:
    /// `user:hash` lines, bcrypt hashes as `htpasswd -B FILE USER` writes
    /// them. With --http-token-file, either admits. SIGHUP reads it again.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_users_file: Option<PathBuf>,
    /// Serve the web view over HTTPS (TLS 1.3) with this certificate chain
    /// (PEM, the server's certificate first); needs --http-tls-key.
    /// SIGHUP reads both again (a renewed certificate).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_tls_cert: Option<PathBuf>,
    /// The private key (PEM: PKCS#8, RSA or EC) of --http-tls-cert.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_tls_key: Option<PathBuf>,
    /// How often the web view copies the books, in ms.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = duration::view_sample)]
    pub view_sample_ms: Duration,
    /// The web view shows a node stale when no report told of it for this
    /// many seconds.
    #[arg(long, value_name = "S", default_value = "30", value_parser = duration::view_stale)]
    pub view_stale_s: Duration,
}

/// A credentials or TLS file that does not serve.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error(transparent)]
    Tls(#[from] TlsError),
}

impl ViewArgs {
    /// The credentials and TLS files, read.
    pub fn files(&self) -> Result<Files, FilesError> {
        let access = Access::open(self.http_token_file.as_deref(), self.http_users_file.as_deref())?;
        let tls = Tls::open(self.http_tls_cert.as_deref(), self.http_tls_key.as_deref())?;
        Ok(Files { access: access.map(Arc::new), tls: tls.map(Arc::new) })
    }

    /// The view's settings with its `files`; none without `--http`.
    pub fn settings(&self, files: Files) -> Option<Settings> {
        let limits = Limits {
            connections: usize::try_from(self.http_connections).unwrap_or(usize::MAX),
            idle: self.http_idle_ms,
        };
        Some(Settings {
            addr: self.http?,
            sample: self.view_sample_ms,
            stale_after: self.view_stale_s,
            hosts: self.http_hosts.clone(),
            limits,
            files,
        })
    }
}
