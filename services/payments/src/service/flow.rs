//! Confirm: intent, charge, booking, capture or refund.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stadium_db::{RetryPolicy, retry_transient};
use uuid::Uuid;

use super::PaymentsService;
use crate::clients::holds::{Booking, PaymentStart};
use crate::domain::{HoldKey, Order, Payment, PaymentStatus, RefundReason, method_digest};
use crate::error::Error;
use crate::lifecycle::{self, Lease, NewPayment};
use crate::provider::{ChargeOutcome, ChargeRequest, PaymentProvider, ProviderName, RefundRequest};
use crate::store::{self, BookedSeat, NoticeMark};

/// How often a duplicate looks again while the first request runs.
const DUPLICATE_POLL: Duration = Duration::from_millis(25);

/// Most charge attempts for one hold (one per payment method the provider declined),
/// so a hold cannot be used to try card after card.
pub const MAX_CHARGE_ATTEMPTS: u32 = 5;

impl PaymentsService {
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
    /// [`Error::PaymentDeclined`]; [`Error::InProgress`] (a duplicate that outwaited
    /// [`super::Settings::duplicate_wait`]); [`Error::ProviderUnavailable`] and
    /// [`Error::Dependency`] (the payment stays pending and is finished later);
    /// [`Error::Database`].
    pub async fn confirm(&self, fan: &str, key: HoldKey, method: &str) -> Result<Order, Error> {
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
        let lease = Lease::new(self.settings.lease);
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

    /// Records the intent (see [`lifecycle::insert_intent`]) with the provider this process
    /// charges through: the simulator is the column's default, so its intent is the one
    /// statement; any other provider's name is written in the intent's transaction, so
    /// no payment is ever recorded under a provider it was not charged through.
    async fn record_intent(
        &self,
        new: &NewPayment,
        lease: Lease,
    ) -> Result<Option<Payment>, Error> {
        let name = self.provider.name();
        if name == ProviderName::Sim {
            return lifecycle::insert_intent(&self.pool, new, lease).await;
        }
        let mut tx = self.pool.begin().await?;
        let payment = lifecycle::insert_intent(&mut *tx, new, lease).await?;
        if let Some(payment) = &payment {
            lifecycle::record_provider(&mut tx, payment.id, name).await?;
        }
        tx.commit().await?;
        Ok(payment)
    }

    pub(super) async fn payment_by_hold(&self, key: HoldKey) -> Result<Option<Payment>, Error> {
        let mut conn = self.pool.acquire().await?;
        store::by_hold_key(&mut conn, key).await
    }

    pub(super) async fn payment_by_id(&self, id: Uuid) -> Result<Option<Payment>, Error> {
        let mut conn = self.pool.acquire().await?;
        store::by_id(&mut conn, id).await
    }

    /// The order of `payment` (its tickets read now).
    pub(super) async fn order(&self, payment: Payment) -> Result<Order, Error> {
        let mut conn = self.pool.acquire().await?;
        let tickets = store::tickets(&mut conn, payment.id).await?;
        Ok(Order { payment, tickets })
    }

    pub(super) async fn order_by_id(&self, id: Uuid) -> Result<Order, Error> {
        let payment = self
            .payment_by_id(id)
            .await?
            .ok_or_else(|| Error::CorruptRow(format!("payment {id} vanished")))?;
        self.order(payment).await
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

    /// Charges a declined payment again with another method: a new attempt under its own
    /// provider idempotency key ([`Payment::charge_key`]), at most
    /// [`MAX_CHARGE_ATTEMPTS`] in all, while the hold is still in its payment window.
    /// The attempt before was declined, so this can never be a second charge.
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
        let lease = Lease::new(self.settings.lease);
        let moved = {
            let mut conn = self.pool.acquire().await?;
            lifecycle::next_attempt(
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

    /// The final outcome of an existing payment: at once when it is final; else by
    /// taking over its lease when the last driver gave it back or died (C07: a retry
    /// finishes what a failed attempt started), else by waiting for the driver up to
    /// the duplicate wait.
    ///
    /// # Errors
    /// [`Error::InProgress`] when the driver did not finish in time;
    /// [`Error::PaymentDeclined`] for a declined payment, [`Error::PaymentAbandoned`] for
    /// one given up unconfirmed; as the flow it takes over.
    pub(super) async fn await_outcome(
        &self,
        mut payment: Payment,
        method: Option<&str>,
    ) -> Result<Order, Error> {
        let deadline = Instant::now() + self.settings.duplicate_wait;
        loop {
            match payment.status {
                PaymentStatus::Pending | PaymentStatus::RefundPending => {
                    let lease = Lease::new(self.settings.lease);
                    let taken = {
                        let mut conn = self.pool.acquire().await?;
                        lifecycle::take_lease(&mut conn, payment.id, lease).await?
                    };
                    if let Some(taken) = taken {
                        return self.drive(taken, method, lease).await;
                    }
                }
                PaymentStatus::Failed if payment.declined => {
                    return Err(Error::PaymentDeclined("the payment was declined".into()));
                }
                PaymentStatus::Failed => return Err(Error::PaymentAbandoned),
                PaymentStatus::Captured | PaymentStatus::Refunded | PaymentStatus::Comp => {
                    return self.order(payment).await;
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::InProgress);
            }
            tokio::time::sleep(DUPLICATE_POLL).await;
            payment = self
                .payment_by_id(payment.id)
                .await?
                .ok_or_else(|| Error::CorruptRow("payment vanished".into()))?;
        }
    }

    /// Drives an unfinished payment whose lease the caller holds to a final state.
    pub(super) async fn drive(
        &self,
        payment: Payment,
        method: Option<&str>,
        lease: Lease,
    ) -> Result<Order, Error> {
        match (payment.status, method) {
            (PaymentStatus::RefundPending, _) => self.finish_refund(payment, lease, None).await,
            (_, Some(method)) => match self.provider_for(payment.id).await {
                Ok(provider) => self.charge_and_book(payment, method, lease, provider).await,
                Err(error) => {
                    self.give_back(payment.id, lease).await;
                    Err(error)
                }
            },
            (_, None) => {
                let id = payment.id;
                self.resolve_pending(payment, lease).await?;
                self.order_by_id(id).await
            }
        }
    }

    /// Charges `payment` through `provider` (the payment's own) and books it.
    async fn charge_and_book(
        &self,
        payment: Payment,
        method: &str,
        lease: Lease,
        provider: Arc<dyn PaymentProvider>,
    ) -> Result<Order, Error> {
        let request = ChargeRequest {
            idempotency_key: payment.charge_key(),
            amount: payment.amount.clone(),
            method_token: method.to_owned(),
        };
        match self
            .provider_call("charge", provider.charge(&request))
            .await
        {
            Ok(ChargeOutcome::Succeeded { charge_id }) => {
                self.metrics.charge("succeeded");
                self.book(payment, &charge_id, lease, None).await
            }
            Ok(ChargeOutcome::Declined { reason }) => {
                self.metrics.charge("declined");
                let mut conn = self.pool.acquire().await?;
                lifecycle::mark_declined(&mut conn, payment.id).await?;
                Err(Error::PaymentDeclined(reason))
            }
            Err(error) => {
                self.metrics.charge("error");
                self.give_back(payment.id, lease).await;
                Err(Error::ProviderUnavailable(error.to_string()))
            }
        }
    }

    /// Books the hold of a charged payment: captured with tickets, or refunded when
    /// holds answers that the hold is gone. `notice` is marked applied in the same
    /// transaction as the final state change.
    pub(super) async fn book(
        &self,
        payment: Payment,
        charge_id: &str,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let booking = match self.holds.confirm(payment.hold_key, &payment.fan_id).await {
            Ok(booking) => booking,
            Err(error) => {
                self.give_back(payment.id, lease).await;
                return Err(error);
            }
        };
        match booking {
            Booking::Booked(hold) => {
                let seats: Vec<BookedSeat> = hold
                    .seat_ids
                    .iter()
                    .map(|&seat_id| BookedSeat {
                        section_id: hold.section_id,
                        seat_id,
                    })
                    .collect();
                let captured = retry_transient(
                    RetryPolicy::default(),
                    |_| {},
                    || self.capture(&payment, charge_id, &seats, notice),
                )
                .await;
                match captured {
                    Ok(Some(order)) => {
                        tracing::info!(payment_id = %payment.id, seats = seats.len(), "payment captured, tickets issued");
                        if let Some(admissions) = &self.admissions {
                            admissions.fan_done(payment.event_id, &payment.fan_id);
                        }
                        Ok(order)
                    }
                    Ok(None) => self.order_by_id(payment.id).await,
                    Err(error) => {
                        self.give_back(payment.id, lease).await;
                        Err(error)
                    }
                }
            }
            Booking::Gone => {
                tracing::info!(payment_id = %payment.id, "hold gone after the charge: refunding");
                // From failed too: the reconciler may have given the payment up while
                // this charge was landing; the money must still go back.
                self.refund_from(
                    payment.id,
                    &[PaymentStatus::Pending, PaymentStatus::Failed],
                    RefundReason::HoldExpired,
                    Some(charge_id),
                    lease,
                    notice,
                )
                .await
            }
        }
    }

    /// Captures `payment` with tickets for `seats`: one statement, or with `notice` a
    /// transaction that also marks the notice applied. `None` when another path moved
    /// the payment first.
    async fn capture(
        &self,
        payment: &Payment,
        charge_id: &str,
        seats: &[BookedSeat],
        notice: Option<&NoticeMark>,
    ) -> Result<Option<Order>, Error> {
        let Some(mark) = notice else {
            return lifecycle::capture(&self.pool, payment, charge_id, seats, &self.signer).await;
        };
        let mut tx = self.pool.begin().await?;
        let captured =
            lifecycle::capture(&mut *tx, payment, charge_id, seats, &self.signer).await?;
        let outcome = if captured.is_some() {
            "captured"
        } else {
            "already_done"
        };
        store::mark_notice(&mut tx, mark, Some(payment.id), outcome).await?;
        tx.commit().await?;
        Ok(captured)
    }

    /// Decides a refund (`from` → refund_pending, tickets void) and carries it out. When
    /// another request decided it first, waits for that one's outcome.
    ///
    /// # Errors
    /// [`Error::NotRefundable`] when the payment is in no state to refund; as
    /// [`PaymentsService::finish_refund`].
    pub(super) async fn refund_from(
        &self,
        id: Uuid,
        from: &[PaymentStatus],
        reason: RefundReason,
        charge_id: Option<&str>,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let decided = {
            let mut tx = self.pool.begin().await?;
            let moved =
                lifecycle::begin_refund(&mut tx, id, from, reason, charge_id, lease).await?;
            tx.commit().await?;
            moved
        };
        match decided {
            Some(payment) => self.finish_refund(payment, lease, notice).await,
            None => {
                let payment = self.payment_by_id(id).await?.ok_or(Error::OrderNotFound)?;
                match payment.status {
                    PaymentStatus::Refunded | PaymentStatus::RefundPending => {
                        // Boxed: waiting may drive the payment, which may refund again.
                        Box::pin(self.await_outcome(payment, None)).await
                    }
                    // A concurrent path finished it another way (captured): its answer.
                    _ if from.contains(&PaymentStatus::Pending) => self.order(payment).await,
                    other => Err(Error::NotRefundable(other.as_str())),
                }
            }
        }
    }

    /// Carries out a decided refund under the caller's lease: releases the seats when
    /// the box office refunded a booking, refunds at the provider under
    /// `refund:<hold key>`, then marks the payment refunded (and `notice` applied) in
    /// one transaction. Every step is idempotent, so a rerun after a crash is safe.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`]; [`Error::Dependency`]; [`Error::Database`]. The
    /// payment then stays refund_pending for the reconciler.
    pub(super) async fn finish_refund(
        &self,
        payment: Payment,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let result = self.finish_refund_steps(&payment, notice).await;
        if result.is_err() {
            self.give_back(payment.id, lease).await;
        }
        result?;
        self.order_by_id(payment.id).await
    }

    async fn finish_refund_steps(
        &self,
        payment: &Payment,
        notice: Option<&NoticeMark>,
    ) -> Result<(), Error> {
        // Before anything moves: the refund goes to the payment's own provider.
        let provider = self.provider_for(payment.id).await?;
        let reason = payment.refund_reason.unwrap_or(RefundReason::HoldExpired);
        if reason != RefundReason::HoldExpired {
            self.holds
                .release(payment.hold_key, reason.as_str())
                .await?;
        }
        let charge_id = payment
            .provider_charge_id
            .clone()
            .ok_or_else(|| Error::CorruptRow(format!("payment {}: no charge id", payment.id)))?;
        let request = RefundRequest {
            idempotency_key: payment.hold_key.refund_key(),
            charge_id,
            amount: payment.amount.clone(),
        };
        let refund_id = self
            .provider_call("refund", provider.refund(&request))
            .await
            .map_err(|e| Error::ProviderUnavailable(e.to_string()))?;
        let mut tx = self.pool.begin().await?;
        let moved = lifecycle::finish_refund(&mut tx, payment.id, &refund_id).await?;
        if let Some(mark) = notice {
            let outcome = if moved { "refunded" } else { "already_done" };
            store::mark_notice(&mut tx, mark, Some(payment.id), outcome).await?;
        }
        tx.commit().await?;
        if moved {
            self.metrics.refund(reason.as_str());
            tracing::info!(payment_id = %payment.id, reason = reason.as_str(), "payment refunded");
        }
        Ok(())
    }

    /// Gives a lease back after a failure, so a retry or the reconciler can take over
    /// at once. Best effort: if even this fails, the lease lapses on its own.
    pub(super) async fn give_back(&self, id: Uuid, lease: Lease) {
        let released = async {
            let mut conn = self.pool.acquire().await?;
            lifecycle::release_lease(&mut conn, id, lease).await
        };
        if let Err(error) = released.await {
            tracing::warn!(payment_id = %id, %error, "lease not given back; it will lapse");
        }
    }
}
