//! Stripe's webhooks, over plain HTTP/1.1 (`POST /webhooks/stripe`; TLS is the ingress'
//! job, as Stripe only posts to https endpoints): each delivery's `Stripe-Signature` is
//! checked ([`crate::provider::stripe::signature`]), its event read as a provider notice
//! ([`crate::provider::stripe::events`]) and applied as the gRPC `ProviderNotice` path
//! applies one ([`PaymentsService::apply_notice`]).
//!
//! Answers, so that Stripe redelivers exactly what was not recorded (Stripe retries
//! any non-2xx answer, with backoff, for up to three days):
//!
//! - 200: applied, applied before (same event id), or nothing for payments;
//! - 400: no valid signature, a timestamp outside the tolerance, or an unreadable
//!   event; nothing changes;
//! - 413: a body over 64 KiB (Stripe's events are a few KiB);
//! - 503: deferred (another driver is finishing the payment): try again later;
//! - 500: the database failed.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::provider::stripe::events::{self, Reading};
use crate::provider::stripe::signature;
use crate::service::{NoticeOutcome, PaymentsService};

/// The path Stripe posts to.
pub const STRIPE_PATH: &str = "/webhooks/stripe";

/// Largest webhook body read, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The webhook endpoint's state: the service, the endpoint's signing secret and the
/// timestamp tolerance. Cheap to clone.
#[derive(Clone)]
pub struct StripeWebhooks {
    core: Arc<PaymentsService>,
    secret: Arc<SecretString>,
    tolerance: Duration,
}

impl std::fmt::Debug for StripeWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeWebhooks")
            .field("tolerance", &self.tolerance)
            .finish_non_exhaustive()
    }
}

impl StripeWebhooks {
    /// Applies verified deliveries to `core`, checking signatures against `secret`
    /// (`whsec_…`) with `tolerance` between a delivery's timestamp and now.
    pub fn new(core: Arc<PaymentsService>, secret: SecretString, tolerance: Duration) -> Self {
        Self {
            core,
            secret: Arc::new(secret),
            tolerance,
        }
    }

    /// The HTTP routes: `POST /webhooks/stripe`, bodies bounded by [`MAX_BODY_BYTES`].
    pub fn router(self) -> Router {
        Router::new()
            .route(STRIPE_PATH, post(receive))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(self)
    }
}

/// Serves the webhook routes on `listener` until `shutdown` is cancelled, then lets
/// deliveries in flight finish.
///
/// # Errors
/// The listener failed.
pub async fn serve(
    listener: TcpListener,
    webhooks: StripeWebhooks,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, path = STRIPE_PATH, "serving stripe webhooks");
    }
    axum::serve(listener, webhooks.router())
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

async fn receive(
    State(hooks): State<StripeWebhooks>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let header = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    if let Err(error) = signature::verify(
        hooks.secret.expose_secret().as_bytes(),
        header,
        &body,
        unix_now(),
        hooks.tolerance,
    ) {
        tracing::warn!(%error, "stripe webhook refused");
        hooks.core.count_notice("refused");
        return (StatusCode::BAD_REQUEST, "signature refused\n");
    }
    let notice = match events::read(&body) {
        Ok(Reading::Notice(notice)) => notice,
        Ok(Reading::Irrelevant(why)) => {
            tracing::debug!(why, "stripe webhook irrelevant");
            return (StatusCode::OK, "ignored\n");
        }
        Err(error) => {
            tracing::warn!(%error, "stripe webhook unreadable");
            hooks.core.count_notice("refused");
            return (StatusCode::BAD_REQUEST, "unreadable event\n");
        }
    };
    match hooks.core.apply_notice(&notice).await {
        Ok(NoticeOutcome::Applied | NoticeOutcome::Duplicate) => (StatusCode::OK, "recorded\n"),
        Ok(NoticeOutcome::Deferred) => (StatusCode::SERVICE_UNAVAILABLE, "deferred\n"),
        Err(error) => {
            tracing::warn!(notice_id = %notice.notice_id, %error, "stripe webhook not applied");
            (StatusCode::INTERNAL_SERVER_ERROR, "not recorded\n")
        }
    }
}
