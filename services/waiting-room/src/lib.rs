//! The stadium waiting room: a fair queue per event on Redis that turns a spike of fans
//! into a steady flow, admitting them at a fixed rate with signed admission tokens.
//!
//! - [`store`]: the queue in Redis, every multi-key step one atomic Lua script;
//! - [`cache`]: per-replica snapshots, so position polls cost no Redis round trip;
//! - [`domain`]: ids, positions and waits, the pre-queue shuffle;
//! - [`service`]: the operations in domain terms (join, status, steering, reports);
//! - [`auth`]: fan sessions, admin roles, admission tokens;
//! - [`tickets_seen`]: queue tickets verified once per replica;
//! - [`grpc`]: the `WaitingRoom` gRPC face, wire types only;
//! - [`config`]: flags and environment;
//! - [`clock`]: injectable time, so tests simulate minutes without sleeping;
//! - [`metrics`]: queue gauges and counters (OpenTelemetry).
//!
//! [`serve`] runs the service on a listener until a shutdown token is cancelled; the
//! binary and tests both call it.

pub mod auth;
pub mod cache;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod metrics;
pub mod service;
pub mod store;
pub mod tickets_seen;

use std::sync::Arc;
use std::time::Duration;

use stadium_kit::StartError;
use stadium_kit::body_limit::{BodyLimit, MAX_CALL_BYTES};
use stadium_kit::caller::ServiceRecognition;
use stadium_kit::server::{GrpcServer, ServerOptions};
use stadium_proto::waiting_room::v1::waiting_room_server::WaitingRoomServer;
use stadium_tokens::{
    AdminVerifier, AdmissionIssuer, AdmissionVerifier, FanSessionVerifier, QueueTicketKeys,
    QueueTickets, SigningKeyRing, VerificationKeys, audience,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::Error;

/// Everything [`serve`] needs, already validated (see [`config::Config`] for the flags
/// that build it).
pub struct Settings {
    /// Redis URL, `redis://host:port`; unused when [`Self::redis_cluster`] names nodes.
    pub redis_url: String,
    /// Seed nodes of a Redis Cluster holding the queues (`redis://host:port` each);
    /// empty: the single server at [`Self::redis_url`]. Every key of an event carries
    /// the event's hash tag, so each event lives on one slot of one master.
    pub redis_cluster: Vec<String>,
    /// How long a Redis command may wait for its answer before the call fails
    /// (`UNAVAILABLE`).
    pub redis_response_timeout: Duration,
    /// Prefix of every Redis key (no braces), e.g. `stadium:wr:`.
    pub key_prefix: String,
    /// Longest age of a cached queue snapshot answering polls (default 250 ms).
    pub snapshot_refresh: Duration,
    /// Pause between two status checks of a `WatchStatus` stream.
    pub watch_interval: Duration,
    /// Admission token lifetime for events that set none (default 10 min).
    pub default_admission_ttl: Duration,
    /// How long an inventory report steers admission.
    pub inventory_ttl: Duration,
    /// `iss` of queue tickets and admission tokens.
    pub issuer: String,
    /// Ed25519 keys signing admission tokens (the current one signs).
    pub admission_keys: SigningKeyRing,
    /// HMAC secrets of queue tickets, shared by every replica.
    pub ticket_keys: QueueTicketKeys,
    /// Public keys of the site's login, which signs fan sessions.
    pub session_keys: VerificationKeys,
    /// `iss` of fan sessions.
    pub session_issuer: String,
    /// Public keys that sign admin tokens.
    pub admin_keys: VerificationKeys,
    /// `iss` of admin tokens.
    pub admin_issuer: String,
    /// Time source ([`SystemClock`] in production).
    pub clock: Arc<dyn Clock>,
    /// gRPC server options (timeouts, grace period).
    pub server: ServerOptions,
    /// Joins running at once on this replica; the joins beyond are answered at once
    /// with `RESOURCE_EXHAUSTED`/`OVERLOADED` and [`Self::shed_retry_after`] instead of
    /// queueing until their deadline (see `stadium_kit::shed`). 0: no limit.
    pub max_concurrent_joins: usize,
    /// The `retry_after_ms` hint a shed join gets.
    pub shed_retry_after: Duration,
}

/// Path of `Join`, the call shed under a burst.
pub const JOIN_PATH: &str = "/stadium.waiting_room.v1.WaitingRoom/Join";

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("key_prefix", &self.key_prefix)
            .field("snapshot_refresh", &self.snapshot_refresh)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// A built waiting room's parts.
#[derive(Debug, Clone)]
pub struct Parts {
    /// The queue operations.
    pub service: Arc<service::WaitingRoomService>,
    /// The credential checks.
    pub auth: Arc<auth::Authenticator>,
}

/// Connects to Redis and builds the service from `settings`.
///
/// # Errors
/// [`StartError::Store`] when Redis is unreachable; [`StartError::Tokens`] for an
/// empty issuer name or unusable keys.
pub async fn build(settings: &Settings) -> Result<Parts, StartError> {
    let clock = Arc::clone(&settings.clock);
    let target = store::RedisTarget::from_flags(&settings.redis_url, &settings.redis_cluster);
    let store = store::Store::connect_to(
        &target,
        &settings.key_prefix,
        settings.redis_response_timeout,
        Arc::clone(&clock),
    )
    .await
    .map_err(StartError::store("queue store"))?;
    let metrics = metrics::Metrics::new(&opentelemetry::global::meter("waiting-room"));
    let refresh_ms = u64::try_from(settings.snapshot_refresh.as_millis()).unwrap_or(u64::MAX);
    let service = service::WaitingRoomService::new(service::Parts {
        cache: cache::SnapshotCache::new(
            store.clone(),
            Arc::clone(&clock),
            refresh_ms,
            metrics.clone(),
        ),
        store,
        clock: Arc::clone(&clock),
        tickets: QueueTickets::new(settings.ticket_keys.clone()).with_issuer(&settings.issuer)?,
        admission: AdmissionIssuer::new(settings.admission_keys.clone(), &settings.issuer)?
            .with_ttl(settings.default_admission_ttl)?,
        ring: settings.admission_keys.clone(),
        metrics,
        default_admission_ttl: settings.default_admission_ttl,
        inventory_ttl: settings.inventory_ttl,
    });
    let auth = auth::Authenticator::new(
        FanSessionVerifier::new(
            settings.session_keys.clone(),
            &settings.session_issuer,
            audience::WAITING_ROOM,
        )?,
        AdminVerifier::new(
            settings.admin_keys.clone(),
            &settings.admin_issuer,
            audience::WAITING_ROOM,
        )?,
        AdmissionVerifier::for_ring(&settings.admission_keys, &settings.issuer, audience::HOLDS)?,
        clock,
        ServiceRecognition::for_transport(settings.server.tls.is_some()),
    );
    Ok(Parts {
        service: Arc::new(service),
        auth: Arc::new(auth),
    })
}

/// Serves the waiting room on `listener` until `shutdown` is cancelled, then drains.
///
/// # Errors
/// As [`build`], and [`StartError::Server`] when the gRPC server fails.
pub async fn serve(
    settings: Settings,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let parts = build(&settings).await?;
    let api = grpc::WaitingRoomApi::new(
        parts.service,
        parts.auth,
        settings.watch_interval,
        shutdown.clone(),
    );
    let mut server = GrpcServer::new(settings.server.clone())
        .add_service(BodyLimit::new(WaitingRoomServer::new(api), MAX_CALL_BYTES));
    if settings.max_concurrent_joins > 0 {
        server = server.with_method_concurrency(
            JOIN_PATH,
            settings.max_concurrent_joins,
            settings.shed_retry_after,
        );
    }
    server.serve(listener, shutdown).await?;
    Ok(())
}
