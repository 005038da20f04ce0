//! The box office: venues, events and price categories, opening / pausing / closing a
//! sale, the live admission rate, blocked seats, comps, refunds, sales reports and the
//! invariant canary, for box-office staff and SREs (admin tokens with roles). Owns the
//! `catalog` schema.
//!
//! Every call needs an admin token (role `box_office` for changes; `box_office` or
//! `sre` for reads, reports, the admission rate and the canary). Every change to the
//! catalog is written to `catalog.admin_audit` in the transaction of the change. Sale
//! changes are conditional updates (`UPDATE … WHERE status = <allowed from>`); once
//! committed, the event's state is pushed to the waiting room, retried, idempotent.
//! Blocks, comps and refunds go through holds and payments, so the same unique index
//! decides for staff as for fans.
//!
//! Layout: [`config`] (flags), [`auth`] (tokens and roles), [`grpc`] (the tonic
//! service and wire conversion), [`service`] (transactions), [`domain`], [`store`]
//! (SQL), [`clients`] (holds and payments; the waiting room: sale changes and seat
//! counts), [`canary`],
//! [`error`] (the one error table). The `stadiumctl` command line over this API is its
//! own application crate.

pub mod auth;
pub mod canary;
pub mod clients;
pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod presales;
pub mod service;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use stadium_kit::StartError;
use stadium_kit::background::Background;
use stadium_kit::body_limit::BodyLimit;
use stadium_kit::outbound::Bearer;
use stadium_kit::server::GrpcServer;
use stadium_kit::tls::Tls;
use stadium_proto::box_office::v1::box_office_server::BoxOfficeServer;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_tokens::VerificationKeys;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub use config::Config;

/// The service's name in logs, metrics (`service.name`) and traces.
pub const SERVICE_NAME: &str = "box-office";

/// The port `--listen` defaults to (on 127.0.0.1).
pub const DEFAULT_PORT: u16 = stadium_kit::args::ports::BOX_OFFICE;

/// Largest `ImportVenue` request, in bytes: a seating plan of a 50,000-seat stadium as
/// pretix JSON is several megabytes, past tonic's 4 MiB default.
pub const MAX_IMPORT_BYTES: usize = 64 * 1024 * 1024;
/// Largest request of every other call, in bytes (a seat list of a whole section
/// fits many times over).
pub const MAX_CALL_BYTES: usize = stadium_kit::body_limit::MAX_CALL_BYTES;
/// Path of `ImportVenue`, the one call with [`MAX_IMPORT_BYTES`].
pub const IMPORT_VENUE_PATH: &str = "/stadium.box_office.v1.BoxOffice/ImportVenue";

/// A running box office's parts, for embedding (tests, an all-in-one runner).
#[derive(Debug, Clone)]
pub struct Parts {
    /// The operations.
    pub office: service::BoxOfficeService,
    /// The gRPC API.
    pub api: grpc::BoxOfficeApi,
    /// Verifies callers; also in front of the API, before a request body is read.
    pub auth: Arc<auth::Authenticator>,
    /// What the canary found last.
    pub canary: Arc<canary::CanaryStatus>,
    /// Reports seat counts to the waiting room; `None` without `--waiting-room-url`.
    pub reporter: Option<clients::seat_report::Reporter>,
    /// Sends every live event's configuration to the waiting room again; `None`
    /// without `--waiting-room-url`.
    pub resync: Option<clients::resync::Resync>,
    /// Refunds the orders of cancelled events; `None` without `--payments-url` or a
    /// service identity.
    pub cancellations: Option<clients::cancellation::Worker>,
}

/// A channel to the service at `uris` (the values of `flag`), balanced over its
/// replicas (see [`stadium_kit::balance::channel`]).
fn channel(flag: &str, uris: &[http::Uri], tls: Option<&Tls>) -> Result<Channel, StartError> {
    stadium_kit::balance::channel(flag, uris, tls, |endpoint| {
        endpoint
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(5))
    })
}

/// As [`channel`], `None` when the flag is unset (no URL).
fn optional_channel(
    flag: &str,
    uris: &[http::Uri],
    tls: Option<&Tls>,
) -> Result<Option<Channel>, StartError> {
    if uris.is_empty() {
        return Ok(None);
    }
    channel(flag, uris, tls).map(Some)
}

/// Connects to the database and builds the service from `config`; background work
/// (pushes retried later) stops when `shutdown` is cancelled.
///
/// # Errors
/// [`StartError::Config`] for unusable keys or flags; [`StartError::Database`];
/// [`StartError::Migrate`].
pub async fn build(config: &Config, shutdown: &CancellationToken) -> Result<Parts, StartError> {
    config.common.admit(SERVICE_NAME, &config.conveniences())?;
    let keys = VerificationKeys::from_jwks_json(&config.identity_jwks)
        .map_err(|e| StartError::Config(format!("--identity-jwks: {e}")))?;
    let auth = auth::Authenticator::new(keys, &config.identity_issuer)
        .map_err(|e| StartError::Config(format!("--identity-issuer: {e}")))?;
    let tls = config.common.tls.load(SERVICE_NAME)?;
    let bearer = config
        .service_token
        .as_ref()
        .map(|token| Bearer::new(token.expose_secret()))
        .transpose()
        .map_err(|e| StartError::Config(format!("--service-token: {e}")))?;
    let waiting_room = if config.waiting_room_url.is_empty() {
        tracing::warn!("no --waiting-room-url: sale changes are stored but not pushed");
        None
    } else {
        if bearer.is_none() && tls.is_none() {
            return Err(StartError::Config(
                "--waiting-room-url needs TLS (--tls-cert-file, --tls-key-file, --tls-ca-file) or, in development, --service-token".into(),
            ));
        }
        let urls = &config.waiting_room_url;
        Some((
            channel("--waiting-room-url", urls, tls.as_ref())?,
            bearer.clone(),
        ))
    };
    let payments = optional_channel("--payments-url", &config.payments_url, tls.as_ref())?;
    let upstream = clients::upstream::Upstream {
        holds: optional_channel("--holds-url", &config.holds_url, tls.as_ref())?
            .map(HoldsClient::new),
        payments: payments.clone().map(PaymentsClient::new),
        waiting_room: waiting_room
            .as_ref()
            .map(|(channel, _)| WaitingRoomClient::new(channel.clone())),
    };
    let options = stadium_db::PoolOptions {
        max_connections: config.database_max_connections,
        application_name: SERVICE_NAME.to_owned(),
        ..stadium_db::PoolOptions::default()
    };
    let pool = stadium_db::connect(config.database_url.expose_secret(), &options)
        .await
        .map_err(StartError::Database)?;
    if config.migrate {
        stadium_db::migrate(&pool).await?;
    }
    let shards = stadium_db::Shards::connect(pool.clone(), &config.shards, &options)
        .await
        .map_err(StartError::Database)?;
    let pusher = clients::push::Pusher::new(
        waiting_room.clone(),
        pool.clone(),
        config.push_attempts,
        shutdown.clone(),
    );
    let cancellations = match payments {
        Some(channel) if bearer.is_some() || tls.is_some() => Some(
            clients::cancellation::Worker::new(shards.clone(), channel, bearer.clone()),
        ),
        Some(_) => {
            tracing::warn!(
                "--payments-url without a service identity (TLS or, in development, --service-token): cancelled events are recorded but not refunded"
            );
            None
        }
        None => {
            tracing::warn!("no --payments-url: cancelled events are recorded but not refunded");
            None
        }
    };
    let office = service::BoxOfficeService::new(shards, pusher.clone(), config.canary_grace());
    let auth = Arc::new(auth);
    let api = grpc::BoxOfficeApi::new(office.clone(), Arc::clone(&auth), upstream);
    let resync = waiting_room
        .is_some()
        .then(|| clients::resync::Resync::new(office.clone(), pusher));
    let reporter = waiting_room.map(|(channel, token)| {
        clients::seat_report::Reporter::new(office.clone(), channel, token)
    });
    Ok(Parts {
        office,
        api,
        auth,
        canary: Arc::new(canary::CanaryStatus::default()),
        reporter,
        resync,
        cancellations,
    })
}

/// The API as served: a caller whose admin token does not verify for any box-office
/// role is refused before its request body is read, and bodies are capped per call
/// ([`MAX_IMPORT_BYTES`] for `ImportVenue`, [`MAX_CALL_BYTES`] for the rest), so no
/// stranger makes the server buffer megabytes. Each call still checks its own role.
fn api_behind_its_gate(
    api: grpc::BoxOfficeApi,
    auth: Arc<auth::Authenticator>,
) -> BodyLimit<InterceptedService<BoxOfficeServer<grpc::BoxOfficeApi>, auth::Gate>> {
    let server = BoxOfficeServer::new(api).max_decoding_message_size(MAX_IMPORT_BYTES);
    BodyLimit::new(
        InterceptedService::new(server, auth::Gate(auth)),
        MAX_CALL_BYTES,
    )
    .with_method(IMPORT_VENUE_PATH, MAX_IMPORT_BYTES)
}

/// Serves the box-office API on `listener` until `shutdown` is cancelled, with the
/// canary running (unless `--canary-interval-ms 0`), presales ended at their on-sale
/// time ([`presales`]), the refunds of cancelled events
/// (with payments; unless `--cancellation-interval-ms 0`) and, with a waiting room, the
/// inventory reporter (unless `--inventory-interval-ms 0`) and the resync (unless
/// `--waiting-room-resync-ms 0`), then drains in-flight requests (at most
/// `--grace-period-ms`), stops them all and returns.
///
/// # Errors
/// As [`build`]; [`StartError::Server`].
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), StartError> {
    let parts = build(&config, &shutdown).await?;
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
    let mut background = Background::new(&shutdown);
    let canary = config.canary_interval().map(|interval| {
        canary::spawn(
            parts.office.clone(),
            &stadium_telemetry::meter("box-office"),
            interval,
            parts.canary.clone(),
            background.stop(),
        )
    });
    background.keep("canary", canary);
    background.keep(
        "presale ends",
        Some(presales::spawn(parts.office.clone(), background.stop())),
    );
    let reporter =
        parts
            .reporter
            .clone()
            .zip(config.inventory_interval())
            .map(|(reporter, interval)| {
                clients::seat_report::spawn(reporter, interval, background.stop())
            });
    background.keep("seat report", reporter);
    let resync = parts
        .resync
        .clone()
        .zip(config.resync_interval())
        .map(|(resync, interval)| clients::resync::spawn(resync, interval, background.stop()));
    background.keep("waiting room resync", resync);
    let cancellations = parts
        .cancellations
        .clone()
        .zip(config.cancellation_interval())
        .map(|(worker, interval)| {
            clients::cancellation::spawn(worker, interval, background.stop())
        });
    background.keep("cancellation refunds", cancellations);
    let served = GrpcServer::new(config.common.server_options(SERVICE_NAME)?)
        .add_service(api_behind_its_gate(parts.api, parts.auth))
        .serve(listener, shutdown)
        .await;
    background.finish().await;
    served.map_err(StartError::from)
}
