//! Whole-transaction retries for 40001/40P01 with capped, fully jittered exponential
//! backoff ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015).

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::sqlstate::{DbFailure, classify};

/// An error that may carry a database failure; services implement it for their error
/// enums (with [`transient!`](crate::transient!)) so `retry_transient` can tell a
/// transient SQLSTATE from everything else.
pub trait Transient {
    /// The classified database failure, or [`DbFailure::NotDatabase`].
    fn db_failure(&self) -> DbFailure;
}

impl Transient for sqlx::Error {
    fn db_failure(&self) -> DbFailure {
        classify(self)
    }
}

/// `impl Transient for $error`, for a service's error enum whose variant `$variant`
/// holds the `sqlx::Error`: that variant's failure as [`classify`] tells it, every
/// other variant [`DbFailure::NotDatabase`]. Invoke it in the crate that defines
/// `$error`, as `stadium_db::transient!(Error, Database);`.
#[macro_export]
macro_rules! transient {
    ($error:ty, $variant:ident) => {
        impl $crate::Transient for $error {
            fn db_failure(&self) -> $crate::DbFailure {
                match self {
                    Self::$variant(error) => $crate::classify(error),
                    _ => $crate::DbFailure::NotDatabase,
                }
            }
        }
    };
}

/// How often and how long to retry a transaction that failed with a transient SQLSTATE.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (default 5).
    pub max_attempts: u32,
    /// Backoff before the second attempt; doubles each time (default 5 ms).
    pub base_delay: Duration,
    /// Upper bound of any one backoff (default 200 ms).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(200),
        }
    }
}

/// Runs `attempt` until it succeeds, fails with a non-transient error, or the attempts
/// run out. `on_retry` is told the SQLSTATE of every failure that is retried, for metrics.
///
/// `attempt` must run a whole transaction (begin to commit): retrying one statement of a
/// failed transaction is meaningless in PostgreSQL.
///
/// # Errors
/// The last error of `attempt`.
pub async fn retry_transient<T, E, F, Fut>(
    policy: RetryPolicy,
    mut on_retry: impl FnMut(&DbFailure),
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Transient,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => {
                let failure = error.db_failure();
                if !failure.is_transient() || tries >= policy.max_attempts {
                    return Err(error);
                }
                on_retry(&failure);
                let cap = policy
                    .max_delay
                    .min(policy.base_delay.saturating_mul(1 << (tries - 1).min(16)));
                let jitter = rand::thread_rng().gen_range(0..=cap.as_micros() as u64);
                tokio::time::sleep(Duration::from_micros(jitter)).await;
            }
        }
    }
}
