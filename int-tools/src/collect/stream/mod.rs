//! The stream: what receiving collectors publish to a NATS JetStream
//! stream (`collect --nats`) and aggregators read from it (`collect
//! --from-nats`), for a fleet one collector cannot take
//! (docs/scale-out.md). By default the reports go as they came, batched
//! ([`batch`]); an aggregator reads them with the same code and books as a
//! receiving collector. `--nats-format json` publishes collect's JSON
//! records instead, one a message, for other consumers ([`records`] reads
//! them back). The client is async-nats: TLS, credentials, a cluster's
//! servers found and failed over to.

pub mod batch;
pub mod consume;
pub mod publish;
pub mod records;

use std::time::Duration;

use async_nats::jetstream::{self, stream};

/// The record schema a JSON message carries (its `Int-Schema` header).
pub const SCHEMA: &str = "1";
/// How long the stream remembers a message id: a publish sent again
/// within it (no acknowledgement came) is stored once.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

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
    pub fn parse(text: &str) -> Result<Servers, String> {
        let hint = "give it as nats://HOST:PORT, several comma-separated, e.g. nats://127.0.0.1:4222";
        let mut servers = Servers { urls: Vec::new(), user: None, credentials: None, ca: None };
        for url in text.split(',').map(str::trim) {
            let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| ["nats", "tls"].contains(s))
            else {
                return Err(format!("{url:?}: {hint}"));
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
                return Err(format!("{url:?}: {hint}"));
            }
            let url = format!("{scheme}://{host}");
            url.parse::<async_nats::ServerAddr>().map_err(|e| format!("{url:?}: {e}; {hint}"))?;
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
    /// Subjects start with this: `PREFIX.batch.KIND.NODE` or
    /// `PREFIX.TYPE.NODE` (JSON).
    pub prefix: String,
    pub max_age: Duration,
    pub max_bytes: u64,
    /// Servers that keep each message (1, or 3 in a cluster of three).
    pub replicas: usize,
    /// Reports waiting for the publisher at most.
    pub buffer: usize,
    pub format: Format,
}

/// A runtime for one thread: the publisher's or the aggregator's.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// A client connected to one of the servers, reconnecting to any of the
/// cluster's for ever after.
pub async fn connect(servers: &Servers, name: &str) -> Result<async_nats::Client, String> {
    let mut options = async_nats::ConnectOptions::new().name(name).max_reconnects(None);
    if let Some((user, password)) = &servers.user {
        options = options.user_and_password(user.clone(), password.clone());
    }
    if let Some(path) = &servers.credentials {
        options = options
            .credentials_file(path)
            .await
            .map_err(|e| format!("--nats-credentials {}: {e}", path.display()))?;
    }
    if let Some(path) = &servers.ca {
        options = options.add_root_certificates(path.clone()).require_tls(true);
    }
    let addresses: Vec<async_nats::ServerAddr> =
        servers.urls.iter().filter_map(|url| url.parse().ok()).collect();
    options.connect(addresses).await.map_err(|e| format!("{}: {e}", servers.first()))
}

/// The stream, made if missing; an existing one must take our subjects.
pub async fn ensure_stream(js: &jetstream::Context, settings: &Settings) -> Result<stream::Stream, String> {
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
    let mut stream =
        js.get_or_create_stream(config).await.map_err(|e| creation_refused(&e.to_string(), settings))?;
    let info = stream.info().await.map_err(|e| e.to_string())?;
    if !info.config.subjects.contains(&subjects) {
        return Err(format!(
            "stream {} exists without the subjects {subjects}: {:?}",
            settings.stream, info.config.subjects
        ));
    }
    Ok(stream)
}

/// Why the server would not make the stream, with the way out where we
/// know one.
fn creation_refused(error: &str, settings: &Settings) -> String {
    let mut said = format!("stream {}: {error}", settings.stream);
    // JetStream's "insufficient storage resources available": it takes
    // 75% of its disk's free space, and the stream asked for more.
    if error.contains("10047") || error.contains("insufficient storage") {
        said.push_str(&format!(
            "; the server has less room than the stream's --nats-max-bytes {}: lower it, or give \
             the server's store more free disk (JetStream takes 75% of what is free when it starts)",
            settings.max_bytes
        ));
    }
    if error.contains("10039") || error.contains("not enabled") {
        said.push_str("; the server has no JetStream (start nats-server with -js)");
    }
    said
}
