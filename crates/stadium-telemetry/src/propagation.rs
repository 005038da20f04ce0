//! W3C Trace Context (`traceparent`, `tracestate`) carried in gRPC metadata, so one
//! trace follows a fan's request across services. Modelled on quickwit's
//! `tracing_utils` (MIT/Apache): an injector and extractors over tonic metadata and
//! HTTP headers, a client interceptor and a server tower layer.
//!
//! The W3C propagator is used directly rather than the OpenTelemetry global one, so
//! propagation behaves the same whether or not [`crate::init`] installed OTLP export.

use std::task::{Context as TaskContext, Poll};

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tonic::metadata::{KeyRef, MetadataKey, MetadataMap, MetadataValue};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Writes propagation fields into tonic request metadata (ASCII entries). Fields whose
/// key or value is not valid metadata are skipped rather than failing the call.
#[derive(Debug)]
pub struct MetadataInjector<'a>(pub &'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// Reads propagation fields from tonic request metadata (ASCII entries only).
#[derive(Debug)]
pub struct MetadataExtractor<'a>(pub &'a MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .map(|key| match key {
                KeyRef::Ascii(key) => key.as_str(),
                KeyRef::Binary(key) => key.as_str(),
            })
            .collect()
    }
}

/// Reads propagation fields from HTTP/2 request headers, as a tower layer in front of
/// a tonic server sees them.
#[derive(Debug)]
pub struct HeaderExtractor<'a>(pub &'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Adds the current `tracing` span's trace context to outgoing gRPC metadata as
/// `traceparent` (and `tracestate` when present). Adds nothing when the current span
/// carries no OpenTelemetry context (no OTLP layer installed, or no span entered).
pub fn inject_context(metadata: &mut MetadataMap) {
    inject_otel_context(&tracing::Span::current().context(), metadata);
}

/// Adds the given OpenTelemetry context to outgoing gRPC metadata; see
/// [`inject_context`].
pub fn inject_otel_context(cx: &Context, metadata: &mut MetadataMap) {
    TraceContextPropagator::new().inject_context(cx, &mut MetadataInjector(metadata));
}

/// Reads the caller's trace context from incoming gRPC metadata. Missing or malformed
/// `traceparent` entries yield a context without a valid span (never an error), so a
/// bad header only starts a new trace.
pub fn extract_context(metadata: &MetadataMap) -> Context {
    TraceContextPropagator::new().extract(&MetadataExtractor(metadata))
}

/// Like [`extract_context`], from raw HTTP headers.
pub fn extract_context_from_headers(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// A tonic client interceptor adding the current trace context to every request:
/// `FooClient::with_interceptor(channel, stadium_telemetry::inject_interceptor)`.
///
/// # Errors
/// Never fails; the `Result` is the interceptor signature.
#[allow(clippy::result_large_err)] // tonic's interceptor signature fixes the error type
pub fn inject_interceptor(
    mut request: tonic::Request<()>,
) -> Result<tonic::Request<()>, tonic::Status> {
    inject_context(request.metadata_mut());
    Ok(request)
}

/// Tower layer for a tonic server (`Server::builder().layer(ServerTraceLayer)`): runs
/// each request inside an INFO span `grpc.server` with fields `rpc.method` (the HTTP/2
/// path, e.g. `/stadium.holds.v1.HoldsService/ClaimSeats`) and `otel.kind = server`,
/// whose parent is the caller's trace context from the request headers when present.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerTraceLayer;

impl<S> tower::Layer<S> for ServerTraceLayer {
    type Service = ServerTrace<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ServerTrace { inner }
    }
}

/// The service built by [`ServerTraceLayer`].
#[derive(Debug, Clone)]
pub struct ServerTrace<S> {
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for ServerTrace<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tracing::instrument::Instrumented<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let span = tracing::info_span!(
            "grpc.server",
            rpc.method = %request.uri().path(),
            otel.kind = "server",
        );
        let parent = extract_context_from_headers(request.headers());
        if parent.span().span_context().is_valid() {
            // Fails only when no OpenTelemetry layer is installed, in which case there
            // is no trace to continue anyway.
            let _ = span.set_parent(parent);
        }
        self.inner.call(request).instrument(span)
    }
}
