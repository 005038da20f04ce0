//! Flags of the box office, each with an environment fallback.

use secrecy::SecretString;
use stadium_kit::args::{CommonArgs, grpc_url};

/// The box office's configuration: the shared flags plus its own.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "box-office",
    version,
    about = "Stadium box office: venues, events, sales control, inventory, reports, the invariant canary."
)]
pub struct Config {
    /// Flags every service shares.
    #[command(flatten)]
    pub common: CommonArgs,

    /// PostgreSQL URL (`postgres://user@host:port/db`) of the database holding the
    /// `catalog` schema. Unset: the service runs without a database.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub database_url: Option<SecretString>,

    /// gRPC address of the waiting room, which is told when a sale opens, pauses or
    /// closes and what the admission rate is, e.g. `http://127.0.0.1:50051`.
    #[arg(long, env = "WAITING_ROOM_URL", value_parser = grpc_url, value_name = "URL")]
    pub waiting_room_url: Option<http::Uri>,

    /// gRPC address of the holds service, through which seats are blocked and released
    /// (the same unique index as fans' claims), e.g. `http://127.0.0.1:50053`.
    #[arg(long, env = "HOLDS_URL", value_parser = grpc_url, value_name = "URL")]
    pub holds_url: Option<http::Uri>,

    /// gRPC address of the payments service, through which comps and refunds go,
    /// e.g. `http://127.0.0.1:50054`.
    #[arg(long, env = "PAYMENTS_URL", value_parser = grpc_url, value_name = "URL")]
    pub payments_url: Option<http::Uri>,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn the_command_is_well_formed() {
        Config::command().debug_assert();
    }

    #[test]
    fn help_documents_every_flag() {
        let help = Config::command().render_long_help().to_string();
        for flag in [
            "--listen",
            "--log-format",
            "--log-filter",
            "--otlp-endpoint",
            "--request-timeout-ms",
            "--grace-period-ms",
            "--database-url",
            "--waiting-room-url",
            "--holds-url",
            "--payments-url",
        ] {
            assert!(help.contains(flag), "{flag} missing from --help:\n{help}");
        }
        for env in [
            "DATABASE_URL",
            "WAITING_ROOM_URL",
            "HOLDS_URL",
            "PAYMENTS_URL",
        ] {
            assert!(help.contains(env), "{env} missing from --help");
        }
    }

    #[test]
    fn parses_its_flags() {
        let config = Config::try_parse_from([
            "box-office",
            "--database-url",
            "postgres://u:secret@db/stadium",
            "--payments-url",
            "http://payments:50054",
        ])
        .unwrap();
        assert_eq!(
            config.database_url.unwrap().expose_secret(),
            "postgres://u:secret@db/stadium"
        );
        assert_eq!(config.payments_url.unwrap().host(), Some("payments"));
    }

    #[test]
    fn debug_output_hides_the_database_url() {
        let config =
            Config::try_parse_from(["box-office", "--database-url", "postgres://u:secret@db/x"])
                .unwrap();
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn refuses_a_bad_service_url() {
        assert!(Config::try_parse_from(["box-office", "--waiting-room-url", "nowhere"]).is_err());
    }
}
