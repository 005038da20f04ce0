//! The life of a payment, written once: intent, charge, booking, capture, refund, and
//! the lease that serialises the drivers of an unfinished payment. This module is the
//! only code that changes a payment's status, lease or refund columns; the statements
//! that do it are private to it (`transitions.rs`, `lease.rs`), and each is conditional
//! on the state it leaves, so of two drivers racing on one payment exactly one moves it.
//! The states, every transition with its trigger, condition, provider call and what
//! holds is told, the lease and the attempts are described in `docs/payments.md`.
//!
//! The entry points in [`crate::service`] only find the payment a request is about and
//! hand it here; they decide nothing about states:
//!
//! | entry point | here |
//! |---|---|
//! | `Confirm` | [`Lifecycle::pay`] |
//! | `ProviderNotice`, Stripe's webhook | [`Lifecycle::apply_notice`] |
//! | the reconciler | [`Lifecycle::reconcile`] |
//! | `RefundOrder` | [`Lifecycle::refund`] |
//! | `IssueComp` | [`Lifecycle::comp`] |
//!
//! Files: `pay.rs` (a Confirm: the intent, duplicates, new attempts), `charge.rs` (the
//! charge and what the provider's answer does), `book.rs` (booking through holds, the
//! capture), `refund.rs`, `outcome.rs` (waiting for a running payment or taking it
//! over), `reconcile.rs` (the provider's record of an unfinished or abandoned
//! payment), `notice.rs` (the provider's notices), `comp.rs`, `lease.rs`,
//! `transitions.rs` (the statements).

mod book;
mod charge;
mod comp;
mod lease;
mod notice;
mod outcome;
mod pay;
mod reconcile;
mod refund;
mod transitions;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

use crate::clients::holds::HoldsGateway;
use crate::clients::waiting_room::AdmissionReporter;
use crate::domain::ticket_code::TicketSigner;
use crate::domain::{HoldKey, Order, Payment};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::provider::{PaymentProvider, ProviderError};
use crate::store;

use lease::Lease;

pub use comp::CompRequest;
pub use notice::NoticeEffect;
pub use reconcile::Visit;

/// Most charge attempts for one hold (one per payment method the provider declined),
/// so a hold cannot be used to try card after card.
pub const MAX_CHARGE_ATTEMPTS: u32 = 5;

/// Timing of the lifecycle.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long a driver owns an unfinished payment (must exceed a provider call plus a
    /// holds call).
    pub lease: Duration,
    /// How long a duplicate `Confirm` waits for the first one before answering
    /// `IN_PROGRESS`.
    pub duplicate_wait: Duration,
    /// Bound of every provider call; past it the outcome is unknown and the payment
    /// stays pending.
    pub provider_timeout: Duration,
    /// How long a hold is kept from the start of its payment (holds' StartPayment),
    /// 1 s to 15 min.
    pub payment_window: Duration,
    /// A pending payment with no charge at the provider this old is marked failed by
    /// the reconciler (the confirm died before charging).
    pub abandon_after: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            duplicate_wait: Duration::from_secs(2),
            provider_timeout: Duration::from_secs(10),
            payment_window: Duration::from_secs(60),
            abandon_after: Duration::from_secs(600),
        }
    }
}

/// The one driver of payments' states: what it needs to charge (the provider), book
/// and release (holds), issue tickets (the signer) and tell the waiting room.
#[derive(Debug)]
pub struct Lifecycle {
    pool: PgPool,
    provider: Arc<dyn PaymentProvider>,
    holds: HoldsGateway,
    signer: TicketSigner,
    metrics: Arc<Metrics>,
    settings: Settings,
    /// Told when a fan's order is paid; `None`: nobody is told.
    admissions: Option<AdmissionReporter>,
}

impl Lifecycle {
    /// Payments over `pool`, charged through `provider`, booked through `holds`, their
    /// tickets signed with `signer`, timed by `settings`.
    pub fn new(
        pool: PgPool,
        provider: Arc<dyn PaymentProvider>,
        holds: HoldsGateway,
        signer: TicketSigner,
        metrics: Arc<Metrics>,
        settings: Settings,
    ) -> Self {
        Self {
            pool,
            provider,
            holds,
            signer,
            metrics,
            settings,
            admissions: None,
        }
    }

    /// Tells the waiting room through `reporter` when a fan's order is paid.
    pub fn with_admission_reporter(mut self, reporter: AdmissionReporter) -> Self {
        self.admissions = Some(reporter);
        self
    }

    /// How old a pending payment never seen charged must be before the reconciler
    /// gives it up.
    pub fn abandon_after(&self) -> Duration {
        self.settings.abandon_after
    }

    /// The ticket signer (its public half verifies codes offline).
    pub fn signer(&self) -> &TicketSigner {
        &self.signer
    }

    /// The provider payment `id` was charged through, if this process has it: each
    /// payment is only ever asked about, refunded or charged again at its own provider.
    ///
    /// # Errors
    /// [`Error::ProviderNotConfigured`] when the payment's provider is another;
    /// [`Error::OrderNotFound`] when there is no such payment; [`Error::Database`].
    async fn provider_for(&self, id: Uuid) -> Result<Arc<dyn PaymentProvider>, Error> {
        let name = {
            let mut conn = self.pool.acquire().await?;
            store::provider_of(&mut conn, id).await?
        };
        match name {
            Some(name) if name == self.provider.name() => Ok(self.provider.clone()),
            Some(name) => Err(Error::ProviderNotConfigured(name)),
            None => Err(Error::OrderNotFound),
        }
    }

    /// Runs a provider call under the timeout, recording its latency.
    async fn provider_call<T>(
        &self,
        operation: &'static str,
        call: impl std::future::Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let started = Instant::now();
        let result = match tokio::time::timeout(self.settings.provider_timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::Timeout),
        };
        self.metrics.provider_call(operation, started.elapsed());
        result
    }

    async fn payment_by_hold(&self, key: HoldKey) -> Result<Option<Payment>, Error> {
        let mut conn = self.pool.acquire().await?;
        store::by_hold_key(&mut conn, key).await
    }

    async fn payment_by_id(&self, id: Uuid) -> Result<Option<Payment>, Error> {
        let mut conn = self.pool.acquire().await?;
        store::by_id(&mut conn, id).await
    }

    /// The order of `payment` (its tickets read now).
    async fn order(&self, payment: Payment) -> Result<Order, Error> {
        let mut conn = self.pool.acquire().await?;
        let tickets = store::tickets(&mut conn, payment.id).await?;
        Ok(Order { payment, tickets })
    }

    async fn order_by_id(&self, id: Uuid) -> Result<Order, Error> {
        let payment = self
            .payment_by_id(id)
            .await?
            .ok_or_else(|| Error::CorruptRow(format!("payment {id} vanished")))?;
        self.order(payment).await
    }
}
