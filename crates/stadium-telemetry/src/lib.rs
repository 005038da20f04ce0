//! Telemetry for stadium services: `tracing` logs (readable text or JSON lines),
//! OpenTelemetry traces and metrics exported over OTLP/gRPC when an endpoint is
//! configured, and W3C trace-context propagation through gRPC metadata.
//!
//! A service calls [`init`] once at start-up with a [`TelemetryConfig`] built from its
//! flags (the endpoint comes from `OTEL_EXPORTER_OTLP_ENDPOINT` in `main`, never read
//! here), keeps the returned [`TelemetryGuard`] alive and calls
//! [`TelemetryGuard::shutdown`] last, after the server stopped, so buffered spans and
//! metrics are flushed. Metrics instruments come from [`meter`]; without an endpoint
//! they are no-ops, so code records metrics unconditionally.
//!
//! Trace context crosses service boundaries in the `traceparent`/`tracestate` gRPC
//! metadata entries (W3C Trace Context): clients add it with [`inject_context`] or the
//! [`inject_interceptor`] interceptor, servers continue it with [`ServerTraceLayer`] or
//! [`extract_context`].

mod init;
mod propagation;

pub use init::{TelemetryGuard, init};
pub use propagation::{
    HeaderExtractor, MetadataExtractor, MetadataInjector, ServerTrace, ServerTraceLayer,
    extract_context, extract_context_from_headers, inject_context, inject_interceptor,
    inject_otel_context,
};

/// How log lines are written to standard output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable single lines (timestamp, level, target, message, fields).
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = TelemetryError;

    /// Parses `text` or `json` (case-insensitive), as given on a command line.
    ///
    /// # Errors
    /// [`TelemetryError::InvalidLogFormat`] for anything else.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(TelemetryError::InvalidLogFormat(value.to_owned())),
        }
    }
}

/// Everything [`init`] needs; built by the caller from flags and environment.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// OpenTelemetry `service.name` resource attribute, e.g. `holds`.
    pub service_name: String,
    /// Text or JSON log lines.
    pub log_format: LogFormat,
    /// An `EnvFilter` directive string in `RUST_LOG` syntax, e.g. `info,sqlx=warn`.
    /// It filters both the log lines and the spans exported over OTLP.
    pub log_filter: String,
    /// OTLP/gRPC collector endpoint, e.g. `http://127.0.0.1:4317` (usually the value of
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`). `None` disables trace and metric export.
    pub otlp_endpoint: Option<String>,
}

impl TelemetryConfig {
    /// A config for `service_name` with text logs, filter `info` and no OTLP export.
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            log_format: LogFormat::Text,
            log_filter: "info".to_owned(),
            otlp_endpoint: None,
        }
    }
}

/// Why [`init`] (or parsing a [`LogFormat`]) failed.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The `log_filter` string is not valid `EnvFilter` syntax.
    #[error("invalid log filter {filter:?}")]
    InvalidFilter {
        /// The rejected directive string.
        filter: String,
        /// The parser's complaint.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A log format other than `text` or `json` was asked for.
    #[error("invalid log format {0:?}: expected `text` or `json`")]
    InvalidLogFormat(String),
    /// [`init`] already succeeded in this process; telemetry is global state.
    #[error("telemetry is already initialized in this process")]
    AlreadyInitialized,
    /// Some other code already installed a global `tracing` subscriber.
    #[error("a global tracing subscriber is already installed")]
    SubscriberAlreadySet(#[source] tracing_subscriber::util::TryInitError),
    /// The background runtime that drives the OTLP exporters could not start.
    #[error("cannot start the OTLP export runtime")]
    Runtime(#[source] std::io::Error),
    /// The OTLP exporter rejected its configuration (for example a malformed endpoint,
    /// or an `https` endpoint, which needs TLS support this build does not include).
    #[error("cannot build the OTLP {signal} exporter for endpoint {endpoint:?}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The endpoint as configured.
        endpoint: String,
        /// The exporter's own error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// A meter from the global meter provider, named after the instrumenting crate or
/// module (e.g. `stadium-holds`). Until [`init`] ran with an OTLP endpoint, the global
/// provider is a no-op and so are the instruments built from this meter.
pub fn meter(name: &'static str) -> opentelemetry::metrics::Meter {
    opentelemetry::global::meter(name)
}
