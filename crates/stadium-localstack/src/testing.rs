//! URLs for tests of other crates: the environment's servers when configured (CI), else
//! one private stack shared by every test of the process.

use tokio::sync::OnceCell;

use crate::{LocalStack, LocalStackError};

/// Where a test finds its PostgreSQL and Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestUrls {
    /// A PostgreSQL URL whose user may create databases (as `#[sqlx::test]` needs).
    pub database_url: String,
    /// A Redis URL; tests use a unique key prefix each, since the server is shared.
    pub redis_url: String,
}

/// The process-wide stack. Statics are never dropped, so it lives until the test
/// process exits; then its watchdog stops the servers and removes the directory.
static SHARED: OnceCell<Result<LocalStack, LocalStackError>> = OnceCell::const_new();

/// `DATABASE_URL` and `REDIS_URL` from the environment when both are set and non-empty;
/// otherwise one private [`LocalStack`] started on first use and shared by every later
/// call in this process (the variable that is set still wins for its server). The
/// first caller pays the start-up (a few seconds); a failed start is remembered, so
/// every test reports the same error quickly.
///
/// Tests read the environment here on purpose: it is how CI hands them its servers.
///
/// # Errors
/// The shared stack's start-up error (e.g. [`LocalStackError::MissingBinary`] naming
/// the package to install).
pub async fn try_test_urls() -> Result<TestUrls, &'static LocalStackError> {
    let from_env = |name| std::env::var(name).ok().filter(|value| !value.is_empty());
    let database_url = from_env("DATABASE_URL");
    let redis_url = from_env("REDIS_URL");
    if let (Some(database_url), Some(redis_url)) = (&database_url, &redis_url) {
        return Ok(TestUrls {
            database_url: database_url.clone(),
            redis_url: redis_url.clone(),
        });
    }
    let stack = SHARED.get_or_init(LocalStack::start).await.as_ref()?;
    Ok(TestUrls {
        database_url: database_url.unwrap_or_else(|| stack.database_url().to_owned()),
        redis_url: redis_url.unwrap_or_else(|| stack.redis_url().to_owned()),
    })
}

/// [`try_test_urls`] for test code, where a missing database is a test failure.
///
/// # Panics
/// When no URLs are configured and the private stack cannot start; the message is the
/// start-up error (which names the package to install when a binary is missing).
pub async fn test_urls() -> TestUrls {
    match try_test_urls().await {
        Ok(urls) => urls,
        Err(error) => panic!("no DATABASE_URL/REDIS_URL and no local stack: {error}"),
    }
}
