//! [`GrpcServer`]: the tonic server every stadium service runs.
//!
//! Besides the service's own gRPC services it always serves
//! - `grpc.health.v1.Health`: `""` and every added service SERVING while running,
//!   NOT_SERVING once shutdown starts;
//! - reflection (`grpc.reflection.v1` and `v1alpha`) listing the services this server
//!   actually serves, described from [`stadium_proto::FILE_DESCRIPTOR_SET`];
//!
//! and wraps every request in tower middleware, outermost first: CORS for the origins
//! listed in [`ServerOptions::web_origins`] and gRPC-web translation ([`crate::web`]),
//! a `grpc.server` span
//! continuing the caller's W3C trace context (`stadium_telemetry::ServerTraceLayer`),
//! request metrics (outside the timeout, so timeouts are counted), load shedding of the
//! methods given a concurrency limit ([`crate::shed`]) and a per-request timeout
//! answering `DEADLINE_EXCEEDED`.
//!
//! Shutdown, when the token passed to [`GrpcServer::serve`] is cancelled: report
//! NOT_SERVING (and end health watches, which would otherwise hold their connection
//! open; a `Check` that still reaches the draining server gets NOT_FOUND), close the
//! listener, let in-flight requests finish, and return once every connection is closed
//! or the grace period has passed, whichever comes first. Connections still open after
//! the grace period are left to the runtime's shutdown (their tasks are detached).

use std::{
    collections::{HashMap, HashSet},
    convert::Infallible,
    net::SocketAddr,
    sync::Arc,
    time::Duration,
};

use opentelemetry::metrics::Meter;
use tokio::net::TcpListener;
use tokio_stream::{StreamExt, wrappers::TcpListenerStream};
use tokio_util::sync::CancellationToken;
use tonic::{
    body::Body,
    server::NamedService,
    service::{Routes, RoutesBuilder},
    transport::Server,
};
use tonic_health::{ServingStatus, server::HealthReporter};
use tower::{Service, ServiceBuilder};

use crate::{
    KitError,
    metrics::MetricsLayer,
    shed::{MethodLimit, ShedLayer},
    timeout::DeadlineLayer,
    tls::Tls,
};

/// Settings of a [`GrpcServer`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The service's name (`holds`, `payments`, …): log field and metric attribute
    /// `service.name`.
    pub service_name: &'static str,
    /// Longest time one request may take before the caller gets `DEADLINE_EXCEEDED`.
    pub request_timeout: Duration,
    /// Once shutdown starts, how long in-flight requests may run before `serve` returns
    /// anyway.
    pub grace_period: Duration,
    /// TLS to serve with (callers' client certificates verified against its authority,
    /// see [`crate::tls`]); `None` serves plaintext (development only).
    pub tls: Option<Tls>,
    /// Where to serve `grpc.health.v1.Health` alone, in plaintext, besides the main
    /// listener: for probes that cannot speak TLS (Kubernetes' gRPC probes). `None`:
    /// health is served on the main listener only.
    pub health_addr: Option<SocketAddr>,
    /// Origins whose pages may call the server from a browser (gRPC-web, see
    /// [`crate::web`]); empty: none but the server's own.
    pub web_origins: Vec<crate::web::WebOrigin>,
}

/// A gRPC server with health, reflection, timeouts, metrics and graceful shutdown.
///
/// ```no_run
/// # async fn run(svc: stadium_proto::holds::v1::holds_server::HoldsServer<impl stadium_proto::holds::v1::holds_server::Holds>) -> Result<(), stadium_kit::KitError> {
/// use std::time::Duration;
/// use stadium_kit::server::{GrpcServer, ServerOptions};
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let shutdown = stadium_kit::shutdown::shutdown_on_signals();
/// GrpcServer::new(ServerOptions {
///     service_name: "holds",
///     request_timeout: Duration::from_secs(5),
///     grace_period: Duration::from_secs(10),
///     tls: None,
///     health_addr: None,
///     web_origins: Vec::new(),
/// })
/// .add_service(svc)
/// .serve(listener, shutdown)
/// .await
/// # }
/// ```
#[derive(Debug)]
pub struct GrpcServer {
    options: ServerOptions,
    routes: RoutesBuilder,
    services: Vec<&'static str>,
    health: HealthReporter,
    meter: Option<Meter>,
    method_timeouts: HashMap<String, Duration>,
    method_limits: HashMap<String, MethodLimit>,
}

impl GrpcServer {
    /// A server with only health and reflection; add the service's own with
    /// [`add_service`](Self::add_service).
    pub fn new(options: ServerOptions) -> Self {
        Self {
            options,
            routes: RoutesBuilder::default(),
            services: Vec::new(),
            health: HealthReporter::new(),
            meter: None,
            method_timeouts: HashMap::new(),
            method_limits: HashMap::new(),
        }
    }

    /// Gives the RPC at `path` (`/package.Service/Method`) its own budget instead of
    /// [`ServerOptions::request_timeout`], for a method that waits on slower work than
    /// the rest (a payment provider, say); the longer of the two applies.
    pub fn with_method_timeout(mut self, path: impl Into<String>, limit: Duration) -> Self {
        self.method_timeouts
            .insert(path.into(), limit.max(self.options.request_timeout));
        self
    }

    /// Runs at most `limit` calls of the RPC at `path` (`/package.Service/Method`) at
    /// once on this server; the calls beyond are answered at once with
    /// `RESOURCE_EXHAUSTED`/`OVERLOADED` and `retry_after_ms` = `retry_after` (see
    /// [`crate::shed`]) instead of waiting for their deadline.
    pub fn with_method_concurrency(
        mut self,
        path: impl Into<String>,
        limit: usize,
        retry_after: Duration,
    ) -> Self {
        self.method_limits
            .insert(path.into(), MethodLimit::new(limit, retry_after));
        self
    }

    /// Serves `svc` (any tonic-generated `…Server<T>`, possibly wrapped in an
    /// interceptor) under its `NamedService::NAME`, reports it in health and reflection.
    pub fn add_service<S>(mut self, svc: S) -> Self
    where
        S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes.add_service(svc);
        self.services.push(S::NAME);
        self
    }

    /// Records request metrics with `meter` instead of the global meter provider's
    /// `stadium-kit` meter (tests use this to read what was recorded).
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The reporter behind the health service, for a service that wants to report
    /// NOT_SERVING itself (its database went away, say) while it runs.
    pub fn health_reporter(&self) -> HealthReporter {
        self.health.clone()
    }

    /// Serves on `listener` until `shutdown` is cancelled, then drains (see the module
    /// documentation) and returns.
    ///
    /// # Errors
    /// [`KitError::Listener`] when the listener has no local address or the health
    /// address cannot be bound,
    /// [`KitError::Reflection`] when the descriptor sets do not decode, and
    /// [`KitError::Transport`] when the TLS material is unusable or the HTTP/2 server
    /// fails.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), KitError> {
        let Self {
            options,
            routes,
            services,
            health,
            meter,
            method_timeouts,
            method_limits,
        } = self;
        let tls = options.tls.clone();
        let addr = listener.local_addr().map_err(KitError::Listener)?;

        let health_service = tonic_health::pb::health_server::HealthServer::new(
            tonic_health::server::HealthService::from_health_reporter(health.clone()),
        );
        let probe_listener = match options.health_addr {
            Some(health_addr) => Some(
                TcpListener::bind(health_addr)
                    .await
                    .map_err(KitError::Listener)?,
            ),
            None => None,
        };
        let mut routes = routes;
        routes.add_service(health_service.clone());
        let mut names = services.clone();
        names.extend([
            tonic_health::pb::health_server::SERVICE_NAME,
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]);
        routes.add_service(reflection(&names).build_v1()?);
        routes.add_service(reflection(&names).build_v1alpha()?);
        let routes: Routes = routes.routes();

        for name in std::iter::once("").chain(services.iter().copied()) {
            health
                .set_service_status(name, ServingStatus::Serving)
                .await;
        }

        let meter = meter.unwrap_or_else(|| opentelemetry::global::meter("stadium-kit"));
        let known: HashSet<&'static str> = names.iter().copied().collect();
        let layers = ServiceBuilder::new()
            .option_layer(crate::web::cors(&options.web_origins))
            .layer(tonic_web::GrpcWebLayer::new())
            .layer(stadium_telemetry::ServerTraceLayer)
            .layer(MetricsLayer::new(&meter, options.service_name, known))
            .layer(ShedLayer {
                per_method: Arc::new(method_limits),
            })
            .layer(DeadlineLayer {
                limit: options.request_timeout,
                per_method: Arc::new(method_timeouts),
            })
            .into_inner();

        // Small request/response messages: Nagle would add up to 40 ms per call.
        let incoming = TcpListenerStream::new(listener).map(|conn| {
            conn.inspect(|stream| {
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::debug!(%error, "cannot set TCP_NODELAY");
                }
            })
        });

        let stopping = {
            let shutdown = shutdown.clone();
            let mut health = health.clone();
            let all: Vec<&'static str> = std::iter::once("").chain(services).collect();
            async move {
                shutdown.cancelled().await;
                tracing::info!("shutting down: not serving, closing the listener, draining");
                for name in &all {
                    health
                        .set_service_status(*name, ServingStatus::NotServing)
                        .await;
                }
                // Dropping the status senders ends every health Watch stream (after it
                // has delivered NOT_SERVING), so those streams do not hold the drain.
                for name in &all {
                    health.clear_service_status(name).await;
                }
            }
        };

        // HTTP/1.1 too: browsers send gRPC-web over it where no HTTP/2 is negotiated.
        let mut builder = Server::builder().accept_http1(true);
        if let Some(tls) = &tls {
            builder = builder.tls_config(tls.server_config())?;
        }
        // The probe port answers until the main server has drained, so probes read
        // NOT_SERVING during the drain instead of a refused connection.
        let probes = probe_listener.map(|listener| {
            tracing::info!(addr = ?listener.local_addr().ok(), "serving gRPC health in plaintext for probes");
            tokio::spawn(
                Server::builder()
                    .add_service(health_service.clone())
                    .serve_with_incoming(TcpListenerStream::new(listener)),
            )
        });
        tracing::info!(service = options.service_name, %addr, tls = tls.is_some(), "serving gRPC");
        let server = builder
            .layer(layers)
            .add_routes(routes)
            .serve_with_incoming_shutdown(incoming, stopping);
        tokio::pin!(server);

        let grace = options.grace_period;
        let served = tokio::select! {
            result = &mut server => result,
            () = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(
                    grace_period_ms = grace.as_millis(),
                    "grace period over with connections still open; stopping anyway"
                );
                Ok(())
            }
        };
        if let Some(probes) = probes {
            probes.abort();
        }
        served?;
        tracing::info!(service = options.service_name, "stopped");
        Ok(())
    }
}

fn reflection<'a>(names: &[&'static str]) -> tonic_reflection::server::Builder<'a> {
    names.iter().fold(
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(stadium_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET),
        |builder, name| builder.with_service_name(*name),
    )
}
