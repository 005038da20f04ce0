//! The lease that serialises a payment's drivers: columns `lease_owner` and
//! `lease_until` of `payments.payments`, by the database clock. Whoever holds an
//! unexpired lease on an unfinished payment (pending or refund_pending) is its only
//! driver; a driver that fails gives it back at once, one that dies lets it lapse, and
//! then a retried Confirm, a provider notice or the reconciler takes it over. Every
//! transition that ends in a final state clears the lease in the same statement.

use std::time::Duration;

use sqlx::PgConnection;
use uuid::Uuid;

use super::Lifecycle;
use crate::domain::{Payment, PaymentStatus, RefundReason};
use crate::error::Error;
use crate::store::{PaymentRow, millis, one};

/// A lease on an unfinished payment: who drives it, for how long from when it is taken
/// (database clock). A fresh value is only a token: the row says whether it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lease {
    /// The lease holder's random token.
    pub(super) owner: Uuid,
    /// How long the lease lasts from when it is taken.
    pub(super) ttl: Duration,
}

impl Lease {
    /// A fresh lease token lasting `ttl`.
    fn new(ttl: Duration) -> Self {
        Self {
            owner: Uuid::new_v4(),
            ttl,
        }
    }
}

/// Takes the lease on an unfinished payment (pending or refund_pending) if nobody holds
/// an unexpired one; returns the payment when taken. Counts the driver in `attempts`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
async fn take_lease(
    conn: &mut PgConnection,
    id: Uuid,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    one(sqlx::query_as!(
        PaymentRow,
        r#"UPDATE payments.payments
           SET lease_owner = $2, lease_until = now() + $3::bigint * interval '1 millisecond',
               attempts = attempts + 1
           WHERE payment_id = $1 AND status IN ('pending', 'refund_pending')
               AND (lease_until IS NULL OR lease_until <= now())
           RETURNING payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined"#,
        id,
        lease.owner,
        millis(lease.ttl),
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// Gives the lease back early (after a failure the caller cannot finish), so a retry or
/// the reconciler may take over at once. Only the holder's own lease is released.
///
/// # Errors
/// [`Error::Database`].
async fn release_lease(conn: &mut PgConnection, id: Uuid, lease: Lease) -> Result<(), Error> {
    sqlx::query!(
        "UPDATE payments.payments SET lease_until = NULL
         WHERE payment_id = $1 AND lease_owner = $2",
        id,
        lease.owner,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

impl Lifecycle {
    /// A fresh lease token lasting the configured lease.
    pub(super) fn lease(&self) -> Lease {
        Lease::new(self.settings.lease)
    }

    /// Takes the lease on the unfinished payment `id` (see [`take_lease`]): the payment
    /// and the lease now held, or `None` when another driver holds it or the payment is
    /// no longer unfinished.
    pub(super) async fn take(&self, id: Uuid) -> Result<Option<(Payment, Lease)>, Error> {
        let lease = self.lease();
        let mut conn = self.pool.acquire().await?;
        Ok(take_lease(&mut conn, id, lease)
            .await?
            .map(|payment| (payment, lease)))
    }

    /// Gives a lease back after a failure, so a retry or the reconciler can take over
    /// at once. Best effort: if even this fails, the lease lapses on its own.
    pub(super) async fn give_back(&self, id: Uuid, lease: Lease) {
        let released = async {
            let mut conn = self.pool.acquire().await?;
            release_lease(&mut conn, id, lease).await
        };
        if let Err(error) = released.await {
            tracing::warn!(payment_id = %id, %error, "lease not given back; it will lapse");
        }
    }
}
