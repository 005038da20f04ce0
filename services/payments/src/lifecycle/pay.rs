//! A Confirm: the intent ([*] → pending, the lease taken), a repeat of it (the first
//! outcome), and a new attempt after a decline (failed → pending).

use uuid::Uuid;

use super::transitions::{self, NewPayment};
use super::{Lease, Lifecycle, MAX_CHARGE_ATTEMPTS};
use crate::clients::holds::PaymentStart;
use crate::domain::{HoldKey, Order, Payment, PaymentStatus, method_digest};
use crate::error::Error;
use crate::provider::ProviderName;

impl Lifecycle {
    /// Confirms and pays `fan`'s hold `key` with the payment method `method`.
    ///
    /// Before any charge, holds moves the hold into its payment window (at least
    /// [`super::Settings::payment_window`] from now) and answers its price, fixed at the
    /// claim: a payment that starts while the hold is alive is never refunded for our own
    /// latency. Returns the order: paid with tickets, or refunded (reason hold expired)
    /// when the hold died between the charge and the booking anyway. A repeated call
    /// returns the first outcome without charging again.
    ///
    /// PostgreSQL round trips, each one statement in its own transaction: a first
    /// confirm 5 (the payment by hold key, StartPayment in holds, the intent, ConfirmHold
    /// in holds, the capture with its tickets), whatever the number of seats; a replay
    /// of a finished confirm 2 (the payment, its tickets).
    ///
    /// # Errors
    /// [`Error::HoldNotFound`] (absent or another fan's); [`Error::HoldReleased`] and
    /// [`Error::HoldExpired`] (nothing charged); [`Error::PriceMissing`];
    /// [`Error::PaymentDeclined`]; [`Error::PaymentAbandoned`];
    /// [`Error::IdempotencyKeyReused`]; [`Error::InProgress`] (a duplicate that
    /// outwaited [`super::Settings::duplicate_wait`]); [`Error::ProviderUnavailable`]
    /// and [`Error::Dependency`] (the payment stays pending and is finished later);
    /// [`Error::Database`].
    pub async fn pay(&self, fan: &str, key: HoldKey, method: &str) -> Result<Order, Error> {
        if let Some(existing) = self.payment_by_hold(key).await? {
            return self.duplicate(existing, fan, method).await;
        }
        let started = self
            .holds
            .start_payment(key, fan, self.settings.payment_window)
            .await
            .inspect_err(|error| match error {
                Error::HoldExpired => self.metrics.confirm("hold_expired"),
                Error::HoldReleased => self.metrics.confirm("hold_released"),
                _ => {}
            })?;
        let (hold, amount) = match started {
            PaymentStart::Started { hold, amount } => (hold, amount),
            // Booked with no payment read above: a concurrent confirm got there in
            // between; its row answers.
            PaymentStart::Booked => {
                return match self.payment_by_hold(key).await? {
                    Some(existing) => self.duplicate(existing, fan, method).await,
                    None => Err(Error::HoldNotFound),
                };
            }
        };
        let lease = self.lease();
        let new = NewPayment {
            id: Uuid::new_v4(),
            hold_key: key,
            event_id: hold.event_id,
            fan_id: fan.to_owned(),
            amount,
            method_digest: Some(method_digest(method)),
        };
        let Some(payment) = self.record_intent(&new, lease).await? else {
            let existing = self
                .payment_by_hold(key)
                .await?
                .ok_or_else(|| Error::CorruptRow(format!("payment for hold {key} vanished")))?;
            return self.duplicate(existing, fan, method).await;
        };
        self.metrics.confirm("new");
        tracing::info!(payment_id = %payment.id, amount_minor = payment.amount.amount_minor, "payment intent recorded");
        self.charge_and_book(payment, method, lease, self.provider.clone())
            .await
    }

    /// [*] → pending: records the intent (see [`transitions::insert_intent`]) with the
    /// provider this process charges through: the simulator is the column's default, so
    /// its intent is the one statement; any other provider's name is written in the
    /// intent's transaction, so no payment is ever recorded under a provider it was not
    /// charged through.
    async fn record_intent(
        &self,
        new: &NewPayment,
        lease: Lease,
    ) -> Result<Option<Payment>, Error> {
        let name = self.provider.name();
        if name == ProviderName::Sim {
            return transitions::insert_intent(&self.pool, new, lease).await;
        }
        let mut tx = self.pool.begin().await?;
        let payment = transitions::insert_intent(&mut *tx, new, lease).await?;
        if let Some(payment) = &payment {
            transitions::record_provider(&mut tx, payment.id, name).await?;
        }
        tx.commit().await?;
        Ok(payment)
    }

    /// A Confirm for a hold that already has a payment. With the payment's own method it
    /// gets the payment's outcome (waiting for it while it runs); with another method it
    /// is refused ([`Error::IdempotencyKeyReused`]), unless the provider declined the
    /// last attempt: then it is a new attempt (see [`Self::next_attempt`]).
    async fn duplicate(&self, existing: Payment, fan: &str, method: &str) -> Result<Order, Error> {
        if existing.fan_id != fan {
            return Err(Error::HoldNotFound);
        }
        let digest = method_digest(method);
        if existing.method_digest.is_some_and(|kept| kept != digest) {
            if existing.status == PaymentStatus::Failed && existing.declined {
                return self.next_attempt(existing, fan, method, &digest).await;
            }
            self.metrics.confirm("key_reused");
            return Err(Error::IdempotencyKeyReused);
        }
        self.metrics.confirm("duplicate");
        self.await_outcome(existing, Some(method)).await
    }

    /// failed (declined) → pending: charges a declined payment again with another
    /// method, a new attempt under its own provider idempotency key
    /// ([`Payment::charge_key`]), at most [`MAX_CHARGE_ATTEMPTS`] in all, while the hold
    /// is still in its payment window. The attempt before was declined, so this can
    /// never be a second charge.
    async fn next_attempt(
        &self,
        declined: Payment,
        fan: &str,
        method: &str,
        digest: &[u8; 32],
    ) -> Result<Order, Error> {
        if declined.charge_attempt >= MAX_CHARGE_ATTEMPTS {
            return Err(Error::PaymentDeclined(format!(
                "{MAX_CHARGE_ATTEMPTS} payment methods were declined for this hold"
            )));
        }
        // A new attempt goes to the payment's own provider.
        let provider = self.provider_for(declined.id).await?;
        // The hold must still be alive: holds answers HOLD_EXPIRED (nothing charged) once
        // the payment window that the first attempt opened has passed.
        self.holds
            .start_payment(declined.hold_key, fan, self.settings.payment_window)
            .await?;
        let lease = self.lease();
        let moved = {
            let mut conn = self.pool.acquire().await?;
            transitions::next_attempt(
                &mut conn,
                declined.id,
                declined.charge_attempt,
                digest,
                lease,
            )
            .await?
        };
        match moved {
            Some(payment) => {
                self.metrics.confirm("new_attempt");
                tracing::info!(payment_id = %payment.id, attempt = payment.charge_attempt, "declined payment: new attempt with another method");
                self.charge_and_book(payment, method, lease, provider).await
            }
            // Another Confirm started an attempt first: its outcome, if it is this method's.
            None => {
                let now = self
                    .payment_by_id(declined.id)
                    .await?
                    .ok_or_else(|| Error::CorruptRow("payment vanished".into()))?;
                if now.method_digest.as_ref() == Some(digest) {
                    self.await_outcome(now, Some(method)).await
                } else {
                    Err(Error::IdempotencyKeyReused)
                }
            }
        }
    }
}
