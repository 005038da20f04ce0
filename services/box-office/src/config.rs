//! Flags of the box office, each with an environment fallback.

use std::time::Duration;

use secrecy::SecretString;
use stadium_kit::args::{CommonArgs, grpc_url};
use stadium_kit::mode::{Convenience, development_issuer};

/// Configuration of one box-office process.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "box-office",
    version,
    about = "Stadium box office: venues, events, prices, sale control, reports and the invariant canary."
)]
pub struct Config {
    /// Flags every service shares.
    #[command(flatten)]
    pub common: CommonArgs,

    /// PostgreSQL URL (`postgres://user@host:port/db`) of the database holding the
    /// `catalog` schema. Never logged.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub database_url: SecretString,

    /// Shards holding seats besides the main database, `NAME=URL` each, comma-separated
    /// or the flag repeated (the names `catalog.section_shards` routes sections to):
    /// the canary and the seat counts cover every one. Never logged.
    #[arg(long = "shard", env = "DATABASE_SHARDS", value_name = "NAME=URL",
          value_delimiter = ',', hide_env_values = true, value_parser = stadium_db::parse_shard)]
    pub shards: Vec<stadium_db::ShardUrl>,

    /// Maximum open database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub database_max_connections: u32,

    /// Apply pending migrations at start (for local runs; deployments migrate once).
    #[arg(long, env = "BOX_OFFICE_MIGRATE", default_value_t = false)]
    pub migrate: bool,

    /// The identity provider's JWK Set (JSON): verifies admin tokens.
    #[arg(long, env = "IDENTITY_JWKS", value_name = "JSON")]
    pub identity_jwks: String,

    /// `iss` of admin tokens.
    #[arg(long, env = "IDENTITY_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub identity_issuer: String,

    /// gRPC address of the waiting room, told about every sale change
    /// (`ConfigureEvent`, `SetAdmissionRate`). Unset: changes are stored and the push is
    /// reported as skipped. Comma-separated, one URL per replica; calls are balanced
    /// across them.
    #[arg(long, env = "WAITING_ROOM_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub waiting_room_url: Vec<http::Uri>,

    /// gRPC address of the holds service (BlockSeats, ReleaseSeats). Comma-separated,
    /// one URL per replica; calls are balanced across them.
    #[arg(long, env = "HOLDS_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub holds_url: Vec<http::Uri>,

    /// gRPC address of the payments service (IssueComp, RefundOrder). Comma-separated,
    /// one URL per replica; calls are balanced across them.
    #[arg(long, env = "PAYMENTS_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub payments_url: Vec<http::Uri>,

    /// Development only, without TLS: an admin token (role `service`, `sub` box-office)
    /// standing for the box office when it pushes sale settings and seat counts to the
    /// waiting room. With TLS the client certificate names it. Never logged.
    #[arg(
        long,
        env = "SERVICE_TOKEN",
        hide_env_values = true,
        value_name = "JWT"
    )]
    pub service_token: Option<SecretString>,

    /// Calls per push to the waiting room before the answer says FAILED (the push then
    /// goes on in the background).
    #[arg(long, env = "PUSH_ATTEMPTS", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=10))]
    pub push_attempts: u32,

    /// Milliseconds between two seat counts reported to the waiting room for each
    /// event on sale (it admits no more fans than the seats left can serve, and says
    /// sold out); 0 turns reporting off. Needs --waiting-room-url.
    #[arg(
        long,
        env = "INVENTORY_INTERVAL_MS",
        default_value_t = 1_000,
        value_name = "MS"
    )]
    pub inventory_interval_ms: u64,

    /// Milliseconds between two resyncs of the waiting room: the whole configuration of
    /// every event on sale or paused is sent again as the database has it
    /// (`ConfigureEvent`, which carries the admission rate). The same settings change
    /// nothing there; a waiting room whose Redis lost its data (restarted empty) has its
    /// events back within one interval, fans polling meanwhile being told to retry
    /// (QUEUE_RESTORING). The database is the truth: a change made on the waiting room
    /// directly lasts until the next resync. 0 turns it off. Needs --waiting-room-url.
    #[arg(
        long,
        env = "WAITING_ROOM_RESYNC_MS",
        default_value_t = 5_000,
        value_name = "MS"
    )]
    pub waiting_room_resync_ms: u64,

    /// Milliseconds between two looks for cancelled events whose orders are left to
    /// refund (while a cancellation has work, its passes follow each other at once);
    /// 0 turns the refunds off on this replica. Needs --payments-url.
    #[arg(
        long,
        env = "CANCELLATION_INTERVAL_MS",
        default_value_t = 1_000,
        value_name = "MS"
    )]
    pub cancellation_interval_ms: u64,

    /// Milliseconds between canary runs over the events on sale; 0 turns it off.
    #[arg(
        long,
        env = "CANARY_INTERVAL_MS",
        default_value_t = 60_000,
        value_name = "MS"
    )]
    pub canary_interval_ms: u64,

    /// Milliseconds a booking or payment may stay half-done before the canary reports it
    /// (a payment is captured a moment before its seats are booked).
    #[arg(
        long,
        env = "CANARY_GRACE_MS",
        default_value_t = 30_000,
        value_name = "MS"
    )]
    pub canary_grace_ms: u64,
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
            uses.push(stadium_kit::tls::SERVICE_TOKEN);
        }
        uses
    }

    /// The canary's interval, `None` when it is off.
    pub fn canary_interval(&self) -> Option<Duration> {
        (self.canary_interval_ms > 0).then(|| Duration::from_millis(self.canary_interval_ms))
    }

    /// The inventory reporter's interval, `None` when it is off.
    pub fn inventory_interval(&self) -> Option<Duration> {
        (self.inventory_interval_ms > 0).then(|| Duration::from_millis(self.inventory_interval_ms))
    }

    /// The waiting room resync's interval, `None` when it is off.
    pub fn resync_interval(&self) -> Option<Duration> {
        (self.waiting_room_resync_ms > 0)
            .then(|| Duration::from_millis(self.waiting_room_resync_ms))
    }

    /// The cancellation worker's interval, `None` when it is off on this replica.
    pub fn cancellation_interval(&self) -> Option<Duration> {
        (self.cancellation_interval_ms > 0)
            .then(|| Duration::from_millis(self.cancellation_interval_ms))
    }

    /// `--canary-grace-ms` as a duration.
    pub fn canary_grace(&self) -> Duration {
        Duration::from_millis(self.canary_grace_ms)
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};
    use secrecy::ExposeSecret;

    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, clap::Error> {
        let mut args = vec![
            "box-office",
            "--database-url",
            "postgres://u:secret@db/x",
            "--identity-jwks",
            "{}",
        ];
        args.extend_from_slice(extra);
        Config::try_parse_from(args)
    }

    #[test]
    fn the_command_is_well_formed() {
        Config::command().debug_assert();
    }

    #[test]
    fn defaults_and_secrets() {
        let c = parse(&["--service-token", "tok-secret"]).unwrap();
        assert_eq!(c.canary_interval(), Some(Duration::from_secs(60)));
        assert_eq!(c.inventory_interval(), Some(Duration::from_secs(1)));
        assert_eq!(c.resync_interval(), Some(Duration::from_secs(5)));
        assert!(c.waiting_room_url.is_empty());
        assert_eq!(
            c.service_token.as_ref().unwrap().expose_secret(),
            "tok-secret"
        );
        let debug = format!("{c:?}");
        assert!(!debug.contains("secret"), "{debug}");
    }

    #[test]
    fn flags_parse_and_bad_values_are_refused() {
        let c = parse(&[
            "--holds-url",
            "http://holds:50053",
            "--canary-interval-ms",
            "0",
            "--inventory-interval-ms",
            "0",
            "--waiting-room-resync-ms",
            "0",
        ])
        .unwrap();
        assert_eq!(c.inventory_interval(), None);
        assert_eq!(c.resync_interval(), None);
        let hosts: Vec<_> = c.holds_url.iter().map(http::Uri::host).collect();
        assert_eq!(hosts, [Some("holds")]);
        assert!(c.payments_url.is_empty());
        assert_eq!(c.canary_interval(), None);
        assert!(parse(&["--payments-url", "payments:50054"]).is_err());
        assert!(parse(&["--payments-url", "http://payments-0:50054,payments-1:50054"]).is_err());
        let c = parse(&[
            "--payments-url",
            "http://payments-0:50054,http://payments-1:50054",
        ])
        .unwrap();
        let hosts: Vec<_> = c.payments_url.iter().map(http::Uri::host).collect();
        assert_eq!(hosts, [Some("payments-0"), Some("payments-1")]);
        assert!(parse(&["--push-attempts", "0"]).is_err());
        let c = parse(&["--waiting-room-resync-ms", "250"]).unwrap();
        assert_eq!(c.resync_interval(), Some(Duration::from_millis(250)));
        assert!(parse(&["--waiting-room-resync-ms", "-1"]).is_err());
        assert!(Config::try_parse_from(["box-office"]).is_err());
    }
}
