//! Flags of the seat-map service, each with an environment fallback.

use std::time::Duration;

use stadium_kit::args::CommonArgs;
use stadium_kit::mode::{Convenience, development_issuer};

/// Configuration of one seat-map process.
#[derive(Clone, clap::Parser)]
#[command(
    name = "seat-map",
    about = "Layouts, bounded-stale availability and best-available seats"
)]
pub struct Config {
    /// Flags every service shares (listen address, logs, telemetry, timeouts).
    #[command(flatten)]
    pub common: CommonArgs,

    /// PostgreSQL URL, `postgres://user@host:port/db`. Never logged.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    pub database_url: String,

    /// Shards holding seats besides the main database, `NAME=URL` each, comma-separated
    /// or the flag repeated (the names `catalog.section_shards` routes sections to):
    /// a section's availability is read on its shard. Never logged.
    #[arg(long = "shard", env = "DATABASE_SHARDS", value_name = "NAME=URL",
          value_delimiter = ',', hide_env_values = true, value_parser = stadium_db::parse_shard)]
    pub shards: Vec<stadium_db::ShardUrl>,

    /// Maximum open database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub database_max_connections: u32,

    /// Apply pending migrations at start (for local runs; deployments migrate once).
    #[arg(long, env = "SEAT_MAP_MIGRATE", default_value_t = false)]
    pub migrate: bool,

    /// The staleness bound in milliseconds: no availability answer is older than this,
    /// and each (event, section) is read from the database at most once per bound.
    #[arg(long, env = "STALENESS_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=60_000), value_name = "MS")]
    pub staleness_ms: u64,

    /// How long an event's layout stays cached, in milliseconds; a changed event or
    /// price list shows within this time.
    #[arg(long, env = "LAYOUT_TTL_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000), value_name = "MS")]
    pub layout_ttl_ms: u64,

    /// Most events whose layouts are cached at once.
    #[arg(long, env = "LAYOUT_CACHE_EVENTS", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub layout_cache_events: u64,

    /// The identity provider's JWK Set (JSON): verifies fan session tokens.
    #[arg(long, env = "IDENTITY_JWKS", value_name = "JSON")]
    pub identity_jwks: String,

    /// `iss` of fan session tokens.
    #[arg(long, env = "IDENTITY_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub identity_issuer: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("common", &self.common)
            .field("database_url", &"<redacted>")
            .field("shards", &self.shards)
            .field("database_max_connections", &self.database_max_connections)
            .field("migrate", &self.migrate)
            .field("staleness_ms", &self.staleness_ms)
            .field("layout_ttl_ms", &self.layout_ttl_ms)
            .field("layout_cache_events", &self.layout_cache_events)
            .field("identity_issuer", &self.identity_issuer)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The development conveniences these flags ask for, refused in production mode
    /// (see [`stadium_kit::mode`]).
    pub fn conveniences(&self) -> Vec<Convenience> {
        development_issuer(&self.identity_issuer, "--identity-issuer")
            .into_iter()
            .collect()
    }

    /// `--staleness-ms` as a duration.
    pub fn staleness(&self) -> Duration {
        Duration::from_millis(self.staleness_ms)
    }

    /// `--layout-ttl-ms` as a duration.
    pub fn layout_ttl(&self) -> Duration {
        Duration::from_millis(self.layout_ttl_ms)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, clap::Error> {
        let mut args = vec![
            "seat-map",
            "--database-url",
            "postgres://secret@x",
            "--identity-jwks",
            "{}",
        ];
        args.extend_from_slice(extra);
        Config::try_parse_from(args)
    }

    #[test]
    fn defaults_and_bounds() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.staleness(), Duration::from_secs(1));
        assert_eq!(c.layout_ttl(), Duration::from_secs(30));
        assert!(!format!("{c:?}").contains("secret"));
        assert_eq!(
            parse(&["--staleness-ms", "250"]).unwrap().staleness(),
            Duration::from_millis(250)
        );
        assert!(parse(&["--staleness-ms", "0"]).is_err());
        assert!(parse(&["--staleness-ms", "600000"]).is_err());
        assert!(Config::try_parse_from(["seat-map"]).is_err());
    }
}
