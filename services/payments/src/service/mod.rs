//! The payment flow, with no tonic types: record the intent keyed by the hold key,
//! charge the provider with that key outside any transaction, book through holds, then
//! capture (tickets) or refund in one short transaction.
//!
//! Who may drive an unfinished payment is decided by a lease on its row (taken with a
//! conditional `UPDATE`, database clock): the request that recorded the intent holds it
//! first; a duplicate waits for the outcome; a retry after a failure, a provider notice
//! or the reconciler takes over once the lease is given back or has lapsed. Every state
//! change is itself conditional on the state it leaves, and every provider call carries
//! an idempotency key, so two drivers racing anyway still charge once, book once and
//! refund once.

mod flow;
mod notices;
mod orders;
mod reconcile;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::clients::holds::HoldsGateway;
use crate::clients::waiting_room::AdmissionReporter;
use crate::domain::ticket_code::TicketSigner;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::provider::{PaymentProvider, ProviderError};

pub use notices::NoticeOutcome;
pub use orders::{CompRequest, OrderKey, OrderPage, PageRequest, format_cursor, parse_cursor};
pub use reconcile::ReconcileReport;

/// Timing of the flow.
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

/// The payments operations.
#[derive(Debug)]
pub struct PaymentsService {
    pool: PgPool,
    provider: Arc<dyn PaymentProvider>,
    holds: HoldsGateway,
    signer: TicketSigner,
    metrics: Arc<Metrics>,
    settings: Settings,
    notice_secret: Vec<u8>,
    /// Told when a fan's order is paid; `None`: nobody is told.
    admissions: Option<AdmissionReporter>,
}

impl PaymentsService {
    /// The operations over `pool`, charging through `provider`, booking through `holds`,
    /// signing tickets with `signer`, verifying provider notices with `notice_secret`.
    pub fn new(
        pool: PgPool,
        provider: Arc<dyn PaymentProvider>,
        holds: HoldsGateway,
        signer: TicketSigner,
        metrics: Arc<Metrics>,
        settings: Settings,
        notice_secret: Vec<u8>,
    ) -> Self {
        Self {
            pool,
            provider,
            holds,
            signer,
            metrics,
            settings,
            notice_secret,
            admissions: None,
        }
    }

    /// Tells the waiting room through `reporter` when a fan's order is paid.
    pub fn with_admission_reporter(mut self, reporter: AdmissionReporter) -> Self {
        self.admissions = Some(reporter);
        self
    }

    /// The ticket signer (its public half verifies codes offline).
    pub fn signer(&self) -> &TicketSigner {
        &self.signer
    }

    /// The database pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Counts a provider notice delivery with `outcome` in `payments.notices` (for
    /// deliveries refused before they reach [`PaymentsService::apply_notice`]).
    pub fn count_notice(&self, outcome: &'static str) {
        self.metrics.notice(outcome);
    }

    /// The provider payment `id` was charged through, if this process has it: each
    /// payment is only ever asked about, refunded or charged again at its own provider.
    ///
    /// # Errors
    /// [`Error::ProviderNotConfigured`] when the payment's provider is another;
    /// [`Error::OrderNotFound`] when there is no such payment; [`Error::Database`].
    async fn provider_for(&self, id: uuid::Uuid) -> Result<Arc<dyn PaymentProvider>, Error> {
        let name = {
            let mut conn = self.pool.acquire().await?;
            crate::store::provider_of(&mut conn, id).await?
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
}
