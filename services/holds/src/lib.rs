//! The holds service: fans claim seats of one section for a few minutes, payments book
//! them, the box office blocks and comps them, and no seat is ever claimed twice.
//!
//! PostgreSQL decides: a partial unique index over `(event_id, seat_id)` of the rows
//! that are `held`, `booked` or `blocked` admits at most one active claim per seat;
//! a claim is one statement (`holds.claim`, its own transaction) that inserts in
//! ascending seat order, so overlapping claims never deadlock and never split the seats
//! between them; a lapsed hold counts as free inside the claim itself and a sweeper
//! only tidies up. Per-fan limits are decided under a transaction-scoped advisory lock
//! on (event, fan) inside that statement.
//!
//! Layout: [`config`] (flags), [`grpc`] (the tonic service), [`domain`] (ids and rules,
//! no wire or database types), [`store`] (SQL), [`service`] (transactions and retries),
//! [`auth`] (tokens), [`revocations`] (admission tokens the waiting room revoked),
//! [`clients`] (the waiting room's keys and revocations, reports of admissions used),
//! [`sweeper`], [`metrics`], [`section_load`] (per-section load written for SREs),
//! [`error`] (the one error table).

pub mod auth;
pub mod catalog_copy;
pub mod clients;
pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod metrics;
pub mod revocations;
pub mod section_load;
pub mod service;
pub mod shards;
pub mod store;
pub mod sweeper;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use stadium_db::{PoolOptions, RetryPolicy};
use stadium_kit::StartError;
use stadium_kit::background::Background;
use stadium_kit::body_limit::{BodyLimit, MAX_CALL_BYTES};
use stadium_kit::server::GrpcServer;
use stadium_proto::holds::v1::holds_server::HoldsServer;
use stadium_tokens::VerificationKeys;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;

/// A running service's parts, for embedding (tests, an all-in-one runner).
#[derive(Debug, Clone)]
pub struct Parts {
    /// The operations.
    pub service: Arc<service::HoldsService>,
    /// The credential checks.
    pub auth: Arc<auth::Authenticator>,
    /// Where used admissions are reported (no-show tracking); `None`: nowhere.
    pub admission_use: Option<clients::admission_use::AdmissionUse>,
}

/// Connects, builds the service from `config` and returns its parts.
///
/// # Errors
/// [`StartError::Config`] for bad keys or flags; [`StartError::Database`];
/// [`StartError::Migrate`].
pub async fn build(config: &Config) -> Result<Parts, StartError> {
    config.validate().map_err(StartError::Config)?;
    let links = match &config.admission_jwks {
        Some(json) => WaitingRoomLinks::fixed(Arc::new(auth::StaticJwks(json.clone()))),
        None => {
            let tls = config.common.tls.load("holds")?;
            let channel = stadium_kit::balance::channel(
                "--waiting-room-url",
                &config.waiting_room_url,
                tls.as_ref(),
                |endpoint| endpoint.connect_timeout(Duration::from_secs(2)),
            )?;
            let bearer = config
                .service_token
                .as_ref()
                .map(|token| stadium_kit::outbound::Bearer::new(token.expose_secret()))
                .transpose()
                .map_err(|e| StartError::Config(format!("--service-token: {e}")))?;
            WaitingRoomLinks {
                keys: Arc::new(clients::waiting_room::WaitingRoomJwks::new(
                    channel.clone(),
                    Duration::from_secs(2),
                )),
                revocations: Arc::new(clients::waiting_room::WaitingRoomRevocations::new(
                    channel.clone(),
                    revocations::Freshness::default().fetch_timeout,
                )),
                admission_use: Some(clients::admission_use::AdmissionUse::spawn(
                    channel,
                    bearer,
                    Duration::from_secs(2),
                )),
                freshness: revocations::Freshness::default(),
            }
        }
    };
    build_with_links(config, links).await
}

/// What holds learns from and tells the waiting room.
#[derive(Clone)]
pub struct WaitingRoomLinks {
    /// The admission signing keys.
    pub keys: Arc<dyn auth::JwksSource>,
    /// The revoked admissions.
    pub revocations: Arc<dyn revocations::RevocationSource>,
    /// Where used admissions are reported; `None`: nowhere (no waiting room to tell).
    pub admission_use: Option<clients::admission_use::AdmissionUse>,
    /// How fresh the copies of the revocations are kept.
    pub freshness: revocations::Freshness,
}

impl WaitingRoomLinks {
    /// Keys from `keys`, nothing revoked, no reports: no waiting room behind.
    pub fn fixed(keys: Arc<dyn auth::JwksSource>) -> Self {
        Self {
            keys,
            revocations: Arc::new(revocations::NoRevocations),
            admission_use: None,
            freshness: revocations::Freshness::default(),
        }
    }
}

/// As [`build`], with admission keys from `source` instead of the flags (an embedder
/// holding the waiting room in-process, or a test rotating keys); nothing is revoked.
///
/// # Errors
/// As [`build`].
pub async fn build_with_source(
    config: &Config,
    source: Arc<dyn auth::JwksSource>,
) -> Result<Parts, StartError> {
    build_with_links(config, WaitingRoomLinks::fixed(source)).await
}

/// As [`build`], with the waiting room reached through `links`.
///
/// # Errors
/// As [`build`].
pub async fn build_with_links(
    config: &Config,
    links: WaitingRoomLinks,
) -> Result<Parts, StartError> {
    let source = links.keys;
    config.common.admit("holds", &config.conveniences())?;
    let identity = VerificationKeys::from_jwks_json(&config.identity_jwks)
        .map_err(|e| StartError::Config(format!("--identity-jwks: {e}")))?;
    let admission = auth::AdmissionKeys::new(
        source,
        &config.admission_issuer,
        Duration::from_millis(config.admission_refresh_min_ms),
    )
    .await
    .map_err(|e| StartError::Config(e.to_string()))?;
    let auth = auth::Authenticator::new(
        identity,
        &config.identity_issuer,
        admission,
        revocations::Revocations::new(links.revocations, links.freshness),
        config.common.service_recognition(),
    )
    .map_err(|e| StartError::Config(e.to_string()))?;

    let options = PoolOptions {
        max_connections: config.database_max_connections,
        acquire_timeout: Duration::from_millis(config.database_acquire_timeout_ms),
        application_name: "holds".to_owned(),
        seq_scans: false,
        ..PoolOptions::default()
    };
    let pool = stadium_db::connect(&config.database_url, &options).await?;
    if config.migrate {
        stadium_db::migrate(&pool).await?;
    }
    let shards = Arc::new(
        shards::Shards::connect(pool, &config.shards, &options)
            .await
            .map_err(StartError::Database)?,
    );
    for (name, shard) in shards.others() {
        if config.migrate {
            stadium_db::migrate(shard).await?;
        }
        shards::register(shard, name)
            .await
            .map_err(|e| StartError::Config(format!("--shard {name}: {e}")))?;
    }
    let metrics = Arc::new(metrics::Metrics::new(&stadium_telemetry::meter("holds")));
    let retry = RetryPolicy {
        max_attempts: config.claim_max_attempts,
        ..RetryPolicy::default()
    };
    Ok(Parts {
        service: Arc::new(service::HoldsService::new(
            shards,
            metrics,
            retry,
            config.batching(),
        )),
        auth: Arc::new(auth),
        admission_use: links.admission_use,
    })
}

/// Serves the holds gRPC service on `listener` until `shutdown` is cancelled, with the
/// background sweeper running (unless `--sweep-interval-ms 0`) and the per-section load
/// written (unless `--section-load-interval-ms 0`); on shutdown both are cancelled and
/// awaited before this returns.
///
/// # Errors
/// As [`build`]; [`StartError::Server`].
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let parts = build(&config).await?;
    serve_parts(&config, parts, listener, shutdown).await
}

/// As [`serve`] with parts already built (so an embedder can keep handles to them).
///
/// # Errors
/// [`StartError::Server`].
pub async fn serve_parts(
    config: &Config,
    parts: Parts,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let mut background = Background::new(&shutdown);
    let sweeper = config.sweep_interval().map(|interval| {
        sweeper::spawn(
            parts.service.clone(),
            interval,
            config.sweep_batch,
            config.seat_history_keep(),
            background.stop(),
        )
    });
    background.keep("sweeper", sweeper);
    let load_writer = config.section_load_interval().map(|interval| {
        section_load::spawn(
            Arc::clone(parts.service.metrics()),
            parts.service.shards().clone(),
            interval,
            background.stop(),
        )
    });
    background.keep("section load writer", load_writer);
    let copier = catalog_copy::spawn(parts.service.shards().clone(), background.stop());
    background.keep("catalog copy", Some(copier));
    let api = grpc::HoldsApi::new(parts.service, parts.auth).reporting_use(parts.admission_use);
    let served = GrpcServer::new(config.common.server_options("holds")?)
        .add_service(BodyLimit::new(HoldsServer::new(api), MAX_CALL_BYTES))
        .serve(listener, shutdown)
        .await;
    background.finish().await;
    served.map_err(StartError::from)
}

/// The address to listen on by default (`127.0.0.1:50053`) unless `--listen` says.
pub fn listen_addr(config: &Config) -> SocketAddr {
    config.common.listen_addr(stadium_kit::args::ports::HOLDS)
}
