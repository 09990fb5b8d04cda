//! The stream's flags, both directions': what `--nats` publishes to and
//! `--from-nats` reads from share the servers' settings and the stream's
//! names, turned here into one [`Settings`] per direction.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::partition::Owned;
use super::{Format, Servers, ServersError, Settings};
use crate::collect::values::{duration, ChoiceError};

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "NATS JetStream")]
pub struct NatsArgs {
    /// Publish every report to this NATS server's JetStream
    /// (nats://[USER:PASSWORD@]HOST:PORT; a cluster's servers
    /// comma-separated, tls:// for TLS), into --nats-stream, for an
    /// aggregating collect (--from-nats) over many collectors.
    #[arg(long)]
    pub nats: Option<String>,
    /// What the stream carries: batch (the report datagrams as they came,
    /// many a message: what an aggregator reads at full rate) or json
    /// (collect's JSON records, one a message, for other consumers;
    /// docs/output.md).
    #[arg(long, default_value = "batch", value_parser = parse_nats_format)]
    pub nats_format: Format,
    /// Servers that keep each of the stream's messages when collect
    /// creates it: 3 in a cluster of three survives a server's loss.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=5))]
    pub nats_replicas: u16,
    /// A NATS credentials file (a user's JWT and NKey seed, as nsc writes
    /// it).
    #[arg(long)]
    pub nats_credentials: Option<PathBuf>,
    /// A CA certificate file (PEM) the NATS servers' TLS certificates are
    /// checked against; TLS is then required.
    #[arg(long)]
    pub nats_ca: Option<PathBuf>,
    /// The JetStream stream: created if missing, with subjects
    /// PREFIX.TYPE.NODE (--nats-prefix), kept --nats-max-age-s seconds and
    /// at most --nats-max-bytes.
    #[arg(long, default_value = "INT")]
    pub nats_stream: String,
    /// Read the records of --nats-stream on this NATS server instead of
    /// reports off UDP: an aggregator over the collectors that publish
    /// there (docs/scale-out.md).
    #[arg(long)]
    pub from_nats: Option<String>,
    /// The durable consumer --from-nats reads with: aggregators with one
    /// name share the records, each name reads them all.
    #[arg(long, default_value = "collect")]
    pub nats_consumer: String,
    /// The subjects' first word.
    #[arg(long, default_value = "int")]
    pub nats_prefix: String,
    /// Seconds the stream keeps a record (0: until --nats-max-bytes).
    #[arg(long, value_name = "S", default_value = "86400", value_parser = duration::stream_max_age)]
    pub nats_max_age_s: Duration,
    /// Bytes the stream keeps at most (the oldest go first).
    #[arg(long, default_value_t = 1 << 30)]
    pub nats_max_bytes: u64,
    /// Partitions of the stream by flow (1 to 256): receiving collectors
    /// publish each report under PREFIX.p<k>.KIND.NODE, k its flow's hash
    /// modulo P, so that one aggregator gets all of a flow and every
    /// postcard of a packet; aggregators (--partitions) must be given the
    /// same P. Choose it once per stream (docs/scale-out.md): 16 for up to
    /// some 8 aggregators, 64 beyond.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub nats_partitions: Option<u16>,
    /// The partitions this aggregator (--from-nats, with
    /// --nats-partitions) may own: auto (a fair share of all, leased
    /// against the other aggregators) or a list like 0-7,12 (leased too).
    #[arg(long, value_name = "auto|LIST")]
    pub partitions: Option<Owned>,
    /// Seconds a partition's lease holds without renewal (renewed every
    /// third of it): an aggregator that dies loses its partitions to the
    /// others after this.
    #[arg(long, value_name = "S", default_value = "3", value_parser = duration::lease)]
    pub nats_lease_s: Duration,
    /// Seconds between the view states an aggregator over partitions
    /// (--partitions) publishes to PREFIX-view.ID for --fleet-view, and
    /// once at a graceful stop; 0: none.
    #[arg(long, value_name = "S", default_value = "2", value_parser = duration::view_state)]
    pub nats_view_s: Duration,
    /// Seconds between the checkpoints of an aggregator's partitions
    /// (--partitions): each owned partition's books, while they changed,
    /// to the bucket CONSUMER-books, and once more when it is given up; an
    /// aggregator that takes a partition reads its checkpoint first; 0:
    /// none.
    #[arg(long, value_name = "S", default_value = "2", value_parser = duration::checkpoint)]
    pub nats_checkpoint_s: Duration,
    /// Book no reports: merge the view states the aggregators over
    /// partitions publish on --from-nats into one fleet view (summary,
    /// metrics, web view); an aggregator silent for three of its intervals
    /// is dropped (docs/scale-out.md).
    #[arg(long)]
    pub fleet_view: bool,
    /// Reports (or JSON records) waiting for the NATS server at most;
    /// beyond, new ones are dropped and counted (a slow or absent server
    /// never stalls the collector).
    #[arg(long, default_value_t = 200_000)]
    pub nats_buffer: usize,
}

/// Why the stream's flags give no stream.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{flag} {source}")]
    Servers { flag: &'static str, source: ServersError },
    #[error("--nats-stream, --nats-prefix, --nats-consumer: letters, digits, _ and - only")]
    Names,
    #[error("--nats-partitions with --nats-format json: partitions carry the batch format only (drop one)")]
    PartitionedJson,
    #[error("--partitions without --nats-partitions: give the stream's number of partitions too")]
    OwnedWithoutCount,
    #[error("--fleet-view without --from-nats: give the servers the aggregators publish their states to")]
    FleetWithoutServers,
    #[error("--fleet-view with --partitions: the fleet view reads the aggregators' states, no partition (drop one)")]
    FleetWithPartitions,
    #[error("--partitions lists {0}, beyond --nats-partitions {1}")]
    OwnedBeyond(u8, u16),
}

impl NatsArgs {
    /// The stream `--nats` publishes to; none without it.
    pub fn publish(&self) -> Result<Option<Settings>, SettingsError> {
        self.nats.as_deref().map(|url| self.settings("--nats", url)).transpose()
    }

    /// The stream `--from-nats` reads; none without it.
    pub fn consume(&self) -> Result<Option<Settings>, SettingsError> {
        if self.fleet_view && self.from_nats.is_none() {
            return Err(SettingsError::FleetWithoutServers);
        }
        self.from_nats.as_deref().map(|url| self.settings("--from-nats", url)).transpose()
    }

    fn settings(&self, flag: &'static str, url: &str) -> Result<Settings, SettingsError> {
        let mut servers = Servers::parse(url).map_err(|source| SettingsError::Servers { flag, source })?;
        servers.credentials.clone_from(&self.nats_credentials);
        servers.ca.clone_from(&self.nats_ca);
        let word = |text: &str| {
            !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !word(&self.nats_stream) || !word(&self.nats_prefix) || !word(&self.nats_consumer) {
            return Err(SettingsError::Names);
        }
        self.check_partitions()?;
        Ok(Settings {
            servers,
            stream: self.nats_stream.clone(),
            prefix: self.nats_prefix.clone(),
            max_age: self.nats_max_age_s,
            max_bytes: self.nats_max_bytes,
            replicas: usize::from(self.nats_replicas),
            buffer: self.nats_buffer,
            format: self.nats_format,
            partitions: self.nats_partitions,
        })
    }

    fn check_partitions(&self) -> Result<(), SettingsError> {
        if self.fleet_view && self.partitions.is_some() {
            return Err(SettingsError::FleetWithPartitions);
        }
        if self.nats_partitions.is_some() && self.nats_format == Format::Json {
            return Err(SettingsError::PartitionedJson);
        }
        match (&self.partitions, self.nats_partitions) {
            (Some(_), None) => Err(SettingsError::OwnedWithoutCount),
            (Some(Owned::Listed(listed)), Some(count)) => {
                match listed.iter().find(|p| u16::from(**p) >= count) {
                    Some(beyond) => Err(SettingsError::OwnedBeyond(*beyond, count)),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

fn parse_nats_format(text: &str) -> Result<Format, ChoiceError> {
    match text {
        "batch" => Ok(Format::Batch),
        "json" => Ok(Format::Json),
        other => Err(ChoiceError {
            text: other.to_string(),
            choices: "batch (reports as they came) or json (collect's records)",
        }),
    }
}
