//! The stores a run uses: the given PostgreSQL and Redis, or private ones started from
//! the machine's binaries; migrated, with a Redis key prefix of their own.

use anyhow::Context;
use stadium_localstack::LocalStack;

/// The stores of one run.
pub struct Stores {
    /// The PostgreSQL URL in use.
    pub database_url: String,
    /// The Redis URL in use.
    pub redis_url: String,
    /// The waiting room's Redis key prefix for this database (`stadium:wr:<oid>:`).
    pub key_prefix: String,
    /// The private PostgreSQL/Redis, when one was started.
    pub local: Option<LocalStack>,
}

impl Stores {
    /// Starts private stores for the URLs not given, and applies the migrations.
    ///
    /// # Errors
    /// A store that cannot start (the message names the package to install when a
    /// binary is missing), or a migration.
    pub async fn open(
        database_url: Option<String>,
        redis_url: Option<String>,
    ) -> anyhow::Result<Self> {
        let local = if database_url.is_none() || redis_url.is_none() {
            // It logs where it runs; it is removed at exit (also on Ctrl-C, via stop or drop).
            Some(LocalStack::start().await?)
        } else {
            None
        };
        let database_url = database_url
            .or_else(|| local.as_ref().map(|l| l.database_url().to_owned()))
            .context("database URL")?;
        let redis_url = redis_url
            .or_else(|| local.as_ref().map(|l| l.redis_url().to_owned()))
            .context("redis URL")?;

        let pool = stadium_db::connect(&database_url, &Default::default())
            .await
            .context("connect to PostgreSQL")?;
        stadium_db::migrate(&pool)
            .await
            .context("apply migrations")?;
        // Event ids restart in a new database while Redis may keep an old queue: the
        // database's oid in the key prefix keeps the two from meeting.
        let database_oid = sqlx::query_scalar!(
            r#"SELECT oid::bigint AS "oid!" FROM pg_database WHERE datname = current_database()"#,
        )
        .fetch_one(&pool)
        .await
        .context("read the database's oid")?;
        pool.close().await;
        Ok(Self {
            database_url,
            redis_url,
            key_prefix: format!("stadium:wr:{database_oid}:"),
            local,
        })
    }
}
