//! The sale's progress as the database tells it: seats sold and payments captured for
//! the newest event, polled while faults are injected.

use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::PgPool;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often progress is read.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// Counts for the newest event made after `events_before`.
pub(crate) struct Progress<'a> {
    pool: &'a PgPool,
    events_before: i64,
}

impl<'a> Progress<'a> {
    pub(crate) fn new(pool: &'a PgPool, events_before: i64) -> Self {
        Self {
            pool,
            events_before,
        }
    }

    /// `(seats sold, seats)` of the sale's event, `None` before it exists: seats sold
    /// as payments' valid tickets, on the main database whichever shard holds their
    /// section.
    async fn sold(&self) -> anyhow::Result<Option<(i64, i64)>> {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT (SELECT count(*) FROM payments.tickets t
                      WHERE t.event_id = e.event_id AND t.status = 'valid'),
                    (SELECT count(*) FROM catalog.event_seats s WHERE s.event_id = e.event_id)
               FROM catalog.events e WHERE e.event_id > $1 ORDER BY e.event_id DESC LIMIT 1",
        )
        .bind(self.events_before)
        .fetch_optional(self.pool)
        .await
        .context("reading seats sold")
    }

    /// Payments captured for the sale's event.
    async fn captured(&self) -> anyhow::Result<i64> {
        sqlx::query_scalar(
            "SELECT count(*) FROM payments.payments
              WHERE event_id = (SELECT max(event_id) FROM catalog.events WHERE event_id > $1)
                AND status = 'captured'",
        )
        .bind(self.events_before)
        .fetch_one(self.pool)
        .await
        .context("reading payments captured")
    }

    /// Waits until at least `threshold(seats)` seats are sold and returns
    /// `(sold, seats)`; `None` when the sale ends or sells out first. A failed query
    /// (the database restarting) is polled again.
    pub(crate) async fn wait_until_sold(
        &self,
        threshold: impl Fn(i64) -> i64,
        sale_over: &CancellationToken,
    ) -> Option<(i64, i64)> {
        loop {
            // A query cut by a database restart is no answer yet: poll again.
            if let Ok(Some((sold, seats))) = self.sold().await {
                if seats > 0 && sold >= seats {
                    return None;
                }
                if seats > 0 && sold >= threshold(seats) {
                    return Some((sold, seats));
                }
            }
            tokio::select! {
                () = sale_over.cancelled() => return None,
                () = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    }

    /// Waits until a payment is captured after this call; `None` when the sale ends
    /// first. A failed query (the database restarting) is polled again.
    ///
    /// # Errors
    /// Nothing was captured within `patience`.
    pub(crate) async fn wait_for_capture(
        &self,
        patience: Duration,
        sale_over: &CancellationToken,
    ) -> anyhow::Result<Option<()>> {
        let since = Instant::now();
        let mut before = None;
        loop {
            // A query cut by a database restart is no answer yet: poll again.
            match (before, self.captured().await) {
                (None, Ok(now)) => before = Some(now),
                (Some(before), Ok(now)) if now > before => return Ok(Some(())),
                (_, Ok(_)) => {}
                (_, Err(e)) => tracing::debug!(error = %e, "progress not read"),
            }
            if since.elapsed() > patience {
                bail!(
                    "no payment captured within {} s of the fault being lifted",
                    patience.as_secs()
                );
            }
            tokio::select! {
                () = sale_over.cancelled() => return Ok(None),
                () = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    }
}
