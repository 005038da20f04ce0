//! The payments operations, with no tonic types: the entry points of a payment's life
//! and the reads around orders. Confirm ([`PaymentsService::confirm`]), provider
//! notices ([`PaymentsService::provider_notice`], [`PaymentsService::apply_notice`]),
//! the reconciler ([`PaymentsService::reconcile_once`]), box-office refunds
//! ([`PaymentsService::refund_order`]) and comps ([`PaymentsService::issue_comp`]) each
//! find what a request is about and hand it to [`crate::lifecycle`], which alone
//! decides and makes every change of a payment's state (`docs/payments.md`).

mod notices;
mod orders;
mod reconcile;

use std::sync::Arc;

use sqlx::PgPool;

use crate::clients::holds::HoldsGateway;
use crate::clients::waiting_room::AdmissionReporter;
use crate::domain::ticket_code::TicketSigner;
use crate::domain::{HoldKey, Order};
use crate::error::Error;
use crate::lifecycle::{Lifecycle, Settings};
use crate::metrics::Metrics;
use crate::provider::PaymentProvider;

pub use notices::NoticeOutcome;
pub use orders::{OrderKey, OrderPage, PageRequest, format_cursor, parse_cursor};
pub use reconcile::ReconcileReport;

/// The payments operations.
#[derive(Debug)]
pub struct PaymentsService {
    pool: PgPool,
    lifecycle: Lifecycle,
    metrics: Arc<Metrics>,
    notice_secret: Vec<u8>,
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
            lifecycle: Lifecycle::new(
                pool.clone(),
                provider,
                holds,
                signer,
                metrics.clone(),
                settings,
            ),
            pool,
            metrics,
            notice_secret,
        }
    }

    /// Tells the waiting room through `reporter` when a fan's order is paid.
    pub fn with_admission_reporter(mut self, reporter: AdmissionReporter) -> Self {
        self.lifecycle = self.lifecycle.with_admission_reporter(reporter);
        self
    }

    /// The ticket signer (its public half verifies codes offline).
    pub fn signer(&self) -> &TicketSigner {
        self.lifecycle.signer()
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

    /// Confirms and pays `fan`'s hold `key` with the payment method `method`: see
    /// [`Lifecycle::pay`].
    ///
    /// # Errors
    /// As [`Lifecycle::pay`].
    pub async fn confirm(&self, fan: &str, key: HoldKey, method: &str) -> Result<Order, Error> {
        self.lifecycle.pay(fan, key, method).await
    }
}
