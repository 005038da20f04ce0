//! Connection pools and migrations.

use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// The workspace's migrations (`migrations/` at the repository root), embedded at
/// compile time. Forward-only: an applied migration is never edited.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Pool sizing and timeouts.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Maximum open connections (default 16).
    pub max_connections: u32,
    /// How long `acquire` waits for a free connection before failing (default 5 s).
    pub acquire_timeout: Duration,
    /// `statement_timeout` set on every connection, so no statement can hold locks for
    /// long (default 5 s; 0 disables).
    pub statement_timeout: Duration,
    /// `application_name` reported in `pg_stat_activity`.
    pub application_name: String,
    /// Whether the planner may choose sequential scans (default true). Services whose
    /// every statement is an index lookup (holds, payments) turn them off: a plan made
    /// while a table is empty — the first seconds of an on-sale — is kept by the
    /// connection (a prepared statement, or a PL/pgSQL function's statement, switches
    /// to a generic plan after five runs), and a sequential scan chosen for an empty
    /// table stays one while the table grows. Off sets `enable_seqscan = off`, which
    /// prices sequential scans out wherever an index applies and leaves them where
    /// none does (PostgreSQL: "Planner Method Configuration", "plan_cache_mode").
    pub seq_scans: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            application_name: "stadium".to_owned(),
            seq_scans: true,
        }
    }
}

/// Opens a pool to `url` (`postgres://user@host:port/db`).
///
/// Every connection runs with `jit = off`. Our statements touch a few rows each, and
/// JIT-compiling one costs tens of milliseconds on every execution once its estimated
/// cost passes `jit_above_cost` (PostgreSQL: "When to JIT?"). With sequential scans
/// priced out ([`PoolOptions::seq_scans`] false) even a one-row table without a usable
/// index is estimated at 10^10 and compiled every time: measured on an on-sale, holds'
/// section-ownership trigger went from 0.24 ms to 50–64 ms per claim, and claims
/// queued behind it.
///
/// A connection is not pinged before it is handed out (sqlx's `test_before_acquire`
/// is off): the ping would be one more round trip on every hot-path call. A connection
/// that died while idle (a database restart) fails its next statement instead, with a
/// connection error that services answer as `UNAVAILABLE` (safe for the client to
/// retry), and the pool opens a new connection in its place.
///
/// # Errors
/// The URL does not parse, or no connection could be made within the acquire timeout.
pub async fn connect(url: &str, options: &PoolOptions) -> Result<PgPool, sqlx::Error> {
    let mut connect = url
        .parse::<PgConnectOptions>()?
        .application_name(&options.application_name)
        .options([
            (
                "statement_timeout",
                format!("{}", options.statement_timeout.as_millis()),
            ),
            ("jit", "off".to_owned()),
        ]);
    if !options.seq_scans {
        connect = connect.options([("enable_seqscan", "off")]);
    }
    PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .test_before_acquire(false)
        .connect_with(connect)
        .await
}

/// Applies every pending migration; a second run is a no-op. Concurrent runs are
/// serialised by sqlx's advisory lock.
///
/// # Errors
/// A migration failed, or an applied migration was edited after it ran.
pub async fn migrate(pool: &PgPool) -> Result<(), MigrateError> {
    MIGRATOR.run(pool).await
}
