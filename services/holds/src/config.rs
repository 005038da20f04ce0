//! Flags of the holds service, each with an environment fallback.

use std::time::Duration;

use secrecy::SecretString;
use stadium_kit::StartError;
use stadium_kit::args::{CommonArgs, grpc_url};
use stadium_kit::mode::{Convenience, development_issuer};
use stadium_kit::tls::SERVICE_TOKEN;
use stadium_tokens::{DevIssuer, SigningKeyRing};
use tonic::codegen::http;

/// Connections of each database pool that fans' claims never take: they stay for the
/// payment step (StartPayment, ConfirmHold: money already moving), reads and the
/// sweeper, so a burst of claims queues in the process instead of ahead of them.
pub const KEPT_FROM_CLAIMS: usize = 4;

/// Configuration of one holds process.
#[derive(Clone, clap::Parser)]
#[command(
    name = "holds",
    about = "Seat claims decided by PostgreSQL: the holds service",
    // A later flag wins over an earlier one, so wrappers can append overrides.
    args_override_self = true
)]
pub struct Config {
    /// Flags every service shares (listen address, logs, telemetry, timeouts).
    #[command(flatten)]
    pub common: CommonArgs,

    /// PostgreSQL URL, `postgres://user@host:port/db`. Never logged.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    pub database_url: String,

    /// Holds shards besides the main database, `NAME=URL` each, comma-separated or the
    /// flag repeated: a section that `catalog.section_shards` routes to NAME has
    /// its holds there. NAME: a lowercase letter, then up to 62 lowercase letters,
    /// digits, `_` or `-`; not `main` (the `--database-url`). Each shard gets as many
    /// connections as the main database. Never logged.
    #[arg(long = "shard", env = "DATABASE_SHARDS", value_name = "NAME=URL",
          value_delimiter = ',', hide_env_values = true, value_parser = stadium_db::parse_shard)]
    pub shards: Vec<stadium_db::ShardUrl>,

    /// Maximum open database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub database_max_connections: u32,

    /// Longest wait for a free database connection, in milliseconds; past it the call
    /// answers UNAVAILABLE.
    #[arg(long, env = "DATABASE_ACQUIRE_TIMEOUT_MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..), value_name = "MS")]
    pub database_acquire_timeout_ms: u64,

    /// Apply pending migrations at start (for local runs; deployments migrate once).
    #[arg(long, env = "HOLDS_MIGRATE", default_value_t = false)]
    pub migrate: bool,

    /// The waiting room's gRPC URL; admission keys come from its `GetSigningKeys`.
    /// Comma-separated, one URL per replica; calls are balanced across them.
    #[arg(long, env = "WAITING_ROOM_URL", value_name = "URL", value_parser = grpc_url,
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub waiting_room_url: Vec<http::Uri>,

    /// A fixed JWK Set (JSON) for admission tokens instead of fetching from the waiting
    /// room (local runs and tests).
    #[arg(
        long,
        env = "ADMISSION_JWKS",
        value_name = "JSON",
        conflicts_with = "waiting_room_url"
    )]
    pub admission_jwks: Option<String>,

    /// `iss` of admission tokens.
    #[arg(long, env = "ADMISSION_ISSUER", default_value = stadium_tokens::WAITING_ROOM_ISSUER)]
    pub admission_issuer: String,

    /// Fewest milliseconds between two admission key fetches triggered by unknown kids.
    #[arg(
        long,
        env = "ADMISSION_REFRESH_MIN_MS",
        default_value_t = 5000,
        value_name = "MS"
    )]
    pub admission_refresh_min_ms: u64,

    /// Development only, without TLS: an admin token (role `service`, `sub` holds)
    /// standing for this service at the waiting room (`MarkAdmissionsUsed`). With TLS
    /// the client certificate names the service and no token is sent. Never logged.
    #[arg(
        long,
        env = "SERVICE_TOKEN",
        hide_env_values = true,
        value_name = "JWT"
    )]
    pub service_token: Option<SecretString>,

    /// The identity provider's JWK Set (JSON): verifies fan sessions and admin tokens.
    #[arg(long, env = "IDENTITY_JWKS", value_name = "JSON")]
    pub identity_jwks: String,

    /// `iss` of fan sessions and admin tokens.
    #[arg(long, env = "IDENTITY_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub identity_issuer: String,

    /// Milliseconds between sweeps of lapsed holds; 0 turns the background sweeper off
    /// (claims still treat lapsed holds as free).
    #[arg(
        long,
        env = "SWEEP_INTERVAL_MS",
        default_value_t = 1000,
        value_name = "MS"
    )]
    pub sweep_interval_ms: u64,

    /// Rows per sweep batch (one short transaction each).
    #[arg(long, env = "SWEEP_BATCH", default_value_t = 500,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub sweep_batch: u32,

    /// Days the seat history is kept (the sweeper deletes older rows every 60th pass;
    /// with the sweeper off nothing is deleted).
    #[arg(long, env = "SEAT_HISTORY_RETENTION_DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub seat_history_retention_days: u32,

    /// Milliseconds between writes of this process's per-section claim counts to
    /// `holds.section_load` (what `stadiumctl sections top` shows, summed over the
    /// replicas); 0 turns them off. Rows older than 15 minutes are deleted.
    #[arg(
        long,
        env = "SECTION_LOAD_INTERVAL_MS",
        default_value_t = 1000,
        value_name = "MS"
    )]
    pub section_load_interval_ms: u64,

    /// Batches of fans' claims in flight at once, each one transaction on its own
    /// connection: claims that arrive while every batch is busy share the next one.
    #[arg(long, env = "CLAIM_BATCHES", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub claim_batches: u32,

    /// Most fans' claims in one batch (1: every claim its own transaction).
    #[arg(long, env = "CLAIM_BATCH_MAX", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub claim_batch_max: u32,

    /// Longest a fan's claim waits for its turn at the database (a batch, or a place
    /// at the claims gate) before it is answered `RESOURCE_EXHAUSTED`/`OVERLOADED` with
    /// this as `retry_after_ms`, having written nothing; ms. Keep it well under
    /// `--request-timeout-ms`, so a burst is told to come back rather than time out.
    #[arg(long, env = "CLAIM_WAIT_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub claim_wait_ms: u64,

    /// Attempts of a claim transaction in all on 40001/40P01.
    #[arg(long, env = "CLAIM_MAX_ATTEMPTS", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=20))]
    pub claim_max_attempts: u32,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("common", &self.common)
            .field("database_url", &"<redacted>")
            .field("shards", &self.shards)
            .field("database_max_connections", &self.database_max_connections)
            .field(
                "database_acquire_timeout_ms",
                &self.database_acquire_timeout_ms,
            )
            .field("migrate", &self.migrate)
            .field("waiting_room_url", &self.waiting_room_url)
            .field("admission_issuer", &self.admission_issuer)
            .field("identity_issuer", &self.identity_issuer)
            .field("sweep_interval_ms", &self.sweep_interval_ms)
            .field("sweep_batch", &self.sweep_batch)
            .field(
                "seat_history_retention_days",
                &self.seat_history_retention_days,
            )
            .field("section_load_interval_ms", &self.section_load_interval_ms)
            .field("claim_batches", &self.claim_batches)
            .field("claim_batch_max", &self.claim_batch_max)
            .field("claim_wait_ms", &self.claim_wait_ms)
            .field("claim_max_attempts", &self.claim_max_attempts)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The development conveniences these flags ask for, refused in production mode
    /// (see [`stadium_kit::mode`]).
    pub fn conveniences(&self) -> Vec<Convenience> {
        let mut uses: Vec<Convenience> =
            development_issuer(&self.identity_issuer, "--identity-issuer")
                .into_iter()
                .collect();
        if self.service_token.is_some() {
            uses.push(SERVICE_TOKEN);
        }
        uses
    }

    /// How fans' claims are coalesced: `--claim-batches`, `--claim-batch-max`, and at
    /// most 4 seats a claim on average (advisory locks held until the batch commits);
    /// the claims that run alone (best available, presale codes, a batched claim that
    /// found a seat busy) take what is left of `--database-max-connections` after the
    /// batches and [`KEPT_FROM_CLAIMS`] (at least one); each waits at most
    /// `--claim-wait-ms` for its turn.
    pub fn batching(&self) -> crate::service::Batching {
        let max_claims = usize::try_from(self.claim_batch_max).unwrap_or(usize::MAX);
        let connections = usize::try_from(self.database_max_connections).unwrap_or(usize::MAX);
        let concurrent = usize::try_from(self.claim_batches).unwrap_or(usize::MAX);
        crate::service::Batching {
            concurrent,
            max_claims,
            max_seats: max_claims.saturating_mul(4).max(64),
            alone: connections
                .saturating_sub(concurrent)
                .saturating_sub(KEPT_FROM_CLAIMS)
                .max(1),
            wait: Duration::from_millis(self.claim_wait_ms),
        }
    }

    /// The sweeper's interval, `None` when it is off.
    pub fn sweep_interval(&self) -> Option<Duration> {
        (self.sweep_interval_ms > 0).then(|| Duration::from_millis(self.sweep_interval_ms))
    }

    /// How often the per-section load is written, `None` when it is off.
    pub fn section_load_interval(&self) -> Option<Duration> {
        (self.section_load_interval_ms > 0)
            .then(|| Duration::from_millis(self.section_load_interval_ms))
    }

    /// How long seat-history rows are kept.
    pub fn seat_history_keep(&self) -> Duration {
        Duration::from_secs(u64::from(self.seat_history_retention_days) * 86_400)
    }

    /// Holds embedded in another process in development mode (tests, benchmarks): on
    /// `database_url` with at most `max_connections` connections, trusting `identity`
    /// for fan sessions and admin tokens and the keys of `admission` for admission
    /// tokens, the background sweeper off (a hold lapses, but is only swept when the
    /// embedder asks); then the flags of `extra`, which win over these.
    ///
    /// # Errors
    /// [`StartError::Tokens`] when a key set cannot be written as JWKS;
    /// [`StartError::Config`] for a flag of `extra` that does not parse.
    pub fn embedded(
        database_url: &str,
        max_connections: u32,
        identity: &DevIssuer,
        admission: &SigningKeyRing,
        extra: &[&str],
    ) -> Result<Self, StartError> {
        let identity_jwks = identity.jwks_json()?;
        let admission_jwks = admission.jwks_json()?;
        let flags = [
            "--identity-jwks",
            &identity_jwks,
            "--admission-jwks",
            &admission_jwks,
            "--sweep-interval-ms",
            "0",
        ];
        let flags = [&flags[..], extra].concat();
        stadium_kit::embedded::config("holds", database_url, max_connections, &flags)
    }

    /// Checks what clap cannot: exactly one source of admission keys.
    ///
    /// # Errors
    /// A message naming the missing flags.
    pub fn validate(&self) -> Result<(), String> {
        if self.waiting_room_url.is_empty() && self.admission_jwks.is_none() {
            return Err("admission keys need --waiting-room-url or --admission-jwks".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, clap::Error> {
        let mut args = vec![
            "holds",
            "--database-url",
            "postgres://x",
            "--identity-jwks",
            "{}",
        ];
        args.extend_from_slice(extra);
        Config::try_parse_from(args)
    }

    #[test]
    fn defaults_and_validation() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.sweep_interval(), Some(Duration::from_secs(1)));
        assert!(c.validate().is_err());
        let c = parse(&[
            "--waiting-room-url",
            "http://wr:50051",
            "--sweep-interval-ms",
            "0",
        ])
        .unwrap();
        assert!(c.validate().is_ok());
        assert_eq!(c.sweep_interval(), None);
        assert_eq!(c.section_load_interval(), Some(Duration::from_secs(1)));
        assert!(!format!("{c:?}").contains("postgres://x"));
    }

    #[test]
    fn the_waiting_room_url_lists_its_replicas() {
        let c = parse(&["--waiting-room-url", "http://wr-0:50051,http://wr-1:50051"]).unwrap();
        let hosts: Vec<_> = c.waiting_room_url.iter().map(|u| u.host()).collect();
        assert_eq!(hosts, [Some("wr-0"), Some("wr-1")]);
        assert!(c.validate().is_ok());
        // A later flag replaces an earlier one (wrappers append overrides).
        let c = parse(&[
            "--waiting-room-url",
            "http://wr-0:50051,http://wr-1:50051",
            "--waiting-room-url",
            "http://wr-2:50051",
        ])
        .unwrap();
        assert_eq!(
            c.waiting_room_url,
            ["http://wr-2:50051".parse::<http::Uri>().unwrap()]
        );
        assert!(parse(&["--waiting-room-url", "http://wr-0:50051,wr-1:50051"]).is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["--sweep-batch", "0"]).is_err());
        assert!(parse(&["--waiting-room-url", "a"]).is_err());
        assert!(
            parse(&[
                "--waiting-room-url",
                "http://wr:1",
                "--admission-jwks",
                "{}"
            ])
            .is_err()
        );
        assert!(Config::try_parse_from(["holds"]).is_err());
    }

    #[test]
    fn shards_are_named_urls_never_logged() {
        let c = parse(&[
            "--shard",
            "east=postgres://a/x,west-2=postgresql://b/y",
            "--shard",
            "north=postgres://c/z",
        ])
        .unwrap();
        let names: Vec<_> = c.shards.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["east", "west-2", "north"]);
        let c = parse(&["--shard", "east=postgres://a/x,west-2=postgresql://b/y"]).unwrap();
        let names: Vec<_> = c.shards.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["east", "west-2"]);
        assert!(!format!("{c:?}").contains("postgres://a"));
        assert!(parse(&["--shard", "main=postgres://a"]).is_err());
    }
}
