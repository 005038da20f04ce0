//! Test support shared by the stadium crates: a fresh, migrated PostgreSQL database per
//! test (cloned from a migrated template, so it costs one `CREATE DATABASE`), and the
//! Redis URL with a unique key prefix per test, [`catalog`] for a venue, its seats and
//! events in it, [`Issuers`] for the tokens a test sends, [`development_config`] for a
//! service's flags, [`all_at_once`] for requests fired in parallel, [`grpc`] for bearer
//! tokens and typed refusals, [`TestCertificates`] for services' TLS files, [`binary`] for a service's shipped binary run as a
//! process, [`venues`] for the real venue plans, [`RoundTrips`] to count a service's
//! round trips to PostgreSQL, and [`seq_scans`] / [`generic_seq_scans`] to see which
//! tables a statement's plan scans.
//!
//! The servers come from `DATABASE_URL` and `REDIS_URL` when set (CI sets them), else
//! from one private PostgreSQL and Redis that `stadium-localstack` starts from the
//! machine's binaries for the whole test process.

pub mod binary;
pub mod catalog;
mod certificates;
mod concurrency;
mod flags;
pub mod grpc;
mod issuers;
mod plans;
mod round_trips;
pub mod venues;

pub use certificates::TestCertificates;
pub use concurrency::all_at_once;
pub use flags::development_config;
pub use issuers::{Issuers, dev_jwks};
pub use plans::{generic_seq_scans, seq_scans};
pub use round_trips::RoundTrips;

use sqlx::postgres::PgPool;
use sqlx::{Connection, Executor, PgConnection};
use stadium_db::with_database;
use tokio::sync::OnceCell;

/// A database created for one test, migrated, with a pool to it.
#[derive(Debug, Clone)]
pub struct TestDatabase {
    /// Pool of up to 32 connections to the database.
    pub pool: PgPool,
    /// URL of the database, for starting a service against it.
    pub url: String,
    /// The database's name (`stadium_test_<uuid>`).
    pub name: String,
}

/// The PostgreSQL server URL tests use (a user that may create databases):
/// `DATABASE_URL`, else the process's private local stack.
///
/// # Panics
/// When neither is available; the message names what to install.
pub async fn database_server_url() -> String {
    stadium_localstack::test_urls().await.database_url
}

/// The Redis URL tests use: `REDIS_URL`, else the process's private local stack.
///
/// # Panics
/// When neither is available; the message names what to install.
pub async fn redis_url() -> String {
    stadium_localstack::test_urls().await.redis_url
}

/// A key prefix unique to one test, so tests can share a Redis server.
pub fn unique_prefix(test: &str) -> String {
    format!("test:{test}:{}", uuid::Uuid::new_v4().simple())
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

async fn template(server_url: &str) -> &'static str {
    TEMPLATE
        .get_or_init(|| async {
            // One template per process and migration set: its name carries the newest
            // migration version, so an edited set never reuses a stale template.
            let newest = stadium_db::MIGRATOR
                .iter()
                .map(|m| m.version)
                .max()
                .unwrap_or_default();
            let name = format!("stadium_tpl_{newest}_{}", uuid::Uuid::new_v4().simple());
            let mut admin = PgConnection::connect(server_url)
                .await
                .expect("test PostgreSQL server must accept connections (DATABASE_URL)");
            admin
                .execute(format!("CREATE DATABASE {name}").as_str())
                .await
                .expect("create template database");
            let url = with_database(server_url, &name);
            let pool = PgPool::connect(&url).await.expect("connect to template");
            stadium_db::migrate(&pool).await.expect("migrations apply");
            pool.close().await;
            name
        })
        .await
}

/// Creates a fresh migrated database for one test and returns a pool to it.
///
/// # Panics
/// When the test server is unreachable or the migrations fail: a test cannot go on.
pub async fn fresh_database() -> TestDatabase {
    let server_url = database_server_url().await;
    let template = template(&server_url).await;
    let name = format!("stadium_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&server_url)
        .await
        .expect("test PostgreSQL server must accept connections (DATABASE_URL)");
    // CREATE DATABASE … TEMPLATE needs the template to have no other sessions; the
    // template's own pool is closed above, so only parallel clones can collide: retry.
    let mut tries = 0;
    loop {
        match admin
            .execute(format!("CREATE DATABASE {name} TEMPLATE {template}").as_str())
            .await
        {
            Ok(_) => break,
            Err(error) if tries < 50 => {
                tries += 1;
                let _ = error;
                tokio::time::sleep(std::time::Duration::from_millis(20 * tries)).await;
            }
            Err(error) => panic!("create test database: {error}"),
        }
    }
    let url = with_database(&server_url, &name);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(32)
        .connect(&url)
        .await
        .expect("connect to test database");
    TestDatabase { pool, url, name }
}
