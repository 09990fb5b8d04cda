//! The InfluxDB exporter's flags, turned into its [`Settings`] here (the
//! server resolved, the password read).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{Settings, UrlError};

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "InfluxDB")]
pub struct InfluxArgs {
    /// Write every latency and loss observation to this InfluxDB 1.x
    /// server (http://HOST:PORT), into --influx-db.
    #[arg(long)]
    pub influx: Option<String>,
    /// The InfluxDB database.
    #[arg(long, default_value = "int")]
    pub influx_db: String,
    /// The InfluxDB user, for a server with authentication on; the
    /// password comes from --influx-password-file or the environment's
    /// INFLUX_PASSWORD (kept off the command line).
    #[arg(long)]
    pub influx_user: Option<String>,
    /// A file holding the InfluxDB password (its first line).
    #[arg(long)]
    pub influx_password_file: Option<PathBuf>,
    /// Points per InfluxDB write.
    #[arg(long, default_value_t = 5000)]
    pub influx_batch: usize,
    /// Points waiting for InfluxDB at most; beyond, new ones are dropped
    /// and counted (a slow database never stalls the collector).
    #[arg(long, default_value_t = 200_000)]
    pub influx_buffer: usize,
}

/// Why the InfluxDB flags give no writer.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("--influx-db {0:?}: letters, digits and _ only")]
    Database(String),
    #[error("--influx-password-file: only with --influx-user")]
    PasswordWithoutUser,
    #[error("--influx-password-file {}: {source}", path.display())]
    PasswordFile { path: PathBuf, source: std::io::Error },
    #[error("--influx-user: a password in --influx-password-file or the environment's INFLUX_PASSWORD")]
    NoPassword,
}

impl InfluxArgs {
    /// The writer's settings; none without `--influx`.
    pub fn settings(&self) -> Result<Option<Settings>, SettingsError> {
        let Some(url) = &self.influx else { return Ok(None) };
        let (server, host) = Settings::parse_url(url)?;
        let db = &self.influx_db;
        if db.is_empty() || !db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(SettingsError::Database(db.clone()));
        }
        Ok(Some(Settings {
            server,
            host,
            authorization: self.authorization()?,
            database: db.clone(),
            batch: self.influx_batch.max(1),
            flush: Duration::from_millis(500),
            buffer: self.influx_buffer,
        }))
    }

    /// The Basic authorization of --influx-user, with its password from
    /// the file or the environment.
    fn authorization(&self) -> Result<Option<String>, SettingsError> {
        let Some(user) = &self.influx_user else {
            return match self.influx_password_file {
                Some(_) => Err(SettingsError::PasswordWithoutUser),
                None => Ok(None),
            };
        };
        let password = match &self.influx_password_file {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|source| SettingsError::PasswordFile { path: file.clone(), source })?
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
            None => std::env::var("INFLUX_PASSWORD").map_err(|_| SettingsError::NoPassword)?,
        };
        Ok(Some(int_os::http::basic_auth(user, &password)))
    }
}
