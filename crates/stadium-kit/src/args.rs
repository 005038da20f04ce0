//! The flags every service shares, flattened into each service's own config:
//!
//! ```
//! #[derive(clap::Parser)]
//! struct Config {
//!     #[command(flatten)]
//!     common: stadium_kit::args::CommonArgs,
//!     // the service's own flags
//! }
//! # use clap::Parser;
//! let config = Config::parse_from(["svc", "--listen", "0.0.0.0:50054"]);
//! assert_eq!(config.common.listen_addr(stadium_kit::args::ports::PAYMENTS).port(), 50054);
//! ```
//!
//! Every flag has an environment fallback, so a container sets `LISTEN_ADDR`,
//! `LOG_FORMAT`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT` instead of arguments.

use std::{
    net::{Ipv4Addr, SocketAddr},
    time::Duration,
};

use crate::mode::{self, Convenience, Mode};
use crate::server::ServerOptions;
use crate::tls::{PLAINTEXT, TlsArgs};

/// The port each service listens on when `--listen` is not given (on 127.0.0.1), so a
/// developer can run all five side by side without choosing ports.
pub mod ports {
    /// `waiting-room`.
    pub const WAITING_ROOM: u16 = 50051;
    /// `seat-map`.
    pub const SEAT_MAP: u16 = 50052;
    /// `holds`.
    pub const HOLDS: u16 = 50053;
    /// `payments`.
    pub const PAYMENTS: u16 = 50054;
    /// `box-office`.
    pub const BOX_OFFICE: u16 = 50055;
}

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, for a terminal.
    #[default]
    Text,
    /// One JSON object per line, for a log collector.
    Json,
}

/// Flags shared by every service (mode, listen address, logging, OpenTelemetry
/// export, request timeout, shutdown grace period).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// `production` refuses every development convenience (generated keys, the
    /// development issuer, a simulated payment provider, plaintext without TLS, a
    /// service token); `development` (local runs, tests) takes them, logged at WARN.
    #[arg(long, env = "STADIUM_MODE", value_enum, default_value_t = Mode::Production)]
    pub mode: Mode,

    /// Address to serve gRPC on, `host:port`. Use `0.0.0.0:<port>` in a container.
    /// Default: 127.0.0.1 and the service's own port (waiting-room 50051, seat-map 50052,
    /// holds 50053, payments 50054, box-office 50055); port 0 picks a free one.
    #[arg(long = "listen", env = "LISTEN_ADDR", value_name = "HOST:PORT")]
    pub listen: Option<SocketAddr>,

    /// Log line format: `text` for people, `json` for collectors.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Which logs to keep, as a tracing `EnvFilter` (e.g. `info,holds=debug`).
    #[arg(long, env = "RUST_LOG", default_value = "info", value_name = "FILTER")]
    pub log_filter: String,

    /// OTLP/gRPC collector endpoint for traces and metrics (e.g. `http://127.0.0.1:4317`).
    /// Unset: nothing is exported, logs only.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Longest time one request may run, in milliseconds; past it the caller gets
    /// DEADLINE_EXCEEDED.
    #[arg(long, env = "REQUEST_TIMEOUT_MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..), value_name = "MS")]
    pub request_timeout_ms: u64,

    /// On SIGTERM, how long in-flight requests may finish before the server stops
    /// anyway, in milliseconds.
    #[arg(
        long,
        env = "GRACE_PERIOD_MS",
        default_value_t = 10000,
        value_name = "MS"
    )]
    pub grace_period_ms: u64,

    /// Also serve `grpc.health.v1.Health` alone, in plaintext, on `host:port`: for
    /// probes that cannot speak TLS (Kubernetes' gRPC probes). It tells nothing but
    /// SERVING or NOT_SERVING.
    #[arg(
        long = "health-listen",
        env = "HEALTH_LISTEN_ADDR",
        value_name = "HOST:PORT"
    )]
    pub health_listen: Option<SocketAddr>,

    /// Origins whose web pages may call this service from a browser over gRPC-web
    /// (`https://tickets.example`; comma-separated, each `scheme://host[:port]`, no
    /// wildcard). Unset: browsers may call only from the service's own origin.
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", value_name = "ORIGIN",
          value_parser = crate::web::WebOrigin::parse, value_delimiter = ',',
          action = clap::ArgAction::Set)]
    pub cors_allowed_origins: Vec<crate::web::WebOrigin>,

    /// TLS: this service's certificate, key and the services' authority.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// Parses the address of another stadium service, for flags such as `--holds-url`:
/// an absolute `http://` or `https://` URI with a host (`http://127.0.0.1:50053`).
/// Use it as `#[arg(long, value_parser = stadium_kit::args::grpc_url)]`.
///
/// # Errors
/// A message saying what is wrong (clap prints it next to the flag).
pub fn grpc_url(value: &str) -> Result<http::Uri, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("not a URI ({e}); expected e.g. http://127.0.0.1:50053"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err("the scheme must be http:// or https://".to_owned()),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("a host is required, e.g. http://127.0.0.1:50053".to_owned());
    }
    Ok(uri)
}

impl CommonArgs {
    /// The address to bind: `--listen`, or `127.0.0.1:<default_port>` (see [`ports`]).
    pub fn listen_addr(&self, default_port: u16) -> SocketAddr {
        self.listen
            .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, default_port)))
    }

    /// Logs the mode at start and admits the development conveniences `uses` (see
    /// [`mode::admit`]), with [`PLAINTEXT`] when no TLS flag is set.
    ///
    /// # Errors
    /// [`crate::StartError::DevelopmentOnly`] in production mode when `uses` is not
    /// empty or TLS is not configured.
    pub fn admit(&self, service: &str, uses: &[Convenience]) -> Result<(), crate::StartError> {
        let plaintext = self.tls.tls_cert_file.is_none()
            && self.tls.tls_key_file.is_none()
            && self.tls.tls_ca_file.is_none();
        let mut uses = uses.to_vec();
        if plaintext {
            uses.push(PLAINTEXT);
        }
        mode::admit(self.mode, service, &uses)
    }

    /// How this service recognises the services calling it: by certificate with TLS,
    /// also by development tokens without (see [`crate::caller`]).
    pub fn service_recognition(&self) -> crate::caller::ServiceRecognition {
        crate::caller::ServiceRecognition::for_transport(self.tls.tls_cert_file.is_some())
    }

    /// `--request-timeout-ms` as a duration.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// `--grace-period-ms` as a duration.
    pub fn grace_period(&self) -> Duration {
        Duration::from_millis(self.grace_period_ms)
    }

    /// The telemetry settings these flags describe, for the service called
    /// `service_name` (OpenTelemetry `service.name`).
    pub fn telemetry_config(&self, service_name: &str) -> stadium_telemetry::TelemetryConfig {
        stadium_telemetry::TelemetryConfig {
            service_name: service_name.to_owned(),
            log_format: match self.log_format {
                LogFormat::Text => stadium_telemetry::LogFormat::Text,
                LogFormat::Json => stadium_telemetry::LogFormat::Json,
            },
            log_filter: self.log_filter.clone(),
            otlp_endpoint: self.otlp_endpoint.clone(),
        }
    }

    /// The [`ServerOptions`] these flags describe, for the service called `service_name`
    /// (TLS files read).
    ///
    /// # Errors
    /// As [`TlsArgs::load`].
    pub fn server_options(
        &self,
        service_name: &'static str,
    ) -> Result<ServerOptions, crate::StartError> {
        Ok(ServerOptions {
            service_name,
            request_timeout: self.request_timeout(),
            grace_period: self.grace_period(),
            tls: self.tls.load(service_name)?,
            health_addr: self.health_listen,
            web_origins: self.cors_allowed_origins.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Config {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[test]
    fn defaults() {
        let c = Config::try_parse_from(["svc"]).unwrap().common;
        assert_eq!(
            c.listen_addr(ports::HOLDS),
            "127.0.0.1:50053".parse().unwrap()
        );
        assert_eq!(c.log_format, LogFormat::Text);
        assert_eq!(c.mode, Mode::Production);
        assert_eq!(c.request_timeout(), Duration::from_secs(5));
        assert_eq!(c.grace_period(), Duration::from_secs(10));
    }

    #[test]
    fn flags_override() {
        let c = Config::try_parse_from([
            "svc",
            "--listen",
            "0.0.0.0:9000",
            "--log-format",
            "json",
            "--request-timeout-ms",
            "250",
            "--grace-period-ms",
            "0",
            "--mode",
            "development",
        ])
        .unwrap()
        .common;
        assert_eq!(c.listen_addr(ports::HOLDS).port(), 9000);
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.mode, Mode::Development);
        let t = c.telemetry_config("holds");
        assert_eq!(t.log_format, stadium_telemetry::LogFormat::Json);
        assert_eq!(t.service_name, "holds");
        let o = c.server_options("holds").unwrap();
        assert_eq!(o.request_timeout, Duration::from_millis(250));
        assert_eq!(o.grace_period, Duration::ZERO);
    }

    #[test]
    fn grpc_urls() {
        assert_eq!(
            grpc_url("http://holds:50053")
                .unwrap()
                .authority()
                .unwrap()
                .as_str(),
            "holds:50053"
        );
        assert!(grpc_url("https://holds.example").is_ok());
        for bad in ["holds:50053", "ftp://holds", "http://", "", "not a url"] {
            assert!(grpc_url(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_values_are_errors() {
        for args in [
            ["svc", "--listen", "nowhere"],
            ["svc", "--log-format", "xml"],
            ["svc", "--request-timeout-ms", "0"],
            ["svc", "--mode", "staging"],
        ] {
            assert!(Config::try_parse_from(args).is_err(), "{args:?}");
        }
    }
}
