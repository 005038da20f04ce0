//! The seat-map service: the read side of a sale. It owns no tables; it reads the
//! catalog's layout views and the holds' `unavailable_seats` view and answers:
//!
//! - `GetLayout`: an event's static geometry, labels and categories, cached per event;
//! - `GetAvailability`: per-section bitmaps over seat ids, cached per (event, section)
//!   for at most the staleness bound with single-flight loads, so database reads are
//!   bounded by sections × refreshes, not by fans; every answer carries `as_of` and its
//!   age;
//! - `SuggestSeats`: best available blocks (see `stadium-seating`) from the cached
//!   availability.
//!
//! Layout: [`config`] (flags), [`grpc`] (the tonic service and wire conversion),
//! [`domain`] (ids, layouts, snapshots), [`store`] (SQL), [`service`] (the caches),
//! [`metrics`], [`error`] (the one error table).

pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod metrics;
pub mod offered;
pub mod service;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use stadium_db::PoolOptions;
use stadium_kit::StartError;
use stadium_kit::body_limit::{BodyLimit, MAX_CALL_BYTES};
use stadium_kit::server::GrpcServer;
use stadium_proto::seat_map::v1::seat_map_server::SeatMapServer;
use stadium_tokens::{FanSessionVerifier, VerificationKeys};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;

/// A running service's parts, for embedding (tests, an all-in-one runner, benchmarks).
#[derive(Debug, Clone)]
pub struct Parts {
    /// The caches and operations (its metrics hold the in-process load counters).
    pub service: Arc<service::SeatMapService>,
    /// Verifies fan sessions.
    pub fans: Arc<FanSessionVerifier>,
}

/// Connects and builds the service from `config`.
///
/// # Errors
/// [`StartError::Config`] for unusable keys; [`StartError::Database`];
/// [`StartError::Migrate`].
pub async fn build(config: &Config) -> Result<Parts, StartError> {
    config.common.admit("seat-map", &config.conveniences())?;
    let keys = VerificationKeys::from_jwks_json(&config.identity_jwks)
        .map_err(|e| StartError::Config(format!("--identity-jwks: {e}")))?;
    let fans = FanSessionVerifier::new(
        keys,
        &config.identity_issuer,
        stadium_tokens::audience::SEAT_MAP,
    )
    .map_err(|e| StartError::Config(format!("--identity-issuer: {e}")))?;
    let options = PoolOptions {
        max_connections: config.database_max_connections,
        application_name: "seat-map".to_owned(),
        ..PoolOptions::default()
    };
    let pool = stadium_db::connect(&config.database_url, &options).await?;
    if config.migrate {
        stadium_db::migrate(&pool).await?;
    }
    let shards = stadium_db::Shards::connect(pool, &config.shards, &options).await?;
    let metrics = Arc::new(metrics::Metrics::new(&stadium_telemetry::meter("seat-map")));
    Ok(Parts {
        service: Arc::new(service::SeatMapService::new(
            shards,
            config.staleness(),
            config.layout_ttl(),
            config.layout_cache_events,
            metrics,
        )),
        fans: Arc::new(fans),
    })
}

/// Serves the seat-map gRPC service on `listener` until `shutdown` is cancelled.
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

/// As [`serve`] with parts already built (so an embedder keeps handles to them).
///
/// # Errors
/// [`StartError::Server`].
pub async fn serve_parts(
    config: &Config,
    parts: Parts,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    GrpcServer::new(config.common.server_options("seat-map")?)
        .add_service(BodyLimit::new(
            SeatMapServer::new(grpc::SeatMapApi::new(parts.service, parts.fans)),
            MAX_CALL_BYTES,
        ))
        .serve(listener, shutdown)
        .await
        .map_err(StartError::from)
}

/// The address to listen on by default (`127.0.0.1:50052`) unless `--listen` says.
pub fn listen_addr(config: &Config) -> SocketAddr {
    config
        .common
        .listen_addr(stadium_kit::args::ports::SEAT_MAP)
}
