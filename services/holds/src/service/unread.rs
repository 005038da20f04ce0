//! Reads on every database for the checks across shards (`fan_limits`,
//! `request_family`). A database that does not answer within [`READ_WAIT`] is probed
//! with a new connection and left out only when it refuses it as a database that is
//! down does; one that is up but slow or busy makes the check fail, retryably. A probe
//! that found a database up is remembered for [`UP_MEMO`], so a shard that is up but
//! slow costs the claims meanwhile no connection of their own; one found down is probed
//! again each time (a refused connection costs next to nothing, and leaving a database
//! out on an old verdict could let a fan past a limit).

use std::future::Future;
use std::time::Duration;

use sqlx::{Connection, PgConnection, PgPool};

use super::HoldsService;
use crate::error::Error;

/// How long a check waits for one database's read: what a shard that is down costs
/// every fan's claim on shards, at most (and [`PROBE_WAIT`] more).
const READ_WAIT: Duration = Duration::from_millis(500);

/// How long a probe of a database that did not answer in time waits to connect.
const PROBE_WAIT: Duration = Duration::from_millis(250);

/// How long a probe that found a database up is taken as said.
pub(super) const UP_MEMO: Duration = Duration::from_secs(1);

impl HoldsService {
    /// `read` on the database of `pool` (`shard`), or `None` when it does not answer
    /// within [`READ_WAIT`] and refuses a new connection (down, restarting: left out,
    /// with a warning).
    ///
    /// # Errors
    /// The read's error (or a pool timeout) when the database is up but did not answer
    /// within [`READ_WAIT`].
    pub(super) async fn read_unless_down<T>(
        &self,
        shard: &str,
        pool: &PgPool,
        read: impl Future<Output = Result<T, Error>>,
    ) -> Result<Option<T>, Error> {
        let error = match tokio::time::timeout(READ_WAIT, read).await {
            Ok(Ok(value)) => return Ok(Some(value)),
            Ok(Err(error)) => error,
            Err(_) => Error::Database(sqlx::Error::PoolTimedOut),
        };
        if !self.up_probes.contains_key(shard) {
            if refuses_connections(pool).await {
                tracing::warn!(shard, %error, "unread, the database is down: it is left out of the checks across shards");
                return Ok(None);
            }
            self.up_probes.insert(shard.to_owned(), ()).await;
        }
        tracing::warn!(shard, %error, "unread from a database that is up: the claim is refused, retryably");
        Err(error)
    }
}

/// Whether a new connection to `pool`'s database is refused within [`PROBE_WAIT`] as
/// by a database that is down: no server listening or the connection cut, shutting
/// down or starting up (SQLSTATE 57P01–57P03), not accepting connections (55000), gone
/// (3D000). A database that answers busy (53300 too many connections, and any other
/// refusal) or does not answer in time counts as up.
async fn refuses_connections(pool: &PgPool) -> bool {
    let options = pool.connect_options();
    match tokio::time::timeout(PROBE_WAIT, PgConnection::connect_with(&options)).await {
        Ok(Ok(connection)) => {
            tokio::spawn(connection.close());
            false
        }
        Ok(Err(error)) => down(&error),
        Err(_) => false,
    }
}

/// Whether a failed connection attempt says the database is down (see
/// [`refuses_connections`]).
fn down(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            Some("57P01" | "57P02" | "57P03" | "55000" | "3D000")
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_database_that_is_gone_counts_as_down() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(down(&sqlx::Error::Io(refused)));
        assert!(!down(&sqlx::Error::PoolTimedOut));
        assert!(!down(&sqlx::Error::Protocol("unexpected message".into())));
    }
}
