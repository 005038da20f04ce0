//! A service's flags when another process runs it inside its own (tests, benchmarks).

use crate::StartError;

/// The flags `C` of `service` embedded in another process: `--mode development`, on the
/// PostgreSQL database at `database_url` with at most `max_connections` connections
/// (`--database-url` and `--database-max-connections`, as every service with a
/// database names them), then `flags`.
///
/// # Errors
/// [`StartError::Config`] when `C` refuses the flags.
pub fn config<C: clap::Parser>(
    service: &str,
    database_url: &str,
    max_connections: u32,
    flags: &[&str],
) -> Result<C, StartError> {
    let max_connections = max_connections.to_string();
    let database = [
        service,
        "--mode",
        "development",
        "--database-url",
        database_url,
        "--database-max-connections",
        &max_connections,
    ];
    C::try_parse_from(database.iter().chain(flags))
        .map_err(|error| StartError::Config(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        common: crate::args::CommonArgs,
        #[arg(long)]
        database_url: String,
        #[arg(long)]
        database_max_connections: u32,
        #[arg(long)]
        identity_jwks: String,
    }

    #[test]
    fn development_on_the_database_then_the_flags() {
        let parsed: Flags = config("svc", "postgres://db", 3, &["--identity-jwks", "{}"]).unwrap();
        assert_eq!(parsed.common.mode, crate::mode::Mode::Development);
        assert_eq!(parsed.database_url, "postgres://db");
        assert_eq!(parsed.database_max_connections, 3);
        assert_eq!(parsed.identity_jwks, "{}");
        let refused = config::<Flags>("svc", "postgres://db", 3, &["--unknown"]);
        assert!(matches!(refused, Err(StartError::Config(_))));
    }
}
