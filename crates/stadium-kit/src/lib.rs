//! The service kit: what every stadium service needs around its own handlers.
//!
//! - [`shutdown`]: a [`CancellationToken`](tokio_util::sync::CancellationToken) cancelled
//!   on SIGTERM or Ctrl-C (a second signal exits at once);
//! - [`server`]: [`GrpcServer`](server::GrpcServer), a tonic server with `grpc.health.v1`,
//!   reflection, a per-request timeout answering `DEADLINE_EXCEEDED`, request metrics and
//!   a graceful drain bounded by a grace period;
//! - [`status`]: `tonic::Status` values carrying `google.rpc.ErrorInfo` (domain `stadium`);
//! - [`reason`]: every `ErrorInfo` reason, typed, for services and their clients;
//! - [`service_error`]: [`ServiceError`](service_error::ServiceError), the one conversion
//!   of a service's error to a status, and the rows every service shares;
//! - [`auth`]: the bearer token of a request;
//! - [`tls`]: TLS on every listener, mutual TLS between services ([`Tls`](tls::Tls));
//! - [`balance`]: one channel balancing calls over every replica of another service;
//! - [`caller`]: who calls a service-role RPC: a service by certificate, staff by token;
//! - [`dev_pki`]: a certificate authority generated for a development run;
//! - [`body_limit`]: request size limits per method ([`BodyLimit`](body_limit::BodyLimit));
//! - [`background`]: tasks beside the server, stopped after it drains;
//! - [`outbound`]: requests to another service (token, deadline, trace context);
//! - [`args`]: the flags every service shares ([`CommonArgs`](args::CommonArgs));
//! - [`mode`]: production and development modes ([`Mode`](mode::Mode));
//! - [`embedded`]: a service's flags when another process runs it (tests, benchmarks);
//! - [`StartError`]: why a service could not start (every service's `build`/`serve`);
//! - [`testing`]: loopback listeners and channels that retry until the server is up.

pub mod args;
pub mod auth;
pub mod background;
pub mod balance;
pub mod body_limit;
pub mod caller;
pub mod dev_pki;
pub mod embedded;
pub mod error;
mod metrics;
pub mod mode;
pub mod outbound;
pub mod reason;
pub mod server;
pub mod service_error;
pub mod shed;
pub mod shutdown;
mod start;
pub mod status;
pub mod testing;
mod timeout;
pub mod tls;
pub mod web;

pub use error::KitError;
pub use reason::Reason;
pub use service_error::ServiceError;
pub use start::StartError;
