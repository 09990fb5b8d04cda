//! The IPFIX exporter's flags, turned into its [`Settings`] here.

use std::time::Duration;

use clap::Args;

use super::{Settings, TargetError, DEFAULT_PEN};
use crate::collect::values::duration;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "IPFIX")]
pub struct IpfixArgs {
    /// Export per flow, hop and link figures as IPFIX (RFC 7011) to this
    /// collector: udp://HOST:PORT (or HOST:PORT) or tcp://HOST:PORT
    /// (docs/ipfix.md).
    #[arg(long)]
    pub ipfix: Option<String>,
    /// Seconds each IPFIX record covers.
    #[arg(long, value_name = "S", default_value = "60", value_parser = duration::ipfix_interval)]
    pub ipfix_interval: Duration,
    /// The IPFIX messages' Observation Domain ID.
    #[arg(long, default_value_t = 1)]
    pub ipfix_domain: u32,
    /// The enterprise number of the IPFIX elements IANA has not assigned
    /// (default: 32473, RFC 5612's number for documentation; see
    /// docs/ipfix.md).
    #[arg(long, default_value_t = DEFAULT_PEN)]
    pub ipfix_pen: u32,
}

impl IpfixArgs {
    /// The exporter's settings, keeping at most `limit` flows, hops and
    /// links an interval; none without `--ipfix`.
    pub fn settings(&self, limit: usize) -> Result<Option<Settings>, TargetError> {
        let Some(target) = &self.ipfix else { return Ok(None) };
        let (server, transport) = Settings::parse_target(target)?;
        Ok(Some(Settings {
            server,
            transport,
            interval: self.ipfix_interval,
            domain: self.ipfix_domain,
            pen: self.ipfix_pen,
            limit,
        }))
    }
}
