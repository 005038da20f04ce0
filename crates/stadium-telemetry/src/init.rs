//! Installing the global `tracing` subscriber and, when configured, the OTLP trace and
//! metric pipelines; flushing them at shutdown.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::{LogFormat, TelemetryConfig, TelemetryError};

/// Bounds one OTLP export call (and its retries), so an unreachable collector delays
/// shutdown by seconds, not by the SDK default of ten seconds per signal.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// Upper bound for flushing spans at shutdown.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Set by the first successful [`init`]: the subscriber and the OpenTelemetry globals
/// are process-wide, so a second installation could only fail or silently replace them.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Keeps the telemetry pipelines alive; flushes and stops them on
/// [`shutdown`](Self::shutdown) or on drop. Hold it in `main` until the server has
/// stopped.
#[must_use = "dropping the guard flushes and stops trace and metric export"]
#[derive(Debug)]
pub struct TelemetryGuard {
    otlp: Option<OtlpPipeline>,
}

/// The OTLP exporters and the runtime that drives their gRPC channel.
#[derive(Debug)]
struct OtlpPipeline {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    /// The SDK exports from its own threads with a blocking executor; the tonic channel
    /// underneath needs a Tokio reactor. A private runtime provides it, so exports never
    /// depend on (nor deadlock) the application's runtime, e.g. while `shutdown` blocks
    /// a worker of a current-thread runtime.
    runtime: Option<tokio::runtime::Runtime>,
}

impl TelemetryGuard {
    /// Flushes pending spans and metrics (each bounded by a few seconds, even when the
    /// collector is unreachable) and stops the exporters. Blocks the calling thread
    /// meanwhile; call it last, after the server has drained. Export failures are
    /// logged, not returned: at that point nothing else can be done about them.
    pub fn shutdown(mut self) {
        self.shutdown_inner();
    }

    /// Whether OTLP export is active (an endpoint was configured).
    pub fn exports_otlp(&self) -> bool {
        self.otlp.is_some()
    }

    fn shutdown_inner(&mut self) {
        let Some(mut otlp) = self.otlp.take() else {
            return;
        };
        if let Err(error) = otlp.tracer_provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(%error, "trace exporter shutdown failed");
        }
        if let Err(error) = otlp.meter_provider.shutdown() {
            tracing::warn!(%error, "metric exporter shutdown failed");
        }
        if let Some(runtime) = otlp.runtime.take() {
            // Dropping a runtime blocks and panics inside an async context;
            // shutdown_background does neither.
            runtime.shutdown_background();
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        self.shutdown_inner();
    }
}

/// Installs the global `tracing` subscriber (filtered by `config.log_filter`, writing
/// `config.log_format` lines to standard output) and, when `config.otlp_endpoint` is
/// set, OTLP/gRPC exporters for traces (batched) and metrics (periodic, every 60 s),
/// registered as the OpenTelemetry global providers, plus the W3C trace-context
/// propagator. Connecting to the collector is lazy: an unreachable endpoint does not
/// block or fail `init`; exports to it fail later and are dropped.
///
/// May be called from inside or outside a Tokio runtime.
///
/// # Errors
/// - [`TelemetryError::InvalidFilter`] for a malformed filter string;
/// - [`TelemetryError::AlreadyInitialized`] when a previous `init` succeeded in this
///   process (telemetry is process-global; tests rely on this instead of a panic);
/// - [`TelemetryError::SubscriberAlreadySet`] when other code installed a subscriber;
/// - [`TelemetryError::Runtime`] / [`TelemetryError::Exporter`] when the OTLP
///   pipeline cannot be built (e.g. a malformed endpoint).
pub fn init(config: &TelemetryConfig) -> Result<TelemetryGuard, TelemetryError> {
    let filter =
        EnvFilter::try_new(&config.log_filter).map_err(|source| TelemetryError::InvalidFilter {
            filter: config.log_filter.clone(),
            source,
        })?;
    if INITIALIZED.swap(true, Ordering::SeqCst) {
        return Err(TelemetryError::AlreadyInitialized);
    }
    match install(config, filter) {
        Ok(guard) => Ok(guard),
        Err(error) => {
            // Nothing global was installed, so a corrected config may try again.
            INITIALIZED.store(false, Ordering::SeqCst);
            Err(error)
        }
    }
}

fn install(config: &TelemetryConfig, filter: EnvFilter) -> Result<TelemetryGuard, TelemetryError> {
    let mut guard = TelemetryGuard {
        otlp: match &config.otlp_endpoint {
            Some(endpoint) => Some(OtlpPipeline::build(&config.service_name, endpoint)?),
            None => None,
        },
    };
    // Logs go to stderr, so a command's own output on stdout (a report, `--json`)
    // stays clean; colours only when a person is watching.
    let ansi = std::io::stderr().is_terminal();
    let fmt_layer = match config.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let otel_layer = guard.otlp.as_ref().map(|otlp| {
        tracing_opentelemetry::layer()
            .with_tracer(otlp.tracer_provider.tracer(config.service_name.clone()))
            .with_filter(exporter_stack_filter())
    });
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(fmt_layer)
        .with(otel_layer)
        .try_init();
    if let Err(error) = installed {
        guard.shutdown_inner();
        return Err(TelemetryError::SubscriberAlreadySet(error));
    }
    if let Some(otlp) = &guard.otlp {
        opentelemetry::global::set_tracer_provider(otlp.tracer_provider.clone());
        opentelemetry::global::set_meter_provider(otlp.meter_provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracing::info!(
            service = %config.service_name,
            endpoint = config.otlp_endpoint.as_deref().unwrap_or_default(),
            "exporting traces and metrics over otlp"
        );
    }
    Ok(guard)
}

/// Keeps the exporter's own stack out of the exported traces: spans that h2, hyper or
/// tonic open while sending a batch would otherwise be exported in the next batch, a
/// feedback loop as soon as the filter lets debug or trace spans through.
fn exporter_stack_filter() -> Targets {
    [
        "h2",
        "hyper",
        "hyper_util",
        "tonic",
        "tower",
        "opentelemetry",
        "opentelemetry_sdk",
        "opentelemetry_otlp",
    ]
    .into_iter()
    .fold(
        Targets::new().with_default(LevelFilter::TRACE),
        |targets, target| targets.with_target(target, LevelFilter::OFF),
    )
}

impl OtlpPipeline {
    fn build(service_name: &str, endpoint: &str) -> Result<Self, TelemetryError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-export")
            .enable_all()
            .build()
            .map_err(TelemetryError::Runtime)?;
        let exporters = {
            // The tonic channel spawns its connection worker on the current runtime.
            let _entered = runtime.enter();
            build_exporters(endpoint)
        };
        let (span_exporter, metric_exporter) = match exporters {
            Ok(exporters) => exporters,
            Err(error) => {
                runtime.shutdown_background();
                return Err(error);
            }
        };
        let resource = Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_batch_exporter(span_exporter)
            .with_resource(resource.clone())
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_periodic_exporter(metric_exporter)
            .with_resource(resource)
            .build();
        Ok(Self {
            tracer_provider,
            meter_provider,
            runtime: Some(runtime),
        })
    }
}

fn build_exporters(
    endpoint: &str,
) -> Result<
    (
        opentelemetry_otlp::SpanExporter,
        opentelemetry_otlp::MetricExporter,
    ),
    TelemetryError,
> {
    let exporter_error = |signal| {
        move |source| TelemetryError::Exporter {
            signal,
            endpoint: endpoint.to_owned(),
            source,
        }
    };
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(exporter_error("traces"))?;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(exporter_error("metrics"))?;
    Ok((spans, metrics))
}
