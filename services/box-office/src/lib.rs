//! The box office: venues, events and price categories, opening / pausing / closing a
//! sale, the live admission rate, blocked seats, comps, refunds, sales reports and the
//! invariant canary, for box-office staff and SREs (admin tokens with roles). Owns the
//! `catalog` schema.
//!
//! For now a skeleton: it serves health and reflection, and every RPC of
//! `stadium.box_office.v1.BoxOffice` answers `UNIMPLEMENTED` until issue 7 builds it.
//! [`serve`] is what `main` and the tests (and the all-in-one runner) call.

pub mod config;
pub mod error;
pub mod grpc;

use secrecy::ExposeSecret;
use stadium_kit::server::GrpcServer;
use stadium_proto::box_office::v1::box_office_server::BoxOfficeServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;
pub use error::Error;

/// The service's name in logs, metrics (`service.name`) and traces.
pub const SERVICE_NAME: &str = "box-office";

/// The port `--listen` defaults to (on 127.0.0.1).
pub const DEFAULT_PORT: u16 = stadium_kit::args::ports::BOX_OFFICE;

/// Serves the box-office API on `listener` until `shutdown` is cancelled, then drains
/// in-flight requests (at most `--grace-period-ms`) and returns.
///
/// With `--database-url` set, a connection pool is opened first, so a wrong URL fails
/// at start rather than on the first call; without it the service runs standalone.
///
/// # Errors
/// [`Error::Database`] when the database cannot be reached, [`Error::Server`] when the
/// gRPC server fails.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let db = match &config.database_url {
        Some(url) => {
            let options = stadium_db::PoolOptions {
                application_name: SERVICE_NAME.to_owned(),
                ..stadium_db::PoolOptions::default()
            };
            let pool = stadium_db::connect(url.expose_secret(), &options)
                .await
                .map_err(Error::Database)?;
            tracing::info!("database reachable");
            Some(pool)
        }
        None => {
            tracing::info!("no --database-url: running without a database");
            None
        }
    };
    let service = grpc::BoxOfficeService::new(db);
    GrpcServer::new(config.common.server_options(SERVICE_NAME))
        .add_service(BoxOfficeServer::new(service))
        .serve(listener, shutdown)
        .await?;
    Ok(())
}
