//! The payments service: confirms a fan's hold and takes the money exactly once, keyed
//! by the hold key; refunds when the hold died before the booking; issues tickets whose
//! codes verify offline; finishes whatever a crash left half done.
//! Owns the `payments` schema (`payments.payments`, `payments.tickets`,
//! `payments.provider_notices`).
//!
//! The life of a payment is written once, in [`lifecycle`] (its states and transitions:
//! `docs/payments.md`): holds' `StartPayment` moves the hold into its payment window
//! and answers the price fixed at the claim; record the intent (`INSERT … ON CONFLICT
//! (hold_key) DO NOTHING`), charge the [provider](mod@provider) with the hold key as
//! idempotency key outside any transaction, book through holds' `ConfirmHold`, then in
//! one short transaction either capture with tickets or, when the hold is gone, refund
//! under `refund:<hold key>`. A lease on the payment row says who drives it; a
//! [`reconciler`] takes over payments whose driver died. Confirm, provider notices, the
//! reconciler, refunds and comps are entry points into it ([`service`]).
//!
//! Layout: [`config`] (flags), [`grpc`] (the tonic service), [`domain`] (ids, states,
//! ticket codes), [`lifecycle`] (every change of a payment's state, and the statements
//! that make it), [`store`] (reads, notices, the reconciler's schedule), [`service`]
//! (the entry points and reads), [`clients`] (holds, the waiting room),
//! [provider](mod@provider) (the provider trait, the simulated provider and the Stripe
//! adapter), [`webhook`] (Stripe's webhooks over HTTP), [`auth`], [`reconciler`],
//! [`metrics`], [`error`] (the one error table).

pub mod auth;
pub mod clients;
pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod lifecycle;
pub mod metrics;
pub mod provider;
pub mod reconciler;
pub mod service;
pub mod store;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use stadium_kit::StartError;
use stadium_kit::body_limit::{BodyLimit, MAX_CALL_BYTES};
use stadium_kit::server::GrpcServer;
use stadium_proto::payments::v1::payments_server::PaymentsServer;
use stadium_tokens::VerificationKeys;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::{Config, ProviderChoice};
pub use error::Error;

use crate::domain::ticket_code::TicketSigner;
use crate::provider::PaymentProvider;
use crate::provider::sim::{Faults, SimulatedProvider};

/// The service's name in logs, metrics (`service.name`) and traces.
pub const SERVICE_NAME: &str = "payments";

/// The port `--listen` defaults to (on 127.0.0.1).
pub const DEFAULT_PORT: u16 = stadium_kit::args::ports::PAYMENTS;

/// A built service's parts, for embedding (tests, an all-in-one runner).
#[derive(Debug, Clone)]
pub struct Parts {
    /// The operations.
    pub core: Arc<service::PaymentsService>,
    /// The credential checks.
    pub auth: Arc<auth::Authenticator>,
}

/// Connects to the database and holds (lazily), and builds the service from `config`,
/// charging through `provider`.
///
/// # Errors
/// [`StartError::Config`] for bad keys or flags; [`StartError::Database`];
/// [`StartError::Migrate`].
pub async fn build(
    config: &Config,
    provider: Arc<dyn PaymentProvider>,
) -> Result<Parts, StartError> {
    let metrics = Arc::new(metrics::Metrics::new(&stadium_telemetry::meter(
        SERVICE_NAME,
    )));
    build_with_metrics(config, provider, metrics).await
}

/// As [`build`], recording the service's metrics into `metrics` (tests read them back
/// through their own meter provider).
///
/// # Errors
/// As [`build`].
pub async fn build_with_metrics(
    config: &Config,
    provider: Arc<dyn PaymentProvider>,
    metrics: Arc<metrics::Metrics>,
) -> Result<Parts, StartError> {
    config.common.admit(SERVICE_NAME, &config.conveniences())?;
    config.check_provider()?;
    let identity = VerificationKeys::from_jwks_json(&config.identity_jwks)
        .map_err(|e| StartError::Config(format!("--identity-jwks: {e}")))?;
    let auth = auth::Authenticator::new(
        identity,
        &config.identity_issuer,
        config.common.service_recognition(),
    )
    .map_err(|e| StartError::Config(e.to_string()))?;
    let signer = match config.ticket_seed().map_err(StartError::Config)? {
        Some(seed) => TicketSigner::from_seed(&seed),
        None => {
            let mut seed = [0u8; 32];
            getrandom::getrandom(&mut seed)
                .map_err(|e| StartError::Config(format!("no randomness for a ticket key: {e}")))?;
            tracing::warn!(
                "no --ticket-signing-seed: tickets of this run stop verifying after a restart"
            );
            TicketSigner::from_seed(&seed)
        }
    };
    tracing::info!(public_key = %signer.verifier().public_key_hex(), "ticket codes signed with Ed25519");
    let pool = stadium_db::connect(
        config.database_url.expose_secret(),
        &stadium_db::PoolOptions {
            max_connections: config.database_max_connections,
            application_name: SERVICE_NAME.to_owned(),
            seq_scans: false,
            ..stadium_db::PoolOptions::default()
        },
    )
    .await?;
    if config.migrate {
        stadium_db::migrate(&pool).await?;
    }
    let tls = config.common.tls.load(SERVICE_NAME)?;
    let holds_channel = channel("--holds-url", &config.holds_url, tls.as_ref())?;
    let bearer = config
        .service_token
        .as_ref()
        .map(|token| stadium_kit::outbound::Bearer::new(token.expose_secret()))
        .transpose()
        .map_err(|e| StartError::Config(format!("--service-token: {e}")))?;
    let holds = clients::holds::HoldsGateway::new(
        holds_channel,
        bearer.clone(),
        Duration::from_millis(config.holds_timeout_ms),
    );
    let mut core = service::PaymentsService::new(
        pool,
        provider,
        holds,
        signer,
        metrics,
        config.settings(),
        config
            .provider_notice_secret
            .expose_secret()
            .as_bytes()
            .to_vec(),
    );
    if !config.waiting_room_url.is_empty() {
        let waiting_room = channel("--waiting-room-url", &config.waiting_room_url, tls.as_ref())?;
        core = core.with_admission_reporter(clients::waiting_room::AdmissionReporter::new(
            waiting_room,
            bearer,
            Duration::from_millis(config.holds_timeout_ms),
        ));
    }
    Ok(Parts {
        core: Arc::new(core),
        auth: Arc::new(auth),
    })
}

/// A channel to the service at `uris` (the values of `flag`), balanced over its
/// replicas (see [`stadium_kit::balance::channel`]).
fn channel(
    flag: &str,
    uris: &[http::Uri],
    tls: Option<&stadium_kit::tls::Tls>,
) -> Result<tonic::transport::Channel, StartError> {
    stadium_kit::balance::channel(flag, uris, tls, |endpoint| {
        endpoint.connect_timeout(Duration::from_secs(2))
    })
}

/// Serves the payments API on `listener` until `shutdown` is cancelled, then drains
/// in-flight requests (at most `--grace-period-ms`) and returns. Charges go to Stripe
/// with `--provider stripe`; else to the standalone simulated provider at
/// `--provider-url`, else to an in-process one (latency from
/// `--sim-provider-latency-ms`).
///
/// # Errors
/// As [`build`] and [`provider()`]; [`StartError::Server`].
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let provider = provider(&config)?;
    let parts = build(&config, provider).await?;
    serve_parts(&config, parts, listener, shutdown).await
}

/// The provider the flags choose (see [`serve`]).
///
/// # Errors
/// [`StartError::Config`] for unusable provider flags or an unreadable secret file.
pub fn provider(config: &Config) -> Result<Arc<dyn PaymentProvider>, StartError> {
    config.check_provider()?;
    if config.provider == ProviderChoice::Stripe {
        let stripe = provider::stripe::StripeProvider::new(
            &config.stripe.api_url,
            &config.stripe.secret_key()?,
            Duration::from_millis(config.provider_timeout_ms),
        )
        .map_err(|e| StartError::Config(format!("--stripe-api-url: {e}")))?;
        tracing::info!(api = %config.stripe.api_url, "charging through stripe");
        return Ok(Arc::new(stripe));
    }
    Ok(if config.provider_url.is_empty() {
        let sim = SimulatedProvider::new();
        sim.set_faults(Faults {
            latency: Duration::from_millis(config.sim_provider_latency_ms),
            ..Faults::default()
        });
        Arc::new(sim)
    } else {
        let tls = config.common.tls.load(SERVICE_NAME)?;
        let remote = channel("--provider-url", &config.provider_url, tls.as_ref())?;
        Arc::new(provider::remote::RemoteProvider::new(remote))
    })
}

/// As [`serve`] with parts already built. The reconciler runs inside this future (one
/// pass at start, then every `--reconcile-interval-ms`), so dropping the future stops
/// it too; on shutdown it is cancelled before the server drains. With
/// `--webhook-listen`, Stripe's webhooks are served there too, until shutdown.
///
/// # Errors
/// [`StartError::Config`] for an unreadable webhook secret; [`StartError::Server`]
/// (the webhook address not bound, or its listener failing).
pub async fn serve_parts(
    config: &Config,
    parts: Parts,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let reconciler = async {
        if let Some(interval) = config.reconcile_interval() {
            reconciler::run(
                parts.core.clone(),
                interval,
                config.reconcile_batch,
                shutdown.clone(),
            )
            .await;
        }
    };
    let api = grpc::PaymentsApi::new(parts.core.clone(), parts.auth.clone());
    let flows = config.flow_timeout();
    let server = GrpcServer::new(config.common.server_options(SERVICE_NAME)?)
        .with_method_timeout(grpc::CONFIRM_PATH, flows)
        .with_method_timeout(grpc::REFUND_ORDER_PATH, flows)
        .add_service(BodyLimit::new(PaymentsServer::new(api), MAX_CALL_BYTES))
        .serve(listener, shutdown.clone());
    let webhooks = match config.stripe.webhook_listen {
        Some(addr) => {
            let hooks = webhook::StripeWebhooks::new(
                parts.core.clone(),
                config.stripe.webhook_secret()?,
                config.stripe.webhook_tolerance(),
            );
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| StartError::Server(stadium_kit::KitError::Listener(e)))?;
            Some((listener, hooks))
        }
        None => None,
    };
    let webhooks = async {
        let Some((listener, hooks)) = webhooks else {
            return;
        };
        if let Err(error) = webhook::serve(listener, hooks, shutdown.clone()).await {
            // The API keeps serving: the reconciler still finishes every payment
            // without webhooks; but a person must look.
            tracing::error!(%error, "stripe webhooks stopped");
        }
    };
    let (served, (), ()) = tokio::join!(server, reconciler, webhooks);
    served.map_err(StartError::from)
}
