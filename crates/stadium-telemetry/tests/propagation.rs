//! W3C trace context survives a trip through gRPC metadata: client injection, server
//! extraction, the client interceptor and the server tower layer.

use std::convert::Infallible;

use opentelemetry::trace::{TraceContextExt as _, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use stadium_telemetry::{
    ServerTraceLayer, extract_context, extract_context_from_headers, inject_context,
    inject_interceptor,
};
use tonic::metadata::MetadataMap;
use tower::{Layer as _, Service as _, ServiceExt as _};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;

/// A subscriber that gives spans OpenTelemetry contexts, without exporting anything;
/// scoped per test so tests do not fight over global state.
fn otel_subscriber() -> impl tracing::Subscriber + Send + Sync {
    let provider = SdkTracerProvider::builder().build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("propagation-test")))
}

fn trace_id(span: &tracing::Span) -> TraceId {
    span.context().span().span_context().trace_id()
}

#[test]
fn inject_then_extract_keeps_trace_and_parent() {
    tracing::subscriber::with_default(otel_subscriber(), || {
        let span = tracing::info_span!("client.call");
        let _entered = span.enter();
        let mut metadata = MetadataMap::new();
        inject_context(&mut metadata);

        let traceparent = metadata.get("traceparent").expect("traceparent injected");
        let expected = span.context().span().span_context().clone();
        assert!(expected.is_valid());
        assert!(
            traceparent
                .to_str()
                .unwrap()
                .contains(&expected.trace_id().to_string())
        );

        let extracted = extract_context(&metadata);
        let remote = extracted.span().span_context().clone();
        assert!(remote.is_remote());
        assert_eq!(remote.trace_id(), expected.trace_id());
        assert_eq!(remote.span_id(), expected.span_id());
        assert_eq!(remote.trace_flags(), expected.trace_flags());
    });
}

#[test]
fn nothing_is_injected_without_a_span_context() {
    // No OpenTelemetry layer: spans carry no trace, so no header is invented.
    let mut metadata = MetadataMap::new();
    inject_context(&mut metadata);
    assert!(metadata.is_empty());
}

#[test]
fn malformed_traceparent_starts_a_new_trace() {
    let mut metadata = MetadataMap::new();
    metadata.insert("traceparent", "00-not-a-trace-id-01".parse().unwrap());
    assert!(!extract_context(&metadata).span().span_context().is_valid());
    assert!(
        !extract_context(&MetadataMap::new())
            .span()
            .span_context()
            .is_valid()
    );
}

#[test]
fn interceptor_adds_the_current_context() {
    tracing::subscriber::with_default(otel_subscriber(), || {
        let span = tracing::info_span!("client.call");
        let _entered = span.enter();
        let request = inject_interceptor(tonic::Request::new(())).unwrap();
        let extracted = extract_context(request.metadata());
        assert_eq!(extracted.span().span_context().trace_id(), trace_id(&span));
    });
}

#[test]
fn server_layer_continues_the_callers_trace() {
    tracing::subscriber::with_default(otel_subscriber(), || {
        let client = tracing::info_span!("client.call");
        let mut metadata = MetadataMap::new();
        client.in_scope(|| inject_context(&mut metadata));
        let request = http::Request::builder()
            .uri("/stadium.holds.v1.HoldsService/ClaimSeats")
            .body(())
            .unwrap();
        let (mut parts, body) = request.into_parts();
        parts.headers = metadata.into_headers();
        let request = http::Request::from_parts(parts, body);
        assert!(
            extract_context_from_headers(request.headers())
                .span()
                .span_context()
                .is_valid()
        );

        let mut service = ServerTraceLayer.layer(tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, Infallible>(trace_id(&tracing::Span::current()))
        }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let seen = runtime
            .block_on(async { service.ready().await.unwrap().call(request).await })
            .unwrap();
        assert_eq!(seen, trace_id(&client));
    });
}
