//! The stream, both ways: what receiving collectors publish to a NATS
//! JetStream stream (`collect --nats`, the exporter
//! `exporters::nats`) and aggregators read from it (`collect --from-nats`,
//! the receiver `receivers::nats`), for a fleet one collector cannot take
//! (docs/scale-out.md). Here what both directions share: the servers and
//! their settings, the connection, the stream's creation, and the batch
//! format ([`batch`]) in which the reports go as they came, so that an
//! aggregator reads them with the same code and books as a receiving
//! collector. `--nats-format json` publishes collect's JSON records
//! instead, one a message, for other consumers (`receivers::records`
//! reads them back). The client is async-nats: TLS, credentials, a
//! cluster's servers found and failed over to.

pub mod args;
pub mod batch;
pub mod checkpoint;
pub mod lease;
pub mod partition;

use std::time::Duration;

use async_nats::jetstream::{self, stream};

/// The record schema a JSON message carries (its `Int-Schema` header).
pub const SCHEMA: &str = "1";
/// How long the stream remembers a message id: a publish sent again
/// within it (no acknowledgement came) is stored once.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// A `--nats` or `--from-nats` server collect cannot use (the flag is
/// named by collect, which knows which it was).
#[derive(Debug, thiserror::Error)]
pub enum ServersError {
    #[error("{url:?}: {SERVERS_HINT}")]
    Form { url: String },
    #[error("{url:?}: {source}; {SERVERS_HINT}")]
    Address { url: String, source: std::io::Error },
}

const SERVERS_HINT: &str = "give it as nats://HOST:PORT, several comma-separated, e.g. nats://127.0.0.1:4222";

/// Why the publisher or the aggregator cannot start or go on: the
/// servers, the stream or the consumer named, and the cause.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("--nats-credentials {}: {source}", path.display())]
    Credentials { path: std::path::PathBuf, source: std::io::Error },
    #[error("{server}: {source}")]
    Connect { server: String, source: async_nats::ConnectError },
    /// The server would not make the stream; the way out where we know
    /// one.
    #[error("stream {stream}: {source}{}", creation_hint(&source.to_string(), *max_bytes))]
    Create { stream: String, max_bytes: u64, source: jetstream::context::CreateStreamError },
    #[error("stream {stream}: {source}")]
    Info { stream: String, source: jetstream::stream::InfoError },
    #[error("stream {stream} exists without the subjects {subjects}: {has:?}")]
    Subjects { stream: String, subjects: String, has: Vec<String> },
    #[error("consumer {name}: {source}")]
    Consumer { name: String, source: jetstream::stream::ConsumerError },
    #[error("a runtime for the stream: {source}")]
    Runtime { source: std::io::Error },
}

/// What the stream's messages carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Report datagrams as they came, many a message ([`batch`]).
    Batch,
    /// collect's JSON records, one a message (docs/output.md).
    Json,
}

/// Where the servers are and who we are to them.
#[derive(Debug, Clone)]
pub struct Servers {
    /// `nats://host:port` (or `tls://`), one or more of a cluster's.
    pub urls: Vec<String>,
    pub user: Option<(String, String)>,
    /// A credentials file (JWT and NKey seed, as `nsc` writes it).
    pub credentials: Option<std::path::PathBuf>,
    /// A CA's certificates to trust; a server must then speak TLS.
    pub ca: Option<std::path::PathBuf>,
}

impl Servers {
    /// `nats://[user:password@]host[:port]`, several comma-separated (a
    /// cluster's servers: any one is enough, the rest are found).
    pub fn parse(text: &str) -> Result<Servers, ServersError> {
        let mut servers = Servers { urls: Vec::new(), user: None, credentials: None, ca: None };
        for url in text.split(',').map(str::trim) {
            let form = || ServersError::Form { url: url.to_string() };
            let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| ["nats", "tls"].contains(s))
            else {
                return Err(form());
            };
            let host = match rest.rsplit_once('@') {
                Some((credentials, host)) => {
                    let (name, password) = credentials.split_once(':').unwrap_or((credentials, ""));
                    servers.user = Some((name.to_string(), password.to_string()));
                    host
                }
                None => rest,
            };
            let host = host.trim_end_matches('/');
            if host.is_empty() || host.contains('/') {
                return Err(form());
            }
            let url = format!("{scheme}://{host}");
            if let Err(source) = url.parse::<async_nats::ServerAddr>() {
                return Err(ServersError::Address { url, source });
            }
            servers.urls.push(url);
        }
        Ok(servers)
    }

    /// The first server's address, to say where we publish.
    pub fn first(&self) -> &str {
        self.urls.first().map_or("", String::as_str)
    }
}

/// The stream's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub servers: Servers,
    pub stream: String,
    /// Subjects start with this: `PREFIX.batch.KIND.NODE`,
    /// `PREFIX.p<k>.KIND.NODE` (partitioned) or `PREFIX.TYPE.NODE` (JSON).
    pub prefix: String,
    pub max_age: Duration,
    pub max_bytes: u64,
    /// Servers that keep each message (1, or 3 in a cluster of three).
    pub replicas: usize,
    /// Reports waiting for the publisher at most.
    pub buffer: usize,
    pub format: Format,
    /// Partitions by flow (`--nats-partitions`), or none: one subject a
    /// kind and node.
    pub partitions: Option<u16>,
}

/// A runtime for one thread: the publisher's or the aggregator's.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// A client connected to one of the servers, reconnecting to any of the
/// cluster's for ever after.
pub async fn connect(servers: &Servers, name: &str) -> Result<async_nats::Client, StreamError> {
    let mut options = async_nats::ConnectOptions::new().name(name).max_reconnects(None);
    if let Some((user, password)) = &servers.user {
        options = options.user_and_password(user.clone(), password.clone());
    }
    if let Some(path) = &servers.credentials {
        options = options
            .credentials_file(path)
            .await
            .map_err(|source| StreamError::Credentials { path: path.clone(), source })?;
    }
    if let Some(path) = &servers.ca {
        options = options.add_root_certificates(path.clone()).require_tls(true);
    }
    let addresses: Vec<async_nats::ServerAddr> =
        servers.urls.iter().filter_map(|url| url.parse().ok()).collect();
    let connected = options.connect(addresses).await;
    connected.map_err(|source| StreamError::Connect { server: servers.first().to_string(), source })
}

/// The stream, made if missing; an existing one must take our subjects.
pub async fn ensure_stream(
    js: &jetstream::Context,
    settings: &Settings,
) -> Result<stream::Stream, StreamError> {
    let subjects = format!("{}.>", settings.prefix);
    let config = stream::Config {
        name: settings.stream.clone(),
        subjects: vec![subjects.clone()],
        storage: stream::StorageType::File,
        max_age: settings.max_age,
        max_bytes: i64::try_from(settings.max_bytes).unwrap_or(i64::MAX),
        num_replicas: settings.replicas,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    };
    let name = || settings.stream.clone();
    let mut stream = js.get_or_create_stream(config).await.map_err(|source| StreamError::Create {
        stream: name(),
        max_bytes: settings.max_bytes,
        source,
    })?;
    let info = stream.info().await.map_err(|source| StreamError::Info { stream: name(), source })?;
    if !info.config.subjects.contains(&subjects) {
        return Err(StreamError::Subjects { stream: name(), subjects, has: info.config.subjects.clone() });
    }
    Ok(stream)
}

/// The way out of a refused creation, where we know one.
fn creation_hint(error: &str, max_bytes: u64) -> String {
    let mut said = String::new();
    // JetStream's "insufficient storage resources available": it takes
    // 75% of its disk's free space, and the stream asked for more.
    if error.contains("10047") || error.contains("insufficient storage") {
        said.push_str(&format!(
            "; the server has less room than the stream's --nats-max-bytes {max_bytes}: lower it, or give \
             the server's store more free disk (JetStream takes 75% of what is free when it starts)"
        ));
    }
    if error.contains("10039") || error.contains("not enabled") {
        said.push_str("; the server has no JetStream (start nats-server with -js)");
    }
    said
}
